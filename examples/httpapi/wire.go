package main

import (
	"fmt"
	"time"

	"github.com/stak/inbox"
)

// This file holds the API's JSON shapes and their conversions from and to
// the inbox types.

// draftRequest is the draft part of POST /messages and POST /broadcasts.
// The sender is the calling user.
type draftRequest struct {
	HostSystemID string `json:"host_system_id"`
	Label        string `json:"label"`
	Category     string `json:"category"`
	// Thread is the conversation: a chat's key, say.
	Thread string `json:"thread"`
	// Aggregate collapses a key's messages to a user into one item of her
	// feed ("ann and 2 others liked your post"): see inbox.Draft.Aggregate.
	Aggregate  string    `json:"aggregate"`
	Title      string    `json:"title"`
	Body       any       `json:"body"`
	CTAURI     string    `json:"cta_uri"`
	ReceivedAt time.Time `json:"received_at"`
	// TTL is written like the inbox configs' TTLs: "7d", "12h", "90m".
	TTL string `json:"ttl"`
	// DeliverAt schedules a message to users (RFC 3339): see
	// inbox.Draft.DeliverAt.
	DeliverAt time.Time `json:"deliver_at"`
}

// draft returns the inbox.Draft that sender sends.
func (d draftRequest) draft(sender inbox.User) (inbox.Draft, error) {
	var ttl time.Duration
	if d.TTL != "" {
		var err error
		if ttl, err = inbox.ParseTTL(d.TTL); err != nil {
			return inbox.Draft{}, fmt.Errorf("ttl: %w", err)
		}
	}
	return inbox.Draft{
		HostSystemID: d.HostSystemID,
		Sender:       sender.ID,
		Label:        d.Label,
		Category:     d.Category,
		Thread:       d.Thread,
		Aggregate:    d.Aggregate,
		Title:        d.Title,
		Body:         d.Body,
		CTAURI:       d.CTAURI,
		ReceivedAt:   d.ReceivedAt,
		TTL:          ttl,
		DeliverAt:    d.DeliverAt,
	}, nil
}

// broadcastRequest is the body of POST /broadcasts: to everyone, or to
// Group's members.
type broadcastRequest struct {
	Group string `json:"group"`
	draftRequest
}

// publishRequest is the body of POST /messages.
type publishRequest struct {
	Users []string `json:"users"`
	draftRequest
}

// messageBody is a message as the API shows it.
type messageBody struct {
	ID           string    `json:"id"`
	HostSystemID string    `json:"host_system_id,omitempty"`
	Sender       string    `json:"sender,omitempty"`
	Broadcast    bool      `json:"broadcast"`
	Group        string    `json:"group,omitempty"`
	Label        string    `json:"label,omitempty"`
	Category     string    `json:"category,omitempty"`
	Thread       string    `json:"thread,omitempty"`
	Title        string    `json:"title"`
	Body         any       `json:"body,omitempty"`
	CTAURI       string    `json:"cta_uri,omitempty"`
	ReceivedAt   time.Time `json:"received_at"`
	DeliveredAt  time.Time `json:"delivered_at"`
	DeliverAt    time.Time `json:"deliver_at,omitzero"`
	Read         bool      `json:"read"`
	ReadAt       time.Time `json:"read_at,omitzero"`
	Archived     bool      `json:"archived"`
	ArchivedAt   time.Time `json:"archived_at,omitzero"`
	ExpiresAt    time.Time `json:"expires_at"`
	SnoozedUntil time.Time `json:"snoozed_until,omitzero"`
	InteractedAt time.Time `json:"interacted_at,omitzero"`
	// Muted is set on a message of a group, category or one-to-one chat
	// the user muted (see GET /preferences): it stays in the feed, out of
	// the unread count.
	Muted bool `json:"muted"`
	// Count and Senders are an aggregated item's (inbox.Draft.Aggregate):
	// its messages and its distinct senders, the latest first.
	Count   int      `json:"count,omitempty"`
	Senders []string `json:"senders,omitempty"`
	// ReadBy is who has read the message, its sender left out, when GET
	// /messages of a thread asks (readby=true): empty if no one has.
	ReadBy []readerBody `json:"read_by,omitzero"`
}

// readerBody is a member who has read a message (inbox.Reader).
type readerBody struct {
	User   string    `json:"user"`
	ReadAt time.Time `json:"read_at"`
}

// newReadersBody returns rs as the API shows them, never nil.
func newReadersBody(rs []inbox.Reader) []readerBody {
	out := make([]readerBody, len(rs))
	for i, r := range rs {
		out[i] = readerBody(r)
	}
	return out
}

func newMessageBody(m inbox.Message) messageBody {
	return messageBody{
		ID:           m.ID,
		HostSystemID: m.HostSystemID,
		Sender:       m.Sender,
		Broadcast:    m.IsBroadcast(),
		Group:        m.Audience.Group,
		Label:        m.Audience.Label,
		Category:     m.Category,
		Thread:       m.Thread,
		Title:        m.Title,
		Body:         m.Body,
		CTAURI:       m.CTAURI,
		ReceivedAt:   m.ReceivedAt,
		DeliveredAt:  m.DeliveredAt,
		DeliverAt:    m.DeliverAt,
		Read:         m.IsRead(),
		ReadAt:       m.ReadAt,
		Archived:     m.IsArchived(),
		ArchivedAt:   m.ArchivedAt,
		ExpiresAt:    m.ExpiresAt,
		SnoozedUntil: m.SnoozedUntil,
		InteractedAt: m.InteractedAt,
		Muted:        m.Muted,
		Count:        m.Count,
		Senders:      m.Senders,
	}
}

// pageBody is the reply of GET /messages. An empty Cursor means the end:
// with filters a page can be short, even empty, and still have a cursor.
type pageBody struct {
	Messages []messageBody `json:"messages"`
	Cursor   string        `json:"cursor,omitempty"`
}

// publishBody is the reply of POST /messages and POST /broadcasts.
type publishBody struct {
	Error      string      `json:"error,omitempty"`
	Message    messageBody `json:"message"`
	Delivered  []string    `json:"delivered,omitempty"`
	Duplicates []string    `json:"duplicates,omitempty"`
	Failed     []string    `json:"failed,omitempty"`
	Unknown    []string    `json:"unknown,omitempty"`
}

// changedBody is the reply of a per-user mark (read, archive, unarchive,
// delete, seen): Changed is false when the call changed nothing (the
// message was already read, say).
type changedBody struct {
	Changed bool `json:"changed"`
}

// redactionRequest is the body of POST /redactions: the message (by ID or
// host system ID) and where it is (the users of a direct message, or the
// group of a broadcast, "$public" for everyone).
type redactionRequest struct {
	ID           string   `json:"id"`
	HostSystemID string   `json:"host_system_id"`
	Users        []string `json:"users"`
	Group        string   `json:"group"`
}

// redactedBody is the reply of POST /redactions.
type redactedBody struct {
	Removed int `json:"removed"`
}

// markAllReadBody is the reply of POST /messages/read-all, archive-all and
// delete-all: how many messages the action changed.
type markAllReadBody struct {
	Marked int `json:"marked"`
}

// tallyBody is a tally (inbox.Tally) as the API shows it: Total = Read +
// Unread + Muted.
type tallyBody struct {
	Total    int64 `json:"total"`
	Read     int64 `json:"read"`
	Unread   int64 `json:"unread"`
	Archived int64 `json:"archived"`
	Muted    int64 `json:"muted"` // the unread of the groups, categories and chats the user muted
}

func newTallyBody(t inbox.Tally) tallyBody {
	return tallyBody{Total: t.Total, Read: t.Read, Unread: t.Unread, Archived: t.Archived, Muted: t.Muted}
}

// categoryBody is a category's tally in GET /counts, with its unseen
// count (a tab's "new" badge).
type categoryBody struct {
	tallyBody
	Unseen int64 `json:"unseen"`
}

// countsBody is the reply of GET /counts: the feed's tallies, the unseen
// count (the badge), the snoozed count, and a tally per category.
type countsBody struct {
	tallyBody
	Unseen     int64                   `json:"unseen"`
	Snoozed    int64                   `json:"snoozed"`
	Categories map[string]categoryBody `json:"categories"`
}

// preferencesBody is the body of PUT /preferences and the reply of GET
// /preferences: the groups, categories and one-to-one chats the user
// muted (see inbox.Preferences). A missing list is none; a reply's lists
// are sorted, never null.
type preferencesBody struct {
	MutedGroups     []string `json:"muted_groups"`
	MutedCategories []string `json:"muted_categories"`
	// OptedOut are the categories the user opted out of: their messages
	// leave her feed and counts.
	OptedOut []string `json:"opted_out"`
	// MutedThreads are the one-to-one chats the user muted: threads of
	// her direct messages, at most inbox.MaxMutedThreads. A group chat is
	// muted by its group (MutedGroups).
	MutedThreads []string `json:"muted_threads"`
	// Own says they are the user's own; else they are her inbox's or
	// tenant's defaults. A PUT ignores it: it always sets her own.
	Own bool `json:"own"`
}

// newPreferencesBody returns p as the API shows it.
func newPreferencesBody(p inbox.Preferences) preferencesBody {
	return preferencesBody{MutedGroups: append([]string{}, p.MutedGroups...), MutedCategories: append([]string{}, p.MutedCategories...), OptedOut: append([]string{}, p.OptedOut...),
		MutedThreads: append([]string{}, p.MutedThreads...), Own: p.Own}
}

// setPreferencesBody is the reply of PUT /preferences: the preferences as
// set, and whether the call changed them.
type setPreferencesBody struct {
	Changed bool `json:"changed"`
	preferencesBody
}

// threadBody is one conversation of GET /threads: its key, its audience
// ("" for direct messages, "$public" for everyone's, else the group), its
// last activity (a message ID), its newest message and its tallies.
type threadBody struct {
	Thread   string      `json:"thread"`
	Group    string      `json:"group,omitempty"`
	Activity string      `json:"activity"`
	Latest   messageBody `json:"latest"`
	tallyBody
	// GroupMuted is set on the chat of a group the user muted
	// (inbox.Thread.Muted): its unread count in muted, not unread.
	GroupMuted bool `json:"group_muted"`
	// ThreadMuted is set on a one-to-one chat the user muted
	// (muted_threads; inbox.Thread.Muted): its unread count in muted.
	ThreadMuted bool `json:"thread_muted"`
}

// threadsBody is the reply of GET /threads, latest activity first.
type threadsBody struct {
	Threads []threadBody `json:"threads"`
	Cursor  string       `json:"cursor,omitempty"`
}

// deliveryBody is one scheduled delivery of GET /scheduled: whom it goes
// to, as an event says it (User for a copy of a message to users, Group
// for a broadcast, $public, or a group message, stored once), and the
// message.
type deliveryBody struct {
	User    string      `json:"user,omitempty"`
	Group   string      `json:"group,omitempty"`
	Message messageBody `json:"message"`
}

// scheduledBody is the reply of GET /scheduled, earliest delivery first.
type scheduledBody struct {
	Deliveries []deliveryBody `json:"deliveries"`
	Cursor     string         `json:"cursor,omitempty"`
}

// errorBody is the body of every error reply.
type errorBody struct {
	Error string `json:"error"`
}

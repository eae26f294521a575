package inbox

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/stak/inbox/driver"
)

// Draft is what a caller publishes or broadcasts.
type Draft struct {
	// HostSystemID is the caller's own ID for the message. A publish or
	// broadcast retried with the same HostSystemID in the same inbox, while
	// the first attempt's message lives, reuses its message ID and delivers
	// no duplicate. One ID names one message of the inbox, whatever its
	// audience: reusing it for other content or another audience (a
	// broadcast of a published message's ID, another group) is ErrConflict.
	// Pass one for any publish that may be retried: after an unknown
	// outcome (ErrOutcomeUnknown) only a retry with it is safe.
	// Optional; at most MaxHostSystemIDLen bytes of printable UTF-8.
	HostSystemID string
	// Sender names who sent the message, e.g. an admin ID: free text
	// shown with it. In a thread (Thread set) it is the sending user's ID,
	// a key (ErrInvalidKey otherwise; "" for none), and her own message is
	// read for her from its write on, neither unread nor unseen, with no
	// extra round trip: her copy of a message to users is written read
	// (ReadAt, the publish time); a broadcast or group message is written
	// with her read receipt, in the same atomic write. A sender who is not
	// among the users gets nothing. The library does not know groups: a
	// sender not in the group gets the receipt all the same, which, as any
	// receipt of a group the user does not name, counts nowhere until she
	// names it. The field is reused rather than a new one added because a
	// chat's sender is one of its users (the chat seed's senderId), so a
	// chat's List tells a user's own messages by it; outside a thread its
	// meaning is unchanged.
	Sender string
	// Label is the audience's label, e.g. "on-call".
	Label string
	// Category is an application-defined key ("" for none) used to group,
	// filter and count messages. It follows the key rules and cannot be "*".
	Category string
	// Thread puts the message in a conversation ("" for none): a key, as
	// Category. A one-to-one chat is direct messages to both users with
	// one thread; a group chat, a group's messages with one thread, each
	// stored once. List with ListOptions.Thread reads one thread's
	// messages, MarkAllRead with it marks them, and ListThreads lists the
	// user's threads with their counts (see the Chat guide, docs/chat.md).
	// It costs 4 WCU more per copy: the thread's counter (2, in the
	// transaction), its entry in the unread index (1) and the thread
	// index's entry (1); 5 for a thread's later messages, whose counter
	// moves its unread index entry to its new activity (a delete and a
	// put, 2 writes) (BenchmarkMuteThreads' Publish, 15 WCU a copy).
	Thread string
	// Aggregate is the message's aggregation key ("" for none): a key, as
	// Category. Publish's messages of one key collapse, in each user's
	// feed, into one item ("Ann and 3 others liked your post"): the
	// newest message, which carries the item's Count, its distinct
	// Senders (the latest first) and the IDs of its latest earlier
	// messages (Members), at the place of its newest message. A message
	// joins its item as it is written, in the same atomic write, and
	// makes it unread again (but the user's own message, which leaves it
	// as read as it was): the item is one message of the feed at every
	// instant, which Counts counts once and every mark applies to (see
	// the Aggregation guide, docs/aggregation.md). An aggregated message
	// is in the thread of its key (Message.Thread), so Thread must be
	// empty, and the key must not be a chat's thread. Its Sender, if any,
	// is a user's ID, as in a thread. Only Publish aggregates: a
	// broadcast or group message with it is ErrInvalidInput; so is a
	// scheduled one. A message of a key whose item is of another
	// category is ErrConflict for that user.
	Aggregate string
	// AggregateWindow and AggregateMax bound the item an aggregated
	// message joins ("today's likes"): it joins an item whose first
	// message is less than AggregateWindow old (zero: any age) and that
	// holds fewer than AggregateMax messages (zero: any number); else it
	// starts a new item. Negative is ErrInvalidInput, and so is either
	// without Aggregate.
	AggregateWindow time.Duration
	AggregateMax    int
	Title           string
	// Body is a string or any JSON-compatible value. It is stored as a
	// native DynamoDB value and comes back as encoding/json would decode it
	// into an any (numbers as float64, objects as map[string]any).
	Body any
	// CTAURI is an optional call-to-action URI.
	CTAURI string
	// ReceivedAt is when the host system received the message; zero means
	// now. Before 1970 or after 9999 is ErrInvalidInput.
	ReceivedAt time.Time
	// TTL overrides the inbox and tenant TTLs for this message; zero means
	// unset. Longer than MaxTTL is capped; negative is ErrInvalidTTL.
	TTL time.Duration
	// DeliverAt schedules the message (zero delivers it now): it is stored
	// at once but hidden from its recipients until then (not in List, Get
	// or Counts, not markable); at that second it takes its place in the
	// feed, unread and unseen, with nothing running at that instant. Its
	// ID is minted at DeliverAt and its TTL counts from then. It is
	// truncated to the second and must be later than now and at most
	// MaxTTL ahead (else ErrInvalidInput). A message to users, a
	// broadcast and a group message can be scheduled (a broadcast or
	// group message is stored once, whatever its audience); a message in
	// a thread with it is ErrInvalidInput (see the Scheduling guide,
	// docs/scheduling.md). Redact cancels a scheduled message.
	DeliverAt time.Time
}

// validateDraft checks a draft's fields and returns it with its body
// normalized (see driver.NormalizeBody). It writes nothing; the size is checked
// by prepare, which knows the partitions.
func validateDraft(d Draft) (Draft, error) {
	if err := driver.ValidateCategory(d.Category); err != nil {
		return d, err
	}
	if err := driver.ValidateThread(d.Thread); err != nil {
		return d, err
	}
	if err := driver.ValidateHostSystemID(d.HostSystemID); err != nil {
		return d, err
	}
	if d.AggregateWindow < 0 || d.AggregateMax < 0 || d.Aggregate == "" && (d.AggregateWindow != 0 || d.AggregateMax != 0) {
		return d, fmt.Errorf("%w: an aggregate window or maximum that is negative, or without an aggregate key", ErrInvalidInput)
	}
	if d.Aggregate != "" {
		if err := driver.ValidateThread(d.Aggregate); err != nil {
			return d, fmt.Errorf("the aggregate key: %w", err)
		}
		if d.Thread != "" || !d.DeliverAt.IsZero() {
			return d, fmt.Errorf("%w: an aggregated message in a thread, or scheduled", ErrInvalidInput)
		}
		if d.Sender != "" {
			if err := driver.ValidateUserID(d.Sender); err != nil {
				return d, fmt.Errorf("the sender of an aggregated message: %w", err)
			}
		}
	}
	if d.Thread != "" && d.Sender != "" {
		if err := driver.ValidateUserID(d.Sender); err != nil {
			return d, fmt.Errorf("the sender of a message in a thread: %w", err)
		}
	}
	if d.TTL < 0 {
		return d, fmt.Errorf("%w: negative message ttl %v", ErrInvalidTTL, d.TTL)
	}
	for name, s := range map[string]string{"title": d.Title, "sender": d.Sender, "label": d.Label, "cta uri": d.CTAURI} {
		if !utf8.ValidString(s) {
			return d, fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidInput, name)
		}
	}
	body, err := driver.NormalizeBody(d.Body)
	if err != nil {
		return d, err
	}
	d.Body = body
	return d, nil
}

// Message is a stored message as a user sees it: the driver package's
// Message, where its fields are documented (ID, HostSystemID, Sender,
// Audience, Category, Thread, Title, Body, CTAURI, ReceivedAt, DeliveredAt, ReadAt,
// ArchivedAt, ExpiresAt).
type Message = driver.Message

// Audience is who a message was addressed to (Audience).
type Audience = driver.Audience

// AudienceKind says who a message was addressed to: AudienceUsers,
// AudienceEveryone or AudienceGroup.
type AudienceKind = driver.AudienceKind

// Audience kinds, as stored in headers.audiences.kind.
const (
	// AudienceUsers marks a message published to a list of users; each user
	// holds a copy in their own partition.
	AudienceUsers = driver.AudienceUsers
	// AudienceEveryone marks a broadcast, stored once in the public partition.
	AudienceEveryone = driver.AudienceEveryone
	// AudienceGroup marks a message to a group, stored once in the group's
	// partition.
	AudienceGroup = driver.AudienceGroup
)

// MaxHostSystemIDLen is the longest Draft.HostSystemID, in bytes.
const MaxHostSystemIDLen = driver.MaxHostSystemIDLen

// MaxItemSize is DynamoDB's item size limit; a draft whose item would
// exceed it is ErrTooLarge.
const MaxItemSize = driver.MaxItemSize

// MaxBodyDepth is the deepest nesting of maps and slices a Draft.Body may
// have.
const MaxBodyDepth = driver.MaxBodyDepth

// MaxBodyKeyLen is the longest key of an object in a Draft.Body, in bytes.
const MaxBodyKeyLen = driver.MaxBodyKeyLen

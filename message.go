package inbox

import (
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// AudienceKind says who a message was addressed to.
type AudienceKind string

// Audience kinds, as stored in headers.audiences.kind.
const (
	// AudienceUsers marks a message published to a list of users; each user
	// holds a copy in their own partition.
	AudienceUsers AudienceKind = "users"
	// AudienceEveryone marks a broadcast, stored once in the public partition.
	AudienceEveryone AudienceKind = "everyone"
	// AudienceGroup marks a message to a group, stored once in the group's
	// partition.
	AudienceGroup AudienceKind = "group"
)

// Audience is who a message was addressed to.
type Audience struct {
	Kind AudienceKind
	// Label names the audience for display, e.g. "on-call".
	Label string
	// UIDs lists the recipient of this copy (one user, never the whole
	// audience, so an item's size does not grow with the audience). It is
	// empty for a broadcast.
	UIDs []string
	// Group is the group of a message to a group; in a receipt, the group
	// of the message read ("" for everyone's).
	Group string
}

// Draft is what a caller publishes or broadcasts.
type Draft struct {
	// HostSystemID is the caller's own ID for the message. A publish or
	// broadcast retried with the same HostSystemID in the same inbox, while
	// the first attempt's message lives, reuses its message ID and delivers
	// no duplicate. One ID names one message of the inbox, whatever its
	// audience: reusing it for other content or another audience (a
	// broadcast of a published message's ID, another group) is ErrConflict.
	// Optional; at most MaxHostSystemIDLen bytes of printable UTF-8.
	HostSystemID string
	// Sender names who sent the message, e.g. an admin ID.
	Sender string
	// Label is the audience's label, e.g. "on-call".
	Label string
	// Category is an application-defined key ("" for none) used to group,
	// filter and count messages. It follows the key rules and cannot be "*".
	Category string
	Title    string
	// Body is a string or any JSON-compatible value. It is stored as a
	// native DynamoDB value and comes back as encoding/json would decode it
	// into an any (numbers as float64, objects as map[string]any).
	Body any
	// CTAURI is an optional call-to-action URI.
	CTAURI string
	// ReceivedAt is when the host system received the message; zero means
	// now.
	ReceivedAt time.Time
	// TTL overrides the inbox and tenant TTLs for this message; zero means
	// unset. Longer than MaxTTL is capped; negative is ErrInvalidTTL.
	TTL time.Duration
}

// Message is a stored message as a user sees it.
type Message struct {
	// ID is a ULID, shared by every recipient of one publish.
	ID           string
	HostSystemID string
	Sender       string
	Audience     Audience
	Category     string
	Title        string
	Body         any
	CTAURI       string
	// ReceivedAt is when the host system received the message.
	ReceivedAt time.Time
	// DeliveredAt is when the message was stored.
	DeliveredAt time.Time
	// ReadAt is when the user read the message; zero while unread. For a
	// broadcast it comes from the user's read receipt.
	ReadAt time.Time
	// ArchivedAt is when the user archived the message; zero if it is not
	// archived. For a broadcast it comes from the user's receipt.
	ArchivedAt time.Time
	// ExpiresAt is when the message expires (the expiredat TTL attribute).
	ExpiresAt time.Time
}

// IsBroadcast reports whether m was broadcast, stored once for its whole
// audience: to everyone in the inbox, or to a group (Audience.Group).
func (m Message) IsBroadcast() bool {
	return m.Audience.Kind == AudienceEveryone || m.Audience.Kind == AudienceGroup
}

// IsRead reports whether m has been read.
func (m Message) IsRead() bool { return !m.ReadAt.IsZero() }

// IsArchived reports whether m has been archived.
func (m Message) IsArchived() bool { return !m.ArchivedAt.IsZero() }

// Record is one item of a partition as a Store persists it: a message, a
// broadcast (in the public partition or a group's) or a receipt.
//
// A receipt (Receipt true) is a user's state of a broadcast or group
// message: it lives in the user's partition under the message's ID and
// carries only Message.ID, Message.Category, Message.ExpiresAt, the user's
// marks (Message.ReadAt, Message.ArchivedAt, DeletedAt) and, for a group's
// message, Message.Audience.Group; its other fields are zero. The seeds
// call it a read receipt: one with ReadAt is one.
type Record struct {
	Partition Partition
	Receipt   bool
	Message   Message
	// DeletedAt is set on a receipt of a broadcast or group message that
	// the user deleted from their inbox (it stays hidden from them); zero
	// otherwise. A direct message a user deletes is removed instead.
	DeletedAt time.Time
	// Entry is the sort key of the record's ledger entry (see Store and
	// LedgerSK), set by the Inbox on every record it writes; "" for a
	// record another program wrote to the table, until a mark or Recount
	// adopts it.
	Entry string
}

// Ledgered reports whether r has a ledger entry.
func (r Record) Ledgered() bool { return r.Entry != "" }

// Key returns the record's key.
func (r Record) Key() Key { return Key{Partition: r.Partition, ID: r.Message.ID} }

// validateHostSystemID checks a host system ID ("" for none): at most
// MaxHostSystemIDLen bytes of printable UTF-8.
func validateHostSystemID(id string) error {
	if len(id) > MaxHostSystemIDLen {
		return fmt.Errorf("%w: host system id is %d bytes, more than %d", ErrInvalidKey, len(id), MaxHostSystemIDLen)
	}
	if id == "" {
		return nil
	}
	return checkPrintable("host system id", id)
}

// validateDraft checks a draft's fields and returns it with its body
// normalized (see normalizeBody). It writes nothing; the size is checked
// by prepare, which knows the partitions.
func validateDraft(d Draft) (Draft, error) {
	if err := validateCategory(d.Category); err != nil {
		return d, err
	}
	if err := validateHostSystemID(d.HostSystemID); err != nil {
		return d, err
	}
	if d.TTL < 0 {
		return d, fmt.Errorf("%w: negative message ttl %v", ErrInvalidTTL, d.TTL)
	}
	for name, s := range map[string]string{"title": d.Title, "sender": d.Sender, "label": d.Label, "cta uri": d.CTAURI} {
		if !utf8.ValidString(s) {
			return d, fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidInput, name)
		}
	}
	body, err := normalizeBody(d.Body)
	if err != nil {
		return d, err
	}
	d.Body = body
	return d, nil
}

func checkPrintable(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidKey, what)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return fmt.Errorf("%w: %s contains a non-printing character", ErrInvalidKey, what)
		}
	}
	return nil
}

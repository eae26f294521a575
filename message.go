package inbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
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
)

// Audience is who a message was addressed to.
type Audience struct {
	Kind AudienceKind
	// Label names the group of users for display, e.g. "on-call".
	Label string
	// UIDs lists the recipient of this copy (one user, never the whole
	// audience, so an item's size does not grow with the audience). It is
	// empty for a broadcast.
	UIDs []string
}

// Draft is what a caller publishes or broadcasts.
type Draft struct {
	// HostSystemID is the caller's own ID for the message. A publish or
	// broadcast retried with the same HostSystemID in the same inbox, while
	// the first attempt's message lives, reuses its message ID and delivers
	// no duplicate. Publishes and broadcasts have separate host IDs.
	// Optional; at most MaxHostSystemIDLen bytes of printable UTF-8.
	HostSystemID string
	// Sender names who sent the message, e.g. an admin ID.
	Sender string
	// Label is the audience label of a publish to users, e.g. "on-call".
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
	// ExpiresAt is when the message expires (the expiredat TTL attribute).
	ExpiresAt time.Time
}

// IsBroadcast reports whether m was broadcast to everyone in the inbox.
func (m Message) IsBroadcast() bool { return m.Audience.Kind == AudienceEveryone }

// IsRead reports whether m has been read.
func (m Message) IsRead() bool { return !m.ReadAt.IsZero() }

// Record is one item of a partition as a Store persists it: a message, a
// broadcast (in the public partition) or a read receipt.
//
// A receipt (Receipt true) lives in a user's partition under the broadcast's
// ID and carries only Message.ID, Message.Category, Message.ReadAt and
// Message.ExpiresAt; its other fields are zero.
type Record struct {
	Partition Partition
	Receipt   bool
	Message   Message
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

// MaxItemSize is DynamoDB's item size limit, which a message must fit in.
const MaxItemSize = 400 * 1024

// itemOverhead bounds the bytes of a message item outside title, body,
// CTA URI, sender, label and host system ID: key values, attribute names,
// numbers and the map structure.
const itemOverhead = 2048

// normalizeBody returns body as encoding/json would decode it into an any
// (invalid UTF-8 inside it becomes U+FFFD, as encoding/json does), and its
// estimated DynamoDB size. A body that cannot be encoded is ErrInvalidInput.
func normalizeBody(body any) (any, int, error) {
	if body == nil {
		return nil, 0, nil
	}
	if s, ok := body.(string); ok {
		if !utf8.ValidString(s) {
			return nil, 0, fmt.Errorf("%w: body is not valid UTF-8", ErrInvalidInput)
		}
		return s, len(s), nil
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: body is not JSON-compatible: %v", ErrInvalidInput, err)
	}
	var out any
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&out); err != nil {
		return nil, 0, fmt.Errorf("%w: body: %v", ErrInvalidInput, err)
	}
	return out, attrSize(out), nil
}

// validateDraft checks a draft's fields and returns it with its body
// normalized. It writes nothing.
func validateDraft(d Draft) (Draft, error) {
	if err := validateCategory(d.Category); err != nil {
		return d, err
	}
	if len(d.HostSystemID) > MaxHostSystemIDLen {
		return d, fmt.Errorf("%w: host system id is %d bytes, more than %d", ErrInvalidKey, len(d.HostSystemID), MaxHostSystemIDLen)
	}
	if d.HostSystemID != "" {
		if err := checkPrintable("host system id", d.HostSystemID); err != nil {
			return d, err
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
	body, bodySize, err := normalizeBody(d.Body)
	if err != nil {
		return d, err
	}
	d.Body = body
	size := itemOverhead + bodySize + len(d.Title) + len(d.CTAURI) + len(d.Sender) + len(d.Label) + len(d.HostSystemID)
	if size > MaxItemSize {
		return d, fmt.Errorf("%w: about %d bytes, the limit is %d", ErrTooLarge, size, MaxItemSize)
	}
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

// attrSize estimates the bytes DynamoDB counts for v, a body as encoding/json
// decodes it: strings by length, numbers at most 21 bytes, and one byte per
// element plus three per list or map on top of their contents.
func attrSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case float64:
		// About one byte per two significant digits, plus one.
		mant, _, _ := strings.Cut(strconv.FormatFloat(v, 'e', -1, 64), "e")
		digits := len(strings.Trim(mant, "-."))
		if strings.Contains(mant, ".") {
			digits--
		}
		return (digits+1)/2 + 1
	case map[string]any:
		n := 3
		for k, e := range v {
			n += len(k) + attrSize(e) + 1
		}
		return n
	case []any:
		n := 3
		for _, e := range v {
			n += attrSize(e) + 1
		}
		return n
	}
	return 1 // bool, null
}

package driver

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stak/inbox/internal/ddbsize"
)

// This file holds what DynamoDB refuses in a message item, and how it
// counts an item's size, as measured against DynamoDB Local (the tests of
// the dynamo package check the figures): a Store checks every message and
// receipt it writes with ValidateRecord, so that every Store, the
// in-memory one too, refuses exactly the same records.

// MaxItemSize is DynamoDB's item size limit, which a message must fit in,
// in bytes as DynamoDB counts them.
const MaxItemSize = 400 * 1024

// MaxBodyDepth is how deep a body may nest objects and arrays: DynamoDB
// allows 32 levels in an item, and a body's values sit two levels down
// (message.body), so its objects and arrays may nest 30 deep.
const MaxBodyDepth = 30

// MaxBodyKeyLen is the longest key of an object of a body, in bytes: a
// longer one fails the request on DynamoDB Local (its JSON parser reads
// no longer names), and AWS takes attribute names of less than 64 KB.
const MaxBodyKeyLen = 50_000

// Numbers DynamoDB can store: a magnitude from 1E-130 to below 1E+126 (or
// zero). A body's numbers are float64s, whose 17 significant digits are
// within DynamoDB's 38.
const (
	minNumber = 1e-130
	maxNumber = 1e126
)

// itemReserve is room every message item keeps for what it can gain after
// it is written (readat when read, and other marks) and for key and TTL
// attribute names longer than the defaults.
const itemReserve = 1024

// ValidateRecord reports whether rec, a message, broadcast or receipt, can
// be written as DynamoDB accepts it, with room for every attribute it can
// gain later: a body nested deeper than MaxBodyDepth, with a number out of
// DynamoDB's range or an object key empty or longer than MaxBodyKeyLen, or
// a time a Store would not read back (before 1970 or after 9999: see
// ValidTime), is ErrInvalidInput; an item whose size plus that room
// exceeds MaxItemSize is ErrTooLarge. Stores call it on every record they
// write.
func ValidateRecord(rec Record) error {
	if err := ValidateThread(rec.Message.Thread); err != nil {
		return err
	}
	if err := validateBody(rec.Message.Body, 0); err != nil {
		return err
	}
	m := rec.Message
	for name, t := range map[string]time.Time{"received": m.ReceivedAt, "delivered": m.DeliveredAt, "read": m.ReadAt, "archived": m.ArchivedAt,
		"interacted": m.InteractedAt, "snoozed until": m.SnoozedUntil, "deliver at": m.DeliverAt, "deleted": rec.DeletedAt} {
		if !ValidTime(t) {
			return fmt.Errorf("%w: record %s: %s time %v is before 1970 or after 9999", ErrInvalidInput, m.ID, name, t)
		}
	}
	if !m.DeliverAt.IsZero() && (rec.Receipt || !m.DeliverAt.Equal(m.DeliveredAt) || !m.DeliverAt.Before(m.ExpiresAt) || !m.DeliverAt.Equal(m.DeliverAt.Truncate(time.Second))) {
		return fmt.Errorf("%w: scheduled record %s: its delivery time must be a whole second, its DeliveredAt, before its expiry, and not a receipt's", ErrInvalidInput, m.ID)
	}
	if err := ValidateAggregate(rec); err != nil {
		return err
	}
	if n := ItemSize(rec) + itemReserve; n > MaxItemSize {
		return fmt.Errorf("%w: %d bytes with room for later attributes, the limit is %d", ErrTooLarge, n, MaxItemSize)
	}
	return nil
}

// validateBody reports whether v, a body value at nesting depth (the
// number of objects and arrays around it), is one DynamoDB accepts.
func validateBody(v any, depth int) error {
	switch v := v.(type) {
	case map[string]any:
		if depth == MaxBodyDepth {
			return fmt.Errorf("%w: body nests objects and arrays deeper than %d", ErrInvalidInput, MaxBodyDepth)
		}
		for k, e := range v {
			if k == "" {
				return fmt.Errorf("%w: body has an object with an empty key", ErrInvalidInput)
			}
			if len(k) > MaxBodyKeyLen {
				return fmt.Errorf("%w: body has an object key of %d bytes, more than %d", ErrInvalidInput, len(k), MaxBodyKeyLen)
			}
			if err := validateBody(e, depth+1); err != nil {
				return err
			}
		}
	case []any:
		if depth == MaxBodyDepth {
			return fmt.Errorf("%w: body nests objects and arrays deeper than %d", ErrInvalidInput, MaxBodyDepth)
		}
		for _, e := range v {
			if err := validateBody(e, depth+1); err != nil {
				return err
			}
		}
	case float64:
		if a := math.Abs(v); math.IsNaN(v) || a >= maxNumber || a != 0 && a < minNumber {
			return fmt.Errorf("%w: body number %v is out of DynamoDB's range (magnitude from 1E-130 to below 1E+126)", ErrInvalidInput, v)
		}
	}
	return nil
}

// ItemSize returns the size of rec's item as DynamoDB counts it, with the
// default key and TTL attribute names: the sum of each attribute's name
// and value (see valueSize), and for an unread direct message the key of
// its entry in the dynamo Store's unread index.
func ItemSize(rec Record) int {
	m := rec.Message
	n := 0
	attr := func(name string, size int) { n += len(name) + size }
	attr("pk", len(rec.Partition.PK()))
	attr("sk", len(MessageSK(m.ID)))
	attr("kind", len("UM"))
	if !rec.Receipt {
		headers := map[string]any{
			"id": m.ID, "host_system_id": nullable(m.HostSystemID), "sender": m.Sender,
			"received": epochOf(m.ReceivedAt), "delivered": epochOf(m.DeliveredAt),
		}
		audiences := map[string]any{"kind": string(m.Audience.Kind), "label": m.Audience.Label}
		if m.Audience.Group != "" {
			audiences["group"] = m.Audience.Group
		}
		if len(m.Audience.UIDs) > 0 {
			uids := make([]any, len(m.Audience.UIDs))
			for i, u := range m.Audience.UIDs {
				uids[i] = u
			}
			audiences["uids"] = uids
		}
		headers["audiences"] = audiences
		attr("headers", valueSize(headers))
		attr("message", valueSize(map[string]any{"title": m.Title, "body": m.Body, "cta_uri": nullable(m.CTAURI)}))
	}
	if m.Category != "" {
		attr("taxonomy", valueSize(map[string]any{"category": m.Category}))
	}
	if rec.Receipt && m.Audience.Group != "" {
		attr("group", len(m.Audience.Group))
	}
	if m.Thread != "" {
		// The thread, its key in the dynamo Store's thread index, and the
		// item's entry in that index (as the unread index's, below).
		k := ThreadIndexKey(m.Thread, m.ID)
		attr("thread", len(m.Thread))
		attr("tsk", 2*len(k)+len("tsk"))
		attr("pk", len(rec.Partition.PK()))
		if m.Category != "" {
			attr("taxonomy", valueSize(map[string]any{"category": m.Category}))
		}
		attr(TTLAttribute, valueSize(epochOf(m.ExpiresAt)))
	}
	n += aggregateSize(m)
	if !m.DeliverAt.IsZero() {
		attr("deliverat", valueSize(epochOf(m.DeliverAt)))
	}
	if !m.SnoozedUntil.IsZero() {
		attr("snoozeduntil", valueSize(epochOf(m.SnoozedUntil)))
	}
	if !m.InteractedAt.IsZero() {
		attr("interactedat", valueSize(epochOf(m.InteractedAt)))
	}
	if InScheduledIndex(rec) {
		// The keys of its entry in the dynamo Store's scheduled index.
		attr("spk", len(ScheduledPK(rec.Partition.Scope())))
		attr("ssk", len(ScheduledKey(m.ID, rec.Partition)))
	}
	if m.IsRead() {
		attr("readat", valueSize(epochOf(m.ReadAt)))
	}
	if !rec.Receipt && !rec.Partition.IsShared() && !m.IsRead() && !m.IsArchived() {
		// The dynamo Store's unread index key, and the item's entry in
		// that index (a local secondary index), which DynamoDB Local
		// counts in the item's size: the index key, the partition key,
		// the category and the expiry once more. (AWS's entry also holds
		// the sort key, some 30 bytes more: itemReserve covers it.)
		attr("unread", 2*len(m.ID)+len("unread"))
		attr("pk", len(rec.Partition.PK()))
		if m.Category != "" {
			attr("taxonomy", valueSize(map[string]any{"category": m.Category}))
		}
		attr(TTLAttribute, valueSize(epochOf(m.ExpiresAt)))
	}
	attr(TTLAttribute, valueSize(epochOf(m.ExpiresAt)))
	if rec.Ledgered() {
		attr(LedgerAttribute, len(rec.Entry))
		if c := CountedOf(rec); c != 0 {
			attr(CountedAttribute, valueSize(float64(c)))
		}
		if !m.DeliverAt.IsZero() {
			attr(TimedAttribute, len(TimedKey(m.DeliverAt, rec.Entry, true))) // its pending entry's key
		}
	}
	attr("tenant_key", len(rec.Partition.Tenant))
	attr("inbox_key", len(rec.Partition.Inbox))
	attr("uid", len(rec.Partition.User+rec.Partition.Group))
	return n
}

// nullable returns s, or nil (NULL) for "".
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// valueSize returns the bytes DynamoDB counts for v, a value as a body
// holds them (string, float64, bool, nil, map[string]any, []any): a string
// its UTF-8 length; a number see numberSize; a boolean or null 1; a map 3
// plus, for each member, its key, its value and 1; a list 3 plus, for each
// element, its value and 1.
func valueSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case float64:
		return numberSize(v)
	case map[string]any:
		n := 3
		for k, e := range v {
			n += len(k) + valueSize(e) + 1
		}
		return n
	case []any:
		n := 3
		for _, e := range v {
			n += valueSize(e) + 1
		}
		return n
	}
	return 1 // bool, nil
}

// epochOf returns t in epoch seconds as a number.
func epochOf(t time.Time) float64 { return float64(t.Unix()) }

// numberSize returns the bytes DynamoDB counts for number f (see
// ddbsize.Number).
func numberSize(f float64) int {
	return ddbsize.Number(strconv.FormatFloat(f, 'f', -1, 64))
}

// NormalizeBody returns body as encoding/json would decode it into an any
// (invalid UTF-8 inside it becomes U+FFFD, as encoding/json does), and
// checks that DynamoDB can store it. A body that cannot be encoded, or a
// number that would change on the way (an integer beyond 2^53 that
// float64 cannot hold exactly, say), is ErrInvalidInput: send such a value
// as a string.
func NormalizeBody(body any) (any, error) {
	if body == nil {
		return nil, nil
	}
	if s, ok := body.(string); ok {
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("%w: body is not valid UTF-8", ErrInvalidInput)
		}
		return s, nil
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%w: body is not JSON-compatible: %v", ErrInvalidInput, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("%w: body: %v", ErrInvalidInput, err)
	}
	out, err = exactNumbers(out)
	if err != nil {
		return nil, err
	}
	if err := validateBody(out, 0); err != nil {
		return nil, err
	}
	return out, nil
}

// exactNumbers replaces v's json.Numbers with float64s, or fails with
// ErrInvalidInput if one has no exact float64: a body comes back with
// float64 numbers, and must come back as it was sent.
func exactNumbers(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return nil, fmt.Errorf("%w: body number %s: %v", ErrInvalidInput, v, err)
		}
		back := strconv.FormatFloat(f, 'g', -1, 64)
		if back == string(v) {
			return f, nil // the same numeral: the same number (most bodies' numbers)
		}
		want, ok1 := new(big.Rat).SetString(string(v))
		got, ok2 := new(big.Rat).SetString(back)
		if !ok1 || !ok2 || want.Cmp(got) != 0 {
			return nil, fmt.Errorf("%w: body number %s would come back as %v: send it as a string", ErrInvalidInput, v, f)
		}
		return f, nil
	case map[string]any:
		for k, e := range v {
			x, err := exactNumbers(e)
			if err != nil {
				return nil, err
			}
			v[k] = x
		}
	case []any:
		for i, e := range v {
			x, err := exactNumbers(e)
			if err != nil {
				return nil, err
			}
			v[i] = x
		}
	}
	return v, nil
}

package inbox

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stak/inbox/driver"
)

// imageRecord reads a kind UM item (a message, broadcast or receipt) from
// a stream record's keys and one of its images, in either layout of the
// seeds: headers nested (seed 001, as package dynamo writes) or flat at the
// top level (seed 000); readat NULL or absent is unread. The user's marks
// (readat, archivedat, interactedat, a receipt's deletedat, and a
// library record's snoozeduntil) are read too, in a user's partition, and
// a library record's deliverat: the times as the Stores read them
// (driver.ParseTimeAttr, driver.ParseExpiryAttr), so that what holds no
// time, or marks on a broadcast, deletedat on a direct message, fail
// nothing and the removal of such an item is accounted as the Stores
// count it.
//
// Everything that decides where a change is accounted or announced comes
// from the keys: the partition and the message ID. Attributes that
// disagree with the keys, or that the design does not allow (a broadcast
// outside a shared partition, a ledger entry of another message), are
// ErrInvalidInput: a writer confined to one tenant's keys cannot steer the
// accounting, or an event, to another tenant.
func imageRecord(keys, img map[string]events.DynamoDBAttributeValue) (driver.Record, error) {
	key, err := keyOf(keys)
	if err != nil {
		return driver.Record{}, err
	}
	p := key.Partition
	for attr, want := range map[string]string{"tenant_key": p.Tenant, "inbox_key": p.Inbox, "uid": p.User + p.Group} {
		if v, ok := img[attr]; ok && (v.DataType() != events.DataTypeString || v.String() != want) {
			return driver.Record{}, fmt.Errorf("%w: item's %s disagrees with its key %s", ErrInvalidInput, attr, p.PK())
		}
	}
	rec := driver.Record{Partition: p, Message: Message{ID: key.ID}}
	m := &rec.Message
	headers := img
	audv, isMsg := member(img, "audiences", events.DataTypeMap)
	if h, ok := member(img, "headers", events.DataTypeMap); ok {
		headers = h.Map()
		audv, _ = member(headers, "audiences", events.DataTypeMap)
		isMsg = true
	}
	var aud map[string]events.DynamoDBAttributeValue // nil if missing: no kind
	if audv.DataType() == events.DataTypeMap {
		aud = audv.Map()
	}
	rec.Receipt = !isMsg
	if isMsg {
		m.Audience = driver.Audience{Kind: AudienceKind(str(aud, "kind")), Label: str(aud, "label"), Group: str(aud, "group")}
		if uids, ok := member(aud, "uids", events.DataTypeList); ok {
			for _, u := range uids.List() {
				if u.DataType() == events.DataTypeString {
					m.Audience.UIDs = append(m.Audience.UIDs, u.String())
				}
			}
		} else if uids, ok := member(aud, "uids", events.DataTypeStringSet); ok {
			m.Audience.UIDs = uids.StringSet()
		}
		if err := audienceFits(m.Audience, p); err != nil {
			return driver.Record{}, fmt.Errorf("item: %w", err)
		}
		m.HostSystemID, m.Sender = str(headers, "host_system_id"), str(headers, "sender")
		m.ReceivedAt, m.DeliveredAt = timeAttr(headers, "received"), timeAttr(headers, "delivered")
		if body, ok := member(img, "message", events.DataTypeMap); ok {
			m.Title, m.CTAURI = str(body.Map(), "title"), str(body.Map(), "cta_uri")
			if b, ok := body.Map()["body"]; ok {
				m.Body = bodyValue(b)
			}
		}
	} else if g, ok := img["group"]; ok {
		if g.DataType() != events.DataTypeString || p.IsShared() || driver.ValidateKey("group", g.String()) != nil {
			return driver.Record{}, fmt.Errorf("%w: receipt's group", ErrInvalidInput)
		}
		m.Audience.Group = g.String()
	}
	if tax, ok := member(img, "taxonomy", events.DataTypeMap); ok {
		m.Category = str(tax.Map(), "category")
		if err := driver.ValidateCategory(m.Category); err != nil {
			return driver.Record{}, fmt.Errorf("item: %w", err)
		}
	}
	if t, ok := img["thread"]; ok {
		if t.DataType() != events.DataTypeString || driver.ValidateThread(t.String()) != nil {
			return driver.Record{}, fmt.Errorf("%w: item's thread", ErrInvalidInput)
		}
		m.Thread = t.String()
	}
	if !p.IsShared() {
		// The user's marks, which mean nothing on a broadcast, as
		// deletedat means nothing on a direct message: the Stores read
		// no such marks.
		m.ReadAt, m.ArchivedAt, m.InteractedAt = timeAttr(img, "readat"), timeAttr(img, "archivedat"), timeAttr(img, "interactedat")
		if rec.Receipt {
			rec.DeletedAt = timeAttr(img, "deletedat")
		}
	}
	if v, ok := img[driver.LedgerAttribute]; ok {
		if v.DataType() != events.DataTypeString {
			return driver.Record{}, fmt.Errorf("%w: item's %s is not a string", ErrInvalidInput, driver.LedgerAttribute)
		}
		exp, id, err := driver.ParseLedgerSK(v.String())
		if err != nil || id != key.ID {
			return driver.Record{}, fmt.Errorf("%w: item's %s %q does not name its own entry", ErrInvalidInput, driver.LedgerAttribute, v.String())
		}
		rec.Entry, m.ExpiresAt = v.String(), exp
	} else {
		// Without a ledger entry (another program's item), the seed's TTL
		// attribute: it decides whether a removed broadcast leaves a
		// tombstone, and the expiry an event reports.
		ttl := ""
		if v, ok := member(img, driver.TTLAttribute, events.DataTypeNumber); ok {
			ttl = v.Number()
		}
		m.ExpiresAt = driver.ParseExpiryAttr(ttl)
	}
	if !rec.Ledgered() {
		// Another program's item is in no thread (see driver.Record), and
		// not scheduled (a scheduled record has a pending entry).
		m.Thread = ""
	} else if isMsg {
		m.DeliverAt = timeAttr(img, "deliverat")
	}
	if rec.Ledgered() && !p.IsShared() {
		// A user's snooze (only a mark, which adopts, sets it): the
		// removal of a snoozed record takes its snooze entry with it.
		m.SnoozedUntil = timeAttr(img, "snoozeduntil")
		// The marks its ledger entry counts: another program's change of
		// its marks leaves them (see driver.Record.Edited). What is no set
		// of marks of the record is unknown, as the Stores read it (see
		// driver.ParseCountedAttr): the removal is accounted, and the
		// record is read, as one whose counted marks are not known.
		if v, ok := member(img, driver.CountedAttribute, events.DataTypeNumber); ok {
			rec.Counted = driver.ParseCountedAttr(v.Number(), rec.Receipt)
		}
	}
	if rec.Ledgered() {
		// The timed entry it notes: a key of its own entry, or none. A
		// snoozeduntil or deliverat that holds no time, or none at all,
		// reads as that entry's time, as the Stores read it.
		if v, ok := member(img, driver.TimedAttribute, events.DataTypeString); ok {
			if at, e, pending, err := driver.ParseTimedKey(v.String(), m.ExpiresAt); err == nil && e == rec.Entry {
				rec.Timed = v.String()
				switch {
				case pending && isMsg && m.DeliverAt.IsZero():
					m.DeliverAt = at
				case !pending && !p.IsShared() && m.SnoozedUntil.IsZero():
					m.SnoozedUntil = at
				}
			}
		}
	}
	return rec, nil
}

// timeAttr returns the time img[name] holds (driver.ParseTimeAttr): zero
// if it is missing or holds none (NULL, a string, a number out of range).
func timeAttr(img map[string]events.DynamoDBAttributeValue, name string) time.Time {
	v, ok := member(img, name, events.DataTypeNumber)
	if !ok {
		return time.Time{}
	}
	t, _ := driver.ParseTimeAttr(v.Number())
	return t
}

// bodyValue converts a message body from its stream image to the Go value
// package dynamo decodes it to: strings, float64 numbers, bools, nil,
// map[string]any and []any; sets become []any and binary []byte.
func bodyValue(v events.DynamoDBAttributeValue) any {
	switch v.DataType() {
	case events.DataTypeString:
		return v.String()
	case events.DataTypeNumber:
		f, _ := strconv.ParseFloat(v.Number(), 64)
		return f
	case events.DataTypeBoolean:
		return v.Boolean()
	case events.DataTypeMap:
		out := make(map[string]any, len(v.Map()))
		for k, e := range v.Map() {
			out[k] = bodyValue(e)
		}
		return out
	case events.DataTypeList:
		out := make([]any, 0, len(v.List()))
		for _, e := range v.List() {
			out = append(out, bodyValue(e))
		}
		return out
	case events.DataTypeBinary:
		return v.Binary()
	case events.DataTypeStringSet:
		return anys(v.StringSet())
	case events.DataTypeNumberSet:
		var out []any
		for _, s := range v.NumberSet() {
			f, _ := strconv.ParseFloat(s, 64)
			out = append(out, f)
		}
		return out
	case events.DataTypeBinarySet:
		return anys(v.BinarySet())
	}
	return nil // NULL
}

// anys returns s as a []any.
func anys[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// audienceFits reports whether a message of audience a belongs in p: a
// message to users in a user's partition, a broadcast to everyone in the
// public partition, a message to a group in that group's.
func audienceFits(a Audience, p Partition) error {
	var ok bool
	switch a.Kind {
	case AudienceEveryone:
		ok = p.IsPublic() && a.Group == ""
	case AudienceGroup:
		ok = p.IsShared() && !p.IsPublic() && a.Group == p.Group
	default:
		ok = !p.IsShared() && a.Group == ""
	}
	if !ok {
		return fmt.Errorf("%w: audience %q (group %q) in partition %s", ErrInvalidInput, a.Kind, a.Group, p.PK())
	}
	return nil
}

// keyOf returns the key of a message, broadcast or receipt from a stream
// record's Keys: exactly two string attributes, one a partition key (see
// ParsePartitionKey) and the other m#<message id>. The attribute names do
// not matter, so tables with other key names are read alike.
func keyOf(keys map[string]events.DynamoDBAttributeValue) (driver.Key, error) {
	if len(keys) != 2 {
		return driver.Key{}, fmt.Errorf("%w: stream record keys %v: want a partition and a sort key", ErrInvalidInput, keys)
	}
	var pk, sk string
	for _, v := range keys {
		if v.DataType() != events.DataTypeString {
			return driver.Key{}, fmt.Errorf("%w: stream record key of type %v", ErrInvalidInput, v.DataType())
		}
		if strings.HasPrefix(v.String(), driver.MessagePrefix) {
			sk = v.String()
		} else {
			pk = v.String()
		}
	}
	p, err := driver.ParsePartitionKey(pk)
	if err != nil {
		return driver.Key{}, err
	}
	id := strings.TrimPrefix(sk, driver.MessagePrefix)
	if err := driver.ValidateMessageID(id); err != nil {
		return driver.Key{}, err
	}
	return driver.Key{Partition: p, ID: id}, nil
}

// newImageRecord is imageRecord for a new image (an INSERT's or a
// MODIFY's: what events are made of and adoption adopts), which must also
// be decodable.
func newImageRecord(keys, img map[string]events.DynamoDBAttributeValue) (driver.Record, error) {
	if err := decodable(img); err != nil {
		return driver.Record{}, err
	}
	return imageRecord(keys, img)
}

// decodable reports ErrInvalidInput for item img, a kind UM item, if an
// attribute the Stores decode holds a type they refuse (see typed): such
// an item is no record of theirs, where reading the attribute as absent
// would make a receipt of a message, or a message of no category, of no
// audience or sender, with no title. It is asked of new images only
// (newImageRecord): a REMOVE's old image is accounted as imageRecord
// reads it, so that another program's item the Stores cannot read still
// counts out of c#* when it goes, and does not fail the stream's record.
func decodable(img map[string]events.DynamoDBAttributeValue) error {
	for _, c := range []struct {
		attr string
		t    events.DynamoDBDataType
	}{{"headers", events.DataTypeMap}, {"message", events.DataTypeMap}, {"taxonomy", events.DataTypeMap}, {driver.TimedAttribute, events.DataTypeString}} {
		if err := typed(img, c.attr, c.t); err != nil {
			return err
		}
	}
	var headers map[string]events.DynamoDBAttributeValue // none: a receipt
	if h, ok := member(img, "headers", events.DataTypeMap); ok {
		headers = h.Map()
	} else if _, flat := img["audiences"]; flat {
		headers = img // seed 000's layout
	}
	for _, c := range []struct {
		in   map[string]events.DynamoDBAttributeValue
		attr string
		t    events.DynamoDBDataType
	}{
		{headers, "id", events.DataTypeString}, {headers, "host_system_id", events.DataTypeString},
		{headers, "sender", events.DataTypeString}, {headers, "audiences", events.DataTypeMap},
	} {
		if err := typed(c.in, c.attr, c.t); err != nil {
			return err
		}
	}
	if aud, ok := member(headers, "audiences", events.DataTypeMap); ok {
		for _, attr := range []string{"kind", "label", "group"} {
			if err := typed(aud.Map(), attr, events.DataTypeString); err != nil {
				return err
			}
		}
		if u, ok := aud.Map()["uids"]; ok {
			switch u.DataType() {
			case events.DataTypeList, events.DataTypeStringSet, events.DataTypeNull:
			default:
				return fmt.Errorf("%w: item's uids of type %v", ErrInvalidInput, u.DataType())
			}
		}
	}
	if b, ok := member(img, "message", events.DataTypeMap); ok {
		for _, attr := range []string{"title", "cta_uri"} {
			if err := typed(b.Map(), attr, events.DataTypeString); err != nil {
				return err
			}
		}
	}
	if tax, ok := member(img, "taxonomy", events.DataTypeMap); ok {
		return typed(tax.Map(), "category", events.DataTypeString)
	}
	return nil
}

// typed reports ErrInvalidInput for img[name] if it is present with a
// type the Stores refuse to decode as one of type t (a map or a string):
// they read NULL as absent, and a number as a string (its decimal).
func typed(img map[string]events.DynamoDBAttributeValue, name string, t events.DynamoDBDataType) error {
	v, ok := img[name]
	if !ok {
		return nil
	}
	switch v.DataType() {
	case t, events.DataTypeNull:
		return nil
	case events.DataTypeNumber:
		if t == events.DataTypeString {
			return nil
		}
	}
	return fmt.Errorf("%w: item's %s of type %v, not %v", ErrInvalidInput, name, v.DataType(), t)
}

// member returns img[name] if it has type t.
func member(img map[string]events.DynamoDBAttributeValue, name string, t events.DynamoDBDataType) (events.DynamoDBAttributeValue, bool) {
	v, ok := img[name]
	if !ok || v.DataType() != t {
		return events.DynamoDBAttributeValue{}, false
	}
	return v, true
}

// str returns img[name] if it is a string, else "".
func str(img map[string]events.DynamoDBAttributeValue, name string) string {
	v, ok := member(img, name, events.DataTypeString)
	if !ok {
		return ""
	}
	return v.String()
}

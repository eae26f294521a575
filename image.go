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
	return readImage(keys, img, &imageAttrs{})
}

// newImageRecord is imageRecord for a new image (an INSERT's or a
// MODIFY's: what events are made of and adoption adopts), which must
// also be decodable: an attribute the Stores decode that holds a type
// they refuse is ErrInvalidInput (see imageAttrs). Such an item is no
// record of theirs, where reading the attribute as absent would make a
// receipt of a message, or a message of no category, of no audience or
// sender, with no title. A REMOVE's old image is read as imageRecord
// reads it, so that another program's item the Stores cannot read still
// counts out of c#* when it goes, and does not fail the stream's record.
func newImageRecord(keys, img map[string]events.DynamoDBAttributeValue) (driver.Record, error) {
	return readImage(keys, img, &imageAttrs{strict: true})
}

// readImage is imageRecord, reading the attributes with a.
func readImage(keys, img map[string]events.DynamoDBAttributeValue, a *imageAttrs) (driver.Record, error) {
	key, err := keyOf(keys)
	if err != nil {
		return driver.Record{}, err
	}
	p := key.Partition
	for attr, want := range map[string]string{"tenant_key": p.Tenant, "inbox_key": p.Inbox, "uid": p.User + p.Group} {
		// As the Stores read it: a number as its decimal, NULL as none.
		if v, ok := a.get(img, attr, events.DataTypeString); ok && (v.DataType() == events.DataTypeString && v.String() != want || v.DataType() == events.DataTypeNumber && v.Number() != want) {
			return driver.Record{}, fmt.Errorf("%w: item's %s disagrees with its key %s", ErrInvalidInput, attr, p.PK())
		}
	}
	if a.err != nil {
		return driver.Record{}, a.err
	}
	rec := driver.Record{Partition: p, Message: Message{ID: key.ID}}
	m := &rec.Message
	// The headers: nested (seed 001), or at the top level with the
	// audiences (seed 000; any audiences attribute, NULL too, makes it
	// so for the Stores); neither is a receipt.
	headers, isMsg := a.mapOf(img, "headers")
	if !isMsg {
		headers = img
		_, isMsg = img["audiences"]
	}
	aud, _ := a.mapOf(headers, "audiences") // nil if missing: no kind
	// The message body, which the Stores decode on a receipt too.
	body, hasBody := a.mapOf(img, "message")
	title, cta := a.str(body, "title"), a.str(body, "cta_uri")
	rec.Receipt = !isMsg
	if isMsg {
		a.str(headers, "id") // the key's ID counts, but the Stores decode it
		m.Audience = driver.Audience{Kind: AudienceKind(a.str(aud, "kind")), Label: a.str(aud, "label"), Group: a.str(aud, "group")}
		m.Audience.UIDs = a.strs(aud, "uids")
		m.HostSystemID, m.Sender = a.str(headers, "host_system_id"), a.str(headers, "sender")
		m.ReceivedAt, m.DeliveredAt = timeAttr(headers, "received"), timeAttr(headers, "delivered")
		if hasBody {
			m.Title, m.CTAURI = title, cta
			if b, ok := body["body"]; ok {
				m.Body = bodyValue(b)
			}
		}
		if a.err != nil {
			return driver.Record{}, a.err
		}
		if err := audienceFits(m.Audience, p); err != nil {
			return driver.Record{}, fmt.Errorf("item: %w", err)
		}
	} else if g := a.str(img, "group"); g != "" {
		// Its broadcast's group, as the Stores read it: a number as its
		// decimal, NULL or "" as none (everyone's).
		if p.IsShared() || driver.ValidateKey("group", g) != nil {
			return driver.Record{}, fmt.Errorf("%w: receipt's group", ErrInvalidInput)
		}
		m.Audience.Group = g
	}
	timed := a.str(img, driver.TimedAttribute)
	if tax, ok := a.mapOf(img, "taxonomy"); ok {
		m.Category = a.str(tax, "category")
	}
	if a.err != nil {
		return driver.Record{}, a.err
	}
	if err := driver.ValidateCategory(m.Category); err != nil {
		return driver.Record{}, fmt.Errorf("item: %w", err)
	}
	// The ledger entry, as the Stores read it: a string, or none for
	// NULL; another type they refuse (a number names no entry, whose key
	// is a string), and so does a new image, where an old one reads it
	// as none.
	ledger, ledgered := member(img, driver.LedgerAttribute, events.DataTypeString)
	if v, ok := img[driver.LedgerAttribute]; ok && !ledgered && v.DataType() != events.DataTypeNull && a.strict {
		return driver.Record{}, fmt.Errorf("%w: item's %s of type %v, not a string", ErrInvalidInput, driver.LedgerAttribute, v.DataType())
	}
	// The Stores decode a thread whatever the item is (one of a type
	// they refuse, they refuse the item), but read it only on a record
	// with a ledger entry, a number as its decimal: another program's
	// item is in no thread, whatever thread it names (see driver.Record).
	t := a.str(img, "thread")
	if a.err != nil {
		return driver.Record{}, a.err
	}
	if ledgered {
		if t != "" && driver.ValidateThread(t) != nil {
			return driver.Record{}, fmt.Errorf("%w: item's thread", ErrInvalidInput)
		}
		m.Thread = t
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
	if ledgered {
		exp, id, err := driver.ParseLedgerSK(ledger.String())
		if err != nil || id != key.ID {
			return driver.Record{}, fmt.Errorf("%w: item's %s %q does not name its own entry", ErrInvalidInput, driver.LedgerAttribute, ledger.String())
		}
		rec.Entry, m.ExpiresAt = ledger.String(), exp
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
	rec = driver.WithAggregate(rec, imageAggregate(img))
	if rec.Ledgered() {
		// The timed entry it notes: a key of its own entry, or none. A
		// snoozeduntil or deliverat that holds no time, or none at all,
		// reads as that entry's time, as the Stores read it.
		if timed != "" {
			if at, e, pending, err := driver.ParseTimedKey(timed, m.ExpiresAt); err == nil && e == rec.Entry {
				rec.Timed = timed
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

// imageAggregate returns img's aggregate attribute (see Draft.Aggregate)
// as read for driver.WithAggregate, by the dynamo Store's rules: a map of
// a number n, lists of strings s and m and a string f, each but n
// optional; anything else is not Shaped.
func imageAggregate(img map[string]events.DynamoDBAttributeValue) driver.AggregateRead {
	v, ok := member(img, driver.AggregateAttribute, events.DataTypeMap)
	if !ok {
		return driver.AggregateRead{}
	}
	a := v.Map()
	n, ok := member(a, "n", events.DataTypeNumber)
	if !ok {
		return driver.AggregateRead{}
	}
	out := driver.AggregateRead{N: n.Number(), Shaped: true}
	strs := func(name string) []string {
		e, present := a[name]
		if !present {
			return nil
		}
		if e.DataType() != events.DataTypeList {
			out.Shaped = false
			return nil
		}
		var l []string
		for _, x := range e.List() {
			if x.DataType() != events.DataTypeString {
				out.Shaped = false
				return nil
			}
			l = append(l, x.String())
		}
		return l
	}
	out.Senders, out.Members = strs("s"), strs("m")
	if f, ok := a["f"]; ok {
		if f.DataType() != events.DataTypeString {
			out.Shaped = false
		} else {
			out.First = f.String()
		}
	}
	return out
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

// member returns img[name] if it has type t.
func member(img map[string]events.DynamoDBAttributeValue, name string, t events.DynamoDBDataType) (events.DynamoDBAttributeValue, bool) {
	v, ok := img[name]
	if !ok || v.DataType() != t {
		return events.DynamoDBAttributeValue{}, false
	}
	return v, true
}

// str returns img[name] as a string (see imageAttrs), else "".
func str(img map[string]events.DynamoDBAttributeValue, name string) string {
	return (&imageAttrs{}).str(img, name)
}

// imageAttrs reads the attributes of a stream image as the Stores decode
// them: NULL as absent, and a number where a string is expected as the
// number's decimal. An attribute of a type the Stores refuse reads as
// absent and, if strict is set, is ErrInvalidInput: err keeps the first
// such. The zero imageAttrs is lenient.
type imageAttrs struct {
	strict bool
	err    error
}

// get returns img[name] if it is present with type t (or, for a string,
// a number), and notes any other type but NULL.
func (a *imageAttrs) get(img map[string]events.DynamoDBAttributeValue, name string, t events.DynamoDBDataType) (events.DynamoDBAttributeValue, bool) {
	v, ok := img[name]
	if !ok {
		return events.DynamoDBAttributeValue{}, false
	}
	switch dt := v.DataType(); {
	case dt == t, t == events.DataTypeString && dt == events.DataTypeNumber:
		return v, true
	case dt != events.DataTypeNull && a.strict && a.err == nil:
		a.err = fmt.Errorf("%w: item's %s of type %v, not %v", ErrInvalidInput, name, dt, t)
	}
	return events.DynamoDBAttributeValue{}, false
}

// str returns img[name] as a string, "" if it is none.
func (a *imageAttrs) str(img map[string]events.DynamoDBAttributeValue, name string) string {
	v, ok := a.get(img, name, events.DataTypeString)
	switch {
	case !ok:
		return ""
	case v.DataType() == events.DataTypeNumber:
		return v.Number()
	}
	return v.String()
}

// mapOf returns img[name] if it is a map.
func (a *imageAttrs) mapOf(img map[string]events.DynamoDBAttributeValue, name string) (map[string]events.DynamoDBAttributeValue, bool) {
	v, ok := a.get(img, name, events.DataTypeMap)
	if !ok {
		return nil, false
	}
	return v.Map(), true
}

// strs returns img[name] as the Stores decode it into a []string: a
// string set's strings, a number set's decimals, or a list's elements, a
// number as its decimal and NULL as "". A list element of another type
// is refused as a map is (see get), and left out.
func (a *imageAttrs) strs(img map[string]events.DynamoDBAttributeValue, name string) []string {
	if v, ok := img[name]; ok && v.DataType() == events.DataTypeStringSet {
		return v.StringSet()
	} else if ok && v.DataType() == events.DataTypeNumberSet {
		return v.NumberSet()
	}
	v, ok := a.get(img, name, events.DataTypeList)
	if !ok {
		return nil
	}
	var out []string
	for _, u := range v.List() {
		switch dt := u.DataType(); dt {
		case events.DataTypeString:
			out = append(out, u.String())
		case events.DataTypeNumber:
			out = append(out, u.Number())
		case events.DataTypeNull:
			out = append(out, "")
		default:
			if a.strict && a.err == nil {
				a.err = fmt.Errorf("%w: item's %s holds a value of type %v, not a string", ErrInvalidInput, name, dt)
			}
		}
	}
	return out
}

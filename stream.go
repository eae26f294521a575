package inbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// RemovalMarkerTTL is how long a Store remembers an applied removal of a
// record without a ledger entry. Stream records live 24 hours, so no
// redelivery comes later than that.
const RemovalMarkerTTL = 48 * time.Hour

// StreamHandler accounts records that DynamoDB removed (TTL expiry or a
// delete), from the table's stream. Pass it to lambda.Start:
//
//	lambda.Start(ib.StreamHandler)
//
// Only REMOVE events of kind UM items count: a removed message decrements
// published in its partition (c#* and c#<category>); a removed item with
// readat (a read message or a receipt) decrements the user's read; a
// broadcast removed before it expired leaves a tombstone, so that its
// readers' receipts stop counting at once. Every other record is ignored.
//
// Each removal is applied exactly once, however often the record is
// delivered: for an item with a ledger entry, the decrements are applied
// with the deletion of the entry, in one atomic unit, and only if the entry
// is still there (so a Recount made while the removal was pending is not
// undone); for an item without one (written by another program), with a
// marker keyed by the record's event ID.
//
// The partition is taken from the record's Keys, never from the item's own
// attributes, and a record whose tenant_key, inbox_key or uid disagree with
// its key fails: a writer confined to one tenant's keys cannot steer the
// accounting to another tenant's counters.
//
// Records that fail are returned by sequence number as batch item failures
// (configure the event source mapping with ReportBatchItemFailures) and the
// others are applied; the returned error is always nil, so Lambda retries
// only the failures. A malformed record fails rather than being dropped,
// so that it reaches the mapping's on-failure destination: that includes a
// REMOVE without an old image (a stream configured KEYS_ONLY or NEW_IMAGE
// cannot be accounted).
func (ib *Inbox) StreamHandler(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	failed := make([]bool, len(ev.Records))
	ib.each(len(ev.Records), func(i int) {
		failed[i] = ib.applyStreamRecord(ctx, ev.Records[i]) != nil
	})
	var resp events.DynamoDBEventResponse
	for i, r := range ev.Records {
		if failed[i] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
		}
	}
	return resp, nil
}

// applyStreamRecord accounts one stream record.
func (ib *Inbox) applyStreamRecord(ctx context.Context, r events.DynamoDBEventRecord) error {
	if r.EventName != string(events.DynamoDBOperationTypeRemove) {
		return nil
	}
	img := r.Change.OldImage
	if len(img) == 0 {
		return fmt.Errorf("%w: REMOVE record %q without an old image: the table's stream must include old images", ErrInvalidInput, r.EventID)
	}
	if str(img, "kind") != "UM" {
		return nil
	}
	rec, err := removedRecord(r.Change.Keys, img)
	if err != nil {
		return fmt.Errorf("stream record %q: %w", r.EventID, err)
	}
	if !rec.Ledgered() && len(RemovalDeltas(rec)) == 0 {
		return nil
	}
	if !rec.Ledgered() && r.EventID == "" {
		return fmt.Errorf("%w: stream record without event ID", ErrInvalidInput)
	}
	_, err = ib.store.ApplyRemoval(ctx, RemovalFor(rec, r.EventID, ib.now()))
	return err
}

// RemovalFor returns the accounting of rec's removal that StreamHandler
// applies when the stream reports it at now under eventID: the counter
// changes of RemovalDeltas, and a tombstone if rec is a broadcast that had
// not expired. A Store that removes records by itself, like the in-memory
// one, applies exactly this.
func RemovalFor(rec Record, eventID string, now time.Time) Removal {
	return Removal{
		Record:    rec,
		EventID:   removalID(eventID),
		Deltas:    RemovalDeltas(rec),
		Tombstone: leavesTombstone(rec, now),
		Now:       now,
	}
}

// leavesTombstone reports whether the removal of rec at now must leave a
// tombstone: rec is a broadcast (to everyone or a group) that had not
// expired, whose readers' receipts still stand.
func leavesTombstone(rec Record, now time.Time) bool {
	return rec.Partition.IsShared() && !rec.Receipt && now.Before(rec.Message.ExpiresAt)
}

// removalID returns the event ID, or its SHA-256 if it is too long or
// unprintable to be a key.
func removalID(eventID string) string {
	if len(eventID) <= 128 && checkPrintable("event id", eventID) == nil {
		return eventID
	}
	sum := sha256.Sum256([]byte(eventID))
	return hex.EncodeToString(sum[:])
}

// RemovalDeltas returns the counter changes that account for rec's
// removal: published -1 in its partition (total and category) if it is a
// message or broadcast, and read -1 in the user's partition if it was read
// (a read message or a receipt), in the group's read counters too for a
// receipt of a group's message. Stores that remove records themselves, like
// the in-memory one, apply exactly these.
func RemovalDeltas(rec Record) []Counter {
	var out []Counter
	if !rec.Receipt {
		out = counterDeltas(rec.Partition, rec.Message.Category, -1, 0)
	}
	if rec.Message.IsRead() && !rec.Partition.IsShared() {
		group := ""
		if rec.Receipt {
			group = rec.Message.Audience.Group
		}
		out = mergeCounters(append(out, readDeltas(rec.Partition, rec.Message.Category, group, -1)...))
	}
	return out
}

// removedRecord reads what the accounting needs from the keys and old image
// of a removed kind UM item: its partition and ID (from the keys), whether
// it is a message (headers, or seed 000's flat audiences) or a receipt, its
// category, whether it has readat (a number; NULL is unread), a receipt's
// group, and its ledger entry. Attributes that disagree with the keys, or
// that the design does not allow (a broadcast outside a shared partition,
// readat in one), are ErrInvalidInput.
func removedRecord(keys, img map[string]events.DynamoDBAttributeValue) (Record, error) {
	key, err := keyOf(keys)
	if err != nil {
		return Record{}, err
	}
	p := key.Partition
	for attr, want := range map[string]string{"tenant_key": p.Tenant, "inbox_key": p.Inbox, "uid": p.User + p.Group} {
		if v, ok := img[attr]; ok && (v.DataType() != events.DataTypeString || v.String() != want) {
			return Record{}, fmt.Errorf("%w: removed item's %s disagrees with its key %s", ErrInvalidInput, attr, p.PK())
		}
	}
	rec := Record{Partition: p, Message: Message{ID: key.ID}}
	aud, isMsg := member(img, "audiences", events.DataTypeMap)
	if headers, ok := member(img, "headers", events.DataTypeMap); ok {
		aud, isMsg = member(headers.Map(), "audiences", events.DataTypeMap)
		isMsg = true
	}
	rec.Receipt = !isMsg
	if isMsg {
		a := Audience{Kind: AudienceKind(str(aud.Map(), "kind")), Group: str(aud.Map(), "group")}
		if err := audienceFits(a, p); err != nil {
			return Record{}, fmt.Errorf("removed item: %w", err)
		}
		rec.Message.Audience = a
	} else if g, ok := img["group"]; ok {
		if g.DataType() != events.DataTypeString || p.IsShared() || ValidateKey("group", g.String()) != nil {
			return Record{}, fmt.Errorf("%w: removed receipt's group", ErrInvalidInput)
		}
		rec.Message.Audience.Group = g.String()
	}
	if tax, ok := member(img, "taxonomy", events.DataTypeMap); ok {
		rec.Message.Category = str(tax.Map(), "category")
		if err := validateCategory(rec.Message.Category); err != nil {
			return Record{}, fmt.Errorf("removed item: %w", err)
		}
	}
	if _, ok := member(img, "readat", events.DataTypeNumber); ok {
		if p.IsShared() {
			return Record{}, fmt.Errorf("%w: removed item: readat in a shared partition", ErrInvalidInput)
		}
		rec.Message.ReadAt = time.Unix(1, 0) // set: only its presence counts
	}
	if v, ok := img[LedgerAttribute]; ok {
		if v.DataType() != events.DataTypeString {
			return Record{}, fmt.Errorf("%w: removed item's %s is not a string", ErrInvalidInput, LedgerAttribute)
		}
		exp, id, err := ParseLedgerSK(v.String())
		if err != nil || id != key.ID {
			return Record{}, fmt.Errorf("%w: removed item's %s %q does not name its own entry", ErrInvalidInput, LedgerAttribute, v.String())
		}
		rec.Entry, rec.Message.ExpiresAt = v.String(), exp
	} else if n, ok := member(img, "expiredat", events.DataTypeNumber); ok {
		// The seed's TTL attribute: it only decides whether a removed
		// broadcast of another program leaves a tombstone.
		if sec, err := strconv.ParseInt(n.Number(), 10, 64); err == nil {
			rec.Message.ExpiresAt = time.Unix(sec, 0).UTC()
		}
	}
	return rec, nil
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

// keyOf returns the key of a removed message, broadcast or receipt from a
// stream record's Keys: exactly two string attributes, one a partition key
// (see ParsePartitionKey) and the other m#<message id>. The attribute names
// do not matter, so tables with other key names are read alike.
func keyOf(keys map[string]events.DynamoDBAttributeValue) (Key, error) {
	if len(keys) != 2 {
		return Key{}, fmt.Errorf("%w: stream record keys %v: want a partition and a sort key", ErrInvalidInput, keys)
	}
	var pk, sk string
	for _, v := range keys {
		if v.DataType() != events.DataTypeString {
			return Key{}, fmt.Errorf("%w: stream record key of type %v", ErrInvalidInput, v.DataType())
		}
		if strings.HasPrefix(v.String(), MessagePrefix) {
			sk = v.String()
		} else {
			pk = v.String()
		}
	}
	p, err := ParsePartitionKey(pk)
	if err != nil {
		return Key{}, err
	}
	id := strings.TrimPrefix(sk, MessagePrefix)
	if err := ValidateMessageID(id); err != nil {
		return Key{}, err
	}
	return Key{Partition: p, ID: id}, nil
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

package inbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// RemovalMarkerTTL is how long a Store remembers an applied removal. Stream
// records live 24 hours, so no redelivery comes later than that.
const RemovalMarkerTTL = 48 * time.Hour

// StreamHandler accounts records that DynamoDB removed (TTL expiry or a
// delete), from the table's stream with old images. Pass it to lambda.Start:
//
//	lambda.Start(ib.StreamHandler)
//
// Only REMOVE events of kind UM items count: a removed message decrements
// published in its partition (c#* and c#<category>); a removed item with
// readat (a read message or a receipt) decrements the user's read. Every
// other record is ignored. Each removal is applied exactly once, however
// often the record is delivered: the decrements and a marker keyed by the
// record's event ID are written in one atomic unit.
//
// Records that fail are returned by sequence number as batch item failures
// (configure the event source mapping with ReportBatchItemFailures) and the
// others are applied; the returned error is always nil, so Lambda retries
// only the failures. A kind UM record whose old image lacks its keys fails
// too rather than being dropped, so that it reaches the mapping's on-failure
// destination.
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
	if str(img, "kind") != "UM" {
		return nil
	}
	rec, err := removedRecord(img)
	if err != nil {
		return err
	}
	deltas := RemovalDeltas(rec)
	if len(deltas) == 0 {
		return nil
	}
	if r.EventID == "" {
		return fmt.Errorf("%w: stream record without event ID", ErrInvalidInput)
	}
	_, err = ib.store.ApplyRemoval(ctx, Removal{
		ID:        removalID(r.EventID),
		Partition: rec.Partition,
		Deltas:    deltas,
		ExpiresAt: ib.now().Add(RemovalMarkerTTL),
	})
	return err
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
// (a read message or a receipt). Stores that remove records themselves,
// like the in-memory one, apply exactly these.
func RemovalDeltas(rec Record) []Counter {
	var published, read int64
	if !rec.Receipt {
		published = -1
	}
	if rec.Message.IsRead() && !rec.Partition.IsPublic() {
		read = -1
	}
	if published == 0 && read == 0 {
		return nil
	}
	return counterDeltas(rec.Partition, rec.Message.Category, published, read)
}

// removedRecord reads what the accounting needs from a kind UM old image:
// its partition (tenant_key, inbox_key, uid), whether it is a message
// (headers, with audiences.kind), its category and whether it has readat.
func removedRecord(img map[string]events.DynamoDBAttributeValue) (Record, error) {
	rec := Record{Partition: Partition{Tenant: str(img, "tenant_key"), Inbox: str(img, "inbox_key"), User: str(img, "uid")}}
	if err := rec.Partition.Validate(); err != nil {
		return Record{}, fmt.Errorf("removed item: %w", err)
	}
	headers, isMsg := member(img, "headers", events.DataTypeMap)
	rec.Receipt = !isMsg
	if isMsg {
		aud, _ := member(headers.Map(), "audiences", events.DataTypeMap)
		kind := AudienceKind(str(aud.Map(), "kind"))
		if (kind == AudienceEveryone) != rec.Partition.IsPublic() {
			return Record{}, fmt.Errorf("%w: removed item: audience %q in partition of %q", ErrInvalidInput, kind, rec.Partition.User)
		}
		rec.Message.Audience.Kind = kind
	}
	if tax, ok := member(img, "taxonomy", events.DataTypeMap); ok {
		rec.Message.Category = str(tax.Map(), "category")
	}
	if _, ok := member(img, "readat", events.DataTypeNumber); ok {
		if rec.Partition.IsPublic() {
			return Record{}, fmt.Errorf("%w: removed item: readat in the public partition", ErrInvalidInput)
		}
		rec.Message.ReadAt = time.Unix(1, 0) // set: only its presence counts
	}
	return rec, nil
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

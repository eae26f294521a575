package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
	"github.com/stak/inbox/internal/racetest"
	"github.com/stak/inbox/storetest"
)

// localHarness is a Store on a fresh table of DynamoDB Local that is also
// a storetest.Harness: Delete deletes an item with the plain SDK, as TTL or
// an operator would, and Deliver reads the table's real stream through a
// StreamReader into the StreamHandler of an Inbox of its own (on the
// suite's clock), as the Lambda would; Redeliver reads the whole stream
// again from its trim horizon.
type localHarness struct {
	*dynamo.Store
	raw       *dynamodb.Client
	table     string
	streams   *dynamodbstreams.Client
	streamARN string
	ib        *inbox.Inbox

	mu      sync.Mutex
	reader  *dynamo.StreamReader
	pending int
	events  *dynamo.StreamReader // DeliverEvents' own, created on first use
}

// newForeignHarness returns a harness over a new table on DynamoDB Local
// (made and read with opts), for a test that writes another program's
// items, and the ARN of the table's stream. It needs Local: see
// ddblocal.Endpoint.
func newForeignHarness(t *testing.T, opts ...dynamo.Option) (*localHarness, string) {
	t.Helper()
	ddblocal.Endpoint(t)
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c, opts...)
	return &localHarness{raw: c, table: table, Store: dynamo.New(c, table, opts...)}, arn
}

var (
	_ storetest.Harness     = (*localHarness)(nil)
	_ storetest.EventSource = (*localHarness)(nil)
)

// newConformanceStore returns a localHarness on a fresh table. Records
// expire by DynamoDB's TTL in real time, which the suite's far-future clock
// never reaches, so expired records stay until the suite deletes them.
// Each PutMessage, Mark and ApplyRemoval, the stream handler's too, fails
// if its transactions do not hold the items driver.PutItems,
// driver.MarkItems and driver.RemovalItems count (see itemsClient).
func newConformanceStore(t testing.TB, now func() time.Time) driver.Store {
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	store := dynamo.New(itemsClient{c}, table)
	streams := ddblocal.StreamsClient(t)
	h := &localHarness{
		Store: store, raw: c, table: table, streams: streams, streamARN: arn,
		reader: dynamo.NewStreamReader(streams, arn),
	}
	h.ib = inbox.New(h, inbox.WithClock(now))
	return h
}

// Delete deletes the item at k and reports whether it was there.
func (h *localHarness) Delete(ctx context.Context, k driver.Key) (bool, error) {
	out, err := h.raw.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(h.table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: k.Partition.PK()},
			"sk": &types.AttributeValueMemberS{Value: driver.MessageSK(k.ID)},
		},
		ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil || len(out.Attributes) == 0 {
		return false, err
	}
	h.mu.Lock()
	h.pending++
	h.mu.Unlock()
	return true, nil
}

// Deliver hands the stream's new records to the Inbox's StreamHandler.
func (h *localHarness) Deliver(ctx context.Context) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, err := h.reader.Poll(ctx, h.ib.StreamHandler)
	if err == nil {
		h.pending = 0
	}
	return n, err
}

// Redeliver hands every record of the stream to the StreamHandler again.
func (h *localHarness) Redeliver(ctx context.Context) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return dynamo.NewStreamReader(h.streams, h.streamARN).Poll(ctx, h.ib.StreamHandler)
}

// DeliverEvents reads the stream's new records, with a reader of its own,
// into ib's StreamHandler, as a Lambda function with events on would.
func (h *localHarness) DeliverEvents(ctx context.Context, ib *inbox.Inbox) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.events == nil {
		h.events = dynamo.NewStreamReader(h.streams, h.streamARN)
	}
	return h.events.Poll(ctx, ib.StreamHandler)
}

// Pending reports how many deletions have not been delivered.
func (h *localHarness) Pending() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pending
}

// Under the race detector, the longest tests of this package whose steps
// follow one another on DynamoDB Local skip (the suite but its
// Concurrency group, the property runs of one process, TestHostileTimes),
// and make test runs them whole in its line without it (see the
// Makefile): the detector finds races between goroutines, which the
// Inbox's parallel reads start in every test, and which the Concurrency
// group and the Concurrent tests here (goroutines at once), the fleet run
// (several processes, with the shared cache, taking turns: its steps
// follow one another too) and the package's other tests run under it. Of
// the package's 64,000 requests to Local, the tests that skip make some
// 50,000; under the detector the package took 155 s of CPU (besides
// Local's), without it 59 s.

// TestConformanceLocal runs the conformance suite every Store must pass,
// on DynamoDB Local.
func TestConformanceLocal(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	racetest.RunSuite(t, func(t *testing.T) { storetest.Run(t, newConformanceStore) },
		func(t *testing.T) { storetest.RunConcurrency(t, newConformanceStore) }, "dynamo/conformance_test.go")
}

// TestConformanceProperty runs random operation sequences against the
// suite's model, with removals delivered late, twice and during Recount
// through the table's real stream: 40 steps here (each checks every view
// of every user against the model), where memstore's TestProperty runs
// 3,000 on the same model.
func TestConformanceProperty(t *testing.T) {
	t.Parallel()
	racetest.SkipUnderRace(t, "dynamo/conformance_test.go")
	ddblocal.Endpoint(t)
	storetest.RunProperty(t, newConformanceStore, 40)
}

// TestConformancePropertyCached is TestConformanceProperty with the
// Inbox's shared-partition cache on.
func TestConformancePropertyCached(t *testing.T) {
	t.Parallel()
	racetest.SkipUnderRace(t, "dynamo/conformance_test.go")
	ddblocal.Endpoint(t)
	storetest.RunPropertyCached(t, newConformanceStore, 60)
}

var _ storetest.ForeignWriter = (*localHarness)(nil)

// PutForeign writes rec as another program following the seeds does, with
// the plain SDK: the item, headers nested, readat null while unread (its
// other marks, when set, in epoch seconds whatever they are), no
// ledger entry and no unread index key (and rec.Counted, if set, as its
// counted attribute); then that program's changes to the
// seeds' counters, one UpdateItem each (ADD published, read), which do not
// move the library's counter version.
func (h *localHarness) PutForeign(ctx context.Context, rec driver.Record, deltas []driver.Counter) error {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(t time.Time) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix(), 10)}
	}
	m, p := rec.Message, rec.Partition
	item := map[string]types.AttributeValue{
		"pk": s(p.PK()), "sk": s(driver.MessageSK(m.ID)), "kind": s("UM"), "expiredat": n(m.ExpiresAt),
		"tenant_key": s(p.Tenant), "inbox_key": s(p.Inbox), "uid": s(p.User + p.Group),
		"readat": &types.AttributeValueMemberNULL{Value: true},
	}
	for attr, t := range map[string]time.Time{"readat": m.ReadAt, "archivedat": m.ArchivedAt, "interactedat": m.InteractedAt, "deletedat": rec.DeletedAt} {
		if !t.IsZero() {
			item[attr] = n(t)
		}
	}
	if rec.Counted != 0 {
		// Another program's counted, which the library ignores.
		item[driver.CountedAttribute] = &types.AttributeValueMemberN{Value: strconv.Itoa(int(rec.Counted))}
	}
	if m.Category != "" {
		item["taxonomy"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"category": s(m.Category)}}
	}
	if !rec.Receipt {
		aud := map[string]types.AttributeValue{"kind": s(string(m.Audience.Kind)), "label": s(m.Audience.Label)}
		if m.Audience.Group != "" {
			aud["group"] = s(m.Audience.Group)
		}
		if len(m.Audience.UIDs) > 0 {
			aud["uids"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{s(m.Audience.UIDs[0])}}
		}
		item["headers"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"id": s(m.ID), "host_system_id": &types.AttributeValueMemberNULL{Value: true}, "sender": s(m.Sender),
			"audiences": &types.AttributeValueMemberM{Value: aud}, "received": n(m.ReceivedAt), "delivered": n(m.DeliveredAt),
		}}
		item["message"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"title": s(m.Title), "body": s(fmt.Sprint(m.Body))}}
	}
	if _, err := h.raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(h.table), Item: item,
		ConditionExpression: aws.String("attribute_not_exists(pk)")}); err != nil {
		return err
	}
	return h.addForeign(ctx, deltas)
}

// ReadForeign marks the record at k read as another program following the
// seeds does, with the plain SDK: SET readat where it has none (missing,
// or NULL as the seeds write an unread one), then that program's counter
// changes; the MODIFY it returns holds the record before and after, as
// the Store reads it.
func (h *localHarness) ReadForeign(ctx context.Context, k driver.Key, at time.Time, deltas []driver.Counter) (driver.Change, bool, error) {
	before, err := h.GetRecords(ctx, []driver.Key{k})
	if err != nil || len(before) == 0 {
		return driver.Change{}, false, err
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	_, err = h.raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(h.table),
		Key:                       map[string]types.AttributeValue{"pk": s(k.Partition.PK()), "sk": s(driver.MessageSK(k.ID))},
		UpdateExpression:          aws.String("SET readat = :t"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND (attribute_not_exists(readat) OR attribute_type(readat, :null))"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberN{Value: strconv.FormatInt(at.Unix(), 10)}, ":null": s("NULL")},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return driver.Change{}, false, nil
	}
	if err != nil {
		return driver.Change{}, false, err
	}
	if err := h.addForeign(ctx, deltas); err != nil {
		return driver.Change{}, false, err
	}
	after, err := h.GetRecords(ctx, []driver.Key{k})
	if err != nil || len(after) == 0 {
		return driver.Change{}, false, fmt.Errorf("record %s gone after its read: %w", k.ID, err)
	}
	return driver.Change{ID: "foreign-read-" + k.ID, Op: driver.ChangeModify, At: at.UTC().Truncate(time.Second), Old: &before[0], New: &after[0]}, true, nil
}

// addForeign makes another program's changes to the counters, one
// UpdateItem each (ADD published, read, on the counter each delta's key
// names, a thread's too, as memstore's harness does), which do not move
// the library's counter version.
func (h *localHarness) addForeign(ctx context.Context, deltas []driver.Counter) error {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for _, d := range deltas {
		sk := d.SK()
		if _, err := h.raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(h.table),
			Key:                       map[string]types.AttributeValue{"pk": s(d.Partition.PK()), "sk": s(sk)},
			UpdateExpression:          aws.String("ADD published :p, #r :r SET kind = :k"),
			ExpressionAttributeNames:  map[string]string{"#r": "read"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberN{Value: strconv.FormatInt(d.Published, 10)}, ":r": &types.AttributeValueMemberN{Value: strconv.FormatInt(d.Read, 10)}, ":k": s("US")},
		}); err != nil {
			return err
		}
	}
	return nil
}

// TestConformanceFleetProperty runs the fleet's random operations (several
// processes, another program's items, the stream late and twice) on
// DynamoDB Local: fewer steps than on memstore, which runs it long.
func TestConformanceFleetProperty(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	storetest.RunFleetProperty(t, newConformanceStore, 40)
}

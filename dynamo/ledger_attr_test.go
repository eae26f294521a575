package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// TestNullLedger: another program's message and receipt whose ledger
// attribute is NULL have no ledger entry, as GetRecords reads them, in
// the Store's conditions too: MarkRead and Recount adopt them (they kept
// failing with ErrConflict), and Counts agrees with List. The table's
// stream, handed to the handler with events on (the items' INSERT and
// MODIFY, and the REMOVE of a third deleted before it was adopted),
// fails no record.
func TestNullLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, arn := newForeignHarness(t)
	c, table, store := h.raw, h.table, h.Store
	ib := inbox.New(store, inbox.WithSharedCache(0))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	u := scope.User("ann")
	p := u.Partition()
	b, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "read by another program", Category: "news"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	expires := now.Add(24 * time.Hour)
	message := func(id string) driver.Record {
		return driver.Record{Partition: p, Message: driver.Message{ID: id, Sender: "ops", Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{"ann"}}, Category: "ops", ExpiresAt: expires}}
	}
	marked, recounted, deleted := message("01ARZ3NDEKTSV4RRFFQ69G5FAV"), driver.Record{Partition: p, Receipt: true, Message: driver.Message{ID: b.ID, Category: "news", ReadAt: now, ExpiresAt: b.ExpiresAt}}, message("01ARZ3NDEKTSV4RRFFQ69G5FAW")
	for _, r := range []driver.Record{marked, recounted, deleted} {
		deltas := driver.CounterDeltas(p, r.Message.Category, 1, 0)
		if r.Receipt {
			deltas = driver.CounterDeltas(p, r.Message.Category, 0, 1)
		}
		if err := h.PutForeign(ctx, r, deltas); err != nil {
			t.Fatal(err)
		}
		setNamed(t, c, table, p, driver.MessageSK(r.Message.ID), driver.LedgerAttribute, &types.AttributeValueMemberNULL{Value: true})
	}
	recs, err := store.GetRecords(ctx, []driver.Key{marked.Key(), recounted.Key()})
	if err != nil || len(recs) != 2 || recs[0].Ledgered() || recs[1].Ledgered() {
		t.Fatalf("GetRecords = %+v, %v; want both without a ledger entry", recs, err)
	}
	if _, err := h.Delete(ctx, deleted.Key()); err != nil {
		t.Fatal(err)
	}
	if ok, err := ib.MarkRead(ctx, u, marked.Message.ID); err != nil || !ok {
		t.Errorf("MarkRead = %v, %v; want it marked", ok, err)
	}
	if _, err := ib.Recount(ctx, u); err != nil {
		t.Errorf("Recount: %v", err)
	}
	recs, err = store.GetRecords(ctx, []driver.Key{marked.Key(), recounted.Key()})
	if err != nil || len(recs) != 2 || !recs[0].Ledgered() || !recs[1].Ledgered() {
		t.Errorf("GetRecords after MarkRead and Recount = %+v, %v; want both adopted", recs, err)
	}
	if err := countsVsList(ctx, ib, u); err != nil {
		t.Errorf("after MarkRead and Recount: %v", err)
	}
	ib = handleStream(t, store, arn)
	if err := countsVsList(ctx, ib, u); err != nil {
		t.Errorf("after the stream: %v", err)
	}
}

// TestNumberLedger: a ledger attribute that holds a number names no ledger
// entry (a key of one is a string): GetRecords refuses the item, as it
// refuses one whose attributes hold another type it cannot read, where it
// read the number's decimal as the record's entry; the stream handler
// accounts its removal as another program's item's, and refuses its
// INSERT with events on.
func TestNumberLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, arn := newForeignHarness(t)
	c, table, store := h.raw, h.table, h.Store
	p := inbox.Scope{Tenant: "acme", Inbox: "alerts"}.User("bob").Partition()
	rec := driver.Record{Partition: p, Message: driver.Message{ID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Sender: "ops", Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{"bob"}},
		ExpiresAt: time.Now().UTC().Truncate(time.Second).Add(24 * time.Hour)}}
	if err := h.PutForeign(ctx, rec, driver.CounterDeltas(p, "", 1, 0)); err != nil {
		t.Fatal(err)
	}
	setNamed(t, c, table, p, driver.MessageSK(rec.Message.ID), driver.LedgerAttribute, &types.AttributeValueMemberN{Value: "7"})
	if recs, err := store.GetRecords(ctx, []driver.Key{rec.Key()}); err == nil {
		t.Errorf("GetRecords = %+v; want an error", recs)
	}
	if _, err := h.Delete(ctx, rec.Key()); err != nil {
		t.Fatal(err)
	}
	for _, withEvents := range []bool{false, true} {
		var opts []inbox.Option
		if withEvents {
			opts = append(opts, inbox.WithEvents(func(context.Context, inbox.Event) error { return nil }))
		}
		ib := inbox.New(store, opts...)
		var failed []string
		handler := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			resp, err := ib.StreamHandler(ctx, ev)
			for i, r := range ev.Records {
				for _, f := range resp.BatchItemFailures {
					if f.ItemIdentifier == r.Change.SequenceNumber {
						failed = append(failed, ev.Records[i].EventName)
					}
				}
			}
			return resp, err
		}
		if _, err := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn).Poll(ctx, handler); err != nil {
			t.Fatalf("Poll: %v", err)
		}
		want := []string(nil)
		if withEvents {
			want = []string{"MODIFY"} // the ledger's: an image that cannot make an event
		}
		if len(failed) != len(want) || len(want) > 0 && failed[0] != want[0] {
			t.Errorf("events %v: failed records %v, want %v", withEvents, failed, want)
		}
		if st, err := store.Stats(ctx, driver.StatsQuery{Partition: p, Now: time.Now()}); err != nil || len(st.Counters) != 1 || st.Counters[0].Published != 0 {
			t.Errorf("events %v: counters %+v, %v; want the removal accounted", withEvents, st.Counters, err)
		}
	}
}

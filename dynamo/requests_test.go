package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/stak/inbox/driver"
)

// TestStoreReportsRequests checks that each Store call reports its
// DynamoDB requests to the driver.RequestLog of its context, with the
// operation as the SDK names it, the table, and the capacity units
// DynamoDB Local returned: a publish's transaction writes, a query reads.
func TestStoreReportsRequests(t *testing.T) {
	st, _, table := newLocalStore(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	p := driver.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	rec := driver.Record{Partition: p, Message: driver.Message{
		ID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{"ann"}},
		Title: "hi", ReceivedAt: now, DeliveredAt: now, ExpiresAt: now.Add(time.Hour),
	}}
	rec.Entry = driver.NewLedgerSK(rec.Message.ExpiresAt, rec.Message.ID)

	op := driver.NewRequestLog(nil)
	call := driver.NewRequestLog(op)
	if err := st.PutMessage(driver.WithRequestLog(ctx, call), rec, driver.RecordCounters(rec)); err != nil {
		t.Fatal(err)
	}
	reqs := call.Requests()
	if len(reqs) != 1 || reqs[0].Op != "TransactWriteItems" || reqs[0].Table != table || reqs[0].Err != nil {
		t.Fatalf("PutMessage's requests: %+v; want one TransactWriteItems on %s", reqs, table)
	}
	if r := reqs[0]; r.WriteUnits <= 0 || r.ReadUnits != 0 || r.Duration <= 0 || r.Start.IsZero() {
		t.Errorf("PutMessage's request: %+v; want write units, no read units, a start and a duration", r)
	}
	if got, want := call.Totals(), (driver.RequestTotals{Requests: 1, RoundTrips: 1, WriteUnits: reqs[0].WriteUnits}); got != want {
		t.Errorf("PutMessage's totals %+v, want %+v", got, want)
	}

	q := driver.NewRequestLog(op)
	if _, err := st.Query(driver.WithRequestLog(ctx, q), driver.Query{Partition: p, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	reqs = q.Requests()
	if len(reqs) == 0 || reqs[0].Op != "Query" || reqs[0].ReadUnits <= 0 || reqs[0].WriteUnits != 0 {
		t.Fatalf("Query's requests: %+v; want a Query with read units", reqs)
	}
	// The parent sums both calls, made one after the other, but keeps no
	// list of its own.
	tot := op.Totals()
	if tot.Requests != 1+len(reqs) || tot.RoundTrips != tot.Requests || tot.WriteUnits <= 0 || tot.ReadUnits <= 0 {
		t.Errorf("the operation's totals %+v; want both calls' requests, each its own round trip, and their units", tot)
	}
	if len(op.Requests()) != 0 {
		t.Errorf("the parent log lists %d requests, want none (they are its children's)", len(op.Requests()))
	}

	// Without a log in the context, nothing is recorded and nothing fails.
	if _, err := st.Query(ctx, driver.Query{Partition: p, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if op.Totals() != tot {
		t.Error("a call without a log changed a log")
	}
}

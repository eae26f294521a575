package dynamo_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
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

// capture is a dynamo.Client that keeps the transactions a Store sends
// and the capacity DynamoDB returned for each.
type capture struct {
	dynamo.Client

	mu  sync.Mutex
	txs []*dynamodb.TransactWriteItemsInput
	cu  []float64
}

func (c *capture) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := c.Client.TransactWriteItems(ctx, in, optFns...)
	c.mu.Lock()
	defer c.mu.Unlock()
	cu := 0.0
	if out != nil {
		for _, cc := range out.ConsumedCapacity {
			cu += aws.ToFloat64(cc.CapacityUnits)
		}
	}
	c.txs, c.cu = append(c.txs, in), append(c.cu, cu)
	return out, err
}

// TestReportsBillAsAWS checks the capacity units the Store reports for its
// requests against AWS's billing, on DynamoDB Local, whose own figures
// differ: a publish's transaction is billed 2 write units per KB of each
// item it writes (the items' sizes read back after it) and 1 for the new
// message's unread index entry, where Local reports less (the distinct
// per-item amounts alone), or at times more for an item over 1 KB (the
// Store then reports Local's figure); reads that find nothing are billed a
// unit each, where Local reports 0. The benchmarks'
// meter, which reads each item around each write and so bills an update by
// the item's real size and every index entry that may change, bills as
// much or more.
func TestReportsBillAsAWS(t *testing.T) {
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	cp := &capture{Client: c}
	m := &meter{c: cp}
	st := dynamo.New(m, table)
	now := time.Now().UTC().Truncate(time.Second)
	p := driver.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	message := func(id string, body string) driver.Record {
		rec := driver.Record{Partition: p, Message: driver.Message{
			ID: id, Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{"ann"}},
			Category: "billing", Title: "Invoice", Body: body, ReceivedAt: now, DeliveredAt: now, ExpiresAt: now.Add(time.Hour),
		}}
		rec.Entry = driver.NewLedgerSK(rec.Message.ExpiresAt, rec.Message.ID)
		return rec
	}
	// put publishes rec and returns its request, what AWS bills for it (2
	// units per KB of each item written, 1 for the message's unread index
	// entry) and the items' sizes in KB.
	put := func(rec driver.Record) (driver.Request, float64, []float64) {
		t.Helper()
		m.measure()
		log := driver.NewRequestLog(nil)
		if err := st.PutMessage(driver.WithRequestLog(ctx, log), rec, driver.RecordCounters(rec)); err != nil {
			t.Fatal(err)
		}
		reqs := log.Requests()
		if len(reqs) != 1 || reqs[0].Op != "TransactWriteItems" {
			t.Fatalf("PutMessage's requests %+v; want one transaction", reqs)
		}
		if tot := log.Totals(); tot.WriteUnits != reqs[0].WriteUnits {
			t.Errorf("the log's totals %+v; want the request's units", tot)
		}
		tx := cp.txs[len(cp.txs)-1]
		want, kbs := 0.0, []float64{}
		for _, it := range tx.TransactItems {
			var key map[string]types.AttributeValue
			switch {
			case it.Put != nil:
				key = map[string]types.AttributeValue{"pk": it.Put.Item["pk"], "sk": it.Put.Item["sk"]}
			case it.Update != nil:
				key = it.Update.Key
			default:
				t.Fatalf("PutMessage's transaction holds %+v", it)
			}
			out, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				table: {Keys: []map[string]types.AttributeValue{key}, ConsistentRead: aws.Bool(true)},
			}})
			if err != nil || len(out.Responses[table]) != 1 {
				t.Fatalf("read back %v: %v", key, err)
			}
			kb := max(math.Ceil(float64(itemSize(out.Responses[table][0]))/1024), 1)
			kbs = append(kbs, kb)
			want += 2 * kb
		}
		if r := reqs[0]; r.ConsumedWriteUnits != cp.cu[len(cp.cu)-1] || r.ReadUnits != 0 {
			t.Errorf("PutMessage's request %+v; want Local's %v WCU consumed, no read units", r, cp.cu[len(cp.cu)-1])
		}
		return reqs[0], want + 1, kbs
	}

	small := message("01ARZ3NDEKTSV4RRFFQ69G5FAV", "")
	r, want, kbs := put(small)
	t.Logf("PutMessage: items of %v KB: billed %v WCU, Local reported %v, the meter %v", kbs, r.WriteUnits, r.ConsumedWriteUnits, m.wcu)
	if len(kbs) < 3 {
		t.Fatalf("PutMessage wrote %d items; want the message, its entry and counters", len(kbs))
	}
	if r.WriteUnits != want || r.ConsumedWriteUnits >= want || r.WriteUnits > m.wcu {
		t.Errorf("a small message's transaction billed %v WCU (Local %v, the meter %v); want %v, above Local's, at most the meter's", r.WriteUnits, r.ConsumedWriteUnits, m.wcu, want)
	}
	// A body of 2.5 KB: the message item is 3 KB.
	large := message("01ARZ3NDEKTSV4RRFFQ69G5FAW", strings.Repeat("x", 2500))
	r, want, kbs = put(large)
	t.Logf("PutMessage: items of %v KB: billed %v WCU, Local reported %v, the meter %v", kbs, r.WriteUnits, r.ConsumedWriteUnits, m.wcu)
	if kbs[0] != 3 || r.WriteUnits != max(want, r.ConsumedWriteUnits) {
		t.Errorf("a 3 KB message's transaction (items of %v KB) billed %v WCU; want %v or Local's %v if more", kbs, r.WriteUnits, want, r.ConsumedWriteUnits)
	}

	// A mark: an update of the 3 KB message (billed as 1 KB: its size is
	// not in the request), its entry's put and the counters' updates.
	m.measure()
	log := driver.NewRequestLog(nil)
	read := large.State()
	read.ReadAt = now
	mk := driver.Mark{Key: large.Key(), From: large.State(), To: read, Now: now, Category: large.Message.Category, ExpiresAt: large.Message.ExpiresAt, Entry: large.Entry}
	if err := st.Mark(driver.WithRequestLog(ctx, log), []driver.Mark{mk}, driver.MarkDeltas(mk)); err != nil {
		t.Fatal(err)
	}
	r = log.Requests()[0]
	items := len(cp.txs[len(cp.txs)-1].TransactItems)
	t.Logf("Mark: %d items: billed %v WCU, Local reported %v, the meter %v", items, r.WriteUnits, r.ConsumedWriteUnits, m.wcu)
	if r.WriteUnits < float64(2*items) || r.WriteUnits > m.wcu || r.WriteUnits < r.ConsumedWriteUnits {
		t.Errorf("Mark's transaction of %d items billed %v WCU; want at least 2 per item and Local's %v, at most the meter's %v", items, r.WriteUnits, r.ConsumedWriteUnits, m.wcu)
	}

	// Reads that find nothing: a query of an empty partition, and a batch
	// read of one item and two missing ones.
	log = driver.NewRequestLog(nil)
	if _, err := st.Query(driver.WithRequestLog(ctx, log), driver.Query{Partition: driver.Partition{Tenant: "acme", Inbox: "alerts", User: "nobody"}, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	for _, r := range log.Requests() {
		if r.ReadUnits != 1 || r.ConsumedReadUnits != 0 {
			t.Errorf("a %s that finds nothing billed %v RCU (Local %v); want 1 (Local 0)", r.Op, r.ReadUnits, r.ConsumedReadUnits)
		}
	}
	log = driver.NewRequestLog(nil)
	missing := []driver.Key{{Partition: p, ID: "01ARZ3NDEKTSV4RRFFQ69G5FAX"}, {Partition: p, ID: "01ARZ3NDEKTSV4RRFFQ69G5FAY"}}
	if _, err := st.GetRecords(driver.WithRequestLog(ctx, log), append([]driver.Key{small.Key()}, missing...)); err != nil {
		t.Fatal(err)
	}
	if r := log.Requests(); len(r) != 1 || r[0].Op != "BatchGetItem" || r[0].ReadUnits != 3 || r[0].ConsumedReadUnits != 1 {
		t.Errorf("a batch read of one small item and two missing: %+v; want 3 RCU billed, Local's 1", r)
	}

	// An isolated read of counters: one TransactGetItems of c#*, the
	// category's counter and a missing thread's, billed 2 units each.
	m.measure()
	log = driver.NewRequestLog(nil)
	got, err := st.Stats(driver.WithRequestLog(ctx, log), driver.StatsQuery{Partition: p, Keys: []driver.Counter{{Category: "billing"}, {Thread: "none"}}, Isolated: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Counters) != 1 || got.Counters[0].Category != "billing" || got.Version == 0 {
		t.Errorf("the isolated read returned %+v; want the category's counter and a version", got)
	}
	r = log.Requests()[0]
	if reqs := log.Requests(); len(reqs) != 1 || r.Op != "TransactGetItems" || r.ReadUnits != 6 || r.WriteUnits != 0 || r.ReadUnits != m.rcu || r.ConsumedReadUnits != 6 {
		t.Errorf("an isolated read of three small counters, one missing: %+v; want one TransactGetItems billed 6 RCU, as the meter (%v) and Local (which reports it as AWS bills it)", reqs, m.rcu)
	}
}

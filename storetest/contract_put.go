package storetest

import (
	"errors"
	"time"

	"github.com/stak/inbox/driver"
)

// contractTests are the Store subtests of Run: the driver.Store contract,
// method by method, called directly.
func contractTests() []suiteTest {
	return []suiteTest{
		{"PutMessage", testPutMessage},
		{"PutMessageExists", testPutMessageExists},
		{"GetRecords", testGetRecords},
		{"GetRecordsExpired", testGetRecordsExpired},
		{"QueryOrder", testQueryOrder},
		{"QueryBefore", testQueryBefore},
		{"QueryPaging", testQueryPaging},
		{"QueryLimitBeforeFilter", testQueryLimitBeforeFilter},
		{"QueryFilters", testQueryFilters},
		{"QueryThread", testQueryThread},
		{"QueryScheduled", testQueryScheduled},
		{"QueryScheduledBadInput", testQueryScheduledBadInput},
		{"MarkReadDirect", testMarkReadDirect},
		{"MarkReadReceipt", testMarkReadReceipt},
		{"MarkReadAlreadyRead", testMarkReadAlreadyRead},
		{"MarkReadNotFound", testMarkReadNotFound},
		{"MarkReadBatchAllOrNothing", testMarkReadBatch},
		{"RecentReceipts", testRecentReceipts},
		{"QueryUnseen", testQueryUnseen},
		{"MarkAdoptedMeanwhile", testMarkAdoptedMeanwhile},
		{"Stats", testStats},
		{"StatsExpired", testStatsExpired},
		{"ApplyRemoval", testApplyRemoval},
		{"Repair", testRepair},
		{"RecountTime", testRecountTime},
		{"ResetAfterForeignChange", testResetAfterForeignChange},
		{"Counted", testCounted},
		{"ForeignTimes", testForeignTimes},
		{"MarklessReceipt", testMarklessReceipt},
		{"ClaimHostID", testClaimHostID},
		{"ClaimHostIDPeek", testClaimHostIDPeek},
		{"Config", testConfig},
	}
}

// testPutMessage: PutMessage creates the record and adds the deltas,
// creating counters at zero.
func testPutMessage(e *env) {
	ann, pub := e.part("ann"), e.pub()
	d := e.message(ann, "billing", 30*24*time.Hour)
	if err := e.store.PutMessage(e.ctx, d, []driver.Counter{counter(ann, "", 1, 0), counter(ann, "billing", 1, 0), counter(ann, "new", 2, 3)}); err != nil {
		e.t.Fatalf("PutMessage: %v", err)
	}
	e.wantRecords("GetRecords after PutMessage", []driver.Record{d}, e.get(d.Key()))
	e.wantCounters(ann, counter(ann, "", 1, 0), counter(ann, "billing", 1, 0), counter(ann, "new", 2, 3))

	d2 := e.message(ann, "", 24*time.Hour)
	e.put(d2)
	e.wantCounters(ann, counter(ann, "", 2, 0), counter(ann, "billing", 1, 0), counter(ann, "new", 2, 3))

	b := e.message(pub, "news", 24*time.Hour)
	e.put(b)
	e.wantRecords("GetRecords of a broadcast", []driver.Record{b}, e.get(b.Key()))
	e.wantCounters(pub, counter(pub, "", 1, 0), counter(pub, "news", 1, 0))
	e.wantCounters(e.part("bob"))
	e.wantRecords("Query(ann)", []driver.Record{d2, d}, e.records(ann))
}

// testPutMessageExists: a PutMessage at an existing key, a message or a
// receipt, fails with ErrExists and changes nothing.
func testPutMessageExists(e *env) {
	ann, pub := e.part("ann"), e.pub()
	d := e.message(ann, "billing", 24*time.Hour)
	e.put(d)
	b := e.message(pub, "news", 24*time.Hour)
	e.put(b)
	r := e.markReceipt(ann, b)

	again := d
	again.Message.Title = "a retry that must not overwrite"
	again.Message.Category = "other"
	bAgain := b
	bAgain.Message.Body = map[string]any{"changed": true}
	onReceipt := e.message(ann, "", time.Hour)
	onReceipt.Message.ID = b.Message.ID // a direct message where ann's receipt is
	onReceipt.Entry = driver.LedgerSK(onReceipt.Message.ExpiresAt, b.Message.ID, "other")
	for _, rec := range []driver.Record{again, d, bAgain, onReceipt} {
		err := e.store.PutMessage(e.ctx, rec, []driver.Counter{counter(rec.Partition, "", 5, 5), counter(rec.Partition, "other", 1, 0)})
		if !errors.Is(err, driver.ErrExists) {
			e.t.Errorf("PutMessage(%s/%s) at an existing key: got %v, want ErrExists", rec.Partition.PK(), rec.Message.ID, err)
		}
	}
	e.wantRecords("records after PutMessage at existing keys", sorted(d, r, b), e.get(d.Key(), r.Key(), b.Key()))
	e.wantCounters(ann, counter(ann, "", 1, 1), counter(ann, "billing", 1, 0), counter(ann, "news", 0, 1))
	e.wantCounters(pub, counter(pub, "", 1, 0), counter(pub, "news", 1, 0))
}

// testGetRecords: GetRecords returns the records at keys across partitions,
// receipts included, and leaves missing keys out.
func testGetRecords(e *env) {
	ann, bob, pub := e.part("ann"), e.part("bob"), e.pub()
	d1 := e.message(ann, "billing", 24*time.Hour)
	d2 := e.message(bob, "", 24*time.Hour)
	b := e.message(pub, "news", 24*time.Hour)
	for _, r := range []driver.Record{d1, d2, b} {
		e.put(r)
	}
	r := e.markReceipt(ann, b)
	missing := []driver.Key{
		{Partition: ann, ID: e.newID()},
		{Partition: pub, ID: d1.Message.ID},
		{Partition: bob, ID: d1.Message.ID},
		{Partition: bob, ID: b.Message.ID},
		{Partition: driver.Partition{Tenant: "acme", Inbox: "other", User: "ann"}, ID: d1.Message.ID},
	}
	got := e.get(append(keys(d1, d2, b, r), missing...)...)
	want := []driver.Record{r, d1, d2, b} // sorted by partition key, then ID
	sortRecords(want)
	e.wantRecords("GetRecords", want, got)
	e.wantRecords("GetRecords of missing keys", nil, e.get(missing...))
}

// testGetRecordsExpired: an expired record is still returned while it
// exists. A store that deletes records when they expire must account each
// removal as inbox.StreamHandler does for DynamoDB (or hold it, as a
// Harness): counters, ledger and records must stay in step.
func testGetRecordsExpired(e *env) {
	ann, pub := e.part("ann"), e.pub()
	d, b, r := e.readPair(ann)
	e.clock.Advance(2 * time.Hour)

	got := e.get(d.Key(), b.Key(), r.Key())
	e.t.Logf("%d of 3 expired records are left", len(got))
	all := map[driver.Key]driver.Record{d.Key(): d, b.Key(): b, r.Key(): r}
	var want []driver.Record
	for _, g := range got {
		want = append(want, all[g.Key()])
	}
	e.wantRecords("GetRecords of expired records", want, got)
	for _, p := range []driver.Partition{ann, pub} {
		var left []driver.Record
		for _, g := range got {
			if g.Partition == p {
				left = append(left, g)
			}
		}
		e.wantRecords("Query("+p.User+") after expiry", left, reversed(e.records(p)))
	}
	e.checkInvariant()
}

// reversed returns recs in reverse order (ascending IDs, for comparing a
// Query result with sorted records).
func reversed(recs []driver.Record) []driver.Record {
	out := make([]driver.Record, len(recs))
	for i, r := range recs {
		out[len(recs)-1-i] = r
	}
	return out
}

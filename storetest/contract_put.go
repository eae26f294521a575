package storetest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stak/inbox/driver"
)

// contractTests are the Store subtests of Run: the driver.Store contract,
// method by method, called directly.
func contractTests() []suiteTest {
	return []suiteTest{
		{"PutMessage", testPutMessage},
		{"PutMessageExists", testPutMessageExists},
		{"PutMessageReceipts", testPutMessageReceipts},
		{"PutMessageReceiptsBadInput", testPutMessageReceiptsBadInput},
		{"PutMessageReceiptsForeign", testPutMessageReceiptsForeign},
		{"ReceiptHint", testReceiptHint},
		{"ReceiptHintPutBehind", testReceiptHintPutBehind},
		{"ReceiptHintManyThreads", testReceiptHintManyThreads},
		{"PutMessageItems", testPutMessageItems},
		{"GetRecords", testGetRecords},
		{"GetRecordsExpired", testGetRecordsExpired},
		{"QueryOrder", testQueryOrder},
		{"QueryBefore", testQueryBefore},
		{"QueryPaging", testQueryPaging},
		{"QueryLimitBeforeFilter", testQueryLimitBeforeFilter},
		{"QueryFilters", testQueryFilters},
		{"QueryThread", testQueryThread},
		{"QueryThreadsActivity", testQueryThreadsActivity},
		{"QueryThreadsRev", testQueryThreadsRev},
		{"QueryScheduled", testQueryScheduled},
		{"QueryScheduledBadInput", testQueryScheduledBadInput},
		{"Readers", testReaders},
		{"ReadersEdited", testReadersEdited},
		{"ReadersBadInput", testReadersBadInput},
		{"MarkReadDirect", testMarkReadDirect},
		{"MarkReadReceipt", testMarkReadReceipt},
		{"MarkReadAlreadyRead", testMarkReadAlreadyRead},
		{"MarkReadNotFound", testMarkReadNotFound},
		{"MarkReadBatchAllOrNothing", testMarkReadBatch},
		{"MarkItems", testMarkItems},
		{"MarkOneItemTwice", testMarkOneItemTwice},
		{"RecentReceipts", testRecentReceipts},
		{"QueryUnseen", testQueryUnseen},
		{"MarkAdoptedMeanwhile", testMarkAdoptedMeanwhile},
		{"Stats", testStats},
		{"StatsKeys", testStatsKeys},
		{"StatsCategoryAbove", testStatsCategoryAbove},
		{"StatsExpired", testStatsExpired},
		{"ApplyRemoval", testApplyRemoval},
		{"ApplyRemovalItems", testApplyRemovalItems},
		{"Repair", testRepair},
		{"Buckets", testBuckets},
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

// putWithReceipt puts shared record b with the receipts marks make, and
// their counter changes as the Inbox gives them (MarkDeltas, and
// AboveDeltas for a watermark below b), and notes them among the
// receipts put read (env.putRead).
func (e *env) putWithReceipts(b driver.Record, marks ...driver.Mark) error {
	deltas := driver.PutDeltas(b)
	for _, mk := range marks {
		deltas = slices.Concat(deltas, driver.MarkDeltas(mk), driver.AboveDeltas(mk, ""))
	}
	err := e.store.PutMessage(e.ctx, b, driver.MergeCounters(deltas), marks...)
	if err == nil {
		for _, mk := range marks {
			e.putRead[readerKey{mk.Shared, mk.Key.ID, mk.Key.Partition.User}] = true
		}
	}
	return err
}

// testPutMessageReceipts: PutMessage of a group's message, in a thread,
// with users' receipts of it creates each receipt in the same unit, as
// Mark would: with its ledger entry, its counted marks, the user's
// counters (the group's and the thread's too, with the thread's receipts'
// hint of it: driver.Counter.Latest and Top) and the broadcast among
// the user's recent receipts; a user's Above changes only if her
// watermark is below the message. A receipt at a key already taken fails
// the put with ErrExists, and nothing is written. A mark that takes the
// read back (the receipt deleted) works afterwards.
func testPutMessageReceipts(e *env) {
	annP, bobP := e.part("ann"), e.part("bob")
	group := groupOf(e.scope, "admins")
	e.used[group] = true
	// bob's watermark is above the messages put below: his receipts count
	// in no Above.
	if err := e.store.Mark(e.ctx, []driver.Mark{{Key: driver.Key{Partition: bobP}, Now: e.clock.Now(), Seen: driver.SeenAt(e.clock.Now().Add(time.Hour))}}, nil); err != nil {
		e.t.Fatalf("watermark of bob: %v", err)
	}
	g := e.message(group, "chat", 3*time.Hour)
	g.Message.Thread = "team"
	now := e.clock.Now()
	ann, bob := receiptMark(annP, g, now, now), receiptMark(bobP, g, now, now)
	if err := e.putWithReceipts(g, ann, bob); err != nil {
		e.t.Fatalf("PutMessage with receipts: %v", err)
	}
	e.wantRecords("the message and its receipts", sorted(g, receipt(annP, g, now), receipt(bobP, g, now)), e.get(g.Key(), ann.Key, bob.Key))
	e.wantCounters(annP, counter(annP, "", 0, 1), counter(annP, "chat", 0, 1),
		driver.Counter{Partition: annP, Group: "admins", Read: 1}, driver.Counter{Partition: annP, Category: "chat", Group: "admins", Read: 1},
		driver.Counter{Partition: annP, Group: "admins", Thread: "team", Read: 1, Latest: g.Message.ID, Top: driver.State{ReadAt: now}, TopEntry: ann.Entry})
	if got, want := e.recentKeys(annP), []string{"admins/" + g.Message.ID}; !slices.Equal(got, want) {
		e.t.Errorf("Stats.Recent of ann after the put: %v, want %v", got, want)
	}
	e.checkInvariant() // the thread's counters, the Above of each, the ledger

	// A put whose receipt's key is taken (by ann's direct message of the
	// same ID) writes nothing.
	g2 := e.message(group, "chat", 3*time.Hour)
	d := e.message(annP, "", time.Hour)
	d.Message.ID, d.Entry = g2.Message.ID, driver.LedgerSK(d.Message.ExpiresAt, g2.Message.ID, "other")
	e.put(d)
	before := e.snapshot()
	if err := e.putWithReceipts(g2, receiptMark(annP, g2, now, now)); !errors.Is(err, driver.ErrExists) {
		e.t.Errorf("PutMessage with a receipt at a taken key: %v, want ErrExists", err)
	}
	e.wantUnchanged("PutMessage with a receipt at a taken key", before)

	// Taking ann's read back: her receipt goes, and her counts with it.
	unread := ann
	unread.From, unread.To = ann.To, driver.State{}
	if err := e.markFenced(annP, []driver.Mark{unread}, driver.MarkDeltas(unread)); err != nil {
		e.t.Fatalf("mark of ann's receipt unread: %v", err)
	}
	e.wantRecords("ann's receipt after it was read back", nil, e.get(ann.Key))
	e.checkInvariant()
}

// testPutMessageReceiptsForeign: a receipt to put at a key where another
// program's receipt stands, one without marks (the seeds' unread receipt,
// readat NULL) or read, fails the put with ErrExists, and nothing is
// written: PutMessage creates receipts, it adopts none.
func testPutMessageReceiptsForeign(e *env) {
	w := e.foreignWriter()
	annP, bobP := e.part("ann"), e.part("bob")
	group := groupOf(e.scope, "admins")
	e.used[group] = true
	now := e.clock.Now()
	g := e.message(group, "chat", 3*time.Hour)
	g.Message.Thread = "team"
	for _, c := range []struct {
		name string
		p    driver.Partition
		read time.Time
	}{{"without marks", annP, time.Time{}}, {"read", bobP, now}} {
		foreign := driver.Record{Partition: c.p, Receipt: true, Message: driver.Message{ID: g.Message.ID, Category: g.Message.Category, ReadAt: c.read, ExpiresAt: g.Message.ExpiresAt, Audience: driver.Audience{Group: "admins"}}}
		var deltas []driver.Counter
		if !c.read.IsZero() {
			deltas = delta(c.p, "", 0, 1) // as the seeds count a read
		}
		if err := w.PutForeign(e.ctx, foreign, deltas); err != nil {
			e.t.Fatalf("PutForeign(a receipt %s): %v", c.name, err)
		}
		before := e.snapshot()
		if err := e.putWithReceipts(g, receiptMark(c.p, g, now, now)); !errors.Is(err, driver.ErrExists) {
			e.t.Errorf("PutMessage with a receipt where another program's receipt %s stands: %v, want ErrExists", c.name, err)
		}
		e.wantUnchanged("PutMessage with a receipt where another program's receipt "+c.name+" stands", before)
	}
}

// testPutMessageReceiptsBadInput: receipts PutMessage cannot create (of
// another message, of a direct message, of a scheduled one, with marks
// to change, with no marks, two in one partition, more than
// MaxPutReceipts) are ErrInvalidInput, and nothing is written.
func testPutMessageReceiptsBadInput(e *env) {
	annP, bobP := e.part("ann"), e.part("bob")
	group := groupOf(e.scope, "admins")
	e.used[group] = true
	now := e.clock.Now()
	g := e.message(group, "chat", time.Hour)
	other := e.message(group, "chat", time.Hour)
	d := e.message(annP, "chat", time.Hour)
	scheduled := e.message(group, "chat", time.Hour)
	scheduled.Message.DeliverAt = now.Add(time.Minute)
	many := make([]driver.Mark, driver.MaxPutReceipts+1)
	for i := range many {
		many[i] = receiptMark(e.part(fmt.Sprintf("u%d", i)), g, now, now)
	}
	changed := func(f func(*driver.Mark)) driver.Mark {
		mk := receiptMark(annP, g, now, now)
		f(&mk)
		return mk
	}
	before := e.snapshot()
	for name, c := range map[string]struct {
		rec   driver.Record
		marks []driver.Mark
	}{
		"of another message":       {g, []driver.Mark{receiptMark(annP, other, now, now)}},
		"of a direct message":      {d, []driver.Mark{changed(func(mk *driver.Mark) { mk.Key.ID, mk.Shared = d.Message.ID, annP })}},
		"of a scheduled message":   {scheduled, []driver.Mark{receiptMark(annP, scheduled, now, now)}},
		"with marks to change":     {g, []driver.Mark{changed(func(mk *driver.Mark) { mk.From = mk.To })}},
		"with no marks":            {g, []driver.Mark{changed(func(mk *driver.Mark) { mk.To = driver.State{} })}},
		"deleted":                  {g, []driver.Mark{changed(func(mk *driver.Mark) { mk.To = driver.State{DeletedAt: now} })}},
		"of another category":      {g, []driver.Mark{changed(func(mk *driver.Mark) { mk.Category = "other" })}},
		"of another thread":        {g, []driver.Mark{changed(func(mk *driver.Mark) { mk.Thread = "other" })}},
		"two in one partition":     {g, []driver.Mark{receiptMark(annP, g, now, now), receiptMark(annP, g, now, now)}},
		"in a shared partition":    {g, []driver.Mark{changed(func(mk *driver.Mark) { mk.Key.Partition = e.pub() })}},
		"more than MaxPutReceipts": {g, many},
	} {
		if err := e.store.PutMessage(e.ctx, c.rec, driver.PutDeltas(c.rec), c.marks...); !errors.Is(err, driver.ErrInvalidInput) {
			e.t.Errorf("PutMessage with a receipt %s: %v, want ErrInvalidInput", name, err)
		}
	}
	e.wantUnchanged("PutMessage with receipts it cannot create", before)
	e.wantRecords("bob's partition", nil, e.records(bobP))
}

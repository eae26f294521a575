package storetest

import (
	"errors"
	"time"

	"github.com/stak/inbox/driver"
)

// testMarkReadDirect: a direct mark sets the message's ReadAt, writes its
// ledger entry and adds the deltas, changing nothing else.
func testMarkReadDirect(e *env) {
	annP := e.part("ann")
	d := e.message(annP, "billing", time.Hour)
	e.put(d)
	other := e.message(annP, "billing", time.Hour)
	e.put(other)
	e.clock.Advance(10 * time.Minute)
	readAt := e.clock.Now().Add(-time.Minute) // ReadAt is the mark's, not the store's time
	if err := e.store.Mark(e.ctx, []driver.Mark{directMark(d, readAt, e.clock.Now())}, delta(annP, "billing", 0, 1)); err != nil {
		e.t.Fatalf("MarkRead: %v", err)
	}
	d.Message.ReadAt = readAt
	e.wantRecords("records after MarkRead", []driver.Record{d, other}, e.get(d.Key(), other.Key()))
	e.wantCounters(annP, counter(annP, "", 2, 1), counter(annP, "billing", 2, 1))
	e.wantRecords("records of a read-only query", []driver.Record{other}, e.query(driver.Query{Partition: annP, Limit: 10, UnreadOnly: true}, []driver.Record{other, d}).Records)
}

// testMarkReadReceipt: a receipt mark creates the receipt record, with only
// ID, category, ReadAt and expiry, and its ledger entry, and leaves the
// broadcast as it was.
func testMarkReadReceipt(e *env) {
	annP, bobP, pubP := e.part("ann"), e.part("bob"), e.pub()
	b := e.message(pubP, "news", 3*time.Hour)
	e.put(b)
	e.clock.Advance(time.Minute)
	now := e.clock.Now()
	if err := e.store.Mark(e.ctx, []driver.Mark{receiptMark(annP, b, now, now)}, delta(annP, "news", 0, 1)); err != nil {
		e.t.Fatalf("MarkRead(receipt): %v", err)
	}
	r := receipt(annP, b, now)
	e.wantRecords("records after MarkRead(receipt)", sorted(r, b), e.get(r.Key(), b.Key(), driver.Key{Partition: bobP, ID: b.Message.ID}))
	e.wantCounters(annP, counter(annP, "", 0, 1), counter(annP, "news", 0, 1))
	e.wantCounters(pubP, counter(pubP, "", 1, 0), counter(pubP, "news", 1, 0))
	e.wantCounters(bobP)
	e.wantRecords("Query(ann)", []driver.Record{r}, e.records(annP))

	// An uncategorised broadcast gets an uncategorised receipt.
	b2 := e.message(pubP, "", 3*time.Hour)
	e.put(b2)
	r2 := e.markReceipt(bobP, b2)
	e.wantRecords("receipt of an uncategorised broadcast", []driver.Record{r2}, e.get(r2.Key()))
	e.wantCounters(bobP, counter(bobP, "", 0, 1))
}

// testMarkReadAlreadyRead: marking a read message, or creating a receipt
// that exists, fails with ErrStateChanged and changes nothing.
func testMarkReadAlreadyRead(e *env) {
	annP := e.part("ann")
	d, b, r := e.readPair(annP)
	e.clock.Advance(time.Minute)
	now := e.clock.Now()

	err := e.store.Mark(e.ctx, []driver.Mark{directMark(d, now, now)}, delta(annP, "billing", 0, 1))
	if !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("MarkRead of a read message: got %v, want ErrStateChanged", err)
	}
	err = e.store.Mark(e.ctx, []driver.Mark{receiptMark(annP, b, now, now)}, delta(annP, "news", 0, 1))
	if !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("MarkRead of an existing receipt: got %v, want ErrStateChanged", err)
	}
	want := []driver.Record{d, r, b}
	sortRecords(want)
	e.wantRecords("records after repeated marks (ReadAt of the first mark)", want, e.get(d.Key(), r.Key(), b.Key()))
	e.wantCounters(annP, counter(annP, "", 1, 2), counter(annP, "billing", 1, 1), counter(annP, "news", 0, 1))
}

// testMarkReadNotFound: a missing or expired message, and a missing or
// expired broadcast, fail with ErrNotFound and change nothing.
func testMarkReadNotFound(e *env) {
	annP, pubP := e.part("ann"), e.pub()
	d := e.message(annP, "billing", time.Hour)
	e.put(d)
	b := e.message(pubP, "news", time.Hour)
	e.put(b)
	otherInbox := e.message(publicOf(driver.Scope{Tenant: e.scope.Tenant, Inbox: "other"}), "news", time.Hour)
	e.put(otherInbox)
	now := e.clock.Now()
	expiry := d.Message.ExpiresAt
	missingDirect := e.message(annP, "billing", time.Hour)
	missingBroadcast := e.message(pubP, "news", time.Hour)

	// A mark names the category and expiry of the message it was made for
	// (its ledger entry records them): another message's are not found.
	otherCategory, otherExpiry := directMark(d, now, now), directMark(d, now, now)
	otherCategory.Category, otherExpiry.ExpiresAt = "news", expiry.Add(time.Second)
	otherExpiry.Entry = driver.LedgerSK(otherExpiry.ExpiresAt, d.Message.ID, "other")
	bOtherCategory, bOtherExpiry := receiptMark(annP, b, now, now), receiptMark(annP, b, now, now)
	bOtherCategory.Category, bOtherExpiry.ExpiresAt = "", expiry.Add(-time.Second)
	bOtherExpiry.Entry = driver.LedgerSK(bOtherExpiry.ExpiresAt, b.Message.ID, "other")
	cases := []struct {
		name string
		mark driver.Mark
	}{
		{"missing message", directMark(missingDirect, now, now)},
		{"message of another user", directMark(driver.Record{Partition: e.part("bob"), Message: d.Message, Entry: d.Entry}, now, now)},
		{"message expiring at Now", directMark(d, now, expiry)},
		{"message expired before Now", directMark(d, now, expiry.Add(time.Hour))},
		{"message of another category", otherCategory},
		{"message of another expiry", otherExpiry},
		{"missing broadcast", receiptMark(annP, missingBroadcast, now, now)},
		{"broadcast expiring at Now", receiptMark(annP, b, now, expiry)},
		{"broadcast expired before Now", receiptMark(annP, b, now, expiry.Add(time.Hour))},
		{"broadcast of another category", bOtherCategory},
		{"broadcast of another expiry", bOtherExpiry},
		{"broadcast of another inbox, looked for in this one", inOwnInbox(receiptMark(annP, otherInbox, now, now))},
		{"direct message marked as a receipt", inOwnInbox(receiptMark(e.part("bob"), d, now, now))},
		{"broadcast marked as a direct message", directMark(driver.Record{Partition: annP, Message: b.Message, Entry: b.Entry}, now, now)},
	}
	for _, c := range cases {
		err := e.store.Mark(e.ctx, []driver.Mark{c.mark}, delta(c.mark.Key.Partition, "billing", 0, 1))
		if !errors.Is(err, driver.ErrNotFound) {
			e.t.Errorf("MarkRead(%s): got %v, want ErrNotFound", c.name, err)
		}
	}
	// A receipt mark that fails its own condition (a direct message stands
	// at its key) and its broadcast's (there is none) reports its own,
	// as a DynamoDB transaction reports its first failed item.
	both := receiptMark(annP, driver.Record{Partition: pubP, Message: d.Message}, now, now)
	if err := e.markFenced(both.Key.Partition, []driver.Mark{both}, nil); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("MarkRead(a receipt where a message stands, of no broadcast): got %v, want ErrStateChanged", err)
	}
	// A receipt must name a shared partition of its own inbox.
	for name, mk := range map[string]driver.Mark{
		"a receipt of another inbox's partition": receiptMark(annP, otherInbox, now, now),
		"a receipt of a user's partition":        receiptMark(e.part("bob"), d, now, now),
	} {
		if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, delta(annP, "", 0, 1)); !errors.Is(err, driver.ErrInvalidInput) {
			e.t.Errorf("MarkRead(%s): got %v, want ErrInvalidInput", name, err)
		}
	}
	e.wantRecords("records after failed marks", []driver.Record{d}, e.get(d.Key(), missingDirect.Key(), driver.Key{Partition: annP, ID: b.Message.ID}, driver.Key{Partition: annP, ID: otherInbox.Message.ID}))
	e.wantCounters(annP, counter(annP, "", 1, 0), counter(annP, "billing", 1, 0))
	e.wantCounters(e.part("bob"))
}

// testMarkReadBatch: several marks apply all or nothing: one failing mark,
// wherever it is, leaves every record and counter as it was.
func testMarkReadBatch(e *env) {
	annP, pubP := e.part("ann"), e.pub()
	d1 := e.message(annP, "billing", time.Hour)
	d2 := e.message(annP, "", time.Hour)
	read := e.message(annP, "billing", time.Hour)
	b1 := e.message(pubP, "news", time.Hour)
	b2 := e.message(pubP, "news", 2*time.Hour)
	readB := e.message(pubP, "", time.Hour)
	for _, r := range []driver.Record{d1, d2, read, b1, b2, readB} {
		e.put(r)
	}
	read = e.markDirect(read)
	readR := e.markReceipt(annP, readB)
	e.clock.Advance(time.Minute)
	now := e.clock.Now()

	good := []driver.Mark{
		directMark(d1, now, now),
		receiptMark(annP, b1, now, now),
		directMark(d2, now, now),
	}
	goodDeltas := []driver.Counter{counter(annP, "", 0, 3), counter(annP, "billing", 0, 1), counter(annP, "news", 0, 1)}
	bad := []struct {
		name string
		mark driver.Mark
	}{
		{"read message", directMark(read, now, now)},
		{"existing receipt", receiptMark(annP, readB, now, now)},
		{"missing message", directMark(e.message(annP, "", time.Hour), now, now)},
		{"expired broadcast", receiptMark(annP, b1, now, b1.Message.ExpiresAt)},
	}
	before := e.get(d1.Key(), d2.Key(), read.Key(), readR.Key(), driver.Key{Partition: annP, ID: b1.Message.ID})
	for _, b := range bad {
		for _, marks := range [][]driver.Mark{
			append([]driver.Mark{b.mark}, good...),
			append(append([]driver.Mark{}, good...), b.mark),
		} {
			err := e.store.Mark(e.ctx, marks, goodDeltas)
			if !errors.Is(err, driver.ErrStateChanged) && !errors.Is(err, driver.ErrNotFound) {
				e.t.Errorf("MarkRead of a batch with a %s: got %v, want ErrStateChanged or ErrNotFound", b.name, err)
			}
		}
	}
	e.wantRecords("records after failed batches", before, e.get(d1.Key(), d2.Key(), read.Key(), readR.Key(), driver.Key{Partition: annP, ID: b1.Message.ID}))
	e.wantCounters(annP, counter(annP, "", 3, 2), counter(annP, "billing", 2, 1))

	if err := e.store.Mark(e.ctx, append(good, receiptMark(annP, b2, now, now)), []driver.Counter{counter(annP, "", 0, 4), counter(annP, "billing", 0, 1), counter(annP, "news", 0, 2)}); err != nil {
		e.t.Fatalf("MarkRead of a good batch: %v", err)
	}
	d1.Message.ReadAt, d2.Message.ReadAt = now, now
	want := []driver.Record{d1, d2, receipt(annP, b1, now), receipt(annP, b2, now)}
	sortRecords(want)
	e.wantRecords("records after a good batch", want, e.get(keys(want...)...))
	e.wantCounters(annP, counter(annP, "", 3, 6), counter(annP, "billing", 2, 2), counter(annP, "news", 0, 2))
}

// inOwnInbox returns receipt mark mk looking for its broadcast in the
// public partition of the mark's own inbox.
func inOwnInbox(mk driver.Mark) driver.Mark {
	mk.Shared = publicOf(mk.Key.Partition.Scope())
	return mk
}

package storetest

import (
	"errors"
	"maps"
	"time"

	"github.com/stak/inbox/driver"
)

// testCounted: a Store records, with every record of a user's partition
// it writes with a ledger entry, the marks the entry counts
// (driver.Record.Counted): PutMessage's, a Mark's To (a receipt's too),
// a Repair's adoption; a broadcast records none. A mark made with other
// counted marks than the record has fails with ErrStateChanged and writes
// nothing. With a ForeignWriter: another program's record has no Counted,
// whatever counted it was written with (a set of marks or not), and an
// Inbox reads, marks and counts it; another program's read leaves
// Counted as it was (the record is Edited), and a mark from and to the
// record's marks, with its Counted, rewrites its ledger entry and its
// snooze entry as the record stands.
func testCounted(e *env) {
	annP := e.part("ann")
	d := e.message(annP, "billing", time.Hour)
	e.put(d)
	b := e.message(e.pub(), "news", time.Hour)
	e.put(b)
	now := e.clock.Now()
	stored := func(k driver.Key) driver.Record {
		e.t.Helper()
		recs := e.get(k)
		if len(recs) != 1 {
			e.t.Fatalf("GetRecords(%s): %d records", k.ID, len(recs))
		}
		return recs[0]
	}
	want := func(what string, k driver.Key, w driver.MarkSet) {
		e.t.Helper()
		if got := stored(k).Counted; got != w {
			e.t.Errorf("%s: Counted = %04b, want %04b", what, got, w)
		}
	}
	read := driver.MarksKnown | driver.MarkedRead
	want("a new copy", d.Key(), driver.MarksKnown)
	want("a broadcast", b.Key(), 0)

	mk := directMark(d, now, now)
	mk.Counted = read
	before := tallies(e.counters(annP))
	if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, driver.MarkDeltas(mk)); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("Mark with other counted marks: %v, want ErrStateChanged", err)
	}
	if rec := stored(d.Key()); rec.Message.IsRead() || rec.Counted != driver.MarksKnown {
		e.t.Errorf("a refused mark marked %s: read %v, counted %04b", d.Message.ID, rec.Message.IsRead(), rec.Counted)
	}
	if after := tallies(e.counters(annP)); !maps.Equal(before, after) {
		e.t.Errorf("a refused mark changed the counters: %v, were %v", after, before)
	}
	mk.Counted = driver.MarksKnown
	if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, driver.MarkDeltas(mk)); err != nil {
		e.t.Fatalf("Mark(read): %v", err)
	}
	want("a read copy", d.Key(), read)

	rk := receiptMark(annP, b, now, now)
	if err := e.markFenced(rk.Key.Partition, []driver.Mark{rk}, driver.MarkDeltas(rk)); err != nil {
		e.t.Fatalf("Mark(receipt): %v", err)
	}
	receipt := driver.Key{Partition: annP, ID: b.Message.ID}
	want("a new receipt", receipt, read)
	rk.From, rk.To, rk.Counted = rk.To, driver.State{ReadAt: now, ArchivedAt: now}, read
	if err := e.markFenced(rk.Key.Partition, []driver.Mark{rk}, driver.MarkDeltas(rk)); err != nil {
		e.t.Fatalf("Mark(archive the receipt): %v", err)
	}
	want("an archived receipt", receipt, read|driver.MarkedArchived)

	w, ok := e.store.(ForeignWriter)
	if !ok {
		return
	}
	f := e.message(annP, "", time.Hour)
	f.Entry, f.Message.ExpiresAt = "", f.Message.ExpiresAt.Truncate(time.Second)
	if err := w.PutForeign(e.ctx, f, delta(annP, "", 1, 0)); err != nil {
		e.t.Fatalf("PutForeign: %v", err)
	}
	want("another program's message", f.Key(), 0)
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Adopt: []driver.Record{f}, AdoptAs: []string{driver.NewLedgerSK(f.Message.ExpiresAt, f.Message.ID)}}); err != nil {
		e.t.Fatalf("Repair(adopt): %v", err)
	}
	want("another program's message, adopted", f.Key(), driver.MarksKnown)

	// Another program's counted, a set of marks or not, means nothing.
	bob := e.user("bob")
	for _, c := range []driver.MarkSet{driver.MarksKnown | driver.MarkedRead, driver.MarkedRead, driver.MarksKnown | driver.MarkedDeleted, 0x11, 0xff} {
		f := e.message(e.part("bob"), "billing", time.Hour)
		f.Entry, f.Message.ExpiresAt, f.Counted = "", f.Message.ExpiresAt.Truncate(time.Second), c
		if err := w.PutForeign(e.ctx, f, delta(e.part("bob"), "billing", 1, 0)); err != nil {
			e.t.Fatalf("PutForeign with counted %04b: %v", c, err)
		}
		want("another program's message with counted", f.Key(), 0)
		if _, err := e.ib.Get(e.ctx, bob, f.Message.ID); err != nil {
			e.t.Errorf("Get of another program's message with counted %04b: %v", c, err)
		}
		e.wantCountsFromFeed(bob)
		if ok, err := e.ib.MarkRead(e.ctx, bob, f.Message.ID); err != nil || !ok {
			e.t.Errorf("MarkRead of another program's message with counted %04b: %v, %v", c, ok, err)
		}
		want("another program's message with counted, marked read", f.Key(), driver.MarksKnown|driver.MarkedRead)
		e.wantCountsFromFeed(bob)
	}

	// Another program reads a snoozed copy: the record is edited until a
	// mark rewrites its entries.
	s := e.message(annP, "billing", time.Hour)
	e.put(s)
	until := now.Add(10 * time.Minute).Truncate(time.Second)
	sk := directMark(s, time.Time{}, now)
	sk.To, sk.Counted = driver.State{SnoozedUntil: until}, driver.MarksKnown
	if err := e.markFenced(sk.Key.Partition, []driver.Mark{sk}, driver.MarkDeltas(sk)); err != nil {
		e.t.Fatalf("Mark(snooze): %v", err)
	}
	c, ok, err := w.ReadForeign(e.ctx, s.Key(), now, delta(annP, "billing", 0, 1))
	if err != nil || !ok {
		e.t.Fatalf("ReadForeign: %v, %v", ok, err)
	}
	rec := stored(s.Key())
	if !rec.Message.IsRead() || rec.Counted != driver.MarksKnown || !rec.Edited() {
		e.t.Fatalf("after another program's read: read %v, Counted %04b, Edited %v; want read, counted unread, edited", rec.Message.IsRead(), rec.Counted, rec.Edited())
	}
	if c.New == nil || c.New.Counted != rec.Counted || !c.New.Edited() {
		e.t.Errorf("the MODIFY record's new image %+v, want the edited record", c.New)
	}
	if _, ok, err := w.ReadForeign(e.ctx, s.Key(), now, delta(annP, "billing", 0, 1)); ok || err != nil {
		e.t.Errorf("ReadForeign of a read record: %v, %v; want nothing written", ok, err)
	}
	entryOf := func(recs []driver.Record) *driver.Record {
		for i := range recs {
			if recs[i].Message.ID == s.Message.ID {
				return &recs[i]
			}
		}
		return nil
	}
	if z := entryOf(e.timedEntries(annP, false)); z == nil || z.Message.IsRead() {
		e.t.Errorf("the snooze entry before the rewrite: %+v, want it unread as it was", z)
	}
	rw := directMark(rec, time.Time{}, now)
	rw.From, rw.To, rw.Counted = rec.State(), rec.State(), rec.Counted
	rwDeltas := driver.MergeCounters(append(driver.EditDeltas(rec), rw.TimedDeltas()...))
	if err := e.markFenced(rw.Key.Partition, []driver.Mark{rw}, rwDeltas); err != nil {
		e.t.Fatalf("Mark(rewrite): %v", err)
	}
	if err := e.markFenced(rw.Key.Partition, []driver.Mark{rw}, rwDeltas); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("the rewrite again, with the old counted marks: %v, want ErrStateChanged", err)
	}
	after := stored(s.Key())
	if after.Counted != read || after.Edited() || !after.Message.SnoozedUntil.Equal(until) {
		e.t.Errorf("after the rewrite: Counted %04b, Edited %v, snoozed until %v; want read, not edited, %v", after.Counted, after.Edited(), after.Message.SnoozedUntil, until)
	}
	if l := entryOf(e.ledger(annP)); l == nil || !l.Message.IsRead() {
		e.t.Errorf("the ledger entry after the rewrite: %+v, want it read", l)
	}
	if z := entryOf(e.timedEntries(annP, false)); z == nil || !z.Message.IsRead() || !z.Message.SnoozedUntil.Equal(until) {
		e.t.Errorf("the snooze entry after the rewrite: %+v, want it read, until %v", z, until)
	}
}

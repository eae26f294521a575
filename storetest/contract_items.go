package storetest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stak/inbox/driver"
)

// maxItems is DynamoDB's limit on the items of one transaction.
const maxItems = 100

// padding returns n changes of nothing to counters of categories of
// partition p that nothing else changes: each takes a transaction item
// of its own on DynamoDB (and creates its counter at zero).
func padding(p driver.Partition, n int) []driver.Counter {
	out := make([]driver.Counter, n)
	for i := range out {
		out[i] = driver.Counter{Partition: p, Category: fmt.Sprintf("pad%03d", i)}
	}
	return out
}

// abovePadding returns n changes of Above alone, by 1, to counters of
// categories of user partition p: on DynamoDB they are written to p's
// total (c#*), and take no item of their own, unless p's watermark is
// not below the record they come with: then the change of Above is left
// out, and each is a change of nothing, an item of its own.
func abovePadding(p driver.Partition, n int) []driver.Counter {
	out := padding(p, n)
	for i := range out {
		out[i].Above = 1
	}
	return out
}

// testPutMessageItems: a PutMessage whose DynamoDB transaction holds more
// than 100 items (DynamoDB's limit) is ErrInvalidInput on every Store,
// and writes nothing; one of 100 items is written. The items: the record
// and its ledger entry; a scheduled one's pending entry and its timer; a
// shared partition's record's day and hour buckets; each receipt and its
// ledger entry; and one per counter changed, each partition's total
// among them, but a category's change of Above alone, which DynamoDB
// writes to the total, unless the partition's watermark is not below the
// record (then it is left out, and the rest is an item of its own).
func testPutMessageItems(e *env) {
	annP, bobP := e.part("ann"), e.part("bob")
	group := groupOf(e.scope, "admins")
	e.used[group] = true
	now := e.clock.Now()

	// The record, its entry and c#*: 3 items, and one per padding.
	direct := func(p driver.Partition) driver.Record { return e.message(p, "", time.Hour) }
	directDeltas := func(rec driver.Record, pad int) []driver.Counter {
		return append([]driver.Counter{{Partition: rec.Partition, Published: 1}}, padding(rec.Partition, pad)...)
	}
	// The record, its entry, its pending entry and timer, c#* and
	// c#billing: 6 items.
	scheduled := func(p driver.Partition) driver.Record {
		rec := e.message(p, "billing", time.Hour)
		rec.Message.DeliverAt = now.Add(time.Minute)
		rec.Message.DeliveredAt = rec.Message.DeliverAt
		return rec
	}
	scheduledDeltas := func(rec driver.Record, pad int) []driver.Counter {
		return append(driver.PutDeltas(rec), padding(rec.Partition, pad)...)
	}
	// A group message of category chat with 8 receipts (the most one
	// PutMessage takes): the record, its entry, its day and hour buckets,
	// the receipts and their entries (16), the group's c#* and c#chat, and
	// each reader's c#*, c#chat, c#*#admins and c#chat#admins (32): 54.
	readers := make([]driver.Partition, driver.MaxPutReceipts)
	for i := range readers {
		readers[i] = e.part(fmt.Sprintf("reader%d", i))
	}
	withReceipts := func(g driver.Record) []driver.Mark {
		var marks []driver.Mark
		for _, p := range readers {
			marks = append(marks, receiptMark(p, g, now, now))
		}
		return marks
	}
	receiptDeltas := func(g driver.Record, pad int) []driver.Counter {
		deltas := []driver.Counter{{Partition: group, Published: 1}, {Partition: group, Category: "chat", Published: 1}}
		for _, p := range readers {
			deltas = append(deltas, driver.Counter{Partition: p, Read: 1}, driver.Counter{Partition: p, Category: "chat", Read: 1},
				driver.Counter{Partition: p, Group: "admins", Read: 1}, driver.Counter{Partition: p, Category: "chat", Group: "admins", Read: 1})
		}
		return append(deltas, padding(group, pad)...)
	}
	// bob's watermark is above every message put here: a change of Above
	// of his is left out, and a category's change of it alone is then a
	// change of nothing. The record, its entry and c#*: 3 items, and one
	// per padding of bob's, none of ann's.
	if err := e.store.Mark(e.ctx, []driver.Mark{{Key: driver.Key{Partition: bobP}, Now: now, Seen: driver.SeenAt(now.Add(time.Hour))}}, nil); err != nil {
		e.t.Fatalf("watermark of bob: %v", err)
	}
	aboveDeltas := func(rec driver.Record, pad int) []driver.Counter {
		return append([]driver.Counter{{Partition: rec.Partition, Published: 1, Above: 1}}, abovePadding(rec.Partition, pad)...)
	}

	for _, c := range []struct {
		name   string
		rec    func() driver.Record
		deltas func(driver.Record, int) []driver.Counter
		marks  func(driver.Record) []driver.Mark
		base   int // items without padding
	}{
		{"a direct message", func() driver.Record { return direct(annP) }, directDeltas, nil, 3},
		{"a scheduled message", func() driver.Record { return scheduled(annP) }, scheduledDeltas, nil, 6},
		{"a group message with receipts", func() driver.Record { return e.message(group, "chat", time.Hour) }, receiptDeltas, withReceipts, 54},
		{"a message above bob's watermark", func() driver.Record { return direct(bobP) }, aboveDeltas, nil, 3},
	} {
		put := func(pad int) (driver.Record, error) {
			rec := c.rec()
			var marks []driver.Mark
			if c.marks != nil {
				marks = c.marks(rec)
			}
			return rec, e.store.PutMessage(e.ctx, rec, c.deltas(rec, pad), marks...)
		}
		before := e.snapshot()
		if rec, err := put(maxItems - c.base + 1); !errors.Is(err, driver.ErrInvalidInput) {
			e.t.Errorf("PutMessage of %s in 101 transaction items: %v, want ErrInvalidInput", c.name, err)
		} else {
			e.wantUnchanged(fmt.Sprintf("PutMessage of %s in 101 transaction items", c.name), before)
			e.wantRecords(fmt.Sprintf("%s put in 101 transaction items", c.name), nil, e.get(rec.Key()))
		}
		rec, err := put(maxItems - c.base)
		if err != nil {
			e.t.Errorf("PutMessage of %s in 100 transaction items: %v", c.name, err)
			continue
		}
		if got := e.get(rec.Key()); len(got) != 1 {
			e.t.Errorf("%s put in 100 transaction items: GetRecords = %v, want it", c.name, got)
		}
	}

	// ann's watermark is below the message: her categories' changes of
	// Above alone are written to her c#*, so 98 of them fit.
	rec := direct(annP)
	if err := e.store.PutMessage(e.ctx, rec, aboveDeltas(rec, maxItems-3+1)); err != nil {
		e.t.Errorf("PutMessage of a message above ann's watermark with 98 categories' changes of Above alone: %v", err)
	}
}

// testMarkItems: a Mark whose DynamoDB transaction holds more than 100
// items (DynamoDB's limit) is ErrInvalidInput on every Store, and writes
// nothing; one of 100 items is written. The items: each record and its
// ledger entry; the timed entries written, each with its timer, and
// deleted; for receipts, one check per broadcast; and one per counter
// changed, each partition's total among them.
func testMarkItems(e *env) {
	annP, bobP, pubP := e.part("ann"), e.part("bob"), e.pub()
	var snoozed []driver.Record
	for range driver.MaxMarkBatch {
		d := e.message(annP, "", time.Hour)
		e.put(d)
		snoozed = append(snoozed, d)
	}
	read := e.message(bobP, "", time.Hour)
	e.put(read)
	b := e.message(pubP, "news", time.Hour)
	e.put(b)
	readers := make([]driver.Partition, driver.MaxMarkBatch)
	for i := range readers {
		readers[i] = e.part(fmt.Sprintf("reader%d", i))
	}
	e.clock.Advance(time.Second)
	now := e.clock.Now()

	for _, c := range []struct {
		name   string
		marks  []driver.Mark
		deltas []driver.Counter
		base   int // items without padding, which is of the first delta's partition
	}{
		// The message, its entry and bob's c#*.
		{"a read", []driver.Mark{directMark(read, now, now)}, []driver.Counter{{Partition: bobP, Read: 1}}, 3},
		// 24 snoozes, each of the message, its entry, its snooze entry
		// and the entry's timer, and ann's c#*: 97.
		{"24 snoozes", func() []driver.Mark {
			var marks []driver.Mark
			for _, d := range snoozed {
				mk := directMark(d, time.Time{}, now)
				mk.To = driver.State{SnoozedUntil: now.Add(time.Hour)}
				marks = append(marks, mk)
			}
			return marks
		}(), []driver.Counter{{Partition: annP}}, 97},
		// 24 readers' receipts of one broadcast, each of the receipt and
		// its entry, one check of the broadcast for all, and each
		// reader's c#* and c#news: 97.
		{"24 receipts of a broadcast", func() []driver.Mark {
			var marks []driver.Mark
			for _, p := range readers {
				marks = append(marks, receiptMark(p, b, now, now))
			}
			return marks
		}(), func() []driver.Counter {
			var deltas []driver.Counter
			for _, p := range readers {
				deltas = append(deltas, driver.Counter{Partition: p, Read: 1}, driver.Counter{Partition: p, Category: "news", Read: 1})
			}
			return deltas
		}(), 97},
	} {
		pad := func(n int) []driver.Counter { return slices.Concat(c.deltas, padding(c.deltas[0].Partition, n)) }
		before := e.snapshot()
		if err := e.store.Mark(e.ctx, c.marks, pad(maxItems-c.base+1)); !errors.Is(err, driver.ErrInvalidInput) {
			e.t.Errorf("Mark of %s in 101 transaction items: %v, want ErrInvalidInput", c.name, err)
		} else {
			e.wantUnchanged(fmt.Sprintf("Mark of %s in 101 transaction items", c.name), before)
		}
		if err := e.store.Mark(e.ctx, c.marks, pad(maxItems-c.base)); err != nil {
			e.t.Errorf("Mark of %s in 100 transaction items: %v", c.name, err)
		}
	}
}

// testApplyRemovalItems: an ApplyRemoval whose DynamoDB transaction holds
// more than 100 items is ErrInvalidInput on every Store, and writes
// nothing, even one applied before (unless only the transaction made
// again without Above exceeds them); one of 100 items applies. The items:
// the ledger entry's deletion (or, for a record without one, the
// marker), the record's with Delete, and one per counter changed, each
// partition's total among them, but a category's change of Above alone,
// unless the partition's watermark is not below the record (then it is
// left out, and the rest is an item of its own).
func testApplyRemovalItems(e *env) {
	annP, bobP, carolP, daveP := e.part("ann"), e.part("bob"), e.part("carol"), e.part("dave")
	now := e.clock.Now()
	// carol's watermark is above her message: her changes of Above are
	// left out.
	if err := e.store.Mark(e.ctx, []driver.Mark{{Key: driver.Key{Partition: carolP}, Now: now, Seen: driver.SeenAt(now.Add(time.Hour))}}, nil); err != nil {
		e.t.Fatalf("watermark of carol: %v", err)
	}
	put := func(p driver.Partition) driver.Record {
		rec := e.message(p, "", time.Hour)
		e.put(rec)
		return rec
	}
	removed := func(rec driver.Record, pad func(driver.Partition, int) []driver.Counter, total driver.Counter) func(int) driver.Removal {
		return func(n int) driver.Removal {
			return driver.Removal{Record: rec, Deltas: append([]driver.Counter{total}, pad(rec.Partition, n)...), Delete: rec.Ledgered(), Now: now}
		}
	}
	annRec, carolRec, daveRec := put(annP), put(carolP), put(daveP)
	foreign := driver.Record{Partition: bobP, Message: driver.Message{ID: e.newID(), ExpiresAt: now.Add(time.Hour)}}
	for _, c := range []struct {
		name    string
		removal func(int) driver.Removal
		base    int  // items without padding
		fenced  bool // its partition's watermark is above it
	}{
		// The entry's deletion, the record's, and ann's c#*.
		{"of a message", removed(annRec, padding, driver.Counter{Partition: annP, Published: -1}), 3, false},
		// The marker, and bob's c#*.
		{"of another program's message", func(n int) driver.Removal {
			r := removed(foreign, padding, driver.Counter{Partition: bobP, Published: -1})(n)
			r.EventID = "event"
			return r
		}, 2, false},
		// The entry's deletion, its record's, carol's c#*, and her
		// categories' changes of Above, left out.
		{"of a message below carol's watermark", removed(carolRec, abovePadding, driver.Counter{Partition: carolP, Published: -1, Above: -1}), 3, true},
	} {
		before := e.snapshot()
		if ok, err := e.store.ApplyRemoval(e.ctx, c.removal(maxItems-c.base+1)); !errors.Is(err, driver.ErrInvalidInput) {
			e.t.Errorf("ApplyRemoval %s in 101 transaction items: %v, %v; want ErrInvalidInput", c.name, ok, err)
		} else {
			e.wantUnchanged(fmt.Sprintf("ApplyRemoval %s in 101 transaction items", c.name), before)
		}
		if ok, err := e.store.ApplyRemoval(e.ctx, c.removal(maxItems-c.base)); !ok || err != nil {
			e.t.Errorf("ApplyRemoval %s in 100 transaction items: %v, %v; want it applied", c.name, ok, err)
		}
		// Applied before, its first transaction is refused for its size
		// as before; or, of the one made again without Above, never made.
		ok, err := e.store.ApplyRemoval(e.ctx, c.removal(maxItems-c.base+1))
		if c.fenced && (ok || err != nil) {
			e.t.Errorf("ApplyRemoval %s in 101 transaction items, applied before: %v, %v; want false, nil", c.name, ok, err)
		} else if !c.fenced && !errors.Is(err, driver.ErrInvalidInput) {
			e.t.Errorf("ApplyRemoval %s in 101 transaction items, applied before: %v, %v; want ErrInvalidInput", c.name, ok, err)
		}
	}
	// dave's watermark is below his message: his categories' changes of
	// Above alone are written to his c#*, so 99 of them fit.
	if ok, err := e.store.ApplyRemoval(e.ctx, removed(daveRec, abovePadding, driver.Counter{Partition: daveP, Published: -1, Above: -1})(maxItems-3+1)); !ok || err != nil {
		e.t.Errorf("ApplyRemoval of a message above dave's watermark with 99 categories' changes of Above alone: %v, %v; want it applied", ok, err)
	}
}

// testMarkOneItemTwice: a Mark whose DynamoDB transaction would write one
// item twice, which DynamoDB refuses whole, writes nothing on every Store:
// two marks of one message, or of one user's watermark, are
// ErrStateChanged (the second would find the first's marks), as the
// driver.Store contract has callers pass each key once; a receipt of a
// broadcast whose pending entry the same call writes again (the
// broadcast checked and written) is ErrInvalidInput.
func testMarkOneItemTwice(e *env) {
	annP, pubP := e.part("ann"), e.pub()
	now := e.clock.Now()
	d := e.message(annP, "", time.Hour)
	e.put(d)
	b := e.message(pubP, "", time.Hour)
	b.Message.DeliverAt, b.Message.DeliveredAt = now.Add(time.Minute), now.Add(time.Minute)
	e.put(b)
	stored := e.get(b.Key())
	if len(stored) != 1 || stored[0].Timed == "" {
		e.t.Fatalf("GetRecords of the scheduled broadcast: %+v, want it with its pending entry", stored)
	}
	sb := stored[0]
	again := driver.Mark{Key: b.Key(), Now: now, Entry: sb.Entry, Category: sb.Message.Category, Thread: sb.Message.Thread,
		ExpiresAt: sb.Message.ExpiresAt, DeliverAt: sb.Message.DeliverAt, Timed: sb.Timed}
	read := directMark(d, now, now)
	archived := directMark(d, now, now)
	archived.From, archived.To = read.To, driver.State{ReadAt: now, ArchivedAt: now}
	seen := func(t time.Time) driver.Mark {
		return driver.Mark{Key: driver.Key{Partition: annP}, Now: now, Seen: driver.SeenAt(t)}
	}
	for _, c := range []struct {
		name  string
		marks []driver.Mark
		want  error
	}{
		{"a message read, then archived", []driver.Mark{read, archived}, driver.ErrStateChanged},
		{"a watermark raised twice", []driver.Mark{seen(now), seen(now.Add(time.Minute))}, driver.ErrStateChanged},
		{"a broadcast's pending entry written again, and the broadcast read", []driver.Mark{again, receiptMark(annP, b, now, now)}, driver.ErrInvalidInput},
	} {
		var deltas []driver.Counter
		for _, mk := range c.marks {
			deltas = append(deltas, driver.MarkDeltas(mk)...)
		}
		before := e.snapshot()
		if err := e.store.Mark(e.ctx, c.marks, driver.MergeCounters(deltas)); !errors.Is(err, c.want) {
			e.t.Errorf("Mark of %s in one call: %v, want %v", c.name, err, c.want)
		}
		e.wantUnchanged(fmt.Sprintf("Mark of %s in one call", c.name), before)
	}
}

package storetest

import (
	"fmt"
	"time"

	"github.com/stak/inbox/driver"
)

// testReceiptHint: a user's counter of her receipts of a shared thread
// keeps the receipts' hint (driver.Counter.Latest, Top and TopEntry) as
// the Store contract says, in the same unit as her receipts: a receipt
// written at or above Latest raises it and sets Top, one below leaves
// both, a mark without tallies (interacted alone) moves it too, the
// removal of the receipt at Latest clears Top and keeps Latest, and
// that of a receipt below leaves it; a removal of an earlier receipt at
// Latest's key (another entry) leaves the one written since; and a
// counter without a hint (an earlier version's) gets none from a write.
func testReceiptHint(e *env) {
	annP := e.part("ann")
	g := groupOf(e.scope, "admins")
	e.used[g] = true
	var msgs []driver.Record
	for range 4 {
		m := e.message(g, "chat", time.Hour)
		m.Message.Thread = "team"
		e.put(m)
		msgs = append(msgs, m)
		e.clock.Advance(time.Second)
	}
	now := e.clock.Now()
	key := driver.Counter{Thread: "team", Group: "admins"}
	hint := func(when string, latest string, top driver.State, entry string) {
		e.t.Helper()
		st, err := e.store.Stats(e.ctx, driver.StatsQuery{Partition: annP, Keys: []driver.Counter{key}})
		if err != nil {
			e.t.Fatalf("Stats(%s): %v", when, err)
		}
		var c driver.Counter
		for _, got := range st.Counters {
			if got.SK() == key.SK() {
				c = got
			}
		}
		if c.Latest != latest || !c.Top.Equal(top) || c.TopEntry != entry {
			e.t.Errorf("%s: the hint is %q %+v %q, want %q %+v %q", when, c.Latest, c.Top, c.TopEntry, latest, top, entry)
		}
	}
	mark := func(when string, mk driver.Mark) {
		e.t.Helper()
		if err := e.markFenced(annP, []driver.Mark{mk}, driver.MarkDeltas(mk)); err != nil {
			e.t.Fatalf("Mark (%s): %v", when, err)
		}
	}
	read := driver.State{ReadAt: now}
	mark("read of the second", receiptMark(annP, msgs[1], now, now))
	hint("after a read of the second", msgs[1].Message.ID, read, receiptEntry(msgs[1]))
	mark("read of the first", receiptMark(annP, msgs[0], now, now))
	hint("after a read of the first, below", msgs[1].Message.ID, read, receiptEntry(msgs[1]))

	// Interacted alone counts in no tally: the hint moves all the same.
	touched := driver.State{InteractedAt: now}
	third := receiptMark(annP, msgs[2], now, now)
	third.To = touched
	mark("interacted with the third", third)
	hint("after the third's interaction", msgs[2].Message.ID, touched, receiptEntry(msgs[2]))

	// Its receipt taken away (no marks left): Latest stays, Top is none.
	undo := third
	undo.From, undo.To = touched, driver.State{}
	mark("the third's interaction undone", undo)
	hint("after the third's receipt went", msgs[2].Message.ID, driver.State{}, "")

	// Written again at that key, then the first receipt's removal and a
	// removal naming another entry at the third's key: the hint stays.
	again := third
	again.Entry = driver.LedgerSK(msgs[2].Message.ExpiresAt, msgs[2].Message.ID, "again")
	mark("the third read again", again)
	hint("after the third's new receipt", msgs[2].Message.ID, touched, again.Entry)
	first := receipt(annP, msgs[0], now)
	if _, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: first, Deltas: driver.RemovalDeltas(first), Delete: true, Now: now}); err != nil {
		e.t.Fatalf("ApplyRemoval of the first receipt: %v", err)
	}
	hint("after the first receipt's removal", msgs[2].Message.ID, touched, again.Entry)
	stale := receipt(annP, msgs[2], time.Time{})
	stale.Message.InteractedAt = now
	stale.Entry = receiptEntry(msgs[2]) // the first receipt at that key, long gone
	if deltas := driver.RemovalDeltas(stale); len(deltas) == 0 {
		e.t.Fatalf("RemovalDeltas of the third's first receipt: none, want the hint's change")
	} else if err := e.store.Mark(e.ctx, nil, onlyHint(deltas)); err != nil {
		e.t.Fatalf("the hint's change of the third's first receipt's removal: %v", err)
	}
	hint("after a removal naming the third's first receipt", msgs[2].Message.ID, touched, again.Entry)

	// A counter without a hint (as an earlier version wrote it) gets none.
	st := e.stats(annP, now)
	var reset []driver.Counter
	for _, c := range st.Counters {
		if c.SK() == key.SK() {
			c.Latest, c.Top, c.TopEntry = "", driver.State{}, ""
		}
		reset = append(reset, c)
	}
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Reset: true, Version: st.Version, Counters: reset, Before: st.Counters, Seen: st.Seen, Preferences: st.Preferences, Now: now}); err != nil {
		e.t.Fatalf("Repair without the hint: %v", err)
	}
	hint("after a reset without it", "", driver.State{}, "")
	mark("read of the fourth", receiptMark(annP, msgs[3], now, now))
	hint("after a read of the fourth on a counter without a hint", "", driver.State{}, "")
}

// onlyHint returns the changes of receipts' hints among deltas, with no
// tallies: what a removal changes of them alone.
func onlyHint(deltas []driver.Counter) []driver.Counter {
	var out []driver.Counter
	for _, d := range deltas {
		if d.Group != "" && d.Thread != "" && d.Latest != "" {
			out = append(out, driver.Counter{Partition: d.Partition, Group: d.Group, Thread: d.Thread, Latest: d.Latest, TopEntry: d.TopEntry})
		}
	}
	return out
}

// testReceiptHintPutBehind: PutMessage of a group's message, in a
// thread whose counter already has a later message (its publish was
// slower), with its sender's receipt, counts the message without moving
// the thread's Latest, and moves the receipts' hint of the sender's
// counter of the thread as any receipt's write does.
func testReceiptHintPutBehind(e *env) {
	annP := e.part("ann")
	g := groupOf(e.scope, "admins")
	e.used[g] = true
	first := e.message(g, "chat", time.Hour)
	first.Message.Thread = "team"
	e.clock.Advance(time.Second)
	second := e.message(g, "chat", time.Hour)
	second.Message.Thread = "team"
	e.put(second)
	now := e.clock.Now()
	mk := receiptMark(annP, first, now, now)
	if err := e.putWithReceipts(first, mk); err != nil {
		e.t.Fatalf("PutMessage below the thread's Latest, with a receipt: %v", err)
	}
	st := e.stats(annP, now)
	var c driver.Counter
	for _, got := range st.Counters {
		if got.Thread == "team" && got.Group == "admins" {
			c = got
		}
	}
	if want := (driver.Counter{Partition: annP, Group: "admins", Thread: "team", Read: 1, Latest: first.Message.ID, Top: driver.State{ReadAt: now}, TopEntry: mk.Entry}); c.Tallies() != want.Tallies() || c.Latest != want.Latest || !c.Top.Equal(want.Top) || c.TopEntry != want.TopEntry {
		e.t.Errorf("ann's counter of the thread: %+v, want %+v", c, want)
	}
	e.checkInvariant()
}

// testReceiptHintManyThreads: one Mark of receipts of many threads'
// messages, each below the Latest of its thread's receipts' hint (a
// MarkAllRead page over chats whose newest messages the user read),
// applies: each hint is left as it is, whatever their number, and no
// mark is reported changed.
func testReceiptHintManyThreads(e *env) {
	annP := e.part("ann")
	g := groupOf(e.scope, "admins")
	e.used[g] = true
	const threads = 12
	var older, newer []driver.Record
	for i := range threads {
		for _, into := range []*[]driver.Record{&older, &newer} {
			m := e.message(g, "chat", time.Hour)
			m.Message.Thread = fmt.Sprintf("t%02d", i)
			e.put(m)
			*into = append(*into, m)
			e.clock.Advance(time.Second)
		}
	}
	now := e.clock.Now()
	for _, m := range newer {
		mk := receiptMark(annP, m, now, now)
		if err := e.markFenced(annP, []driver.Mark{mk}, driver.MarkDeltas(mk)); err != nil {
			e.t.Fatalf("read of %s: %v", m.Message.Thread, err)
		}
	}
	var marks []driver.Mark
	var deltas []driver.Counter
	for _, m := range older {
		mk := receiptMark(annP, m, now, now)
		marks = append(marks, mk)
		deltas = append(deltas, driver.MarkDeltas(mk)...)
	}
	if err := e.markFenced(annP, marks, driver.MergeCounters(deltas)); err != nil {
		e.t.Fatalf("one Mark of the older message of %d threads: %v", threads, err)
	}
	st := e.stats(annP, now)
	for i, m := range newer {
		key := driver.ThreadCounterSK(m.Message.Thread, "admins")
		var c driver.Counter
		for _, got := range st.Counters {
			if got.SK() == key {
				c = got
			}
		}
		if c.Read != 2 || c.Latest != m.Message.ID || !c.Top.Equal(driver.State{ReadAt: now}) || c.TopEntry != receiptEntry(newer[i]) {
			e.t.Errorf("ann's counter of %s: %+v, want 2 read and the hint of the newer message", m.Message.Thread, c)
		}
	}
	e.checkInvariant()
}

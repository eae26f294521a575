package storetest

import (
	"errors"
	"slices"
	"time"

	"github.com/stak/inbox/driver"
)

// aggregateContractTests are the Store subtests of an aggregated
// message's PutMessage (driver.Record.Follows).
func aggregateContractTests() []suiteTest {
	return []suiteTest{
		{"PutMessageAggregated", testPutMessageAggregated},
		{"PutMessageAggregatedBadInput", testPutMessageAggregatedBadInput},
		{"PutMessageAggregatedUnfenced", testPutMessageAggregatedUnfenced},
	}
}

// aggregated returns a new aggregated message of ann's of key "k", of
// category "likes", from sender, taking in item (nil for none) as it
// stands: its count, senders and members, and following its ID.
func (e *env) aggregated(sender string, item *driver.Record) driver.Record {
	e.clock.Advance(time.Second)
	rec := e.message(e.part("ann"), "likes", time.Hour)
	m := &rec.Message
	m.Thread, m.Count, m.Senders, m.Sender = "k", 1, []string{sender}, sender
	if item != nil {
		m.Count = item.Message.Count + 1
		m.Members = append([]string{item.Message.ID}, item.Message.Members...)
		for _, s := range item.Message.Senders {
			if !slices.Contains(m.Senders, s) {
				m.Senders = append(m.Senders, s)
			}
		}
		rec.Follows = item.Message.ID
	}
	return rec
}

// takeIn returns the deletion of item, ann's aggregated message, as the
// Inbox gives it to PutMessage with the message that takes it in.
func (e *env) takeIn(item driver.Record) driver.Mark {
	m := item.Message
	return driver.Mark{Key: item.Key(), Now: e.clock.Now(), Category: m.Category, Thread: m.Thread, ExpiresAt: m.ExpiresAt,
		Entry: item.Entry, From: item.State(), Counted: driver.CountedOf(item), Delete: true}
}

// putAggregated puts rec with the fence of watermark seen and mark (a
// deletion, or none), with the counter changes the Inbox gives them.
func (e *env) putAggregated(rec driver.Record, seen string, mark *driver.Mark) error {
	put := driver.PutDeltas(rec)
	if rec.Message.ID <= seen {
		for i := range put {
			put[i].Above = 0
		}
	}
	marks := []driver.Mark{{Key: driver.Key{Partition: rec.Partition}, Now: e.clock.Now(), Seen: seen, Fence: true}}
	if mark != nil {
		marks = append(marks, *mark)
		put = slices.Concat(put, driver.MarkDeltas(*mark), driver.AboveDeltas(*mark, seen))
	}
	return e.store.PutMessage(e.ctx, rec, driver.MergeCounters(put), marks...)
}

// testPutMessageAggregated: PutMessage of an aggregated message writes
// it only if its thread's Latest is the one it follows (none, for the
// first), deletes the message it takes in, with its entry, in the same
// unit, and moves the thread's Latest to it; a put that follows a Latest
// that moved, takes in a message whose marks changed, or fences another
// watermark writes nothing (ErrStateChanged, a *SeenError). The counters
// equal a recount throughout.
func testPutMessageAggregated(e *env) {
	annP := e.part("ann")
	a := e.aggregated("bob", nil)
	if err := e.putAggregated(a, "", nil); err != nil {
		e.t.Fatalf("PutMessage of the first: %v", err)
	}
	e.checkInvariant()
	before := e.snapshot()
	stale := e.aggregated("carol", nil) // follows no message: a's came first
	if err := e.putAggregated(stale, "", nil); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("PutMessage following no message, after a: %v; want ErrStateChanged", err)
	}
	e.wantUnchanged("a put that follows no message", before)
	b := e.aggregated("carol", &a)
	take := e.takeIn(a)
	if err := e.putAggregated(b, "z", &take); !errors.As(err, new(*driver.SeenError)) {
		e.t.Errorf("PutMessage fencing another watermark: %v; want a *SeenError", err)
	}
	e.wantUnchanged("a put fencing another watermark", before)
	// a is read meanwhile: the deletion read it unread.
	read := e.takeIn(a)
	read.Delete, read.To = false, driver.State{ReadAt: e.clock.Now()}
	if err := e.markFenced(annP, []driver.Mark{read}, driver.MarkDeltas(read)); err != nil {
		e.t.Fatalf("MarkRead of a: %v", err)
	}
	before = e.snapshot()
	if err := e.putAggregated(b, "", &take); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("PutMessage taking in a message whose marks changed: %v; want ErrStateChanged", err)
	}
	e.wantUnchanged("a put taking in a changed message", before)
	a.Message.ReadAt = e.clock.Now()
	take = e.takeIn(a)
	if err := e.putAggregated(b, "", &take); err != nil {
		e.t.Fatalf("PutMessage taking a in: %v", err)
	}
	stored := b
	stored.Follows = "" // never stored
	e.wantRecords("the item after b took a in", []driver.Record{stored}, e.records(annP))
	if got := e.stats(annP, e.clock.Now()); len(got.Expired) != 0 {
		e.t.Errorf("expired entries after the put: %v", got.Expired)
	}
	e.checkInvariant()
	var latest string
	for _, c := range e.counters(annP) {
		if c.Thread == "k" && c.Group == "" {
			latest = c.Latest
		}
	}
	if latest != b.Message.ID {
		e.t.Errorf("thread k's Latest: %q, want b's %q", latest, b.Message.ID)
	}
	c := e.aggregated("dave", &b)
	take = e.takeIn(b)
	if err := e.putAggregated(c, "", &take); err != nil {
		e.t.Fatalf("PutMessage taking b in: %v", err)
	}
	stored = c
	stored.Follows = ""
	e.wantRecords("the item after c took b in", []driver.Record{stored}, e.records(annP))
	e.checkInvariant()
}

// testPutMessageAggregatedBadInput: aggregate fields that contradict
// themselves, an aggregated message outside a user's thread, and marks
// that are no fence of its partition and no deletion of one message of
// its thread in its partition are ErrInvalidInput (or ErrInvalidKey for
// a sender that is no key), and nothing is written.
func testPutMessageAggregatedBadInput(e *env) {
	annP := e.part("ann")
	a := e.aggregated("bob", nil)
	if err := e.putAggregated(a, "", nil); err != nil {
		e.t.Fatalf("PutMessage of the first: %v", err)
	}
	other := e.message(e.part("bob"), "likes", time.Hour)
	before := e.snapshot()
	for _, c := range []struct {
		name string
		edit func(rec *driver.Record, mk *driver.Mark)
		want error
	}{
		{"count below its members", func(rec *driver.Record, _ *driver.Mark) { rec.Message.Count = 1 }, driver.ErrInvalidInput},
		{"no thread", func(rec *driver.Record, _ *driver.Mark) { rec.Message.Thread = "" }, driver.ErrInvalidInput},
		{"a sender twice", func(rec *driver.Record, _ *driver.Mark) { rec.Message.Senders = []string{"bob", "bob"} }, driver.ErrInvalidInput},
		{"a sender no key", func(rec *driver.Record, _ *driver.Mark) { rec.Message.Senders = []string{"a#b"} }, driver.ErrInvalidKey},
		{"itself a member", func(rec *driver.Record, _ *driver.Mark) { rec.Message.Members[0] = rec.Message.ID }, driver.ErrInvalidInput},
		{"follows no ID", func(rec *driver.Record, _ *driver.Mark) { rec.Follows = "x" }, driver.ErrInvalidInput},
		{"too many senders", func(rec *driver.Record, _ *driver.Mark) {
			for len(rec.Message.Senders) <= driver.MaxAggregateSenders {
				rec.Message.Senders = append(rec.Message.Senders, e.newID()[:8])
			}
		}, driver.ErrInvalidInput},
		{"a deletion in another partition", func(_ *driver.Record, mk *driver.Mark) { mk.Key = other.Key() }, driver.ErrInvalidInput},
		{"a deletion of another thread", func(_ *driver.Record, mk *driver.Mark) { mk.Thread = "t" }, driver.ErrInvalidInput},
		{"no deletion", func(_ *driver.Record, mk *driver.Mark) { mk.Delete, mk.To = false, driver.State{ReadAt: e.clock.Now()} }, driver.ErrInvalidInput},
		{"a receipt", func(_ *driver.Record, mk *driver.Mark) { mk.Receipt, mk.Shared = true, e.pub() }, driver.ErrInvalidInput},
	} {
		rec := e.aggregated("carol", &a)
		mk := e.takeIn(a)
		c.edit(&rec, &mk)
		if err := e.putAggregated(rec, "", &mk); !errors.Is(err, c.want) {
			e.t.Errorf("%s: %v; want %v", c.name, err, c.want)
		}
	}
	// Deltas without the thread's change of Latest, which the put's
	// condition stands on.
	noLatest := e.aggregated("carol", &a)
	mk := e.takeIn(a)
	if err := e.store.PutMessage(e.ctx, noLatest, driver.MarkDeltas(mk), mk); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("deltas without the thread's Latest: %v; want ErrInvalidInput", err)
	}
	// Two deletions, and an aggregated message in a shared partition.
	rec := e.aggregated("carol", &a)
	marks := []driver.Mark{mk, mk}
	if err := e.store.PutMessage(e.ctx, rec, driver.PutDeltas(rec), marks...); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("two deletions: %v; want ErrInvalidInput", err)
	}
	shared := e.message(e.pub(), "likes", time.Hour)
	shared.Message.Thread, shared.Message.Count = "k", 1
	if err := e.store.PutMessage(e.ctx, shared, driver.PutDeltas(shared)); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("an aggregated broadcast: %v; want ErrInvalidInput", err)
	}
	e.wantUnchanged("the refused puts", before)
	if len(e.records(annP)) != 1 {
		e.t.Errorf("ann's records: %d, want a alone", len(e.records(annP)))
	}
}

// testPutMessageAggregatedUnfenced: without a fence, an aggregated
// message's Above applies as any put's does, only if the partition's
// watermark is below its ID: one below it counts in no Above; its
// condition on its thread's Latest holds all the same.
func testPutMessageAggregatedUnfenced(e *env) {
	annP := e.part("ann")
	if err := e.store.Mark(e.ctx, []driver.Mark{{Key: driver.Key{Partition: annP}, Now: e.clock.Now(), Seen: driver.SeenAt(e.clock.Now().Add(time.Hour))}}, nil); err != nil {
		e.t.Fatalf("watermark of ann: %v", err)
	}
	a := e.aggregated("bob", nil)
	if err := e.store.PutMessage(e.ctx, a, driver.PutDeltas(a)); err != nil {
		e.t.Fatalf("PutMessage without a fence: %v", err)
	}
	if got := e.totalAbove(annP); got != 0 {
		e.t.Errorf("ann's Above after a put below her watermark: %d, want 0", got)
	}
	e.checkInvariant()
	// One of no category, below the watermark too, that follows no
	// message (a came first): its Latest's condition holds whatever the
	// watermark's does.
	before := e.snapshot()
	b := e.aggregated("carol", nil)
	b.Message.Category = ""
	if err := e.store.PutMessage(e.ctx, b, driver.PutDeltas(b)); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("PutMessage without a fence, following no message after a: %v; want ErrStateChanged", err)
	}
	e.wantUnchanged("the refused put", before)
}

package storetest

import (
	"errors"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// stateTests are the Store contract subtests of marks other than a read:
// archive, delete, and the seen watermark.
func stateTests() []suiteTest {
	return []suiteTest{
		{"MarkStatesDirect", testMarkStatesDirect},
		{"MarkStatesReceipt", testMarkStatesReceipt},
		{"MarkSnooze", testMarkSnooze},
		{"MarkInteracted", testMarkInteracted},
		{"PendingEntries", testPendingEntries},
		{"MarkWatermark", testMarkWatermark},
		{"MarkInvalid", testMarkInvalid},
		{"QueryAfterAndArchived", testQueryAfterAndArchived},
		{"ClaimRetire", testClaimRetire},
	}
}

// changeDeltas returns the counter changes that turn p's counters for
// records before into those for after (recount's rules).
func changeDeltas(p driver.Partition, before, after []driver.Record) []driver.Counter {
	b, a := recount(p, before), recount(p, after)
	var out []driver.Counter
	for sk := range union(a, b) {
		d, err := driver.ParseCounterSK(sk)
		if err != nil {
			panic(err)
		}
		d.Partition = p
		d.Published, d.Read, d.Archived, d.ArchivedRead, d.Hidden = a[sk].Published-b[sk].Published, a[sk].Read-b[sk].Read, a[sk].Archived-b[sk].Archived,
			a[sk].ArchivedRead-b[sk].ArchivedRead, a[sk].Hidden-b[sk].Hidden
		if !d.IsZero() {
			out = append(out, d)
		}
	}
	return out
}

// union returns the keys of a and b.
func union(a, b map[string]tally) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// mark applies one state mark of rec (a direct message, or a receipt that
// may be missing: before nil), with the deltas it implies, and returns the
// record as it should now stand (nil if removed).
func (e *env) mark(mk driver.Mark, before, after *driver.Record) error {
	e.t.Helper()
	var b, a []driver.Record
	if before != nil {
		b = append(b, *before)
	}
	if after != nil {
		a = append(a, *after)
	}
	return e.markFenced(mk.Key.Partition, []driver.Mark{mk}, changeDeltas(mk.Key.Partition, b, a))
}

// withState returns rec with the marks st.
func withState(rec driver.Record, st driver.State) driver.Record {
	rec.Message.ReadAt, rec.Message.ArchivedAt, rec.DeletedAt = st.ReadAt, st.ArchivedAt, st.DeletedAt
	return rec
}

// stateOf returns rec's marks.
func stateOf(rec driver.Record) driver.State {
	return driver.State{ReadAt: rec.Message.ReadAt, ArchivedAt: rec.Message.ArchivedAt, DeletedAt: rec.DeletedAt}
}

// testMarkStatesDirect: a direct mark moves a message between any marks
// (archived, read and archived, back) conditional on the marks it finds,
// and Delete removes it with its entry; counters and ledger follow.
func testMarkStatesDirect(e *env) {
	annP := e.part("ann")
	d := e.message(annP, "billing", time.Hour)
	e.put(d)
	other := e.message(annP, "", time.Hour)
	e.put(other)
	t1 := e.clock.Now().Add(time.Minute)
	step := func(what string, from, to driver.State) {
		e.t.Helper()
		mk := directMark(d, time.Time{}, e.clock.Now())
		mk.From, mk.To = from, to
		after := withState(d, to)
		if err := e.mark(mk, &d, &after); err != nil {
			e.t.Fatalf("Mark(%s): %v", what, err)
		}
		d = after
		e.wantRecords("records after "+what, sorted(d, other), e.get(d.Key(), other.Key()))
		e.checkInvariant()
	}
	step("archive", driver.State{}, driver.State{ArchivedAt: t1})
	e.wantCounters(annP, driver.Counter{Partition: annP, Published: 2, Archived: 1}, driver.Counter{Partition: annP, Category: "billing", Published: 1, Archived: 1})
	step("read while archived", driver.State{ArchivedAt: t1}, driver.State{ReadAt: t1, ArchivedAt: t1})
	e.wantCounters(annP, driver.Counter{Partition: annP, Published: 2, Read: 1, Archived: 1, ArchivedRead: 1},
		driver.Counter{Partition: annP, Category: "billing", Published: 1, Read: 1, Archived: 1, ArchivedRead: 1})

	// A mark whose From is not what is stored changes nothing.
	before := e.snapshot()
	for name, from := range map[string]driver.State{
		"unread":       {ArchivedAt: t1},
		"not archived": {ReadAt: t1},
		"no marks":     {},
	} {
		mk := directMark(d, time.Time{}, e.clock.Now())
		mk.From, mk.To = from, driver.State{}
		if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, nil); !errors.Is(err, driver.ErrStateChanged) {
			e.t.Errorf("Mark from %s marks: %v, want ErrStateChanged", name, err)
		}
		e.wantUnchanged("a mark from "+name+" marks", before)
	}

	step("unarchive", driver.State{ReadAt: t1, ArchivedAt: t1}, driver.State{ReadAt: t1})
	e.wantCounters(annP, driver.Counter{Partition: annP, Published: 2, Read: 1}, driver.Counter{Partition: annP, Category: "billing", Published: 1, Read: 1})

	// Delete removes the message and its entry.
	mk := directMark(d, time.Time{}, e.clock.Now())
	mk.From, mk.Delete = driver.State{ReadAt: t1}, true
	if err := e.mark(mk, &d, nil); err != nil {
		e.t.Fatalf("Mark(delete): %v", err)
	}
	e.wantRecords("records after delete", []driver.Record{other}, e.get(d.Key(), other.Key()))
	e.wantCounters(annP, driver.Counter{Partition: annP, Published: 1}, driver.Counter{Partition: annP, Category: "billing"})
	if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, nil); !errors.Is(err, driver.ErrNotFound) {
		e.t.Errorf("Mark(delete) again: %v, want ErrNotFound", err)
	}
	e.checkInvariant()
}

// testMarkStatesReceipt: a receipt mark creates a receipt with any marks
// (archived unread, say), changes them conditional on the marks it finds,
// hides the broadcast (DeletedAt), and removes the receipt with its entry
// when To is zero.
func testMarkStatesReceipt(e *env) {
	annP, pubP := e.part("ann"), e.pub()
	b := e.message(pubP, "news", time.Hour)
	e.put(b)
	g := e.message(groupOf(e.scope, "admins"), "ops", time.Hour)
	e.put(g)
	t1 := e.clock.Now().Add(time.Minute)
	for _, bc := range []driver.Record{b, g} {
		var cur *driver.Record
		step := func(what string, to driver.State) {
			e.t.Helper()
			mk := receiptMark(annP, bc, time.Time{}, e.clock.Now())
			mk.To = to
			var after *driver.Record
			if cur != nil {
				mk.From = stateOf(*cur)
			}
			if !to.IsZero() {
				r := withState(receipt(annP, bc, time.Time{}), to)
				after = &r
			}
			if err := e.mark(mk, cur, after); err != nil {
				e.t.Fatalf("Mark(%s of %s): %v", what, bc.Partition.PK(), err)
			}
			cur = after
			want := []driver.Record{bc}
			if cur != nil {
				want = append(want, *cur)
			}
			sortRecords(want)
			e.wantRecords("records after "+what, want, e.get(bc.Key(), driver.Key{Partition: annP, ID: bc.Message.ID}))
			e.checkInvariant()
		}
		step("archive unread", driver.State{ArchivedAt: t1})
		step("read while archived", driver.State{ReadAt: t1, ArchivedAt: t1})

		// A receipt mark that finds other marks, or a receipt where it
		// expects none, changes nothing.
		before := e.snapshot()
		stale := receiptMark(annP, bc, time.Time{}, e.clock.Now())
		stale.From, stale.To = driver.State{ArchivedAt: t1}, driver.State{}
		fresh := receiptMark(annP, bc, t1, e.clock.Now())
		for name, mk := range map[string]driver.Mark{"stale From": stale, "From zero on a receipt": fresh} {
			if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, nil); !errors.Is(err, driver.ErrStateChanged) {
				e.t.Errorf("Mark(%s): %v, want ErrStateChanged", name, err)
			}
			e.wantUnchanged(name, before)
		}

		step("delete for the user", driver.State{DeletedAt: t1})
		step("drop every mark", driver.State{})
		step("archive again", driver.State{ArchivedAt: t1})
		step("unarchive, unread", driver.State{})
	}
	e.wantCounters(annP, driver.Counter{Partition: annP}, driver.Counter{Partition: annP, Category: "news"}, driver.Counter{Partition: annP, Category: "ops"},
		driver.Counter{Partition: annP, Group: "admins"}, driver.Counter{Partition: annP, Category: "ops", Group: "admins"})
}

// testMarkWatermark: a watermark mark raises a user partition's seen
// watermark, which Stats returns, only if it is below; other partitions
// keep theirs.
func testMarkWatermark(e *env) {
	annP, bobP := e.part("ann"), e.part("bob")
	seen := func(p driver.Partition) string { return e.stats(p, e.clock.Now()).Seen }
	if w := seen(annP); w != "" {
		e.t.Fatalf("Stats(ann).Seen = %q before any mark", w)
	}
	w1, w2 := inbox.IDAt(e.clock.Now()), inbox.IDAt(e.clock.Now().Add(time.Second))
	raise := func(p driver.Partition, w string) error {
		return e.store.Mark(e.ctx, []driver.Mark{{Key: driver.Key{Partition: p}, Now: e.clock.Now(), Seen: w}}, nil)
	}
	if err := raise(annP, w1); err != nil {
		e.t.Fatalf("Mark(watermark %s): %v", w1, err)
	}
	for _, w := range []string{w1, inbox.IDAt(e.clock.Now().Add(-time.Second))} {
		if err := raise(annP, w); !errors.Is(err, driver.ErrStateChanged) {
			e.t.Errorf("Mark(watermark %s, not above %s): %v, want ErrStateChanged", w, w1, err)
		}
	}
	if w := seen(annP); w != w1 {
		e.t.Errorf("Stats(ann).Seen = %q, want %q", w, w1)
	}
	if err := raise(annP, w2); err != nil {
		e.t.Fatalf("Mark(watermark %s): %v", w2, err)
	}
	if w := seen(annP); w != w2 {
		e.t.Errorf("Stats(ann).Seen = %q, want %q", w, w2)
	}
	if w := seen(bobP); w != "" {
		e.t.Errorf("Stats(bob).Seen = %q: ann's mark moved it", w)
	}
	if f := e.stats(annP, e.clock.Now()).Fence; f != w2 {
		e.t.Errorf("Stats(ann).Fence = %q, want the watermark %q", f, w2)
	}
	for _, c := range e.counters(annP) {
		if !c.IsZero() {
			e.t.Errorf("a watermark mark changed counter %s: %+v", c.SK(), c)
		}
	}
	// A fence holds the others to the watermark: another fails, as a
	// *driver.SeenError naming it, and writes nothing.
	fence := func(w string) error {
		return e.store.Mark(e.ctx, []driver.Mark{{Key: driver.Key{Partition: annP}, Now: e.clock.Now(), Seen: w, Fence: true}}, []driver.Counter{{Partition: annP, Above: 1}})
	}
	var moved *driver.SeenError
	if err := fence(w1); !errors.As(err, &moved) || moved.Seen != w2 || !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("Mark(fence %s) of a partition whose watermark is %s: %v, want a *driver.SeenError naming it", w1, w2, err)
	}
	if err := e.store.Mark(e.ctx, nil, []driver.Counter{{Partition: annP, Above: 1}}); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("Mark of an above change without a fence: %v, want ErrInvalidInput", err)
	}
	for _, c := range e.counters(annP) {
		if c.Above != 0 {
			e.t.Errorf("a refused fence changed Above: %+v", c)
		}
	}
	if err := fence(w2); err != nil {
		e.t.Errorf("Mark(fence %s) of a partition whose watermark it is: %v", w2, err)
	}
	if got := e.counters(annP); len(got) == 0 || got[0].Above != 1 {
		e.t.Errorf("after the fenced above change: counters %+v, want Above 1", got)
	}
	// Put it back, for the invariant: no record above the watermark.
	if err := fence(w2); err != nil {
		e.t.Errorf("Mark(fence %s): %v", w2, err)
	}
	if err := e.store.Mark(e.ctx, []driver.Mark{{Key: driver.Key{Partition: annP}, Now: e.clock.Now(), Seen: w2, Fence: true}}, []driver.Counter{{Partition: annP, Above: -2}}); err != nil {
		e.t.Errorf("Mark(fence %s): %v", w2, err)
	}
}

// testMarkInvalid: marks that cannot be (a direct message hidden rather
// than deleted, a receipt deleted with Delete, deleted and read at once,
// a watermark with other changes, a mark in a shared partition) are
// ErrInvalidInput and change nothing.
func testMarkInvalid(e *env) {
	annP, pubP := e.part("ann"), e.pub()
	d := e.message(annP, "", time.Hour)
	e.put(d)
	b := e.message(pubP, "", time.Hour)
	e.put(b)
	now := e.clock.Now()
	hideDirect := directMark(d, time.Time{}, now)
	hideDirect.To = driver.State{DeletedAt: now}
	deleteReceipt := receiptMark(annP, b, now, now)
	deleteReceipt.Delete = true
	readAndHidden := receiptMark(annP, b, now, now)
	readAndHidden.To.DeletedAt = now
	watermarkWithEntry := driver.Mark{Key: driver.Key{Partition: annP}, Seen: inbox.IDAt(now), Entry: d.Entry}
	watermarkWithID := driver.Mark{Key: d.Key(), Seen: inbox.IDAt(now)}
	shared := directMark(b, now, now)
	noEntry := directMark(d, now, now)
	noEntry.Entry = ""
	before := e.snapshot()
	for name, mk := range map[string]driver.Mark{
		"direct message hidden":       hideDirect,
		"receipt deleted with Delete": deleteReceipt,
		"receipt read and deleted":    readAndHidden,
		"watermark with an entry":     watermarkWithEntry,
		"watermark of a message":      watermarkWithID,
		"mark in a shared partition":  shared,
		"mark without entry":          noEntry,
	} {
		if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, nil); !errors.Is(err, driver.ErrInvalidInput) {
			e.t.Errorf("Mark(%s): %v, want ErrInvalidInput", name, err)
		}
		e.wantUnchanged(name, before)
	}
}

// testQueryAfterAndArchived: Query's After bound and archive filters, over
// a partition with archived messages and receipts, page by page.
func testQueryAfterAndArchived(e *env) {
	annP := e.part("ann")
	var all []driver.Record
	for i := range 12 {
		if i%4 == 3 {
			b := e.message(e.pub(), "news", time.Hour)
			e.put(b)
			r := receipt(annP, b, time.Time{})
			mk := receiptMark(annP, b, time.Time{}, e.clock.Now())
			mk.To = driver.State{ArchivedAt: e.clock.Now()}
			r = withState(r, mk.To)
			if err := e.mark(mk, nil, &r); err != nil {
				e.t.Fatalf("Mark(archive receipt): %v", err)
			}
			all = append([]driver.Record{r}, all...)
			continue
		}
		d := e.message(annP, "", time.Hour)
		e.put(d)
		if i%3 == 0 {
			mk := directMark(d, time.Time{}, e.clock.Now())
			mk.To = driver.State{ArchivedAt: e.clock.Now()}
			after := withState(d, mk.To)
			if err := e.mark(mk, &d, &after); err != nil {
				e.t.Fatalf("Mark(archive): %v", err)
			}
			d = after
		}
		all = append([]driver.Record{d}, all...)
	}
	for _, f := range []driver.ArchiveFilter{driver.AnyArchived, driver.NotArchived, driver.OnlyArchived} {
		for _, after := range []string{"", all[8].Message.ID, all[3].Message.ID, all[0].Message.ID} {
			for _, limit := range []int{1, 3, 100} {
				e.pageAll(driver.Query{Partition: annP, After: after, Archived: f, Limit: limit}, all)
			}
		}
	}
}

// testMarkSnooze: a mark that snoozes a direct message or a receipt writes
// its snooze entry (the record as its ledger entry holds it, with the
// time) and notes it on the record, a mark that keeps the snooze writes
// it again with the new marks, one that moves or ends it deletes the old
// entry; the snooze is part of the marks a mark's condition checks (to
// the second), and so is the entry the record notes; the removal of a
// snoozed record takes its entry; a snooze changes no tally of the
// records, and tallies its entries (Counter.Snoozed).
func testMarkSnooze(e *env) {
	annP := e.part("ann")
	d := e.message(annP, "billing", time.Hour)
	e.put(d)
	b := e.message(e.pub(), "news", time.Hour)
	e.put(b)
	now := e.clock.Now()
	t1, t2 := now.Add(10*time.Minute).Truncate(time.Second), now.Add(20*time.Minute).Truncate(time.Second)
	entries := func(what string, want ...driver.Record) {
		e.t.Helper()
		got := e.timedEntries(annP, false)
		opts := []cmp.Option{cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }), cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Entry" }, cmp.Ignore())}
		if diff := cmp.Diff(want, got, opts...); diff != "" && !(len(want) == 0 && len(got) == 0) {
			e.t.Errorf("%s: snooze entries (-want +got):\n%s", what, diff)
		}
	}
	entry := func(rec driver.Record, receipt bool, st driver.State) driver.Record {
		m := rec.Message
		r := driver.Record{Partition: annP, Receipt: receipt, Message: driver.Message{ID: m.ID, Category: m.Category, ReadAt: st.ReadAt, ArchivedAt: st.ArchivedAt, ExpiresAt: m.ExpiresAt, SnoozedUntil: st.SnoozedUntil}}
		return r
	}
	mark := func(_ string, mk driver.Mark) error {
		e.t.Helper()
		return e.markFenced(mk.Key.Partition, []driver.Mark{mk}, driver.MarkDeltas(mk))
	}
	// timedOf returns the timed entry the record at k notes, as stored.
	timedOf := func(k driver.Key) string {
		if got := e.get(k); len(got) == 1 {
			return got[0].Timed
		}
		return ""
	}
	direct := func(from, to driver.State) driver.Mark {
		mk := directMark(d, time.Time{}, now)
		mk.From, mk.To, mk.Timed = from, to, timedOf(d.Key())
		return mk
	}
	receiptOf := func(from, to driver.State) driver.Mark {
		mk := receiptMark(annP, b, time.Time{}, now)
		mk.From, mk.To, mk.Timed = from, to, timedOf(mk.Key)
		return mk
	}
	// counters returns ann's counters that tally something of the
	// records (a mark may create one at zero), their timed entries'
	// tallies and Above left out (the invariant checks them).
	counters := func() []driver.Counter {
		var out []driver.Counter
		for _, c := range e.stats(annP, now).Counters {
			if c.Snoozed, c.Above = (driver.Tallies{}), 0; !c.IsZero() {
				out = append(out, c)
			}
		}
		return out
	}
	before := counters()

	s1, s2 := driver.State{SnoozedUntil: t1}, driver.State{SnoozedUntil: t2}
	if err := mark("snooze", direct(driver.State{}, s1)); err != nil {
		e.t.Fatalf("Mark(snooze a direct message): %v", err)
	}
	if err := mark("snooze", receiptOf(driver.State{}, s1)); err != nil {
		e.t.Fatalf("Mark(snooze a broadcast): %v", err)
	}
	entries("snoozed", entry(d, false, s1), entry(b, true, s1))
	if got := e.get(d.Key())[0].Message.SnoozedUntil; !got.Equal(t1) {
		e.t.Errorf("the snoozed message's SnoozedUntil = %v, want %v", got, t1)
	}
	if diff := cmp.Diff(before, counters()); diff != "" {
		e.t.Errorf("a snooze changed the records' tallies (-before +after):\n%s", diff)
	}
	e.wantSnoozedTallies(annP, counter(annP, "", 2, 0), counter(annP, "billing", 1, 0), counter(annP, "news", 1, 0))
	// A mark that names another timed entry than the one the record notes
	// fails: the entry was folded, or written again, since it was read.
	stale := direct(s1, driver.State{ReadAt: now, SnoozedUntil: t1})
	stale.Timed = ""
	if err := mark("stale entry", stale); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("Mark naming no timed entry of a message that notes one: %v, want ErrStateChanged", err)
	}
	// The condition holds the snooze to the second: a mark made from no
	// snooze, or another time, fails.
	for _, from := range []driver.State{{}, s2} {
		if err := mark("stale", direct(from, driver.State{ReadAt: now})); !errors.Is(err, driver.ErrStateChanged) {
			e.t.Errorf("Mark from snooze %v of a message snoozed until %v: %v, want ErrStateChanged", from.SnoozedUntil, t1, err)
		}
	}
	// A read while snoozed keeps the snooze: the entry is written again.
	r1 := driver.State{ReadAt: now.Truncate(time.Second), SnoozedUntil: t1}
	if err := mark("read", direct(s1, r1)); err != nil {
		e.t.Fatalf("Mark(read while snoozed): %v", err)
	}
	entries("read while snoozed", entry(d, false, r1), entry(b, true, s1))
	// Moved, then ended: the old entries go.
	if err := mark("move", direct(r1, driver.State{ReadAt: r1.ReadAt, SnoozedUntil: t2})); err != nil {
		e.t.Fatalf("Mark(move the snooze): %v", err)
	}
	if err := mark("end", receiptOf(s1, driver.State{})); err != nil {
		e.t.Fatalf("Mark(unsnooze the broadcast): %v", err)
	}
	entries("moved and ended", entry(d, false, driver.State{ReadAt: r1.ReadAt, SnoozedUntil: t2}))
	if got := e.get(driver.Key{Partition: annP, ID: b.Message.ID}); len(got) != 0 {
		e.t.Errorf("a receipt left with no mark: %v, want it removed", got)
	}
	// The removal of the snoozed message takes its entry.
	rec := e.get(d.Key())[0]
	if ok, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: rec, Deltas: driver.RemovalDeltasOf(rec), Delete: true, Now: now}); err != nil || !ok {
		e.t.Fatalf("ApplyRemoval of the snoozed message: %v, %v", ok, err)
	}
	entries("after its removal")
	e.wantSnoozedTallies(annP)
	// A snooze that is not a whole second is refused.
	if err := mark("fraction", receiptOf(driver.State{}, driver.State{SnoozedUntil: t1.Add(time.Millisecond)})); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("Mark(snooze to a fraction of a second): %v, want ErrInvalidInput", err)
	}
	entries("after a refused snooze")
}

// testMarkInteracted: the interaction is a mark a Mark's condition checks,
// on a direct message and on a receipt, stored with the record and
// counted nowhere.
func testMarkInteracted(e *env) {
	annP := e.part("ann")
	d := e.message(annP, "billing", time.Hour)
	e.put(d)
	b := e.message(e.pub(), "news", time.Hour)
	e.put(b)
	now := e.clock.Now().Truncate(time.Second)
	done := driver.State{ReadAt: now, InteractedAt: now}
	for _, mk := range []driver.Mark{directMark(d, time.Time{}, now), receiptMark(annP, b, time.Time{}, now)} {
		mk.To = done
		if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, driver.MarkDeltas(mk)); err != nil {
			e.t.Fatalf("Mark(interacted %s): %v", mk.Key.ID, err)
		}
		got := e.get(mk.Key)
		if len(got) != 1 || !got[0].Message.InteractedAt.Equal(now) {
			e.t.Errorf("after the mark, %s: %+v; want InteractedAt %v", mk.Key.ID, got, now)
		}
		// Read but not interacted is another state: the condition fails.
		mk.From, mk.To = driver.State{ReadAt: now}, driver.State{}
		if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, driver.MarkDeltas(mk)); !errors.Is(err, driver.ErrStateChanged) {
			e.t.Errorf("Mark from read alone of %s, which is interacted with: %v, want ErrStateChanged", mk.Key.ID, err)
		}
	}
	e.wantCounters(annP, counter(annP, "", 1, 2), counter(annP, "billing", 1, 1), counter(annP, "news", 0, 1))
}

// testPendingEntries: PutMessage of a scheduled record writes its pending
// entry (the record as its ledger entry holds it, with DeliverAt), which
// Stats returns; a Mark that deletes a scheduled direct message, and the
// removal of a scheduled broadcast, take it; a Mark with the due time
// that keeps one before it is due gives it the marks.
func testPendingEntries(e *env) {
	annP := e.part("ann")
	now := e.clock.Now().Truncate(time.Second)
	at := now.Add(time.Hour)
	scheduled := func(p driver.Partition) driver.Record {
		r := e.message(p, "billing", 2*time.Hour)
		r.Message.DeliverAt, r.Message.DeliveredAt = at, at
		r.Message.ExpiresAt = at.Add(time.Hour)
		r.Entry = driver.LedgerSK(r.Message.ExpiresAt, r.Message.ID, "storetest")
		r.Timed = driver.TimedKey(at, r.Entry, true)
		return r
	}
	d, b := scheduled(annP), scheduled(e.pub())
	for _, r := range []*driver.Record{&d, &b} {
		if err := e.store.PutMessage(e.ctx, *r, driver.PutDeltas(*r)); err != nil {
			e.t.Fatalf("PutMessage(%s): %v", r.Message.ID, err)
		}
		*r = e.get(r.Key())[0]
		if want := driver.TimedKey(at, r.Entry, true); r.Timed != want {
			e.t.Errorf("the scheduled record %s notes timed entry %q, want %q", r.Message.ID, r.Timed, want)
		}
	}
	pending := func(p driver.Partition) []driver.Record {
		e.t.Helper()
		return e.timedEntries(p, true)
	}
	for _, r := range []driver.Record{d, b} {
		got := pending(r.Partition)
		if len(got) != 1 || got[0].Message.ID != r.Message.ID || !got[0].Message.DeliverAt.Equal(at) || got[0].Message.Category != "billing" || !got[0].Message.ExpiresAt.Equal(r.Message.ExpiresAt) || got[0].Receipt {
			e.t.Errorf("pending entries of %s: %+v; want the scheduled record's, due at %v", r.Partition.PK(), got, at)
		}
	}
	mk := directMark(d, time.Time{}, now)
	mk.Delete, mk.To, mk.DeliverAt = true, driver.State{}, at
	if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, driver.MarkDeltas(mk)); err != nil {
		e.t.Fatalf("Mark(delete the scheduled message): %v", err)
	}
	if got := pending(annP); len(got) != 0 {
		e.t.Errorf("after the scheduled message's delete: pending %+v, want none", got)
	}
	if ok, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: b, Deltas: driver.RemovalDeltasOf(b), Delete: true, Now: now}); err != nil || !ok {
		e.t.Fatalf("ApplyRemoval of the scheduled broadcast: %v, %v", ok, err)
	}
	if got := pending(e.pub()); len(got) != 0 {
		e.t.Errorf("after the scheduled broadcast's removal: pending %+v, want none", got)
	}
	// A mark that keeps a scheduled direct message before it is due (the
	// Inbox's rewrite of one another program marked) gives its pending
	// entry the marks; one with another due time finds no such message.
	d2 := scheduled(annP)
	e.put(d2)
	keep := directMark(d2, now, now)
	keep.DeliverAt = at.Add(time.Second)
	if err := e.markFenced(keep.Key.Partition, []driver.Mark{keep}, driver.MarkDeltas(keep)); !errors.Is(err, driver.ErrNotFound) {
		e.t.Errorf("Mark with another due time than the message's: %v, want ErrNotFound", err)
	}
	keep.DeliverAt = at
	if err := e.markFenced(keep.Key.Partition, []driver.Mark{keep}, driver.MarkDeltas(keep)); err != nil {
		e.t.Fatalf("Mark(read the scheduled message, kept): %v", err)
	}
	if got := pending(annP); len(got) != 1 || got[0].Message.ID != d2.Message.ID || !got[0].Message.IsRead() || !got[0].Message.DeliverAt.Equal(at) {
		e.t.Errorf("after the mark: pending %+v, want d2's, read, due at %v", got, at)
	}
	bad := receiptMark(annP, b, now, now)
	bad.DeliverAt = at
	if err := e.markFenced(bad.Key.Partition, []driver.Mark{bad}, nil); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("Mark of a receipt with a due time: %v, want ErrInvalidInput", err)
	}
}

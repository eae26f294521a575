package storetest

import (
	"errors"
	"maps"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"
	"github.com/stak/inbox/driver"
)

// positionTests are the Store subtests of read positions
// (driver.Position, driver.Counter.Covered, driver.Mark.Cover).
func positionTests() []suiteTest {
	return []suiteTest{
		{"ReadPosition", testReadPosition},
		{"ReadPositionBadInput", testReadPositionBadInput},
		{"ReadPositionDone", testReadPositionDone},
		{"ReadPositionUncoveredMark", testReadPositionUncoveredMark},
		{"ReadPositionGroup", testReadPositionGroup},
	}
}

// idAbove returns the ID just above id, a ULID: the exclusive bound of a
// position that covers id.
func idAbove(id string) string {
	u := ulid.MustParseStrict(id)
	for i := len(u) - 1; i >= 0; i-- {
		if u[i]++; u[i] != 0 {
			break
		}
	}
	return u.String()
}

// needPositions skips the test if the store keeps no read positions: it
// refuses a cover mark with ErrUnsupported. The probe's version is stale, so a store that keeps them writes
// nothing either.
func (e *env) needPositions() {
	e.t.Helper()
	p := e.part("positions-probe")
	to := driver.Position{}.Raised(idAbove(e.newID()), e.clock.Now())
	if err := e.coverAt(p, "probe", driver.Position{}, to, -1); errors.Is(err, driver.ErrUnsupported) {
		e.t.Skip("the store keeps no read positions")
	}
}

// cover moves the read position of thread t of user partition p from
// from to to, with deltas, at p's counter version as it stands.
func (e *env) cover(p driver.Partition, t string, from, to driver.Position, deltas ...driver.Counter) error {
	return e.coverAt(p, t, from, to, e.stats(p, e.clock.Now()).Version, deltas...)
}

// coverAt is cover at counter version version.
func (e *env) coverAt(p driver.Partition, t string, from, to driver.Position, version int64, deltas ...driver.Counter) error {
	mk := driver.Mark{Key: driver.Key{Partition: p}, Now: e.clock.Now(), Versioned: true, Version: version, Cover: &driver.CoverChange{Thread: t, From: from, To: to}}
	return e.store.Mark(e.ctx, []driver.Mark{mk}, deltas)
}

// coveredCounter is the covered counter of thread t of category cat of
// p with unread and above, and, for the counter of all categories, pos.
func coveredCounter(p driver.Partition, cat, t string, unread, above int64, pos driver.Position) driver.Counter {
	return driver.Counter{Partition: p, Category: cat, Thread: t, Covered: true, Unread: unread, Above: above, Position: pos}
}

// wantCovered checks the covered counters of user partition p as Stats
// returns them: of its whole stats, and of its total read by key; exactly
// want, but for those at zero without a position.
func (e *env) wantCovered(what string, p driver.Partition, want ...driver.Counter) {
	e.t.Helper()
	w := map[string]driver.Counter{}
	for _, c := range want {
		w[c.SK()] = c
	}
	for _, q := range []driver.StatsQuery{{Partition: p, Now: e.clock.Now()}, {Partition: p, Keys: []driver.Counter{{}}}} {
		st, err := e.store.Stats(e.ctx, q)
		if err != nil {
			e.t.Fatalf("%s: Stats(%s): %v", what, p.PK(), err)
		}
		got := map[string]driver.Counter{}
		for _, c := range st.Counters {
			if c.Covered && (!c.IsZero() || !c.Position.IsZero()) {
				got[c.SK()] = c
			}
		}
		if !maps.EqualFunc(w, got, func(a, b driver.Counter) bool {
			return a.Unread == b.Unread && a.Above == b.Above && a.Position.Equal(b.Position)
		}) {
			e.t.Errorf("%s: covered counters of %s (by key %v) (-want +got):\n%s", what, p.PK(), len(q.Keys) > 0, cmp.Diff(w, got))
		}
	}
}

// testReadPosition: a cover mark moves a thread's read position under
// its conditions (the position as read, the counter version) and adds
// its deltas; every later write of a record of the thread adds its
// covered counters' change only if the position covers the record (a
// mark, a removal; a PutMessage of a record it would cover is refused);
// the position is dropped only when it covers nothing.
func testReadPosition(e *env) {
	e.needPositions()
	annP := e.part("ann")
	early := e.threadMessage(annP, "billing", "chat") // put below the position, later
	e.clock.Advance(time.Second)
	a, b := e.threadMessage(annP, "billing", "chat"), e.threadMessage(annP, "", "chat")
	e.put(a)
	e.put(b)
	e.clock.Advance(time.Second)
	pos := driver.Position{}.Raised(idAbove(b.Message.ID), e.clock.Now())

	version := e.stats(annP, e.clock.Now()).Version
	if err := e.coverAt(annP, "chat", pos, pos.Raised(idAbove(pos.Bound), e.clock.Now()), version); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("a cover mark from a position the thread does not have: %v, want ErrStateChanged", err)
	}
	if err := e.coverAt(annP, "chat", driver.Position{}, pos, version+1); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("a cover mark at another version: %v, want ErrStateChanged", err)
	}
	e.wantCovered("after refused cover marks", annP)
	if err := e.cover(annP, "chat", driver.Position{}, pos, coveredCounter(annP, "", "chat", 2, 2, driver.Position{}), coveredCounter(annP, "billing", "chat", 1, 1, driver.Position{})); err != nil {
		e.t.Fatalf("a cover mark of two messages: %v", err)
	}
	e.wantCovered("two messages covered", annP, coveredCounter(annP, "", "chat", 2, 2, pos), coveredCounter(annP, "billing", "chat", 1, 1, driver.Position{}))

	// A record above the position: its covered deltas are dropped.
	above := e.threadMessage(annP, "billing", "chat")
	e.put(above)
	e.wantCovered("a message above the position put", annP, coveredCounter(annP, "", "chat", 2, 2, pos), coveredCounter(annP, "billing", "chat", 1, 1, driver.Position{}))
	// One below it, put late: refused, nothing written.
	if err := e.store.PutMessage(e.ctx, early, driver.PutDeltas(early)); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("PutMessage of a message the position covers: %v, want ErrStateChanged", err)
	}
	if recs, err := e.store.GetRecords(e.ctx, []driver.Key{early.Key()}); err != nil || len(recs) != 0 {
		e.t.Errorf("after the refused PutMessage, GetRecords = %d records, %v; want none", len(recs), err)
	}

	// A mark of a covered record (its read made explicit) and of the one
	// above: only the first changes the covered counters.
	e.markThread(&a, driver.State{ReadAt: e.clock.Now()})
	e.markThread(&above, driver.State{ReadAt: e.clock.Now()})
	e.wantCovered("a covered message and one above read", annP, coveredCounter(annP, "", "chat", 1, 1, pos))

	// Dropping the position while it covers a record: refused, and with
	// deltas that leave its counters counting something too.
	if err := e.cover(annP, "chat", pos, driver.Position{}); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("dropping a position that covers a message: %v, want ErrStateChanged", err)
	}
	if err := e.cover(annP, "chat", pos, driver.Position{}, coveredCounter(annP, "", "chat", -1, 0, driver.Position{})); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("dropping a position with deltas that leave it covering a message: %v, want ErrStateChanged", err)
	}
	e.wantCovered("after refused drops", annP, coveredCounter(annP, "", "chat", 1, 1, pos))
	// The removal of the covered record counts it out of them.
	if _, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: b, Deltas: driver.RemovalDeltasOf(b), Delete: true, Now: e.clock.Now()}); err != nil {
		e.t.Fatalf("ApplyRemoval of the covered message: %v", err)
	}
	e.wantCovered("the covered message removed", annP, coveredCounter(annP, "", "chat", 0, 0, pos))
	if err := e.cover(annP, "chat", pos, driver.Position{}); err != nil {
		e.t.Fatalf("dropping a position that covers nothing: %v", err)
	}
	e.wantCovered("the position dropped", annP)
	// A drop whose deltas take out what it still covers (records gone,
	// their removals pending): applied, the counters gone with it.
	c := e.threadMessage(annP, "", "chat")
	e.put(c)
	pos2 := driver.Position{}.Raised(idAbove(c.Message.ID), e.clock.Now())
	if err := e.cover(annP, "chat", driver.Position{}, pos2, coveredCounter(annP, "", "chat", 1, 1, driver.Position{})); err != nil {
		e.t.Fatalf("a cover mark of one message: %v", err)
	}
	if err := e.cover(annP, "chat", pos2, driver.Position{}, coveredCounter(annP, "", "chat", -1, -1, driver.Position{})); err != nil {
		e.t.Errorf("dropping a position with deltas that take out what it covers: %v", err)
	}
	e.wantCovered("the position dropped with its last message", annP)
	e.markThread(&c, driver.State{ReadAt: e.clock.Now()})
	// Now the late record goes in.
	e.put(early)
	e.checkInvariant()
}

// testReadPositionBadInput: a cover mark that cannot be, or covered
// counters' changes without one, are ErrInvalidInput and change nothing.
func testReadPositionBadInput(e *env) {
	e.needPositions()
	annP := e.part("ann")
	m := e.threadMessage(annP, "", "chat")
	e.put(m)
	now := e.clock.Now()
	pos := driver.Position{}.Raised(idAbove(m.Message.ID), now)
	version := e.stats(annP, now).Version
	for _, c := range []struct {
		what   string
		marks  []driver.Mark
		deltas []driver.Counter
	}{
		{"a cover mark without a version", []driver.Mark{{Key: driver.Key{Partition: annP}, Now: now, Cover: &driver.CoverChange{Thread: "chat", To: pos}}}, nil},
		{"a cover mark of a shared partition", []driver.Mark{{Key: driver.Key{Partition: groupOf(e.scope, "crew")}, Now: now, Versioned: true, Version: version, Cover: &driver.CoverChange{Thread: "chat", To: pos}}}, nil},
		{"a cover mark of no thread", []driver.Mark{{Key: driver.Key{Partition: annP}, Now: now, Versioned: true, Version: version, Cover: &driver.CoverChange{To: pos}}}, nil},
		{"a cover mark with a bound that is no ID", []driver.Mark{{Key: driver.Key{Partition: annP}, Now: now, Versioned: true, Version: version, Cover: &driver.CoverChange{Thread: "chat", To: driver.Position{Bound: "x", At: now}}}}, nil},
		{"a cover mark that changes nothing", []driver.Mark{{Key: driver.Key{Partition: annP}, Now: now, Versioned: true, Version: version, Cover: &driver.CoverChange{Thread: "chat"}}}, nil},
		{"a covered counter's change without a cover mark", nil, []driver.Counter{coveredCounter(annP, "", "chat", 1, 0, driver.Position{})}},
		{"a covered counter's change of another thread", []driver.Mark{{Key: driver.Key{Partition: annP}, Now: now, Versioned: true, Version: version, Cover: &driver.CoverChange{Thread: "chat", To: pos}}}, []driver.Counter{coveredCounter(annP, "", "other", 1, 0, driver.Position{})}},
		{"a watermark mark read uncovered", []driver.Mark{{Key: driver.Key{Partition: annP}, Now: now, Seen: m.Message.ID, Uncovered: true}}, nil},
	} {
		if err := e.store.Mark(e.ctx, c.marks, c.deltas); !errors.Is(err, driver.ErrInvalidInput) {
			e.t.Errorf("Mark with %s: %v, want ErrInvalidInput", c.what, err)
		}
	}
	e.wantCovered("after the refused marks", annP)
	if got := e.stats(annP, now).Version; got != version {
		e.t.Errorf("after the refused marks, the version moved from %d to %d", version, got)
	}
}

// testReadPositionDone: a cover mark that changes only a position's Done
// (driver.Position.Done: set, moved, cleared) applies on the same
// conditions as a move: the position as read, Done included, and the
// counter version; Stats returns Done as written; a move or a drop from
// the position with another Done is refused, nothing written.
func testReadPositionDone(e *env) {
	e.needPositions()
	annP := e.part("ann")
	m := e.threadMessage(annP, "", "chat")
	e.put(m)
	e.clock.Advance(time.Second)
	pos := driver.Position{}.Raised(idAbove(m.Message.ID), e.clock.Now().Truncate(time.Second))
	if err := e.cover(annP, "chat", driver.Position{}, pos, coveredCounter(annP, "", "chat", 1, 1, driver.Position{})); err != nil {
		e.t.Fatalf("a cover mark of one message: %v", err)
	}
	e.markThread(&m, driver.State{ReadAt: pos.At})
	e.wantCovered("its message marked", annP, coveredCounter(annP, "", "chat", 0, 0, pos))
	e.clock.Advance(time.Second)
	done := pos.WrittenOut(e.clock.Now().Truncate(time.Second))
	if err := e.cover(annP, "chat", pos, done); err != nil {
		e.t.Fatalf("a cover mark that sets Done: %v", err)
	}
	e.wantCovered("done", annP, coveredCounter(annP, "", "chat", 0, 0, done))

	// From the position without its Done: refused, whatever the change.
	e.clock.Advance(time.Second)
	later := pos.WrittenOut(e.clock.Now().Truncate(time.Second))
	for _, c := range []struct {
		what string
		to   driver.Position
	}{
		{"sets Done", later},
		{"moves it", pos.Raised(idAbove(pos.Bound), e.clock.Now().Truncate(time.Second))},
		{"drops it", driver.Position{}},
	} {
		if err := e.cover(annP, "chat", pos, c.to); !errors.Is(err, driver.ErrStateChanged) {
			e.t.Errorf("a cover mark that %s from the position without its Done: %v, want ErrStateChanged", c.what, err)
		}
		if err := e.cover(annP, "chat", later, c.to); c.to != later && !errors.Is(err, driver.ErrStateChanged) {
			e.t.Errorf("a cover mark that %s from the position with another Done: %v, want ErrStateChanged", c.what, err)
		}
	}
	e.wantCovered("after the refused marks", annP, coveredCounter(annP, "", "chat", 0, 0, done))

	// Done moved, then cleared: each applies.
	if err := e.cover(annP, "chat", done, later); err != nil {
		e.t.Fatalf("a cover mark that moves Done: %v", err)
	}
	e.wantCovered("Done moved", annP, coveredCounter(annP, "", "chat", 0, 0, later))
	if err := e.cover(annP, "chat", later, pos); err != nil {
		e.t.Fatalf("a cover mark that clears Done: %v", err)
	}
	e.wantCovered("Done cleared", annP, coveredCounter(annP, "", "chat", 0, 0, pos))
	if err := e.cover(annP, "chat", pos, later); err != nil {
		e.t.Fatalf("a cover mark that sets Done again: %v", err)
	}
	// A move from a done position clears it (Raised); the drop of a done
	// position that covers nothing applies.
	e.clock.Advance(time.Second)
	n := e.threadMessage(annP, "", "chat")
	e.put(n)
	raised := later.Raised(idAbove(n.Message.ID), e.clock.Now().Truncate(time.Second))
	if err := e.cover(annP, "chat", later, raised, coveredCounter(annP, "", "chat", 1, 1, driver.Position{})); err != nil {
		e.t.Fatalf("a move of a done position: %v", err)
	}
	e.wantCovered("a done position moved", annP, coveredCounter(annP, "", "chat", 1, 1, raised))
	e.markThread(&n, driver.State{ReadAt: raised.At})
	done2 := raised.WrittenOut(e.clock.Now().Truncate(time.Second))
	if err := e.cover(annP, "chat", raised, done2); err != nil {
		e.t.Fatalf("a cover mark that sets Done: %v", err)
	}
	if err := e.cover(annP, "chat", done2, driver.Position{}); err != nil {
		e.t.Fatalf("the drop of a done position that covers nothing: %v", err)
	}
	e.wantCovered("dropped", annP)
	e.checkInvariant()
}

// testReadPositionUncoveredMark: a direct mark made by a writer that read
// its record as no position covers it (driver.Mark.Uncovered) is refused
// with a *driver.CoveredError, nothing written, once the thread's
// position covers the record (it moved between the writer's read and its
// write), whatever it writes: a read, an archive with a read. The same
// mark without Uncovered (a writer that saw the position and writes its
// read explicitly) applies, as does one with it on a record above the
// position, or in a page beside one the position covers.
func testReadPositionUncoveredMark(e *env) {
	e.needPositions()
	annP := e.part("ann")
	a, b := e.threadMessage(annP, "billing", "chat"), e.threadMessage(annP, "", "chat")
	e.put(a)
	e.put(b)
	e.clock.Advance(time.Second)
	above := e.threadMessage(annP, "", "chat")
	e.put(above)
	e.clock.Advance(time.Second)
	pos := driver.Position{}.Raised(idAbove(b.Message.ID), e.clock.Now())
	if err := e.cover(annP, "chat", driver.Position{}, pos, coveredCounter(annP, "", "chat", 2, 2, driver.Position{}), coveredCounter(annP, "billing", "chat", 1, 1, driver.Position{})); err != nil {
		e.t.Fatalf("a cover mark of two messages: %v", err)
	}
	e.clock.Advance(time.Second)
	now := e.clock.Now()
	uncovered := func(rec driver.Record, to driver.State) driver.Mark {
		mk := threadMark(rec, to, now)
		mk.Uncovered = true
		return mk
	}
	for _, c := range []struct {
		what  string
		marks []driver.Mark
	}{
		{"a read", []driver.Mark{uncovered(a, driver.State{ReadAt: now})}},
		{"an archive with a read", []driver.Mark{uncovered(b, driver.State{ReadAt: now, ArchivedAt: now})}},
		{"a page of a covered record and one above", []driver.Mark{uncovered(above, driver.State{ReadAt: now}), uncovered(b, driver.State{ReadAt: now})}},
	} {
		var deltas []driver.Counter
		for _, mk := range c.marks {
			deltas = append(deltas, driver.MarkDeltas(mk)...)
		}
		var covered *driver.CoveredError
		if err := e.markFenced(annP, c.marks, driver.MergeCounters(deltas)); !errors.As(err, &covered) || covered.Thread != "chat" || covered.ID != a.Message.ID && covered.ID != b.Message.ID {
			e.t.Errorf("Mark of %s, made uncovered, of a message the position covers: %v, want a CoveredError of it", c.what, err)
		}
	}
	if recs, err := e.store.GetRecords(e.ctx, []driver.Key{a.Key(), b.Key(), above.Key()}); err != nil || len(recs) != 3 {
		e.t.Fatalf("GetRecords = %d records, %v", len(recs), err)
	} else {
		for _, r := range recs {
			if !r.Message.ReadAt.IsZero() || !r.Message.ArchivedAt.IsZero() {
				e.t.Errorf("after the refused marks, %s is read at %v, archived %v; want it as put", r.Message.ID, r.Message.ReadAt, !r.Message.ArchivedAt.IsZero())
			}
		}
	}
	e.wantCovered("after the refused marks", annP, coveredCounter(annP, "", "chat", 2, 2, pos), coveredCounter(annP, "billing", "chat", 1, 1, driver.Position{}))

	// Above the position, made uncovered: applied. The covered record
	// marked by a writer that saw the position (its read explicit, at the
	// position's time): applied, out of the covered counters.
	mk := uncovered(above, driver.State{ReadAt: now})
	if err := e.markFenced(annP, []driver.Mark{mk}, driver.MarkDeltas(mk)); err != nil {
		e.t.Errorf("Mark, made uncovered, of a message above the position: %v", err)
	}
	e.markThread(&a, driver.State{ReadAt: pos.ReadAt(a.Message.ID)})
	e.wantCovered("a covered message read explicitly", annP, coveredCounter(annP, "", "chat", 1, 1, pos))
	e.checkInvariant()
}

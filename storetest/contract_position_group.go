package storetest

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stak/inbox/driver"
)

// groupCoveredCounter is the covered counter of thread t of group g's
// messages, of category cat, in user partition p, with unread and above,
// and, for the counter of all categories, pos.
func groupCoveredCounter(p driver.Partition, g, cat, t string, unread, above int64, pos driver.Position) driver.Counter {
	c := coveredCounter(p, cat, t, unread, above, pos)
	c.Group = g
	return c
}

// coverGroup moves the read position of user partition p in thread t of
// group g's messages from from to to, with deltas, at p's counter
// version as it stands.
func (e *env) coverGroup(p driver.Partition, g, t string, from, to driver.Position, deltas ...driver.Counter) error {
	mk := driver.Mark{Key: driver.Key{Partition: p}, Now: e.clock.Now(), Versioned: true, Version: e.stats(p, e.clock.Now()).Version, Cover: &driver.CoverChange{Thread: t, Group: g, From: from, To: to}}
	return e.store.Mark(e.ctx, []driver.Mark{mk}, deltas)
}

// wantGroupCovered checks the covered counters of group g's threads
// ("" for her direct threads) in user partition p as Stats returns them:
// among its whole stats, and with its counter of the group (her total)
// read by key; exactly want, but for those at zero without a position.
// Her total read by key returns none of a group's.
func (e *env) wantGroupCovered(what string, p driver.Partition, g string, want ...driver.Counter) {
	e.t.Helper()
	w := map[string]driver.Counter{}
	for _, c := range want {
		w[c.SK()] = c
	}
	queries := []driver.StatsQuery{{Partition: p, Now: e.clock.Now()}, {Partition: p, Keys: []driver.Counter{{Group: g}}}}
	if g != "" {
		queries = append(queries, driver.StatsQuery{Partition: p, Keys: []driver.Counter{{}, {Group: g}}}, driver.StatsQuery{Partition: p, Keys: []driver.Counter{{}}})
	}
	for _, q := range queries {
		st, err := e.store.Stats(e.ctx, q)
		if err != nil {
			e.t.Fatalf("%s: Stats(%s): %v", what, p.PK(), err)
		}
		got := map[string]driver.Counter{}
		for _, c := range st.Counters {
			if c.Covered && c.Group == g && (!c.IsZero() || !c.Position.IsZero()) {
				got[c.SK()] = c
			}
		}
		expect := w
		if g != "" && len(q.Keys) == 1 && q.Keys[0] == (driver.Counter{}) {
			expect = map[string]driver.Counter{} // the total's are her direct threads'
		}
		if !maps.EqualFunc(expect, got, func(a, b driver.Counter) bool {
			return a.Unread == b.Unread && a.Above == b.Above && a.Position.Equal(b.Position)
		}) {
			e.t.Errorf("%s: covered counters of group %s's threads in %s (keys %v) (-want +got):\n%s", what, g, p.PK(), q.Keys, cmp.Diff(expect, got))
		}
	}
}

// groupReceiptMark returns the mark of user partition p's receipt of
// group message b from from to to.
func groupReceiptMark(p driver.Partition, b driver.Record, from, to driver.State, now time.Time) driver.Mark {
	mk := receiptMark(p, b, to.ReadAt, now)
	mk.From, mk.To = from, to
	return mk
}

// testReadPositionGroup: a cover mark of a thread of a group's messages
// moves the user's position there under its conditions, writes her
// position item in the group's partition (which Query lists with
// Positions, and a plain Readers query leaves out), and Stats returns its
// covered counters with her counter of the group, apart from her direct
// thread of the same name; every later write of her receipts of the
// thread's messages adds its covered change only where the position
// covers the message; a receipt mark that would leave a covered message
// unread but for the position is refused with a *driver.CoveredError
// naming the group; a reset keeps the position.
func testReadPositionGroup(e *env) {
	e.needPositions()
	annP := e.part("ann")
	g := groupOf(e.scope, "crew")
	e.used[g] = true
	msg := func(cat string) driver.Record {
		m := e.message(g, cat, time.Hour)
		m.Message.Thread = "chat"
		e.put(m)
		return m
	}
	m0, m1 := msg("billing"), msg("")
	e.clock.Advance(time.Second)
	now := e.clock.Now()
	read0 := now
	// Her read of m0, before any position: no covered change applies.
	mk := groupReceiptMark(annP, m0, driver.State{}, driver.State{ReadAt: now}, now)
	if err := e.markFenced(annP, []driver.Mark{mk}, driver.MarkDeltas(mk)); err != nil {
		e.t.Fatalf("Mark(receipt of m0): %v", err)
	}
	e.wantGroupCovered("no position", annP, "crew")
	// A direct thread of the same name with a position of its own.
	direct := e.threadMessage(annP, "", "chat")
	e.put(direct)
	e.clock.Advance(time.Second)
	dpos := driver.Position{}.Raised(idAbove(direct.Message.ID), e.clock.Now())
	if err := e.cover(annP, "chat", driver.Position{}, dpos, coveredCounter(annP, "", "chat", 1, 1, driver.Position{})); err != nil {
		e.t.Fatalf("a cover mark of the direct thread: %v", err)
	}

	// The group's thread's position, over m0 and m1, with m0's receipt.
	pos := driver.Position{}.Raised(idAbove(m1.Message.ID), e.clock.Now())
	var deltas []driver.Counter
	for _, d := range driver.CoveredCounters(receipt(annP, m0, now)) {
		d.Of, d.Above = "", d.Unread
		deltas = append(deltas, d)
	}
	if err := e.coverGroup(annP, "crew", "chat", pos, pos.Raised(idAbove(pos.Bound), e.clock.Now()), deltas...); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("a cover mark of the group's thread from a position it does not have: %v, want ErrStateChanged", err)
	}
	if err := e.coverGroup(annP, "crew", "chat", driver.Position{}, pos, deltas...); err != nil {
		e.t.Fatalf("a cover mark of the group's thread: %v", err)
	}
	e.wantGroupCovered("the position set", annP, "crew", groupCoveredCounter(annP, "crew", "", "chat", -1, -1, pos), groupCoveredCounter(annP, "crew", "billing", "chat", -1, -1, driver.Position{}))
	e.wantGroupCovered("the direct thread's beside it", annP, "", coveredCounter(annP, "", "chat", 1, 1, dpos))

	// Her position item in the group's partition, and the reader items
	// without it.
	res, err := e.store.Query(e.ctx, driver.Query{Partition: g, Thread: "chat", Readers: true, Positions: true, Limit: 1})
	if err != nil {
		e.t.Fatalf("Query(positions): %v", err)
	}
	if len(res.Readers) != 1 || res.Next != "" || res.Readers[0].User != annP.User || res.Readers[0].Thread != "chat" || res.Readers[0].Partition != g || !res.Readers[0].Position.Equal(pos) || res.Readers[0].ID != "" {
		e.t.Errorf("Query(positions) = %+v, want ann's position item at %+v", res, pos)
	}
	res, err = e.store.Query(e.ctx, driver.Query{Partition: g, Thread: "chat", Readers: true, Limit: 10})
	if err != nil {
		e.t.Fatalf("Query(readers): %v", err)
	}
	if len(res.Readers) != 1 || res.Readers[0].ID != m0.Message.ID || !res.Readers[0].Position.IsZero() {
		e.t.Errorf("Query(readers) = %+v, want m0's reader item alone", res)
	}

	// An archive of m1, which has no receipt, without its read: refused.
	e.clock.Advance(time.Second)
	now = e.clock.Now()
	arch := groupReceiptMark(annP, m1, driver.State{}, driver.State{ArchivedAt: now}, now)
	var covered *driver.CoveredError
	if err := e.markFenced(annP, []driver.Mark{arch}, driver.MarkDeltas(arch)); !errors.As(err, &covered) || covered.Group != "crew" || covered.Thread != "chat" || covered.ID != m1.Message.ID {
		e.t.Errorf("an archive of a covered message without its read: %v, want a CoveredError of it in group crew", err)
	}
	// With its read: applied, counted in.
	arch.To.ReadAt = pos.ReadAt(m1.Message.ID)
	if err := e.markFenced(annP, []driver.Mark{arch}, driver.MarkDeltas(arch)); err != nil {
		e.t.Fatalf("an archive of a covered message with its read: %v", err)
	}
	e.wantGroupCovered("m1 read and archived", annP, "crew", groupCoveredCounter(annP, "crew", "", "chat", -2, -2, pos), groupCoveredCounter(annP, "crew", "billing", "chat", -1, -1, driver.Position{}))

	// A message above the position, read: its change is dropped.
	m2 := msg("billing")
	mk = groupReceiptMark(annP, m2, driver.State{}, driver.State{ReadAt: now}, now)
	if err := e.markFenced(annP, []driver.Mark{mk}, driver.MarkDeltas(mk)); err != nil {
		e.t.Fatalf("Mark(receipt of m2): %v", err)
	}
	e.wantGroupCovered("m2 read above it", annP, "crew", groupCoveredCounter(annP, "crew", "", "chat", -2, -2, pos), groupCoveredCounter(annP, "crew", "billing", "chat", -1, -1, driver.Position{}))

	// The removal of m0's receipt takes it out.
	r0 := receipt(annP, m0, read0)
	if _, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: r0, Deltas: driver.RemovalDeltasOf(r0), Delete: true, Now: now}); err != nil {
		e.t.Fatalf("ApplyRemoval of m0's receipt: %v", err)
	}
	e.wantGroupCovered("m0's receipt removed", annP, "crew", groupCoveredCounter(annP, "crew", "", "chat", -1, -1, pos))

	// A reset keeps the position and its counters.
	st := e.stats(annP, now)
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Reset: true, Version: st.Version, Counters: st.Counters, Before: st.Counters, Seen: st.Seen, Preferences: st.Preferences, Recent: st.Recent, Now: now}); err != nil {
		e.t.Fatalf("Repair: %v", err)
	}
	e.wantGroupCovered("after a reset", annP, "crew", groupCoveredCounter(annP, "crew", "", "chat", -1, -1, pos))
	e.wantGroupCovered("the direct thread's after a reset", annP, "", coveredCounter(annP, "", "chat", 1, 1, dpos))

	// The position moves on, over m2 and her receipt of it.
	pos2 := pos.Raised(idAbove(m2.Message.ID), e.clock.Now())
	deltas = nil
	for _, d := range driver.CoveredCounters(receipt(annP, m2, now)) {
		d.Of, d.Above = "", d.Unread
		deltas = append(deltas, d)
	}
	if err := e.coverGroup(annP, "crew", "chat", pos, pos2, deltas...); err != nil {
		e.t.Fatalf("a move of the group's thread's position: %v", err)
	}
	res, err = e.store.Query(e.ctx, driver.Query{Partition: g, Thread: "chat", Readers: true, Positions: true, Limit: 1})
	if err != nil || len(res.Readers) != 1 || !res.Readers[0].Position.Equal(pos2) {
		e.t.Errorf("Query(positions) after the move = %+v, %v; want ann's at %+v", res.Readers, err, pos2)
	}
	e.wantGroupCovered("moved", annP, "crew", groupCoveredCounter(annP, "crew", "", "chat", -2, -2, pos2), groupCoveredCounter(annP, "crew", "billing", "chat", -1, -1, driver.Position{}))
	if got := slices.Collect(maps.Keys(driver.GroupPositions(e.stats(annP, now).Counters))); len(got) != 1 || got[0] != (driver.GroupThread{Group: "crew", Thread: "chat"}) {
		e.t.Errorf("GroupPositions = %v, want crew's chat alone", got)
	}
	e.checkInvariant()
}

package storetest

import (
	"github.com/google/go-cmp/cmp"
	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// countsFixture publishes to ann and bob and broadcasts, marks some read,
// and returns ann's and bob's expected Counts.
func (e *env) countsFixture() (ann, bob inbox.Counts) {
	e.t.Helper()
	annU, bobU := e.user("ann"), e.user("bob")
	var bills []string
	for range 3 {
		bills = append(bills, e.publish(inbox.Draft{Title: "bill", Category: "billing"}, "ann").Message.ID)
	}
	e.publish(inbox.Draft{Title: "plain"}, "ann", "bob")
	e.publish(inbox.Draft{Title: "plain 2"}, "ann")
	e.broadcast(inbox.Draft{Title: "b billing", Category: "billing"})
	e.broadcast(inbox.Draft{Title: "b billing 2", Category: "billing"})
	news := e.broadcast(inbox.Draft{Title: "b news", Category: "news"})
	e.markRead(annU, bills[0], true)
	e.markRead(annU, news.ID, true)
	e.markRead(bobU, news.ID, true)
	ann = inbox.Counts{Tally: unseenOf(tallyOf(8, 2), 6), Categories: map[string]inbox.Tally{"billing": unseenOf(tallyOf(5, 1), 4), "news": tallyOf(1, 1)}}
	bob = inbox.Counts{Tally: unseenOf(tallyOf(4, 1), 3), Categories: map[string]inbox.Tally{"billing": unseenOf(tallyOf(2, 0), 2), "news": tallyOf(1, 1)}}
	return ann, bob
}

// testCounts: Counts adds a user's own counters and the public ones:
// total, read and unread, overall and per category.
func testCounts(e *env) {
	ann, bob := e.countsFixture()
	e.wantCounts(e.user("ann"), ann)
	e.wantCounts(e.user("bob"), bob)
	e.wantCounts(e.user("carol"), inbox.Counts{Tally: tallyOf(3, 0), Categories: map[string]inbox.Tally{"billing": tallyOf(2, 0), "news": tallyOf(1, 0)}})
	e.wantCountsFromFeed(e.user("ann"))
}

// testRecount: after the counters of a user and of the public partition
// are corrupted, and a ledger entry lost, Recount restores their exact
// values, drops counters of categories that have no records and gives the
// record its entry back.
func testRecount(e *env) {
	ann, bob := e.countsFixture()
	annP, pubP := e.part("ann"), e.pub()
	garbage := map[driver.Partition][]driver.Counter{
		annP: {counter(annP, "", 99, -4), counter(annP, "billing", 0, 7), counter(annP, "bogus", 3, 3)},
		pubP: {counter(pubP, "", -1, 0), counter(pubP, "bogus", 5, 0)},
	}
	for p, cs := range garbage {
		e.resetCounters(p, cs...)
	}
	lost := e.records(annP)[0]
	if ok, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: lost, Now: e.clock.Now()}); !ok || err != nil {
		e.t.Fatalf("ApplyRemoval to lose an entry: %v, %v", ok, err)
	}
	if c := e.counts(e.user("ann")); cmp.Equal(c, ann) {
		e.t.Fatalf("test setup: corrupting the counters did not change Counts(ann): %+v", c)
	}
	got, err := e.ib.Recount(e.ctx, e.user("ann"))
	if err != nil {
		e.t.Fatalf("Recount(ann): %v", err)
	}
	if diff := cmp.Diff(ann, got); diff != "" {
		e.t.Errorf("Recount(ann) (-want +got):\n%s", diff)
	}
	e.wantCounts(e.user("ann"), ann)
	e.wantCounts(e.user("bob"), bob)
	e.checkInvariant()
}

// resetCounters replaces p's counters with cs, as a hand edit would.
func (e *env) resetCounters(p driver.Partition, cs ...driver.Counter) {
	e.t.Helper()
	st := e.stats(p, e.clock.Now())
	if err := e.store.Repair(e.ctx, p, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: cs}); err != nil {
		e.t.Fatalf("Repair(%s, reset): %v", p.PK(), err)
	}
}

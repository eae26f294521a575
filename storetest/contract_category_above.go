package storetest

import (
	"time"

	"github.com/stak/inbox/driver"
)

// testStatsCategoryAbove: a user partition's categories keep their
// Above (driver.Counter.Above of c#<category> and c#<category>#<group>)
// as its total does: Stats returns it, read whole or by key (isolated or
// not), a category's delta of Above alone changes it, and a Repair reset
// sets it anew, to zero, or drops the category with its Above.
func testStatsCategoryAbove(e *env) {
	annP := e.part("ann")
	e.put(e.message(annP, "billing", time.Hour))
	e.put(e.message(annP, "billing", time.Hour))
	e.put(e.message(annP, "news", time.Hour))
	above := func(what string, keys []driver.Counter, want map[string]int64) {
		e.t.Helper()
		for _, isolated := range []bool{false, true} {
			var st driver.Stats
			var err error
			if keys == nil {
				if isolated {
					continue
				}
				st, err = e.store.Stats(e.ctx, driver.StatsQuery{Partition: annP, Now: e.clock.Now()})
			} else {
				st, err = e.store.Stats(e.ctx, driver.StatsQuery{Partition: annP, Keys: keys, Isolated: isolated})
			}
			if err != nil {
				e.t.Fatalf("%s: Stats: %v", what, err)
			}
			got := map[string]int64{}
			for _, c := range st.Counters {
				if c.Above != 0 {
					got[c.SK()] = c.Above
				}
			}
			for sk, n := range want {
				if got[sk] != n {
					e.t.Errorf("%s (keys %v, isolated %v): Above of %s = %d, want %d (all: %v)", what, keys != nil, isolated, sk, got[sk], n, got)
				}
			}
			for sk, n := range got {
				if _, ok := want[sk]; !ok {
					e.t.Errorf("%s (keys %v, isolated %v): Above of %s = %d, want 0", what, keys != nil, isolated, sk, n)
				}
			}
		}
	}
	total, billing, news := driver.CounterSK("", ""), driver.CounterSK("billing", ""), driver.CounterSK("news", "")
	billingDevs := driver.CounterSK("billing", "devs")
	keys := []driver.Counter{{}, {Category: "billing"}, {Category: "news"}, {Category: "billing", Group: "devs"}}
	above("three messages put", nil, map[string]int64{total: 3, billing: 2, news: 1})
	above("three messages put", keys, map[string]int64{total: 3, billing: 2, news: 1})

	// A change of a category's Above alone (and the total's), under a
	// fence of the watermark, as MarkSeen's reset makes.
	fence := driver.Mark{Key: driver.Key{Partition: annP}, Now: e.clock.Now(), Fence: true}
	deltas := []driver.Counter{{Partition: annP, Above: -1}, {Partition: annP, Category: "billing", Above: -1}, {Partition: annP, Category: "billing", Group: "devs", Above: -4}}
	if err := e.store.Mark(e.ctx, []driver.Mark{fence}, deltas); err != nil {
		e.t.Fatalf("Mark of Above alone: %v", err)
	}
	above("Above alone changed", nil, map[string]int64{total: 2, billing: 1, news: 1, billingDevs: -4})
	above("Above alone changed", keys, map[string]int64{total: 2, billing: 1, news: 1, billingDevs: -4})

	// A reset sets each Above anew: billing's to 7, news's to none, the
	// group's dropped with its counter.
	st := e.stats(annP, e.clock.Now())
	var counters []driver.Counter
	for _, c := range st.Counters {
		switch c.SK() {
		case billing:
			c.Above = 7
		case news:
			c.Above = 0
		case billingDevs:
			continue
		}
		counters = append(counters, c)
	}
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: counters, Seen: st.Seen}); err != nil {
		e.t.Fatalf("Repair: %v", err)
	}
	above("after a reset", nil, map[string]int64{total: 2, billing: 7})
	above("after a reset", keys, map[string]int64{total: 2, billing: 7})
}

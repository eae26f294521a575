package storetest

import (
	"errors"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox/driver"
)

// testBuckets: a shared partition's time buckets count its records by
// category and by thread too, as driver.Buckets counts them, through puts
// of several categories and threads (one of each the expression builder
// would misread: '.' and '[1]'; a thread of two categories), removals and
// a Repair's reset; any change of an hour's counts, of any category or
// thread, moves that hour's version alone, in both buckets.
func testBuckets(e *env) {
	const odd = "a.b[1]"
	week := 7 * 24 * time.Hour
	for _, p := range []driver.Partition{e.pub(), groupOf(e.scope, "team")} {
		var recs []driver.Record
		putIn := func(cat, thread string) driver.Record {
			e.t.Helper()
			r := e.message(p, cat, week)
			r.Message.Thread = thread
			e.put(r)
			recs = append(recs, r)
			return r
		}
		put := func(cat string) driver.Record { e.t.Helper(); return putIn(cat, "") }
		remove := func(r driver.Record) {
			e.t.Helper()
			if ok, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: r, Deltas: delta(p, r.Message.Category, -1, 0), Now: e.clock.Now()}); !ok || err != nil {
				e.t.Fatalf("ApplyRemoval(%s): %v, %v", r.Message.ID, ok, err)
			}
			for i := range recs {
				if recs[i].Message.ID == r.Message.ID {
					recs = append(recs[:i], recs[i+1:]...)
					break
				}
			}
		}
		start := e.clock.Now()
		first := put("a")
		put("b")
		put("a")
		put("")
		put(odd)
		putIn("a", "chat")
		putIn("", "chat")
		putIn("b", odd)
		e.clock.Advance(time.Second)
		put("b")
		threaded := putIn("b", "chat")
		e.clock.Advance(time.Hour)
		later := put("a")
		putIn("a", "chat")
		e.clock.Advance(24 * time.Hour)
		put("c")
		putIn("", "chat")
		e.wantBuckets(p, recs, "after puts")

		// A put of a category moves its hour's version alone, in both
		// buckets; so does a removal.
		versions := e.dayVersions(p)
		e.clock.Advance(start.Sub(e.clock.Now()))
		put("c")
		moved := e.dayVersions(p)
		e.wantMoved(p, "a put of c", versions, moved, start)
		remove(first)
		e.wantMoved(p, "the removal of a", moved, e.dayVersions(p), start)
		moved = e.dayVersions(p)
		remove(threaded)
		e.wantMoved(p, "the removal of a thread's", moved, e.dayVersions(p), threaded.Message.DeliveredAt)
		remove(later)
		e.wantBuckets(p, recs, "after removals")

		// A reset writes the buckets given: their categories, no other.
		reset := func(days []driver.DayBucket, hours []driver.HourBucket) {
			e.t.Helper()
			st := e.stats(p, e.clock.Now())
			if err := e.store.Repair(e.ctx, p, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: st.Counters, Days: days, Hours: hours}); err != nil {
				e.t.Fatalf("Repair(Reset) of %s: %v", p.PK(), err)
			}
		}
		var plain []driver.Record // the records, without their categories and threads
		for _, r := range recs {
			r.Message.Category, r.Message.Thread = "z", ""
			plain = append(plain, r)
		}
		days, hours, err := driver.Buckets(plain)
		if err != nil {
			e.t.Fatal(err)
		}
		reset(days, hours)
		e.wantBuckets(p, plain, "after a reset to category z")
		days, hours, err = driver.Buckets(recs)
		if err != nil {
			e.t.Fatal(err)
		}
		reset(days, hours)
		e.wantBuckets(p, recs, "after a reset to the records' buckets")

		// A reset of buckets that cannot be is refused, and writes nothing.
		bad := driver.DayBucket{Day: driver.DayOf(start), Categories: map[string][24]int64{"a#b": {1}}}
		badHour := driver.HourBucket{Hour: driver.HourOf(start), Seconds: map[int]int64{0: 1}, Categories: map[string]map[int]int64{"a": {3600: 1}}}
		for _, r := range []struct {
			days  []driver.DayBucket
			hours []driver.HourBucket
		}{
			{[]driver.DayBucket{bad}, nil},
			{nil, []driver.HourBucket{badHour}},
			{[]driver.DayBucket{{Day: bad.Day, Threads: map[driver.Slice][24]int64{{Thread: "a#b"}: {1}}}}, nil},
			{[]driver.DayBucket{{Day: bad.Day, Threads: map[driver.Slice][24]int64{{Category: "a"}: {1}}}}, nil},
			{nil, []driver.HourBucket{{Hour: badHour.Hour, Seconds: map[int]int64{0: 1}, Threads: map[driver.Slice]map[int]int64{{Thread: "chat", Category: "a#b"}: {0: 1}}}}},
			{nil, []driver.HourBucket{{Hour: badHour.Hour, Seconds: map[int]int64{0: 1}, Threads: map[driver.Slice]map[int]int64{{Thread: "chat"}: {-1: 1}}}}},
		} {
			st := e.stats(p, e.clock.Now())
			err := e.store.Repair(e.ctx, p, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: st.Counters, Days: r.days, Hours: r.hours})
			if !errors.Is(err, driver.ErrInvalidInput) {
				e.t.Errorf("Repair(Reset) of %s with buckets %+v %+v: %v, want ErrInvalidInput", p.PK(), r.days, r.hours, err)
			}
			if after := e.stats(p, e.clock.Now()); after.Version != st.Version {
				e.t.Errorf("a refused reset of %s moved its version", p.PK())
			}
		}
		e.wantBuckets(p, recs, "after refused resets")

		// A record whose category is no key cannot be counted: refused,
		// even without counter changes that would name it.
		badRec := e.message(p, "a#b", week)
		if err := e.store.PutMessage(e.ctx, badRec, nil); !errors.Is(err, driver.ErrInvalidKey) {
			e.t.Errorf("PutMessage of %s of category a#b: %v, want ErrInvalidKey", p.PK(), err)
		}
		if got := e.get(badRec.Key()); len(got) != 0 {
			e.t.Errorf("a refused PutMessage wrote %+v", got)
		}
		if _, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: badRec, Now: e.clock.Now()}); !errors.Is(err, driver.ErrInvalidKey) {
			e.t.Errorf("ApplyRemoval of %s of category a#b: %v, want ErrInvalidKey", p.PK(), err)
		}
		// Likewise a record whose thread is no key (it names the thread's
		// counts there), as another program may have written it.
		badThread := e.message(p, "a", week)
		badThread.Message.Thread = "a#b"
		if err := e.store.PutMessage(e.ctx, badThread, nil); !errors.Is(err, driver.ErrInvalidKey) {
			e.t.Errorf("PutMessage of %s of thread a#b: %v, want ErrInvalidKey", p.PK(), err)
		}
		if _, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: badThread, Now: e.clock.Now()}); !errors.Is(err, driver.ErrInvalidKey) {
			e.t.Errorf("ApplyRemoval of %s of thread a#b: %v, want ErrInvalidKey", p.PK(), err)
		}
		foreign := badThread
		foreign.Entry = ""
		if err := e.store.Repair(e.ctx, p, driver.Repair{Adopt: []driver.Record{foreign}, AdoptAs: []string{badThread.Entry}}); !errors.Is(err, driver.ErrInvalidKey) {
			e.t.Errorf("Repair adopting a record of %s of thread a#b: %v, want ErrInvalidKey", p.PK(), err)
		}
		e.wantBuckets(p, recs, "after refused writes")
		e.clock.Advance(start.Add(48 * time.Hour).Sub(e.clock.Now()))
	}
}

// wantBuckets checks that p's time buckets count recs as driver.Buckets
// does (versions aside; days and hours that count none aside), and that
// each hour's version is its day's.
func (e *env) wantBuckets(p driver.Partition, recs []driver.Record, what string) {
	e.t.Helper()
	wantDays, wantHours, err := driver.Buckets(recs)
	if err != nil {
		e.t.Fatal(err)
	}
	st := e.stats(p, e.clock.Now())
	var got []driver.DayBucket
	versions := map[time.Time]int64{}
	for _, d := range st.Days {
		for i, v := range d.Versions {
			versions[d.Day.Add(time.Duration(i)*time.Hour)] = v
		}
		if d.Hours != ([24]int64{}) || d.Categories != nil || d.Threads != nil {
			d.Versions = [24]int64{}
			got = append(got, d)
		}
	}
	if diff := cmp.Diff(wantDays, got); diff != "" {
		e.t.Errorf("%s: day buckets of %s (-driver.Buckets +stored):\n%s", what, p.PK(), diff)
	}
	for _, want := range wantHours {
		hb, err := e.store.Stats(e.ctx, driver.StatsQuery{Partition: p, Hour: want.Hour})
		if err != nil || hb.Hour == nil {
			e.t.Errorf("%s: hour bucket %v of %s: %+v, %v", what, want.Hour, p.PK(), hb.Hour, err)
			continue
		}
		if hb.Hour.Version != versions[want.Hour] {
			e.t.Errorf("%s: hour bucket %v of %s has version %d, its day's %d", what, want.Hour, p.PK(), hb.Hour.Version, versions[want.Hour])
		}
		got := *hb.Hour
		got.Version = 0
		if diff := cmp.Diff(want, got); diff != "" {
			e.t.Errorf("%s: hour bucket %v of %s (-driver.Buckets +stored):\n%s", what, want.Hour, p.PK(), diff)
		}
	}
}

// dayVersions returns the versions of p's hours, by hour.
func (e *env) dayVersions(p driver.Partition) map[time.Time]int64 {
	e.t.Helper()
	out := map[time.Time]int64{}
	for _, d := range e.stats(p, e.clock.Now()).Days {
		for i, v := range d.Versions {
			out[d.Day.Add(time.Duration(i)*time.Hour)] = v
		}
	}
	return out
}

// wantMoved checks that, from before to after, the version of t's hour of
// p moved, and no other.
func (e *env) wantMoved(p driver.Partition, what string, before, after map[time.Time]int64, t time.Time) {
	e.t.Helper()
	h := driver.HourOf(t)
	for k, v := range after {
		if moved := v != before[k]; moved != k.Equal(h) {
			e.t.Errorf("%s: the version of hour %v of %s moved %v (%d to %d); want only hour %v's", what, k, p.PK(), moved, before[k], v, h)
		}
	}
}

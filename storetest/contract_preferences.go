package storetest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stak/inbox/driver"
)

// preferencesTests are the contract's tests of a user's preferences.
func preferencesTests() []suiteTest {
	return []suiteTest{
		{"MarkPreferences", testMarkPreferences},
		{"MarkPreferencesBadInput", testMarkPreferencesBadInput},
		{"RepairKeepsPreferences", testRepairKeepsPreferences},
		{"OwnPreferencesOfNone", testOwnPreferencesOfNone},
		{"PutMessageOptedOut", testPutMessageOptedOut},
	}
}

// prefsMark returns the preferences mark of p from from's muted groups to
// to's.
func prefsMark(p driver.Partition, now time.Time, from, to []string) driver.Mark {
	return driver.Mark{Key: driver.Key{Partition: p}, Now: now, Preferences: &driver.PreferencesChange{
		From: driver.Preferences{MutedGroups: from, Own: len(from) > 0}, To: driver.Preferences{MutedGroups: to, Own: len(to) > 0}}}
}

// wantPreferences checks that every kind of Stats of p (the whole read,
// and by key, whatever keys) returns muted as p's muted groups, with the
// same version; it returns that version.
func (e *env) wantPreferences(p driver.Partition, muted ...string) int64 {
	e.t.Helper()
	want := driver.Preferences{MutedGroups: muted, Own: len(muted) > 0}
	st := e.stats(p, e.clock.Now())
	for _, q := range []driver.StatsQuery{
		{Partition: p, Now: e.clock.Now()},
		{Partition: p, Keys: []driver.Counter{{}}},
		{Partition: p, Keys: []driver.Counter{{Category: "billing"}}},
	} {
		got, err := e.store.Stats(e.ctx, q)
		if err != nil {
			e.t.Fatalf("Stats(%s, keys %v): %v", p.PK(), q.Keys, err)
		}
		if !got.Preferences.Equal(want) || got.Version != st.Version {
			e.t.Errorf("Stats(%s, keys %v): preferences %v, version %d; want %v, version %d", p.PK(), q.Keys, got.Preferences.MutedGroups, got.Version, muted, st.Version)
		}
	}
	if !st.Preferences.Equal(want) {
		e.t.Errorf("Stats(%s) with threads: preferences %v, want %v", p.PK(), st.Preferences.MutedGroups, muted)
	}
	return st.Version
}

// testMarkPreferences: a preferences mark replaces a user's muted groups
// if they are its From, moves the partition's version (creating its total
// at zero), and changes nothing else; one whose From is not what is
// stored is ErrStateChanged and changes nothing. Another user's
// partition is untouched.
func testMarkPreferences(e *env) {
	annP, bobP := e.part("ann"), e.part("bob")
	now := e.clock.Now()
	v0 := e.wantPreferences(annP)
	mark := func(from, to []string) error {
		return e.store.Mark(e.ctx, []driver.Mark{prefsMark(annP, now, from, to)}, nil)
	}
	if err := mark(nil, []string{"devs", "ops"}); err != nil {
		e.t.Fatalf("Mark(preferences: mute devs, ops): %v", err)
	}
	v1 := e.wantPreferences(annP, "devs", "ops")
	if v1 == v0 {
		e.t.Errorf("a preferences mark left the version at %d", v0)
	}
	// The total is created at zero, as any counter a change touches.
	e.wantCounters(annP, driver.Counter{Partition: annP})
	e.wantPreferences(bobP)

	// A From that is not what is stored: refused, nothing changes.
	for _, from := range [][]string{nil, {"devs"}, {"devs", "ops", "sales"}} {
		if err := mark(from, []string{"sales"}); !errors.Is(err, driver.ErrStateChanged) {
			e.t.Errorf("Mark(preferences from %v, stored devs, ops): %v, want ErrStateChanged", from, err)
		}
	}
	if v := e.wantPreferences(annP, "devs", "ops"); v != v1 {
		e.t.Errorf("a refused preferences mark moved the version from %d to %d", v1, v)
	}

	// Records and counters written since stay as they are; the version
	// moves again with the next change.
	d := e.message(annP, "billing", time.Hour)
	e.put(d)
	before := e.counters(annP)
	if err := mark([]string{"devs", "ops"}, []string{"ops"}); err != nil {
		e.t.Fatalf("Mark(preferences: devs, ops to ops): %v", err)
	}
	v2 := e.wantPreferences(annP, "ops")
	if diff := cmp.Diff(before, e.counters(annP), cmpopts.EquateEmpty()); diff != "" {
		e.t.Errorf("a preferences mark changed the counters (-before +after):\n%s", diff)
	}
	e.wantRecords("ann's records", []driver.Record{d}, e.records(annP))
	if err := mark([]string{"ops"}, nil); err != nil {
		e.t.Fatalf("Mark(preferences: unmute ops): %v", err)
	}
	if v := e.wantPreferences(annP); v == v2 {
		e.t.Errorf("unmuting left the version at %d", v)
	}
}

// testMarkPreferencesBadInput: preferences a Store cannot keep (unsorted,
// repeated, everyone's, an invalid key, more than MaxMutedGroups), a mark
// that changes nothing, a preferences mark of a shared partition, with
// an ID or a watermark, with other marks or with deltas: each is
// ErrInvalidInput (or ErrInvalidKey), and nothing is written.
func testMarkPreferencesBadInput(e *env) {
	annP := e.part("ann")
	now := e.clock.Now()
	if err := e.store.Mark(e.ctx, []driver.Mark{prefsMark(annP, now, nil, []string{"devs"})}, nil); err != nil {
		e.t.Fatalf("Mark(preferences: mute devs): %v", err)
	}
	v := e.wantPreferences(annP, "devs")
	var many []string
	for i := range driver.MaxMutedGroups + 1 {
		many = append(many, fmt.Sprintf("g%03d", i))
	}
	devs := []string{"devs"}
	withID := prefsMark(annP, now, devs, nil)
	withID.Key.ID = e.newID()
	withSeen := prefsMark(annP, now, devs, nil)
	withSeen.Seen = driver.SeenAt(now)
	withFence := withSeen
	withFence.Fence = true
	withReceipt := prefsMark(annP, now, devs, nil)
	withReceipt.Receipt, withReceipt.Shared = true, groupOf(e.scope, "devs")
	seen := driver.Mark{Key: driver.Key{Partition: annP}, Now: now, Seen: driver.SeenAt(now)}
	for _, c := range []struct {
		what   string
		marks  []driver.Mark
		deltas []driver.Counter
	}{
		{"unsorted groups", []driver.Mark{prefsMark(annP, now, devs, []string{"ops", "devs"})}, nil},
		{"a repeated group", []driver.Mark{prefsMark(annP, now, devs, []string{"ops", "ops"})}, nil},
		{"everyone's group", []driver.Mark{prefsMark(annP, now, devs, []string{driver.PublicGroup})}, nil},
		{"a group key with '#'", []driver.Mark{prefsMark(annP, now, devs, []string{"a#b"})}, nil},
		{"an empty group key", []driver.Mark{prefsMark(annP, now, devs, []string{""})}, nil},
		{"more than MaxMutedGroups", []driver.Mark{prefsMark(annP, now, devs, many)}, nil},
		{"a From that cannot be", []driver.Mark{prefsMark(annP, now, []string{"z", "a"}, nil)}, nil},
		{"no change", []driver.Mark{prefsMark(annP, now, devs, devs)}, nil},
		{"a shared partition", []driver.Mark{prefsMark(e.pub(), now, nil, devs)}, nil},
		{"a message ID", []driver.Mark{withID}, nil},
		{"a watermark", []driver.Mark{withSeen}, nil},
		{"a fence", []driver.Mark{withFence}, nil},
		{"a receipt", []driver.Mark{withReceipt}, nil},
		{"another mark", []driver.Mark{prefsMark(annP, now, devs, nil), seen}, nil},
		{"deltas", []driver.Mark{prefsMark(annP, now, devs, nil)}, []driver.Counter{{Partition: annP, Published: 1}}},
	} {
		err := e.store.Mark(e.ctx, c.marks, c.deltas)
		if !errors.Is(err, driver.ErrInvalidInput) && !errors.Is(err, driver.ErrInvalidKey) {
			e.t.Errorf("Mark(preferences with %s): %v, want ErrInvalidInput", c.what, err)
		}
	}
	if got := e.wantPreferences(annP, "devs"); got != v {
		e.t.Errorf("refused preferences marks moved the version from %d to %d", v, got)
	}
	if st := e.stats(annP, now); st.Seen != "" {
		e.t.Errorf("a refused mark set the watermark %q", st.Seen)
	}
	e.wantPreferences(e.pub())
	e.wantCounters(annP, driver.Counter{Partition: annP})
}

// testRepairKeepsPreferences: a reset of a user's counters keeps the
// preferences it read with their version (Repair.Preferences); a reset
// with preferences a Store cannot keep, or with preferences of a shared
// partition, is ErrInvalidInput and changes nothing.
func testRepairKeepsPreferences(e *env) {
	annP := e.part("ann")
	now := e.clock.Now()
	d := e.message(annP, "billing", time.Hour)
	e.put(d)
	if err := e.store.Mark(e.ctx, []driver.Mark{prefsMark(annP, now, nil, []string{"devs", "ops"})}, nil); err != nil {
		e.t.Fatalf("Mark(preferences): %v", err)
	}
	st := e.stats(annP, now)
	reset := driver.Repair{Reset: true, Version: st.Version, Counters: e.counters(annP), Before: st.Counters, Now: now, Recounted: now, Preferences: st.Preferences}
	for _, bad := range []driver.Preferences{{MutedGroups: []string{"ops", "devs"}}, {MutedGroups: []string{driver.PublicGroup}}} {
		r := reset
		r.Preferences = bad
		if err := e.store.Repair(e.ctx, annP, r); !errors.Is(err, driver.ErrInvalidInput) {
			e.t.Errorf("Repair(reset with preferences %v): %v, want ErrInvalidInput", bad.MutedGroups, err)
		}
	}
	shared := driver.Repair{Reset: true, Preferences: driver.Preferences{MutedGroups: []string{"devs"}}, Now: now, Recounted: now}
	if err := e.store.Repair(e.ctx, e.pub(), shared); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("Repair(reset of a shared partition with preferences): %v, want ErrInvalidInput", err)
	}
	if v := e.wantPreferences(annP, "devs", "ops"); v != st.Version {
		e.t.Errorf("refused resets moved the version from %d to %d", st.Version, v)
	}
	if err := e.store.Repair(e.ctx, annP, reset); err != nil {
		e.t.Fatalf("Repair(reset): %v", err)
	}
	e.wantPreferences(annP, "devs", "ops")
	e.wantCounters(annP, slices.Clone(st.Counters)...)
	// A reset read before a change of the preferences is refused: the
	// change moved the version.
	st = e.stats(annP, now)
	if err := e.store.Mark(e.ctx, []driver.Mark{prefsMark(annP, now, []string{"devs", "ops"}, nil)}, nil); err != nil {
		e.t.Fatalf("Mark(preferences: unmute): %v", err)
	}
	stale := driver.Repair{Reset: true, Version: st.Version, Counters: st.Counters, Before: st.Counters, Now: now, Recounted: now, Preferences: st.Preferences}
	if err := e.store.Repair(e.ctx, annP, stale); !errors.Is(err, driver.ErrConflict) {
		e.t.Errorf("Repair(reset read before a preferences mark): %v, want ErrConflict", err)
	}
	e.wantPreferences(annP)
}

// testOwnPreferencesOfNone: preferences of a user's own that mute and opt
// out of nothing (Own, none) stay hers: every Stats returns them so, a
// mark from none of her own is ErrStateChanged, a reset (Repair) keeps
// them, and her copy of a record whose OptOutDefault is set is written,
// before and after the reset. Once a mark drops them (back to the
// defaults), such a copy is ErrOptedOut, and a reset keeps that too.
func testOwnPreferencesOfNone(e *env) {
	annP := e.part("ann")
	now := e.clock.Now()
	own, follows := driver.Preferences{Own: true}, driver.Preferences{}
	mark := func(from, to driver.Preferences) error {
		return e.store.Mark(e.ctx, []driver.Mark{{Key: driver.Key{Partition: annP}, Now: now, Preferences: &driver.PreferencesChange{From: from, To: to}}}, nil)
	}
	wantOwn := func(what string, want bool) {
		e.t.Helper()
		for _, q := range []driver.StatsQuery{
			{Partition: annP, Now: now},
			{Partition: annP, Now: now, Threads: true},
			{Partition: annP, Keys: []driver.Counter{{}}},
			{Partition: annP, Keys: []driver.Counter{{Category: "promo"}}},
		} {
			st, err := e.store.Stats(e.ctx, q)
			if err != nil {
				e.t.Fatalf("Stats(%s, %d keys): %v", annP.PK(), len(q.Keys), err)
			}
			if st.Preferences.Own != want || !st.Preferences.None() {
				e.t.Errorf("%s: Stats(%s, %d keys, threads %v): preferences %+v; want none, own %v", what, annP.PK(), len(q.Keys), q.Threads, st.Preferences, want)
			}
		}
	}
	byDefault := func() driver.Record {
		r := e.message(annP, "promo", time.Hour)
		r.OptOutDefault = true
		return r
	}
	reset := func(what string) {
		e.t.Helper()
		st := e.stats(annP, now)
		r := driver.Repair{Reset: true, Version: st.Version, Counters: e.counters(annP), Before: st.Counters, Now: now, Recounted: now, Preferences: st.Preferences}
		if err := e.store.Repair(e.ctx, annP, r); err != nil {
			e.t.Fatalf("Repair(reset, %s): %v", what, err)
		}
	}

	if err := mark(follows, own); err != nil {
		e.t.Fatalf("Mark(preferences: her own, none): %v", err)
	}
	wantOwn("her own, none", true)
	if err := mark(follows, driver.Preferences{Own: true, MutedGroups: []string{"devs"}}); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("Mark(preferences from none of her own, hers stored): %v, want ErrStateChanged", err)
	}
	d1 := byDefault()
	e.put(d1)
	reset("her own, none")
	wantOwn("her own, none, after a reset", true)
	d2 := byDefault()
	e.put(d2)
	d1.OptOutDefault, d2.OptOutDefault = false, false // never stored
	e.wantRecords("her copies, the defaults opting out, hers not", sorted(d1, d2), e.get(d1.Key(), d2.Key()))

	if err := mark(own, follows); err != nil {
		e.t.Fatalf("Mark(preferences: back to the defaults): %v", err)
	}
	wantOwn("back to the defaults", false)
	reset("back to the defaults")
	wantOwn("back to the defaults, after a reset", false)
	if r := byDefault(); !errors.Is(e.store.PutMessage(e.ctx, r, driver.PutDeltas(r)), driver.ErrOptedOut) {
		e.t.Errorf("PutMessage, the defaults opting out, none of her own: not ErrOptedOut")
	}
	e.wantRecords("her copies after the opted-out one", []driver.Record{d2, d1}, e.records(annP))
}

// testPutMessageOptedOut: once ann opts out of promo, a PutMessage of her
// copy of a promo message is ErrOptedOut and writes nothing, with or
// without Above among its deltas (under a watermark below it, or above
// it), scheduled too; a retry of a copy stored before the opt-out is
// ErrExists; her copy of another category, bob's promo copy and a promo
// broadcast are written. A copy whose OptOutDefault is set is ErrOptedOut
// for a user without preferences of her own (with or without c#*),
// ErrExists if it is there already, and written for one whose own do not
// opt out. Opted in again, her promo copy is written.
func testPutMessageOptedOut(e *env) {
	annP, bobP, pub := e.part("ann"), e.part("bob"), e.pub()
	before := e.message(annP, "promo", time.Hour)
	e.put(before)
	optOut := func(from, to []string) {
		e.t.Helper()
		mk := driver.Mark{Key: driver.Key{Partition: annP}, Now: e.clock.Now(), Preferences: &driver.PreferencesChange{
			From: driver.Preferences{MutedCategories: []string{"news"}, OptedOut: from, Own: true}, To: driver.Preferences{MutedCategories: []string{"news"}, OptedOut: to, Own: true}}}
		if err := e.store.Mark(e.ctx, []driver.Mark{mk}, nil); err != nil {
			e.t.Fatalf("Mark(preferences: opt out of %v): %v", to, err)
		}
	}
	if err := e.store.Mark(e.ctx, []driver.Mark{{Key: driver.Key{Partition: annP}, Now: e.clock.Now(), Preferences: &driver.PreferencesChange{
		To: driver.Preferences{MutedCategories: []string{"news"}, Own: true}}}}, nil); err != nil {
		e.t.Fatalf("Mark(preferences: mute news): %v", err)
	}
	optOut(nil, []string{"promo", "promos"})
	counters := e.counters(annP)
	e.clock.Advance(time.Second)
	below := e.message(annP, "promo", time.Hour)
	e.clock.Advance(time.Second)
	if err := e.markFenced(annP, []driver.Mark{{Key: driver.Key{Partition: annP}, Now: e.clock.Now(), Seen: driver.SeenAt(e.clock.Now())}}, nil); err != nil {
		e.t.Fatalf("Mark(seen): %v", err)
	}
	counters = e.counters(annP)
	e.clock.Advance(time.Second)
	above := e.message(annP, "promo", time.Hour)
	due := e.clock.Now().Add(time.Hour)
	later := e.scheduledCopy(annP, e.scheduledID(due), due, time.Hour)
	later.Message.Category = "promo"
	refused := e.snapshot()
	for _, c := range []struct {
		what   string
		rec    driver.Record
		deltas []driver.Counter
	}{
		{"without Above", above, driver.PutDeltas(above)},
		{"with Above, above the watermark", above, driver.MergeCounters(append(driver.PutDeltas(above), driver.Counter{Partition: annP, Above: 1}, driver.Counter{Partition: annP, Category: "promo", Above: 1}))},
		{"with Above, below the watermark", below, driver.MergeCounters(append(driver.PutDeltas(below), driver.Counter{Partition: annP, Above: 1}))},
		{"scheduled", later, driver.PutDeltas(later)},
	} {
		if err := e.store.PutMessage(e.ctx, c.rec, c.deltas); !errors.Is(err, driver.ErrOptedOut) {
			e.t.Errorf("PutMessage of ann's promo copy %s, opted out: %v, want ErrOptedOut", c.what, err)
		}
	}
	if err := e.store.PutMessage(e.ctx, before, driver.PutDeltas(before)); !errors.Is(err, driver.ErrExists) {
		e.t.Errorf("PutMessage again of ann's promo copy stored before the opt-out: %v, want ErrExists", err)
	}
	if got := e.get(above.Key(), below.Key(), later.Key()); len(got) != 0 {
		e.t.Errorf("records written though ann opted out: %v", got)
	}
	e.wantUnchanged("a refused PutMessage", refused)
	if got := e.scheduledAll(driver.Query{}, 10); len(got) != 0 {
		e.t.Errorf("scheduled records written though ann opted out: %v", got)
	}
	if diff := cmp.Diff(counters, e.counters(annP), cmpopts.EquateEmpty()); diff != "" {
		e.t.Errorf("a refused PutMessage changed ann's counters (-before +after):\n%s", diff)
	}
	other, bobs, b := e.message(annP, "promo-x", time.Hour), e.message(bobP, "promo", time.Hour), e.message(pub, "promo", time.Hour)
	for _, r := range []driver.Record{other, bobs, b} {
		e.put(r)
	}
	e.wantRecords("records of another category, user or partition", sorted(other, bobs, b), e.get(other.Key(), bobs.Key(), b.Key()))

	// Defaults that opt out: bob (none of his own, his c#* there) and
	// carol (no c#* at all) get no copy; ann's own preferences, which do
	// not opt out of promo-y, win; a broadcast is no user's copy.
	carolP := e.part("carol")
	bobs2, carols, anns, b2 := e.message(bobP, "promo", time.Hour), e.message(carolP, "promo", time.Hour), e.message(annP, "promo-y", time.Hour), e.message(pub, "promo", time.Hour)
	for _, r := range []driver.Record{bobs2, carols} {
		r.OptOutDefault = true
		if err := e.store.PutMessage(e.ctx, r, driver.PutDeltas(r)); !errors.Is(err, driver.ErrOptedOut) {
			e.t.Errorf("PutMessage of %s's copy, the defaults opting out, none of her own: %v, want ErrOptedOut", r.Partition.User, err)
		}
	}
	if got := e.get(bobs2.Key(), carols.Key()); len(got) != 0 {
		e.t.Errorf("records written though the defaults opt out: %v", got)
	}
	// A retry of bob's copy stored before the defaults opted out: it is
	// there.
	retry := bobs
	retry.OptOutDefault = true
	if err := e.store.PutMessage(e.ctx, retry, driver.PutDeltas(retry)); !errors.Is(err, driver.ErrExists) {
		e.t.Errorf("PutMessage again of bob's promo copy, stored before the defaults opted out: %v, want ErrExists", err)
	}
	e.wantCounters(carolP)
	for _, r := range []driver.Record{anns, b2} {
		r.OptOutDefault = true
		e.put(r)
	}
	e.wantRecords("ann's own preferences and a broadcast, the defaults opting out", sorted(anns, b2), e.get(anns.Key(), b2.Key()))
	optOut([]string{"promo", "promos"}, []string{"promos"})
	e.put(above)
	e.wantRecords("ann's promo copy, opted in again", []driver.Record{above}, e.get(above.Key()))
}

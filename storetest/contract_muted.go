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

// mutedTests are the contract's tests of the counters a user's partition
// keeps for the threads of her direct messages she muted
// (driver.Counter.Muted).
func mutedTests() []suiteTest {
	return []suiteTest{
		{"MutedThreadPutMessage", testMutedThreadPutMessage},
		{"MutedThreadMark", testMutedThreadMark},
		{"MutedThreadApplyRemoval", testMutedThreadApplyRemoval},
		{"MutedThreadPreferences", testMutedThreadPreferences},
		{"MutedThreadBadInput", testMutedThreadBadInput},
		{"MutedThreadRepair", testMutedThreadRepair},
		{"MutedThreadReset", testMutedThreadReset},
	}
}

// threadsMuted returns a user's own preferences that mute threads ts
// (sorted), or none of her own if ts is empty.
func threadsMuted(ts ...string) driver.Preferences {
	return driver.Preferences{MutedThreads: ts, Own: len(ts) > 0}
}

// mutedCounter returns the counter user partition p keeps while it mutes
// thread t, of its messages of category cat ("" for all of them).
func mutedCounter(p driver.Partition, cat, t string, unread, above int64) driver.Counter {
	return driver.Counter{Partition: p, Category: cat, Thread: t, Muted: true, Unread: unread, Above: above}
}

// threadMessage returns a new direct message of user partition p, of
// category cat and thread t, as message does. It is not stored.
func (e *env) threadMessage(p driver.Partition, cat, t string) driver.Record {
	r := e.message(p, cat, time.Hour)
	r.Message.Thread = t
	return r
}

// markPrefs applies the preferences mark of user partition p from from to
// to, with muted as the counters of the threads it mutes anew, read at
// counter version version (driver.PreferencesChange, Mark.Muted): the
// mark is versioned, with its threads muted anew and muted, if it mutes
// any thread anew or muted holds a counter.
func (e *env) markPrefs(p driver.Partition, from, to driver.Preferences, version int64, muted ...driver.Counter) error {
	ch := &driver.PreferencesChange{From: from, To: to}
	mk := driver.Mark{Key: driver.Key{Partition: p}, Now: e.clock.Now(), Preferences: ch}
	if newly := ch.NewlyMuted(); len(newly) > 0 || len(muted) > 0 {
		mk.Versioned, mk.Version, mk.Muted = true, version, &driver.MutedReset{Threads: newly, Counters: muted}
	}
	return e.store.Mark(e.ctx, []driver.Mark{mk}, nil)
}

// setPrefs is markPrefs at p's counter version as read now; it fails the
// test on an error.
func (e *env) setPrefs(p driver.Partition, from, to driver.Preferences, muted ...driver.Counter) {
	e.t.Helper()
	if err := e.markPrefs(p, from, to, e.stats(p, e.clock.Now()).Version, muted...); err != nil {
		e.t.Fatalf("Mark(preferences of %s from %+v to %+v): %v", p.PK(), from, to, err)
	}
}

// wantPrefs checks that the preferences of user partition p are want.
func (e *env) wantPrefs(what string, p driver.Partition, want driver.Preferences) {
	e.t.Helper()
	if got := e.stats(p, e.clock.Now()).Preferences; !got.Equal(want) {
		e.t.Errorf("%s: preferences of %s %+v, want %+v", what, p.PK(), got, want)
	}
}

// raiseSeen raises the seen watermark of user partition p to the clock's
// second (driver.SeenAt): every ID of that second and before is at or
// below it.
func (e *env) raiseSeen(p driver.Partition) {
	e.t.Helper()
	now := e.clock.Now()
	if err := e.store.Mark(e.ctx, []driver.Mark{{Key: driver.Key{Partition: p}, Now: now, Seen: driver.SeenAt(now)}}, nil); err != nil {
		e.t.Fatalf("Mark(watermark of %s): %v", p.PK(), err)
	}
}

// totalAbove returns the Above of user partition p's total counter.
func (e *env) totalAbove(p driver.Partition) int64 {
	e.t.Helper()
	for _, c := range e.stats(p, e.clock.Now()).Counters {
		if c.SK() == driver.CounterSK("", "") {
			return c.Above
		}
	}
	return 0
}

// threadMark returns the mark of direct message rec, of a thread, from
// its marks to to.
func threadMark(rec driver.Record, to driver.State, now time.Time) driver.Mark {
	mk := directMark(rec, time.Time{}, now)
	mk.Thread, mk.From, mk.To = rec.Message.Thread, rec.State(), to
	return mk
}

// markThread changes the marks of direct message *rec, of a thread, to
// to, with the counter changes the Inbox makes (driver.MarkDeltas, and
// driver.AboveDeltas under a fence of the watermark), and updates *rec.
func (e *env) markThread(rec *driver.Record, to driver.State) {
	e.t.Helper()
	mk := threadMark(*rec, to, e.clock.Now())
	if err := e.markFenced(rec.Partition, []driver.Mark{mk}, driver.MarkDeltas(mk)); err != nil {
		e.t.Fatalf("Mark(%s/%s to %+v): %v", rec.Partition.PK(), rec.Message.ID, to, err)
	}
	rec.Message.ReadAt, rec.Message.ArchivedAt, rec.Message.SnoozedUntil, rec.Timed = to.ReadAt, to.ArchivedAt, to.SnoozedUntil, timedAfter(mk)
}

// wantMutedCounters checks the muted threads' counters
// (driver.Counter.Muted) of user partition p, as Stats of its whole stats
// returns them, with the threads' counters and without: exactly want, but
// for those at zero (a muted thread's counter at zero is as none), and
// none, not even at zero, of a thread p's preferences do not mute.
func (e *env) wantMutedCounters(what string, p driver.Partition, want ...driver.Counter) {
	e.t.Helper()
	w := map[string]driver.Counter{}
	for _, c := range want {
		w[c.SK()] = c
	}
	for _, threads := range []bool{true, false} {
		st, err := e.store.Stats(e.ctx, driver.StatsQuery{Partition: p, Now: e.clock.Now(), Threads: threads})
		if err != nil {
			e.t.Fatalf("%s: Stats(%s): %v", what, p.PK(), err)
		}
		got := map[string]driver.Counter{}
		for _, c := range st.Counters {
			switch {
			case !c.Muted:
			case !st.Preferences.Own || !st.Preferences.MutesThread(c.Thread):
				e.t.Errorf("%s: Stats(%s, threads %v) returned %s, of a thread its preferences %+v do not mute: %+v", what, p.PK(), threads, c.SK(), st.Preferences, c)
			case !c.IsZero():
				got[c.SK()] = c
			}
		}
		if diff := cmp.Diff(w, got, cmpopts.EquateEmpty()); diff != "" {
			e.t.Errorf("%s: muted threads' counters of %s (threads %v) (-want +got):\n%s", what, p.PK(), threads, diff)
		}
	}
}

// testMutedThreadPutMessage: a PutMessage of a direct message of a thread
// its user's own preferences mute adds its thread's muted counters
// (driver.PutDeltas): Unread, and Above only if the partition's
// watermark is below the message's ID, as the partition's own Above; a
// read message adds nothing. The deltas of a thread she does not mute,
// or that another user mutes, are dropped; that user gets none of them.
func testMutedThreadPutMessage(e *env) {
	annP, bobP := e.part("ann"), e.part("bob")
	e.setPrefs(annP, driver.Preferences{}, threadsMuted("chat"))
	e.setPrefs(bobP, driver.Preferences{}, threadsMuted("talk"))
	below := e.threadMessage(annP, "billing", "chat")
	e.clock.Advance(time.Second)
	e.raiseSeen(annP)
	e.clock.Advance(time.Second)

	e.put(below)
	e.wantMutedCounters("a message at the watermark put", annP, mutedCounter(annP, "", "chat", 1, 0), mutedCounter(annP, "billing", "chat", 1, 0))
	if got := e.totalAbove(annP); got != 0 {
		e.t.Errorf("a message at the watermark put: ann's Above %d, want 0", got)
	}
	e.put(e.threadMessage(annP, "billing", "chat"))
	e.put(e.threadMessage(annP, "", "chat"))
	read := e.threadMessage(annP, "billing", "chat")
	read.Message.ReadAt = e.clock.Now()
	e.put(read)
	want := []driver.Counter{mutedCounter(annP, "", "chat", 3, 2), mutedCounter(annP, "billing", "chat", 2, 1)}
	e.wantMutedCounters("messages above the watermark put", annP, want...)
	if got := e.totalAbove(annP); got != 2 {
		e.t.Errorf("messages above the watermark put: ann's Above %d, want 2", got)
	}

	// A thread ann does not mute, one bob mutes, and bob's copy of a
	// thread ann mutes.
	e.put(e.threadMessage(annP, "billing", "other"))
	e.put(e.threadMessage(annP, "billing", "talk"))
	e.put(e.threadMessage(bobP, "billing", "chat"))
	e.wantMutedCounters("messages of threads ann does not mute put", annP, want...)
	e.wantMutedCounters("bob's copy of a thread he does not mute put", bobP)
	e.put(e.threadMessage(bobP, "", "talk"))
	e.wantMutedCounters("bob's copy of a thread he mutes put", bobP, mutedCounter(bobP, "", "talk", 1, 1))
	e.wantMutedCounters("bob's copy of a thread he mutes put", annP, want...)
}

// testMutedThreadMark: a Mark of a direct message of a thread its user
// mutes changes its thread's muted counters: their Unread by
// driver.MarkDeltas (a read, a snooze and their undoing), whatever the
// watermark, and their Above by driver.AboveDeltas, under a fence of a
// watermark below the message's ID. A mark of a thread she does not
// mute, or no longer mutes, changes none.
func testMutedThreadMark(e *env) {
	annP := e.part("ann")
	e.setPrefs(annP, driver.Preferences{}, threadsMuted("chat"))
	d1, d2, o := e.threadMessage(annP, "billing", "chat"), e.threadMessage(annP, "", "chat"), e.threadMessage(annP, "billing", "other")
	for _, r := range []driver.Record{d1, d2, o} {
		e.put(r)
	}
	e.wantMutedCounters("two messages put", annP, mutedCounter(annP, "", "chat", 2, 2), mutedCounter(annP, "billing", "chat", 1, 1))
	now := e.clock.Now()
	e.markThread(&d1, driver.State{ReadAt: now})
	e.wantMutedCounters("one read", annP, mutedCounter(annP, "", "chat", 1, 1))
	e.markThread(&d2, driver.State{SnoozedUntil: now.Add(time.Hour)})
	e.wantMutedCounters("the other snoozed", annP)
	e.markThread(&d1, driver.State{})
	e.wantMutedCounters("the read one unread again", annP, mutedCounter(annP, "", "chat", 1, 1), mutedCounter(annP, "billing", "chat", 1, 1))
	e.markThread(&d2, driver.State{})
	e.markThread(&o, driver.State{ReadAt: now})
	e.wantMutedCounters("the snooze undone, a message of another thread read", annP, mutedCounter(annP, "", "chat", 2, 2), mutedCounter(annP, "billing", "chat", 1, 1))

	// Under a watermark above them, a mark changes Unread alone.
	e.clock.Advance(time.Second)
	e.raiseSeen(annP)
	e.markThread(&d2, driver.State{ReadAt: e.clock.Now()})
	e.wantMutedCounters("one read under the watermark", annP, mutedCounter(annP, "", "chat", 1, 2), mutedCounter(annP, "billing", "chat", 1, 1))

	e.setPrefs(annP, threadsMuted("chat"), driver.Preferences{})
	e.markThread(&d2, driver.State{})
	e.markThread(&o, driver.State{})
	e.wantMutedCounters("marks of a thread unmuted", annP)
}

// testMutedThreadApplyRemoval: ApplyRemoval of a direct message of a
// thread its user mutes takes it out of its thread's muted counters
// (driver.RemovalDeltasOf): Unread, and Above only if the partition's
// watermark is below its ID, as the partition's own Above; only once. A
// removal of a thread she does not mute, or no longer mutes, changes
// none.
func testMutedThreadApplyRemoval(e *env) {
	annP := e.part("ann")
	e.setPrefs(annP, driver.Preferences{}, threadsMuted("chat"))
	d1, d2, d3, o := e.threadMessage(annP, "billing", "chat"), e.threadMessage(annP, "", "chat"), e.threadMessage(annP, "", "chat"), e.threadMessage(annP, "billing", "other")
	for _, r := range []driver.Record{d1, d2, d3, o} {
		e.put(r)
	}
	e.wantMutedCounters("three messages put", annP, mutedCounter(annP, "", "chat", 3, 3), mutedCounter(annP, "billing", "chat", 1, 1))
	remove := func(r driver.Record, want bool) {
		e.t.Helper()
		got, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: r, Deltas: driver.RemovalDeltasOf(r), Delete: true, Now: e.clock.Now()})
		if err != nil || got != want {
			e.t.Errorf("ApplyRemoval(%s): %v, %v; want %v, nil", r.Message.ID, got, err, want)
		}
	}
	remove(d1, true)
	e.wantMutedCounters("one removed", annP, mutedCounter(annP, "", "chat", 2, 2))
	remove(d1, false)
	remove(o, true)
	e.wantMutedCounters("one removed again, one of another thread removed", annP, mutedCounter(annP, "", "chat", 2, 2))

	e.clock.Advance(time.Second)
	e.raiseSeen(annP)
	above := e.totalAbove(annP)
	remove(d2, true)
	e.wantMutedCounters("one removed under the watermark", annP, mutedCounter(annP, "", "chat", 1, 2))
	if got := e.totalAbove(annP); got != above {
		e.t.Errorf("one removed under the watermark: ann's Above %d, want %d as before", got, above)
	}

	e.setPrefs(annP, threadsMuted("chat"), driver.Preferences{})
	remove(d3, true)
	e.wantMutedCounters("one of a thread unmuted removed", annP)
}

// testMutedThreadPreferences: a preferences mark that mutes a thread anew
// writes the counters it carries (PreferencesChange.Muted), only if the
// partition's counter version is still its Version: else it is
// ErrStateChanged, with or without counters, and writes nothing. Writes
// after it count in them. A mark that mutes no thread anew applies
// whatever its Version: one that changes other preferences keeps the
// muted counters; one that unmutes a thread drops its counters, the
// others' kept; one back to the defaults, or to none of her own, drops
// them all. Muted anew, a thread gets the counters given, nothing of
// those it had.
func testMutedThreadPreferences(e *env) {
	annP := e.part("ann")
	for _, r := range []driver.Record{e.threadMessage(annP, "billing", "chat"), e.threadMessage(annP, "", "chat"), e.threadMessage(annP, "billing", "other")} {
		e.put(r)
	}
	e.wantMutedCounters("nothing muted", annP)
	stale := e.stats(annP, e.clock.Now()).Version
	e.put(e.threadMessage(annP, "", "chat"))
	chat := []driver.Counter{mutedCounter(annP, "", "chat", 3, 3), mutedCounter(annP, "billing", "chat", 1, 1)}
	before, v := e.snapshot(), e.stats(annP, e.clock.Now()).Version
	for _, muted := range [][]driver.Counter{chat, nil} {
		if err := e.markPrefs(annP, driver.Preferences{}, threadsMuted("chat"), stale, muted...); !errors.Is(err, driver.ErrStateChanged) {
			e.t.Errorf("Mark(preferences: mute chat, %d counters, at a version a write moved): %v, want ErrStateChanged", len(muted), err)
		}
	}
	e.wantUnchanged("a mute at a stale version", before)
	if got := e.stats(annP, e.clock.Now()).Version; got != v {
		e.t.Errorf("a mute at a stale version moved the version from %d to %d", v, got)
	}

	if err := e.markPrefs(annP, driver.Preferences{}, threadsMuted("chat"), v, chat...); err != nil {
		e.t.Fatalf("Mark(preferences: mute chat): %v", err)
	}
	e.wantPrefs("chat muted", annP, threadsMuted("chat"))
	e.wantMutedCounters("chat muted", annP, chat...)
	if got := e.stats(annP, e.clock.Now()).Version; got == v {
		e.t.Errorf("a mute left the version at %d", v)
	}
	e.put(e.threadMessage(annP, "billing", "chat"))
	chat = []driver.Counter{mutedCounter(annP, "", "chat", 4, 4), mutedCounter(annP, "billing", "chat", 2, 2)}
	e.wantMutedCounters("a message of chat put", annP, chat...)

	// Another thread muted anew: chat's counters stay as they are.
	other := []driver.Counter{mutedCounter(annP, "", "other", 1, 1), mutedCounter(annP, "billing", "other", 1, 1)}
	e.setPrefs(annP, threadsMuted("chat"), threadsMuted("chat", "other"), other...)
	e.wantMutedCounters("other muted too", annP, slices.Concat(chat, other)...)

	// Marks that mute no thread anew, at a stale version.
	devs := threadsMuted("chat", "other")
	devs.MutedGroups = []string{"devs"}
	if err := e.markPrefs(annP, threadsMuted("chat", "other"), devs, stale); err != nil {
		e.t.Fatalf("Mark(preferences: mute devs, at a stale version): %v", err)
	}
	e.wantPrefs("devs muted", annP, devs)
	e.wantMutedCounters("devs muted", annP, slices.Concat(chat, other)...)
	chatDevs := threadsMuted("chat")
	chatDevs.MutedGroups = []string{"devs"}
	if err := e.markPrefs(annP, devs, chatDevs, stale); err != nil {
		e.t.Fatalf("Mark(preferences: unmute other, at a stale version): %v", err)
	}
	e.wantPrefs("other unmuted", annP, chatDevs)
	e.wantMutedCounters("other unmuted", annP, chat...)
	if err := e.markPrefs(annP, chatDevs, driver.Preferences{}, stale); err != nil {
		e.t.Fatalf("Mark(preferences: back to the defaults, at a stale version): %v", err)
	}
	e.wantPrefs("back to the defaults", annP, driver.Preferences{})
	e.wantMutedCounters("back to the defaults", annP)
	e.put(e.threadMessage(annP, "billing", "chat"))
	e.wantMutedCounters("a message of chat put, unmuted", annP)

	// Muted anew: the counters given, nothing of the old ones.
	e.setPrefs(annP, driver.Preferences{}, threadsMuted("chat"), mutedCounter(annP, "", "chat", 7, 5))
	e.wantMutedCounters("chat muted again", annP, mutedCounter(annP, "", "chat", 7, 5))
	if err := e.markPrefs(annP, threadsMuted("chat"), driver.Preferences{Own: true}, stale); err != nil {
		e.t.Fatalf("Mark(preferences: none of her own, at a stale version): %v", err)
	}
	e.wantPrefs("none of her own", annP, driver.Preferences{Own: true})
	e.wantMutedCounters("none of her own", annP)
}

// testMutedThreadBadInput: a muted thread's counter that cannot be (with
// other tallies than Unread and Above, of a shared partition, with a
// group, no thread or a thread not a key, a Latest), or an Unread off a
// muted thread's counter, in the deltas of PutMessage, Mark or
// ApplyRemoval, the counters of a reset, or a preferences mark's Muted;
// a muted Above without a watermark mark; a preferences mark whose Muted
// names a thread it does not mute anew, one counter twice, another
// partition's counter, or a counter not muted; muted threads that are no
// keys, unsorted, repeated, more than MaxMutedThreads, or not the user's
// own: each is ErrInvalidInput, and nothing is written.
func testMutedThreadBadInput(e *env) {
	annP, bobP, pub := e.part("ann"), e.part("bob"), e.pub()
	e.setPrefs(annP, driver.Preferences{}, threadsMuted("chat"))
	d := e.threadMessage(annP, "billing", "chat")
	e.put(d)
	fresh := e.threadMessage(annP, "billing", "chat")
	st := e.stats(annP, e.clock.Now())
	before, entries := e.snapshot(), len(e.ledger(annP))
	other := []driver.Counter{mutedCounter(annP, "", "other", 1, 1), mutedCounter(annP, "billing", "other", 1, 1)}
	read := threadMark(d, driver.State{ReadAt: e.clock.Now()}, e.clock.Now())
	invalid := func(what string, err error) {
		e.t.Helper()
		if !errors.Is(err, driver.ErrInvalidInput) {
			e.t.Errorf("%s: %v, want ErrInvalidInput", what, err)
		}
	}
	for _, c := range []struct {
		what  string
		muted bool // f changes the muted counters, else the others
		f     func(*driver.Counter)
	}{
		{"a muted counter with Published", true, func(c *driver.Counter) { c.Published = 1 }},
		{"a muted counter with Read", true, func(c *driver.Counter) { c.Read = -1 }},
		{"a muted counter with snoozed tallies", true, func(c *driver.Counter) { c.Snoozed.Published = 1 }},
		{"a muted counter of a shared partition", true, func(c *driver.Counter) { c.Partition = pub }},
		{"a muted counter with a group", true, func(c *driver.Counter) { c.Group = "devs" }},
		{"a muted counter of no thread", true, func(c *driver.Counter) { c.Thread = "" }},
		{"a muted counter of a thread with '#'", true, func(c *driver.Counter) { c.Thread = "a#b" }},
		{"a muted counter with a Latest", true, func(c *driver.Counter) { c.Latest = fresh.Message.ID }},
		{"an Unread off a muted counter", false, func(c *driver.Counter) { c.Unread = 1 }},
	} {
		invalid("PutMessage with "+c.what, e.store.PutMessage(e.ctx, fresh, alterCounters(driver.PutDeltas(fresh), c.muted, c.f)))
		invalid("Mark with "+c.what, e.store.Mark(e.ctx, []driver.Mark{read}, alterCounters(driver.MarkDeltas(read), c.muted, c.f)))
		_, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: d, Deltas: alterCounters(driver.RemovalDeltasOf(d), c.muted, c.f), Delete: true, Now: e.clock.Now()})
		invalid("ApplyRemoval with "+c.what, err)
		r := driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: alterCounters(st.Counters, c.muted, c.f), Seen: st.Fence,
			Now: e.clock.Now(), Recounted: e.clock.Now(), Preferences: st.Preferences}
		invalid("Repair with "+c.what, e.store.Repair(e.ctx, annP, r))
		if c.muted {
			invalid("Mark(preferences) with "+c.what, e.markPrefs(annP, threadsMuted("chat"), threadsMuted("chat", "other"), st.Version, alterCounters(other, true, c.f)...))
		}
	}
	invalid("Mark with a muted Above and no watermark mark", e.store.Mark(e.ctx, []driver.Mark{read}, alterCounters(driver.MarkDeltas(read), true, func(c *driver.Counter) { c.Above = -1 })))
	invalid("Repair of a shared partition with a muted counter", e.store.Repair(e.ctx, pub, driver.Repair{Reset: true,
		Counters: []driver.Counter{{Partition: pub, Thread: "chat", Muted: true, Unread: 1}}, Now: e.clock.Now(), Recounted: e.clock.Now()}))
	invalid("Repair with a muted counter twice", e.store.Repair(e.ctx, annP, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters,
		Counters: append(slices.Clone(st.Counters), mutedCounter(annP, "", "chat", 1, 0)), Seen: st.Fence, Now: e.clock.Now(), Recounted: e.clock.Now(), Preferences: st.Preferences}))

	var many []string
	for i := range driver.MaxMutedThreads + 1 {
		many = append(many, fmt.Sprintf("t%03d", i))
	}
	chatDevs := threadsMuted("chat")
	chatDevs.MutedGroups = []string{"devs"}
	for _, c := range []struct {
		what     string
		from, to driver.Preferences
		muted    []driver.Counter
	}{
		{"Muted of a thread muted before", threadsMuted("chat"), threadsMuted("chat", "other"), slices.Concat(other, []driver.Counter{mutedCounter(annP, "", "chat", 1, 1)})},
		{"Muted of a thread not muted", threadsMuted("chat"), threadsMuted("chat", "other"), []driver.Counter{mutedCounter(annP, "", "x", 1, 1)}},
		{"Muted, no thread muted anew", threadsMuted("chat"), chatDevs, []driver.Counter{mutedCounter(annP, "", "chat", 1, 1)}},
		{"Muted, a thread unmuted", threadsMuted("chat"), driver.Preferences{}, []driver.Counter{mutedCounter(annP, "", "chat", 1, 1)}},
		{"a counter twice in Muted", threadsMuted("chat"), threadsMuted("chat", "other"), append(slices.Clone(other), mutedCounter(annP, "", "other", 2, 0))},
		{"Muted of another partition", threadsMuted("chat"), threadsMuted("chat", "other"), []driver.Counter{mutedCounter(bobP, "", "other", 1, 1)}},
		{"a counter in Muted not muted", threadsMuted("chat"), threadsMuted("chat", "other"), []driver.Counter{{Partition: annP, Thread: "other"}}},
		{"a muted thread with '#'", threadsMuted("chat"), threadsMuted("a#b", "chat"), nil},
		{"a muted thread with '?'", threadsMuted("chat"), threadsMuted("a?", "chat"), nil},
		{"an empty muted thread", threadsMuted("chat"), threadsMuted("", "chat"), nil},
		{"unsorted muted threads", threadsMuted("chat"), threadsMuted("other", "chat"), nil},
		{"a muted thread twice", threadsMuted("chat"), threadsMuted("chat", "chat"), nil},
		{"more than MaxMutedThreads", threadsMuted("chat"), threadsMuted(many...), nil},
		{"muted threads not her own", threadsMuted("chat"), driver.Preferences{MutedThreads: []string{"chat", "other"}}, nil},
		{"a From with a muted thread not a key", threadsMuted("a#b"), threadsMuted("chat"), nil},
	} {
		invalid("Mark(preferences) with "+c.what, e.markPrefs(annP, c.from, c.to, st.Version, c.muted...))
	}
	mk := driver.Mark{Key: driver.Key{Partition: annP}, Now: e.clock.Now(), Preferences: &driver.PreferencesChange{From: threadsMuted("chat"), To: threadsMuted("chat", "other")},
		Versioned: true, Version: st.Version, Muted: &driver.MutedReset{Threads: []string{"other"}}}
	invalid("Mark(preferences) with muted deltas", e.store.Mark(e.ctx, []driver.Mark{mk}, other))

	e.wantUnchanged("refused writes of muted counters", before)
	if got := e.stats(annP, e.clock.Now()).Version; got != st.Version {
		e.t.Errorf("refused writes moved the version from %d to %d", st.Version, got)
	}
	if got := len(e.ledger(annP)); got != entries {
		e.t.Errorf("refused writes left %d ledger entries, want %d", got, entries)
	}
}

// testMutedThreadRepair: a Repair that resets a user's counters writes the
// muted threads' counters among its Counters whose thread its
// Preferences mute, as given, and none of another thread; those it does
// not give are gone.
func testMutedThreadRepair(e *env) {
	annP := e.part("ann")
	e.setPrefs(annP, driver.Preferences{}, threadsMuted("chat"))
	e.put(e.threadMessage(annP, "billing", "chat"))
	e.put(e.threadMessage(annP, "billing", "other"))
	e.wantMutedCounters("two messages put", annP, mutedCounter(annP, "", "chat", 1, 1), mutedCounter(annP, "billing", "chat", 1, 1))
	reset := func(what string, muted ...driver.Counter) {
		e.t.Helper()
		st := e.stats(annP, e.clock.Now())
		var counters []driver.Counter
		for _, c := range st.Counters {
			if !c.Muted {
				counters = append(counters, c)
			}
		}
		r := driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: append(counters, muted...), Seen: st.Fence,
			Now: e.clock.Now(), Recounted: e.clock.Now(), Preferences: st.Preferences}
		if err := e.store.Repair(e.ctx, annP, r); err != nil {
			e.t.Fatalf("Repair(reset, %s): %v", what, err)
		}
	}
	reset("chat muted", mutedCounter(annP, "", "chat", 5, 2), mutedCounter(annP, "", "other", 1, 1), mutedCounter(annP, "billing", "other", 1, 1))
	e.wantPrefs("a reset", annP, threadsMuted("chat"))
	e.wantMutedCounters("a reset, chat muted", annP, mutedCounter(annP, "", "chat", 5, 2))
	e.setPrefs(annP, threadsMuted("chat"), driver.Preferences{})
	reset("nothing muted", mutedCounter(annP, "", "chat", 1, 1), mutedCounter(annP, "billing", "chat", 1, 1))
	e.wantMutedCounters("a reset, nothing muted", annP)
}

// alterCounters returns cs with f applied to each muted thread's counter if
// muted, else to each other counter.
func alterCounters(cs []driver.Counter, muted bool, f func(*driver.Counter)) []driver.Counter {
	out := slices.Clone(cs)
	for i := range out {
		if out[i].Muted == muted {
			f(&out[i])
		}
	}
	return out
}

// testMutedThreadReset: a watermark mark with Versioned and a
// driver.MutedReset sets the counters of its threads anew, exactly those
// it gives (a category it leaves out at zero), and leaves the other
// muted threads' as they are. A thread the partition does not mute is
// ErrStateChanged, a version not the partition's too; a reset off a
// versioned watermark mark, or of threads or counters that cannot be, or
// with deltas of its threads, is ErrInvalidInput; each writes nothing.
func testMutedThreadReset(e *env) {
	annP, bobP := e.part("ann"), e.part("bob")
	e.setPrefs(annP, driver.Preferences{}, threadsMuted("chat", "other"))
	for _, r := range []driver.Record{e.threadMessage(annP, "billing", "chat"), e.threadMessage(annP, "news", "chat"), e.threadMessage(annP, "", "other")} {
		e.put(r)
	}
	e.wantMutedCounters("three messages put", annP, mutedCounter(annP, "", "chat", 2, 2), mutedCounter(annP, "billing", "chat", 1, 1),
		mutedCounter(annP, "news", "chat", 1, 1), mutedCounter(annP, "", "other", 1, 1))
	e.clock.Advance(time.Second)
	now := e.clock.Now()
	seen := func(version int64, r *driver.MutedReset) driver.Mark {
		return driver.Mark{Key: driver.Key{Partition: annP}, Now: now, Seen: driver.SeenAt(now), Versioned: true, Version: version, Muted: r}
	}
	chat := []driver.Counter{mutedCounter(annP, "", "chat", 2, 0), mutedCounter(annP, "billing", "chat", 1, 0)}
	good := &driver.MutedReset{Threads: []string{"chat"}, Counters: chat}
	st := e.stats(annP, now)
	before, entries := e.snapshot(), len(e.ledger(annP))
	for _, c := range []struct {
		what   string
		mk     driver.Mark
		deltas []driver.Counter
		want   error
	}{
		{"a thread not muted", seen(st.Version, &driver.MutedReset{Threads: []string{"chat", "x"}, Counters: chat}), nil, driver.ErrStateChanged},
		{"another version", seen(st.Version+1, good), nil, driver.ErrStateChanged},
		{"no version", func() driver.Mark { mk := seen(0, good); mk.Versioned = false; return mk }(), nil, driver.ErrInvalidInput},
		{"a fence", func() driver.Mark { mk := seen(0, good); mk.Versioned, mk.Fence = false, true; return mk }(), nil, driver.ErrInvalidInput},
		{"no thread", seen(st.Version, &driver.MutedReset{}), nil, driver.ErrInvalidInput},
		{"unsorted threads", seen(st.Version, &driver.MutedReset{Threads: []string{"other", "chat"}}), nil, driver.ErrInvalidInput},
		{"a thread twice", seen(st.Version, &driver.MutedReset{Threads: []string{"chat", "chat"}}), nil, driver.ErrInvalidInput},
		{"a thread not a key", seen(st.Version, &driver.MutedReset{Threads: []string{"a#b"}}), nil, driver.ErrInvalidInput},
		{"a counter of a thread not named", seen(st.Version, &driver.MutedReset{Threads: []string{"chat"}, Counters: []driver.Counter{mutedCounter(annP, "", "other", 0, 0)}}), nil, driver.ErrInvalidInput},
		{"a counter twice", seen(st.Version, &driver.MutedReset{Threads: []string{"chat"}, Counters: append(slices.Clone(chat), chat[0])}), nil, driver.ErrInvalidInput},
		{"a counter of another partition", seen(st.Version, &driver.MutedReset{Threads: []string{"chat"}, Counters: []driver.Counter{mutedCounter(bobP, "", "chat", 1, 0)}}), nil, driver.ErrInvalidInput},
		{"a counter not muted", seen(st.Version, &driver.MutedReset{Threads: []string{"chat"}, Counters: []driver.Counter{{Partition: annP, Thread: "chat"}}}), nil, driver.ErrInvalidInput},
		{"a delta of a thread it resets", seen(st.Version, good), []driver.Counter{mutedCounter(annP, "news", "chat", 0, -1)}, driver.ErrInvalidInput},
		{"a record mark with it", func() driver.Mark {
			r := e.threadMessage(annP, "", "chat")
			mk := threadMark(r, driver.State{ReadAt: now}, now)
			mk.Muted = good
			return mk
		}(), nil, driver.ErrInvalidInput},
	} {
		if err := e.store.Mark(e.ctx, []driver.Mark{c.mk}, c.deltas); !errors.Is(err, c.want) {
			e.t.Errorf("Mark(muted reset, %s) = %v, want %v", c.what, err, c.want)
		}
	}
	e.wantUnchanged("refused muted resets", before)
	if got := e.stats(annP, now).Version; got != st.Version {
		e.t.Errorf("refused muted resets moved the version from %d to %d", st.Version, got)
	}
	if got := len(e.ledger(annP)); got != entries {
		e.t.Errorf("refused muted resets left %d ledger entries, want %d", got, entries)
	}

	// The reset, with the other thread's Above and the total's as deltas.
	deltas := []driver.Counter{{Partition: annP, Above: -3}, {Partition: annP, Category: "billing", Above: -1}, {Partition: annP, Category: "news", Above: -1},
		mutedCounter(annP, "", "other", 0, -1)}
	if err := e.store.Mark(e.ctx, []driver.Mark{seen(st.Version, good)}, deltas); err != nil {
		e.t.Fatalf("Mark(muted reset): %v", err)
	}
	e.wantMutedCounters("chat reset, news left out", annP, chat[0], chat[1], mutedCounter(annP, "", "other", 1, 0))
	if got := e.stats(annP, now); got.Version == st.Version || got.Seen != driver.SeenAt(now) {
		e.t.Errorf("a muted reset left version %d (was %d), watermark %q", got.Version, st.Version, got.Seen)
	}
}

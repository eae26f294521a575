package inbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stak/inbox/driver"
)

// unseenPage is the page size of the reads of a partition's records
// above a watermark (MarkSeen's, of the records it resets Above from) or
// of a thread (SetPreferences', of a thread it mutes or unmutes).
const unseenPage = 500

// seenCacheSize bounds the users whose seen watermark an Inbox remembers.
const seenCacheSize = 1 << 14

// maxClockSkew bounds how far the clocks of the processes that publish
// may run ahead of each other: a message whose ID is further ahead of a
// reader's clock than this, and due, is taken for a scheduled one (it is
// not listed until the reader's clock is within the bound of it).
const maxClockSkew = time.Minute

// IDAt returns the greatest message ID of time t: every message published
// at or before t (by the publishing process's clock, to the millisecond)
// has an ID at most IDAt(t). Use it for ListOptions.UpTo to mean "up to a
// time".
func IDAt(t time.Time) string {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(t)) // fails only after the year 10889
	for i := 6; i < len(id); i++ {
		id[i] = 0xff
	}
	return id.String()
}

// SeenAt returns the seen watermark MarkSeen sets at t: the greatest
// message ID of t's second, so that every message published in that
// second counts as seen.
func SeenAt(t time.Time) string { return driver.SeenAt(t) }

// MarkSeen marks everything in u's feed up to now seen: it raises u's seen
// watermark, in one atomic write whatever the number of messages.
// Counts.Unseen counts the unread messages above the watermark; reading a
// message, or archiving or deleting it, takes it out too. It reports
// whether the watermark moved (false if u marked seen within the same
// second, or a concurrent call moved it further).
//
// The watermark ends the second of the call (SeenAt): a message published
// in that second, before or after the call, counts as seen, and Unseen is
// counted from per-second counts. A message counts as seen by its ID,
// which carries the clock of the process that published it: a message
// published by a process whose clock is behind, within that lag of the
// call, counts as seen.
//
// It costs three round trips: a read of u's stats, then of u's records
// above the new watermark (those a publisher's clock ahead of this one's,
// by at most a minute, or one whose clock passed the second of the call,
// put there: usually none), then one transaction that raises the
// watermark and sets anew the count of unread messages above it
// (Counter.Above), if no other write changed u's counters since the
// stats were read (else it reads again). The records are read after the
// stats, so that a write the records miss changes the version the
// transaction is conditional on: read beside them, the stats could hold
// the Above of a record published after the records were read, which the
// new count would leave out.
func (ib *Inbox) MarkSeen(ctx context.Context, u User) (_ bool, err error) {
	defer ib.observe(&ctx, "MarkSeen", u.Scope, u.ID).end(&err)
	if err := u.Validate(); err != nil {
		return false, err
	}
	p := u.Partition()
	for range markAttempts {
		t := ib.clock()
		now, w := ib.now(), SeenAt(t)
		st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Now: now})
		if err != nil {
			return false, err
		}
		if st.Seen >= w {
			ib.seen.put(p, st.Fence)
			return false, nil
		}
		// After the stats: a record written since is in both, or changes
		// the version the mark below is conditional on.
		recs, err := ib.recordsBetween(ctx, p, w, IDAt(t.Add(maxClockSkew)))
		if err != nil {
			return false, err
		}
		deltas, muted := aboveReset(p, st, recs, w, IDAt(t.Add(maxClockSkew)))
		mark := driver.Mark{Key: driver.Key{Partition: p}, Now: now, Seen: w, Versioned: true, Version: st.Version, Muted: muted}
		err = ib.store.Mark(ctx, []driver.Mark{mark}, deltas)
		switch {
		case err == nil:
			ib.seen.put(p, w)
			return true, nil
		case !errors.Is(err, driver.ErrStateChanged):
			return false, unknownOutcome(err)
		}
	}
	return false, fmt.Errorf("inbox: marking %s seen: the user's counters kept changing: %w", u.ID, ErrConflict)
}

// aboveReset returns the changes to p's Above that make it count, from
// what it counts in st, the records above the new watermark w: recs, p's
// records between w and bound; the expired records above w among those
// whose removals are pending (st.Expired: the Query misses those gone);
// and the not yet due records above bound that an earlier version
// scheduled (st.Pending). A record the library keeps a timed entry of
// (scheduled, beyond bound) adds nothing, and is not read. The muted
// threads whose Above changes get their counters anew instead, in the
// returned reset (nil if none; see driver.MutedReset): a change to each
// of their counters would make a write as large as the categories of
// their messages.
func aboveReset(p Partition, st driver.Stats, recs []driver.Record, w, bound string) ([]driver.Counter, *driver.MutedReset) {
	total := driver.Counter{Partition: p}
	want := map[string]driver.Counter{total.SK(): total} // by key, with the Above wanted
	add := func(r driver.Record) {
		for _, d := range driver.AboveCounters(r) {
			if !st.Preferences.Keeps(d) || !driver.Covering(st.Counters, d) {
				continue // kept only while its thread is muted, or its position covers the record
			}
			c := want[d.SK()]
			c.Partition, c.Category, c.Group, c.Thread, c.Muted, c.Covered = p, d.Category, d.Group, d.Thread, d.Muted, d.Covered
			c.Above += d.Above
			want[d.SK()] = c
		}
	}
	read := map[string]bool{}
	for _, r := range recs {
		read[r.Message.ID] = true
		add(r)
	}
	for _, e := range st.Expired {
		if e.Message.ID > w && !read[e.Message.ID] {
			add(e)
		}
	}
	for _, e := range st.Pending {
		if e.Message.ID > bound {
			add(e)
		}
	}
	// The Above each counter keeps: the total's, each category's and
	// group's, and each muted thread's (with its Unread).
	have := map[string]driver.Counter{}
	for _, c := range st.Counters {
		if c.Thread == "" || c.Covered || c.Muted && st.Preferences.Keeps(c) {
			have[c.SK()] = c
			if _, ok := want[c.SK()]; !ok {
				want[c.SK()] = driver.Counter{Partition: p, Category: c.Category, Group: c.Group, Thread: c.Thread, Muted: c.Muted, Covered: c.Covered}
			}
		}
	}
	var out []driver.Counter
	reset := map[string]bool{} // the muted threads whose Above changes
	for k, c := range want {
		switch d := c.Above - have[k].Above; {
		case c.Muted:
			reset[c.Thread] = reset[c.Thread] || d != 0
		case d != 0 || k == total.SK():
			c.Above = d
			out = append(out, c)
		}
	}
	var r *driver.MutedReset
	for k, c := range want {
		if c.Muted && reset[c.Thread] {
			if r == nil {
				r = &driver.MutedReset{}
			}
			c.Unread = have[k].Unread
			r.Counters = append(r.Counters, c)
		}
	}
	if r != nil {
		for t, changed := range reset {
			if changed {
				r.Threads = append(r.Threads, t)
			}
		}
		slices.Sort(r.Threads)
		slices.SortFunc(r.Counters, func(a, b driver.Counter) int { return strings.Compare(a.SK(), b.SK()) })
	}
	return driver.MergeCounters(out), r
}

// recordsBetween returns p's records whose IDs lie above after and below
// before, expired ones too.
func (ib *Inbox) recordsBetween(ctx context.Context, p Partition, after, before string) ([]driver.Record, error) {
	var out []driver.Record
	q := driver.Query{Partition: p, After: after, Before: before, Limit: unseenPage}
	for {
		res, err := ib.store.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Records...)
		if res.Next == "" || res.Next <= after {
			return out, nil
		}
		q.Before = res.Next
	}
}

// seenCache remembers, for each of up to seenCacheSize users, the seen
// watermark the user's Above is kept for (driver.Stats.Fence), which
// marks are fenced with (see applyMarks). Watermarks only rise, so a
// stale one costs a fence that fails and is tried again. It is safe for
// concurrent use.
type seenCache struct {
	mu sync.Mutex
	m  map[Partition]string
}

// fence returns the watermark p's Above is kept for, as remembered; ok is
// false if none is.
func (c *seenCache) fence(p Partition) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.m[p]
	return f, ok
}

// put remembers fence for p, if it is above the one remembered.
func (c *seenCache) put(p Partition, fence string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[Partition]string)
	}
	old, ok := c.m[p]
	if ok {
		fence = max(old, fence)
	}
	if !ok && len(c.m) >= seenCacheSize {
		for k := range c.m { // forget one at random
			delete(c.m, k)
			break
		}
	}
	c.m[p] = fence
}

// fenceSeen returns the watermark the Above of user partition p is kept
// for: remembered, or read (Store.Stats).
func (ib *Inbox) fenceSeen(ctx context.Context, p Partition) (string, error) {
	if w, ok := ib.seen.fence(p); ok {
		return w, nil
	}
	st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Now: ib.now()})
	if err != nil {
		return "", err
	}
	ib.seen.put(p, st.Fence)
	return st.Fence, nil
}

// applyMarks applies marks, records of user partition p (or one shared
// record's fold), with deltas and the changes they make to p's Above
// (driver.AboveDeltas), fenced by the watermark Above is kept for: the
// one remembered, or, when the Store reports another (a
// *driver.SeenError), that one, and again. A Store's error that does not
// say the marks were refused matches ErrOutcomeUnknown (unknownOutcome).
func (ib *Inbox) applyMarks(ctx context.Context, p Partition, marks []driver.Mark, deltas []driver.Counter) error {
	if p.IsShared() {
		return unknownOutcome(ib.store.Mark(ctx, marks, deltas))
	}
	w, err := ib.fenceSeen(ctx, p)
	if err != nil {
		return err
	}
	for range markAttempts {
		all, ds := marks, deltas
		fenced := false
		for _, mk := range marks {
			if a := driver.AboveDeltas(mk, w); len(a) > 0 {
				ds, fenced = append(ds, a...), true
			}
		}
		if fenced {
			all = append([]driver.Mark{{Key: driver.Key{Partition: p}, Now: ib.now(), Seen: w, Fence: true}}, marks...)
			ds = driver.MergeCounters(ds)
		}
		err := ib.store.Mark(ctx, all, ds)
		var moved *driver.SeenError
		if !errors.As(err, &moved) {
			return unknownOutcome(err)
		}
		w = moved.Seen
		ib.seen.put(p, w)
	}
	return fmt.Errorf("inbox: the seen watermark of %s kept moving: %w", p.PK(), ErrConflict)
}

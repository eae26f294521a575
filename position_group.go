package inbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/stak/inbox/driver"
	"golang.org/x/sync/errgroup"
)

// A user's read position in a group chat (a thread of a group's
// messages) marks it read in one write, as in a one-to-one chat, whatever
// the number of its unread messages, though each message is stored once,
// in the group's partition, and read by each member through her receipt
// of it (see driver.Counter.Covered):
//
//   - Every message of the thread below the position's bound reads as
//     read, at the time of the move that covered it, unless her receipt
//     of it says otherwise (it archives, deletes or snoozes it, or reads
//     it at its own time): a message with no receipt, or a receipt that
//     leaves it unread, is read.
//   - Her counts take the covered messages from the group's time buckets,
//     which count the thread's messages below the bound whatever their
//     number (DayBucket.Threads), less her receipts of them that leave
//     them otherwise, which her covered counters tally as the receipts
//     are written and removed. Neither term moves when a message expires
//     or is removed in the group's partition but by what its removal
//     does, so nothing is written out: the position stands for good, on
//     her counter of the group, and costs each Counts the group's hour
//     bucket of the bound's hour, while that hour holds the thread's
//     messages.
//   - The bound lies just above the newest message the move read: a
//     message published after it is unread, in its second too (the
//     buckets count the seconds before the bound's; the thread's messages
//     of its second below it are read from the group's thread index). A
//     message whose ID falls below the bound after the move (a
//     publisher's clock behind) reads as read, as below a seen watermark.
//   - A write of her receipt of a covered message that would leave it
//     unread but for the position (an archive) writes the read the
//     position lends (the Store refuses it otherwise: driver.CoveredError).
//   - Past driver.MaxPositionSteps moves, the oldest move's messages read
//     at the next move's time.

// groupCover is what one of a user's read positions in a group's thread
// covers at an instant: the messages it reads as read, overall ("") and
// by category, and those of them above her seen watermark.
type groupCover struct {
	read, above catSum
}

// groupCovers returns what a user's read positions in groups' threads
// cover at now, by group and thread, for the groups of parts
// (her partition first, then the shared ones: see User.Shared), whose
// stats are stats, read for now, where dead are her receipts of
// broadcasts removed before they expired: see the doc above. The buckets
// count the thread's messages of the seconds before the bound's; those
// of its second below the bound are read from the group's thread index
// (a second's, if the buckets count any there). It reads the hour bucket
// of each position's bound, of the second before it (the previous hour's,
// for a bound in an hour's first second), and of her watermark, where
// their hours hold records, then those seconds, in parallel. ok is false if an hour bucket
// was read at another instant than its day bucket: the caller reads
// again.
func (ib *Inbox) groupCovers(ctx context.Context, v *view, parts []Partition, stats []driver.Stats, dead []driver.Record, now time.Time) (map[driver.GroupThread]*groupCover, bool, error) {
	own := stats[0]
	positions := driver.GroupPositions(own.Counters)
	if len(positions) == 0 {
		return nil, true, nil
	}
	index := map[string]int{}
	for i, p := range parts {
		if i > 1 {
			index[p.Group] = i
		}
	}
	watermark := own.Seen
	if own.Fence != own.Seen {
		watermark = "" // an earlier version's: Counts counts the unseen one by one
	}
	type hourKey struct {
		i int
		h time.Time
	}
	hours := map[hourKey]*driver.HourBucket{}
	need := func(i int, seen string) {
		if t, err := driver.BucketTime(seen); err == nil && hourHolds(stats[i].Days, t) {
			hours[hourKey{i, driver.HourOf(t)}] = nil
		}
	}
	for k, pos := range positions {
		i, ok := index[k.Group]
		if !ok {
			continue
		}
		if !stats[i].Bucketed {
			return nil, false, fmt.Errorf("inbox: the read position of %s in thread %q of group %s: the group's time buckets do not count its messages (recount it): %w", parts[0].User, k.Thread, k.Group, ErrConflict)
		}
		need(i, pos.Bound)
		if bt, err := driver.BucketTime(pos.Bound); err == nil {
			// The end of the second before the bound's, which the buckets
			// are counted above: in the hour before the bound's, for a
			// bound in an hour's first second.
			need(i, driver.SeenAt(bt.Add(-time.Second)))
		}
		if watermark != "" && watermark < pos.Bound {
			need(i, watermark)
		}
	}
	hourOf := func(i int, id string) *driver.HourBucket {
		t, err := driver.BucketTime(id)
		if err != nil {
			return nil
		}
		return hours[hourKey{i, driver.HourOf(t)}]
	}
	keys := slices.Collect(maps.Keys(hours))
	read := make([]*driver.HourBucket, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	for j, k := range keys {
		g.Go(func() error {
			st, err := ib.store.Stats(gctx, driver.StatsQuery{Partition: parts[k.i], Hour: k.h})
			read[j] = st.Hour
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, false, err
	}
	for j, k := range keys {
		hours[k] = read[j]
	}
	// The thread's messages of the bound's second below it, where the
	// buckets count any in that second.
	partial := map[driver.GroupThread][]driver.Record{}
	g, gctx = errgroup.WithContext(ctx)
	var mu sync.Mutex
	for k, pos := range positions {
		i, ok := index[k.Group]
		if !ok {
			continue
		}
		t, err := driver.BucketTime(pos.Bound)
		if err != nil {
			return nil, false, err
		}
		if hb := hourOf(i, pos.Bound); hb == nil || hb.Threads == nil || secondOf(hb, k.Thread, t) == 0 {
			continue
		}
		g.Go(func() error {
			recs, err := ib.queryAll(gctx, driver.Query{Partition: parts[i], Thread: k.Thread, After: driver.SeenAt(t.Add(-time.Second)), Before: pos.Bound, Now: now, Limit: coverPage})
			mu.Lock()
			partial[k] = recs
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, false, err
	}
	out := map[driver.GroupThread]*groupCover{}
	for k, pos := range positions {
		i, ok := index[k.Group]
		if !ok {
			continue
		}
		st := stats[i]
		c := &groupCover{read: catSum{}, above: catSum{}}
		out[k] = c
		bt, _ := driver.BucketTime(pos.Bound)
		before := driver.SeenAt(bt.Add(-time.Second)) // the end of the second before the bound's
		// The thread's messages of the seconds before the bound's, and of
		// those above the watermark, by category, from the group's
		// buckets.
		cats := map[string]bool{"": true}
		for _, d := range st.Days {
			for s := range d.Threads {
				if s.Thread == k.Thread && s.Category != "" {
					cats[s.Category] = true
				}
			}
		}
		for _, cnt := range own.Counters {
			if cnt.Covered && cnt.Group == k.Group && cnt.Thread == k.Thread {
				cats[cnt.Category] = true
				c.read[cnt.Category] += cnt.Unread
				c.above[cnt.Category] += cnt.Above
			}
		}
		above := watermark != "" && watermark < pos.Bound
		for cat := range cats {
			s := driver.Slice{Thread: k.Thread, Category: cat}
			later, ok, err := driver.CountAboveIn(st.Days, hourOf(i, before), before, s)
			if err != nil || !ok {
				return nil, false, ib.staleBuckets(ctx, v, parts[i], err)
			}
			var all int64
			for _, d := range st.Days {
				for s, hs := range d.Threads {
					if s.Thread == k.Thread && (cat == "" || s.Category == cat) {
						for _, n := range hs {
							all += n
						}
					}
				}
			}
			c.read[cat] += all - later
			if above {
				unseen, ok, err := driver.CountAboveIn(st.Days, hourOf(i, watermark), watermark, s)
				if err != nil || !ok {
					return nil, false, ib.staleBuckets(ctx, v, parts[i], err)
				}
				c.above[cat] += unseen - later
			}
		}
		for _, r := range partial[k] {
			c.read.add(r.Message.Category, 1)
			if above {
				c.above.add(r.Message.Category, 1)
			}
		}
		// The thread's messages expired in the seconds before the
		// bound's, their removals pending: the buckets count them still
		// (the index read leaves those of its second out).
		for _, e := range st.Expired {
			if e.Message.Thread == k.Thread && e.Message.ID <= before {
				c.read.add(e.Message.Category, -1)
				if above && e.Message.ID > watermark {
					c.above.add(e.Message.Category, -1)
				}
			}
		}
		// Her receipts of messages gone (expired, their removals pending;
		// removed before they expired) still count in her covered
		// counters, as they do in the others until they go.
		gone := func(r driver.Record) {
			if !r.Receipt || r.Message.Audience.Group != k.Group || r.Message.Thread != k.Thread || !pos.Covers(r.Message.ID) {
				return
			}
			n := driver.AboveOf(r)
			c.read.add(r.Message.Category, -n)
			if above && r.Message.ID > watermark {
				c.above.add(r.Message.Category, -n)
			}
		}
		for _, e := range own.Expired {
			gone(e)
		}
		for _, r := range dead {
			gone(r)
		}
		for cat, n := range c.read {
			c.read[cat] = max(n, 0)
		}
		for cat, n := range c.above {
			c.above[cat] = max(n, 0)
		}
	}
	return out, true, nil
}

// secondOf returns the records of thread, of every category, that hb
// counts in t's second.
func secondOf(hb *driver.HourBucket, thread string, t time.Time) int64 {
	sec := int(t.Sub(hb.Hour) / time.Second)
	var n int64
	for s, secs := range hb.Threads {
		if s.Thread == thread {
			n += secs[sec]
		}
	}
	return n
}

// staleBuckets returns err, or, for an hour bucket read at another
// instant than its day bucket (err nil), renews the view's snapshot of
// p, which may be older than the hour bucket.
func (ib *Inbox) staleBuckets(ctx context.Context, v *view, p Partition, err error) error {
	if err == nil && v.c.fresh > 0 {
		return v.renew(ctx, p, nil)
	}
	return err
}

// groupCount is what threadTally reads of the messages of a thread to one
// of u's groups: how many are unread, the thread's last activity there
// (its counter's Latest: the greatest ID it ever counted), and whether
// the group's time buckets count its threads.
type groupCount struct {
	unread   int64
	latest   string
	bucketed bool
}

// markGroupThreadRead moves u's read position in thread of group's
// messages up to cover those below after ("" for all), and returns how
// many of them it reads (0, and nothing written, where the thread's
// messages are marked one by one instead: a group whose buckets do not
// count its threads yet). t is the thread's counts as threadTally read
// them, at u's version: the bound lies just above the thread's last
// activity they read (or above the newest message at or below after, if
// lower), so that the messages it covers are those they count, and the
// move is written on condition that her counter version is still
// theirs (else the counts are read again). It reads her receipts of the
// thread's messages above her position (what she marked, not the
// thread's history) and, with after, the thread's messages above the
// bound (those the counts hold beyond the view), and writes one
// transaction.
func (ib *Inbox) markGroupThreadRead(ctx context.Context, u User, group, thread, after string, t *threadCount) (int, error) {
	p := u.Partition()
	gp := u.Scope.Group(group)
	for attempt := range markAttempts {
		if attempt > 0 {
			fresh, err := ib.threadTally(ctx, u, thread)
			if err != nil {
				return 0, err
			}
			t = &fresh
		}
		gc, st := t.groups[group], t.own
		if !gc.bucketed || gc.latest == "" || gc.unread <= 0 {
			return 0, nil // counted one by one until the group is recounted; or none unread
		}
		bound, err := idAfter(gc.latest)
		if err != nil || bound == "" {
			return 0, fmt.Errorf("inbox: a position above %s: %w", gc.latest, ErrInvalidInput)
		}
		if after != "" && after < bound {
			bound = after // up to the view's newest message
		}
		from := driver.PositionFor(st.Counters, group, thread)
		if from.Bound >= bound {
			return 0, nil
		}
		lo := "" // the IDs above it are above the position
		if from.Bound != "" {
			lo = idBefore(from.Bound)
		}
		// Her receipts of the thread's messages above her position, and,
		// where the bound is below the thread's last activity, the
		// thread's messages above it, at once.
		var receipts, above []driver.Record
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() (err error) {
			receipts, err = ib.queryAll(gctx, driver.Query{Partition: p, Thread: thread, After: lo, Limit: coverPage})
			return err
		})
		if bound <= gc.latest {
			g.Go(func() (err error) {
				above, err = ib.queryAll(gctx, driver.Query{Partition: gp, Thread: thread, After: idBefore(bound), Now: t.now, Limit: coverPage})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return 0, err
		}
		// Her receipts of the group's messages of the thread, stored or
		// expired with their removals pending (as their removals would
		// take them out of the covered counters), by ID.
		mine := map[string]driver.Record{}
		for _, r := range receipts {
			if r.Receipt && r.Message.Audience.Group == group {
				mine[r.Message.ID] = r
			}
		}
		for _, e := range st.Expired {
			if _, ok := mine[e.Message.ID]; !ok && e.Receipt && e.Message.Audience.Group == group && e.Message.Thread == thread && e.Message.ID > lo {
				mine[e.Message.ID] = e
			}
		}
		var covered []driver.Record
		for id, r := range mine {
			if id < bound {
				covered = append(covered, r)
			}
		}
		// What the counts hold unread above the bound is not read.
		read := gc.unread
		for _, m := range above {
			if r, ok := mine[m.Message.ID]; m.Message.ID >= bound && (!ok || r.Message.ReadAt.IsZero() && driver.AboveOf(r) == 0) {
				read--
			}
		}
		to := from.Raised(bound, t.now)
		if steps, _ := from.Steps(); len(steps) >= driver.MaxPositionSteps {
			// The oldest move's messages read at the next one's time.
			to = driver.Position{Bound: bound, At: t.now, Earlier: driver.EncodeSteps(steps[1:])}
		}
		mk := driver.Mark{Key: driver.Key{Partition: p}, Now: t.now, Versioned: true, Version: st.Version, Cover: &driver.CoverChange{Thread: thread, Group: group, From: from, To: to}}
		err = ib.store.Mark(ctx, []driver.Mark{mk}, driver.MergeCounters(coverDeltas(covered, st.Fence)))
		switch {
		case err == nil:
			return int(max(read, 0)), nil
		case errors.Is(err, driver.ErrUnsupported):
			return 0, nil
		case !errors.Is(err, driver.ErrStateChanged):
			return 0, unknownOutcome(err)
		}
	}
	return 0, fmt.Errorf("inbox: marking thread %s of group %s read for %s: the user's counters kept changing: %w", thread, group, u.ID, ErrConflict)
}

// queryAll returns every record q selects, page by page.
func (ib *Inbox) queryAll(ctx context.Context, q driver.Query) ([]driver.Record, error) {
	var out []driver.Record
	for {
		res, err := ib.store.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Records...)
		if res.Next == "" {
			return out, nil
		}
		q.Before = res.Next
	}
}

// lending returns the read time u's read position in the thread of rec,
// a group's message, lends it where receipt, her receipt of it (nil if
// none), leaves it unread (lentRead); zero if none does. It reads her
// positions in rec's group only for a message of a group's thread.
func (ib *Inbox) lending(ctx context.Context, u User, rec driver.Record, receipt *driver.Record) (time.Time, error) {
	if !rec.Partition.IsShared() || rec.Partition.IsPublic() || rec.Message.Thread == "" {
		return time.Time{}, nil
	}
	st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: u.Partition(), Keys: []driver.Counter{{Group: rec.Partition.Group}}})
	if err != nil {
		return time.Time{}, err
	}
	return lentRead(rec, receipt, driver.GroupPositions(st.Counters)), nil
}

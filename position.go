package inbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stak/inbox/driver"
	"golang.org/x/sync/errgroup"
)

// coverPage is the page of the reads of the messages a position covers:
// a Store may return fewer (DynamoDB, 1 MB of items).
const coverPage = 1000

// maxPositions is the most read positions a user's partition holds at
// once (see Inbox.MarkAllRead): each is a counter on her total, read by
// every Counts.
const maxPositions = 8

// markThreadRead moves u's read position in her direct messages of
// thread so that it covers those unread below after ("" for all), and
// returns how many it reads. A standing position moves up, keeping its
// earlier moves (driver.Position.Raised); one of MaxPositionSteps moves,
// or a new one past maxPositions threads, has the oldest written out
// first (see writeOut).
//
// The position covers every unread message below it, so the covered
// counters it writes count them all: those the thread index holds,
// expired or not, and those TTL deleted whose removal the stream has not
// accounted yet (their ledger entries). It reads u's stats, then the
// thread's counter (how many there are: the pages stop there, without
// reading the thread's read history) beside its records, and writes on
// condition that her counter version is still the stats': a write that
// came since, which the reads might miss, fails it, and it reads again.
func (ib *Inbox) markThreadRead(ctx context.Context, u User, thread, after string) (int, error) {
	p := u.Partition()
	for range markAttempts {
		now := ib.now()
		st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Now: now})
		if err != nil {
			return 0, err
		}
		positions := driver.Positions(st.Counters)
		from, ok := positions[thread]
		if steps, _ := from.Steps(); ok && len(steps) >= driver.MaxPositionSteps || !ok && len(positions) >= maxPositions {
			switch err := ib.writeOutOldest(ctx, u, positions, thread); {
			case errors.Is(err, errPositionStands):
				// It cannot be dropped yet: the messages are marked one
				// by one instead (see MarkAllRead's bulk).
				return 0, nil
			case err != nil:
				return 0, err
			}
			continue
		}
		recs, whole, err := ib.coverable(ctx, p, thread, from.Bound, after, st, true)
		if err != nil {
			return 0, err
		}
		if len(recs) == 0 || !whole {
			// None, or the thread's counter counts unread messages the
			// read did not find (one another program marked read, its
			// change not yet seen by the stream handler, whose write
			// would then take it out of the covered counters; one deleted
			// behind the library's back): marked one by one instead.
			return 0, nil
		}
		bound, err := idAfter(recs[0].Message.ID)
		if err != nil || bound == "" {
			return 0, fmt.Errorf("inbox: a position above %s: %w", recs[0].Message.ID, ErrInvalidInput)
		}
		to := from.Raised(bound, now)
		var deltas []driver.Counter
		for _, r := range recs {
			for _, d := range driver.CoveredCounters(r) {
				d.Of = ""
				if r.Message.ID > st.Fence {
					d.Above = d.Unread
				}
				deltas = append(deltas, d)
			}
		}
		// Versioned, the mark fences the Above of the deltas: the
		// watermark they were computed for stands.
		mk := driver.Mark{Key: driver.Key{Partition: p}, Now: now, Versioned: true, Version: st.Version, Cover: &driver.CoverChange{Thread: thread, From: from, To: to}}
		err = ib.store.Mark(ctx, []driver.Mark{mk}, driver.MergeCounters(deltas))
		switch {
		case err == nil:
			return countLive(recs, now), nil
		case errors.Is(err, driver.ErrUnsupported):
			// A Store that keeps no read positions: the messages are
			// marked one by one (see MarkAllRead's bulk).
			return 0, nil
		case !errors.Is(err, driver.ErrStateChanged):
			return 0, unknownOutcome(err)
		}
	}
	return 0, fmt.Errorf("inbox: marking thread %s read for %s: the user's counters kept changing: %w", thread, u.ID, ErrConflict)
}

// countLive returns how many of recs have not expired at now.
func countLive(recs []driver.Record, now time.Time) int {
	n := 0
	for _, r := range recs {
		if now.Before(r.Message.ExpiresAt) {
			n++
		}
	}
	return n
}

// coverable returns, newest first, the direct messages of thread in
// partition p (as its stats st were read) from covered ("": the oldest)
// up to below after ("": all) that a position would cover
// (driver.AboveOf counts them: unread, not archived nor deleted, not
// hidden), expired or not: the thread index's, and the ledger entries of
// those whose removal is pending. It reads the thread's counter by key
// beside the first page, and stops once it holds as many as the counter
// counts, less those covered already (those below after aside, which it
// pages through).
//
// With whole, it reads the thread's unread messages above after too (so
// that the read stops as the counter says, with UpTo as without), and
// reports whether it found every unread message the thread's counter
// counts above covered: a message the counter counts unread that the
// unread read misses is one whose marks another program changed (read),
// the stream handler not having seen it yet, or one gone with its removal
// pending; a position would not count it, yet cover it.
func (ib *Inbox) coverable(ctx context.Context, p Partition, thread, covered, after string, st driver.Stats, whole bool) (_ []driver.Record, found_ bool, _ error) {
	found := map[string]driver.Record{}
	for _, e := range st.Expired {
		if !e.Receipt && e.Message.Thread == thread && (whole || after == "" || e.Message.ID < after) && driver.AboveOf(e) > 0 {
			found[e.Message.ID] = e
		}
	}
	var already int64 // those a position covers
	for _, c := range st.Counters {
		if c.Covered && c.Thread == thread && c.Category == "" {
			already = c.Unread
		}
	}
	var unread int64 = -1 // the thread's, as its counter counts them
	q := driver.Query{Partition: p, Thread: thread, UnreadOnly: true, Archived: driver.NotArchived, Before: after, Limit: coverPage}
	if whole {
		q.Before = ""
	}
	if covered != "" {
		// The messages covered already are below covered, and unread as
		// stored: the read starts above them, not through them.
		q.After = idBefore(covered)
	}
	for first := true; ; first = false {
		var res driver.QueryResult
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() (err error) { res, err = ib.store.Query(gctx, q); return err })
		if first {
			g.Go(func() error {
				c, err := ib.store.Stats(gctx, driver.StatsQuery{Partition: p, Keys: []driver.Counter{{Thread: thread}}})
				for _, t := range c.Counters {
					if t.Thread == thread && !t.Covered && !t.Muted {
						n := newTally(t)
						unread = n.Unread
					}
				}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, false, err
		}
		for _, r := range res.Records {
			if !r.Receipt && r.Message.Thread == thread && driver.AboveOf(r) > 0 {
				found[r.Message.ID] = r
			}
		}
		above := int64(0) // found above those covered already
		for id := range found {
			if id >= covered {
				above++
			}
		}
		if res.Next == "" || (whole || after == "") && unread >= 0 && above >= unread-already || covered != "" && res.Next < covered {
			found_ = !whole || unread >= 0 && above >= unread-already
			break
		}
		q.Before = res.Next
	}
	out := make([]driver.Record, 0, len(found))
	for id, r := range found {
		if (after == "" || id < after) && id >= covered {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b driver.Record) int { return strings.Compare(b.Message.ID, a.Message.ID) })
	return out, found_, nil
}

// writeOutOldest writes out u's read position in thread if it has one,
// else her oldest (positions, as read), see writeOut.
func (ib *Inbox) writeOutOldest(ctx context.Context, u User, positions map[string]driver.Position, thread string) error {
	if _, ok := positions[thread]; !ok {
		var oldest driver.Position
		for t, pos := range positions {
			if oldest.IsZero() || pos.At.Before(oldest.At) || pos.At.Equal(oldest.At) && t < thread {
				oldest, thread = pos, t
			}
		}
	}
	return ib.writeOut(ctx, u, thread)
}

// errPositionStands is writeOut's error when the position covers a
// message that is gone without being expired (deleted behind the
// library's back), whose removal the stream has not accounted: it stands
// until then.
var errPositionStands = fmt.Errorf("inbox: a read position covers a message whose removal the stream has not accounted yet: %w", ErrConflict)

// writeOut writes u's read position in thread on each message it covers
// (a mark that reads it, at the position's time: Counts and List show the
// same before and after), then drops the position, taking out of its
// counters the expired messages it covers whose removals are pending. A
// covered message deleted behind the library's back stays covered until
// the stream handler accounts its removal: the position stands until
// then, and writeOut returns errPositionStands.
func (ib *Inbox) writeOut(ctx context.Context, u User, thread string) error {
	p := u.Partition()
	for range markAttempts {
		now := ib.now()
		st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Keys: []driver.Counter{{}}})
		if err != nil {
			return err
		}
		pos, ok := driver.Positions(st.Counters)[thread]
		if !ok {
			return nil
		}
		full, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Now: now})
		if err != nil {
			return err
		}
		recs, _, err := ib.coverable(ctx, p, thread, "", pos.Bound, full, false)
		if err != nil {
			return err
		}
		recs = slices.DeleteFunc(recs, func(r driver.Record) bool { return !now.Before(r.Message.ExpiresAt) })
		if len(recs) > 0 {
			var marks []driver.Mark
			for _, r := range recs {
				to := r.State()
				to.ReadAt = pos.ReadAt(r.Message.ID)
				marks = append(marks, markFor(u, r, nil, to, now))
			}
			for _, chunk := range chunkMarks(marks) {
				var deltas []driver.Counter
				for _, mk := range chunk {
					deltas = append(deltas, driver.MarkDeltas(mk)...)
				}
				if err := ib.applyMarks(ctx, p, chunk, driver.MergeCounters(deltas)); err != nil && !errors.Is(err, driver.ErrStateChanged) && !errors.Is(err, ErrNotFound) {
					return err
				}
			}
			continue // read again: what is left, and the version
		}
		// What the position still covers is gone, expired, its removal
		// not yet accounted: the drop takes it out of the covered
		// counters, and the removal then accounts it as uncovered (Counts
		// and ListThreads take an expired record out either way). If the
		// counters count more (a record deleted behind the library's
		// back), the position stands until the stream accounts it.
		deltas := goneCovered(full, thread, pos)
		left := map[string]driver.Counter{}
		for _, c := range slices.Concat(full.Counters, deltas) {
			if c.Covered && c.Thread == thread {
				t := left[c.SK()]
				t.Add(c.Tallies())
				left[c.SK()] = t
			}
		}
		stands := false
		for _, t := range left {
			stands = stands || !t.IsZero()
		}
		if stands {
			// Unless a write came since the stats were read (another
			// write-out of the position marked what the read then found
			// no more): read again.
			again, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Keys: []driver.Counter{{}}})
			if err != nil {
				return err
			}
			if again.Version == full.Version {
				return errPositionStands
			}
			continue
		}
		mk := driver.Mark{Key: driver.Key{Partition: p}, Now: now, Versioned: true, Version: full.Version, Cover: &driver.CoverChange{Thread: thread, From: pos}}
		err = ib.store.Mark(ctx, []driver.Mark{mk}, deltas)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, driver.ErrStateChanged):
			return unknownOutcome(err)
		}
	}
	return fmt.Errorf("inbox: writing out the read position of thread %s for %s: the user's counters kept changing: %w", thread, u.ID, ErrConflict)
}

// goneCovered returns the changes that take out of the covered counters
// of thread the expired records pos covers whose removals are pending
// (st.Expired, of the partition's stats st), as their removals would.
func goneCovered(st driver.Stats, thread string, pos driver.Position) []driver.Counter {
	var out []driver.Counter
	for _, e := range st.Expired {
		if e.Message.Thread != thread || !driver.Coverable(e) || !pos.Covers(e.Message.ID) {
			continue
		}
		for _, d := range driver.CoveredCounters(e) {
			d.Of = ""
			if e.Message.ID > st.Fence {
				d.Above = d.Unread
			}
			out = append(out, d.Negated())
		}
	}
	return driver.MergeCounters(out)
}

// covering returns rec as u reads it, with her read position in its
// thread (driver.Overlay); it reads her positions only for a record one
// could cover.
func (ib *Inbox) covering(ctx context.Context, u User, rec driver.Record) (driver.Record, error) {
	if !driver.Coverable(rec) {
		return rec, nil
	}
	st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: u.Partition(), Keys: []driver.Counter{{}}})
	if err != nil {
		return rec, err
	}
	return driver.Overlay(rec, driver.Positions(st.Counters)), nil
}

// putCopy puts rec, a copy of a direct message for u. A copy below u's
// read position in its thread (an earlier publish's retry, or a
// publisher's clock behind) would read as read: the Store refuses it
// (driver.ErrStateChanged), and the position is written out first, so
// that the copy comes unread, as any message after the mark does.
func (ib *Inbox) putCopy(ctx context.Context, u User, rec driver.Record) error {
	for range markAttempts {
		err := ib.store.PutMessage(ctx, rec, driver.PutDeltas(rec))
		var ce *driver.CoveredError
		if !errors.As(err, &ce) {
			return err
		}
		if err := ib.writeOut(ctx, u, ce.Thread); err != nil {
			return err
		}
	}
	return fmt.Errorf("inbox: a copy for %s: the read position of its thread kept moving: %w", u.ID, ErrConflict)
}

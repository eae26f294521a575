package inbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
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
// earlier moves (driver.Position.Raised); one done (written out,
// driver.Position.Done) positionWindow ago or more starts anew. The
// oldest such position of another thread goes first, one a call, so that
// few stay on her c#*. Past MaxPositionSteps moves, or for a new one past
// maxPositions threads with none to drop, the one in the way is written
// out (see writeOut) and the messages are marked one by one this time
// (it returns 0).
//
// The position covers every unread message below it, so the covered
// counters it writes count them all: those the thread index holds,
// expired or not, and those TTL deleted whose removal the stream has not
// accounted yet (their ledger entries). It reads u's stats, then the
// thread's counter (how many there are: the pages stop there, without
// reading the thread's read history) beside its records, and writes on
// condition that her counter version is still the stats': a write that
// came since, which the reads might miss, fails it, and it reads again.
// own, if not nil, holds her stats read already (threadTally's), which
// the first attempt takes.
func (ib *Inbox) markThreadRead(ctx context.Context, u User, thread, after string, own *threadCount) (int, error) {
	p := u.Partition()
	dropTried, rewrote := false, false
	for range markAttempts {
		now := ib.now()
		var st driver.Stats
		if own != nil {
			st, now, own = own.own, own.now, nil
		} else {
			var err error
			if st, err = ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Now: now}); err != nil {
				return 0, err
			}
		}
		positions := driver.Positions(st.Counters)
		from, ok := positions[thread]
		// An aged position (done positionWindow ago) starts anew: what it
		// covered is marked read, and no reader holds it unread.
		anew := ok && aged(from, now)
		if steps, _ := from.Steps(); ok && len(steps) >= driver.MaxPositionSteps && !anew {
			// Written out first if need be; this time the messages are
			// marked one by one (see MarkAllRead's bulk).
			return 0, ib.writeOut(ctx, u, thread)
		}
		if !dropTried {
			// One aged position of another thread goes, so that her c#*,
			// which every write of hers carries, keeps few.
			switch dropped, err := ib.dropAged(ctx, u, st, positions, thread, now); {
			case err != nil:
				return 0, err
			case dropped == agedRewritten && !rewrote:
				rewrote = true
				continue // read again, and drop it
			case dropped == agedDropped:
				dropTried = true
				continue
			}
			dropTried = true
		}
		if !ok && len(positions) >= maxPositions {
			return 0, ib.writeOut(ctx, u, oldestLive(positions))
		}
		recs, whole, err := ib.coverable(ctx, p, thread, from.Bound, after, st, now, true)
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
		if anew {
			to = driver.Position{Bound: bound, At: now}
		}
		deltas := coverDeltas(recs, st.Fence)
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

// coverDeltas returns what recs, records of a user's partition that a
// read position's move covers, add to its covered counters (as the move
// writes them: Of ""), their Above where they lie above fence, her
// watermark.
func coverDeltas(recs []driver.Record, fence string) []driver.Counter {
	var out []driver.Counter
	for _, r := range recs {
		for _, d := range driver.CoveredCounters(r) {
			d.Of = ""
			if r.Message.ID > fence {
				d.Above = d.Unread
			}
			out = append(out, d)
		}
	}
	return out
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
// those whose removal is pending (an expired record the thread index
// still holds whose removal is accounted already, its ledger entry gone,
// the counters no longer count, nor does a position). It reads the thread's counter by key
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
func (ib *Inbox) coverable(ctx context.Context, p Partition, thread, covered, after string, st driver.Stats, now time.Time, whole bool) (_ []driver.Record, found_ bool, _ error) {
	found := map[string]driver.Record{}
	for _, e := range st.Expired {
		if !e.Receipt && e.Message.Thread == thread && (whole || after == "" || e.Message.ID < after) && driver.AboveOf(e) > 0 {
			found[e.Message.ID] = e
		}
	}
	var already int64 // those a position covers
	for _, c := range st.Counters {
		if c.Covered && c.Group == "" && c.Thread == thread && c.Category == "" {
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
			if !r.Receipt && r.Message.Thread == thread && driver.AboveOf(r) > 0 && now.Before(r.Message.ExpiresAt) {
				found[r.Message.ID] = r // an expired one pending comes from st.Expired
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

// positionWindow is how long a read position stays at least once it is
// done (see driver.Position.Done): a reader that read a message before the
// write-out's mark of it, and the positions after, sees the message read
// by the position as long as it stands. A read of records and positions
// that takes longer than positionWindow less twice maxClockSkew (the
// positions' times are their writers' clocks) is read again (see
// readsWithin), so that no reader can hold such a message once it goes.
const positionWindow = 15 * time.Minute

// readsWithin returns nil if reads of records and read positions made in
// parallel, started at start (this process's monotonic clock), ended
// within positionWindow less twice maxClockSkew: a done position they
// read had not gone before a record they read was read, so the record
// reads as the position says. Else it is ErrConflict: read again.
func readsWithin(start time.Time) error {
	// The longer of the monotonic and the wall clock's durations: the
	// first stands still while the host is suspended.
	d := max(time.Since(start), time.Now().Round(0).Sub(start.Round(0)))
	if d >= positionWindow-2*maxClockSkew {
		return fmt.Errorf("inbox: reads of messages and read positions took %v, too long to read as one view: %w", d, ErrConflict)
	}
	return nil
}

// aged reports whether pos, done, may go at now: it has been done for
// positionWindow.
func aged(pos driver.Position, now time.Time) bool {
	return !pos.Done.IsZero() && !now.Before(pos.Done.Add(positionWindow))
}

// oldestLive returns the thread of the oldest of positions not done
// ("" if every one is done).
func oldestLive(positions map[string]driver.Position) string {
	thread := ""
	var oldest driver.Position
	for t, pos := range positions {
		if !pos.Done.IsZero() {
			continue
		}
		if thread == "" || pos.At.Before(oldest.At) || pos.At.Equal(oldest.At) && t < thread {
			oldest, thread = pos, t
		}
	}
	return thread
}

// agedOutcome is what dropAged did.
type agedOutcome int

const (
	agedNone      agedOutcome = iota // nothing
	agedDropped                      // dropped a position
	agedRewritten                    // marked read what one covers stored unread
)

// dropAged drops the oldest of u's read positions (positions, of her
// stats st) but thread's that is aged and covers nothing any more but
// expired messages whose removals are pending (the drop takes them out of
// the covered counters, and the removals then account them as
// uncovered), and reports agedDropped; none is, or the position moved,
// is agedNone. An aged position that covers a live message stored unread
// (another program took its read mark off after the position was written
// out: it reads as read, counted covered) has such messages marked read
// again, at the position's time, which changes nothing a reader sees, and
// reports agedRewritten: read again, and it goes.
func (ib *Inbox) dropAged(ctx context.Context, u User, st driver.Stats, positions map[string]driver.Position, thread string, now time.Time) (agedOutcome, error) {
	p := u.Partition()
	for _, t := range slices.SortedFunc(maps.Keys(positions), func(a, b string) int {
		return cmp.Or(positions[a].Done.Compare(positions[b].Done), strings.Compare(a, b))
	}) {
		pos := positions[t]
		if t == thread || !aged(pos, now) {
			continue
		}
		deltas := goneCovered(st, t, pos)
		left := map[string]driver.Counter{}
		for _, c := range slices.Concat(st.Counters, deltas) {
			if c.Covered && c.Group == "" && c.Thread == t {
				n := left[c.SK()]
				n.Add(c.Tallies())
				left[c.SK()] = n
			}
		}
		if slices.ContainsFunc(slices.Collect(maps.Values(left)), func(c driver.Counter) bool { return !c.IsZero() }) {
			switch marked, err := ib.markCovered(ctx, u, t, pos, st, now); {
			case err != nil:
				return agedNone, err
			case marked:
				return agedRewritten, nil
			}
			// It covers a message deleted behind the library's back,
			// whose removal the stream has not accounted: not yet.
			continue
		}
		mk := driver.Mark{Key: driver.Key{Partition: p}, Now: now, Versioned: true, Version: st.Version, Cover: &driver.CoverChange{Thread: t, From: pos}}
		switch err := ib.store.Mark(ctx, []driver.Mark{mk}, deltas); {
		case err == nil:
			return agedDropped, nil
		case errors.Is(err, driver.ErrStateChanged):
			return agedNone, nil
		default:
			return agedNone, unknownOutcome(err)
		}
	}
	return agedNone, nil
}

// markCovered marks read, each at pos's time (Position.ReadAt), the live
// messages of u's thread that her read position pos covers and that are
// stored unread (her partition's stats st, read at now), and reports
// whether there were any. A mark another write beat is left: the caller
// reads again.
func (ib *Inbox) markCovered(ctx context.Context, u User, thread string, pos driver.Position, st driver.Stats, now time.Time) (bool, error) {
	p := u.Partition()
	recs, _, err := ib.coverable(ctx, p, thread, "", pos.Bound, st, now, false)
	if err != nil {
		return false, err
	}
	recs = slices.DeleteFunc(recs, func(r driver.Record) bool { return !now.Before(r.Message.ExpiresAt) })
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
			return false, err
		}
	}
	return len(marks) > 0, nil
}

// writeOut marks read, at its time, each live message u's read position
// in thread covers (Counts and List show the same before and after), then
// records it done (driver.Position.Done), keeping it: a reader that read a
// message before its mark and the positions after still sees the message
// read. Expired messages it covers whose removals are pending stay
// counted in its covered counters, their removals accounting them as
// covered. No position, or one done, is left as it is.
func (ib *Inbox) writeOut(ctx context.Context, u User, thread string) error {
	if thread == "" {
		return nil
	}
	p := u.Partition()
	for range markAttempts {
		now := ib.now()
		full, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Now: now})
		if err != nil {
			return err
		}
		pos, ok := driver.Positions(full.Counters)[thread]
		if !ok || !pos.Done.IsZero() {
			return nil
		}
		switch marked, err := ib.markCovered(ctx, u, thread, pos, full, now); {
		case err != nil:
			return err
		case marked:
			continue // read again: what is left, and the version
		}
		mk := driver.Mark{Key: driver.Key{Partition: p}, Now: now, Versioned: true, Version: full.Version, Cover: &driver.CoverChange{Thread: thread, From: pos, To: pos.WrittenOut(now)}}
		err = ib.store.Mark(ctx, []driver.Mark{mk}, nil)
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
// unread (driver.CoveredError), and it is written read, at the
// position's time, as everything below a chat's read position reads
// (see MarkAllRead).
func (ib *Inbox) putCopy(ctx context.Context, u User, rec driver.Record) error {
	for range markAttempts {
		err := ib.store.PutMessage(ctx, rec, driver.PutDeltas(rec))
		var ce *driver.CoveredError
		if !errors.As(err, &ce) {
			return err
		}
		at, err := ib.readBelow(ctx, u, "", ce.Thread, rec.Message.ID)
		if err != nil {
			return err
		}
		if !at.IsZero() {
			rec.Message.ReadAt = at
		}
	}
	return fmt.Errorf("inbox: a copy for %s: the read position of its thread kept moving: %w", u.ID, ErrConflict)
}

// readBelow returns when u's read position in thread of group's messages
// ("" for her direct messages) reads the message with ID id as read
// (zero if no position covers it).
func (ib *Inbox) readBelow(ctx context.Context, u User, group, thread, id string) (time.Time, error) {
	st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: u.Partition(), Keys: []driver.Counter{{Group: group}}})
	if err != nil {
		return time.Time{}, err
	}
	if pos := driver.PositionFor(st.Counters, group, thread); pos.Covers(id) {
		return pos.ReadAt(id), nil
	}
	return time.Time{}, nil
}

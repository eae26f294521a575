package inbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stak/inbox/driver"
)

// MarkRead marks message id read for u: a direct message gets its readat
// set, a broadcast or group message gets u's receipt (copying the
// message's category and expiry, so it expires with it). It reports
// whether this call changed anything: false if the message was already
// read. It costs two round trips: a strongly consistent read of every
// place the message can be, then one atomic write of the mark and u's
// counters, conditional on u's marks being those read, so concurrent and
// repeated calls move the counters exactly once.
//
// A message that does not exist, has expired, or that u deleted is
// ErrNotFound. Reading an archived message keeps it archived.
func (ib *Inbox) MarkRead(ctx context.Context, u User, id string) (_ bool, err error) {
	defer ib.observe(&ctx, "MarkRead", u.Scope, u.ID).end(&err)
	return ib.transition(ctx, u, id, func(_ driver.Record, s driver.State) (driver.State, bool) {
		if !s.ReadAt.IsZero() {
			return s, false
		}
		s.ReadAt = ib.now()
		return s, true
	})
}

// MarkAllRead marks read every unread, unexpired message of u that List
// with o shows (its Category, Thread, UpTo and Archived filters; Limit and Cursor
// are ignored), direct messages, broadcasts and group messages alike, and
// returns how many it marked: pass the options of the view whose "mark all
// read" button was pressed, with UpTo set to the newest message it showed,
// and it marks exactly that view. The snoozed view (o.Snoozed) is
// ErrInvalidInput, as for ArchiveAll and DeleteAll. On an error it
// returns how many it marked before; an error matching ErrOutcomeUnknown
// says that the batch in flight may have been marked too.
//
// It pages through u's unread feed and writes each page of up to
// MaxMarkBatch marks (22 in a thread, whose receipts write their reader
// items too: see ReadBy), with the summed counter changes, as one atomic unit;
// if another writer changed one of them meanwhile, that page falls back to
// one write per message, so the counters stay exact. It changes exactly
// what the view holds at the instant each message is changed, never more:
// each single write reads the message again, and marks it only if it is
// still in the view, on condition that its marks are still those read (a
// message another call archived, snoozed or deleted meanwhile is left as
// that call left it). Its cost grows with
// the unread messages it marks (and the broadcasts it passes), not with
// the direct messages u has read: one unread-only page (see List) and one
// transaction per MaxMarkBatch messages. Marking a chat read (a Thread,
// no Category) reads, before each page, the thread's counts (one round
// trip, as ListThreads counts it; one more, an isolated read of the
// thread's counters, while it has an expired message whose removal the
// stream has not accounted yet, or a broadcast removed before its
// expiry), and the page asks for no more than
// they say are unread: it stops when none is left, and does not read the
// thread's read history. Once a page holds fewer (the counts hold
// messages above UpTo, or arrived since it began), pages are of 22 again;
// when the counts cannot be read as one view (the partitions kept
// changing), it pages on without them rather than fail. So a chat's
// action follows the thread's counts, which, as Counts, lag one thing:
// a record deleted behind the library's back (an operator's delete of a
// receipt brings its broadcast back unread in List at once) counts as it
// stood until the stream delivers its removal.
//
// # A chat marked read in one write
//
// Marking a chat read (a Thread, no Category, not the archived view)
// marks u's direct messages of the thread (a one-to-one chat) by a read
// position (driver.Position), in one transaction whatever their number:
// it reads the thread's counts with u's stats (as the marks one by one
// below do before their first page, which then takes them: with none of
// her direct messages unread, no position of hers is tried),
// then the thread's unread messages (their count from the thread's
// counter, so the read stops there), and writes the
// position just above the newest one it marks (at or below UpTo) with
// the counts of the messages it covers, on condition that u's counters
// did not change since the stats were read (else it reads again). The
// thread's messages to each of her groups (a group chat) are marked by
// her read position in the group's thread, in one transaction too (see
// position_group.go and docs/chat.md: it covers them from the group's
// time buckets, is never written out, and stands on her counter of the
// group); a group whose buckets do not count threads yet (written by an
// earlier version, until recounted) has them marked one by one. Her
// receipts of everyone's broadcasts of the thread are marked one by
// one, as above. So are her direct messages of the thread if the
// thread's counter counts an unread one the read does not find (another
// program marked it read and the stream handler has not seen that yet,
// or it was deleted behind the library's back), or if the Store keeps no
// read positions (it refuses the write with ErrUnsupported; memstore and
// the dynamo Store keep them). Decisions:
//
//   - A message below the position that holds no read mark, and is not
//     archived or deleted, reads as read at the time of the move that
//     covered it, in Counts, List, Get, ListThreads, ReadBy and the
//     thread's counts, in every process: each reads the position with
//     the counts (on u's c#*), and every write of a message of the
//     thread counts it by the position as it stands at that write.
//   - A position and per-message marks combine as if the position's read
//     had been written on each message it covers when it moved: a
//     message marked read before keeps its own time; MarkRead of a
//     covered one changes nothing; archive, delete or a mark of one
//     writes its read explicitly. Everything below a chat's read position
//     reads as read, as a chat app's last-read marker says: a write that
//     would leave a message unread below it (an unarchive of one
//     archived unread, or a late copy: a publish's retry, a publisher's
//     clock behind) writes it read, at the time of the move whose step
//     it lies in.
//   - Of a MarkRead and a MarkAllRead of its chat that race, exactly
//     one reports the message: the one whose write came first. A
//     MarkRead (or a mark of another view) that read the message unread
//     before the position moved over it, and writes after, is refused by
//     the Store (driver.Mark.Uncovered), reads again and finds it read:
//     from the position's write on the message read as read, so
//     MarkAllRead counts it, MarkRead reports false and writes nothing,
//     and the message keeps the move's time, as a MarkRead of a covered
//     one leaves it. A MarkRead that writes first changes the counters
//     the position's write is conditional on: MarkAllRead reads again,
//     without the message.
//   - The stream handler writes each moved position out (a mark per
//     message, at its time, which makes their EventRead) and records it
//     done (driver.Position.Done), keeping it: a reader that read a
//     message before its mark, and the position after, still sees the
//     message read, so no List, Get or ReadBy shows a state that never
//     was. The move itself is an EventThreadRead. A position moved up
//     again keeps each move's time, up to driver.MaxPositionSteps moves;
//     a user holds at most maxPositions (8). A done position
//     positionWindow (15 minutes) old starts anew when its chat is marked
//     read again, and each MarkAllRead of a chat drops the oldest such of
//     another (her c#*, which her writes carry, keeps few; a message below
//     it that another program marked unread since is first marked read
//     again, at the position's time: it read as read already). Past the
//     moves or the positions, with none to drop, the one in the way is
//     written out in the call and the chat's messages are marked one by
//     one. A read of messages and positions side by side
//     that takes longer than that, less twice the clocks' skew, is an
//     ErrConflict (read again), so no reader holds a message read
//     before a position it reads went.
//   - So the call costs one write, and the user waits for that alone;
//     the stream handler's write-out then costs what marks one by one
//     would (see docs/costs.md): a position moves the work out of the
//     call, it does not make it smaller. Until it is written out (the
//     stream's lag), the messages it covers are still in the unread
//     index, and unread-only pages pass them, reading as read, so such
//     a page reads them too.
func (ib *Inbox) MarkAllRead(ctx context.Context, u User, o ListOptions) (_ int, err error) {
	defer ib.observe(&ctx, "MarkAllRead", u.Scope, u.ID).end(&err)
	o.UnreadOnly = true
	n := 0
	var first *Tally // the thread's counts, read already
	if o.Thread != "" && o.Category == "" && !o.Archived && !o.Snoozed {
		// Her direct messages of the thread: by a read position, in one
		// write (see markThreadRead); the rest below, one by one.
		if err := u.Validate(); err != nil {
			return 0, err
		}
		if err := driver.ValidateThread(o.Thread); err != nil {
			return 0, err
		}
		after := ""
		if o.UpTo != "" {
			if after, err = idAfter(o.UpTo); err != nil {
				return 0, err
			}
		}
		// The thread's counts first, which the marks one by one read
		// anyway: with none of her direct messages unread (a group
		// chat's), the position is not tried, and the marks start from
		// these counts.
		t, err := ib.threadTally(ctx, u, o.Thread)
		// The group chats' messages of the thread: by her read position
		// in each group's thread (see markGroupThreadRead).
		moved := false
		for _, g := range slices.Sorted(maps.Keys(t.groups)) {
			if t.groups[g].unread > 0 {
				m, err := ib.markGroupThreadRead(ctx, u, g, o.Thread, after, &t)
				if err != nil {
					return n, err
				}
				n, moved = n+m, moved || m > 0
			}
		}
		switch {
		case err == nil && t.direct == 0 && !moved:
			first = &t.Tally
		case err == nil && t.direct == 0:
		case err != nil && !errors.Is(err, ErrConflict):
			return 0, err
		default:
			// Her stats as the counts read them serve the position's
			// first attempt (one round trip less).
			var own *threadCount
			if err == nil {
				own = &t
			}
			m, err := ib.markThreadRead(ctx, u, o.Thread, after, own)
			if err != nil {
				return n, err
			}
			n += m
		}
	}
	m, err := ib.bulk(ctx, u, o, first, func(s driver.State, now time.Time) driver.State {
		s.ReadAt = now
		return s
	})
	return n + m, err
}

// bulk gives every message of u that List with o shows (Limit and Cursor
// ignored) the marks set returns, page by page, and returns how many it
// changed: each page of up to MaxMarkBatch messages is one atomic unit
// (see chunkMarks), falling back to one write per message, of each message
// still in the view, for a page another writer changed meanwhile. A page
// lists what is left of the view below the previous one, so the changed
// messages, which leave the view or not, are passed once; after a short
// page, once u's counts say the view is empty, the rest is not read. On
// a view of one thread (of every category), the thread's counts
// (threadTally, one round trip) are read before each page, which asks
// for no more messages than they say the view holds: the action stops
// when none is left, without reading the thread's history below.
//
// first, if not nil, holds the thread's counts, read already for the
// first page.
func (ib *Inbox) bulk(ctx context.Context, u User, o ListOptions, first *Tally, set func(driver.State, time.Time) driver.State) (int, error) {
	if err := u.Validate(); err != nil {
		return 0, err
	}
	if o.Snoozed {
		return 0, fmt.Errorf("%w: a bulk action on the snoozed view", ErrInvalidInput)
	}
	if err := driver.ValidateThread(o.Thread); err != nil {
		return 0, err // before threadTally reads with it
	}
	after := "" // the IDs below it are up to o.UpTo; "" bounds none
	if o.UpTo != "" {
		var err error
		if after, err = idAfter(o.UpTo); err != nil {
			return 0, err
		}
	}
	keep := func(m driver.Message, s driver.State, now time.Time) bool {
		return inView(m, s, o, now) && (after == "" || m.ID < after)
	}
	changed := 0
	o.Limit, o.Cursor = driver.MaxMarkBatch, ""
	if o.Thread != "" {
		o.Limit = threadMarkBatch
	}
	// counted says the thread's counts are read before each page, and
	// tell when none is left; sized that they size the pages too: until a
	// page comes back short, which says they count messages that the
	// pages left do not hold (above UpTo, or arrived above the cursor
	// since), so that pages of their number would read the rest a few
	// messages at a time.
	counted := o.Thread != "" && o.Category == ""
	sized := counted
	for {
		if counted {
			// The thread's counts say how many the view holds: a page
			// asks for no more, so that it does not read on through the
			// thread's history to fill itself.
			var t Tally
			var err error
			if first != nil {
				t, first = *first, nil
			} else {
				var tc threadCount
				tc, err = ib.threadTally(ctx, u, o.Thread)
				t = tc.Tally
			}
			switch {
			case errors.Is(err, ErrConflict):
				// The partitions kept changing while they were read: the
				// counts only save reads, so the action pages on without
				// them, as on any other view, rather than fail.
				counted, sized, o.Limit = false, false, threadMarkBatch
			case err != nil:
				return changed, err
			case viewTally(t, o) == 0:
				return changed, nil
			case sized:
				o.Limit = int(min(threadMarkBatch, viewTally(t, o)))
			}
		}
		recs, cursor, err := ib.page(ctx, u, o)
		if err != nil {
			return changed, err
		}
		n, err := ib.markBatch(ctx, u, recs, set, keep)
		changed += n
		if err != nil {
			return changed, err
		}
		if cursor == "" {
			return changed, nil
		}
		// A short page says filters dropped records: the rest of the view
		// may be long and hold nothing to change (archived messages below
		// the default view's, say). Exact counts tell when nothing is
		// left, at a round trip of stats.
		if len(recs) < o.Limit && o.Thread == "" {
			if empty, err := ib.viewEmpty(ctx, u, o); err != nil || empty {
				return changed, err
			}
		}
		if sized && len(recs) < o.Limit {
			sized, o.Limit = false, threadMarkBatch
		}
		o.Cursor = cursor
	}
}

// viewEmpty reports whether List with o shows u nothing at all, from u's
// Counts (exactly what List shows): a view of one thread is never said
// empty (bulk counts those with threadTally).
func (ib *Inbox) viewEmpty(ctx context.Context, u User, o ListOptions) (bool, error) {
	if o.Thread != "" {
		return false, nil
	}
	c, err := ib.Counts(ctx, u)
	if err != nil {
		return false, err
	}
	t := c.Tally
	if o.Category != "" {
		t = c.Categories[o.Category]
	}
	if o.Snoozed {
		return c.Snoozed == 0, nil // none at all; else the view may hold some
	}
	return viewTally(t, o) == 0, nil
}

// viewTally returns how many of the messages t counts List with o shows
// (o not Snoozed): the archived, the unread, or all.
func viewTally(t Tally, o ListOptions) int64 {
	switch {
	case o.Archived:
		return t.Archived
	case o.UnreadOnly:
		return t.Unread + t.Muted // the muted are in the view
	}
	return t.Total
}

// markBatch gives recs (from u's feed, with u's receipts) the marks set
// returns, in as few atomic units as fit in a transaction (see
// chunkMarks), each falling back to one write per message if another
// writer changed one of them meanwhile. Another program's direct message
// deleted is written alone too, adopted first. A message written alone is
// read again and changed only if keep says it is still in the view, as
// read, by a mark conditional on the marks read: a change made between
// the read and the write has it read again. It returns how many it
// changed.
func (ib *Inbox) markBatch(ctx context.Context, u User, recs []feedRecord, set func(driver.State, time.Time) driver.State, keep func(driver.Message, driver.State, time.Time) bool) (int, error) {
	now := ib.now()
	var marks []driver.Mark
	var alone []string
	for _, r := range recs {
		rec := r.Record
		if r.stored != nil {
			rec = *r.stored // marked from its marks as stored
		}
		mk := markFor(u, rec, r.receipt, set(r.state(), now), now)
		// The page read it with her read positions: one that moved over
		// it since has the Store refuse the page (see transition).
		mk.Uncovered = r.receipt == nil && r.stored == nil && driver.Coverable(r.Record)
		if mk.Delete && !r.Record.Ledgered() {
			alone = append(alone, mk.Key.ID)
			continue
		}
		marks = append(marks, mk)
	}
	marked := 0
	one := func(id string) error {
		changed, err := ib.transition(ctx, u, id, func(rec driver.Record, s driver.State) (driver.State, bool) {
			now := ib.now()
			if !keep(rec.Message, s, now) {
				return s, false
			}
			return set(s, now), true
		})
		switch {
		case err == nil && changed:
			marked++
		case err == nil, errors.Is(err, ErrNotFound):
		default:
			return err
		}
		return nil
	}
	for _, chunk := range chunkMarks(marks) {
		var deltas []driver.Counter
		for _, mk := range chunk {
			deltas = append(deltas, driver.MarkDeltas(mk)...)
		}
		err := ib.applyMarks(ctx, u.Partition(), chunk, driver.MergeCounters(deltas))
		if err == nil {
			marked += len(chunk)
			continue
		}
		if !errors.Is(err, driver.ErrStateChanged) && !errors.Is(err, ErrNotFound) {
			return marked, err
		}
		for _, mk := range chunk {
			if err := one(mk.Key.ID); err != nil {
				return marked, err
			}
		}
	}
	for _, id := range alone {
		if err := one(id); err != nil {
			return marked, err
		}
	}
	return marked, nil
}

// threadMarkBatch is the page of a bulk action on one thread: a receipt
// of a thread's broadcast takes its reader item besides (see chunkMarks),
// so that a page's marks and their counters still fit one transaction.
const threadMarkBatch = 22

// maxTransactItems is DynamoDB's limit on the items of one transaction,
// which one Store.Mark must fit in.
const maxTransactItems = 100

// chunkMarks splits marks into runs of at most MaxMarkBatch whose
// transaction fits in maxTransactItems items, as driver.MarkItems counts
// them (a receipt of a thread's broadcast takes its reader item besides,
// and each counter changed one, but those riding on a partition's total).
func chunkMarks(marks []driver.Mark) [][]driver.Mark {
	var out [][]driver.Mark
	for len(marks) > 0 {
		n := 0
		var deltas []driver.Counter
		for n < len(marks) && n < driver.MaxMarkBatch {
			d := append(append([]driver.Counter(nil), deltas...), driver.MarkDeltas(marks[n])...)
			if n > 0 && driver.MarkItems(marks[:n+1], driver.MergeCounters(d)) > maxTransactItems {
				break
			}
			deltas = d
			n++
		}
		out = append(out, marks[:n])
		marks = marks[n:]
	}
	return out
}

// threadCount is u's counts of a thread, as Inbox.threadTally reads them.
type threadCount struct {
	Tally
	direct int64                 // how many are her unread direct messages
	groups map[string]groupCount // of each group's messages of the thread
	own    driver.Stats          // her partition's stats, read with the counts
	now    time.Time             // the time they were read for
}

// threadTally returns u's counts of thread, in every audience together:
// what List with ListOptions.Thread shows, as ListThreads counts each
// audience's (Thread.Tally). In one round trip it reads the stats of u's
// partition and of each shared one (from the snapshots of
// WithSharedCache when it is on) and, by key, u's counters of the thread;
// the shared partitions' counters of it come from their snapshots when
// these list it, else they are read by key too. Counters read by key make
// one view with their partition's stats when their versions agree (else
// it reads again, renewing a snapshot older than the partition). u's
// receipts of broadcasts removed before they expired take one more round
// trip, as in Counts. It returns too how many of them are u's unread
// direct messages (those a read position could cover), and u's stats it
// read.
//
// Where the view takes something out of a partition's counters read by
// key (its stats hold expired entries of the thread, or, for u's
// partition, the shared ones hold tombstones of it: u's dead receipts),
// equal versions make them one view with the stats only if they were
// read as one isolated read with their version (see threadCounts): then
// they are read so, and those read item by item beside the stats are
// read again so, in one more round trip (on DynamoDB, a
// TransactGetItems: 2 read units a counter).
func (ib *Inbox) threadTally(ctx context.Context, u User, thread string) (threadCount, error) {
	parts := append([]Partition{u.Partition()}, u.Shared()...)
	keys := make([][]driver.Counter, len(parts))
	keys[0] = []driver.Counter{{Thread: thread}}
	for i, p := range parts[1:] {
		// u's receipts of the thread's messages in p, and p's own counter.
		keys[0] = append(keys[0], driver.Counter{Thread: thread, Group: p.Group})
		keys[i+1] = []driver.Counter{{Thread: thread}}
	}
	byKey := func(ctx context.Context, i int, isolated bool) (driver.Stats, error) {
		return ib.store.Stats(ctx, driver.StatsQuery{Partition: parts[i], Keys: keys[i], Isolated: isolated})
	}
	for range countsAttempts {
		now := ib.now()
		v := ib.cache.newView(now)
		again := make([]driver.Stats, len(parts))
		read := make([]bool, len(parts))
		stats, err := ib.feedStats(ctx, v, parts, now, false, func(ctx context.Context) error {
			g, gctx := errgroup.WithContext(ctx)
			for i := range parts {
				if i > 0 && v.c.fresh > 0 {
					continue // from the snapshot, below
				}
				read[i] = true
				g.Go(func() (err error) { again[i], err = byKey(gctx, i, false); return err })
			}
			return g.Wait()
		})
		if err != nil {
			return threadCount{}, err
		}
		var tombstones []driver.Record
		for _, st := range stats[1:] {
			tombstones = append(tombstones, st.Tombstones...)
		}
		isolated := func(i int) bool {
			return takesOut(keys[i], stats[i].Expired) || i == 0 && takesOut(keys[i], tombstones)
		}
		g, gctx := errgroup.WithContext(ctx)
		for i := range parts {
			if read[i] && isolated(i) && again[i].Version == stats[i].Version {
				g.Go(func() (err error) { again[i], err = byKey(gctx, i, true); return err })
			}
		}
		if err := g.Wait(); err != nil {
			return threadCount{}, err
		}
		view := make([]driver.Stats, len(parts))
		snaps := make([]*snapshot, len(parts))
		later := make([]bool, len(parts)) // read by key after the snapshot
		for i := range stats {
			if read[i] {
				continue
			}
			s, err := v.snapshot(ctx, parts[i])
			if err != nil {
				return threadCount{}, err
			}
			if s != nil {
				if j := slices.IndexFunc(s.threads, func(c driver.Counter) bool { return c.Thread == thread }); j >= 0 {
					view[i].Counters = []driver.Counter{s.threads[j]}
					continue
				}
				if s.threadsComplete {
					continue // p has none of it
				}
			}
			snaps[i], read[i], later[i] = s, true, true
		}
		// The counters below the snapshots' threads, by key, at once; a
		// partition that kept changing while a snapshot of it was read
		// (none) has its stats read again beside, as with the cache off,
		// so that a write lands between the two reads only if it lands
		// while both are in flight.
		g, gctx = errgroup.WithContext(ctx)
		for i := range parts {
			if later[i] {
				// Isolated where the view takes something out of them; a
				// partition whose stats are read again beside them, too.
				iso := isolated(i) || snaps[i] == nil
				g.Go(func() (err error) { again[i], err = byKey(gctx, i, iso); return err })
			}
			if later[i] && snaps[i] == nil {
				g.Go(func() (err error) { stats[i], err = v.stats(gctx, parts[i], false); return err })
			}
		}
		if err := g.Wait(); err != nil {
			return threadCount{}, err
		}
		// A write came between the reads, or a snapshot is older than its
		// partition: read again, every stale snapshot renewed at once.
		torn := false
		rg, rctx := errgroup.WithContext(ctx)
		for i, st := range stats {
			view[i].Expired = st.Expired
			if !read[i] {
				continue
			}
			if again[i].Version != st.Version {
				torn = true
				if snaps[i] != nil {
					rg.Go(func() error { return v.renew(rctx, parts[i], nil) })
				}
				continue
			}
			for _, c := range again[i].Counters {
				if c.Thread == thread && !c.Covered {
					view[i].Counters = append(view[i].Counters, c)
				}
			}
		}
		for _, c := range stats[0].Counters {
			if c.Covered && c.Thread == thread {
				view[0].Counters = append(view[0].Counters, c) // what u's read position covers, of her version
			}
		}
		if err := rg.Wait(); err != nil {
			return threadCount{}, err
		}
		if torn {
			continue
		}
		dead, err := ib.deadReceipts(ctx, u, tombstones, now)
		if err != nil {
			return threadCount{}, err
		}
		var t Tally
		var direct int64
		covers, ok, err := ib.groupCovers(ctx, v, parts, stats, dead, now)
		if err != nil {
			return threadCount{}, err
		}
		if !ok {
			continue
		}
		groups := map[string]groupCount{}
		for k, s := range threadSums(parts, view, dead, covers) {
			if k.thread == thread {
				n := newTally(*s)
				t.Total += n.Total
				t.Read += n.Read
				t.Unread += n.Unread
				t.Archived += n.Archived
				if k.group == "" {
					direct = n.Unread
				} else if k.group != driver.PublicGroup {
					i := slices.IndexFunc(parts, func(p Partition) bool { return p.IsShared() && p.Group == k.group })
					groups[k.group] = groupCount{unread: n.Unread, latest: s.Latest, bucketed: i > 0 && stats[i].Bucketed}
				}
			}
		}
		return threadCount{Tally: t, direct: direct, groups: groups, own: stats[0], now: now}, nil
	}
	return threadCount{}, fmt.Errorf("inbox: counts of thread %q of %s: the partitions kept changing while they were read: %w", thread, u.ID, ErrConflict)
}

package inbox

import (
	"context"
	"fmt"
	"golang.org/x/sync/errgroup"
	"slices"
	"strings"
	"time"

	"github.com/stak/inbox/driver"
)

// Thread is one of a user's conversations as ListThreads shows it: the
// messages of one thread key (Draft.Thread) in one audience, that is the
// user's own direct messages of the thread, or a group's messages of it,
// or everyone's. A one-to-one chat is a thread of direct messages to both
// users; a group chat is a group's thread, each message stored once.
type Thread struct {
	// Thread is the thread's key.
	Thread string
	// Group is the audience: "" for the user's direct messages,
	// PublicGroup for everyone's broadcasts, else the group's ID.
	Group string
	// Activity is the ID of the thread's latest message in this audience,
	// ever: its last activity, which ListThreads orders by (IDAt's
	// inverse, ulid.Time, gives its time). Removing or expiring that
	// message does not lower it, as a chat keeps its place when a message
	// is deleted.
	Activity string
	// Latest is the thread's newest message that List with
	// ListOptions.Thread shows the user (not expired, archived or
	// deleted), with the user's marks: the preview. It is zero only if
	// the thread changed between ListThreads' reads.
	Latest Message
	// Tally counts the thread's messages in this audience as Counts counts
	// the feed: Total, Read and Unread of what List shows, and Archived;
	// a muted group's or thread's unread count in Muted, not in Unread. A muted
	// category's leave them whole (a thread's counts are not kept by
	// category), and Unseen is not counted (zero). It is exact at the
	// instant of the call.
	Tally
	// Muted is set on a thread of a group the user muted, and on a
	// thread of her direct messages she muted (see Inbox.SetPreferences),
	// and on its Latest.
	Muted bool
}

// ThreadOptions selects a page of ListThreads.
type ThreadOptions struct {
	// Limit is the most threads on the page: 1 to MaxPageSize, or 0 for
	// DefaultPageSize.
	Limit int
	// Cursor continues from a previous page's ThreadPage.Cursor; "" starts
	// at the latest activity. It is only valid for the same user.
	Cursor string
}

// ThreadPage is one page of ListThreads.
type ThreadPage struct {
	// Threads are ordered by Activity, latest first.
	Threads []Thread
	// Cursor fetches the next page; "" when there are no more threads.
	Cursor string
}

// ListThreads returns a page of u's threads, latest activity first: the
// threads of u's direct messages, of u's groups' messages and of
// everyone's, each with its newest visible message and its counts. A
// thread is listed while List would show one of its messages (Total > 0):
// a thread whose messages u archived, deleted, or saw expire leaves the
// list, and comes back with its next message.
//
// The counts come from counters kept per thread, as Counts' come from
// the partition's (see Draft.Thread): one counter per thread in the
// partition that holds its messages, and in u's partition one for u's
// receipts of a shared thread's messages. They are exact at every
// instant, as Counts is: across expiry, removals, redactions, archive and
// delete, group membership and the shared cache.
//
// Paging never repeats a thread, even when its pages are served by
// processes whose views of a shared partition are not as fresh as each
// other (a cursor names the views its page read, and a later page reads
// views at least as new); a thread whose activity moves above the cursor
// while u pages (a new message) shows at the top of a new listing, as
// List's new messages do.
//
// Cost: it reads each partition's threads in order of activity, a page
// at a time, with the stats of u's partition and of each shared one, in
// one round trip. The dynamo Store keeps each thread's counter in its
// unread index under its activity, with its tallies, and reads the
// index's entries alone (a few hundred bytes each); the shared
// partitions' newest come from the snapshots of WithSharedCache. Then,
// in a second round trip, it reads each listed thread's newest message
// (a shared one's comes from the snapshot that holds it), u's counters of
// the listed shared threads with her c#* (its version), and the page's
// span of the threads of each partition
// the first round read from the store (u's, and a shared one no snapshot
// serves) again, index entries alone, with each one's
// driver.Counter.Rev and the partition's version (its c#*, by key): the
// same threads, unchanged, prove the first round one view, whichever of
// its reads came first. A shared thread's counter below its snapshot's
// threads is read by key, one view with its partition's version; a page
// that reaches below a snapshot's threads reads that version too (1 read
// unit), so that a thread that moved up since is not left out.
// u's counter of a shared thread holds the receipts' hint
// (driver.Counter.Latest and Top): the greatest ID of her receipts of the
// thread, and her marks on that message. Her receipt of the thread's
// newest message is not read: the hint shows she has none, or its marks.
// So its read units grow with the threads it lists, about 1 read unit a
// thread of u's (its newest message) and 1 a shared one's (u's counter of
// it; 2 where no snapshot holds its newest message, read by key too),
// never with the number of threads or messages of the partitions;
// a thread of u's it passes (u sees nothing of it) costs its index entry
// alone. Where the hint cannot tell (a counter an earlier version wrote,
// until a Recount of u's partition; a receipt of u's above the newest
// message a snapshot holds), that thread's preview is read as that of a
// message u cannot see, below. On a table whose unread index holds no
// tallies (an earlier version's: see docs/operations.md) the threads'
// counters that no snapshot serves are read by key too, 1 read unit more
// a thread. A thread whose newest message u cannot see any more (expired,
// removed, archived or deleted by u) costs a read of that thread's newest
// messages from the
// thread index, in one more round trip, and then one more, of the
// versions of u's partition and of the shared partitions it read from
// the store (1 read unit each), which prove that preview one view with
// the counts (a write between, and the page is read again); so does,
// once per Inbox, a
// broadcast removed before its expiry, as in Counts. Counters read by key
// that the view takes something out of (a partition's expired entries of
// their thread whose removal the stream has not accounted yet, or, for
// u's receipts, a shared partition's broadcast of it removed before its
// expiry) are read as one isolated read, at twice the read units (on
// DynamoDB a TransactGetItems, 2 read units a counter), so that the
// removal landing during the read is not counted out twice.
func (ib *Inbox) ListThreads(ctx context.Context, u User, o ThreadOptions) (_ ThreadPage, err error) {
	defer ib.observe(&ctx, "ListThreads", u.Scope, u.ID).end(&err)
	if err := u.Validate(); err != nil {
		return ThreadPage{}, err
	}
	if o.Limit < 0 || o.Limit > MaxPageSize {
		return ThreadPage{}, fmt.Errorf("%w: limit %d is not between 0 and %d", ErrInvalidInput, o.Limit, MaxPageSize)
	}
	limit := o.Limit
	if limit == 0 {
		limit = DefaultPageSize
	}
	binding := threadsBinding(u)
	parts := append([]Partition{u.Partition()}, u.Shared()...)
	start := ""
	var floors []int64
	if o.Cursor != "" {
		var err error
		if start, floors, err = ib.decodeThreadsCursor(o.Cursor, len(parts)-1, binding); err != nil {
			return ThreadPage{}, err
		}
	}
	for range countsAttempts {
		now := ib.now()
		v := ib.cache.newView(now)
		// A later page reads views at least as new as its cursor's page
		// read, so that no thread shows below the cursor with an older
		// activity than the page above it showed.
		for i, f := range floors {
			if s, err := v.snapshot(ctx, parts[i+1]); err != nil {
				return ThreadPage{}, err
			} else if s != nil && s.stats.Version < f {
				if err := v.renew(ctx, parts[i+1], nil); err != nil {
					return ThreadPage{}, err
				}
			}
		}
		page, ok, err := ib.threadsPage(ctx, v, u, parts, start, limit, now)
		if err != nil || !ok {
			if err != nil {
				return ThreadPage{}, err
			}
			continue
		}
		if page.next == "" {
			return ThreadPage{Threads: page.threads}, nil
		}
		cursor, err := ib.encodeThreadsCursor(page.next, page.versions, binding)
		return ThreadPage{Threads: page.threads, Cursor: cursor}, err
	}
	return ThreadPage{}, fmt.Errorf("inbox: threads of %s: the partitions kept changing while they were read: %w", u.ID, ErrConflict)
}

// threadsPageResult is a page of threadsPage: its threads, the activity
// the next page starts below ("" for none), and the counter versions of
// the views of the shared partitions it read.
type threadsPageResult struct {
	threads  []Thread
	next     string
	versions []int64
}

// threadStream is one partition's threads by activity, read page by page.
type threadStream struct {
	p    Partition
	buf  []driver.Counter
	next string // the Before of the next read
	more bool
	// tallied is set while every read of the stream had the tallies
	// (driver.QueryResult.Tallied; a shared partition's served from a
	// snapshot leaves it unset: its snapshot's stats check it).
	tallied bool
}

// threadsPage reads, through v, a page of u's threads below activity
// start (see ListThreads): ok is false if its two rounds did not read one
// view of a partition (a write came between): the caller reads again.
func (ib *Inbox) threadsPage(ctx context.Context, v *view, u User, parts []Partition, start string, limit int, now time.Time) (threadsPageResult, bool, error) {
	streams := make([]*threadStream, len(parts))
	for i, p := range parts {
		streams[i] = &threadStream{p: p, next: start, more: true, tallied: true}
	}
	var stats []driver.Stats
	read := func(ctx context.Context, n int) error {
		g, gctx := errgroup.WithContext(ctx)
		for _, s := range streams {
			if len(s.buf) > 0 || !s.more {
				continue
			}
			g.Go(func() error {
				var res driver.QueryResult
				var err error
				// Their keys, with their tallies where the Store has them
				// at no cost; else threadCounts reads the counters by key.
				if s.p.IsShared() {
					res, err = v.threads(gctx, s.p, s.next, n)
				} else {
					res, err = ib.store.Query(gctx, driver.Query{Partition: s.p, Threads: true, ActivityOnly: true, Before: s.next, Limit: n})
				}
				s.tallied = s.tallied && res.Tallied
				s.buf, s.next, s.more = res.Threads, res.Next, res.Next != ""
				return err
			})
		}
		return g.Wait()
	}
	// Round one: the stats, with the first page of each partition's threads.
	var err error
	stats, err = ib.feedStats(ctx, v, parts, now, false, func(ctx context.Context) error { return read(ctx, limit+1) })
	if err != nil {
		return threadsPageResult{}, false, err
	}
	var tombstones []driver.Record
	for _, st := range stats[1:] {
		tombstones = append(tombstones, st.Tombstones...)
	}
	// candidates takes from the streams, by activity, the threads of the
	// next page: enough that those u sees make a page and tell whether
	// another follows, reading on where a stream runs out.
	var cands []driver.Counter
	pop := func() (driver.Counter, bool) {
		best := -1
		for i, s := range streams {
			if len(s.buf) > 0 && (best < 0 || s.buf[0].Latest > streams[best].buf[0].Latest) {
				best = i
			}
		}
		if best < 0 {
			return driver.Counter{}, false
		}
		// A stream with nothing buffered and more to read may hold a later
		// thread: the caller reads it first.
		for _, s := range streams {
			if len(s.buf) == 0 && s.more && s.next > streams[best].buf[0].Latest {
				return driver.Counter{}, false
			}
		}
		c := streams[best].buf[0]
		streams[best].buf = streams[best].buf[1:]
		return c, true
	}
	var threads []Thread
	var seen previewed
	target, reads := limit+1, 0
	for {
		for len(cands) < target {
			if c, ok := pop(); ok {
				cands = append(cands, c)
				continue
			}
			if !slices.ContainsFunc(streams, func(s *threadStream) bool { return len(s.buf) == 0 && s.more }) || reads == listRounds {
				break
			}
			reads++
			if err := read(ctx, limit+1); err != nil {
				return threadsPageResult{}, false, err
			}
		}
		var ok bool
		r := threadsRead{start: start, limit: limit, tallied: make([]bool, len(streams)), more: make([]bool, len(streams))}
		for i, s := range streams {
			r.tallied[i], r.more[i] = s.tallied, len(s.buf) > 0 || s.more
		}
		threads, seen, ok, err = ib.threadCounts(ctx, v, u, parts, stats, cands, tombstones, r, now)
		if err != nil || !ok {
			return threadsPageResult{}, ok, err
		}
		if len(threads) > limit || len(cands) < target || reads == listRounds {
			break
		}
		// Threads u shows nothing of took places on the page: read on.
		target = limit + 1 + len(cands) - len(threads)
	}
	res := threadsPageResult{versions: make([]int64, len(parts)-1)}
	for i, st := range stats[1:] {
		res.versions[i] = st.Version
	}
	more := len(threads) > limit || slices.ContainsFunc(streams, func(s *threadStream) bool { return len(s.buf) > 0 || s.more })
	threads = threads[:min(len(threads), limit)]
	switch {
	case len(threads) == limit && more:
		res.next = threads[len(threads)-1].Activity
	case more && len(cands) > 0:
		// A short page: the next starts below the last thread passed.
		res.next = cands[len(cands)-1].Latest
	}
	late, err := ib.previews(ctx, v, u, threads, seen, now)
	if err != nil {
		return threadsPageResult{}, false, err
	}
	if len(late) > 0 {
		// Previews read after the counts are one view with them only
		// if the partitions they read from the store did not change
		// since the stats: else a mark landing between shows a preview
		// read beside counts that have it unread.
		if same, err := ib.sameVersions(ctx, v, parts, stats, late); err != nil || !same {
			return threadsPageResult{}, false, err
		}
	}
	// u's preferences come with u's stats, and the counters read by key
	// after them are of the same version: one view.
	prefs, err := ib.inEffect(ctx, u.Scope, stats[0].Preferences)
	if err != nil {
		return threadsPageResult{}, false, err
	}
	for i, t := range threads {
		if t.Group != "" && prefs.Mutes(t.Group) || t.Group == "" && prefs.MutesThread(t.Thread) {
			threads[i].Muted, threads[i].Latest.Muted = true, true
			threads[i].Tally.Muted, threads[i].Tally.Unread = t.Unread, 0
		}
		// A category's mute marks the preview, as List does, and leaves
		// the thread's counts whole: they are not kept by category.
		if prefs.MutesCategory(t.Latest.Category) {
			threads[i].Latest.Muted = true
		}
	}
	res.threads = threads
	return res, true, nil
}

// threadCounts returns the threads of cands (threads' own counters, of
// parts' partitions) that u sees a message of, with their counts, latest
// activity first: their counters, u's counters of its receipts of the
// shared ones, less the partitions' expired entries (stats) and u's dead
// receipts (of tombstones), as threadTallies adds them. It reads u's
// receipts' counters and, to check that they are one view with stats and
// cands, the candidates' own counters and the versions again, by key: ok
// is false if a write came between. The threads of a partition read
// from the store with their tallies (r.tallied: u's, and a shared one no
// snapshot serves) are not read by key: the same Query reads them again,
// and the partition's c#* is read by key for its version. Each Rev as
// read and the
// version as stats read it prove them one view with stats: a write to
// one of them after the first read changes its Rev, and one to the
// partition after stats' read changes the version, so none came between
// the two first reads, whichever was first.
//
// Equal versions make the counters read by key one view with stats only
// if they were read as of one instant with their version: a removal of a
// record stats lists as expired (or of a dead receipt), landing between
// a BatchGetItem's reads of c#* and of the thread's counter, would be
// taken out twice. So a partition whose counters read by key the view
// takes something out of (stats has expired entries of one of their
// threads, or, for u's partition, tombstones of one: u's dead receipts)
// has them read as one isolated read (driver.StatsQuery.Isolated: on
// DynamoDB a TransactGetItems, 2 read units a counter); the others, as
// a rule every partition, read them item by item (1 read unit each).
func (ib *Inbox) threadCounts(ctx context.Context, v *view, u User, parts []Partition, stats []driver.Stats, cands []driver.Counter, tombstones []driver.Record, r threadsRead, now time.Time) ([]Thread, previewed, bool, error) {
	keys := make([][]driver.Counter, len(parts))   // counters to read again, by partition
	byKeys := map[driver.Key]bool{}                // the candidates read again
	var tallied []driver.Counter                   // u's threads read with their tallies
	listed := make([][]driver.Counter, len(parts)) // each partition's threads among cands, as the first round read them
	snaps := make([]*snapshot, len(parts))         // the shared partitions' snapshots in v (nil: read from the store)
	for i := 1; i < len(parts); i++ {
		var err error
		if snaps[i], err = v.snapshot(ctx, parts[i]); err != nil {
			return nil, previewed{}, false, err
		}
	}
	for _, c := range cands {
		i := slices.Index(parts, c.Partition)
		if i < 0 {
			continue
		}
		listed[i] = append(listed[i], c)
		if c.Partition.IsShared() {
			// u's receipts of its messages, in u's partition.
			keys[0] = append(keys[0], driver.Counter{Thread: c.Thread, Group: c.Partition.Group})
			if s := snaps[i]; s != nil && slices.Contains(s.threads, c) {
				continue // the snapshot is one view with its stats
			}
			if snaps[i] == nil && r.tallied[i] {
				continue // its tallies as read, checked as u's are below
			}
			// A thread below those the snapshot holds was read from the
			// store, later than the snapshot's stats: read by key, it is
			// checked against their version below.
		} else if r.tallied[0] {
			tallied = append(tallied, c)
			continue
		}
		keys[i] = append(keys[i], driver.Counter{Thread: c.Thread})
		byKeys[driver.Key{Partition: c.Partition, ID: c.Thread}] = true
	}
	// A partition whose listed threads' tallies come from the first
	// round's read (u's, and a shared one no snapshot serves) has its
	// version read again, by key: with each thread's Rev as sameSpan
	// reads it again, it proves them one view with its stats.
	for i := range parts {
		if len(keys[i]) == 0 && r.tallied[i] && snaps[i] == nil && len(listed[i]) > 0 {
			keys[i] = []driver.Counter{{}} // its total, for its version
		}
	}
	// A shared partition whose page lists its snapshot's threads and
	// reaches below them (a candidate below, or none left), where they
	// were read from the store: a thread below them that moved up since
	// the snapshot is in neither read. Its version, read by key (with the
	// candidates below, or c#* alone), shows the write.
	for i := 1; i < len(parts) && len(cands) > 0; i++ {
		s := snaps[i]
		if s == nil || s.threadsComplete || len(s.threads) == 0 || len(keys[i]) > 0 {
			continue
		}
		last := s.threads[len(s.threads)-1].Latest
		if (r.start == "" || r.start > last) && (cands[len(cands)-1].Latest < last || !r.more[i]) {
			keys[i] = []driver.Counter{{}} // its total, for its version
		}
	}
	again := make([]driver.Stats, len(parts))
	var dead, recs, cached []driver.Record
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		n := len(cands) // u's threads' counts come after this read: preview each
		if r.tallied[0] {
			n = r.limit
		}
		var read []driver.Key
		for _, k := range previewKeys(u, parts, stats[0], cands, tallied, n) {
			// A shared thread's newest message, from the snapshot of its
			// partition if it holds it (the view its counts are of).
			if k.Partition.IsShared() {
				rec, known, err := v.lookup(gctx, k)
				if err != nil {
					return err
				}
				if known {
					if rec != nil {
						cached = append(cached, *rec)
					}
					continue
				}
			}
			read = append(read, k)
		}
		recs, err = ib.getRecords(gctx, read)
		return err
	})
	// Each partition whose threads the first round read from the store
	// (u's, and a shared one no snapshot serves), read again with one
	// more: the page's span of its threads (down to the last candidate,
	// or all of them if its ran out) holds the same, so that no thread
	// written before its stats' read is missing while the counters read
	// by key show a later write; and, for those read with their
	// tallies, each unchanged (its Rev as read): with c#*'s version as
	// read with the stats, they are one view with the stats whichever was
	// read first.
	unchanged := make([]bool, len(parts))
	for i, p := range parts {
		unchanged[i] = true
		if len(cands) == 0 || snaps[i] != nil {
			continue // a snapshot is one view with its stats, or checked by its version
		}
		g.Go(func() (err error) {
			unchanged[i], err = ib.sameSpan(gctx, p, r.start, listed[i], r.tallied[i], r.more[i], cands[len(cands)-1].Latest)
			return err
		})
	}
	same := make([]bool, len(parts))
	for i, ks := range keys {
		if len(ks) == 0 {
			continue
		}
		isolated := takesOut(ks, stats[i].Expired) || i == 0 && takesOut(ks, tombstones)
		g.Go(func() (err error) {
			again[i], same[i], err = ib.countersByKey(gctx, parts[i], ks, isolated)
			return err
		})
	}
	g.Go(func() (err error) { dead, err = ib.deadReceipts(gctx, u, tombstones, now); return err })
	if err := g.Wait(); err != nil {
		return nil, previewed{}, false, err
	}
	byKey := make(map[driver.Key]driver.Record, len(recs)+len(cached))
	for _, r := range append(recs, cached...) {
		byKey[r.Key()] = r
	}
	own := map[driver.Key]driver.Counter{}
	for _, c := range cands {
		own[driver.Key{Partition: c.Partition, ID: c.Thread}] = c
	}
	// A write came between the rounds, or a partition's snapshot is older
	// than it: the caller reads again, from snapshots read anew, every
	// stale one at once (one a call would leave the next stale ones to
	// the next attempts, and a user of more stale partitions than
	// attempts with ErrConflict, with nothing written meanwhile).
	torn := slices.Contains(unchanged, false)
	rg, rctx := errgroup.WithContext(ctx)
	for i := range parts {
		if len(keys[i]) == 0 || same[i] && again[i].Version == stats[i].Version {
			continue
		}
		torn = true
		if i > 0 {
			rg.Go(func() error { return v.renew(rctx, parts[i], nil) })
		}
	}
	if err := rg.Wait(); err != nil || torn {
		return nil, previewed{}, false, err
	}
	// The view: each candidate's counter as read again by key (the
	// candidates of a partition read with ActivityOnly have no tallies)
	// or, from a snapshot, as it was read with its stats; u's receipts'
	// counters as read now. Equal versions make the two rounds one view.
	reread := map[driver.Key]driver.Counter{}
	view := make([]driver.Stats, len(parts))
	for i := range parts {
		view[i] = driver.Stats{Expired: stats[i].Expired}
		if len(keys[i]) == 0 {
			continue
		}
		for _, c := range again[i].Counters {
			if c.Thread == "" || c.Covered {
				continue // u's total, read for its version, with her positions
			}
			if c.Group != "" {
				view[i].Counters = append(view[i].Counters, c) // u's receipts of a shared thread's messages
				continue
			}
			k := driver.Key{Partition: parts[i], ID: c.Thread}
			if read, ok := own[k]; !ok || read.Latest != c.Latest {
				return nil, previewed{}, false, nil
			}
			reread[k] = c
		}
	}
	// u's read positions and what they cover, as the first round read
	// them with her version.
	for _, c := range stats[0].Counters {
		if c.Covered {
			view[0].Counters = append(view[0].Counters, c)
		}
	}
	for _, c := range cands {
		i := slices.Index(parts, c.Partition)
		if byKeys[driver.Key{Partition: c.Partition, ID: c.Thread}] {
			again, ok := reread[driver.Key{Partition: c.Partition, ID: c.Thread}]
			if !ok {
				return nil, previewed{}, false, nil // gone since the first round
			}
			c = again
		}
		view[i].Counters = append(view[i].Counters, c)
	}
	unknown := receiptHints(u, cands, again[0].Counters, byKey)
	// u's direct messages read with her positions in their threads, as
	// their counts count them.
	positions := driver.Positions(stats[0].Counters)
	for k, r := range byKey {
		byKey[k] = driver.Overlay(r, positions)
	}
	// What her read positions in groups' threads cover, from the stats
	// the rounds read as one view (one more round trip for their hour
	// buckets).
	covers, ok, err := ib.groupCovers(ctx, v, parts, stats, dead, now)
	if err != nil || !ok {
		return nil, previewed{}, false, err
	}
	return threadTallies(parts, view, dead, covers), previewed{byKey, unknown, positionsOf(stats[0].Counters)}, true, nil
}

// previewed is what threadCounts read of the previews of its threads: the
// records by key (u's receipts of shared threads' newest messages among
// them, as receiptHints knows them), and the keys of u's receipts it
// does not know.
type previewed struct {
	byKey   map[driver.Key]driver.Record
	unknown map[driver.Key]bool
	// positions are u's read positions, as read with the counts.
	positions readPositions
}

// sameSpan reports whether p's threads below start, read again, are
// those a first read listed on the page (listed, in order; with their Rev
// if revs), and whether no other thread of p's is in the page's span:
// above last, the page's last candidate's activity, or anywhere if p had
// none besides listed (more false).
func (ib *Inbox) sameSpan(ctx context.Context, p Partition, start string, listed []driver.Counter, revs, more bool, last string) (bool, error) {
	var again []driver.Counter
	q := driver.Query{Partition: p, Threads: true, ActivityOnly: true, Before: start}
	for len(again) <= len(listed) {
		q.Limit = len(listed) + 1 - len(again)
		res, err := ib.store.Query(ctx, q)
		if err != nil {
			return false, err
		}
		again = append(again, res.Threads...)
		if q.Before = res.Next; q.Before == "" {
			break
		}
	}
	n := min(len(again), len(listed))
	return n == len(listed) && slices.EqualFunc(again[:n], listed, func(a, b driver.Counter) bool {
		return a.Thread == b.Thread && a.Latest == b.Latest && (!revs || a.Rev == b.Rev)
	}) && (len(again) == n || more && again[n].Latest < last), nil
}

// threadsRead is what threadCounts needs of the reads of threadsPage: the
// activity the page starts below, its limit, whether every read of each
// partition's threads had their tallies, and whether each partition has
// threads besides the candidates.
type threadsRead struct {
	start   string
	limit   int
	tallied []bool
	more    []bool
}

// previewKeys returns the keys of the previews of cands to read: each
// one's newest message (in u's partition, or its shared one's and u's
// receipt of it), for the candidates that u may see a message of, down to
// the limit-th of those she surely does (a shared thread's count waits
// for u's receipts: it may be passed). Of u's threads read with their
// tallies (tallied), those whose counters, less u's expired records (st,
// u's stats), count none are passed: they are not listed.
func previewKeys(u User, parts []Partition, st driver.Stats, cands, tallied []driver.Counter, limit int) []driver.Key {
	var none map[threadKey]bool
	if len(tallied) > 0 {
		none = map[threadKey]bool{}
		for k, s := range threadSums(parts[:1], []driver.Stats{{Counters: tallied, Expired: st.Expired}}, nil, nil) {
			if k.group == "" && newTally(*s).Total <= 0 {
				none[k] = true
			}
		}
	}
	var keys []driver.Key
	n := 0 // the candidates previewed that are surely listed
	for _, c := range cands {
		if n == limit {
			break
		}
		if !c.Partition.IsShared() {
			if none[threadKey{"", c.Thread}] {
				continue
			}
			n++
		}
		// A shared thread's: its newest message alone, u's receipt of it
		// known from u's counter of the thread (see receiptHints).
		keys = append(keys, driver.Key{Partition: c.Partition, ID: c.Latest})
	}
	return keys
}

// receiptHints adds to byKey u's receipt of each shared candidate's
// newest message (its activity) that u's counters of her receipts of its
// thread (mine, u's counters as read by key: those missing are none)
// show, from their receipts' hint (driver.Counter.Latest and Top): none
// where she has no receipt of a thread's messages, or none above one
// below it; her marks on it where the hint is of that message. It
// returns the keys of the receipts the hint cannot tell (an earlier
// version's counter, or one whose Latest is above the thread's newest
// message as read): their threads' previews are read as those of a
// message u cannot see (see previews).
func receiptHints(u User, cands, mine []driver.Counter, byKey map[driver.Key]driver.Record) map[driver.Key]bool {
	hints := map[threadKey]driver.Counter{}
	for _, c := range mine {
		if c.Group != "" && c.Thread != "" {
			hints[threadKey{c.Group, c.Thread}] = c
		}
	}
	var unknown map[driver.Key]bool
	for _, c := range cands {
		if !c.Partition.IsShared() {
			continue
		}
		k := driver.Key{Partition: u.Partition(), ID: c.Latest}
		h, ok := hints[threadKey{c.Partition.Group, c.Thread}]
		switch {
		case !ok || h.Latest != "" && h.Latest < c.Latest:
		case h.Latest == c.Latest:
			if !h.Top.IsZero() {
				byKey[k] = driver.Record{Partition: u.Partition(), Receipt: true, Message: driver.Message{ID: c.Latest, Thread: c.Thread}}.WithState(h.Top)
			}
		default:
			if unknown == nil {
				unknown = map[driver.Key]bool{}
			}
			unknown[k] = true
		}
	}
	return unknown
}

// takesOut reports whether recs, expired entries or tombstones of a
// partition's records, are of one of the threads of keys (counters read
// by key): a view that takes them out of that partition's counters (the
// expired entries), or out of u's (the dead receipts of the tombstones),
// needs those counters read as one isolated read with their version.
func takesOut(keys []driver.Counter, recs []driver.Record) bool {
	for _, r := range recs {
		if t := r.Message.Thread; t != "" && slices.ContainsFunc(keys, func(k driver.Counter) bool { return k.Thread == t }) {
			return true
		}
	}
	return false
}

// countersByKey reads p's counters with keys (Store.Stats with Keys, each
// key once, none of them p's total) and p's version, isolated if asked,
// in one request per driver.MaxStatsKeys keys, made in parallel. same is
// false if the requests read different versions: a write came between
// them, and they are not one view.
func (ib *Inbox) countersByKey(ctx context.Context, p Partition, keys []driver.Counter, isolated bool) (st driver.Stats, same bool, err error) {
	chunks := slices.Collect(slices.Chunk(keys, driver.MaxStatsKeys))
	read := make([]driver.Stats, len(chunks))
	g, gctx := errgroup.WithContext(ctx)
	for i, ks := range chunks {
		g.Go(func() (err error) {
			read[i], err = ib.store.Stats(gctx, driver.StatsQuery{Partition: p, Keys: ks, Isolated: isolated})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return driver.Stats{}, false, err
	}
	st.Version, same = read[0].Version, true
	for _, r := range read {
		st.Counters = append(st.Counters, r.Counters...)
		same = same && r.Version == st.Version
	}
	return st, same, nil
}

// threadsBinding is what a cursor of ListThreads is valid for: the user
// and the groups whose threads it merges, behind a byte no List binding
// holds.
func threadsBinding(u User) []byte {
	return append([]byte("\x02threads\x00"), cursorBinding(u, ListOptions{})...)
}

// threadKey names one of a user's threads: its audience (as Thread.Group)
// and its key.
type threadKey struct{ group, thread string }

// threadTallies returns u's threads that List shows a message of, latest
// activity first, with their counts, from the stats (with the threads'
// counters) of parts, u's partition first, and dead, u's receipts of
// broadcasts removed before they expired.
func threadTallies(parts []Partition, stats []driver.Stats, dead []driver.Record, covers map[driver.GroupThread]*groupCover) []Thread {
	sums := threadSums(parts, stats, dead, covers)
	out := make([]Thread, 0, len(sums))
	for k, s := range sums {
		t := Thread{Thread: k.thread, Group: k.group, Activity: s.Latest, Tally: newTally(*s)}
		if t.Total > 0 && t.Activity != "" {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b Thread) int {
		if c := strings.Compare(b.Activity, a.Activity); c != 0 {
			return c
		}
		return strings.Compare(a.Group+"\x00"+a.Thread, b.Group+"\x00"+b.Thread)
	})
	return out
}

// threadSums adds up, by thread and audience, the threads' counters of
// stats (of parts, u's partition first), less the partitions' expired
// entries and dead, u's receipts of broadcasts removed before they
// expired: the sums threadTallies shows.
//
// covers are what u's read positions in groups' threads cover (see
// groupCovers): read.
func threadSums(parts []Partition, stats []driver.Stats, dead []driver.Record, covers map[driver.GroupThread]*groupCover) map[threadKey]*driver.Counter {
	source := map[string]bool{"": true} // the audiences listed
	for _, p := range parts[1:] {
		source[p.Group] = true
	}
	sums := map[threadKey]*driver.Counter{}
	// add adds c, a counter or change of partition p, to its thread's sum.
	add := func(p Partition, c driver.Counter) {
		if c.Thread == "" || c.Covered && (c.Category != "" || c.Group != "") {
			return // a group's thread's: with what it covers, below
		}
		if c.Covered {
			// The messages her read position covers are read.
			c = driver.Counter{Thread: c.Thread, Read: c.Unread}
		}
		k := threadKey{c.Group, c.Thread}
		switch {
		case p.IsShared():
			k.group = p.Group
			c = driver.Counter{Published: c.Published, Latest: c.Latest}
		case c.Group != "":
			// u's receipts' hint is no activity of the thread's.
			c.Latest, c.Top, c.TopEntry = "", driver.State{}, ""
		}
		if !source[k.group] {
			return // u's receipts of a group u left
		}
		s := sums[k]
		if s == nil {
			s = &driver.Counter{}
			sums[k] = s
		}
		s.Add(c)
	}
	positions := driver.Positions(stats[0].Counters)
	for i, st := range stats {
		for _, c := range st.Counters {
			add(parts[i], c)
		}
		// Records that expired are counted out, as Counts does.
		for _, e := range st.Expired {
			if i == 0 {
				e = driver.Overlay(e, positions)
			}
			for _, d := range driver.RemovalDeltas(e) {
				add(parts[i], d)
			}
		}
	}
	for _, r := range dead {
		for _, d := range driver.RemovalDeltas(r) {
			add(parts[0], d)
		}
	}
	for k, c := range covers {
		add(parts[0], driver.Counter{Group: k.Group, Thread: k.Thread, Read: c.read[""]})
	}
	return sums
}

// previews sets each thread's Latest: its activity's message, as read
// holds it with u's receipt of it, or, where u cannot see that one or
// read does not know u's receipt of it, the newest the thread's List
// shows, read from the thread index (all such threads in one more round
// trip). It returns the groups of the threads whose Latest it read so
// (Thread.Group: "" for u's direct messages).
func (ib *Inbox) previews(ctx context.Context, v *view, u User, threads []Thread, read previewed, now time.Time) ([]string, error) {
	if len(threads) == 0 {
		return nil, nil
	}
	byKey := read.byKey
	o := ListOptions{}
	var missing []int
	for i, t := range threads {
		f, ok := feedRecord{}, false
		k := driver.Key{Partition: u.Partition(), ID: t.Activity}
		own, hasOwn := byKey[k]
		if t.Group == "" {
			f, ok = feedRecord{Record: own}, hasOwn && !own.Receipt
		} else {
			var shared driver.Record
			shared, ok = byKey[driver.Key{Partition: u.Scope.Group(t.Group), ID: t.Activity}]
			ok = ok && !read.unknown[k]
			f = feedRecord{Record: shared}
			if hasOwn && own.Receipt {
				f.receipt = &own
			}
		}
		f = f.overlay(read.positions) // a group chat's read position lends its read
		if ok && f.Record.Message.Thread == t.Thread && visible(f, o, now) {
			threads[i].Latest = f.message()
			continue
		}
		missing = append(missing, i)
	}
	errs := make([]error, len(missing))
	done := make(chan struct{})
	for j, i := range missing {
		go func() {
			defer func() { done <- struct{}{} }()
			threads[i].Latest, errs[j] = ib.newestVisible(ctx, v, u, threads[i], read.positions, now)
		}()
	}
	for range missing {
		<-done
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	late := make([]string, len(missing))
	for j, i := range missing {
		late[j] = threads[i].Group
	}
	return late, nil
}

// sameVersions reports whether the partitions of parts that previews
// read after the counts (u's, whose receipts and direct messages they
// read, and each shared one of groups that no snapshot of v serves) are
// at the versions stats read: then nothing was written to them between.
// It reads their versions at once, by key (each partition's total).
func (ib *Inbox) sameVersions(ctx context.Context, v *view, parts []Partition, stats []driver.Stats, groups []string) (bool, error) {
	check := []int{0}
	for i, p := range parts[1:] {
		if !slices.Contains(groups, p.Group) {
			continue
		}
		s, err := v.snapshot(ctx, p)
		if err != nil {
			return false, err
		}
		if s == nil {
			check = append(check, i+1)
		}
	}
	same := make([]bool, len(check))
	g, gctx := errgroup.WithContext(ctx)
	for j, i := range check {
		g.Go(func() error {
			st, err := ib.store.Stats(gctx, driver.StatsQuery{Partition: parts[i], Keys: []driver.Counter{{}}})
			same[j] = err == nil && st.Version == stats[i].Version
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return false, err
	}
	return !slices.Contains(same, false), nil
}

// newestVisible returns the newest message of thread t that List with the
// thread shows u, below t's activity, read from the thread index of t's
// partition (with u's receipts of a shared thread's messages by key); a
// zero Message if there is none.
func (ib *Inbox) newestVisible(ctx context.Context, v *view, u User, t Thread, positions readPositions, now time.Time) (Message, error) {
	q := driver.Query{Partition: u.Partition(), Thread: t.Thread, Limit: DefaultPageSize, Now: now, Archived: driver.NotArchived}
	s := &feedStream{q: q, next: t.Activity, more: true}
	m := merger{streams: []*feedStream{s}}
	if t.Group != "" {
		s.q.Partition, s.receiptsIn = u.Scope.Group(t.Group), u.Partition()
		// The merger takes stream 0 for u's: an empty one stands for it.
		m.streams = []*feedStream{{}, s}
	}
	// The activity's own message is included: idAbove keeps it.
	s.next = idAbove(t.Activity)
	o := ListOptions{Thread: t.Thread}
	for {
		if err := ib.fetch(ctx, v, m.streams); err != nil {
			return Message{}, err
		}
		for {
			rec, ok, progressed := m.pop()
			if !progressed {
				break
			}
			rec = rec.overlay(positions)
			if ok && visible(rec, o, now) {
				return rec.message(), nil
			}
		}
		if m.exhausted() {
			return Message{}, nil
		}
	}
}

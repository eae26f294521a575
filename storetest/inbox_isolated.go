package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// isolatedTests are the Inbox subtests about the counters it reads by
// key against a partition's stats (driver.StatsQuery.Keys).
func isolatedTests() []suiteTest {
	return []suiteTest{
		{"ListThreadsTornCounters", testListThreadsTornCounters},
		{"MarkAllReadThreadTornCounters", testMarkAllReadThreadTornCounters},
		{"ListThreadsIsolatedOnlyWhenNeeded", testListThreadsIsolatedOnlyWhenNeeded},
		{"ListThreadsFullPage", testListThreadsFullPage},
		{"ListThreadsTornThreadSet", testListThreadsTornThreadSet},
		{"ListThreadsTornGroupThreadSet", testListThreadsTornGroupThreadSet},
		{"ListThreadsPreviewsListed", testListThreadsPreviewsListed},
		{"ListThreadsGroupTalliesAsListed", testListThreadsGroupTalliesAsListed},
	}
}

// tearingStore is a Store whose Stats with Keys of partition part, not
// Isolated, reads part's version first and the counters after between
// has run (once, and after a Stats of part without Keys returned, so
// that its write lands after those stats): what the contract allows of
// such a read, and what DynamoDB's BatchGetItem does when a write lands
// between its reads of c#* and of a counter (or between its first
// request and that of its unprocessed keys). An Isolated one runs between
// first, then reads as the Store it wraps: the write lands before it. It
// counts the reads by key of part of each kind.
//
// With a tear of tearThreads, it tears instead a ListThreads' first reads
// of part, its stats and its threads' counters (a Query with Threads),
// which the Inbox makes at once: the first of the two to run (stats
// first, or threads first) returns, then between runs, then the other
// reads: what DynamoDB does when a write lands between two requests in
// flight at once.
type tearingStore struct {
	driver.Store
	part    driver.Partition
	between func() error
	threads tearThreads

	// holdOthers has the stats of other partitions read after between
	// has run, as when they land later than part's.
	holdOthers bool

	once     sync.Once
	err      error       // between's
	full     atomic.Bool // a Stats of part without Keys has returned
	listed   atomic.Bool // a Query of part's threads has returned
	tore     atomic.Bool // between has run
	isolated atomic.Int64
	plain    atomic.Int64
}

// tearThreads says which of a ListThreads' first reads of a partition's
// stats and threads a tearingStore makes first, the write landing between
// them: tearByKey tears the reads by key instead.
type tearThreads int

const (
	tearByKey tearThreads = iota
	tearStatsFirst
	tearThreadsFirst
)

// Query reads as the type's doc says.
func (s *tearingStore) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	if q.Partition != s.part || !q.Threads || s.threads == tearByKey {
		return s.Store.Query(ctx, q)
	}
	if s.threads == tearStatsFirst {
		s.tearAfter(&s.full)
		return s.Store.Query(ctx, q)
	}
	res, err := s.Store.Query(ctx, q)
	s.listed.Store(true)
	return res, err
}

// Stats reads as the type's doc says.
func (s *tearingStore) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	switch {
	case q.Partition != s.part:
		if s.holdOthers && len(q.Keys) == 0 && q.Hour.IsZero() {
			for deadline := time.Now().Add(10 * time.Second); !s.tore.Load() && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		return s.Store.Stats(ctx, q)
	case len(q.Keys) == 0:
		if s.threads == tearThreadsFirst && q.Hour.IsZero() {
			s.tearAfter(&s.listed)
		}
		st, err := s.Store.Stats(ctx, q)
		if q.Hour.IsZero() {
			s.full.Store(true)
		}
		return st, err
	case s.threads != tearByKey:
		return s.Store.Stats(ctx, q)
	case q.Isolated:
		s.isolated.Add(1)
		s.tear()
		return s.Store.Stats(ctx, q)
	}
	s.plain.Add(1)
	total, err := s.Store.Stats(ctx, driver.StatsQuery{Partition: q.Partition, Keys: []driver.Counter{{}}})
	if err != nil {
		return driver.Stats{}, err
	}
	s.tear()
	st, err := s.Store.Stats(ctx, q)
	st.Version = total.Version
	return st, err
}

// tear runs between once, after a Stats of part without Keys returned
// (waiting for one made beside the caller's read, up to 10 s).
func (s *tearingStore) tear() { s.tearAfter(&s.full) }

// tearAfter runs between once, after done is set (waiting for the read
// that sets it, made beside the caller's, up to 10 s).
func (s *tearingStore) tearAfter(done *atomic.Bool) {
	s.once.Do(func() {
		for deadline := time.Now().Add(10 * time.Second); !done.Load() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		s.err = s.between()
		s.tore.Store(true)
	})
}

// tearing returns an Inbox over a tearingStore of e's store that tears
// p's reads as tt says with the delivery of the removals h holds, and the
// store.
func (e *env) tearing(h Harness, p driver.Partition, tt tearThreads) (*inbox.Inbox, *tearingStore) {
	s := &tearingStore{Store: e.store, part: p, threads: tt, between: func() error {
		_, err := h.Deliver(e.ctx)
		return err
	}}
	return inbox.New(s, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0)), s
}

// testListThreadsTornCounters: ListThreads counts a thread exactly when
// the removal of one of its expired messages lands while the thread's
// counters are read by key, after the stats that list the message as
// expired: a read that took the counters as they stood after the removal,
// with the version from before it, took the message out twice, and the
// thread (of a user's direct messages, or of a group's) vanished from the
// list. It asks for those counters as one isolated read, unless it read
// them with their tallies in its first round (driver.QueryResult.Tallied:
// u's threads, and a group's with the cache off); then it counts exactly
// when the removal lands between that read and the stats' (the thread
// counted the message the stats no longer took out), or between the
// stats' and it (the stats took out what the thread no longer counted).
func testListThreadsTornCounters(e *env) {
	for _, tt := range []tearThreads{tearByKey, tearStatsFirst, tearThreadsFirst} {
		testListThreadsTorn(e, tt)
	}
}

// testListThreadsTorn is testListThreadsTornCounters with tear tt.
func testListThreadsTorn(e *env, tt tearThreads) {
	h := e.needHarness()
	ann := e.member("ann", "crew")
	for _, c := range []struct {
		what string
		p    driver.Partition
		send func(inbox.Draft) driver.Message
	}{
		{"ann's direct thread", e.part("ann"), func(d inbox.Draft) driver.Message {
			d.Thread = "dm"
			return copyFor(e.publish(d, "ann").Message, "ann")
		}},
		{"the group's thread", groupOf(e.scope, "crew"), func(d inbox.Draft) driver.Message {
			d.Thread = "group"
			return e.broadcastTo("crew", d)
		}},
	} {
		gone := c.send(inbox.Draft{Title: "expires", TTL: time.Hour})
		e.clock.Advance(time.Second)
		c.send(inbox.Draft{Title: "stays"})
		e.clock.Advance(time.Hour)
		e.remove(h, driver.Key{Partition: c.p, ID: gone.ID}) // its removal waits for Deliver
		pending, tallied := e.expiredIn(c.p, gone.ID), e.tallied(c.p)
		if tt != tearByKey && !tallied {
			e.deliver(h)
			continue // read by key: the tear by key's case
		}
		ib, s := e.tearing(h, c.p, tt)
		got, err := ib.ListThreads(e.ctx, ann, inbox.ThreadOptions{})
		if err != nil || s.err != nil {
			e.t.Fatalf("ListThreads(ann) with the removal in %s landing during its read (tear %d): %v (the removal: %v)", c.what, tt, err, s.err)
		}
		if pending && tt == tearByKey && s.isolated.Load() == 0 && !tallied {
			e.t.Errorf("ListThreads(ann) with an expired message of %s pending read its counters by key %d times, none isolated", c.what, s.plain.Load())
		}
		feed := e.listAll(ann, inbox.ListOptions{Limit: inbox.MaxPageSize})
		archived := e.listAll(ann, inbox.ListOptions{Limit: inbox.MaxPageSize, Archived: true})
		if diff := threadsDiff(got.Threads, feed, archived, nil, inbox.Preferences{}); diff != "" {
			e.t.Errorf("ListThreads(ann) with the removal in %s landing during its read (tear %d) differs from List:\n%s", c.what, tt, diff)
		}
	}
	e.wantThreadsFromFeed(ann)
}

// testMarkAllReadThreadTornCounters: MarkAllRead of a thread marks its
// unread messages when the removal of one of its expired messages lands
// while the thread's counters are read by key: read with a version from
// before the removal, the counters said the thread had none left, and it
// marked nothing.
func testMarkAllReadThreadTornCounters(e *env) {
	h := e.needHarness()
	ann := e.user("ann")
	gone := copyFor(e.publish(inbox.Draft{Title: "expires", Thread: "dm", TTL: time.Hour}, "ann").Message, "ann")
	e.clock.Advance(time.Second)
	e.publish(inbox.Draft{Title: "stays", Thread: "dm"}, "ann")
	e.clock.Advance(time.Hour)
	e.remove(h, driver.Key{Partition: e.part("ann"), ID: gone.ID})
	pending := e.expiredIn(e.part("ann"), gone.ID)
	ib, s := e.tearing(h, e.part("ann"), tearByKey)
	n, err := ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"})
	if err != nil || s.err != nil || n != 1 {
		e.t.Errorf("MarkAllRead(ann, dm) with the removal landing during its read = %d, %v (the removal: %v); want 1, nil", n, err, s.err)
	}
	// Her direct messages of the thread go by a read position, whose
	// write is conditional on her counter version as read with the
	// expired entries: the removal fails it, and it reads again; no
	// isolated read is needed.
	_ = pending
	e.wantFeed(ann, inbox.ListOptions{Thread: "dm", UnreadOnly: true})
	e.wantCountsFromFeed(ann)
	e.wantThreadsFromFeed(ann)
}

// tallied reports whether a Query of p's threads with ActivityOnly reads
// their tallies (driver.QueryResult.Tallied).
func (e *env) tallied(p driver.Partition) bool {
	e.t.Helper()
	res, err := e.store.Query(e.ctx, driver.Query{Partition: p, Threads: true, ActivityOnly: true, Limit: 1})
	if err != nil {
		e.t.Fatalf("Query threads of %s: %v", p.PK(), err)
	}
	return res.Tallied
}

// expiredIn reports whether p's stats list the ledger entry of message
// id as expired, its removal not accounted yet.
func (e *env) expiredIn(p driver.Partition, id string) bool {
	e.t.Helper()
	return slices.ContainsFunc(e.stats(p, e.clock.Now()).Expired, func(r driver.Record) bool { return r.Message.ID == id })
}

// testListThreadsIsolatedOnlyWhenNeeded: ListThreads and MarkAllRead of a
// thread read the counters by key item by item (on DynamoDB a
// BatchGetItem, 1 read unit each) while nothing is taken out of them, and
// as one isolated read (a TransactGetItems, 2 each) only while the
// partition holds expired entries of a thread they read, or, for the
// user's partition, while a shared one holds a tombstone of one (the
// user's dead receipts); the counts are exact either way.
func testListThreadsIsolatedOnlyWhenNeeded(e *env) {
	ann := e.member("ann", "crew")
	c := &countingStore{Store: e.store}
	ib := inbox.New(c, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0))
	// check calls ListThreads, then MarkAllRead of thread, and checks
	// whether each read counters by key isolated.
	check := func(step, thread string, listIsolated, markIsolated bool) {
		e.t.Helper()
		for _, call := range []struct {
			what     string
			isolated bool
			run      func() error
		}{
			{"ListThreads(ann)", listIsolated, func() error { _, err := ib.ListThreads(e.ctx, ann, inbox.ThreadOptions{}); return err }},
			{"MarkAllRead(ann, " + thread + ")", markIsolated, func() error {
				_, err := ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: thread})
				return err
			}},
		} {
			c.isolated.Store(0)
			c.plain.Store(0)
			if err := call.run(); err != nil {
				e.t.Fatalf("%s %s: %v", call.what, step, err)
			}
			if got := c.isolated.Load() > 0; got != call.isolated || !call.isolated && c.plain.Load() == 0 {
				e.t.Errorf("%s %s: %d isolated reads by key, %d item by item; want isolated ones %v", call.what, step, c.isolated.Load(), c.plain.Load(), call.isolated)
			}
		}
		e.wantThreadsFromFeed(ann)
		e.wantCountsFromFeed(ann)
	}
	e.publish(inbox.Draft{Title: "dm", Thread: "dm"}, "ann")
	e.broadcastTo("crew", inbox.Draft{Title: "group", Thread: "group"})
	e.clock.Advance(time.Second)
	check("with nothing expired", "dm", false, false)

	e.publish(inbox.Draft{Title: "ephemeral, elsewhere", TTL: time.Hour}, "ann") // in no thread
	e.clock.Advance(time.Hour + time.Second)
	check("with a message of no thread expired", "dm", false, false)

	ephemeral := copyFor(e.publish(inbox.Draft{Title: "ephemeral", Thread: "dm", TTL: time.Hour}, "ann").Message, "ann")
	e.clock.Advance(time.Hour + time.Second)
	// A store that accounts a removal as the record expires (memstore
	// without a lag) leaves no expired entry to take out.
	pending := e.expiredIn(e.part("ann"), ephemeral.ID)
	// ListThreads reads ann's threads' counters by key only if it did not
	// read them with their tallies.
	check("with a message of the thread expired", "dm", pending && !e.tallied(e.part("ann")), pending)

	h, ok := e.harness()
	if !ok {
		return
	}
	e.remove(h, driver.Key{Partition: e.part("ann"), ID: ephemeral.ID})
	e.deliver(h) // the expired messages' removals
	check("once the expired messages' removals are accounted", "dm", false, false)

	// A broadcast ann read, removed before it expired: its tombstone stands
	// in the group's stats, and ann's receipt of it is dead.
	removed := e.broadcastTo("crew", inbox.Draft{Title: "removed", Thread: "group"})
	e.clock.Advance(time.Second)
	e.broadcastTo("crew", inbox.Draft{Title: "stays", Thread: "group"})
	e.markRead(ann, removed.ID, true)
	e.remove(h, driver.Key{Partition: groupOf(e.scope, "crew"), ID: removed.ID})
	e.deliver(h)
	check("with a tombstone of another thread", "dm", true, false)
	check("with a tombstone of the thread", "group", true, true)
}

// testListThreadsFullPage: ListThreads pages of MaxPageSize threads, of
// a user with more (each page reads more counters by key than one
// Stats takes), list every thread once with its counts.
func testListThreadsFullPage(e *env) {
	ann := e.member("ann", "crew")
	const threads = inbox.MaxPageSize + 5
	for i := range threads {
		if i%3 == 0 {
			e.broadcastTo("crew", inbox.Draft{Title: "group", Thread: fmt.Sprintf("g%03d", i)})
		} else {
			e.publish(inbox.Draft{Title: "dm", Thread: fmt.Sprintf("d%03d", i)}, "ann")
		}
		e.clock.Advance(time.Second)
	}
	got := listThreads(e.t, e.ctx, e.ib, ann, inbox.MaxPageSize)
	if len(got) != threads {
		e.t.Errorf("ListThreads(ann) by pages of %d: %d threads, want %d", inbox.MaxPageSize, len(got), threads)
	}
	e.wantThreadsFromFeed(ann)
}

// testListThreadsTornThreadSet: ListThreads lists one view of u's
// partition when writes land between its first round's read of u's
// threads and its read of u's stats: a new thread of u's, then a mark
// of a shared thread's message. A page that shows the mark (u's
// receipts, read by key with the stats' version) without the new thread
// (absent from the threads read before it) is of no instant: it must
// read again. So whether u has a thread of her own besides or not, the
// new thread's message is the newest or, from a publisher whose clock
// lags, older than all (listed last), and the threads are read with
// their tallies or by key.
func testListThreadsTornThreadSet(e *env) {
	n := 0
	for _, byKey := range []bool{false, true} {
		for _, c := range []struct {
			own bool
			lag time.Duration
		}{{false, 0}, {true, 0}, {true, 3 * time.Second}} {
			own := c.own
			n++
			id := fmt.Sprintf("u%d", n)
			u := e.member(id, "crew")
			if own {
				e.publish(inbox.Draft{Title: "old", Thread: fmt.Sprintf("old%d", n)}, id)
				e.clock.Advance(time.Second)
			}
			shared := e.broadcastTo("crew", inbox.Draft{Title: "all", Thread: fmt.Sprintf("crew%d", n)})
			e.clock.Advance(time.Second)
			at := &instants{e: e, u: u}
			snap := at.snap
			snap()
			late := inbox.New(e.store, inbox.WithClock(func() time.Time { return e.clock.Now().Add(-c.lag) }))
			s := &tearingStore{Store: e.store, part: e.part(id), threads: tearThreadsFirst, between: func() error {
				if _, err := late.Publish(e.ctx, e.scope, []string{id}, inbox.Draft{Title: "dm", Thread: fmt.Sprintf("dm%d", n)}); err != nil {
					return err
				}
				snap()
				if _, err := e.ib.MarkRead(e.ctx, u, shared.ID); err != nil {
					return err
				}
				snap()
				return nil
			}}
			var over driver.Store = s
			if byKey {
				over = untallied{s}
			}
			ib := inbox.New(over, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0))
			got, err := ib.ListThreads(e.ctx, u, inbox.ThreadOptions{})
			if err != nil || s.err != nil {
				e.t.Fatalf("ListThreads(%s) with writes landing during its first round: %v (the writes: %v)", id, err, s.err)
			}
			if diff := at.diff(got.Threads); diff != "" {
				e.t.Errorf("ListThreads(%s) (by key %v, a thread of her own %v, its clock %v behind) with a new thread and a mark landing during its first round lists what she had at no instant:\n%s", id, byKey, own, c.lag, diff)
			}
		}
	}
}

// instants records u's feed and archive at instants of a test, for a
// ListThreads that must show what one of them held.
type instants struct {
	e      *env
	u      driver.User
	states []struct{ feed, archived []driver.Message }
}

// snap records the instant.
func (at *instants) snap() {
	at.states = append(at.states, struct{ feed, archived []driver.Message }{
		at.e.listAll(at.u, inbox.ListOptions{Limit: inbox.MaxPageSize}),
		at.e.listAll(at.u, inbox.ListOptions{Limit: inbox.MaxPageSize, Archived: true}),
	})
}

// diff returns "" if threads are what one of the instants held, else how
// they differ from each.
func (at *instants) diff(threads []inbox.Thread) string {
	var diffs []string
	for i, st := range at.states {
		diff := threadsDiff(threads, st.feed, st.archived, nil, inbox.Preferences{})
		if diff == "" {
			return ""
		}
		diffs = append(diffs, fmt.Sprintf("instant %d:\n%s", i, diff))
	}
	return strings.Join(diffs, "\n")
}

// testListThreadsTornGroupThreadSet is testListThreadsTornThreadSet for
// a group's partition, read from the store (the cache off): a new thread
// of the group, then u's mark of another group's thread's message, land
// between the first round's read of the group's threads and of its stats
// (u's stats read after them). A page that shows the mark without the new
// thread is of no instant.
func testListThreadsTornGroupThreadSet(e *env) {
	for n, lag := range []time.Duration{0, 3 * time.Second} {
		id, g, h := fmt.Sprintf("g%d", n), fmt.Sprintf("team%d", n), fmt.Sprintf("other%d", n)
		u := e.member(id, g, h)
		marked := e.broadcastTo(h, inbox.Draft{Title: "other", Thread: "other"})
		e.clock.Advance(time.Second)
		e.broadcastTo(g, inbox.Draft{Title: "all", Thread: "old"})
		e.clock.Advance(time.Second)
		at := &instants{e: e, u: u}
		snap := at.snap
		snap()
		late := inbox.New(e.store, inbox.WithClock(func() time.Time { return e.clock.Now().Add(-lag) }))
		s := &tearingStore{Store: e.store, part: groupOf(e.scope, g), threads: tearThreadsFirst, holdOthers: true, between: func() error {
			if _, err := late.BroadcastGroup(e.ctx, e.scope, g, inbox.Draft{Title: "new", Thread: "new"}); err != nil {
				return err
			}
			snap()
			if _, err := e.ib.MarkRead(e.ctx, u, marked.ID); err != nil {
				return err
			}
			snap()
			return nil
		}}
		ib := inbox.New(s, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0))
		got, err := ib.ListThreads(e.ctx, u, inbox.ThreadOptions{})
		if err != nil || s.err != nil {
			e.t.Fatalf("ListThreads(%s) with writes landing during its first round: %v (the writes: %v)", id, err, s.err)
		}
		if len(at.states) != 3 {
			e.t.Fatalf("ListThreads(%s): the writes did not land during its first round (%d instants)", id, len(at.states))
		}
		if diff := at.diff(got.Threads); diff != "" {
			e.t.Errorf("ListThreads(%s) (the group's clock %v behind) with a new group thread and a mark landing during its first round lists what she had at no instant:\n%s", id, lag, diff)
		}
	}
}

// testListThreadsPreviewsListed: ListThreads reads the preview of each
// thread it lists with the counters, when a newer thread of a group that
// u sees nothing of (she deleted its message) comes first: no read of a
// thread's newest messages from the thread index, one more round trip.
func testListThreadsPreviewsListed(e *env) {
	ann := e.member("ann", "crew")
	e.publish(inbox.Draft{Title: "dm", Thread: "dm"}, "ann")
	e.clock.Advance(time.Second)
	gone := e.broadcastTo("crew", inbox.Draft{Title: "all", Thread: "crew-chat"})
	e.clock.Advance(time.Second)
	if _, err := e.ib.Delete(e.ctx, ann, gone.ID); err != nil {
		e.t.Fatalf("Delete: %v", err)
	}
	counted := &countingStore{Store: e.store}
	ib := inbox.New(counted, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0))
	page, err := ib.ListThreads(e.ctx, ann, inbox.ThreadOptions{Limit: 1})
	if err != nil || len(page.Threads) != 1 || page.Threads[0].Thread != "dm" || page.Threads[0].Latest.Title != "dm" {
		e.t.Fatalf("ListThreads(ann, limit 1) = %+v, %v; want thread dm with its message", page, err)
	}
	if n := counted.threadQueries.Load(); n != 0 {
		e.t.Errorf("ListThreads(ann, limit 1) read the thread index %d times, want none: the listed thread's preview is read with the counters", n)
	}
	e.wantThreadsFromFeed(ann)
}

// keysStore is a Store that records the threads of the counters read by
// key (Stats with Keys) of each partition.
type keysStore struct {
	driver.Store
	mu      sync.Mutex
	threads map[driver.Partition][]string
}

// Stats records q's keys of threads, as the type's doc says.
func (s *keysStore) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	s.mu.Lock()
	for _, k := range q.Keys {
		if k.Thread != "" {
			s.threads[q.Partition] = append(s.threads[q.Partition], k.Thread)
		}
	}
	s.mu.Unlock()
	return s.Store.Stats(ctx, q)
}

// testListThreadsGroupTalliesAsListed: ListThreads with the cache off
// takes a group's threads' counts from the first round's read of the
// group's threads where it holds their tallies (driver.QueryResult.Tallied),
// as it takes u's: it reads none of the group's thread counters by key
// (on DynamoDB 1 read unit a group chat), only the group's c#*, for its
// version; where the read holds no tallies, it reads them by key. The
// counts are what List shows either way.
func testListThreadsGroupTalliesAsListed(e *env) {
	ann := e.member("ann", "crew", "ops")
	e.publish(inbox.Draft{Title: "dm", Thread: "dm"}, "ann")
	e.clock.Advance(time.Second)
	read := e.broadcastTo("crew", inbox.Draft{Title: "read", Thread: "crew-chat"})
	e.clock.Advance(time.Second)
	e.broadcastTo("crew", inbox.Draft{Title: "unread", Thread: "crew-chat"})
	e.clock.Advance(time.Second)
	e.broadcastTo("ops", inbox.Draft{Title: "ops", Thread: "ops-chat"})
	e.clock.Advance(time.Second)
	e.markRead(ann, read.ID, true)
	feed := e.listAll(ann, inbox.ListOptions{Limit: inbox.MaxPageSize})
	archived := e.listAll(ann, inbox.ListOptions{Limit: inbox.MaxPageSize, Archived: true})
	for _, byKey := range []bool{false, true} {
		s := &keysStore{Store: e.store, threads: map[driver.Partition][]string{}}
		var over driver.Store = s
		if byKey {
			over = untallied{s}
		}
		ib := inbox.New(over, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0))
		got, err := ib.ListThreads(e.ctx, ann, inbox.ThreadOptions{})
		if err != nil {
			e.t.Fatalf("ListThreads(ann) (by key %v): %v", byKey, err)
		}
		if diff := threadsDiff(got.Threads, feed, archived, nil, inbox.Preferences{}); diff != "" {
			e.t.Errorf("ListThreads(ann) (by key %v) differs from List:\n%s", byKey, diff)
		}
		for _, g := range []string{"crew", "ops"} {
			p := groupOf(e.scope, g)
			tallied := !byKey && e.tallied(p)
			if n := len(s.threads[p]); tallied && n > 0 || !tallied && n == 0 {
				e.t.Errorf("ListThreads(ann) (by key %v), its threads read with their tallies %v, read %d counters of group %s's threads by key %v", byKey, tallied, n, g, s.threads[p])
			}
		}
	}
}

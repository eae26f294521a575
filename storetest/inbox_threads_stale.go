package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// staleSharedFixture gives ann the public partition and three groups,
// each holding more threads than a snapshot lists (so a thread of ann's
// is below every snapshot's threads), and a one-to-one chat "chat" with
// bob, unread. It returns process a, whose snapshots of the four shared
// partitions it reads at once, after which process b writes one
// broadcast to each (no thread): every snapshot of a is then older than
// its partition, as another process's write leaves it, within the
// freshness bound.
func staleSharedFixture(e *env) (ann driver.User, a *inbox.Inbox) {
	groups := []string{"g1", "g2", "g3"}
	ann = e.member("ann", groups...)
	e.user("bob")
	for i := range inbox.DefaultPageSize + 3 {
		e.broadcast(inbox.Draft{Title: "x", Thread: fmt.Sprintf("pub%02d", i)})
		for _, g := range groups {
			e.broadcastTo(g, inbox.Draft{Title: "x", Thread: fmt.Sprintf("%s-%02d", g, i)})
		}
		e.clock.Advance(time.Second)
	}
	e.publish(inbox.Draft{Title: "hi", Thread: "chat"}, "ann", "bob")
	e.clock.Advance(time.Second)
	a = inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(time.Hour))
	b := inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(time.Hour))
	if _, err := a.Counts(e.ctx, ann); err != nil { // a's snapshots
		e.t.Fatalf("A's Counts: %v", err)
	}
	m, err := b.Broadcast(e.ctx, e.scope, inbox.Draft{Title: "elsewhere"})
	if err != nil {
		e.t.Fatalf("B's Broadcast: %v", err)
	}
	e.active(m, driver.PublicGroup)
	for _, g := range groups {
		m, err := b.BroadcastGroup(e.ctx, e.scope, g, inbox.Draft{Title: "elsewhere"})
		if err != nil {
			e.t.Fatalf("B's BroadcastGroup(%s): %v", g, err)
		}
		e.active(m, g)
	}
	return ann, a
}

// testMarkAllReadThreadStaleSnapshots: MarkAllRead of a one-to-one chat
// in a process whose snapshots of four shared partitions (public and
// three groups, none of which holds the chat) are older than their
// partitions, nothing written during the call, marks the chat's one
// unread message. threadTally renews one stale snapshot per attempt and
// gives up after countsAttempts (4): ErrConflict, with nothing written
// during the call.
func testMarkAllReadThreadStaleSnapshots(e *env) {
	ann, a := staleSharedFixture(e)
	if n, err := a.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n != 1 {
		e.t.Errorf("A's MarkAllRead(chat) with four stale snapshots and no write during the call = %d, %v; want 1, nil", n, err)
	}
}

// testListThreadsStaleSnapshots: ListThreads in a process whose snapshots
// of four shared partitions are older than their partitions, nothing
// written during the call, lists ann's threads, those below every
// snapshot's threads included. threadCounts renews one stale snapshot
// per attempt and gives up after countsAttempts: ErrConflict.
func testListThreadsStaleSnapshots(e *env) {
	ann, a := staleSharedFixture(e)
	var got []inbox.Thread
	for o := (inbox.ThreadOptions{Limit: inbox.MaxPageSize}); ; {
		p, err := a.ListThreads(e.ctx, ann, o)
		if err != nil {
			e.t.Fatalf("A's ListThreads(%+v) with four stale snapshots and no write during the call: %v; want its threads", o, err)
		}
		got = append(got, p.Threads...)
		if o.Cursor = p.Cursor; o.Cursor == "" {
			break
		}
	}
	if want := 1 + 4*(inbox.DefaultPageSize+3); len(got) != want {
		e.t.Errorf("A's ListThreads with four stale snapshots = %d threads; want %d", len(got), want)
	}
}

// pagesShort reports whether the env's store returns fewer records than
// a Query asks for while more follow (as the contract allows): the cost
// tests' counts of pages and transactions then say nothing.
func (e *env) pagesShort(p driver.Partition) bool {
	e.t.Helper()
	res, err := e.store.Query(e.ctx, driver.Query{Partition: p, Limit: 10})
	if err != nil {
		e.t.Fatalf("Query(%s): %v", p.PK(), err)
	}
	return len(res.Records) < 10 && res.Next != ""
}

// testMarkAllReadThreadUpToCost: MarkAllRead of a group chat up to the
// newest message the user saw, one message having arrived since, costs
// no more round trips than a page of threadMarkBatch (22) per 22 messages
// of the thread's history it passes. The thread's counts count the
// message above UpTo, which the action never marks: they never reach
// zero, and each page asks for as many messages as they say are left
// (one), so the action reads the history a message at a time.
func testMarkAllReadThreadUpToCost(e *env) {
	ann := e.member("ann", "team")
	const history = 200
	var upTo string
	for i := range history {
		m := e.broadcastTo("team", inbox.Draft{Title: "old", Thread: "chat"})
		if i < history-3 {
			e.markRead(ann, m.ID, true)
		}
		upTo = m.ID
		e.clock.Advance(time.Second)
	}
	e.broadcastTo("team", inbox.Draft{Title: "after the view", Thread: "chat"})
	e.clock.Advance(time.Second)
	counted := &countingStore{Store: e.store}
	ib := inbox.New(counted, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0))
	n, err := ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "chat", UpTo: upTo})
	if err != nil || n != 3 {
		e.t.Fatalf("MarkAllRead(chat, up to the view) = %d, %v; want the 3 unread below it", n, err)
	}
	e.t.Logf("MarkAllRead(chat, UpTo) of 3 unread above %d read, 1 unread above UpTo: %d thread queries, %d queries, %d stats reads",
		history-3, counted.threadQueries.Load(), counted.queries.Load(), counted.stats.Load())
	// With pages of 22, the history takes about 200/22 pages: fewer than
	// 30 queries of the thread (u's and the group's, each round).
	if e.pagesShort(groupOf(e.scope, "team")) {
		return
	}
	if q := counted.threadQueries.Load(); q > 60 {
		e.t.Errorf("MarkAllRead(chat, UpTo) made %d queries of the thread for %d messages of history; pages of 22 make about %d", q, history, 2*(history/22+1))
	}
}

// testMarkAllReadThreadCategoryBatch: MarkAllRead of a group chat's
// category marks each page of unread messages in one transaction: a page
// of a thread is 22 messages (threadMarkBatch), whose receipts, reader
// items and counters fit one; 44 unread take 2.
func testMarkAllReadThreadCategoryBatch(e *env) {
	ann := e.member("ann", "team")
	for range 44 {
		e.broadcastTo("team", inbox.Draft{Title: "m", Thread: "chat", Category: "ops"})
		e.clock.Advance(time.Second)
	}
	counted := &countingStore{Store: e.store}
	ib := inbox.New(counted, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0))
	n, err := ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "chat", Category: "ops"})
	if err != nil || n != 44 {
		e.t.Fatalf("MarkAllRead(chat, ops) = %d, %v; want 44", n, err)
	}
	if m := counted.marks.Load(); m != 2 && !e.pagesShort(groupOf(e.scope, "team")) {
		e.t.Errorf("MarkAllRead(chat, ops) of 44 group messages took %d transactions (Store.Mark); want 2, one per page of 22", m)
	}
}

// noisyStats is a Store on which a write lands in group partition p just
// after each read of p's stats (not by key): always after a snapshot's
// read (whose StatsQuery.Now is past the clock), so that no snapshot of
// p can be taken (it churns); after the first `left` plain reads (Now at
// the clock) too.
type noisyStats struct {
	driver.Store
	p     driver.Partition
	now   func() time.Time
	write func()
	left  atomic.Int64
}

func (s *noisyStats) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	st, err := s.Store.Stats(ctx, q)
	if q.Partition == s.p && len(q.Keys) == 0 && q.Hour.IsZero() {
		if q.Now.After(s.now()) || s.left.Add(-1) >= 0 {
			s.write()
		}
	}
	return st, err
}

// noisyGroupFixture gives ann, a member of group g, an unread message of
// a one-to-one chat with bob, and returns a Store over the env's that
// writes to g after reads of g's stats (as many as its left says).
func (e *env) noisyGroupFixture() (driver.User, *noisyStats) {
	ann := e.member("ann", "g")
	e.user("bob")
	e.broadcastTo("g", inbox.Draft{Title: "x"})
	e.publish(inbox.Draft{Title: "hi", Thread: "chat"}, "ann", "bob")
	e.clock.Advance(time.Second)
	w := inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0))
	return ann, &noisyStats{Store: e.store, p: groupOf(e.scope, "g"), now: e.clock.Now, write: func() {
		if _, err := w.BroadcastGroup(context.Background(), e.scope, "g", inbox.Draft{Title: "noise"}); err != nil {
			panic(err)
		}
	}}
}

// testMarkAllReadThreadChurn: with the cache on, a group partition that
// churns (no snapshot of it can be taken) is read from the store, as with
// the cache off. MarkAllRead of a one-to-one chat of a member of the
// group, while the group is written to just after each of the first four
// reads of its stats, marks the chat: the group's counters of the thread,
// by key, and its stats are read in parallel, as with the cache off, and
// the attempts left after the writes agree. Read one after the other,
// each of the four writes lands between them: ErrConflict.
func testMarkAllReadThreadChurn(e *env) {
	ann, noisy := e.noisyGroupFixture()
	noisy.left.Store(4)
	a := inbox.New(noisy, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(time.Hour))
	if n, err := a.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n != 1 {
		e.t.Errorf("MarkAllRead(chat) with the group churning, four writes to it = %d, %v; want 1, nil", n, err)
	}
}

// testMarkAllReadThreadSteadyWrites: MarkAllRead of a one-to-one chat
// does not fail while a group of the user's is written to after every
// read of its stats (and churns): the thread's counts, which only spare
// the action reads, cannot be read as one view, and it pages on without
// them, as it did before it read them. It failed with ErrConflict.
func testMarkAllReadThreadSteadyWrites(e *env) {
	ann, noisy := e.noisyGroupFixture()
	noisy.left.Store(1 << 40)
	for _, fresh := range []time.Duration{0, time.Hour} {
		e.publish(inbox.Draft{Title: "again", Thread: "chat"}, "ann", "bob")
		a := inbox.New(noisy, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(fresh))
		if n, err := a.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n < 1 {
			e.t.Errorf("MarkAllRead(chat), cache %v, with the group written after every read of its stats = %d, %v; want the unread marked, nil", fresh, n, err)
		}
		e.wantFeed(ann, inbox.ListOptions{Thread: "chat", UnreadOnly: true})
	}
}

package storetest

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// concurrencyTests are the Concurrency subtests of Run: real goroutines
// racing on one store.
func concurrencyTests() []suiteTest {
	return []suiteTest{
		{"MarkReadDirect", testConcurrentMarkReadDirect},
		{"MarkReadBroadcast", testConcurrentMarkReadBroadcast},
		{"Publish", testConcurrentPublish},
		{"MarkAllRead", testConcurrentMarkAllRead},
		{"States", testConcurrentStates},
	}
}

// parallel runs f(0..n-1) on n goroutines started together, and waits.
func parallel(n int, f func(i int)) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			f(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// concurrentMarks has 100 goroutines mark id read for u at once and checks
// that exactly one reports a change and none fails.
func (e *env) concurrentMarks(u driver.User, id string) {
	e.t.Helper()
	const n = 100
	changed := make([]bool, n)
	errs := make([]error, n)
	parallel(n, func(i int) { changed[i], errs[i] = e.ib.MarkRead(e.ctx, u, id) })
	count := 0
	for i := range n {
		if errs[i] != nil {
			e.t.Errorf("concurrent MarkRead %d: %v", i, errs[i])
		}
		if changed[i] {
			count++
		}
	}
	if count != 1 {
		e.t.Errorf("%d concurrent MarkRead calls reported %d changes, want exactly 1", n, count)
	}
}

// testConcurrentMarkReadDirect: 100 goroutines marking one direct message
// read count it once.
func testConcurrentMarkReadDirect(e *env) {
	ann := e.user("ann")
	m := e.publish(inbox.Draft{Title: "race", Category: "billing"}, "ann", "bob").Message
	e.concurrentMarks(ann, m.ID)
	e.wantCounts(ann, inbox.Counts{Tally: tallyOf(1, 1), Categories: map[string]inbox.Tally{"billing": tallyOf(1, 1)}})
	e.wantCounters(e.part("ann"), counter(e.part("ann"), "", 1, 1), counter(e.part("ann"), "billing", 1, 1))
	e.wantCounts(e.user("bob"), inbox.Counts{Tally: tallyOf(1, 0), Categories: map[string]inbox.Tally{"billing": tallyOf(1, 0)}})
}

// testConcurrentMarkReadBroadcast: 100 goroutines marking one broadcast
// read create one receipt and count it once.
func testConcurrentMarkReadBroadcast(e *env) {
	ann := e.user("ann")
	b := e.broadcast(inbox.Draft{Title: "race", Category: "news"})
	e.concurrentMarks(ann, b.ID)
	e.wantCounts(ann, inbox.Counts{Tally: tallyOf(1, 1), Categories: map[string]inbox.Tally{"news": tallyOf(1, 1)}})
	e.wantCounters(e.part("ann"), counter(e.part("ann"), "", 0, 1), counter(e.part("ann"), "news", 0, 1))
	if n := len(e.records(e.part("ann"))); n != 1 {
		e.t.Errorf("ann has %d records after concurrent marks of a broadcast, want 1 receipt", n)
	}
	e.wantCounts(e.user("bob"), inbox.Counts{Tally: tallyOf(1, 0), Categories: map[string]inbox.Tally{"news": tallyOf(1, 0)}})
}

// testConcurrentPublish: 50 concurrent publishes to one user all arrive,
// under distinct IDs, and are all counted.
func testConcurrentPublish(e *env) {
	const n = 50
	ann := e.user("ann")
	results := make([]inbox.PublishResult, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		results[i], errs[i] = e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Title: fmt.Sprint(i), Category: "load"})
	})
	published := 0
	ids := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			e.t.Errorf("concurrent Publish %d: %v", i, errs[i])
			continue
		}
		if fmt.Sprint(results[i].Delivered) == "[ann]" {
			published++
		}
		ids[results[i].Message.ID] = true
	}
	if published != n || len(ids) != n {
		e.t.Errorf("%d concurrent publishes: %d delivered under %d distinct IDs, want %d and %d", n, published, len(ids), n, n)
	}
	got := e.listAll(ann, inbox.ListOptions{Limit: 7})
	if len(got) != n {
		e.t.Errorf("List(ann) after %d concurrent publishes: %d messages", n, len(got))
	}
	for _, m := range got {
		if !ids[m.ID] {
			e.t.Errorf("List(ann) has %s, which no publish returned", m.ID)
		}
	}
	e.wantCounts(ann, inbox.Counts{Tally: tallyOf(n, 0), Categories: map[string]inbox.Tally{"load": tallyOf(n, 0)}})
}

// testConcurrentMarkAllRead: concurrent MarkAllRead and MarkRead calls on
// one user mark each message once between them.
func testConcurrentMarkAllRead(e *env) {
	ann := e.user("ann")
	var ids []string
	for i := range driver.MaxMarkBatch + 10 {
		if i%5 == 0 {
			ids = append(ids, e.broadcast(inbox.Draft{Title: fmt.Sprint(i), Category: "b"}).ID)
			continue
		}
		ids = append(ids, e.publish(inbox.Draft{Title: fmt.Sprint(i), Category: "d"}, "ann").Message.ID)
	}
	const all, single = 8, 20
	counts := make([]int, all+single)
	errs := make([]error, all+single)
	parallel(all+single, func(i int) {
		if i < all {
			counts[i], errs[i] = e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{})
			return
		}
		changed, err := e.ib.MarkRead(e.ctx, ann, ids[i%len(ids)])
		if changed {
			counts[i] = 1
		}
		errs[i] = err
	})
	total := 0
	for i := range counts {
		if errs[i] != nil {
			e.t.Errorf("concurrent mark %d: %v", i, errs[i])
		}
		total += counts[i]
	}
	if total != len(ids) {
		e.t.Errorf("concurrent MarkAllRead and MarkRead marked %d messages in all, want %d", total, len(ids))
	}
	c := e.counts(ann)
	if c.Read != int64(len(ids)) || c.Unread != 0 {
		e.t.Errorf("Counts(ann) after concurrent marks: %+v, want %d read, 0 unread", c.Tally, len(ids))
	}
}

// concurrent has n goroutines call op at once and returns how many
// reported a change, failing the test on an error other than ErrNotFound
// (a message another goroutine deleted).
func (e *env) concurrent(n int, op func(i int) (bool, error)) int {
	e.t.Helper()
	changed := make([]bool, n)
	errs := make([]error, n)
	parallel(n, func(i int) { changed[i], errs[i] = op(i) })
	count := 0
	for i := range n {
		if errs[i] != nil && !errors.Is(errs[i], driver.ErrNotFound) {
			e.t.Errorf("concurrent call %d: %v", i, errs[i])
		}
		if changed[i] {
			count++
		}
	}
	return count
}

// testConcurrentStates: 24 concurrent calls of each per-user mark on one
// message (direct, broadcast, group) change it once; 24 mixed archive,
// read, delete and seen calls leave counts that List and a recount agree
// with, one delete reporting the change; 24 concurrent MarkSeen calls at
// one instant move the watermark once. (24 callers on one item already
// collide on every write; each collision costs DynamoDB Local a retry
// with backoff.)
func testConcurrentStates(e *env) {
	const n = 24
	ann := e.member("ann", "admins")
	msgs := []string{
		e.publish(inbox.Draft{Title: "direct", Category: "d"}, "ann", "bob").Message.ID,
		e.broadcast(inbox.Draft{Title: "broadcast", Category: "b"}).ID,
		e.broadcastTo("admins", inbox.Draft{Title: "group", Category: "g"}).ID,
	}
	for _, id := range msgs {
		if got := e.concurrent(n, func(int) (bool, error) { return e.ib.Archive(e.ctx, ann, id) }); got != 1 {
			e.t.Errorf("%d concurrent Archive(%s): %d changes, want 1", n, id, got)
		}
		if got := e.concurrent(n, func(int) (bool, error) { return e.ib.Unarchive(e.ctx, ann, id) }); got != 1 {
			e.t.Errorf("%d concurrent Unarchive(%s): %d changes, want 1", n, id, got)
		}
		e.wantCountsFromFeed(ann)
		e.checkInvariant()
	}
	for _, id := range msgs {
		deletes := 0
		var mu sync.Mutex
		e.concurrent(n, func(i int) (bool, error) {
			switch i % 4 {
			case 0:
				return e.ib.Archive(e.ctx, ann, id)
			case 1:
				return e.ib.MarkRead(e.ctx, ann, id)
			case 2:
				return e.ib.MarkSeen(e.ctx, ann)
			}
			ok, err := e.ib.Delete(e.ctx, ann, id)
			if ok {
				mu.Lock()
				deletes++
				mu.Unlock()
			}
			return ok, err
		})
		if deletes != 1 {
			e.t.Errorf("%d mixed calls on %s: %d deletes reported a change, want 1", n, id, deletes)
		}
		e.seen[partitionOf(ann)] = inbox.SeenAt(e.clock.Now())
		e.wantCountsFromFeed(ann)
		e.checkInvariant()
	}
	e.clock.Advance(time.Second)
	if got := e.concurrent(n, func(int) (bool, error) { return e.ib.MarkSeen(e.ctx, ann) }); got != 1 {
		e.t.Errorf("%d concurrent MarkSeen at one instant: %d changes, want 1", n, got)
	}
	e.seen[partitionOf(ann)] = inbox.SeenAt(e.clock.Now())
	e.wantCounts(ann, inbox.Counts{})
	e.wantCountsFromFeed(e.member("bob"))
}

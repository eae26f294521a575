package storetest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/internal/racetest"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// The tests below run the suite (Run, RunProperty) on a memstore made to
// behave otherwise (deleting late, paging short), and on stores broken on
// purpose (mutants_test.go). What they check is how the suite and the
// Inbox fare with that behaviour, not data races: the memstore and the
// Inbox over it are the code that memstore's own conformance and fleet
// tests run under the race detector in full. Under it they cost some 70 s
// of CPU in make test, and some 15 s without it; so under it they skip
// (runSuite keeps the suite's Concurrency group, whose goroutines race on
// the store), and make test runs them whole in its line without -race,
// with memstore's long property runs (see the Makefile).

// runSuite runs the suite on newStore; under the race detector, only its
// Concurrency group (racetest.RunSuite).
func runSuite(t *testing.T, newStore storetest.NewStore) {
	t.Helper()
	racetest.RunSuite(t, func(t *testing.T) { storetest.Run(t, newStore) },
		func(t *testing.T) { storetest.RunConcurrency(t, newStore) }, "storetest/storetest_test.go")
}

// newLateStore returns a memstore whose expiry clock never moves: like
// DynamoDB, whose TTL deletes items hours or days late, it keeps expired
// records, so the Inbox must hide and refuse them by itself. The suite must
// pass on it as it does on a memstore that deletes promptly (memstore's own
// conformance test).
func newLateStore(testing.TB, func() time.Time) driver.Store {
	return memstore.New(memstore.WithClock(func() time.Time { return time.Time{} }))
}

func TestRunOnStoreThatDeletesLate(t *testing.T) {
	t.Parallel()
	runSuite(t, newLateStore)
}

func TestRunPropertyOnStoreThatDeletesLate(t *testing.T) {
	t.Parallel()
	racetest.SkipUnderRace(t, "storetest/storetest_test.go")
	storetest.RunProperty(t, newLateStore, 500)
}

// newLateLagStore is newLateStore whose deletes wait for delivery too.
// (A memstore that deletes promptly and holds its removals for delivery is
// memstore's own newLagStore: its tests run the suite and RunProperty on
// it, so this package does not run them again.)
func newLateLagStore(_ testing.TB, now func() time.Time) driver.Store {
	return handled(memstore.New(memstore.WithClock(func() time.Time { return time.Time{} }), memstore.WithStreamLag()), now)
}

// handled makes ms hand its held removals to the HandleChange of an Inbox
// over ms on clock now.
func handled(ms *memstore.Store, now func() time.Time) *memstore.Store {
	return handledOver(ms, ms, now)
}

// handledOver makes ms hand its held removals to the HandleChange of an
// Inbox over st (ms, or a Store wrapping it) on clock now.
func handledOver(ms *memstore.Store, st driver.Store, now func() time.Time) *memstore.Store {
	ms.HandleRemovalsWith(inbox.New(st, inbox.WithClock(now)).HandleChange)
	return ms
}

func TestRunPropertyOnStoreThatDeletesLateWithStreamLag(t *testing.T) {
	t.Parallel()
	racetest.SkipUnderRace(t, "storetest/storetest_test.go")
	storetest.RunProperty(t, newLateLagStore, 600)
}

func TestClock(t *testing.T) {
	start := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	c := storetest.NewClock(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want %v", got, start)
	}
	c.Advance(90 * time.Second)
	c.Advance(-30 * time.Second)
	if got, want := c.Now(), start.Add(time.Minute); !got.Equal(want) {
		t.Fatalf("Now() after advancing 90s and -30s = %v, want %v", got, want)
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(2)
		go func() { defer wg.Done(); c.Advance(time.Second) }()
		go func() { defer wg.Done(); _ = c.Now() }()
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(time.Minute+50*time.Second); !got.Equal(want) {
		t.Fatalf("Now() after 50 concurrent advances of 1s = %v, want %v", got, want)
	}
}

// shortPages is a store that evaluates at most two records per Query, as
// the contract allows ("a store may evaluate fewer and return Next"), and
// so makes the Inbox page across many short store pages.
type shortPages struct{ driver.Store }

func (s shortPages) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	q.Limit = min(q.Limit, 2)
	return s.Store.Query(ctx, q)
}

func newShortPageStore(_ testing.TB, now func() time.Time) driver.Store {
	return shortPages{memstore.New(memstore.WithClock(now))}
}

func TestRunOnStoreThatPagesShort(t *testing.T) {
	t.Parallel()
	runSuite(t, newShortPageStore)
}

func TestRunPropertyOnStoreThatPagesShort(t *testing.T) {
	t.Parallel()
	racetest.SkipUnderRace(t, "storetest/storetest_test.go")
	storetest.RunProperty(t, newShortPageStore, 500)
}

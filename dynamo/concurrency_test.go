package dynamo_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// TestConcurrentMarkReadCountsOnce marks one direct message and one
// broadcast read from 100 goroutines each: exactly one call reports the
// change, and read moves by one per message.
func TestConcurrentMarkReadCountsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, raw, table := newLocalStore(t)
	ib := inbox.New(store)
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	pub, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "direct", Category: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	bc, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "broadcast", Category: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{pub.Message.ID, bc.ID} {
		const n = 100
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			changed int
			errs    []error
		)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := ib.MarkRead(ctx, ann, id)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				if ok {
					changed++
				}
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Errorf("MarkRead(%s): %d errors, first %v", id, len(errs), errs[0])
		}
		if changed != 1 {
			t.Errorf("MarkRead(%s): %d calls reported a change, want 1", id, changed)
		}
	}
	pk := driver.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}.PK()
	want := map[string]rawTally{"c#*": {1, 2}, "c#ops": {1, 2}}
	if diff := cmp.Diff(want, rawCounters(t, raw, table, pk), cmp.AllowUnexported(rawTally{})); diff != "" {
		t.Errorf("ann's counters (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rawRecount(t, raw, table, pk), rawCounters(t, raw, table, pk), cmp.AllowUnexported(rawTally{})); diff != "" {
		t.Errorf("ann's counters against a recount (-recount +counters):\n%s", diff)
	}
}

// TestConcurrentPublishesCountEach publishes 30 messages to one user at
// once: every one lands and counts, published == 30 == a recount.
func TestConcurrentPublishesCountEach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, raw, table := newLocalStore(t)
	ib := inbox.New(store)
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	const n = 30
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "m", Category: "ops"})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("publish %d: %v", i, err)
		}
	}
	pk := driver.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}.PK()
	want := map[string]rawTally{"c#*": {n, 0}, "c#ops": {n, 0}}
	opt := cmp.AllowUnexported(rawTally{})
	if diff := cmp.Diff(want, rawCounters(t, raw, table, pk), opt); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, rawRecount(t, raw, table, pk), opt); diff != "" {
		t.Errorf("recount of the items (-want +got):\n%s", diff)
	}
	c, err := ib.Counts(ctx, scope.User("ann"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != n || c.Unread != n {
		t.Errorf("Counts = %+v, want %d unread", c.Tally, n)
	}
}

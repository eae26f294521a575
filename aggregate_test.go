package inbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// slowStore takes a few milliseconds for each read and write, as a
// network store does, so that concurrent writers of one key collide.
type slowStore struct{ driver.Store }

func (s slowStore) PutMessage(ctx context.Context, rec driver.Record, deltas []driver.Counter, marks ...driver.Mark) error {
	time.Sleep(5 * time.Millisecond)
	return s.Store.PutMessage(ctx, rec, deltas, marks...)
}

func (s slowStore) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	time.Sleep(5 * time.Millisecond)
	return s.Store.Stats(ctx, q)
}

func (s slowStore) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	time.Sleep(5 * time.Millisecond)
	return s.Store.Query(ctx, q)
}

// TestAggregateBurst: 24 likes of one post published to its owner at
// once, on a store with a network's latency, each join her item: none
// gives up, and the item counts them all.
func TestAggregateBurst(t *testing.T) {
	ctx := context.Background()
	ib := inbox.New(slowStore{memstore.New()})
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	const n = 24
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Aggregate: "post-1", Sender: fmt.Sprintf("fan%d", i%driver.MaxAggregateSenders), Title: "like"})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("like %d: %v", i, err)
		}
	}
	page, err := ib.List(ctx, scope.User("ann"), inbox.ListOptions{})
	if err != nil || len(page.Messages) != 1 || page.Messages[0].Count != n {
		t.Fatalf("ann's feed: %d items, %v; want one item of %d", len(page.Messages), err, n)
	}
	c, err := ib.Counts(ctx, scope.User("ann"))
	if err != nil || c.Total != 1 || c.Unread != 1 {
		t.Errorf("ann's counts %+v, %v; want one unread item", c.Tally, err)
	}
}

// TestAggregateCancelled: a publish whose context ends while its copy
// waits for another attempt reports the copy Failed (nothing was
// written), not Unknown.
func TestAggregateCancelled(t *testing.T) {
	store := &conflicting{Store: memstore.New()}
	ib := inbox.New(store)
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ctx, cancel := context.WithCancel(context.Background())
	store.cancel = cancel
	res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Aggregate: "post-1", Title: "like"})
	if err == nil || res.Failed["ann"] == nil || res.Unknown != nil {
		t.Fatalf("Publish cancelled between attempts: failed %v, unknown %v, %v; want ann failed", res.Failed, res.Unknown, err)
	}
	page, _ := ib.List(context.Background(), scope.User("ann"), inbox.ListOptions{})
	if len(page.Messages) != 0 {
		t.Errorf("ann's feed holds %d messages, want none", len(page.Messages))
	}
}

// conflicting refuses every PutMessage as another writer's conflict
// would, and cancels the call's context at the first.
type conflicting struct {
	driver.Store
	cancel context.CancelFunc
}

func (s *conflicting) PutMessage(context.Context, driver.Record, []driver.Counter, ...driver.Mark) error {
	s.cancel()
	return fmt.Errorf("%w: another message came first", driver.ErrStateChanged)
}

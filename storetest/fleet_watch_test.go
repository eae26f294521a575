package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// TestSnapshotWatch: the watch on which the fleet checks a user's views
// again sees a snapshot that expires by the real clock between two calls
// of a check (the suite's clock standing still), as one does now and then
// on a slow run; it sees nothing when the calls are served one snapshot,
// the first read included.
func TestSnapshotWatch(t *testing.T) {
	ctx := context.Background()
	clock := NewClock(startTime())
	store := memstore.New(memstore.WithClock(clock.Now))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	if _, err := inbox.New(store, inbox.WithClock(clock.Now)).Broadcast(ctx, scope, inbox.Draft{Title: "hello"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		fresh, wait time.Duration
		want        bool
	}{
		{"one snapshot", time.Hour, 0, false},
		{"expired between the calls", time.Millisecond, 20 * time.Millisecond, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &snapshotWatch{}
			ib := inbox.New(store, inbox.WithClock(clock.Now), inbox.WithSharedCache(c.fresh), inbox.WithHooks(inbox.Hooks{SharedCache: w.event}))
			w.start()
			for range 2 {
				if _, err := ib.Counts(ctx, scope.User("ann")); err != nil {
					t.Fatal(err)
				}
				if page, err := ib.List(ctx, scope.User("ann"), inbox.ListOptions{}); err != nil || len(page.Messages) != 1 {
					t.Fatalf("List = %+v, %v; want the broadcast", page, err)
				}
				time.Sleep(c.wait)
			}
			if got := w.stop(); got != c.want {
				t.Errorf("a snapshot expired during the check: %v, want %v", got, c.want)
			}
			// Not watching: nothing is noted.
			if _, err := ib.Counts(ctx, scope.User("ann")); err != nil {
				t.Fatal(err)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.seen != nil || w.expired != c.want {
				t.Errorf("after stop the watch holds %v, expired %v", w.seen, w.expired)
			}
		})
	}
}

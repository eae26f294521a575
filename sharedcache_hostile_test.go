package inbox_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
	"golang.org/x/sync/errgroup"
)

// backendValue returns the value backend holds at the key that ends with
// suffix, decoded as JSON.
func backendValue(t *testing.T, b *memBackend, suffix string) (string, map[string]any) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, v := range b.vals {
		if strings.HasSuffix(k, suffix) {
			var m map[string]any
			if err := json.Unmarshal(v, &m); err != nil {
				t.Fatal(err)
			}
			return k, m
		}
	}
	t.Fatalf("the backend holds no value at *%s", suffix)
	return "", nil
}

// TestSharedBackendEntriesOfAnotherPartition: a backend value of one
// group's partition whose timed entries are another partition's (spliced
// from that partition's value) is not served: Counts stays what List
// shows.
func TestSharedBackendEntriesOfAnotherPartition(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	backend := newMemBackend()
	const fresh = time.Hour
	process := func() *inbox.Inbox {
		return inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedCache(fresh), inbox.WithSharedBackend(backend))
	}
	plain := inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedCache(0))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	if _, err := plain.BroadcastGroup(ctx, scope, "admins", inbox.Draft{Title: "later", DeliverAt: clock.Now().Add(10 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.BroadcastGroup(ctx, scope, "eu", inbox.Draft{Title: "now"}); err != nil {
		t.Fatal(err)
	}
	ann := scope.User("ann").InGroups("admins", "eu")
	// The first process saves both groups' snapshots, with the admins
	// message's pending entry that comes due within the bound.
	countsAgree(t, process(), ann, "the first process")
	_, admins := backendValue(t, backend, "G#admins#alerts")
	due := admins["stats"].(map[string]any)["Due"]
	if due == nil {
		t.Fatal("the admins snapshot holds no due entry")
	}
	key, eu := backendValue(t, backend, "G#eu#alerts")
	eu["stats"].(map[string]any)["Due"] = due
	v, err := json.Marshal(eu)
	if err != nil {
		t.Fatal(err)
	}
	if err := backend.Save(ctx, key, v, fresh); err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Minute) // the scheduled one is due
	bob := scope.User("bob").InGroups("eu")
	countsAgree(t, process(), bob, "a process that loaded eu's snapshot with admins' due entry")
}

// TestSharedCacheNotesAreBounded: over a table whose thread index holds no
// tallies, an Inbox that reads many groups notes a bounded number of them,
// as it keeps a bounded number of snapshots.
func TestSharedCacheNotesAreBounded(t *testing.T) {
	ctx := context.Background()
	ib := inbox.New(&untalliedGroup{Store: memstore.New(), asked: map[string]int{}}, inbox.WithSharedCache(time.Hour))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	n := 3 * inbox.SharedCacheSize
	for i := range n {
		u := scope.User("u").InGroups("g" + strconv.Itoa(i))
		if _, err := ib.List(ctx, u, inbox.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if noted := inbox.PartitionsNoted(ib); noted > inbox.SharedCacheSize {
		t.Errorf("after listing %d groups the Inbox notes %d partitions, want at most %d", n, noted, inbox.SharedCacheSize)
	}
}

// churning is a Store whose shared partitions' counter version changes
// at every read of their stats, as if written between any two reads.
type churning struct {
	inbox.Store
	n atomic.Int64
}

func (s *churning) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	st, err := s.Store.Stats(ctx, q)
	if q.Partition.IsShared() {
		st.Version += s.n.Add(1)
	}
	return st, err
}

// TestSharedCacheChurnIsBounded: an Inbox that reads many groups, each
// changing while it is read (so that no snapshot of it is taken), notes a
// bounded number of them.
func TestSharedCacheChurnIsBounded(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ib := inbox.New(&churning{Store: memstore.New()}, inbox.WithClock(func() time.Time { return now }), inbox.WithSharedCache(time.Hour))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	n := inbox.SharedCacheSize + 100
	var g errgroup.Group
	g.SetLimit(64) // each read of a churning partition waits for a burst of writes to pass
	for i := range n {
		g.Go(func() error {
			_, err := ib.Counts(ctx, scope.User("u").InGroups("g"+strconv.Itoa(i)))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if noted := inbox.PartitionsNoted(ib); noted > inbox.SharedCacheSize {
		t.Errorf("after counting %d churning groups the Inbox notes %d partitions, want at most %d", n, noted, inbox.SharedCacheSize)
	}
}

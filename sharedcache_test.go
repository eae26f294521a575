package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// TestSharedCache: with the cache on, concurrent readers of one inbox make
// one read of the public partition per freshness interval; the Inbox's own
// broadcast shows at once, another process's once the snapshot is older
// than the bound; expiry within the bound is exact in List and Counts
// alike; and paging past the cached head matches a listing without the
// cache.
func TestSharedCache(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	store := &storetest.PublicReads{Store: mem}
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	const fresh = 10 * time.Second
	ib := inbox.New(store, inbox.WithClock(clock.Now), inbox.WithSharedCache(fresh))
	other := inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedCache(0)) // another process
	for i := range 30 {
		if _, err := other.Broadcast(ctx, scope, inbox.Draft{Title: "b" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}

	// 1,000 concurrent readers: one refresh (its head and its stats).
	var g errgroup.Group
	for u := range 1000 {
		g.Go(func() error {
			_, err := ib.List(ctx, scope.User("u"+strconv.Itoa(u)), inbox.ListOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := store.Reads(); n != refreshReads {
		t.Errorf("1,000 concurrent Lists read the public partition %d times, want %d (one refresh)", n, refreshReads)
	}
	ann := scope.User("ann")
	total := func() int64 {
		t.Helper()
		c, err := ib.Counts(ctx, ann)
		if err != nil {
			t.Fatal(err)
		}
		return c.Total
	}
	if got := total(); got != 30 {
		t.Errorf("Counts total = %d, want 30", got)
	}

	// Another process's broadcast waits for the bound; this one's does not.
	if _, err := other.Broadcast(ctx, scope, inbox.Draft{Title: "theirs"}); err != nil {
		t.Fatal(err)
	}
	if got := total(); got != 30 {
		t.Errorf("Counts total = %d within the bound after another process's broadcast, want the snapshot's 30", got)
	}
	if _, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "mine"}); err != nil {
		t.Fatal(err)
	}
	if got := total(); got != 32 {
		t.Errorf("Counts total = %d after this Inbox's broadcast, want 32 at once", got)
	}

	// A broadcast that expires within the bound leaves List and Counts at
	// its expiry, from the same snapshot.
	if _, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "short", TTL: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if got := total(); got != 33 {
		t.Errorf("Counts total = %d, want 33", got)
	}
	before := store.Reads()
	clock.Advance(3 * time.Second)
	listed := 0
	for o := (inbox.ListOptions{Limit: 7}); ; {
		page, err := ib.List(ctx, ann, o)
		if err != nil {
			t.Fatal(err)
		}
		listed += len(page.Messages)
		if page.Cursor == "" {
			break
		}
		o.Cursor = page.Cursor
	}
	if got := total(); got != 32 || listed != 32 {
		t.Errorf("after the expiry: Counts total %d, List %d; want 32 and 32", got, listed)
	}
	if store.Reads() == before {
		t.Errorf("paging past the cached head read nothing from the store")
	}

	// Every page, cached or not, is what a listing without the cache shows.
	clock.Advance(fresh)
	pages := func(ib *inbox.Inbox) []string {
		var ids []string
		for o := (inbox.ListOptions{Limit: 6}); ; {
			page, err := ib.List(ctx, ann, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page.Messages {
				ids = append(ids, m.ID)
			}
			if page.Cursor == "" {
				return ids
			}
			o.Cursor = page.Cursor
		}
	}
	if diff := cmp.Diff(pages(other), pages(ib)); diff != "" {
		t.Errorf("listing with the cache differs from without (-without +with):\n%s", diff)
	}
}

// TestSharedCacheConcurrentWrites: readers and this Inbox's writers race;
// after the writers stop, every reader sees every broadcast, though the
// snapshot is fresh (a refresh that started before a write is not kept).
func TestSharedCacheConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	ib := inbox.New(memstore.New(memstore.WithClock(clock.Now)), inbox.WithClock(clock.Now), inbox.WithSharedCache(time.Hour))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := ib.Counts(ctx, scope.User("r"+strconv.Itoa(r))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := range 50 {
		if _, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "b" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	c, err := ib.Counts(ctx, scope.User("ann"))
	if err != nil || c.Total != 50 {
		t.Errorf("Counts = %+v, %v; want 50 after the writes", c.Tally, err)
	}
}

// gatedStore holds every Query of the public partition until gate closes.
type gatedStore struct {
	inbox.Store
	gate    chan struct{}
	started chan struct{}
	once    sync.Once
}

func (s *gatedStore) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	if q.Partition.Group == inbox.PublicGroup {
		s.once.Do(func() { close(s.started) })
		<-s.gate
	}
	return s.Store.Query(ctx, q)
}

// TestSharedCacheCancelledCaller: the caller whose List started a shared
// read gives up when its ctx is cancelled, and the read goes on for the
// callers that joined it.
func TestSharedCacheCancelledCaller(t *testing.T) {
	ctx := context.Background()
	store := &gatedStore{Store: memstore.New(), gate: make(chan struct{}), started: make(chan struct{})}
	ib := inbox.New(store)
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	if _, err := inbox.New(store.Store).Broadcast(ctx, scope, inbox.Draft{Title: "hello"}); err != nil {
		t.Fatal(err)
	}
	first, cancel := context.WithCancel(ctx)
	firstErr := make(chan error, 1)
	go func() {
		_, err := ib.List(first, scope.User("ann"), inbox.ListOptions{})
		firstErr <- err
	}()
	<-store.started
	second := make(chan error, 1)
	go func() {
		page, err := ib.List(ctx, scope.User("bob"), inbox.ListOptions{})
		if err == nil && len(page.Messages) != 1 {
			err = fmt.Errorf("bob's List shows %d messages, want 1", len(page.Messages))
		}
		second <- err
	}()
	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled List returned %v, want context.Canceled", err)
	}
	close(store.gate)
	if err := <-second; err != nil {
		t.Errorf("the List that joined the read: %v", err)
	}
}

// memBackend is an in-memory SharedBackend; fail makes every call fail.
type memBackend struct {
	mu    sync.Mutex
	vals  map[string][]byte
	until map[string]time.Time
	fail  bool
	loads int
}

func newMemBackend() *memBackend {
	return &memBackend{vals: map[string][]byte{}, until: map[string]time.Time{}}
}

var errBackendDown = errors.New("backend down")

func (b *memBackend) Load(_ context.Context, key string) ([]byte, time.Duration, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loads++
	if b.fail {
		return nil, 0, false, errBackendDown
	}
	v, ok := b.vals[key]
	ttl := time.Until(b.until[key])
	if !ok || ttl <= 0 {
		return nil, 0, false, nil
	}
	return v, ttl, true, nil
}

func (b *memBackend) Save(_ context.Context, key string, v []byte, ttl time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail {
		return errBackendDown
	}
	b.vals[key], b.until[key] = v, time.Now().Add(ttl)
	return nil
}

func (b *memBackend) Drop(_ context.Context, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail {
		return errBackendDown
	}
	delete(b.vals, key)
	return nil
}

// only returns the backend's one value (its key and bytes).
func (b *memBackend) only(t testing.TB) (string, []byte) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.vals) != 1 {
		t.Fatalf("backend holds %d values, want 1", len(b.vals))
	}
	for k, v := range b.vals {
		return k, v
	}
	return "", nil
}

// TestSharedBackend: processes sharing a backend read the public partition
// once between them; a process's write is seen at once by itself and by a
// process without a snapshot of its own; a snapshot from before a
// process's own write is never served to it; and a failing or garbled
// backend leaves List exact.
func TestSharedBackend(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	store := &storetest.PublicReads{Store: mem}
	backend := newMemBackend()
	const fresh = time.Hour
	process := func() *inbox.Inbox {
		return inbox.New(store, inbox.WithClock(clock.Now), inbox.WithSharedCache(fresh), inbox.WithSharedBackend(backend))
	}
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	plain := inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedCache(0))
	for i := range 5 {
		if _, err := plain.Broadcast(ctx, scope, inbox.Draft{Title: "b" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	titles := func(ib *inbox.Inbox) []string {
		t.Helper()
		page, err := ib.List(ctx, ann, inbox.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range page.Messages {
			out = append(out, m.Title)
		}
		return out
	}
	want := titles(plain)

	a, b := process(), process()
	if diff := cmp.Diff(want, titles(a)); diff != "" {
		t.Errorf("process a (-want +got):\n%s", diff)
	}
	if n := store.Reads(); n != refreshReads {
		t.Errorf("process a read the public partition %d times, want %d (one refresh)", n, refreshReads)
	}
	if diff := cmp.Diff(want, titles(b)); diff != "" {
		t.Errorf("process b (-want +got):\n%s", diff)
	}
	if n := store.Reads(); n != refreshReads {
		t.Errorf("after process b listed, public-partition reads = %d, want still %d (b loaded a's snapshot)", n, refreshReads)
	}
	key, stale := backend.only(t)

	// b's broadcast: b sees it at once, and so does a new process (the
	// backend's snapshot was dropped).
	if _, err := b.Broadcast(ctx, scope, inbox.Draft{Title: "from b"}); err != nil {
		t.Fatal(err)
	}
	want = titles(plain)
	if diff := cmp.Diff(want, titles(b)); diff != "" {
		t.Errorf("process b after its broadcast (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, titles(process())); diff != "" {
		t.Errorf("a new process after b's broadcast (-want +got):\n%s", diff)
	}

	// A refresh that began before b's write saves its snapshot late: b,
	// whose own snapshot has gone stale, does not take it.
	clock.Advance(fresh)
	if err := backend.Save(ctx, key, stale, fresh); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, titles(b)); diff != "" {
		t.Errorf("process b served a snapshot from before its own write (-want +got):\n%s", diff)
	}

	// A garbled value, and a backend that fails, leave List exact.
	clock.Advance(fresh)
	if err := backend.Save(ctx, key, []byte("{not json"), fresh); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, titles(process())); diff != "" {
		t.Errorf("with a garbled snapshot in the backend (-want +got):\n%s", diff)
	}
	backend.mu.Lock()
	backend.fail = true
	backend.mu.Unlock()
	down := process()
	if _, err := down.Broadcast(ctx, scope, inbox.Draft{Title: "backend down"}); err != nil {
		t.Fatalf("a broadcast with the backend down: %v", err)
	}
	want = titles(plain)
	if diff := cmp.Diff(want, titles(down)); diff != "" {
		t.Errorf("with the backend down (-want +got):\n%s", diff)
	}
}

// TestSharedCacheWithinTheSecond: Lists one after another within the
// freshness bound, at a clock between whole seconds, read the shared
// partition once (a snapshot's time is not truncated like each call's).
func TestSharedCacheWithinTheSecond(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 600_000_000, time.UTC))
	store := &storetest.PublicReads{Store: memstore.New(memstore.WithClock(clock.Now))}
	ib := inbox.New(store, inbox.WithClock(clock.Now), inbox.WithSharedCache(time.Minute))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	for i := range 20 {
		if _, err := ib.List(ctx, scope.User("u"+strconv.Itoa(i)), inbox.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(100 * time.Millisecond)
	}
	if n := store.Reads(); n != refreshReads {
		t.Errorf("20 Lists within the bound read the public partition %d times, want %d (one refresh)", n, refreshReads)
	}
}

// fixedBackend is a SharedBackend whose every Load finds value, with the
// whole freshness to live; Save and Drop do nothing.
type fixedBackend struct {
	value []byte
	ttl   time.Duration
}

func (b fixedBackend) Load(context.Context, string) ([]byte, time.Duration, bool, error) {
	return b.value, b.ttl, true, nil
}
func (fixedBackend) Save(context.Context, string, []byte, time.Duration) error { return nil }
func (fixedBackend) Drop(context.Context, string) error                        { return nil }

// FuzzSharedBackendValue: whatever the backend holds (garbage, a
// truncated or forged snapshot), List neither fails nor panics, and its
// pages, followed to the end, list each message once, newest first.
func FuzzSharedBackendValue(f *testing.F) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	plain := inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedCache(0))
	for i := range 25 {
		if _, err := plain.Broadcast(ctx, scope, inbox.Draft{Title: "b" + strconv.Itoa(i), Category: []string{"", "ops"}[i%2]}); err != nil {
			f.Fatal(err)
		}
	}
	// A real snapshot, as a process saves it, and corruptions of it.
	saved := newMemBackend()
	if _, err := inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedBackend(saved)).List(ctx, scope.User("ann"), inbox.ListOptions{}); err != nil {
		f.Fatal(err)
	}
	_, snap := saved.only(f)
	f.Add(snap)
	f.Add(snap[:len(snap)/2])
	f.Add([]byte(strings.Replace(string(snap), `"complete":false`, `"complete":true`, 1)))
	f.Add([]byte(`{"at":"2030-01-01T00:00:00Z","head":[],"complete":true,"stats":{}}`))
	f.Add([]byte("null"))
	f.Fuzz(func(t *testing.T, value []byte) {
		ib := inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedCache(time.Minute),
			inbox.WithSharedBackend(fixedBackend{value: value, ttl: time.Minute}))
		seen := map[string]bool{}
		last := ""
		o := inbox.ListOptions{Limit: 7}
		for pages := 0; ; pages++ {
			if pages > 50 {
				t.Fatal("more than 50 pages")
			}
			page, err := ib.List(ctx, scope.User("ann"), o)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			for _, m := range page.Messages {
				if seen[m.ID] || last != "" && m.ID >= last {
					t.Fatalf("message %s out of order or repeated (after %s)", m.ID, last)
				}
				seen[m.ID], last = true, m.ID
			}
			if o.Cursor = page.Cursor; o.Cursor == "" {
				break
			}
		}
		if _, err := ib.Counts(ctx, scope.User("ann")); err != nil {
			t.Fatalf("Counts: %v", err)
		}
	})
}

// untalliedGroup is a Store whose Queries of threads with ActivityOnly in
// one group's partition (every group's, if group is "") return no
// tallies, as the dynamo Store does where another program wrote a thread
// counter without them, or over a table of an earlier version; it counts
// the thread Queries of each partition with ActivityOnly.
type untalliedGroup struct {
	inbox.Store
	group string
	mu    sync.Mutex
	asked map[string]int // group -> thread Queries with ActivityOnly
}

func (s *untalliedGroup) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	res, err := s.Store.Query(ctx, q)
	if q.Threads && q.ActivityOnly {
		s.mu.Lock()
		s.asked[q.Partition.Group]++
		s.mu.Unlock()
		if s.group == "" || q.Partition.Group == s.group {
			res.Tallied = false
			for i, c := range res.Threads {
				res.Threads[i] = driver.Counter{Partition: c.Partition, Thread: c.Thread, Latest: c.Latest}
			}
		}
	}
	return res, err
}

// TestSharedCacheUntalliedPartition: a group whose threads' index entries
// hold no tallies has its snapshots read the counters themselves from the
// next refresh on, while another group's snapshots keep reading the
// entries; the chat list is exact for both.
func TestSharedCacheUntalliedPartition(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	store := &untalliedGroup{Store: mem, group: "old", asked: map[string]int{}}
	now := time.Now().UTC().Truncate(time.Second) // memstore expires by the real clock
	clock := func() time.Time { return now }
	ib := inbox.New(store, inbox.WithClock(clock), inbox.WithSharedCache(time.Second))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	for _, g := range []string{"old", "new"} {
		if _, err := ib.BroadcastGroup(ctx, scope, g, inbox.Draft{Thread: "chat-" + g, Title: "hello " + g}); err != nil {
			t.Fatal(err)
		}
	}
	ann := scope.User("ann").InGroups("old", "new")
	for range 3 {
		page, err := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, th := range page.Threads {
			got = append(got, fmt.Sprintf("%s/%s %d unread", th.Group, th.Thread, th.Unread))
		}
		if diff := cmp.Diff([]string{"new/chat-new 1 unread", "old/chat-old 1 unread"}, got); diff != "" {
			t.Fatalf("ListThreads (-want +got):\n%s", diff)
		}
		now = now.Add(2 * time.Second) // each list refreshes the snapshots
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if store.asked["old"] != 1 {
		t.Errorf("the untallied group's threads were asked with ActivityOnly %d times over 3 refreshes, want 1 (then from the counters)", store.asked["old"])
	}
	if store.asked["new"] < 3 {
		t.Errorf("the other group's threads were asked with ActivityOnly %d times over 3 refreshes, want every refresh", store.asked["new"])
	}
}

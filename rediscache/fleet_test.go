package rediscache_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/rediscache"
	"github.com/stak/inbox/storetest"
)

// unreachableClient returns a client of a loopback port that nothing
// listens on, which fails at once, without retries.
func unreachableClient(t testing.TB) *redis.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, DialerRetries: 1, MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	return client
}

// fleetFreshness is the processes' freshness bound: long enough that no
// snapshot ages out while a test runs.
const fleetFreshness = 10 * time.Second

var scope = driver.Scope{Tenant: "acme", Inbox: "alerts"}

// ids returns the IDs of page's messages, newest first.
func ids(page inbox.Page) []string {
	var out []string
	for _, m := range page.Messages {
		out = append(out, m.ID)
	}
	return out
}

// TestFleet: processes (Inboxes, each with its own memory) sharing one
// Redis read the public partition from the store once between them; a
// broadcast shows at once in the process that made it and in any process
// that has no snapshot of its own; and Redis failing, or holding garbage,
// changes no page.
func TestFleet(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	prefix := uniquePrefix(t)
	store := &storetest.PublicReads{Store: memstore.New()}
	process := func() *inbox.Inbox {
		return inbox.New(store, inbox.WithSharedCache(fleetFreshness),
			inbox.WithSharedBackend(rediscache.New(client, rediscache.WithPrefix(prefix))))
	}
	writer := inbox.New(store.Store, inbox.WithSharedCache(0)) // another service, not counted, without a cache
	for i := range 30 {
		d := inbox.Draft{Title: "b" + strconv.Itoa(i), Sender: "ops", Category: []string{"", "billing"}[i%2],
			Body: map[string]any{"n": i, "pi": 3.25, "tags": []any{"x", true, nil}}, CTAURI: "https://example.com/" + strconv.Itoa(i)}
		if i%3 == 0 {
			d.TTL = time.Hour
		}
		if _, err := writer.Broadcast(ctx, scope, d); err != nil {
			t.Fatal(err)
		}
	}
	list := func(ib *inbox.Inbox, user string) []string {
		t.Helper()
		page, err := ib.List(ctx, scope.User(user), inbox.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ids(page)
	}
	want := list(writer, "ann")
	if len(want) != inbox.DefaultPageSize {
		t.Fatalf("the first page holds %d messages, want %d", len(want), inbox.DefaultPageSize)
	}
	// same checks that ib shows ann the page and the counts the store does.
	same := func(who string, ib *inbox.Inbox) {
		t.Helper()
		ann := scope.User("ann")
		for _, o := range []inbox.ListOptions{{}, {Category: "billing"}, {UnreadOnly: true, Limit: 5}} {
			wantPage, err := writer.List(ctx, ann, o)
			if err != nil {
				t.Fatal(err)
			}
			page, err := ib.List(ctx, ann, o)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantPage, page); diff != "" {
				t.Errorf("%s's page %+v differs from the store's (-store +%s):\n%s", who, o, who, diff)
			}
		}
		wantCounts, err := writer.Counts(ctx, ann)
		if err != nil {
			t.Fatal(err)
		}
		counts, err := ib.Counts(ctx, ann)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantCounts, counts); diff != "" {
			t.Errorf("%s's counts differ from the store's (-store +%s):\n%s", who, who, diff)
		}
	}

	// A lists: one refresh, its head and its stats.
	a := process()
	if got := list(a, "ann"); !slices.Equal(got, want) {
		t.Fatalf("process A's page differs from the store's:\n%s", cmp.Diff(want, got))
	}
	if n := store.Reads(); n != refreshReads {
		t.Errorf("process A's List made %d public-partition reads, want %d (one refresh)", n, refreshReads)
	}
	keys, err := client.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 {
		t.Fatalf("Redis holds keys %q under the test's prefix, want one snapshot", keys)
	}
	snapshotKey := keys[0]
	if size, err := client.StrLen(ctx, snapshotKey).Result(); err == nil {
		t.Logf("snapshot of %d broadcasts: %d bytes", len(want)+1, size)
	}

	// Processes B..N, concurrently: every one from Redis, none from the store.
	fleet := make([]*inbox.Inbox, 20)
	var g errgroup.Group
	for i := range fleet {
		fleet[i] = process()
		g.Go(func() error {
			page, err := fleet[i].List(ctx, scope.User("u"+strconv.Itoa(i)), inbox.ListOptions{})
			if err == nil && !slices.Equal(ids(page), want) {
				err = fmt.Errorf("process %d's page differs from the store's:\n%s", i, cmp.Diff(want, ids(page)))
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := store.Reads(); n != refreshReads {
		t.Errorf("%d more processes listing made %d public-partition reads in all, want still %d", len(fleet), n, refreshReads)
	}
	if _, err := fleet[1].Counts(ctx, scope.User("ann")); err != nil {
		t.Fatal(err)
	}
	if n := store.Reads(); n != refreshReads {
		t.Errorf("Counts in a process served from Redis made %d public-partition reads in all, want still %d", n, refreshReads)
	}
	// What a process loaded from Redis is what the store holds, to the
	// last field: pages, with filters (which may read below the
	// snapshot's records), and counts.
	same("a process served from Redis", fleet[1])

	// B broadcasts: B sees it at once, and so does a new process C, which
	// lists before B does (so B's Drop, not B's next refresh, is what
	// keeps C from the old snapshot).
	b := fleet[0]
	d, err := b.Broadcast(ctx, scope, inbox.Draft{Title: "from B"})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := client.Exists(ctx, snapshotKey).Result(); err != nil || n != 0 {
		t.Errorf("after B's broadcast Redis still holds the snapshot (exists %d, err %v)", n, err)
	}
	c := process()
	if got := list(c, "carl"); len(got) == 0 || got[0] != d.ID {
		t.Errorf("new process C's page after B's broadcast starts %.1q, want %s first", got, d.ID)
	}
	if got := list(b, "bea"); len(got) == 0 || got[0] != d.ID {
		t.Errorf("process B's page after its broadcast starts %.1q, want %s first", got, d.ID)
	}
	want = list(writer, "ann")

	// A garbage value under the snapshot's key is ignored: a new process
	// reads the store, and its page is right.
	if err := client.Set(ctx, snapshotKey, "{not a snapshot", fleetFreshness).Err(); err != nil {
		t.Fatal(err)
	}
	before := store.Reads()
	if got := list(process(), "dan"); !slices.Equal(got, want) {
		t.Errorf("with garbage in Redis the page differs from the store's:\n%s", cmp.Diff(want, got))
	}
	if n := store.Reads() - before; n != refreshReads {
		t.Errorf("with garbage in Redis a new process made %d public-partition reads, want %d (it reads the store)", n, refreshReads)
	}

	// Redis unreachable: List works, and pages are the same as without a
	// backend, all the way down.
	down := inbox.New(store, inbox.WithSharedCache(fleetFreshness),
		inbox.WithSharedBackend(rediscache.New(unreachableClient(t), rediscache.WithPrefix(prefix))))
	plain := inbox.New(store.Store, inbox.WithSharedCache(fleetFreshness))
	all := func(ib *inbox.Inbox) []string {
		t.Helper()
		var out []string
		for o := (inbox.ListOptions{Limit: 7}); ; {
			page, err := ib.List(ctx, scope.User("eve"), o)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ids(page)...)
			if page.Cursor == "" {
				return out
			}
			o.Cursor = page.Cursor
		}
	}
	start := time.Now()
	if diff := cmp.Diff(all(plain), all(down)); diff != "" {
		t.Errorf("with Redis unreachable the feed differs from the one without a backend:\n%s", diff)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("listing with Redis unreachable took %v", d)
	}
	same("a process with Redis unreachable", down)
}

// BenchmarkFleet: N processes (Inboxes, each with its own memory) list one
// inbox concurrently, b.N Lists in all spread over them, against memstore
// with a counter of public-partition requests, with and without Redis
// shared between them. A run lasts less than the freshness bound (10 s),
// so public-requests/process is what each process costs the public
// partition per freshness interval, and public-requests/op what each List
// costs it (processes that took no List, when b.N is below N, are not
// counted).
//
// start=cold starts with every memory and Redis empty, every process
// missing at once: the backend does not collapse misses across processes,
// so most of them read the store. start=warm starts as a fleet does once a
// snapshot is in Redis: one process has listed before the timer, and its
// read is not counted.
func BenchmarkFleet(b *testing.B) {
	client := newClient(b)
	for _, start := range []string{"cold", "warm"} {
		for _, n := range []int{1, 10, 100} {
			for _, shared := range []bool{false, true} {
				name := fmt.Sprintf("start=%s/processes=%d/redis=%s", start, n, map[bool]string{false: "off", true: "on"}[shared])
				b.Run(name, func(b *testing.B) {
					benchmarkFleet(b, client, n, shared, start == "warm")
				})
			}
		}
	}
}

// newFleet returns n processes (Inboxes) with freshness fresh over one
// in-memory store holding 30 broadcasts, sharing Redis if shared, and the
// store's counter of public-partition reads.
func newFleet(b *testing.B, client *redis.Client, n int, fresh time.Duration, shared bool) (*storetest.PublicReads, []*inbox.Inbox) {
	store := &storetest.PublicReads{Store: memstore.New()}
	writer := inbox.New(store.Store)
	for i := range 30 {
		if _, err := writer.Broadcast(context.Background(), scope, inbox.Draft{Title: "b" + strconv.Itoa(i)}); err != nil {
			b.Fatal(err)
		}
	}
	prefix := uniquePrefix(b)
	fleet := make([]*inbox.Inbox, n)
	for i := range fleet {
		opts := []inbox.Option{inbox.WithSharedCache(fresh)}
		if shared {
			opts = append(opts, inbox.WithSharedBackend(rediscache.New(client, rediscache.WithPrefix(prefix))))
		}
		fleet[i] = inbox.New(store, opts...)
	}
	return store, fleet
}

func benchmarkFleet(b *testing.B, client *redis.Client, n int, shared, warm bool) {
	ctx := context.Background()
	store, fleet := newFleet(b, client, n, fleetFreshness, shared)
	if warm {
		if _, err := fleet[0].List(ctx, scope.User("u0"), inbox.ListOptions{}); err != nil {
			b.Fatal(err)
		}
		store.Reset()
	}
	var next, listed atomic.Int64 // ops taken; processes that listed
	var wg sync.WaitGroup
	errs := make(chan error, n)
	b.ResetTimer()
	for i, ib := range fleet {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := scope.User("u" + strconv.Itoa(i))
			for k := 0; next.Add(1) <= int64(b.N); k++ {
				if k == 0 {
					listed.Add(1)
				}
				if _, err := ib.List(ctx, u, inbox.ListOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	reads := float64(store.Reads())
	b.ReportMetric(reads/float64(b.N), "public-requests/op")
	b.ReportMetric(reads/float64(listed.Load()), "public-requests/process")
}

// BenchmarkFleetSteady: 100 processes list one inbox without pause, each
// op one freshness interval (100 ms) of it, from a warm start, with Redis
// shared between them and without: public-requests/op is what the whole
// fleet costs the public partition per freshness interval.
func BenchmarkFleetSteady(b *testing.B) {
	client := newClient(b)
	const n, fresh = 100, 100 * time.Millisecond
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("processes=%d/redis=%s", n, map[bool]string{false: "off", true: "on"}[shared]), func(b *testing.B) {
			ctx := context.Background()
			store, fleet := newFleet(b, client, n, fresh, shared)
			for i, ib := range fleet {
				if _, err := ib.List(ctx, scope.User("u"+strconv.Itoa(i)), inbox.ListOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			store.Reset()
			b.ResetTimer()
			g, gctx := errgroup.WithContext(ctx)
			stop := time.Now().Add(time.Duration(b.N) * fresh)
			for i, ib := range fleet {
				g.Go(func() error {
					u := scope.User("u" + strconv.Itoa(i))
					for time.Now().Before(stop) {
						if _, err := ib.List(gctx, u, inbox.ListOptions{}); err != nil {
							return err
						}
					}
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(store.Reads())/float64(b.N), "public-requests/op")
		})
	}
}

// refreshReads is what one refresh of a shared partition reads: two reads
// that agree, each of its newest records, its newest threads and its
// stats.
const refreshReads = 6

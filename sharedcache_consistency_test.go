package inbox_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// refreshReads is what one refresh of a shared partition reads: two reads
// that agree, each of its newest records, its newest threads and its
// stats (three requests in one round trip).
const refreshReads = 6

// tallies returns the Tally a full List of u shows, paging to the end.
func tallies(t *testing.T, ib *inbox.Inbox, u inbox.User) inbox.Tally {
	t.Helper()
	var tl inbox.Tally
	o := inbox.ListOptions{Limit: inbox.MaxPageSize}
	for {
		page, err := ib.List(context.Background(), u, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			tl.Total++
			if m.IsRead() {
				tl.Read++
			} else {
				tl.Unread++
			}
		}
		if page.Cursor == "" {
			break
		}
		o.Cursor = page.Cursor
	}
	arch := inbox.ListOptions{Limit: inbox.MaxPageSize, Archived: true}
	for {
		page, err := ib.List(context.Background(), u, arch)
		if err != nil {
			t.Fatal(err)
		}
		tl.Archived += int64(len(page.Messages))
		if page.Cursor == "" {
			return tl
		}
		arch.Cursor = page.Cursor
	}
}

// countsAgree checks that ib's Counts of u equal the tallies of a full
// List made right after, from the same view.
func countsAgree(t *testing.T, ib *inbox.Inbox, u inbox.User, what string) inbox.Counts {
	t.Helper()
	c, err := ib.Counts(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	// The tallies of a List leave Unseen out (zero): the watermark is
	// not theirs to know.
	ct := c.Tally
	ct.Unseen = 0
	if got := tallies(t, ib, u); ct != got {
		t.Errorf("%s: Counts %+v, List shows %+v", what, c.Tally, got)
	}
	return c
}

// TestCountsCatchUpWithTheUser: process x serves the public partition from
// a snapshot; process y broadcasts B and ann reads B through y. x's Counts
// reads ann's partition fresh, with her receipt of B: it must read the
// public partition again rather than count the receipt of a broadcast its
// snapshot lacks, and the List after it shows the same view.
func TestCountsCatchUpWithTheUser(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	reads := &groupReads{Store: mem}
	x := inbox.New(reads, inbox.WithClock(clock.Now), inbox.WithSharedCache(time.Minute))
	y := inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedCache(time.Minute))
	if _, err := y.Broadcast(ctx, scope, inbox.Draft{Title: "A"}); err != nil {
		t.Fatal(err)
	}
	countsAgree(t, x, ann, "before") // x takes its snapshot: A
	b, err := y.Broadcast(ctx, scope, inbox.Draft{Title: "B"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := y.MarkRead(ctx, ann, b.ID); err != nil {
		t.Fatal(err)
	}
	c := countsAgree(t, x, ann, "after y's broadcast and ann's read of it")
	if want := (inbox.Tally{Total: 2, Read: 1, Unread: 1, Unseen: 1}); c.Tally != want {
		t.Errorf("x's Counts %+v, want %+v", c.Tally, want)
	}
	// The same with a group, and an archive instead of a read, on an old
	// message below the snapshot's head.
	admins := scope.User("ann").InGroups("admins")
	var first inbox.Message
	for i := range 30 {
		m, err := y.BroadcastGroup(ctx, scope, "admins", inbox.Draft{Title: "g" + strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = m
		}
	}
	countsAgree(t, x, admins, "group, before")
	if _, err := y.Archive(ctx, admins, first.ID); err != nil {
		t.Fatal(err)
	}
	countsAgree(t, x, admins, "group, after an archive below the head")
	before := reads.n.Load()
	countsAgree(t, x, admins, "group, again")
	if n := reads.n.Load() - before; n != 0 {
		t.Errorf("Counts and List again read the group's stats %d times, want 0: the snapshot read after ann's archive knows her receipt's message", n)
	}
}

// groupReads counts the stats reads of groups' partitions: a refresh of a
// snapshot reads them (a List's pages below the snapshot's records read
// only records).
type groupReads struct {
	inbox.Store
	n atomic.Int64
}

func (s *groupReads) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	p := q.Partition
	if p.IsShared() && !p.IsPublic() {
		s.n.Add(1)
	}
	return s.Store.Stats(ctx, q)
}

// racingStore lets another process's broadcast land between the head and
// the stats of the first read of the public partition: the head is read
// first, then the broadcast is written, then the stats are read.
type racingStore struct {
	inbox.Store
	once    sync.Once
	written chan struct{}
	write   func()
}

func (s *racingStore) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	res, err := s.Store.Query(ctx, q)
	if q.Partition.IsPublic() {
		s.once.Do(func() { s.write(); close(s.written) })
	}
	return res, err
}

func (s *racingStore) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	p := q.Partition
	if p.IsPublic() {
		<-s.written
	}
	return s.Store.Stats(ctx, q)
}

// TestSnapshotIsOneView: a broadcast that lands between a refresh's read
// of the newest records and its read of the stats must not leave the
// snapshot counting a broadcast it does not list.
func TestSnapshotIsOneView(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	other := inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedCache(0))
	if _, err := other.Broadcast(ctx, scope, inbox.Draft{Title: "A"}); err != nil {
		t.Fatal(err)
	}
	store := &racingStore{Store: mem, written: make(chan struct{}), write: func() {
		if _, err := other.Broadcast(ctx, scope, inbox.Draft{Title: "B"}); err != nil {
			t.Error(err)
		}
	}}
	ib := inbox.New(store, inbox.WithClock(clock.Now), inbox.WithSharedCache(time.Hour))
	c := countsAgree(t, ib, scope.User("ann"), "a broadcast between the head and the stats")
	if c.Total != 2 {
		t.Errorf("Counts.Total %d, want 2", c.Total)
	}
}

// TestSharedCacheIsBounded: an Inbox that lists many groups' partitions
// keeps at most SharedCacheSize snapshots.
func TestSharedCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ib := inbox.New(mem, inbox.WithSharedCache(time.Hour))
	n := inbox.SharedCacheSize + 100
	for i := range n {
		u := scope.User("u").InGroups("g" + strconv.Itoa(i))
		if _, err := ib.List(ctx, u, inbox.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if kept := inbox.SnapshotsKept(ib); kept > inbox.SharedCacheSize || kept == 0 {
		t.Errorf("after listing %d groups the Inbox keeps %d snapshots, want 1 to %d", n, kept, inbox.SharedCacheSize)
	}
}

// TestSharedBackendKeepsStoresApart: Inboxes over two stores (two tables)
// that share a backend do not serve each other's snapshots.
func TestSharedBackendKeepsStoresApart(t *testing.T) {
	ctx := context.Background()
	backend := newMemBackend()
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	one, two := memstore.New(), memstore.New()
	a := inbox.New(one, inbox.WithSharedCache(time.Hour), inbox.WithSharedBackend(backend))
	b := inbox.New(two, inbox.WithSharedCache(time.Hour), inbox.WithSharedBackend(backend))
	if _, err := inbox.New(one).Broadcast(ctx, scope, inbox.Draft{Title: "in one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := inbox.New(two).Broadcast(ctx, scope, inbox.Draft{Title: "in two"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ib   *inbox.Inbox
		want string
	}{{a, "in one"}, {b, "in two"}} {
		page, err := c.ib.List(ctx, ann, inbox.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Messages) != 1 || page.Messages[0].Title != c.want {
			t.Errorf("List shows %+v, want only %q", page.Messages, c.want)
		}
	}
}

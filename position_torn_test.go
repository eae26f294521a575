package inbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// writeOutAfterQuery runs f once, right after the first read of records
// of partition p returns (its result as read before f), and holds every
// Stats of p that starts meanwhile until f has run: a read of u's
// records that lands before the stream handler writes her read position
// out, and a read of her positions that lands after.
type writeOutAfterQuery struct {
	inbox.Store
	p    driver.Partition
	once sync.Once
	done chan struct{}
	f    func()
}

func (s *writeOutAfterQuery) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	res, err := s.Store.Query(ctx, q)
	if q.Partition == s.p && !q.Threads {
		s.once.Do(func() { s.f(); close(s.done) })
	}
	return res, err
}

func (s *writeOutAfterQuery) GetRecords(ctx context.Context, keys []driver.Key) ([]driver.Record, error) {
	recs, err := s.Store.GetRecords(ctx, keys)
	if len(keys) > 0 && keys[0].Partition == s.p {
		s.once.Do(func() { s.f(); close(s.done) })
	}
	return recs, err
}

func (s *writeOutAfterQuery) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	if q.Partition == s.p {
		select {
		case <-s.done:
		case <-time.After(time.Second):
		}
	}
	return s.Store.Stats(ctx, q)
}

// TestRVPositionWriteOutBetweenReads: List and Get read u's records and
// her read positions in parallel; the stream handler's write-out of a
// position (marks on each message, then the position dropped) landing
// between the two reads must not show the messages unread: they are read
// before it, during it and after it, and Counts says so throughout.
// The write-out keeps the position (driver.Position.Done), so the
// positions read after it still cover the record read before its mark.
func TestRVPositionWriteOutBetweenReads(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, call := range []string{"List", "Get"} {
		t.Run(call, func(t *testing.T) {
			mem, other, ann, ids := chatOfThree(t, clock)
			if _, err := mem.DeliverChanges(ctx, other.HandleChange); err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Second)
			if n, err := other.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n != 3 {
				t.Fatalf("MarkAllRead = %d, %v", n, err)
			}
			if c, err := other.Counts(ctx, ann); err != nil || c.Unread != 0 {
				t.Fatalf("Counts = %+v, %v; want none unread", c, err)
			}
			st := &writeOutAfterQuery{Store: mem, p: ann.Partition(), done: make(chan struct{}), f: func() {
				if _, err := mem.DeliverChanges(ctx, other.HandleChange); err != nil {
					t.Error(err)
				}
			}}
			ib := inbox.New(st, inbox.WithClock(clock))
			msgs := listOrGet(t, ib, call, ann, ids[0])
			for _, m := range msgs {
				if !m.IsRead() {
					t.Errorf("%s during the write-out of her read position shows %s unread; it is read before, during and after", call, m.ID)
				}
			}
			if c, err := other.Counts(ctx, ann); err != nil || c.Unread != 0 {
				t.Errorf("Counts after = %+v, %v; want none unread", c, err)
			}
		})
	}
}

// unarchiveAfterStats runs f once, right after the first read of partition
// p's stats returns, and holds every read of p's records that starts
// meanwhile until f has run: a read of u's positions that lands before an
// unarchive, and a read of her records that lands after.
type unarchiveAfterStats struct {
	inbox.Store
	p    driver.Partition
	once sync.Once
	done chan struct{}
	f    func()
}

func (s *unarchiveAfterStats) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	st, err := s.Store.Stats(ctx, q)
	if q.Partition == s.p {
		s.once.Do(func() { s.f(); close(s.done) })
	}
	return st, err
}

func (s *unarchiveAfterStats) wait(p driver.Partition) {
	if p == s.p {
		select {
		case <-s.done:
		case <-time.After(time.Second):
		}
	}
}

func (s *unarchiveAfterStats) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	s.wait(q.Partition)
	return s.Store.Query(ctx, q)
}

func (s *unarchiveAfterStats) GetRecords(ctx context.Context, keys []driver.Key) ([]driver.Record, error) {
	if len(keys) > 0 {
		s.wait(keys[0].Partition)
	}
	return s.Store.GetRecords(ctx, keys)
}

// TestPositionUnarchiveBetweenReads: List and Get read u's positions and
// her records in parallel; an Unarchive of a message archived unread
// below her read position landing between the two reads shows the
// message as it stands after: read (everything below the position reads
// as read, and the unarchive writes it so), not a read the position
// lends a message stored unread.
func TestPositionUnarchiveBetweenReads(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, call := range []string{"List", "Get"} {
		t.Run(call, func(t *testing.T) {
			mem, other, ann, ids := chatOfThree(t, clock)
			if ok, err := other.Archive(ctx, ann, ids[0]); err != nil || !ok {
				t.Fatalf("Archive = %v, %v", ok, err)
			}
			now = now.Add(time.Second)
			if n, err := other.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n != 2 {
				t.Fatalf("MarkAllRead = %d, %v; want 2", n, err)
			}
			if _, err := mem.DeliverChanges(ctx, other.HandleChange); err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Second)
			st := &unarchiveAfterStats{Store: mem, p: ann.Partition(), done: make(chan struct{}), f: func() {
				if ok, err := other.Unarchive(ctx, ann, ids[0]); err != nil || !ok {
					t.Errorf("Unarchive = %v, %v", ok, err)
				}
			}}
			ib := inbox.New(st, inbox.WithClock(clock))
			var got inbox.Message
			for _, m := range listOrGet(t, ib, call, ann, ids[0]) {
				if m.ID == ids[0] {
					got = m
				}
			}
			after, err := other.Get(ctx, ann, ids[0])
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != ids[0] || !got.ReadAt.Equal(after.ReadAt) {
				t.Errorf("%s with the unarchive between its reads shows %s read at %v; it stands read at %v", call, got.ID, got.ReadAt, after.ReadAt)
			}
			if after.IsArchived() || !after.IsRead() {
				t.Errorf("Get after the unarchive = read %v, archived %v; want read, not archived", after.IsRead(), after.IsArchived())
			}
			if c, err := other.Counts(ctx, ann); err != nil || c.Unread != 0 || c.Total != 3 {
				t.Errorf("Counts after = %+v, %v; want 3, none unread", c.Tally, err)
			}
		})
	}
}

// TestReadsWithin: reads of records and positions that took longer than
// a done position is kept (less the clocks' skew) are read again.
func TestReadsWithin(t *testing.T) {
	if err := inbox.ReadsWithin(time.Now()); err != nil {
		t.Errorf("ReadsWithin(now) = %v, want nil", err)
	}
	if err := inbox.ReadsWithin(time.Now().Add(-14 * time.Minute)); !errors.Is(err, inbox.ErrConflict) {
		t.Errorf("ReadsWithin(14 minutes ago) = %v, want ErrConflict", err)
	}
}

// chatOfThree returns an in-memory store that feeds its changes, an Inbox
// on it, and ann with three messages in thread chat (their IDs, oldest
// first), at clock's time.
func chatOfThree(t *testing.T, clock func() time.Time) (*memstore.Store, *inbox.Inbox, inbox.User, []string) {
	t.Helper()
	mem := memstore.New(memstore.WithClock(clock), memstore.WithChanges())
	ib := inbox.New(mem, inbox.WithClock(clock))
	ann := scope.User("ann")
	var ids []string
	for range 3 {
		res, err := ib.Publish(context.Background(), scope, []string{"ann"}, inbox.Draft{Title: "hi", Thread: "chat"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Message.ID)
	}
	return mem, ib, ann, ids
}

// listOrGet returns, through ib, the messages of thread chat that call
// ("List": a page of the thread; "Get": message id) shows u.
func listOrGet(t *testing.T, ib *inbox.Inbox, call string, u inbox.User, id string) []inbox.Message {
	t.Helper()
	if call == "List" {
		page, err := ib.List(context.Background(), u, inbox.ListOptions{Thread: "chat"})
		if err != nil {
			t.Fatal(err)
		}
		return page.Messages
	}
	m, err := ib.Get(context.Background(), u, id)
	if err != nil {
		t.Fatal(err)
	}
	return []inbox.Message{m}
}

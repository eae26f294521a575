package inbox_test

import (
	"context"
	"os"
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
//
// Known, not fixed (review of branch position): page and Get read the
// positions (Stats of u's total) beside the records, not before them, so
// a record read before the write-out's mark and positions read after the
// drop show the message unread. Remove the Skip to reproduce.
func TestRVPositionWriteOutBetweenReads(t *testing.T) {
	if os.Getenv("INBOX_RV_KNOWN") == "" {
		t.Skip("known, not fixed: set INBOX_RV_KNOWN=1 to reproduce")
	}
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, call := range []string{"List", "Get"} {
		t.Run(call, func(t *testing.T) {
			mem := memstore.New(memstore.WithClock(clock), memstore.WithChanges())
			other := inbox.New(mem, inbox.WithClock(clock))
			ann := scope.User("ann")
			var ids []string
			for range 3 {
				res, err := other.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "hi", Thread: "chat"})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, res.Message.ID)
			}
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
			var msgs []inbox.Message
			if call == "List" {
				page, err := ib.List(ctx, ann, inbox.ListOptions{Thread: "chat"})
				if err != nil {
					t.Fatal(err)
				}
				msgs = page.Messages
			} else {
				m, err := ib.Get(ctx, ann, ids[0])
				if err != nil {
					t.Fatal(err)
				}
				msgs = []inbox.Message{m}
			}
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

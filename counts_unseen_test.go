package inbox_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// markBetweenStore lets another process's MarkRead land right after the
// first read of ann's partition: if Counts made a second read of it, the
// two reads would see her partition before and after the mark.
type markBetweenStore struct {
	inbox.Store
	user  inbox.Partition
	once  sync.Once
	reads int
	mark  func()
}

func (s *markBetweenStore) after(p inbox.Partition) {
	if p == s.user {
		s.reads++
		s.once.Do(s.mark)
	}
}

func (s *markBetweenStore) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	res, err := s.Store.Query(ctx, q)
	s.after(q.Partition)
	return res, err
}

func (s *markBetweenStore) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	st, err := s.Store.Stats(ctx, q)
	s.after(q.Partition)
	return st, err
}

// TestUnseenIsOneViewWithTheStats: a read made while one Counts call is
// under way must not leave Unseen counting a message that Unread no
// longer counts. Counts takes both from one read of the user's partition
// (her counter's Above and its unread tally), so they agree whatever
// lands after it.
func TestUnseenIsOneViewWithTheStats(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	other := inbox.New(mem, inbox.WithClock(clock.Now))
	ann := scope.User("ann")
	if _, err := other.MarkSeen(ctx, ann); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	res, err := other.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "new"})
	if err != nil {
		t.Fatal(err)
	}
	store := &markBetweenStore{Store: mem, user: partitionOf("ann"), mark: func() {
		if _, err := other.MarkRead(ctx, ann, res.Message.ID); err != nil {
			t.Error(err)
		}
	}}
	c, err := inbox.New(store, inbox.WithClock(clock.Now)).Counts(ctx, ann)
	if err != nil {
		t.Fatal(err)
	}
	if store.reads != 1 {
		t.Errorf("Counts read ann's partition %d times, want once", store.reads)
	}
	if c.Unseen != c.Unread || c.Unread != 1 {
		t.Errorf("Counts %+v: Unseen %d, Unread %d; want both 1 (the view before the mark)", c, c.Unseen, c.Unread)
	}
	if c, _ = other.Counts(ctx, ann); c.Unseen != 0 || c.Unread != 0 {
		t.Errorf("Counts after the mark %+v: want Unseen and Unread 0", c)
	}
}

// readCounter counts the requests and the records of the reads an Inbox
// makes.
type readCounter struct {
	inbox.Store
	mu                sync.Mutex
	requests, records int
}

func (s *readCounter) add(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	s.records += n
}

func (s *readCounter) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	res, err := s.Store.Query(ctx, q)
	s.add(len(res.Records))
	return res, err
}

func (s *readCounter) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	st, err := s.Store.Stats(ctx, q)
	s.add(len(st.Counters) + len(st.Expired) + len(st.Tombstones))
	return st, err
}

func (s *readCounter) GetRecords(ctx context.Context, keys []driver.Key) ([]driver.Record, error) {
	recs, err := s.Store.GetRecords(ctx, keys)
	s.add(len(keys))
	return recs, err
}

// BenchmarkCounts measures what Counts reads, in requests and records
// (items) per call, against the feed's size and history: a user who never
// marked anything seen, one with a watermark below 1,200 read messages,
// and one whose inbox had 1,000 broadcasts redacted, each with 100, 10,000
// and 100,000 messages read in the feed. What it reads must not grow with
// any of them.
func BenchmarkCounts(b *testing.B) {
	for _, size := range []int{100, 10000, 100000} {
		for _, kind := range []string{"no-watermark", "read-above-watermark", "redactions"} {
			b.Run(kind+"/"+strconv.Itoa(size), func(b *testing.B) {
				ctx := context.Background()
				clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
				mem := memstore.New(memstore.WithClock(clock.Now))
				setup := inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedCache(0))
				ann := scope.User("ann")
				p := partitionOf("ann")
				for i := range size {
					rec := driver.Record{Partition: p, Entry: driver.LedgerSK(clock.Now().Add(time.Hour), idAt(clock.Now(), i), "x"), Message: inbox.Message{
						ID: idAt(clock.Now(), i), Audience: inbox.Audience{Kind: inbox.AudienceUsers, UIDs: []string{"ann"}},
						ReadAt: clock.Now(), DeliveredAt: clock.Now(), ExpiresAt: clock.Now().Add(time.Hour)}}
					if err := mem.PutMessage(ctx, rec, []driver.Counter{{Partition: p, Published: 1, Read: 1}}); err != nil {
						b.Fatal(err)
					}
				}
				switch kind {
				case "read-above-watermark":
					if _, err := setup.MarkSeen(ctx, ann); err != nil {
						b.Fatal(err)
					}
					clock.Advance(time.Second)
					for range 1200 {
						res, err := setup.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "read"})
						if err != nil {
							b.Fatal(err)
						}
						if _, err := setup.MarkRead(ctx, ann, res.Message.ID); err != nil {
							b.Fatal(err)
						}
					}
				case "redactions":
					for range 1000 {
						m, err := setup.Broadcast(ctx, scope, inbox.Draft{Title: "gone"})
						if err != nil {
							b.Fatal(err)
						}
						if _, err := setup.Redact(ctx, scope, inbox.Redaction{ID: m.ID, Group: inbox.PublicGroup}); err != nil {
							b.Fatal(err)
						}
					}
				}
				store := &readCounter{Store: mem}
				ib := inbox.New(store, inbox.WithClock(clock.Now))
				if _, err := ib.Counts(ctx, ann); err != nil { // warm: the watermark and missing receipts are remembered
					b.Fatal(err)
				}
				store.requests, store.records = 0, 0
				b.ResetTimer()
				for range b.N {
					if _, err := ib.Counts(ctx, ann); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(store.requests)/float64(b.N), "requests/op")
				b.ReportMetric(float64(store.records)/float64(b.N), "items/op")
			})
		}
	}
}

// idAt returns a message ID i milliseconds before t, one per i.
func idAt(t time.Time, i int) string {
	return inbox.IDAt(t.Add(-time.Duration(i+1) * time.Millisecond))
}

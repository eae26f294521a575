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
	"github.com/stak/inbox/storetest"
)

// TestRecountPartition repairs, one partition at a time, counts that a
// delete behind the library's back left wrong (its removal not yet
// accounted): each partition's repair corrects its own share, and the
// removals' late delivery changes nothing.
func TestRecountPartition(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.WithStreamLag())
	ib := inbox.New(st, inbox.WithSharedCache(0))
	s := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := s.User("ann").InGroups("admins")
	annP := inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	admins := inbox.Partition{Tenant: "acme", Inbox: "alerts", Group: "admins"}
	res, err := ib.Publish(ctx, s, []string{"ann"}, inbox.Draft{Category: "billing", Title: "Invoice"})
	if err != nil {
		t.Fatal(err)
	}
	deploy, err := ib.BroadcastGroup(ctx, s, "admins", inbox.Draft{Title: "Deploy"})
	if err != nil {
		t.Fatal(err)
	}
	total := func() int64 {
		t.Helper()
		c, err := ib.Counts(ctx, ann)
		if err != nil {
			t.Fatalf("Counts: %v", err)
		}
		return c.Total
	}
	for _, k := range []driver.Key{{Partition: annP, ID: res.Message.ID}, {Partition: admins, ID: deploy.ID}} {
		if ok, err := st.Delete(ctx, k); err != nil || !ok {
			t.Fatalf("Delete(%v) = %v, %v", k, ok, err)
		}
	}
	if got := total(); got != 2 {
		t.Fatalf("before any recount, total %d; want 2 (the deletions not accounted yet)", got)
	}

	for _, p := range []inbox.Partition{
		{Tenant: "acme", Inbox: "alerts", User: "ann", Group: "admins"}, // both
		{Tenant: "acme", Inbox: "alerts"},                               // neither
		{Tenant: "ac#me", Inbox: "alerts", User: "ann"},
		{Tenant: "acme", Inbox: "alerts", User: inbox.PublicGroup},
	} {
		if err := ib.RecountPartition(ctx, p); !errors.Is(err, inbox.ErrInvalidKey) {
			t.Errorf("RecountPartition(%+v) = %v, want ErrInvalidKey", p, err)
		}
	}
	if got := total(); got != 2 {
		t.Fatalf("after refused recounts, total %d; want 2, unchanged", got)
	}

	if err := ib.RecountPartition(ctx, annP); err != nil {
		t.Fatalf("RecountPartition(ann): %v", err)
	}
	if got := total(); got != 1 {
		t.Errorf("after ann's partition's recount, total %d; want 1 (the group's message still counted)", got)
	}
	if err := ib.RecountPartition(ctx, admins); err != nil {
		t.Fatalf("RecountPartition(admins): %v", err)
	}
	if got := total(); got != 0 {
		t.Errorf("after the group's recount, total %d; want 0", got)
	}
	if _, err := st.Deliver(ctx); err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	if got := total(); got != 0 {
		t.Errorf("after the removals' late delivery, total %d; want 0", got)
	}
}

// TestRecountPartitionBucketsCategories: a shared partition whose time
// buckets count its records by hour but not by category (as a version
// before per-category buckets left them) is reset by its recount to
// buckets that count each category's records, not found right.
func TestRecountPartitionBucketsCategories(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	now := time.Now().UTC().Truncate(time.Hour) // one hour: one day bucket
	ib := inbox.New(st, inbox.WithSharedCache(0), inbox.WithClock(func() time.Time { return now }))
	s := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	pub := inbox.Partition{Tenant: "acme", Inbox: "alerts", Group: inbox.PublicGroup}
	var recs []driver.Record
	for _, c := range []string{"billing", "news", ""} {
		b, err := ib.Broadcast(ctx, s, inbox.Draft{Title: "t", Category: c})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, driver.Record{Message: driver.Message{ID: b.ID, Category: c}})
	}
	want, _, err := driver.Buckets(recs)
	if err != nil {
		t.Fatal(err)
	}
	uncategorised := make([]driver.Record, len(recs))
	for i, r := range recs {
		uncategorised[i] = driver.Record{Message: driver.Message{ID: r.Message.ID}}
	}
	days, hours, err := driver.Buckets(uncategorised)
	if err != nil {
		t.Fatal(err)
	}
	before, err := st.Stats(ctx, driver.StatsQuery{Partition: pub, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Repair(ctx, pub, driver.Repair{Reset: true, Version: before.Version, Before: before.Counters, Counters: before.Counters, Days: days, Hours: hours}); err != nil {
		t.Fatalf("Repair to buckets without categories: %v", err)
	}
	if err := ib.RecountPartition(ctx, pub); err != nil {
		t.Fatalf("RecountPartition: %v", err)
	}
	after, err := st.Stats(ctx, driver.StatsQuery{Partition: pub, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Days) != 1 || after.Days[0].Categories == nil || after.Days[0].Categories["billing"] != want[0].Categories["billing"] || after.Days[0].Categories["news"] != want[0].Categories["news"] || len(after.Days[0].Categories) != 2 {
		t.Errorf("after the recount, day buckets %+v; want the categories of %+v", after.Days, want)
	}
}

// publishingStore runs during, once, after a Recount's pass has read the
// ledger of partition p (Stats) and before it reads its records (the
// first Query of p): a write that lands between the two reads.
type publishingStore struct {
	*memstore.Store
	p      driver.Partition
	stats  bool
	once   sync.Once
	during func()
}

func (s *publishingStore) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	if q.Partition == s.p && q.Threads {
		s.stats = true
	}
	return s.Store.Stats(ctx, q)
}

func (s *publishingStore) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	if q.Partition == s.p && s.stats {
		s.once.Do(s.during)
	}
	return s.Store.Query(ctx, q)
}

// TestRecountRacesAPublish: a broadcast (or a message) published while a
// Recount reads its partition, after the ledger and before the records,
// has an entry the pass did not read. The Recount leaves it as it is
// (counted once, with its one entry): it neither gives it a second entry
// nor takes the first for a removed record's, which would count the
// message out while it stands and leave a tombstone of a broadcast that
// still stands, so that its readers' receipts stop counting.
func TestRecountRacesAPublish(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(map[bool]string{true: "broadcast", false: "message"}[shared], func(t *testing.T) {
			ctx := context.Background()
			clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			mem := memstore.New(memstore.WithClock(clock.Now))
			ann := scope.User("ann")
			p := ann.Partition()
			if shared {
				p = scope.Public()
			}
			other := inbox.New(mem, inbox.WithClock(clock.Now))
			var id string
			st := &publishingStore{Store: mem, p: p, during: func() {
				var err error
				if shared {
					var m inbox.Message
					m, err = other.Broadcast(ctx, scope, inbox.Draft{Title: "during the recount"})
					id = m.ID
				} else {
					var res inbox.PublishResult
					res, err = other.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "during the recount"})
					id = res.Message.ID
				}
				if err != nil {
					t.Errorf("publish during the recount: %v", err)
				}
			}}
			ib := inbox.New(st, inbox.WithClock(clock.Now), inbox.WithSharedCache(0))
			if _, err := ib.Recount(ctx, ann); err != nil {
				t.Fatalf("Recount: %v", err)
			}
			if id == "" {
				t.Fatal("nothing published during the recount")
			}
			// Read, and counted, by a process that did not run the
			// recount.
			if _, err := other.MarkRead(ctx, ann, id); err != nil {
				t.Fatalf("MarkRead: %v", err)
			}
			c := countsAgree(t, other, ann, "after the recount and a read")
			if c.Total != 1 || c.Read != 1 {
				t.Errorf("Counts %+v; want the message counted once, read", c.Tally)
			}
			stats, err := mem.Stats(ctx, driver.StatsQuery{Partition: p, Now: time.Unix(1<<40, 0)})
			if err != nil {
				t.Fatal(err)
			}
			if len(stats.Tombstones) != 0 {
				t.Errorf("tombstones %+v of a message that stands", stats.Tombstones)
			}
			if len(stats.Expired) != 1 {
				t.Errorf("%d ledger entries; want the message's one", len(stats.Expired))
			}
		})
	}
}

// TestRecountForeignReceiptOfExpiredThreadBroadcast: another program's
// read receipt that outlives its broadcast, a thread's, which expired
// but is not deleted yet (TTL deletes late), cannot be adopted into the
// thread (a mark needs the broadcast unexpired). Recount adopts it as it
// adopts such a receipt of a broadcast in no thread, rather than try the
// thread again in every pass and fail with ErrConflict until the
// broadcast is deleted.
func TestRecountForeignReceiptOfExpiredThreadBroadcast(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	// A store on a clock that stands still: it deletes nothing that expires.
	mem := memstore.New(memstore.WithClock(func() time.Time { return time.Time{} }))
	ib := inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedCache(0))
	ann := scope.User("ann")
	b, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "release", Thread: "news", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p := ann.Partition()
	rec := driver.Record{Partition: p, Receipt: true, Message: driver.Message{ID: b.ID, ReadAt: clock.Now(), ExpiresAt: b.ExpiresAt.Add(time.Hour)}}
	if err := mem.PutForeign(ctx, rec, []driver.Counter{{Partition: p, Read: 1}}); err != nil { // as the seeds count
		t.Fatal(err)
	}
	clock.Advance(90 * time.Minute) // the broadcast expired, the receipt not
	if _, err := ib.Recount(ctx, ann); err != nil {
		t.Fatalf("Recount: %v", err)
	}
	if _, err := ib.Recount(ctx, ann); err != nil {
		t.Fatalf("Recount again: %v", err)
	}
}

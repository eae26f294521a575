package inbox_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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

// TestRecountPartitionBucketsThreads: a shared partition's recount resets
// time buckets whose thread counts are not its records', as an earlier
// version left them: without the threads (a version before per-thread
// buckets wrote them so), or with the counts of a thread's record that is
// gone on a day that counts none otherwise (an earlier version's removal
// takes a record out of the totals and its category's counts, not out of
// its thread's).
func TestRecountPartitionBucketsThreads(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	now := time.Now().UTC().Truncate(time.Hour) // one hour: one day bucket
	ib := inbox.New(st, inbox.WithSharedCache(0), inbox.WithClock(func() time.Time { return now }))
	s := inbox.Scope{Tenant: "acme", Inbox: "chat"}
	team := inbox.Partition{Tenant: "acme", Inbox: "chat", Group: "team"}
	var recs []driver.Record
	for _, c := range []string{"billing", ""} {
		b, err := ib.BroadcastGroup(ctx, s, "team", inbox.Draft{Sender: "ann", Title: "t", Category: c, Thread: "chat"})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, driver.Record{Message: driver.Message{ID: b.ID, Category: c, Thread: "chat"}})
	}
	want, _, err := driver.Buckets(recs)
	if err != nil {
		t.Fatal(err)
	}
	gone := driver.DayBucket{Day: driver.DayOf(now.Add(-48 * time.Hour))}
	gone.Add(gone.Day.Add(3*time.Hour), driver.Slice{Thread: "chat", Category: "billing"}, 1)
	gone.Hours, gone.Categories = [24]int64{}, nil // the totals and the category's counts without it
	unthreaded := make([]driver.Record, len(recs))
	for i, r := range recs {
		unthreaded[i] = r
		unthreaded[i].Message.Thread = ""
	}
	stale, _, err := driver.Buckets(unthreaded)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		days []driver.DayBucket
	}{
		{"buckets without threads", stale},
		{"buckets with a thread's record that is gone", append(slices.Clone(want), gone)},
	} {
		before, err := st.Stats(ctx, driver.StatsQuery{Partition: team, Now: now, Threads: true})
		if err != nil {
			t.Fatal(err)
		}
		_, hours, err := driver.Buckets(recs)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Repair(ctx, team, driver.Repair{Reset: true, Version: before.Version, Before: before.Counters, Counters: before.Counters, Days: c.days, Hours: hours}); err != nil {
			t.Fatalf("%s: Repair: %v", c.what, err)
		}
		if err := ib.RecountPartition(ctx, team); err != nil {
			t.Fatalf("%s: RecountPartition: %v", c.what, err)
		}
		after, err := st.Stats(ctx, driver.StatsQuery{Partition: team, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		for i := range after.Days {
			after.Days[i].Versions = [24]int64{}
		}
		if diff := cmp.Diff(want, after.Days); diff != "" {
			t.Errorf("%s: after the recount, day buckets (-want +got):\n%s", c.what, diff)
		}
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

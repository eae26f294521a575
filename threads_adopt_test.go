package inbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// foreignReceipt writes, as another program following the seeds, u's
// receipt of broadcast b with the marks read and deleted (zero for none),
// and the seed's counter changes with it.
func foreignReceipt(t *testing.T, st *memstore.Store, u inbox.User, b inbox.Message, read, deleted time.Time) {
	t.Helper()
	p := u.Partition()
	rec := driver.Record{Partition: p, Receipt: true, DeletedAt: deleted, Message: driver.Message{ID: b.ID, Category: b.Category, ExpiresAt: b.ExpiresAt, ReadAt: read}}
	d := driver.Counter{Partition: p}
	if !read.IsZero() {
		d.Read = 1
	}
	if !deleted.IsZero() {
		d.Hidden = 1
	}
	if err := st.PutForeign(context.Background(), rec, []driver.Counter{d}); err != nil {
		t.Fatal(err)
	}
}

// TestRecountAdoptsForeignThreadReceipts: Recount adopts every receipt
// another program wrote of a thread's broadcasts into the thread in one
// pass (ten of them once made it lose to its own pass limit), after which
// ListThreads counts them read; a receipt both read and deleted, which no
// mark of the library makes, is adopted into its thread with its marks
// (it once failed Recount and the stream's adoption).
func TestRecountAdoptsForeignThreadReceipts(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
	st := memstore.New(memstore.WithClock(clock.Now), memstore.WithChanges())
	ib := inbox.New(st, inbox.WithClock(clock.Now), inbox.WithSharedCache(0))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	for range 10 {
		b, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "x", Thread: "news"})
		if err != nil {
			t.Fatal(err)
		}
		foreignReceipt(t, st, ann, b, clock.Now(), time.Time{})
		clock.Advance(time.Second)
	}
	odd, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "read and deleted", Thread: "news"})
	if err != nil {
		t.Fatal(err)
	}
	foreignReceipt(t, st, ann, odd, clock.Now(), clock.Now())
	if _, err := ib.Recount(ctx, ann); err != nil {
		t.Fatalf("Recount: %v", err)
	}
	// The thread is the whole feed: its tally is Counts', which counts the
	// read and deleted receipt as hidden alone, as List shows it nowhere
	// (its program's read is taken back).
	page, err := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
	c, cerr := ib.Counts(ctx, ann)
	if err != nil || cerr != nil || len(page.Threads) != 1 || page.Threads[0].Total != 10 || page.Threads[0].Unread != 0 || page.Threads[0].Tally != c.Tally {
		t.Fatalf("ListThreads after Recount = %+v, %v; Counts %+v, %v; want news with 10 messages, none unread, as Counts", page.Threads, err, c.Tally, cerr)
	}
	// The stream's adoption of a receipt no mark can give fails nothing.
	bob := scope.User("bob")
	other, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "y", Thread: "news"})
	if err != nil {
		t.Fatal(err)
	}
	foreignReceipt(t, st, bob, other, clock.Now(), clock.Now())
	if _, err := st.DeliverChanges(ctx, ib.HandleChange); err != nil {
		t.Fatalf("DeliverChanges: %v", err)
	}
	bc, err := ib.Counts(ctx, bob)
	bt, terr := ib.ListThreads(ctx, bob, inbox.ThreadOptions{})
	if err != nil || terr != nil || bc.Total != 11 || bc.Unread != 11 || len(bt.Threads) != 1 || bt.Threads[0].Tally != (inbox.Tally{Total: 11, Unread: 11}) {
		t.Errorf("bob's counts = %+v, %v, threads %+v, %v; want 11 unread (the deleted one hidden, its read taken back), the thread's tally as Counts'", bc.Tally, err, bt.Threads, terr)
	}
}

// TestStreamDropsDeadForeignReceipt: another program's receipt (read) of a
// thread's broadcast that is redacted before the stream hands the receipt
// to the handler is dropped, not adopted outside the thread: a process
// whose snapshot still holds the broadcast then shows it unread in List
// and in its thread alike (adopted outside the thread, the receipt made
// List show it read while its thread counted it unread; fleet seed
// 8523935308186727604).
func TestStreamDropsDeadForeignReceipt(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
	st := memstore.New(memstore.WithClock(clock.Now), memstore.WithChanges())
	fresh := inbox.New(st, inbox.WithClock(clock.Now), inbox.WithSharedCache(0))
	cached := inbox.New(st, inbox.WithClock(clock.Now), inbox.WithSharedCache(30*time.Second))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	b, err := fresh.Broadcast(ctx, scope, inbox.Draft{Title: "x", Thread: "news"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cached.List(ctx, ann, inbox.ListOptions{}); err != nil { // the snapshot with b
		t.Fatal(err)
	}
	foreignReceipt(t, st, ann, b, clock.Now(), time.Time{})
	if n, err := fresh.Redact(ctx, scope, inbox.Redaction{ID: b.ID, Group: inbox.PublicGroup}); err != nil || n != 1 {
		t.Fatalf("Redact = %d, %v", n, err)
	}
	if _, err := st.DeliverChanges(ctx, fresh.HandleChange); err != nil {
		t.Fatalf("DeliverChanges: %v", err)
	}
	check := func(ib *inbox.Inbox, name string, want int) {
		t.Helper()
		page, err := ib.List(ctx, ann, inbox.ListOptions{})
		threads, terr := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
		c, cerr := ib.Counts(ctx, ann)
		if err != nil || terr != nil || cerr != nil {
			t.Fatalf("%s: List %v, ListThreads %v, Counts %v", name, err, terr, cerr)
		}
		read := 0
		for _, m := range page.Messages {
			if m.IsRead() {
				read++
			}
		}
		if len(page.Messages) != want || read != 0 || c.Total != int64(want) || c.Read != 0 || len(threads.Threads) != want ||
			want == 1 && (threads.Threads[0].Unread != 1 || threads.Threads[0].Read != 0) {
			t.Errorf("%s: List %d messages (%d read), Counts %+v, threads %+v; want %d unread, alike", name, len(page.Messages), read, c.Tally, threads.Threads, want)
		}
	}
	check(cached, "a process whose snapshot holds the broadcast", 1)
	check(fresh, "a process that reads the partition afresh", 0)
	clock.Advance(31 * time.Second)
	check(cached, "the cached process, its snapshot renewed", 0)
}

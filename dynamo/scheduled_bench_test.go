package dynamo_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// scheduledBench returns an Inbox over a fresh table through a paused
// meter, on a clock the benchmark moves (*now), with its config cache
// warmed, and the scope to use.
func scheduledBench(b *testing.B, now *atomic.Pointer[time.Time]) (*inbox.Inbox, *meter, driver.Scope) {
	b.Helper()
	c := ddblocal.Client(b)
	table, _ := ddblocal.NewTable(b, c)
	m := &meter{c: c}
	ib := inbox.New(dynamo.New(m, table), inbox.WithClock(func() time.Time { return *now.Load() }))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	if _, err := ib.Config(context.Background(), scope); err != nil {
		b.Fatalf("Config: %v", err)
	}
	return ib, m, scope
}

// BenchmarkScheduled measures what scheduling adds, and the calls that
// read the scheduled index, on an inbox that also holds 100 messages
// delivered at once:
//
//   - publish: a scheduled Publish to one user (BenchmarkPublish/users=1
//     is the same unscheduled): its index entry;
//   - broadcast: a scheduled Broadcast (BenchmarkBroadcast is the same
//     unscheduled): its one index entry, whatever its audience;
//   - list: the first page of 20 of Scheduled, 100 copies scheduled;
//   - due: a page of 20 of Due, of a window in which 40 came due;
//   - redact: Redact of a copy not due yet (its index entry goes too);
//   - redact-broadcast: Redact of a broadcast not due yet (BenchmarkStates'
//     redact of a broadcast is the same unscheduled);
//   - read-after-due: MarkRead of a copy once due (the index projects no
//     marks: nothing more than an unscheduled message's).
func BenchmarkScheduled(b *testing.B) {
	ctx := context.Background()
	start := time.Now().UTC().Truncate(time.Second)
	setup := func(b *testing.B, copies int) (*inbox.Inbox, *meter, driver.Scope, *atomic.Pointer[time.Time]) {
		var now atomic.Pointer[time.Time]
		now.Store(&start)
		ib, m, scope := scheduledBench(b, &now)
		for i := range 100 {
			if _, err := ib.Publish(ctx, scope, []string{"user" + strconv.Itoa(i%10)}, draft(i)); err != nil {
				b.Fatal(err)
			}
		}
		for i := range copies / 2 {
			d := draft(i)
			d.DeliverAt = start.Add(time.Duration(i+1) * time.Minute)
			if _, err := ib.Publish(ctx, scope, []string{"ann" + strconv.Itoa(i), "bob" + strconv.Itoa(i)}, d); err != nil {
				b.Fatal(err)
			}
		}
		return ib, m, scope, &now
	}
	b.Run("publish", func(b *testing.B) {
		ib, m, scope, _ := setup(b, 0)
		m.measure()
		for i := range b.N {
			d := draft(i)
			d.DeliverAt = start.Add(time.Hour)
			if _, err := ib.Publish(ctx, scope, []string{"ann"}, d); err != nil {
				b.Fatal(err)
			}
		}
		m.report(b)
	})
	b.Run("broadcast", func(b *testing.B) {
		ib, m, scope, _ := setup(b, 0)
		m.measure()
		for i := range b.N {
			d := draft(i)
			d.DeliverAt = start.Add(time.Hour)
			if _, err := ib.Broadcast(ctx, scope, d); err != nil {
				b.Fatal(err)
			}
		}
		m.report(b)
	})
	b.Run("list/page=20", func(b *testing.B) {
		ib, m, scope, _ := setup(b, 100)
		m.measure()
		for range b.N {
			page, err := ib.Scheduled(ctx, scope, inbox.ScheduledOptions{Limit: 20})
			if err != nil || len(page.Deliveries) != 20 || page.Cursor == "" {
				b.Fatalf("Scheduled = %d copies, cursor %q, %v", len(page.Deliveries), page.Cursor, err)
			}
		}
		m.report(b)
	})
	b.Run("due/page=20", func(b *testing.B) {
		ib, m, scope, now := setup(b, 100)
		later := start.Add(20 * time.Minute)
		now.Store(&later)
		m.measure()
		for range b.N {
			page, err := ib.Due(ctx, scope, start, later.Add(time.Second), inbox.ScheduledOptions{Limit: 20})
			if err != nil || len(page.Deliveries) != 20 || page.Cursor == "" {
				b.Fatalf("Due = %d copies, cursor %q, %v", len(page.Deliveries), page.Cursor, err)
			}
		}
		m.report(b)
	})
	b.Run("redact", func(b *testing.B) {
		ib, m, scope, _ := setup(b, 0)
		ids := scheduleForAnn(b, ib, scope, start.Add(time.Hour))
		m.measure()
		for _, id := range ids {
			if n, err := ib.Redact(ctx, scope, inbox.Redaction{ID: id, Users: []string{"ann"}}); err != nil || n != 1 {
				b.Fatalf("Redact = %d, %v", n, err)
			}
		}
		m.report(b)
	})
	b.Run("redact-broadcast", func(b *testing.B) {
		ib, m, scope, _ := setup(b, 0)
		ids := make([]string, b.N)
		for i := range ids {
			d := draft(i)
			d.DeliverAt = start.Add(time.Hour)
			msg, err := ib.Broadcast(ctx, scope, d)
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = msg.ID
		}
		m.measure()
		for _, id := range ids {
			if n, err := ib.Redact(ctx, scope, inbox.Redaction{ID: id, Group: driver.PublicGroup}); err != nil || n != 1 {
				b.Fatalf("Redact = %d, %v", n, err)
			}
		}
		m.report(b)
	})
	b.Run("read-after-due", func(b *testing.B) {
		ib, m, scope, now := setup(b, 0)
		ids := scheduleForAnn(b, ib, scope, start.Add(time.Hour))
		later := start.Add(time.Hour)
		now.Store(&later)
		m.measure()
		for _, id := range ids {
			if ok, err := ib.MarkRead(ctx, scope.User("ann"), id); err != nil || !ok {
				b.Fatalf("MarkRead = %v, %v", ok, err)
			}
		}
		m.report(b)
	})
}

// scheduleForAnn publishes b.N messages to ann, due at at, and returns
// their IDs.
func scheduleForAnn(b *testing.B, ib *inbox.Inbox, scope driver.Scope, at time.Time) []string {
	b.Helper()
	ids := make([]string, b.N)
	for i := range ids {
		d := draft(i)
		d.DeliverAt = at
		res, err := ib.Publish(context.Background(), scope, []string{"ann"}, d)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = res.Message.ID
	}
	return ids
}

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

func snoozedList(t *testing.T, ib *inbox.Inbox, u inbox.User) []inbox.Message {
	t.Helper()
	var out []inbox.Message
	o := inbox.ListOptions{Snoozed: true, Limit: inbox.MaxPageSize}
	for {
		p, err := ib.List(context.Background(), u, o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Messages...)
		if p.Cursor == "" {
			return out
		}
		o.Cursor = p.Cursor
	}
}

func agreeAll(t *testing.T, ib *inbox.Inbox, u inbox.User, what string) {
	t.Helper()
	c := countsAgree(t, ib, u, what)
	if l := snoozedList(t, ib, u); c.Snoozed != int64(len(l)) {
		t.Errorf("%s: Counts.Snoozed %d, the snoozed view shows %d", what, c.Snoozed, len(l))
	}
}

// TestSnoozedViewFromTheSnapshot: with the shared cache on, another
// process redacts a broadcast ann snoozed; within the freshness bound x's
// Counts (through its snapshot) and x's snoozed view (through the same
// view) show it alike.
func TestSnoozedViewFromTheSnapshot(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	x := inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedCache(time.Minute))
	y := inbox.New(mem, inbox.WithClock(clock.Now), inbox.WithSharedCache(time.Minute))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	b, err := x.Broadcast(ctx, scope, inbox.Draft{Title: "b", TTL: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if _, err := x.Snooze(ctx, ann, b.ID, clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(11 * time.Minute) // b no longer "recent"
	c := countsAgree(t, x, ann, "before")
	t.Logf("before: Counts %+v, snoozed view %d", c, len(snoozedList(t, x, ann)))
	if _, err := y.Redact(ctx, scope, inbox.Redaction{ID: b.ID, Group: driver.PublicGroup}); err != nil {
		t.Fatal(err)
	}
	c = countsAgree(t, x, ann, "after")
	l := snoozedList(t, x, ann)
	if c.Snoozed != int64(len(l)) {
		t.Errorf("x after y's Redact: Counts.Snoozed %d, the snoozed view shows %d", c.Snoozed, len(l))
	}
}

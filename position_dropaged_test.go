package inbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// lagChats is ann's inbox over a memstore whose removals wait for their
// delivery (the stream lags), on a clock of its own.
type lagChats struct {
	t     *testing.T
	clock *storetest.Clock
	mem   *memstore.Store
	ib    *inbox.Inbox
	ann   inbox.User
}

func newLagChats(t *testing.T) *lagChats {
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now), memstore.WithChanges(), memstore.WithStreamLag())
	ib := inbox.New(mem, inbox.WithClock(clock.Now))
	mem.HandleRemovalsWith(ib.HandleChange)
	return &lagChats{t: t, clock: clock, mem: mem, ib: ib, ann: scope.User("ann")}
}

// publish sends ann a message of thread with ttl (0: the default), then
// moves the clock a second on, and returns its ID.
func (c *lagChats) publish(thread string, ttl time.Duration) string {
	c.t.Helper()
	res, err := c.ib.Publish(context.Background(), scope, []string{"ann"}, inbox.Draft{Title: "hi", Thread: thread, TTL: ttl})
	if err != nil {
		c.t.Fatal(err)
	}
	c.clock.Advance(time.Second)
	return res.Message.ID
}

// positions returns ann's read positions.
func (c *lagChats) positions() map[string]driver.Position {
	c.t.Helper()
	st, err := c.mem.Stats(context.Background(), driver.StatsQuery{Partition: c.ann.Partition(), Keys: []driver.Counter{{}}})
	if err != nil {
		c.t.Fatal(err)
	}
	return driver.Positions(st.Counters)
}

// TestRVDropAgedCoveringExpired: the oldest done position, aged, covers a
// message that expired, its removal pending (the stream lags); a ninth
// chat drops it, taking the message out of its covered counters, and the
// removal then counts it out as uncovered. Counts equal List throughout,
// and the chat's other message stays read at the position's time.
func TestRVDropAgedCoveringExpired(t *testing.T) {
	ctx := context.Background()
	c := newLagChats(t)
	clock, mem, ib, ann, publish, positions := c.clock, c.mem, c.ib, c.ann, c.publish, c.positions
	publish("t0", time.Hour) // expires
	kept := publish("t0", 0)
	at0 := clock.Now()
	for i := range 8 {
		thread := fmt.Sprintf("t%d", i)
		if i > 0 {
			publish(thread, 0)
		}
		if _, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: thread}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			at0 = positions()["t0"].At
		}
	}
	// Written out, but for the one that expires: expired first.
	clock.Advance(2 * time.Hour)
	if _, err := mem.DeliverChanges(ctx, ib.HandleChange); err != nil {
		t.Fatal(err)
	}
	countsAgree(t, ib, ann, "written out, one expired, its removal pending")
	if mem.Pending() == 0 {
		t.Fatal("no removal pending")
	}
	clock.Advance(16 * time.Minute)
	publish("t8", 0)
	if _, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "t8"}); err != nil {
		t.Fatal(err)
	}
	got := positions()
	if _, ok := got["t0"]; ok {
		t.Errorf("t0's position, the oldest done and aged, stands: %+v", got)
	}
	if _, ok := got["t8"]; !ok {
		t.Errorf("no position for t8: %+v", got)
	}
	countsAgree(t, ib, ann, "t0's position dropped, its expired message's removal pending")
	if _, err := mem.Deliver(ctx); err != nil {
		t.Fatal(err)
	}
	countsAgree(t, ib, ann, "the removal delivered")
	if m, err := ib.Get(ctx, ann, kept); err != nil || !m.ReadAt.Equal(at0) {
		t.Errorf("Get(kept) = read at %v, %v; want read at %v", m.ReadAt, err, at0)
	}
	if c, err := ib.Counts(ctx, ann); err != nil || c.Unread != 0 {
		t.Errorf("Counts = %+v, %v; want none unread", c.Tally, err)
	}
}

// TestRVAnewCoveringExpired: a chat's done position past its steps,
// aged, covers a message that expired, its removal pending; the chat's
// next MarkAllRead starts the position anew, still covering it. Counts
// equal List before and after the removal is delivered.
func TestRVAnewCoveringExpired(t *testing.T) {
	ctx := context.Background()
	c := newLagChats(t)
	clock, mem, ib, ann := c.clock, c.mem, c.ib, c.ann
	publish := func(ttl time.Duration) string { return c.publish("chat", ttl) }
	publish(time.Hour)
	for range driver.MaxPositionSteps {
		publish(0)
		if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n == 0 {
			t.Fatalf("MarkAllRead = %d, %v", n, err)
		}
	}
	clock.Advance(2 * time.Hour)
	if _, err := mem.DeliverChanges(ctx, ib.HandleChange); err != nil {
		t.Fatal(err)
	}
	countsAgree(t, ib, ann, "written out, one expired")
	clock.Advance(16 * time.Minute)
	publish(0)
	if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n != 1 {
		t.Fatalf("MarkAllRead anew = %d, %v", n, err)
	}
	if pos := c.positions()["chat"]; pos.Earlier != "" {
		t.Errorf("position not anew: %+v", pos)
	}
	countsAgree(t, ib, ann, "anew, the removal pending")
	if _, err := mem.DeliverChanges(ctx, ib.HandleChange); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Deliver(ctx); err != nil {
		t.Fatal(err)
	}
	countsAgree(t, ib, ann, "the removal delivered")
	if c, err := ib.Counts(ctx, ann); err != nil || c.Unread != 0 || c.Total != 5 {
		t.Errorf("Counts = %+v, %v; want 5, none unread", c.Tally, err)
	}
}

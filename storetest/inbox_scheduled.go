package storetest

import (
	"errors"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// scheduledTests are the Inbox subtests about scheduled delivery.
func scheduledTests() []suiteTest {
	return []suiteTest{
		{"Scheduled", testScheduled},
		{"ScheduledBadInput", testScheduledBadInput},
		{"ScheduledBroadcast", testScheduledBroadcast},
		{"ScheduledList", testScheduledList},
		{"Due", testDue},
		{"ScheduledShared", testScheduledShared},
		{"ScheduledListBadInput", testScheduledListBadInput},
		{"ScheduledReadByAnotherProgram", testScheduledReadByAnotherProgram},
		{"ScheduledDueWithoutMarks", testScheduledDueWithoutMarks},
	}
}

// testScheduled: a scheduled message is hidden from its recipients until
// it is due (List, Get, Counts, marks), then, at that second, shows in its
// place in the feed (by delivery time), unread and unseen, in List and
// Counts at once; it expires its TTL after delivery; Redact before it is
// due cancels it; a retry with the host system ID is the same message.
func testScheduled(e *env) {
	ann, bob := e.user("ann"), e.user("bob")
	start := e.clock.Now().UTC().Truncate(time.Second)
	first := e.publish(inbox.Draft{Title: "now", TTL: 24 * time.Hour}, "ann").Message
	due := start.Add(time.Hour)
	sched := e.publish(inbox.Draft{Title: "later", TTL: 2 * time.Hour, DeliverAt: due.Add(500 * time.Millisecond), HostSystemID: "sched-1"}, "ann", "bob").Message
	if !sched.DeliverAt.Equal(due) || !sched.DeliveredAt.Equal(due) || !sched.ExpiresAt.Equal(due.Add(2*time.Hour)) {
		e.t.Errorf("scheduled message: DeliverAt %v, DeliveredAt %v, ExpiresAt %v; want %v, %v, %v", sched.DeliverAt, sched.DeliveredAt, sched.ExpiresAt, due, due, due.Add(2*time.Hour))
	}
	retry := e.publish(inbox.Draft{Title: "later", TTL: 2 * time.Hour, DeliverAt: due, HostSystemID: "sched-1"}, "ann", "bob").Message
	if retry.ID != sched.ID {
		e.t.Errorf("a retry of a scheduled publish got ID %s, want %s", retry.ID, sched.ID)
	}
	if _, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Title: "later", TTL: 2 * time.Hour, DeliverAt: due.Add(time.Minute), HostSystemID: "sched-1"}); !errors.Is(err, inbox.ErrConflict) {
		e.t.Errorf("a retry with another delivery time: %v, want ErrConflict", err)
	}
	cancelled := e.publish(inbox.Draft{Title: "cancelled", DeliverAt: due.Add(time.Minute)}, "ann").Message
	e.clock.Advance(30 * time.Minute)
	middle := e.publish(inbox.Draft{Title: "meanwhile", TTL: 24 * time.Hour}, "ann").Message
	e.markSeen(ann)

	hidden := func(when string) {
		e.t.Helper()
		e.wantCountsFromFeed(ann)
		e.wantCountsFromFeed(bob)
		if got, want := ids(e.listAll(ann, inbox.ListOptions{})), []string{middle.ID, first.ID}; !cmp.Equal(got, want) {
			e.t.Errorf("%s: ann's feed %v, want %v", when, got, want)
		}
		if c := e.counts(bob); c.Total != 0 || c.Unseen != 0 {
			e.t.Errorf("%s: Counts(bob) %+v, want nothing", when, c)
		}
		if _, err := e.ib.Get(e.ctx, ann, sched.ID); !errors.Is(err, inbox.ErrNotFound) {
			e.t.Errorf("%s: Get of a message not due: %v, want ErrNotFound", when, err)
		}
		if _, err := e.ib.MarkRead(e.ctx, ann, sched.ID); !errors.Is(err, inbox.ErrNotFound) {
			e.t.Errorf("%s: MarkRead of a message not due: %v, want ErrNotFound", when, err)
		}
		if _, err := e.ib.Archive(e.ctx, bob, sched.ID); !errors.Is(err, inbox.ErrNotFound) {
			e.t.Errorf("%s: Archive of a message not due: %v, want ErrNotFound", when, err)
		}
		if n, err := e.ib.MarkAllRead(e.ctx, bob, inbox.ListOptions{}); err != nil || n != 0 {
			e.t.Errorf("%s: MarkAllRead(bob) = %d, %v; want 0", when, n, err)
		}
	}
	hidden("before it is due")
	if n, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: cancelled.ID, Users: []string{"ann"}}); err != nil || n != 1 {
		e.t.Errorf("Redact of a scheduled message = %d, %v; want 1, nil", n, err)
	}
	hidden("after a cancel")
	setClock(e, due.Add(-time.Second))
	hidden("a second before it is due")

	setClock(e, due)
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)
	if got, want := ids(e.listAll(ann, inbox.ListOptions{})), []string{sched.ID, middle.ID, first.ID}; !cmp.Equal(got, want) {
		e.t.Errorf("at its due time: ann's feed %v, want %v (by delivery time)", got, want)
	}
	if c := e.counts(ann); c.Total != 3 || c.Unread != 3 || c.Unseen != 1 {
		e.t.Errorf("at its due time: Counts(ann) %+v, want 3 unread, 1 unseen (the scheduled one)", c)
	}
	if m, err := e.ib.Get(e.ctx, bob, sched.ID); err != nil || m.ID != sched.ID || m.IsRead() {
		e.t.Errorf("Get at its due time: %+v, %v; want it unread", m, err)
	}
	e.markRead(bob, sched.ID, true)
	e.wantCountsFromFeed(bob)

	setClock(e, due.Add(time.Minute))
	e.wantCountsFromFeed(ann) // the cancelled one stays away
	if got := ids(e.listAll(ann, inbox.ListOptions{})); len(got) != 3 {
		e.t.Errorf("after the cancelled one's time: ann's feed %v, want 3 messages", got)
	}
	setClock(e, due.Add(2*time.Hour)) // its TTL counts from delivery
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)
	if got, want := ids(e.listAll(ann, inbox.ListOptions{})), []string{middle.ID, first.ID}; !cmp.Equal(got, want) {
		e.t.Errorf("after its expiry: ann's feed %v, want %v", got, want)
	}
	if h, ok := e.harness(); ok {
		e.deliver(h)
		e.wantCountsFromFeed(ann)
	}
	e.checkInvariant()
}

// testScheduledBadInput: a delivery time not after now, more than MaxTTL
// ahead (of a direct message, a broadcast or a group message), or on a
// message of a thread, is ErrInvalidInput and writes nothing.
func testScheduledBadInput(e *env) {
	ann := e.user("ann")
	e.publish(inbox.Draft{Title: "one"}, "ann")
	now := e.clock.Now()
	before := e.records(e.part("ann"))
	for name, call := range map[string]func() error{
		"in the past": func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Title: "x", DeliverAt: now.Add(-time.Minute), HostSystemID: "bad-1"})
			return err
		},
		"now": func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Title: "x", DeliverAt: now})
			return err
		},
		"beyond MaxTTL": func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Title: "x", DeliverAt: now.Add(inbox.MaxTTL + time.Hour)})
			return err
		},
		"a broadcast in the past": func() error {
			_, err := e.ib.Broadcast(e.ctx, e.scope, inbox.Draft{Title: "x", DeliverAt: now.Add(-time.Hour)})
			return err
		},
		"a group message beyond MaxTTL": func() error {
			_, err := e.ib.BroadcastGroup(e.ctx, e.scope, "admins", inbox.Draft{Title: "x", DeliverAt: now.Add(inbox.MaxTTL + time.Hour)})
			return err
		},
		"a thread": func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Title: "x", Thread: "chat", DeliverAt: now.Add(time.Hour)})
			return err
		},
	} {
		if err := call(); !errors.Is(err, inbox.ErrInvalidInput) {
			e.t.Errorf("scheduling %s: %v, want ErrInvalidInput", name, err)
		}
	}
	e.wantRecords("ann's records after refused schedules", before, e.records(e.part("ann")))
	if e.records(e.pub()) != nil {
		e.t.Errorf("a refused scheduled broadcast left records")
	}
	// The host system ID of a refused schedule is not claimed.
	if _, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Title: "other", HostSystemID: "bad-1"}); err != nil {
		e.t.Errorf("a publish with the host ID of a refused schedule: %v", err)
	}
	e.wantCountsFromFeed(ann)
}

// setClock moves the suite's clock on to t.
func setClock(e *env, t time.Time) {
	if d := t.Sub(e.clock.Now()); d > 0 {
		e.clock.Advance(d)
	}
}

// testScheduledBroadcast: a broadcast and a group message scheduled are
// stored once and hidden from every reader until due (List, Get, Counts,
// marks), through an Inbox with the shared-partition cache and one
// without, then show at that second in both at once; Redact cancels one;
// a retry with the host system ID is the same message.
func testScheduledBroadcast(e *env) {
	ann, bob := e.member("ann", "ops"), e.user("bob")
	start := e.clock.Now().UTC().Truncate(time.Second)
	e.publish(inbox.Draft{Title: "now", TTL: 24 * time.Hour}, "ann", "bob")
	due := start.Add(time.Hour)
	b, err := e.ib.Broadcast(e.ctx, e.scope, inbox.Draft{Title: "maintenance", TTL: 2 * time.Hour, DeliverAt: due, HostSystemID: "sched-b"})
	if err != nil {
		e.t.Fatalf("Broadcast scheduled: %v", err)
	}
	if retry, err := e.ib.Broadcast(e.ctx, e.scope, inbox.Draft{Title: "maintenance", TTL: 2 * time.Hour, DeliverAt: due, HostSystemID: "sched-b"}); err != nil || retry.ID != b.ID {
		e.t.Errorf("a retry of a scheduled broadcast: %s, %v; want %s", retry.ID, err, b.ID)
	}
	g, err := e.ib.BroadcastGroup(e.ctx, e.scope, "ops", inbox.Draft{Title: "deploy", DeliverAt: due.Add(30 * time.Second)})
	if err != nil {
		e.t.Fatalf("BroadcastGroup scheduled: %v", err)
	}
	gone, err := e.ib.Broadcast(e.ctx, e.scope, inbox.Draft{Title: "cancelled", DeliverAt: due})
	if err != nil {
		e.t.Fatalf("Broadcast scheduled: %v", err)
	}
	if n, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: gone.ID, Group: driver.PublicGroup}); err != nil || n != 1 {
		e.t.Errorf("Redact of a scheduled broadcast = %d, %v; want 1", n, err)
	}
	plain, cached := e.ib, inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(time.Minute))
	defer func() { e.ib = plain }()
	check := func(when string, wantAnn, wantBob int) {
		e.t.Helper()
		for _, ib := range []*inbox.Inbox{plain, cached} {
			e.ib = ib
			for u, want := range map[*driver.User]int{&ann: wantAnn, &bob: wantBob} {
				e.wantCountsFromFeed(*u)
				if got := len(e.listAll(*u, inbox.ListOptions{})); got != want {
					e.t.Errorf("%s: %s's feed holds %d messages, want %d", when, u.ID, got, want)
				}
			}
		}
		e.ib = plain
	}
	check("before they are due", 1, 1)
	if _, err := e.ib.Get(e.ctx, ann, b.ID); !errors.Is(err, inbox.ErrNotFound) {
		e.t.Errorf("Get of a broadcast not due: %v, want ErrNotFound", err)
	}
	if _, err := e.ib.MarkRead(e.ctx, ann, g.ID); !errors.Is(err, inbox.ErrNotFound) {
		e.t.Errorf("MarkRead of a group message not due: %v, want ErrNotFound", err)
	}
	setClock(e, due.Add(-time.Second))
	check("a second before", 1, 1)
	setClock(e, due)
	check("at the broadcast's time", 2, 2)
	e.markRead(bob, b.ID, true)
	check("read by bob", 2, 2)
	setClock(e, due.Add(30*time.Second))
	check("at the group message's time", 3, 2)
	setClock(e, due.Add(2*time.Hour))
	check("after the broadcast's expiry (its TTL counts from delivery)", 2, 1)
	e.checkInvariant()
}

// testScheduledReadByAnotherProgram: another program marks read, as the
// seeds do (readat, and read +1 in c#* and c#<category>), a direct message
// that is scheduled and not due (it lists the partition, not what the user
// sees). Once the stream handler has seen it, Counts leaves it out with
// its read, as List does, redelivered or recounted; when it is due it is
// listed and counted read.
func testScheduledReadByAnotherProgram(e *env) {
	e.foreignWriter()
	ann := e.user("ann")
	annP := e.part("ann")
	e.publish(inbox.Draft{Title: "now", TTL: 3 * time.Hour}, "ann")
	due := e.clock.Now().Add(time.Hour).Truncate(time.Second)
	m := e.publish(inbox.Draft{Title: "later", Category: "billing", TTL: 3 * time.Hour, DeliverAt: due}, "ann").Message
	c := e.readForeign(annP, m)
	check := func(when string, total, read int64) {
		e.t.Helper()
		e.wantCountsFromFeed(ann)
		if got := e.counts(ann); got.Total != total || got.Read != read {
			e.t.Errorf("%s: Counts(ann) %+v, want Total %d, Read %d", when, got.Tally, total, read)
		}
	}
	for range 2 { // delivered, and again
		if err := e.ib.HandleChange(e.ctx, c); err != nil {
			e.t.Fatalf("HandleChange: %v", err)
		}
		check("read by another program before it is due", 1, 0)
	}
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Fatalf("Recount: %v", err)
	}
	check("and recounted", 1, 0)
	setClock(e, due)
	check("due", 2, 1)
	e.checkInvariant()
}

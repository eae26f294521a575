package inbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stak/inbox"
)

// recipient names whom a scheduled delivery goes to: a user, everyone or
// a group.
func recipient(p inbox.Partition) string {
	switch {
	case p.IsPublic():
		return "everyone"
	case p.IsShared():
		return "group " + p.Group
	}
	return p.User
}

// An operator lists what is scheduled in an inbox, earliest first: each
// copy of a message to users with its user, a broadcast or group message
// once, with its audience. Redact cancels one copy, or a broadcast.
func ExampleInbox_Scheduled() {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	ib := newMovableInbox(&now)
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	standup, _ := ib.Publish(ctx, alerts, []string{"bob", "ann"}, inbox.Draft{Title: "Standup in 5 minutes", DeliverAt: now.Add(55 * time.Minute)})
	_, _ = ib.Publish(ctx, alerts, []string{"cid"}, inbox.Draft{Title: "Lunch", DeliverAt: now.Add(3 * time.Hour)})
	_, _ = ib.BroadcastGroup(ctx, alerts, "ops", inbox.Draft{Title: "Deploy freeze", DeliverAt: now.Add(2 * time.Hour)})
	outage, _ := ib.Broadcast(ctx, alerts, inbox.Draft{Title: "Maintenance tonight", DeliverAt: now.Add(4 * time.Hour)})
	_, _ = ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "Delivered now"})

	show := func() {
		page, err := ib.Scheduled(ctx, alerts, inbox.ScheduledOptions{Limit: 10})
		if err != nil {
			panic(err)
		}
		for _, d := range page.Deliveries {
			fmt.Printf("%s %-9s %s\n", d.Message.DeliverAt.Format(time.TimeOnly), recipient(d.Partition), d.Message.Title)
		}
	}
	show()
	if _, err := ib.Redact(ctx, alerts, inbox.Redaction{ID: standup.Message.ID, Users: []string{"bob"}}); err != nil {
		panic(err)
	}
	if _, err := ib.Redact(ctx, alerts, inbox.Redaction{ID: outage.ID, Group: inbox.PublicGroup}); err != nil {
		panic(err)
	}
	fmt.Println("-- bob's copy and the broadcast cancelled, and an hour later:")
	now = now.Add(time.Hour)
	show()
	// Output:
	// 09:55:00 ann       Standup in 5 minutes
	// 09:55:00 bob       Standup in 5 minutes
	// 11:00:00 group ops Deploy freeze
	// 12:00:00 cid       Lunch
	// 13:00:00 everyone  Maintenance tonight
	// -- bob's copy and the broadcast cancelled, and an hour later:
	// 11:00:00 group ops Deploy freeze
	// 12:00:00 cid       Lunch
}

// A host's worker, run every minute (a ticker, or EventBridge Scheduler
// invoking a Lambda function), pushes each scheduled delivery once after
// it comes due: it asks Due for the window since its last run, starting a
// few minutes earlier (a message may reach the index late: see Due), and
// drops the events it pushed already, by ID. A broadcast's event is in
// the public partition: the host fans it out to everyone, as it does the
// stream's event of a broadcast.
func ExampleInbox_Due() {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 9, 50, 0, 0, time.UTC)
	ib := newMovableInbox(&now)
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	_, _ = ib.Publish(ctx, alerts, []string{"bob", "ann"}, inbox.Draft{Title: "Standup in 5 minutes", DeliverAt: now.Add(5 * time.Minute)})
	_, _ = ib.Publish(ctx, alerts, []string{"cid"}, inbox.Draft{Title: "Coffee", DeliverAt: now.Add(7*time.Minute + 30*time.Second)})
	_, _ = ib.Broadcast(ctx, alerts, inbox.Draft{Title: "Fire drill", DeliverAt: now.Add(8 * time.Minute)})

	const overlap = 5 * time.Minute
	pushed := map[string]bool{} // event IDs, kept for the overlap (forever here)
	push := func(e inbox.Event) {
		fmt.Printf("%s: %s %s to %s, due %s\n", now.Format(time.TimeOnly), e.Kind, e.Message.Title, recipient(e.Partition), e.At.Format(time.TimeOnly))
	}
	last := now
	run := func() {
		to := now
		o := inbox.ScheduledOptions{Limit: 100}
		for {
			page, err := ib.Due(ctx, alerts, last.Add(-overlap), to, o)
			if err != nil {
				panic(err)
			}
			for _, d := range page.Deliveries {
				if e := d.Event(); !pushed[e.ID] {
					pushed[e.ID] = true
					push(e)
				}
			}
			if o.Cursor = page.Cursor; o.Cursor == "" {
				break
			}
		}
		last = to
	}
	for range 10 {
		now = now.Add(time.Minute)
		run()
	}
	// Output:
	// 09:56:00: due Standup in 5 minutes to ann, due 09:55:00
	// 09:56:00: due Standup in 5 minutes to bob, due 09:55:00
	// 09:58:00: due Coffee to cid, due 09:57:30
	// 09:59:00: due Fire drill to everyone, due 09:58:00
}

package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stak/inbox"
)

// Get reads one message as the user sees it, with the user's marks.
func ExampleInbox_Get() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	res, _ := ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "invoice", Category: "billing"})
	ib.MarkRead(ctx, ann, res.Message.ID)

	m, err := ib.Get(ctx, ann, res.Message.ID)
	fmt.Println(m.Title, m.Category, "read at", m.ReadAt.Format(time.TimeOnly), err)
	_, err = ib.Get(ctx, alerts.User("bob"), res.Message.ID) // not bob's
	fmt.Println(errors.Is(err, inbox.ErrNotFound))
	// Output:
	// invoice billing read at 09:00:00 <nil>
	// true
}

// Unarchive puts an archived message back in the feed, read or unread as
// it was.
func ExampleInbox_Unarchive() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	res, _ := ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "invoice"})
	ib.Archive(ctx, ann, res.Message.ID)

	changed, err := ib.Unarchive(ctx, ann, res.Message.ID)
	again, _ := ib.Unarchive(ctx, ann, res.Message.ID)
	c, _ := ib.Counts(ctx, ann)
	fmt.Println(changed, again, err)
	fmt.Printf("total %d, unread %d, archived %d\n", c.Total, c.Unread, c.Archived)
	// Output:
	// true false <nil>
	// total 1, unread 1, archived 0
}

// Delete removes a direct message's copy, and hides a broadcast for the
// user alone.
func ExampleInbox_Delete() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann, bob := alerts.User("ann"), alerts.User("bob")
	ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "invoice"})
	b, _ := ib.Broadcast(ctx, alerts, inbox.Draft{Title: "release"})

	changed, err := ib.Delete(ctx, ann, b.ID)
	fmt.Println(changed, err)
	for _, u := range []inbox.User{ann, bob} {
		page, _ := ib.List(ctx, u, inbox.ListOptions{})
		c, _ := ib.Counts(ctx, u)
		fmt.Printf("%s: %d listed, first %q, total %d\n", u.ID, len(page.Messages), page.Messages[0].Title, c.Total)
	}
	// Output:
	// true <nil>
	// ann: 1 listed, first "invoice", total 1
	// bob: 1 listed, first "release", total 1
}

// MarkInteracted records that the user clicked the message's action, and
// marks it read.
func ExampleInbox_MarkInteracted() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	res, _ := ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "Approve the deploy", CTAURI: "https://example.com/deploys/7"})

	changed, err := ib.MarkInteracted(ctx, ann, res.Message.ID)
	m, _ := ib.Get(ctx, ann, res.Message.ID)
	fmt.Println(changed, err, "interacted:", !m.InteractedAt.IsZero(), "read:", !m.ReadAt.IsZero())
	// Output:
	// true <nil> interacted: true read: true
}

// Unsnooze brings a snoozed message back now, as it was.
func ExampleInbox_Unsnooze() {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	ib := newMovableInbox(&now)
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	res, _ := ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "Review the Q4 plan"})
	ib.Snooze(ctx, ann, res.Message.ID, now.Add(24*time.Hour))
	now = now.Add(time.Hour)

	changed, err := ib.Unsnooze(ctx, ann, res.Message.ID)
	again, _ := ib.Unsnooze(ctx, ann, res.Message.ID)
	c, _ := ib.Counts(ctx, ann)
	fmt.Println(changed, again, err)
	fmt.Printf("unread %d, snoozed %d\n", c.Unread, c.Snoozed)
	// Output:
	// true false <nil>
	// unread 1, snoozed 0
}

// ArchiveAll is a view's "clear" button: it archives what List with the
// same options shows, here one category.
func ExampleInbox_ArchiveAll() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	for _, cat := range []string{"billing", "billing", "incident"} {
		ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: cat + " message", Category: cat})
	}
	ib.Broadcast(ctx, alerts, inbox.Draft{Title: "billing news", Category: "billing"})

	n, err := ib.ArchiveAll(ctx, ann, inbox.ListOptions{Category: "billing"})
	c, _ := ib.Counts(ctx, ann)
	fmt.Println(n, err)
	fmt.Printf("billing: %+v\n", c.Categories["billing"])
	fmt.Printf("incident: %+v\n", c.Categories["incident"])
	// Output:
	// 3 <nil>
	// billing: {Total:0 Read:0 Unread:0 Archived:3 Muted:0 Unseen:0}
	// incident: {Total:1 Read:0 Unread:1 Archived:0 Muted:0 Unseen:1}
}

// DeleteAll is the archive's "empty" button.
func ExampleInbox_DeleteAll() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	for _, title := range []string{"one", "two"} {
		ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: title})
	}
	ib.Broadcast(ctx, alerts, inbox.Draft{Title: "release"})
	ib.ArchiveAll(ctx, ann, inbox.ListOptions{})
	ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "three"})

	n, err := ib.DeleteAll(ctx, ann, inbox.ListOptions{Archived: true})
	c, _ := ib.Counts(ctx, ann)
	fmt.Println(n, err)
	fmt.Printf("total %d, archived %d\n", c.Total, c.Archived)
	// Output:
	// 3 <nil>
	// total 1, archived 0
}

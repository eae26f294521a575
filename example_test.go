package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
)

// newExampleInbox returns an Inbox on the in-memory store with a fixed
// clock and seeded IDs, so the examples print the same every time.
func newExampleInbox() *inbox.Inbox {
	clock := func() time.Time { return time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC) }
	return inbox.New(memstore.New(memstore.WithClock(clock)),
		inbox.WithClock(clock), inbox.WithEntropy(rand.New(rand.NewSource(1))))
}

// newMovableInbox returns an Inbox on the in-memory store whose clock
// reads *now, for examples that move time on.
func newMovableInbox(now *time.Time) *inbox.Inbox {
	clock := func() time.Time { return *now }
	return inbox.New(memstore.New(memstore.WithClock(clock)), inbox.WithClock(clock))
}

func ExampleInbox_Publish() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}

	d := inbox.Draft{
		HostSystemID: "incident-42",
		Sender:       "pager",
		Category:     "incident",
		Title:        "Disk 91% full on db-1",
		Body:         map[string]any{"host": "db-1", "used": 0.91},
	}
	res, err := ib.Publish(ctx, alerts, []string{"ann", "bob"}, d)
	if err != nil {
		panic(err)
	}
	fmt.Println("delivered:", res.Delivered, "expires:", res.Message.ExpiresAt.Format(time.DateOnly))

	// A retry with the same host system ID delivers nothing twice; the
	// copies it makes share the first ones' ID and expiry.
	again, _ := ib.Publish(ctx, alerts, []string{"ann", "bob", "cid"}, d)
	fmt.Println("retry delivered:", again.Delivered, "duplicates:", again.Duplicates, "same id:", again.Message.ID == res.Message.ID)

	// The same host system ID with other content is refused.
	d.Title = "Disk 95% full on db-1"
	_, err = ib.Publish(ctx, alerts, []string{"ann"}, d)
	fmt.Println("other content:", errors.Is(err, inbox.ErrConflict))
	// Output:
	// delivered: [ann bob] expires: 2026-12-21
	// retry delivered: [cid] duplicates: [ann bob] same id: true
	// other content: true
}

func ExampleInbox_Broadcast() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}

	// Stored once, whatever the number of users.
	msg, err := ib.Broadcast(ctx, alerts, inbox.Draft{Title: "Maintenance tonight", Category: "ops", TTL: 48 * time.Hour})
	if err != nil {
		panic(err)
	}
	page, _ := ib.List(ctx, alerts.User("anyone"), inbox.ListOptions{})
	fmt.Println(msg.IsBroadcast(), len(page.Messages), page.Messages[0].Title, page.Messages[0].ExpiresAt.Format(time.DateTime))
	// Output:
	// true 1 Maintenance tonight 2026-11-23 09:00:00
}

func ExampleInbox_List() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	for _, title := range []string{"one", "two", "three"} {
		ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: title})
	}
	ib.Broadcast(ctx, alerts, inbox.Draft{Title: "to everyone"})

	opts := inbox.ListOptions{Limit: 3}
	for {
		page, err := ib.List(ctx, alerts.User("ann"), opts)
		if err != nil {
			panic(err)
		}
		for _, m := range page.Messages {
			fmt.Printf("%s (broadcast: %v)\n", m.Title, m.IsBroadcast())
		}
		if page.Cursor == "" {
			break
		}
		fmt.Println("-- next page")
		opts.Cursor = page.Cursor
	}
	// Output:
	// to everyone (broadcast: true)
	// three (broadcast: false)
	// two (broadcast: false)
	// -- next page
	// one (broadcast: false)
}

func ExampleInbox_MarkRead() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "direct"})
	ib.Broadcast(ctx, alerts, inbox.Draft{Title: "broadcast"})

	page, _ := ib.List(ctx, ann, inbox.ListOptions{})
	for _, m := range page.Messages {
		changed, err := ib.MarkRead(ctx, ann, m.ID)
		again, _ := ib.MarkRead(ctx, ann, m.ID)
		fmt.Println(m.Title, changed, again, err)
	}
	unread, _ := ib.List(ctx, ann, inbox.ListOptions{UnreadOnly: true})
	fmt.Println("unread left:", len(unread.Messages))
	// Output:
	// broadcast true false <nil>
	// direct true false <nil>
	// unread left: 0
}

func ExampleInbox_Counts() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	ib.Publish(ctx, alerts, []string{"ann", "bob"}, inbox.Draft{Title: "invoice", Category: "billing"})
	ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "disk", Category: "incident"})
	b, _ := ib.Broadcast(ctx, alerts, inbox.Draft{Title: "release", Category: "news"})
	ib.MarkRead(ctx, ann, b.ID)

	c, err := ib.Counts(ctx, ann)
	if err != nil {
		panic(err)
	}
	fmt.Printf("total %d, read %d, unread %d\n", c.Total, c.Read, c.Unread)
	for _, cat := range []string{"billing", "incident", "news"} {
		fmt.Printf("%s: %+v\n", cat, c.Categories[cat])
	}
	// Output:
	// total 3, read 1, unread 2
	// billing: {Total:1 Read:0 Unread:1 Archived:0 Muted:0 Unseen:1}
	// incident: {Total:1 Read:0 Unread:1 Archived:0 Muted:0 Unseen:1}
	// news: {Total:1 Read:1 Unread:0 Archived:0 Muted:0 Unseen:0}
}

// A badge shows what the user has not seen: opening the feed marks
// everything seen in one small write, and only what arrives after counts.
func ExampleInbox_MarkSeen() {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	ib := newMovableInbox(&now)
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "invoice"})
	ib.Broadcast(ctx, alerts, inbox.Draft{Title: "release"})

	ib.MarkSeen(ctx, ann) // ann opens her feed
	now = now.Add(time.Minute)
	ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "disk full"})

	c, _ := ib.Counts(ctx, ann)
	fmt.Printf("unread %d, unseen %d\n", c.Unread, c.Unseen)
	// Output:
	// unread 3, unseen 1
}

// Archiving takes a message out of the feed and the unread count; the
// archived list shows it.
func ExampleInbox_Archive() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	res, _ := ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "invoice"})
	ib.Broadcast(ctx, alerts, inbox.Draft{Title: "release"})

	if _, err := ib.Archive(ctx, ann, res.Message.ID); err != nil {
		panic(err)
	}
	feed, _ := ib.List(ctx, ann, inbox.ListOptions{})
	archived, _ := ib.List(ctx, ann, inbox.ListOptions{Archived: true})
	c, _ := ib.Counts(ctx, ann)
	fmt.Println("feed:", feed.Messages[0].Title, "- archived:", archived.Messages[0].Title)
	fmt.Printf("total %d, unread %d, archived %d\n", c.Total, c.Unread, c.Archived)
	// Output:
	// feed: release - archived: invoice
	// total 1, unread 1, archived 1
}

func ExampleInbox_MarkAllRead() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	for i := 0; i < 30; i++ {
		ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: fmt.Sprint("message ", i)})
	}
	ib.Broadcast(ctx, alerts, inbox.Draft{Title: "broadcast"})

	n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{})
	c, _ := ib.Counts(ctx, ann)
	fmt.Println(n, err, c.Unread)
	// Output:
	// 31 <nil> 0
}

func ExampleInbox_BroadcastGroup() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}

	// Stored once in the group's partition, for ten members or ten million.
	if _, err := ib.BroadcastGroup(ctx, alerts, "admins", inbox.Draft{Category: "ops", Title: "Deploy at 17:00"}); err != nil {
		panic(err)
	}
	// The host knows who is in the group, and says so when the user reads.
	for _, u := range []inbox.User{alerts.User("ann").InGroups("admins"), alerts.User("bob")} {
		c, err := ib.Counts(ctx, u)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %d unread\n", u.ID, c.Unread)
	}
	// Output:
	// ann: 1 unread
	// bob: 0 unread
}

// A host pushes changes to open sessions from the events StreamHandler
// derives from the table's stream. Here one stream record, as Lambda
// delivers it, of a message inserted for ann.
func ExampleWithEvents() {
	push := func(_ context.Context, e inbox.Event) error {
		fmt.Printf("%s: %s in %s: %q\n", e.ID, e.Kind, e.Partition.PK(), e.Message.Title)
		return nil // an error would fail the record, for Lambda to retry
	}
	ib := inbox.New(memstore.New(), inbox.WithEvents(push))

	str := events.NewStringAttribute
	item := map[string]events.DynamoDBAttributeValue{
		"pk": str("t#acmeU#ann#alerts"), "sk": str("m#01JP9Y3FM0V63QXKKD6T5AR6KF"), "kind": str("UM"),
		"headers": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"audiences": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"kind": str("users")}),
		}),
		"message": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"title": str("Disk full")}),
	}
	rec := events.DynamoDBEventRecord{EventID: "4a1f", EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		SequenceNumber: "100", Keys: map[string]events.DynamoDBAttributeValue{"pk": item["pk"], "sk": item["sk"]}, NewImage: item,
	}}
	resp, err := ib.StreamHandler(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}})
	fmt.Println(len(resp.BatchItemFailures), "failed,", err)
	// Output:
	// 4a1f/created: created in t#acmeU#ann#alerts: "Disk full"
	// 0 failed, <nil>
}

// Events without DynamoDB: memstore feeds its own changes (WithChanges),
// and HandleChange turns them into the events the table's stream would
// make, for a unit test of an EventHandler or a demo.
func ExampleInbox_HandleChange() {
	ctx := context.Background()
	clock := func() time.Time { return time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC) }
	mem := memstore.New(memstore.WithClock(clock), memstore.WithChanges())
	push := func(_ context.Context, e inbox.Event) error {
		fmt.Printf("%s in %s: %q\n", e.Kind, e.Partition.PK(), e.Message.Title)
		return nil
	}
	ib := inbox.New(mem, inbox.WithClock(clock), inbox.WithEvents(push))
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}

	res, _ := ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "Disk full"})
	ib.Broadcast(ctx, alerts, inbox.Draft{Title: "Maintenance tonight"})
	ib.MarkRead(ctx, alerts.User("ann"), res.Message.ID)

	n, err := mem.DeliverChanges(ctx, ib.HandleChange)
	fmt.Println(n, "changes,", err)
	// Output:
	// created in t#acmeU#ann#alerts: "Disk full"
	// created in t#acmeG#$public#alerts: "Maintenance tonight"
	// read in t#acmeU#ann#alerts: "Disk full"
	// 3 changes, <nil>
}

// ExampleInbox_ListThreads shows a user's conversations, latest activity
// first: a one-to-one chat (direct messages to both users, one thread) and
// a group chat (the group's messages, stored once), each with its newest
// message and exact unread count.
func ExampleInbox_ListThreads() {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	ib := newMovableInbox(&now)
	chat := inbox.Scope{Tenant: "acme", Inbox: "chat"}
	ann := chat.User("ann").InGroups("team")

	ib.Publish(ctx, chat, []string{"ann", "bob"}, inbox.Draft{Sender: "bob", Thread: "ann-bob", Title: "Hello!"})
	now = now.Add(time.Minute)
	ib.BroadcastGroup(ctx, chat, "team", inbox.Draft{Sender: "carol", Thread: "team", Title: "Hey everyone!"})
	now = now.Add(time.Minute)
	ib.BroadcastGroup(ctx, chat, "team", inbox.Draft{Sender: "dave", Thread: "team", Title: "Standup in 5"})
	now = now.Add(time.Minute)
	ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "team"})

	page, _ := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
	for _, t := range page.Threads {
		fmt.Printf("%-8s group %-5q %s: %-14s unread %d of %d\n", t.Thread, t.Group, t.Latest.Sender, t.Latest.Title, t.Unread, t.Total)
	}
	// Output:
	// team     group "team" dave: Standup in 5   unread 0 of 2
	// ann-bob  group ""    bob: Hello!         unread 1 of 1
}

// A scheduled message is stored at once and shows, unread, at its
// delivery time: before then it is in neither List nor Counts.
func ExampleDraft_deliverAt() {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	ib := newMovableInbox(&now)
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")

	_, err := ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "Standup in 5 minutes", DeliverAt: now.Add(time.Hour)})
	if err != nil {
		panic(err)
	}
	show := func() {
		c, _ := ib.Counts(ctx, ann)
		page, _ := ib.List(ctx, ann, inbox.ListOptions{})
		fmt.Printf("%s: unread %d, listed %d\n", now.Format(time.TimeOnly), c.Unread, len(page.Messages))
	}
	show()
	now = now.Add(time.Hour - time.Second)
	show()
	now = now.Add(time.Second)
	show()
	// Output:
	// 09:00:00: unread 0, listed 0
	// 09:59:59: unread 0, listed 0
	// 10:00:00: unread 1, listed 1
}

func ExampleInbox_Snooze() {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	ib := newMovableInbox(&now)
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")

	res, err := ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "Review the Q4 plan"})
	if err != nil {
		panic(err)
	}
	if _, err := ib.Snooze(ctx, ann, res.Message.ID, now.Add(2*time.Hour)); err != nil {
		panic(err)
	}
	show := func() {
		c, _ := ib.Counts(ctx, ann)
		page, _ := ib.List(ctx, ann, inbox.ListOptions{})
		fmt.Printf("%s: unread %d, snoozed %d, listed %d\n", now.Format(time.TimeOnly), c.Unread, c.Snoozed, len(page.Messages))
	}
	show()
	now = now.Add(2*time.Hour - time.Second)
	show()
	now = now.Add(time.Second)
	show()
	// Output:
	// 09:00:00: unread 0, snoozed 1, listed 0
	// 10:59:59: unread 0, snoozed 1, listed 0
	// 11:00:00: unread 1, snoozed 0, listed 1
}

func ExampleDraft_aggregate() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")

	for _, fan := range []string{"bob", "dan", "bob", "carol"} {
		like := inbox.Draft{Aggregate: "post-42:likes", Category: "likes", Sender: fan, Title: fan + " liked your post"}
		if _, err := ib.Publish(ctx, alerts, []string{"ann"}, like); err != nil {
			panic(err)
		}
	}
	_, _ = ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "Welcome!"})
	show := func() {
		page, _ := ib.List(ctx, ann, inbox.ListOptions{})
		c, _ := ib.Counts(ctx, ann)
		for _, m := range page.Messages {
			if m.Count > 0 {
				fmt.Printf("%s and %d others: %d likes, read %v\n", m.Senders[0], len(m.Senders)-1, m.Count, m.IsRead())
			} else {
				fmt.Println(m.Title)
			}
		}
		fmt.Println("unread:", c.Unread)
	}
	show()

	// Read, the item is one message; the next like makes it unread again.
	page, _ := ib.List(ctx, ann, inbox.ListOptions{Category: "likes"})
	_, _ = ib.MarkRead(ctx, ann, page.Messages[0].ID)
	_, _ = ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Aggregate: "post-42:likes", Category: "likes", Sender: "erin", Title: "erin liked your post"})
	show()
	// Output:
	// Welcome!
	// carol and 2 others: 4 likes, read false
	// unread: 2
	// erin and 3 others: 5 likes, read false
	// Welcome!
	// unread: 2
}

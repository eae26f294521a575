package inbox_test

import (
	"context"
	"fmt"

	"github.com/stak/inbox"
)

// Muting a noisy group chat keeps its messages in the feed, marked
// muted, but takes their unread out of the badge at once; unmuting
// brings them back.
func ExampleInbox_SetPreferences() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann").InGroups("devs")
	ib.BroadcastGroup(ctx, alerts, "devs", inbox.Draft{Title: "build green", Thread: "ci"})
	ib.BroadcastGroup(ctx, alerts, "devs", inbox.Draft{Title: "build red", Thread: "ci"})
	ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "invoice"})

	changed, err := ib.SetPreferences(ctx, ann, inbox.Preferences{MutedGroups: []string{"devs"}})
	fmt.Println(changed, err)
	c, _ := ib.Counts(ctx, ann)
	fmt.Printf("total %d, unread %d, muted %d, unseen %d\n", c.Total, c.Unread, c.Muted, c.Unseen)
	page, _ := ib.List(ctx, ann, inbox.ListOptions{})
	for _, m := range page.Messages {
		fmt.Println(m.Title, m.Muted)
	}
	threads, _ := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
	fmt.Printf("%s muted %v: unread %d, muted %d\n", threads.Threads[0].Thread, threads.Threads[0].Muted, threads.Threads[0].Unread, threads.Threads[0].Tally.Muted)

	ib.SetPreferences(ctx, ann, inbox.Preferences{}) // unmute
	c, _ = ib.Counts(ctx, ann)
	fmt.Printf("total %d, unread %d, muted %d, unseen %d\n", c.Total, c.Unread, c.Muted, c.Unseen)
	// Output:
	// true <nil>
	// total 3, unread 1, muted 2, unseen 1
	// invoice false
	// build red true
	// build green true
	// ci muted true: unread 0, muted 2
	// total 3, unread 3, muted 0, unseen 3
}

// Muting a one-to-one chat (a thread of direct messages) keeps its
// messages in the feed, marked muted, and takes their unread out of the
// badge at once; unmuting brings them back. A group chat is muted by
// muting its group.
func ExampleInbox_SetPreferences_thread() {
	ctx := context.Background()
	ib := newExampleInbox()
	chat := inbox.Scope{Tenant: "acme", Inbox: "chat"}
	ann := chat.User("ann")
	ib.Publish(ctx, chat, []string{"ann", "bob"}, inbox.Draft{Sender: "bob", Thread: "ann-bob", Title: "lunch?"})
	ib.Publish(ctx, chat, []string{"ann", "bob"}, inbox.Draft{Sender: "bob", Thread: "ann-bob", Title: "12:30?"})
	ib.Publish(ctx, chat, []string{"ann"}, inbox.Draft{Title: "invoice"})
	show := func() {
		c, _ := ib.Counts(ctx, ann)
		fmt.Printf("total %d, unread %d, muted %d, unseen %d\n", c.Total, c.Unread, c.Muted, c.Unseen)
	}
	show()

	changed, err := ib.SetPreferences(ctx, ann, inbox.Preferences{MutedThreads: []string{"ann-bob"}})
	fmt.Println(changed, err)
	show()
	threads, _ := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
	for _, t := range threads.Threads {
		fmt.Printf("%s muted %v: unread %d, muted %d\n", t.Thread, t.Muted, t.Unread, t.Tally.Muted)
	}

	ib.SetPreferences(ctx, ann, inbox.Preferences{}) // unmute
	show()
	// Output:
	// total 3, unread 3, muted 0, unseen 3
	// true <nil>
	// total 3, unread 1, muted 2, unseen 1
	// ann-bob muted true: unread 0, muted 2
	// total 3, unread 3, muted 0, unseen 3
}

func ExampleInbox_Preferences() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	ib.SetPreferences(ctx, ann, inbox.Preferences{MutedGroups: []string{"sales", "devs"}})

	p, err := ib.Preferences(ctx, ann)
	fmt.Println(p.MutedGroups, err)
	// Output:
	// [devs sales] <nil>
}

// An inbox's config sets the default preferences: here, marketing is
// opted out of. A user who never set her own follows them, so Publish
// stores no copy for her; one who sets her own (even none) decides for
// herself, until she resets them.
func ExampleInbox_ResetPreferences() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ib.PutInboxConfig(ctx, alerts, inbox.InboxConfig{Preferences: inbox.Preferences{OptedOut: []string{"marketing"}}})
	ann := alerts.User("ann")

	res, _ := ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "sale", Category: "marketing"})
	fmt.Println("opted out:", res.OptedOut)
	ib.SetPreferences(ctx, ann, inbox.Preferences{}) // her own: none opted out
	res, _ = ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "sale", Category: "marketing"})
	fmt.Println("delivered:", res.Delivered)
	c, _ := ib.Counts(ctx, ann)
	fmt.Println("unread", c.Unread)

	changed, err := ib.ResetPreferences(ctx, ann)
	p, _ := ib.Preferences(ctx, ann)
	c, _ = ib.Counts(ctx, ann)
	fmt.Println(changed, err, p.OptedOut, p.Own, "unread", c.Unread)
	// Output:
	// opted out: [ann]
	// delivered: [ann]
	// unread 1
	// true <nil> [marketing] false unread 0
}

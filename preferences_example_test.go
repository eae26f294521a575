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

package inbox_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stak/inbox"
)

// ExampleInbox_ReadBy shows the ticks of a chat's page: who has read each
// message, its sender left out, in a group chat (read by the members'
// marks) and in a one-to-one chat (read by the other user's copy).
func ExampleInbox_ReadBy() {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	ib := newMovableInbox(&now)
	chat := inbox.Scope{Tenant: "acme", Inbox: "chat"}
	ann, bob, carol := chat.User("ann").InGroups("team"), chat.User("bob").InGroups("team"), chat.User("carol").InGroups("team")

	ib.BroadcastGroup(ctx, chat, "team", inbox.Draft{Sender: "ann", Thread: "team", Title: "Standup in 5"})
	now = now.Add(time.Minute)
	ib.BroadcastGroup(ctx, chat, "team", inbox.Draft{Sender: "ann", Thread: "team", Title: "Room 2"})
	ib.Publish(ctx, chat, []string{"ann", "bob"}, inbox.Draft{Sender: "ann", Thread: "ann-bob", Title: "Lunch?"})
	now = now.Add(time.Minute)
	ib.MarkAllRead(ctx, bob, inbox.ListOptions{Thread: "team"})
	ib.MarkAllRead(ctx, bob, inbox.ListOptions{Thread: "ann-bob"})
	now = now.Add(time.Minute)
	newest, _ := ib.List(ctx, carol, inbox.ListOptions{Thread: "team", Limit: 1})
	ib.MarkRead(ctx, carol, newest.Messages[0].ID)

	show := func(page inbox.Page, members ...string) {
		ticks, err := ib.ReadBy(ctx, ann, page.Messages, members...)
		if err != nil {
			panic(err)
		}
		for i, m := range page.Messages {
			var who []string
			for _, r := range ticks[i].Readers {
				who = append(who, r.User+" at "+r.ReadAt.Format("15:04"))
			}
			fmt.Printf("%-12s seen by %d: %s\n", m.Title, len(ticks[i].Readers), strings.Join(who, ", "))
		}
	}
	group, _ := ib.List(ctx, ann, inbox.ListOptions{Thread: "team"})
	show(group)
	direct, _ := ib.List(ctx, ann, inbox.ListOptions{Thread: "ann-bob"})
	show(direct, "bob")
	// Output:
	// Room 2       seen by 2: bob at 09:02, carol at 09:03
	// Standup in 5 seen by 1: bob at 09:02
	// Lunch?       seen by 1: bob at 09:02
}

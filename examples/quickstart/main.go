// Command quickstart walks through the inbox API on the in-memory store:
// it publishes to two users, broadcasts to everyone and to a group, lists
// one user's merged inbox, marks a direct message and a broadcast read,
// and prints the inbox and the counts.
//
// The clock is fixed and the ID entropy seeded, so the output is the same
// on every run:
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// run plays the walkthrough and writes what it sees to w.
func run(ctx context.Context, w io.Writer) error {
	// A clock the walkthrough moves by hand, one minute per step.
	now := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tick := func() { now = now.Add(time.Minute) }

	store := memstore.New(memstore.WithClock(clock))
	ib := inbox.New(store,
		inbox.WithClock(clock),
		inbox.WithEntropy(rand.NewChaCha8([32]byte{})),
	)
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	// The host application knows who is in which group (its database, or
	// the user's token) and says so on each call: ann is an admin.
	ann, bob := scope.User("ann").InGroups("admins"), scope.User("bob")

	// A message to two users: one ID, one copy in each user's partition.
	invoice, err := ib.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{
		Sender: "billing-bot", Category: "billing", Title: "Invoice 2025-03 is ready",
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "published %s to %v\n", invoice.Message.ID, invoice.Delivered)
	tick()

	signin, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{
		Sender: "auth", Category: "security", Title: "New sign-in from Firefox on Linux",
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "published %s to %v\n", signin.Message.ID, signin.Delivered)
	tick()

	// A broadcast: stored once, seen by every user of the inbox.
	maintenance, err := ib.Broadcast(ctx, scope, inbox.Draft{
		Sender: "ops", Category: "news", Title: "Maintenance Saturday 22:00 UTC",
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "broadcast %s to everyone\n", maintenance.ID)
	tick()

	// A message to a group: stored once in the group's partition, whether
	// the group has ten members or ten million.
	deploy, err := ib.BroadcastGroup(ctx, scope, "admins", inbox.Draft{
		Sender: "ci", Category: "ops", Title: "Deploy of v2.3 at 17:00",
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "broadcast %s to group admins\n", deploy.ID)
	tick()

	if err := printInbox(ctx, w, ib, ann); err != nil {
		return err
	}

	// Ann reads her invoice (a direct message) and the maintenance notice
	// (a broadcast: a read receipt goes into her partition only).
	for _, id := range []string{invoice.Message.ID, maintenance.ID} {
		if _, err := ib.MarkRead(ctx, ann, id); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "ann read the invoice and the maintenance notice")
	tick()

	if err := printInbox(ctx, w, ib, ann); err != nil {
		return err
	}
	for _, u := range []inbox.User{ann, bob} {
		if err := printCounts(ctx, w, ib, u); err != nil {
			return err
		}
	}
	return nil
}

// printInbox prints u's feed, newest first, one line a message.
func printInbox(ctx context.Context, w io.Writer, ib *inbox.Inbox, u inbox.User) error {
	fmt.Fprintf(w, "\n%s's inbox:\n", u.ID)
	opts := inbox.ListOptions{}
	for {
		page, err := ib.List(ctx, u, opts)
		if err != nil {
			return err
		}
		for _, m := range page.Messages {
			read, kind := "unread", "direct"
			if m.IsRead() {
				read = "read  "
			}
			switch {
			case m.Audience.Group != "":
				kind = "group"
			case m.IsBroadcast():
				kind = "broadcast"
			}
			fmt.Fprintf(w, "  %s  %s  %-9s %-9s %s\n", m.DeliveredAt.Format("15:04"), read, kind, m.Category, m.Title)
		}
		if page.Cursor == "" {
			return nil
		}
		opts.Cursor = page.Cursor
	}
}

// printCounts prints u's totals and per-category counts.
func printCounts(ctx context.Context, w io.Writer, ib *inbox.Inbox, u inbox.User) error {
	c, err := ib.Counts(ctx, u)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s: %s\n", u.ID, tally(c.Tally))
	for _, cat := range slices.Sorted(maps.Keys(c.Categories)) {
		fmt.Fprintf(w, "  %-9s %s\n", cat, tally(c.Categories[cat]))
	}
	return nil
}

func tally(t inbox.Tally) string {
	return fmt.Sprintf("total %d, read %d, unread %d", t.Total, t.Read, t.Unread)
}

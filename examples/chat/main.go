// Command chat runs the chat seed's flows on the library, on the
// in-memory store: a one-to-one chat (direct messages to both users, one
// thread), a group chat of five (each message stored once, in the
// group's partition), the chat list with previews and exact unread counts
// (ListThreads), scrolling a chat's history (List with a thread), marking
// a chat read (MarkAllRead with the thread), the read ticks of a user's
// own messages (ReadBy), an ephemeral message that
// leaves the counts the instant it expires, and the events that move a
// chat to the top of a live page.
//
// The clock is fixed and the ID entropy seeded, so the output is the same
// on every run:
//
//	go run ./examples/chat
//
// The live page of examples/httpapi shows the same chat list (GET
// /threads); its browser test drives it.
package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chat:", err)
		os.Exit(1)
	}
}

// run plays the chat flows and writes what it sees to w.
func run(ctx context.Context, w io.Writer) error {
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	wait := func(d time.Duration) { now = now.Add(d) }

	// WithChanges makes the in-memory store feed its changes to
	// HandleChange, as DynamoDB Streams feed StreamHandler in production;
	// the events are what a live page is told.
	mem := memstore.New(memstore.WithClock(clock), memstore.WithChanges())
	var events []string
	ib := inbox.New(mem, inbox.WithClock(clock), inbox.WithEntropy(rand.NewChaCha8([32]byte{})),
		inbox.WithEvents(func(_ context.Context, e inbox.Event) error {
			switch {
			case e.Partition.User == "ann" || e.Partition.Group == "team":
				thread := e.Message.Thread
				if e.Kind == inbox.EventThreadRead {
					thread = e.Thread // her own read of a chat, in one write
				}
				line := fmt.Sprintf("%-8s chat %-8s %s", e.Kind, thread, e.Message.Title)
				events = append(events, strings.TrimSpace(line))
			case e.Kind == inbox.EventRead && slices.Contains(strings.Split(e.Message.Thread, "-"), "ann"):
				// Another member read a message of one of ann's chats: the
				// second tick, live.
				events = append(events, fmt.Sprintf("%-8s chat %-8s by %s", e.Kind, e.Message.Thread, e.Partition.User))
			case e.Kind == inbox.EventThreadRead && (e.Group == "team" || slices.Contains(strings.Split(e.Thread, "-"), "ann")):
				// Another member read a chat with ann up to its newest
				// message, in one write (a read position): every tick of
				// ann's messages below ReadUpTo, live.
				events = append(events, fmt.Sprintf("%-8s chat %-8s by %s", e.Kind, e.Thread, e.Partition.User))
			}
			return nil
		}))
	scope := inbox.Scope{Tenant: "acme", Inbox: "chat"}
	// The host knows who is in which group: five people in the team.
	team := []string{"ann", "bob", "carol", "dave", "erin"}
	ann := scope.User("ann").InGroups("team")

	// Usecase 1: bob sends ann a message. A one-to-one chat is a thread of
	// direct messages to both of them; the sender's own copy is written
	// read (Draft.Sender, in a thread).
	say := func(from string, to []string, text string, ttl time.Duration) error {
		_, err := ib.Publish(ctx, scope, to, inbox.Draft{Sender: from, Thread: chatID(to...), Title: text, TTL: ttl})
		wait(time.Minute)
		return err
	}
	// Usecase 4: carol writes to the team: one message in the group's
	// partition, however many members it has.
	post := func(from, text string, ttl time.Duration) error {
		_, err := ib.BroadcastGroup(ctx, scope, "team", inbox.Draft{Sender: from, Thread: "team", Title: text, TTL: ttl})
		wait(time.Minute)
		return err
	}
	steps := []func() error{
		func() error { return say("bob", []string{"ann", "bob"}, "Hello!", 0) },
		func() error { return post("carol", "Hey everyone!", 0) },
		func() error { return say("ann", []string{"ann", "bob"}, "Hi bob", 0) },
		func() error { return post("dave", "Standup in 5", 0) },
		func() error { return post("erin", "Running late", 0) },
		func() error { return say("dave", []string{"ann", "dave"}, "Got a minute?", 0) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "the team has %d members; its chat's messages are stored once\n", len(team))
	if err := chatList(ctx, w, ib, ann); err != nil {
		return err
	}

	// Usecase 3: ann opens the team chat and scrolls its history, two
	// messages a page.
	fmt.Fprintln(w, "\nann scrolls the team chat:")
	o := inbox.ListOptions{Thread: "team", Limit: 2}
	for page := 1; ; page++ {
		p, err := ib.List(ctx, ann, o)
		if err != nil {
			return err
		}
		for _, m := range p.Messages {
			fmt.Fprintf(w, "  page %d  %s  %-6s %s\n", page, m.DeliveredAt.Format("15:04"), m.Sender, m.Title)
		}
		if p.Cursor == "" {
			break
		}
		o.Cursor = p.Cursor
	}

	// Usecase 6: she has read it: the chat's count goes to zero, and only
	// that chat's.
	n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "team"})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nann marked the team chat read (%d messages)\n", n)
	if err := chatList(ctx, w, ib, ann); err != nil {
		return err
	}

	// Read ticks: who has read each of a user's own messages. carol sees
	// who in the team has read hers; ann sees whether bob has read hers,
	// before and after he opens their chat.
	carol := scope.User("carol").InGroups("team")
	fmt.Fprintln(w, "\ncarol's messages in the team chat:")
	if err := ticks(ctx, w, ib, carol, "team", team...); err != nil {
		return err
	}
	fmt.Fprintln(w, "ann's messages in her chat with bob:")
	if err := ticks(ctx, w, ib, ann, chatID("ann", "bob"), "bob"); err != nil {
		return err
	}
	if _, err := ib.MarkAllRead(ctx, scope.User("bob"), inbox.ListOptions{Thread: chatID("ann", "bob")}); err != nil {
		return err
	}
	wait(time.Minute)
	fmt.Fprintln(w, "bob opened the chat; ann's messages in it:")
	if err := ticks(ctx, w, ib, ann, chatID("ann", "bob"), "bob"); err != nil {
		return err
	}

	// Ephemeral messages: bob's self-destructing message counts until the
	// instant it expires, with nothing running at that instant.
	if err := say("bob", []string{"ann", "bob"}, "This message will self-destruct", 2*time.Minute); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nbob sent an ephemeral message (2 minutes)")
	if err := chatList(ctx, w, ib, ann); err != nil {
		return err
	}
	wait(2 * time.Minute)
	fmt.Fprintln(w, "\ntwo minutes later")
	if err := chatList(ctx, w, ib, ann); err != nil {
		return err
	}

	// Usecase 2: a live page learns of each change from the events, made
	// from the store's change feed (on DynamoDB, from its stream).
	if _, err := mem.DeliverChanges(ctx, ib.HandleChange); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nevents for ann's page (%d):\n", len(events))
	for _, e := range events {
		fmt.Fprintln(w, " ", e)
	}
	return nil
}

// chatID is the thread of the one-to-one chat of users: their IDs in order.
func chatID(users ...string) string {
	u := append([]string(nil), users...)
	if len(u) == 2 && u[0] > u[1] {
		u[0], u[1] = u[1], u[0]
	}
	return strings.Join(u, "-")
}

// ticks prints u's own messages in thread, newest first, with their read
// ticks: one when sent, two when every other member (of members) has
// read it, and who has.
func ticks(ctx context.Context, w io.Writer, ib *inbox.Inbox, u inbox.User, thread string, members ...string) error {
	p, err := ib.List(ctx, u, inbox.ListOptions{Thread: thread})
	if err != nil {
		return err
	}
	readBy, err := ib.ReadBy(ctx, u, p.Messages, members...)
	if err != nil {
		return err
	}
	others := len(members)
	if slices.Contains(members, u.ID) {
		others--
	}
	for i, m := range p.Messages {
		if m.Sender != u.ID {
			continue
		}
		var who []string
		for _, r := range readBy[i].Readers {
			who = append(who, r.User+" "+r.ReadAt.Format("15:04"))
		}
		tick := "✓ "
		if len(who) == others {
			tick = "✓✓"
		}
		seen := fmt.Sprintf("seen by %d of %d", len(who), others)
		if len(who) > 0 {
			seen += ": " + strings.Join(who, ", ")
		}
		fmt.Fprintf(w, "  %s  %-14s %s %s\n", m.DeliveredAt.Format("15:04"), m.Title, tick, seen)
	}
	return nil
}

// chatList prints u's chats, latest activity first, as Usecase 5's chat
// list shows them: preview, last activity and unread count.
func chatList(ctx context.Context, w io.Writer, ib *inbox.Inbox, u inbox.User) error {
	p, err := ib.ListThreads(ctx, u, inbox.ThreadOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s's chats:\n", u.ID)
	for _, t := range p.Threads {
		kind := "private"
		if t.Group != "" {
			kind = "group"
		}
		fmt.Fprintf(w, "  %-9s %-7s %s  %-6s %-32s unread %d of %d\n", t.Thread, kind, t.Latest.DeliveredAt.Format("15:04"), t.Latest.Sender, t.Latest.Title, t.Unread, t.Total)
	}
	return nil
}

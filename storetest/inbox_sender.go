package storetest

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// senderTests are the Inbox subtests about the sender of a message in a
// thread (inbox.Draft.Sender).
func senderTests() []suiteTest {
	return []suiteTest{
		{"SenderRead", testSenderRead},
		{"SenderNotInAudience", testSenderNotInAudience},
		{"SenderBadInput", testSenderBadInput},
		{"SenderEvents", testSenderEvents},
	}
}

// testSenderRead: in a thread, the sender's own message is read for her
// from its write on: her copy of a one-to-one message (read at the
// publish time), her view of a group message and of a message to
// everyone. It is neither unread nor unseen for her; Counts, the thread
// counts and ListThreads agree with List; the others' are unread and
// unseen. Outside a thread, Sender changes nothing. She marks her own
// messages afterwards as any other (read again: no change; archive,
// unarchive, delete), and a Recount finds the counters right.
func testSenderRead(e *env) {
	ann, bob := e.member("ann", "team"), e.member("bob", "team")
	e.markSeen(ann)
	e.markSeen(bob)
	e.clock.Advance(time.Second)
	at := e.clock.Now()
	dm := e.publish(inbox.Draft{Sender: "ann", Title: "hi bob", Thread: "ann-bob", Category: "chat"}, "ann", "bob")
	if !dm.Message.ReadAt.Equal(at) || dm.Message.Audience.UIDs[0] != "ann" {
		e.t.Errorf("Publish's message, ann's copy: read at %v, audience %v; want read at %v", dm.Message.ReadAt, dm.Message.Audience.UIDs, at)
	}
	grp := e.broadcastTo("team", inbox.Draft{Sender: "ann", Title: "standup?", Thread: "team"})
	all := e.broadcast(inbox.Draft{Sender: "ann", Title: "release", Thread: "news", Category: "chat"})
	plain := e.publish(inbox.Draft{Sender: "ann", Title: "no thread"}, "ann", "bob").Message
	unread := func(m driver.Message, u string) driver.Message {
		m = copyFor(m, u)
		m.ReadAt = time.Time{}
		return m
	}
	e.wantFeed(ann, inbox.ListOptions{}, unread(plain, "ann"), read(all, at), read(grp, at), copyFor(dm.Message, "ann"))
	e.wantFeed(bob, inbox.ListOptions{}, unread(plain, "bob"), all, grp, unread(dm.Message, "bob"))
	e.wantCounts(ann, inbox.Counts{Tally: unseenOf(tallyOf(4, 3), 1), Categories: map[string]inbox.Tally{"chat": tallyOf(2, 2)}})
	e.wantCounts(bob, inbox.Counts{Tally: unseenOf(tallyOf(4, 0), 4), Categories: map[string]inbox.Tally{"chat": unseenOf(tallyOf(2, 0), 2)}})
	for _, u := range []driver.User{ann, bob} {
		e.wantCountsFromFeed(u) // the thread counts and ListThreads too
	}
	for _, th := range listThreads(e.t, e.ctx, e.ib, ann, 0) {
		if th.Unread != 0 || th.Read != 1 || !th.Latest.IsRead() {
			e.t.Errorf("ann's thread %q of %q: %+v, latest read %v; want her own message, read", th.Thread, th.Group, th.Tally, th.Latest.IsRead())
		}
	}
	e.wantFeed(ann, inbox.ListOptions{UnreadOnly: true}, unread(plain, "ann"))

	// Her own messages take marks as any other.
	for _, id := range []string{dm.Message.ID, grp.ID, all.ID} {
		e.markRead(ann, id, false)
	}
	for _, c := range []struct {
		name string
		do   func(context.Context, driver.User, string) (bool, error)
		id   string
	}{{"Archive", e.ib.Archive, grp.ID}, {"Archive", e.ib.Archive, dm.Message.ID}, {"Unarchive", e.ib.Unarchive, grp.ID}, {"Delete", e.ib.Delete, all.ID}} {
		if ok, err := c.do(e.ctx, ann, c.id); err != nil || !ok {
			e.t.Errorf("%s(ann, %s) = %v, %v; want true, nil", c.name, c.id, ok, err)
		}
		e.wantCountsFromFeed(ann)
	}
	if h, ok := e.harness(); ok {
		e.deliver(h)
	}
	for _, u := range []driver.User{ann, bob} {
		if _, err := e.ib.Recount(e.ctx, u); err != nil {
			e.t.Fatalf("Recount(%s): %v", u.ID, err)
		}
		e.wantCountsFromFeed(u)
	}
	e.checkInvariant()
}

// testSenderNotInAudience: a sender who is not among a message's users
// gets nothing; one who is not in the group she writes to gets a receipt
// that counts nowhere (her Counts, List and ListThreads show nothing of
// it) until she names the group, when the message shows read; her read
// of a message to everyone counts, as she is in everyone.
func testSenderNotInAudience(e *env) {
	carol := e.user("carol")
	bob := e.member("bob", "team")
	e.publish(inbox.Draft{Sender: "carol", Title: "to bob alone", Thread: "carol-bob"}, "bob")
	e.wantRecords("carol's partition after a message to bob", nil, e.records(partitionOf(carol)))
	e.wantCounters(partitionOf(carol))

	g := e.broadcastTo("team", inbox.Draft{Sender: "carol", Title: "to a group she is not in", Thread: "team"})
	at := e.clock.Now()
	e.wantFeed(carol, inbox.ListOptions{})
	e.wantCounts(carol, inbox.Counts{})
	if th := listThreads(e.t, e.ctx, e.ib, carol, 0); len(th) != 0 {
		e.t.Errorf("carol's threads: %+v, want none", th)
	}
	e.wantCountsFromFeed(carol)
	e.wantCountsFromFeed(bob)
	joined := e.member("carol", "team")
	e.wantFeed(joined, inbox.ListOptions{}, read(g, at))
	e.wantCountsFromFeed(joined)
	e.markRead(joined, g.ID, false)
	e.checkInvariant()
}

// testSenderBadInput: in a thread, a Sender that is not a user's key is
// ErrInvalidKey and writes nothing; outside a thread it is free text.
func testSenderBadInput(e *env) {
	e.member("ann", "team")
	before := e.snapshot()
	for _, bad := range []string{"a#b", "*", "$public", "new\nline", strings.Repeat("u", driver.MaxKeyLen+1)} {
		d := inbox.Draft{Sender: bad, Title: "x", Thread: "t"}
		if _, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, d); !errors.Is(err, inbox.ErrInvalidKey) {
			e.t.Errorf("Publish in a thread from %q: %v, want ErrInvalidKey", bad, err)
		}
		if _, err := e.ib.BroadcastGroup(e.ctx, e.scope, "team", d); !errors.Is(err, inbox.ErrInvalidKey) {
			e.t.Errorf("BroadcastGroup in a thread from %q: %v, want ErrInvalidKey", bad, err)
		}
	}
	e.wantUnchanged("drafts in a thread from a bad sender", before)
	e.publish(inbox.Draft{Sender: "ops #7", Title: "outside a thread"}, "ann")
}

// testSenderEvents: the sender's copy of her message in a thread comes
// as created, already read (as List shows it), the others' unread; her
// read of a group message comes as read, in her partition, with the
// message's one created event; nothing says unread for her.
func testSenderEvents(e *env) {
	src, ib, events := e.eventInbox()
	ann, bob := e.member("ann", "team"), e.member("bob", "team")
	at := e.clock.Now()
	dm := e.publish(inbox.Draft{Sender: "ann", Title: "hi", Thread: "ann-bob"}, "ann", "bob").Message
	g := e.broadcastTo("team", inbox.Draft{Sender: "ann", Title: "standup?", Thread: "team"})
	if _, err := src.DeliverEvents(e.ctx, ib); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	type seen struct {
		kind inbox.EventKind
		p    string
		id   string
		read time.Time
	}
	want := map[seen]bool{
		{inbox.EventCreated, partitionOf(ann).PK(), dm.ID, at}:                 true,
		{inbox.EventCreated, partitionOf(bob).PK(), dm.ID, time.Time{}}:        true,
		{inbox.EventCreated, groupOf(e.scope, "team").PK(), g.ID, time.Time{}}: true,
		{inbox.EventRead, partitionOf(ann).PK(), g.ID, at}:                     true,
	}
	for _, ev := range events.take() {
		k := seen{ev.Kind, ev.Partition.PK(), ev.Message.ID, ev.Message.ReadAt}
		if !want[k] {
			e.t.Errorf("event %s in %s of %s (read at %v): not expected", ev.Kind, k.p, k.id, k.read)
		}
		delete(want, k)
	}
	for k := range want {
		e.t.Errorf("no event %s in %s of %s (read at %v)", k.kind, k.p, k.id, k.read)
	}
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)
}

package storetest

import (
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// testGroupPositionEvents: MarkAllRead of a group chat writes one read
// position in the group's thread, which the store's changes (its stream)
// carry as one EventThreadRead of the member's partition, naming the
// thread and the group, up to above the newest message; ReadBy counts her
// among each message's readers at once, and Counts and ListThreads agree
// with the feed.
func testGroupPositionEvents(e *env) {
	e.needPositions()
	src, handler, events := e.eventInbox()
	ann, bob := e.member("ann", "crew"), e.member("bob", "crew")
	var msgs []driver.Message
	for range 4 {
		msgs = append(msgs, e.broadcastTo("crew", inbox.Draft{Title: "hi", Thread: "chat", Sender: "bob"}))
		e.clock.Advance(time.Second)
	}
	if _, err := src.DeliverEvents(e.ctx, handler); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	events.take()
	at := e.clock.Now()
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n != 4 {
		e.t.Fatalf("MarkAllRead(ann, group chat) = %d, %v; want 4", n, err)
	}
	e.wantReadAt("by a group position", ann, "chat", at, ids(msgs)...)
	if _, err := src.DeliverEvents(e.ctx, handler); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	var moved int
	for _, ev := range events.take() {
		if ev.Kind == inbox.EventThreadRead {
			moved++
			if ev.Partition != e.part("ann") || ev.Thread != "chat" || ev.Group != "crew" || ev.ReadUpTo <= msgs[3].ID {
				e.t.Errorf("EventThreadRead = %+v, want ann's partition, thread chat of group crew, up to above %s", ev, msgs[3].ID)
			}
		}
	}
	if moved != 1 {
		e.t.Errorf("MarkAllRead(ann, group chat) made %d EventThreadRead, want 1", moved)
	}
	rb, err := e.ib.ReadBy(e.ctx, bob, msgs)
	if err != nil {
		e.t.Fatal(err)
	}
	for i, r := range rb {
		if len(r.Readers) != 1 || r.Readers[0].User != "ann" || !r.Readers[0].ReadAt.Equal(at) {
			e.t.Errorf("ReadBy(bob) of message %d = %+v, want ann at %v", i, r.Readers, at)
		}
	}
	e.wantCountsFromFeed(ann)
	e.wantThreadsFromFeed(ann)
	e.checkInvariant()
}

package storetest

import (
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// positionInboxTests are the Inbox subtests of read positions
// (inbox.Inbox.MarkAllRead of a thread).
func positionInboxTests() []suiteTest {
	return []suiteTest{
		{"MarkAllReadByPosition", testMarkAllReadByPosition},
		{"MarkAllReadByPositionWrittenOut", testMarkAllReadByPositionWrittenOut},
	}
}

// wantReadAt checks that List of thread t shows u's messages with ids
// read at at (zero: unread).
func (e *env) wantReadAt(what string, u driver.User, t string, at time.Time, ids ...string) {
	e.t.Helper()
	byID := map[string]driver.Message{}
	for _, m := range e.listAll(u, inbox.ListOptions{Thread: t, Limit: inbox.MaxPageSize}) {
		byID[m.ID] = m
	}
	for _, id := range ids {
		m, ok := byID[id]
		switch {
		case !ok:
			e.t.Errorf("%s: List(%s, thread %s) lacks %s", what, u.ID, t, id)
		case !m.ReadAt.Equal(at):
			e.t.Errorf("%s: List(%s, thread %s) shows %s read at %v, want %v", what, u.ID, t, id, m.ReadAt, at)
		}
	}
}

// testMarkAllReadByPosition: MarkAllRead of a one-to-one chat marks its
// unread messages in one Store.Mark of one mark, whatever their number
// (a read position); Counts, List and ListThreads show them read at
// once. A message marked read one by one keeps its own time; MarkRead
// of a covered one changes nothing; one archived unread, unarchived, is
// unread; a message that arrives after is unread; UpTo bounds the
// position; a second MarkAllRead reads the new ones at its own time and
// leaves the earlier ones' time.
func testMarkAllReadByPosition(e *env) {
	ann := e.user("ann")
	var ids []string
	for i := range 30 {
		cat := ""
		if i%3 == 0 {
			cat = "billing"
		}
		ids = append(ids, e.publish(inbox.Draft{Title: "dm", Thread: "dm", Category: cat, Sender: "bob"}, "ann", "bob").Message.ID)
		e.clock.Advance(time.Second)
	}
	other := e.publish(inbox.Draft{Title: "elsewhere", Thread: "other"}, "ann").Message.ID
	e.clock.Advance(time.Second)
	early := e.clock.Now()
	e.markRead(ann, ids[0], true) // read one by one, before
	e.clock.Advance(time.Second)

	counted := &countingStore{Store: e.store}
	ib := inbox.New(counted, inbox.WithClock(e.clock.Now))
	at := e.clock.Now()
	if n, err := ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm", UpTo: ids[24]}); err != nil || n != 24 {
		e.t.Fatalf("MarkAllRead(ann, dm, up to the 25th) = %d, %v; want 24", n, err)
	}
	if n := counted.marks.Load(); n != 1 {
		e.t.Errorf("MarkAllRead(ann, dm) of 24 unread made %d Store.Mark calls, want 1", n)
	}
	e.wantCountsFromFeed(ann)
	e.wantThreadsFromFeed(ann)
	e.wantReadAt("24 read by a position", ann, "dm", at, ids[1:25]...)
	e.wantReadAt("read before", ann, "dm", early, ids[0])
	e.wantReadAt("above UpTo", ann, "dm", time.Time{}, ids[25:]...)
	e.wantReadAt("another thread", ann, "other", time.Time{}, other)

	if changed, err := e.ib.MarkRead(e.ctx, ann, ids[5]); err != nil || changed {
		e.t.Errorf("MarkRead of a message the position reads = %v, %v; want false, nil", changed, err)
	}
	e.clock.Advance(time.Second)
	later := e.clock.Now()
	counted.marks.Store(0)
	if n, err := ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"}); err != nil || n != 5 {
		e.t.Fatalf("MarkAllRead(ann, dm) of the rest = %d, %v; want 5", n, err)
	}
	if n := counted.marks.Load(); n != 1 {
		e.t.Errorf("MarkAllRead(ann, dm) moving the position up made %d Store.Mark calls, want 1", n)
	}
	e.wantReadAt("the first move's", ann, "dm", at, ids[1:25]...)
	e.wantReadAt("the second move's", ann, "dm", later, ids[25:]...)
	e.wantCountsFromFeed(ann)

	// Unarchive of a message archived unread below the position: unread.
	e.clock.Advance(time.Second)
	arch := e.publish(inbox.Draft{Title: "dm", Thread: "dm"}, "ann").Message.ID
	if changed, err := e.ib.Archive(e.ctx, ann, arch); err != nil || !changed {
		e.t.Fatalf("Archive = %v, %v", changed, err)
	}
	e.clock.Advance(time.Second)
	if n, err := ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"}); err != nil || n != 0 {
		e.t.Fatalf("MarkAllRead(ann, dm) with one archived = %d, %v; want 0", n, err)
	}
	if changed, err := e.ib.Unarchive(e.ctx, ann, arch); err != nil || !changed {
		e.t.Fatalf("Unarchive of a message archived unread below the position = %v, %v; want true, nil", changed, err)
	}
	e.wantReadAt("unarchived, unread", ann, "dm", time.Time{}, arch)
	e.wantReadAt("the first move's, after an unarchive", ann, "dm", at, ids[1:25]...)
	e.wantReadAt("the second move's, after an unarchive", ann, "dm", later, ids[25:]...)
	e.wantCountsFromFeed(ann)
	e.wantThreadsFromFeed(ann)

	// A message after the mark is unread.
	e.clock.Advance(time.Second)
	next := e.publish(inbox.Draft{Title: "dm", Thread: "dm"}, "ann").Message.ID
	e.wantReadAt("a message after the mark", ann, "dm", time.Time{}, next)
	e.wantCountsFromFeed(ann)
	e.wantThreadsFromFeed(ann)
	e.checkInvariant()
}

// testMarkAllReadByPositionWrittenOut: the stream handler (the store's
// changes handed to an Inbox's HandleChange) sees a read position move,
// makes its EventThreadRead, and writes the position out (each message
// it covers marked read, at its time) and drops it; List, Counts and
// ListThreads show the same before and after.
func testMarkAllReadByPositionWrittenOut(e *env) {
	src, handler, events := e.eventInbox()
	ann := e.user("ann")
	var ids []string
	for range 5 {
		ids = append(ids, e.publish(inbox.Draft{Title: "dm", Thread: "dm"}, "ann").Message.ID)
		e.clock.Advance(time.Second)
	}
	if _, err := src.DeliverEvents(e.ctx, handler); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	events.take()
	at := e.clock.Now()
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"}); err != nil || n != 5 {
		e.t.Fatalf("MarkAllRead(ann, dm) = %d, %v; want 5", n, err)
	}
	e.wantReadAt("by a position", ann, "dm", at, ids...)
	e.clock.Advance(time.Minute)
	if _, err := src.DeliverEvents(e.ctx, handler); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	var moved int
	for _, ev := range events.take() {
		if ev.Kind == inbox.EventThreadRead {
			moved++
			if ev.Partition != e.part("ann") || ev.Thread != "dm" || ev.ReadUpTo <= ids[4] {
				e.t.Errorf("EventThreadRead = %+v, want ann's partition, thread dm, up to above %s", ev, ids[4])
			}
		}
	}
	if moved != 1 {
		e.t.Errorf("MarkAllRead(ann, dm) made %d EventThreadRead, want 1", moved)
	}
	e.wantReadAt("written out", ann, "dm", at, ids...)
	for _, c := range e.stats(e.part("ann"), e.clock.Now()).Counters {
		if c.Covered {
			e.t.Errorf("after the stream handler wrote the position out, covered counter %s stands: %+v", c.SK(), c)
		}
	}
	e.wantCountsFromFeed(ann)
	e.wantThreadsFromFeed(ann)
	e.checkInvariant()
}

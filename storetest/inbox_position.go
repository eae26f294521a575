package storetest

import (
	"context"
	"slices"
	"sync"
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
		{"PositionExpiredCovered", testPositionExpiredCovered},
		{"PositionScenario", testPositionScenario},
		{"PositionReadByAnotherProgram", testPositionReadByAnotherProgram},
		{"PositionUnreadListCost", testPositionUnreadListCost},
		{"PositionStandsPastItsSteps", testPositionStandsPastItsSteps},
		{"PositionUnsupported", testPositionUnsupported},
		{"PositionOverAnotherProgramsRead", testPositionOverAnotherProgramsRead},
		{"PositionAged", testPositionAged},
		{"PositionArchiveRace", testPositionArchiveRace},
		{"PositionMarkReadRace", testPositionMarkReadRace},
		{"GroupPositionEvents", testGroupPositionEvents},
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
	e.needPositions()
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

	// Unarchive of a message archived unread above the position: unread.
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
// it covers marked read, at its time) and keeps it, done
// (driver.Position.Done); List, Counts and ListThreads show the same
// before and after.
func testMarkAllReadByPositionWrittenOut(e *env) {
	e.needPositions()
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
	e.deliverWrittenOut(src, handler)
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
	e.wantWrittenOut("after the stream handler wrote the position out")
	e.wantCountsFromFeed(ann)
	e.wantThreadsFromFeed(ann)
	e.checkInvariant()
}

// testPositionExpiredCovered: a read position that covers a message that
// expired, its removal not yet accounted (the stream lags); meanwhile an
// unarchive of a message archived unread below it, and a late copy below
// it (a publisher's clock behind), are written read at the position's
// time, as everything below a chat's read position reads.
func testPositionExpiredCovered(e *env) {
	e.needPositions()
	h := e.needHarness()
	ann := e.user("ann")
	start := e.clock.Now()
	short := e.publish(inbox.Draft{Title: "soon gone", Thread: "dm", TTL: time.Minute}, "ann").Message.ID
	e.clock.Advance(time.Second)
	arch := e.publish(inbox.Draft{Title: "archived", Thread: "dm"}, "ann").Message.ID
	if changed, err := e.ib.Archive(e.ctx, ann, arch); err != nil || !changed {
		e.t.Fatalf("Archive = %v, %v", changed, err)
	}
	e.clock.Advance(time.Second)
	kept := e.publish(inbox.Draft{Title: "kept", Thread: "dm"}, "ann").Message.ID
	e.clock.Advance(time.Second)
	at := e.clock.Now()
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"}); err != nil || n != 2 {
		e.t.Fatalf("MarkAllRead(ann, dm) = %d, %v; want 2", n, err)
	}
	e.clock.Advance(2 * time.Minute) // short expires
	if _, err := e.ib.Counts(e.ctx, ann); err != nil {
		e.t.Fatal(err)
	}
	if h.Pending() == 0 {
		e.t.Skip("the store accounts removals at once: no covered message waits for its removal")
	}
	_ = short
	if changed, err := e.ib.Unarchive(e.ctx, ann, arch); err != nil || !changed {
		e.t.Errorf("Unarchive below a position covering an expired message = %v, %v; want true, nil", changed, err)
	}
	// A publisher whose clock is behind: its copy lies below the position.
	behind := inbox.New(e.store, inbox.WithClock(func() time.Time { return start.Add(500 * time.Millisecond) }))
	res, err := behind.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Title: "late", Thread: "dm"})
	if err != nil || len(res.Delivered) != 1 {
		e.t.Errorf("Publish of a copy below a position covering an expired message = %+v, %v; want delivered", res, err)
	} else {
		e.active(res.Message, "", e.part("ann"))
		e.wantReadAt("a late copy", ann, "dm", at, res.Message.ID)
	}
	e.wantReadAt("unarchived", ann, "dm", at, arch)
	_ = kept
	e.wantCountsFromFeed(ann)
	e.wantThreadsFromFeed(ann)
	e.checkInvariant()
	e.deliver(h)
	e.wantCountsFromFeed(ann)
	e.checkInvariant()
}

// testPositionScenario: a read position through the writes around it,
// with Counts, ListThreads and the counters checked against List after
// each: MarkSeen (the covered Above reset), a mute and an unmute of the
// thread, a second move, an archive and a delete of covered messages, a
// recount, a position of another thread, and the stream handler's write
// out.
func testPositionScenario(e *env) {
	e.needPositions()
	ann := e.user("ann")
	check := func(what string) {
		e.t.Helper()
		e.wantCountsFromFeed(ann)
		e.checkInvariant()
		if e.t.Failed() {
			e.t.Fatalf("after %s", what)
		}
	}
	dm := e.chatOf(6, 2)
	e.publish(inbox.Draft{Title: "t2", Thread: "t2"}, "ann")
	e.publish(inbox.Draft{Title: "plain"}, "ann")
	e.clock.Advance(time.Second)
	check("publishes")
	if _, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm", UpTo: dm[3]}); err != nil {
		e.t.Fatal(err)
	}
	check("MarkAllRead up to the 4th")
	e.markSeen(ann)
	e.clock.Advance(time.Second)
	check("MarkSeen")
	for range 2 {
		dm = append(dm, e.publish(inbox.Draft{Title: "dm", Thread: "dm", Category: "billing"}, "ann").Message.ID)
		e.clock.Advance(time.Second)
	}
	check("more publishes")
	if _, err := e.ib.SetPreferences(e.ctx, ann, inbox.Preferences{MutedThreads: []string{"dm"}}); err != nil {
		e.t.Fatal(err)
	}
	check("mute")
	if _, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm", UpTo: dm[6]}); err != nil {
		e.t.Fatal(err)
	}
	check("MarkAllRead of the muted thread")
	e.markSeen(ann)
	e.clock.Advance(time.Second)
	check("MarkSeen of the muted thread")
	if _, err := e.ib.SetPreferences(e.ctx, ann, inbox.Preferences{}); err != nil {
		e.t.Fatal(err)
	}
	check("unmute")
	if _, err := e.ib.Archive(e.ctx, ann, dm[1]); err != nil {
		e.t.Fatal(err)
	}
	check("archive of a covered one")
	if _, err := e.ib.Delete(e.ctx, ann, dm[2]); err != nil {
		e.t.Fatal(err)
	}
	check("delete of a covered one")
	if _, err := e.ib.Unarchive(e.ctx, ann, dm[1]); err != nil {
		e.t.Fatal(err)
	}
	check("unarchive of a read one")
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Fatal(err)
	}
	check("recount")
	if _, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "t2"}); err != nil {
		e.t.Fatal(err)
	}
	check("MarkAllRead of another thread")
	if _, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"}); err != nil {
		e.t.Fatal(err)
	}
	check("MarkAllRead of the rest")
	if src, ok := e.store.(EventSource); ok {
		e.deliverWrittenOut(src, e.ib)
		check("the stream handler")
		e.wantWrittenOut("after the stream handler")
	}
}

// wantWrittenOut checks that every read position of ann's is done (its
// messages marked read, driver.Position.Done) and that her covered
// counters count nothing.
func (e *env) wantWrittenOut(what string) {
	e.t.Helper()
	for _, c := range e.stats(e.part("ann"), e.clock.Now()).Counters {
		switch {
		case !c.Covered:
		case !c.Tallies().IsZero():
			e.t.Errorf("%s, covered counter %s counts %+v", what, c.SK(), c.Tallies())
		case c.Category == "" && c.Position.Done.IsZero():
			e.t.Errorf("%s, the position of thread %s is not done: %+v", what, c.Thread, c.Position)
		}
	}
}

// recordCounter counts the records Query calls return. It is safe for
// concurrent use (the Inbox queries partitions in parallel).
type recordCounter struct {
	driver.Store
	mu               sync.Mutex
	records, queries int
}

// Query counts q and the records it returns.
func (s *recordCounter) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	res, err := s.Store.Query(ctx, q)
	s.mu.Lock()
	s.queries++
	s.records += len(res.Records)
	s.mu.Unlock()
	return res, err
}

// testPositionUnreadListCost: what the unread-only feed reads while a
// position stands over many messages, and once the stream handler has
// written it out. While it stands, the covered messages are still in the
// unread index (they read as read): the feed passes them, as MarkAllRead's
// doc says, for the stream's lag. Written out, they leave the index, and
// the feed reads about what it shows.
func testPositionUnreadListCost(e *env) {
	e.needPositions()
	src, handler, _ := e.eventInbox()
	ann := e.user("ann")
	for range 100 {
		e.publish(inbox.Draft{Title: "dm", Thread: "dm"}, "ann")
	}
	e.clock.Advance(time.Second)
	e.publish(inbox.Draft{Title: "unread"}, "ann")
	e.clock.Advance(time.Second)
	if _, err := src.DeliverEvents(e.ctx, handler); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	if _, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"}); err != nil {
		e.t.Fatal(err)
	}
	feed := func() (shown, records int) {
		rc := &recordCounter{Store: e.store}
		ib := inbox.New(rc, inbox.WithClock(e.clock.Now))
		o := inbox.ListOptions{UnreadOnly: true, Limit: 10}
		for {
			p, err := ib.List(e.ctx, ann, o)
			if err != nil {
				e.t.Fatal(err)
			}
			shown += len(p.Messages)
			if o.Cursor = p.Cursor; o.Cursor == "" {
				return shown, rc.records
			}
		}
	}
	shown, records := feed()
	e.t.Logf("unread-only feed while the position stands: %d shown, %d records read", shown, records)
	if shown != 1 || records < 100 {
		e.t.Errorf("while the position stands, the unread-only feed showed %d and read %d records; want 1 shown, the 100 covered passed (else this test and MarkAllRead's doc are out of date)", shown, records)
	}
	e.clock.Advance(time.Second)
	e.deliverWrittenOut(src, handler)
	if shown, records = feed(); shown != 1 || records > 4 {
		e.t.Errorf("once the position is written out, the unread-only feed showed %d and read %d records; want 1 shown, at most 4 read", shown, records)
	}
}

// testPositionReadByAnotherProgram: another program marks read, as the
// seeds do, a message ann's read position covers; once the stream
// handler has seen the change, Counts, ListThreads and the counters equal
// List, and again once the stream handler writes the position out.
func testPositionReadByAnotherProgram(e *env) {
	e.needPositions()
	e.foreignWriter()
	ann := e.user("ann")
	annP := e.part("ann")
	var ms []driver.Message
	for range 3 {
		ms = append(ms, e.publish(inbox.Draft{Title: "dm", Thread: "dm", Category: "billing"}, "ann").Message)
		e.clock.Advance(time.Second)
	}
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"}); err != nil || n != 3 {
		e.t.Fatalf("MarkAllRead(ann, dm) = %d, %v; want 3", n, err)
	}
	e.clock.Advance(time.Second)
	c := e.readForeign(annP, ms[1])
	// Until the stream handler sees the change, Counts count the message
	// read twice: in the seeds' read +1 and in the covered counters,
	// which that program does not know of (docs/consistency.md).
	if got, err := e.ib.Counts(e.ctx, ann); err != nil || got.Total != 3 || got.Read != 4 || got.Unread != 0 {
		e.t.Errorf("Counts before the stream handler = %+v, %v; want Total 3, Read 4, Unread 0 (the documented window; if this changed, update docs/consistency.md)", got.Tally, err)
	}
	if err := e.ib.HandleChange(e.ctx, c); err != nil {
		e.t.Fatalf("HandleChange: %v", err)
	}
	e.wantCountsFromFeed(ann)
	e.checkInvariant()
}

// testPositionStandsPastItsSteps: a read position that cannot be written
// out yet (it covers a message deleted behind the library's back, whose
// removal the stream has not delivered) does not stop MarkAllRead of its
// thread past MaxPositionSteps moves, nor of a thread past the most
// positions a user holds: the messages are marked, one by one if need be.
func testPositionStandsPastItsSteps(e *env) {
	e.needPositions()
	h := e.needHarness()
	ann := e.user("ann")
	gone := e.publish(inbox.Draft{Title: "deleted behind the back", Thread: "dm"}, "ann").Message.ID
	e.clock.Advance(time.Second)
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"}); err != nil || n != 1 {
		e.t.Fatalf("MarkAllRead(ann, dm) = %d, %v; want 1", n, err)
	}
	if _, err := h.Delete(e.ctx, driver.Key{Partition: e.part("ann"), ID: gone}); err != nil {
		e.t.Fatal(err)
	}
	if h.Pending() == 0 {
		e.t.Skip("the store accounts removals at once")
	}
	for i := range driver.MaxPositionSteps + 1 {
		e.clock.Advance(time.Second)
		e.publish(inbox.Draft{Title: "dm", Thread: "dm"}, "ann")
		e.clock.Advance(time.Second)
		if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"}); err != nil || n != 1 {
			e.t.Errorf("MarkAllRead(ann, dm), move %d = %d, %v; want 1", i+2, n, err)
		}
	}
	e.deliver(h)
	e.wantCountsFromFeed(ann)
	e.checkInvariant()
}

// noPositions is a Store that keeps no read positions: it refuses a
// cover mark with ErrUnsupported, as a Store that keeps none does.
type noPositions struct{ driver.Store }

func (s noPositions) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	for _, mk := range marks {
		if mk.Cover != nil {
			return driver.ErrUnsupported
		}
	}
	return s.Store.Mark(ctx, marks, deltas)
}

// testPositionUnsupported: over a Store that keeps no read positions,
// MarkAllRead of a chat marks its messages one by one.
func testPositionUnsupported(e *env) {
	ann := e.user("ann")
	var ids []string
	for range 5 {
		ids = append(ids, e.publish(inbox.Draft{Title: "dm", Thread: "dm"}, "ann").Message.ID)
		e.clock.Advance(time.Second)
	}
	at := e.clock.Now()
	ib := inbox.New(noPositions{e.store}, inbox.WithClock(e.clock.Now))
	if n, err := ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"}); err != nil || n != 5 {
		e.t.Fatalf("MarkAllRead(ann, dm) over a Store without positions = %d, %v; want 5, nil", n, err)
	}
	e.wantReadAt("marked one by one", ann, "dm", at, ids...)
	for _, c := range e.stats(e.part("ann"), e.clock.Now()).Counters {
		if c.Covered {
			e.t.Errorf("covered counter %s written over a Store without positions", c.SK())
		}
	}
	e.wantCountsFromFeed(ann)
	e.checkInvariant()
}

// testPositionOverAnotherProgramsRead: another program marks read, as the
// seeds do, a message of ann's chat; before the stream handler sees that
// change, ann marks the chat read (a read position over it). Once the
// stream handler sees the change, Counts, ListThreads and the covered
// counters equal List: the position did not count that message, and the
// handler's write does not take it out of what it counts.
func testPositionOverAnotherProgramsRead(e *env) {
	e.foreignWriter()
	e.needPositions()
	ann := e.user("ann")
	annP := e.part("ann")
	var ms []driver.Message
	for range 3 {
		ms = append(ms, e.publish(inbox.Draft{Title: "dm", Thread: "dm"}, "ann").Message)
		e.clock.Advance(time.Second)
	}
	c := e.readForeign(annP, ms[0])
	e.clock.Advance(time.Second)
	if _, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"}); err != nil {
		e.t.Fatalf("MarkAllRead(ann, dm): %v", err)
	}
	if err := e.ib.HandleChange(e.ctx, c); err != nil {
		e.t.Fatalf("HandleChange: %v", err)
	}
	e.wantCountsFromFeed(ann)
	e.checkInvariant()
}

// testPositionAged: a read position the stream handler wrote out stays,
// done (driver.Position.Done); past the most positions a user holds, or
// past MaxPositionSteps moves of one, MarkAllRead marks one by one (the
// one in the way written out first) until a done position is 15 minutes
// old: then the thread's own starts anew, and each call drops the oldest
// such of another thread. Counts equal List throughout, and what a
// position read stays read.
func testPositionAged(e *env) {
	e.needPositions()
	src, handler, _ := e.eventInbox()
	ann := e.user("ann")
	positions := func() map[string]driver.Position {
		return driver.Positions(e.stats(e.part("ann"), e.clock.Now()).Counters)
	}
	mark := func(thread string, want int) {
		e.t.Helper()
		if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: thread}); err != nil || n != want {
			e.t.Fatalf("MarkAllRead(ann, %s) = %d, %v; want %d", thread, n, err, want)
		}
		e.wantCountsFromFeed(ann)
	}
	byThread := map[string][]string{}
	say := func(thread string) {
		byThread[thread] = append(byThread[thread], e.publish(inbox.Draft{Title: "dm", Thread: thread}, "ann").Message.ID)
		e.clock.Advance(time.Second)
	}
	threads := []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"}
	for _, t := range threads {
		say(t)
		say(t)
	}
	readAt := map[string]time.Time{}
	for _, t := range threads[:8] {
		readAt[t] = e.clock.Now()
		mark(t, 2)
		e.clock.Advance(time.Second)
	}
	if got := positions(); len(got) != 8 {
		e.t.Fatalf("%d positions after 8 chats read, want 8", len(got))
	}
	// A ninth: none done, so marked one by one, the oldest written out.
	mark("t8", 2)
	if got := positions(); len(got) != 8 || got["t0"].Done.IsZero() || !got["t1"].Done.IsZero() {
		e.t.Errorf("positions after a ninth chat read: %+v; want the 8, t0's done", got)
	}
	e.deliverWrittenOut(src, handler)
	for t, pos := range positions() {
		if pos.Done.IsZero() {
			e.t.Errorf("position of %s not done after the stream handler: %+v", t, pos)
		}
	}
	e.wantWrittenOut("written out")
	// Not yet aged: still one by one.
	say("t9")
	mark("t9", 1)
	if _, ok := positions()["t9"]; ok {
		e.t.Errorf("a position of t9 while none is aged")
	}
	e.clock.Advance(16 * time.Minute)
	say("t9")
	mark("t9", 1)
	got := positions()
	if _, ok := got["t9"]; !ok || len(got) != 8 {
		e.t.Errorf("positions once aged: %+v; want t9's among 8", got)
	}
	if _, ok := got["t0"]; ok {
		e.t.Errorf("t0's position, the oldest done, stands: %+v", got)
	}
	for _, t := range threads[:8] {
		e.wantReadAt("read by its position, then written out", ann, t, readAt[t], byThread[t]...)
	}
	// Past MaxPositionSteps moves of t9's: written out, one by one, until
	// aged; then it starts anew.
	for range driver.MaxPositionSteps - 1 {
		say("t9")
		mark("t9", 1)
	}
	if steps, _ := positions()["t9"].Steps(); len(steps) != driver.MaxPositionSteps {
		e.t.Fatalf("t9's position has %d steps, want %d", len(steps), driver.MaxPositionSteps)
	}
	say("t9")
	mark("t9", 1)
	if pos := positions()["t9"]; pos.Done.IsZero() {
		e.t.Errorf("t9's position past its steps is not written out: %+v", pos)
	}
	e.clock.Advance(16 * time.Minute)
	say("t9")
	at := e.clock.Now()
	mark("t9", 1)
	got = positions()
	if pos := got["t9"]; pos.Earlier != "" || !pos.At.Equal(at) || !pos.Done.IsZero() {
		e.t.Errorf("t9's position once aged = %+v; want one step at %v", pos, at)
	}
	// Each of the five calls that went on past the first check of aged
	// positions (t9's new position, its three moves, its start anew)
	// dropped the oldest aged one of another chat: t0 to t4.
	var left []string
	for t := range got {
		left = append(left, t)
	}
	slices.Sort(left)
	if want := []string{"t5", "t6", "t7", "t9"}; !slices.Equal(left, want) {
		e.t.Errorf("positions left: %v, want %v (one aged dropped a call, the oldest first)", left, want)
	}
	e.wantThreadsFromFeed(ann)
	e.checkInvariant()
}

// deliverWrittenOut hands the store's changes to handler until every read
// position of ann's is done (the stream handler wrote it out), for up to
// 5 s: a stream that lags (DynamoDB Local's, on a loaded machine) may
// hold the last moves back a while. The caller checks what it wants.
func (e *env) deliverWrittenOut(src EventSource, handler *inbox.Inbox) {
	e.t.Helper()
	for i := 0; ; i++ {
		if _, err := src.DeliverEvents(e.ctx, handler); err != nil {
			e.t.Fatalf("DeliverEvents: %v", err)
		}
		done := true
		for _, pos := range driver.Positions(e.stats(e.part("ann"), e.clock.Now()).Counters) {
			done = done && !pos.Done.IsZero()
		}
		if done || i == 50 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// chatOf publishes n messages of thread "dm" to ann, each every-th of
// them (the first among them) of category billing, the others of none,
// moving the clock a second on after each, and returns their IDs.
func (e *env) chatOf(n, every int) []string {
	var ids []string
	for i := range n {
		cat := ""
		if i%every == 0 {
			cat = "billing"
		}
		ids = append(ids, e.publish(inbox.Draft{Title: "dm", Thread: "dm", Category: cat}, "ann").Message.ID)
		e.clock.Advance(time.Second)
	}
	return ids
}

// testPositionArchiveRace: an Archive (and an ArchiveAll) reads a chat's
// message unread, then MarkAllRead of the chat moves the read position
// over it (counting it among those it marks read), then the archive's
// write lands. A position and per-message marks combine as if the
// position's read had been written on each message it covers when it
// moved, and an archive of a covered message writes its read: the Store
// refuses the archive's mark that would drop that read
// (driver.Mark.UnreadOverCover), and the message ends archived and read
// at the position's time, in Counts as in List.
func testPositionArchiveRace(e *env) {
	src, handler, race, ib := e.positionRace()
	ann := e.user("ann")
	archived := map[string]time.Time{} // read at
	for _, call := range []string{"Archive", "ArchiveAll"} {
		thread := "chat-" + call
		ids := e.chatToAnn(thread, 3)
		at := e.clock.Now()
		race.race(func([]driver.Mark) {
			if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: thread}); err != nil || n != 3 {
				e.t.Errorf("%s: MarkAllRead between the archive's read and its write = %d, %v; want 3", call, n, err)
			}
		})
		if call == "Archive" {
			if ok, err := ib.Archive(e.ctx, ann, ids[0]); err != nil || !ok {
				e.t.Fatalf("Archive = %v, %v; want true", ok, err)
			}
		} else if n, err := ib.ArchiveAll(e.ctx, ann, inbox.ListOptions{Thread: thread, UpTo: ids[0]}); err != nil || n != 1 {
			e.t.Fatalf("ArchiveAll = %d, %v; want 1", n, err)
		}
		if left := race.pending(); left != 0 {
			e.t.Fatalf("%s: the racing MarkAllRead did not run", call)
		}
		m, err := e.ib.Get(e.ctx, ann, ids[0])
		if err != nil {
			e.t.Fatal(err)
		}
		if !m.IsArchived() || !m.ReadAt.Equal(at) {
			e.t.Errorf("%s racing MarkAllRead: archived %v, read at %v; want archived, read at the position's time %v", call, m.IsArchived(), m.ReadAt, at)
		}
		archived[ids[0]] = at
		e.wantCountsFromFeed(ann)
		e.wantThreadsFromFeed(ann)
	}
	// The stream handler's write-out keeps them so.
	e.deliverWrittenOut(src, handler)
	for id, at := range archived {
		if m, err := e.ib.Get(e.ctx, ann, id); err != nil || !m.IsArchived() || !m.ReadAt.Equal(at) {
			e.t.Errorf("%s after the write-out: archived %v, read at %v, %v; want archived, read at %v", id, m.IsArchived(), m.ReadAt, err, at)
		}
	}
	e.wantCountsFromFeed(ann)
}

// testPositionMarkReadRace: a MarkRead (and a MarkAllRead of the whole
// feed) reads a chat's message unread, then MarkAllRead of the chat moves
// the read position over it (counting it among those it marks read), then
// the read's write lands. Exactly one of the two calls reports the
// message: the position, whose write came first and read it from then
// on. The Store refuses the late mark, made by a writer that read the
// message uncovered (driver.Mark.Uncovered), and the call, reading again,
// finds it read, as MarkRead of a covered message does: it reports
// nothing and writes nothing, and the message reads as read at the
// position's time, in Counts as in List, before and after the stream
// handler's write-out.
func testPositionMarkReadRace(e *env) {
	src, handler, race, ib := e.positionRace()
	ann := e.user("ann")
	read := map[string]time.Time{} // read at
	for _, call := range []string{"MarkRead", "MarkAllRead"} {
		thread := "chat-" + call
		ids := e.chatToAnn(thread, 3)
		var at time.Time
		race.race(func([]driver.Mark) {
			// A second later than the read's own time, which it wrote
			// before it read the message.
			e.clock.Advance(time.Second)
			at = e.clock.Now()
			if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: thread}); err != nil || n != 3 {
				e.t.Errorf("%s: MarkAllRead of the chat between the read's read and its write = %d, %v; want 3", call, n, err)
			}
		})
		if call == "MarkRead" {
			if ok, err := ib.MarkRead(e.ctx, ann, ids[0]); err != nil || ok {
				e.t.Errorf("MarkRead racing MarkAllRead of its chat = %v, %v; want false (the position read it first), nil", ok, err)
			}
		} else if n, err := ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{UpTo: ids[0]}); err != nil || n != 0 {
			e.t.Errorf("MarkAllRead of the feed racing MarkAllRead of the chat = %d, %v; want 0 (the position read it first)", n, err)
		}
		if left := race.pending(); left != 0 {
			e.t.Fatalf("%s: the racing MarkAllRead did not run", call)
		}
		m, err := e.ib.Get(e.ctx, ann, ids[0])
		if err != nil {
			e.t.Fatal(err)
		}
		if !m.ReadAt.Equal(at) {
			e.t.Errorf("%s racing MarkAllRead: read at %v; want the position's time %v", call, m.ReadAt, at)
		}
		read[ids[0]] = at
		e.wantCountsFromFeed(ann)
		e.wantThreadsFromFeed(ann)
	}
	// The stream handler's write-out keeps them so.
	e.deliverWrittenOut(src, handler)
	for id, at := range read {
		if m, err := e.ib.Get(e.ctx, ann, id); err != nil || !m.ReadAt.Equal(at) {
			e.t.Errorf("%s after the write-out: read at %v, %v; want read at %v", id, m.ReadAt, err, at)
		}
	}
	e.wantCountsFromFeed(ann)
}

// chatToAnn publishes n direct messages of thread to ann, a second apart,
// and returns their IDs.
func (e *env) chatToAnn(thread string, n int) []string {
	e.t.Helper()
	var ids []string
	for range n {
		ids = append(ids, e.publish(inbox.Draft{Title: "dm", Thread: thread}, "ann").Message.ID)
		e.clock.Advance(time.Second)
	}
	return ids
}

// positionRace returns what a test of a write racing a read position's
// move needs: e's event source and an Inbox its events reach, and an
// Inbox over e's Store whose marks race holds.
func (e *env) positionRace() (EventSource, *inbox.Inbox, *markRace, *inbox.Inbox) {
	e.needPositions()
	src, handler, _ := e.eventInbox()
	race := &markRace{Store: e.store}
	return src, handler, race, inbox.New(race, inbox.WithClock(e.clock.Now))
}

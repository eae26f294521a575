package storetest

import (
	"slices"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// viewTests are the Inbox subtests of what each read costs and which view
// of the shared partitions it reads, process by process.
func viewTests() []suiteTest {
	return []suiteTest{
		{"ListCatchesUpWithCounts", testListCatchesUpWithCounts},
		{"ScheduledAheadOutOfTheWay", testScheduledAheadOutOfTheWay},
		{"ThreadsPagedAcrossProcesses", testThreadsPagedAcrossProcesses},
	}
}

// testListCatchesUpWithCounts: process A serves the public partition from
// a snapshot; process B broadcasts, and ann marks the broadcast read
// through B. A's List, made before A's Counts with nothing written
// between, shows what that Counts counts: ann's receipt names a broadcast
// A's snapshot lacks, and List reads the partition again, as Counts does.
func testListCatchesUpWithCounts(e *env) {
	ann := e.user("ann")
	a := inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(time.Hour))
	b := inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(time.Hour))
	e.broadcast(inbox.Draft{Title: "first"})
	if p, err := a.List(e.ctx, ann, inbox.ListOptions{}); err != nil || len(p.Messages) != 1 {
		e.t.Fatalf("A's List: %d messages, %v; want the first broadcast", len(p.Messages), err)
	}
	e.clock.Advance(time.Second) // within the snapshot's freshness
	m, err := b.Broadcast(e.ctx, e.scope, inbox.Draft{Title: "second"})
	if err != nil {
		e.t.Fatalf("B's Broadcast: %v", err)
	}
	e.active(m, driver.PublicGroup)
	if ok, err := b.MarkRead(e.ctx, ann, m.ID); err != nil || !ok {
		e.t.Fatalf("B's MarkRead: %v, %v", ok, err)
	}
	for _, o := range []inbox.ListOptions{{}, {Archived: true}, {Snoozed: true}} {
		page, err := a.List(e.ctx, ann, o)
		if err != nil {
			e.t.Fatalf("A's List(%+v): %v", o, err)
		}
		if o == (inbox.ListOptions{}) && (len(page.Messages) != 2 || page.Messages[0].ID != m.ID || !page.Messages[0].IsRead()) {
			e.t.Errorf("A's List after B's broadcast and ann's read of it through B: %d messages (%+v); want both, the newest read, as A's Counts counts them", len(page.Messages), page.Messages)
		}
	}
	c, err := a.Counts(e.ctx, ann)
	if err != nil || c.Total != 2 || c.Read != 1 {
		e.t.Errorf("A's Counts: %+v, %v; want 2, 1 read", c.Tally, err)
	}
}

// testScheduledAheadOutOfTheWay: with many messages scheduled ahead (ann's
// copies and broadcasts), ann's first page is full, at once, and Counts
// counts what it shows; when they come due they show, newest first.
func testScheduledAheadOutOfTheWay(e *env) {
	ann := e.user("ann")
	now := e.clock.Now()
	var shown []string
	for range 3 {
		res := e.publish(inbox.Draft{Title: "now"}, "ann")
		shown = append(shown, res.Message.ID)
		e.clock.Advance(time.Second)
	}
	for i := range 30 {
		at := now.Add(time.Duration(i+1) * time.Hour)
		e.publish(inbox.Draft{Title: "later", DeliverAt: at}, "ann")
		if _, err := e.ib.Broadcast(e.ctx, e.scope, inbox.Draft{Title: "later", DeliverAt: at}); err != nil {
			e.t.Fatalf("Broadcast: %v", err)
		}
	}
	for _, ib := range []*inbox.Inbox{e.ib, inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(time.Hour))} {
		page, err := ib.List(e.ctx, ann, inbox.ListOptions{Limit: 3})
		if err != nil || len(page.Messages) != 3 || page.Messages[0].ID != shown[2] {
			e.t.Errorf("ann's first page of 3 under 60 messages scheduled ahead: %d messages, %v; want the 3 delivered", len(page.Messages), err)
		}
	}
	if c := e.counts(ann); c.Total != 3 || c.Unseen != 3 {
		e.t.Errorf("Counts under the messages scheduled ahead: %+v, unseen %d; want 3 and 3", c.Tally, c.Unseen)
	}
	e.clock.Advance(90 * time.Minute) // the first copy and broadcast come due
	if page, err := e.ib.List(e.ctx, ann, inbox.ListOptions{Limit: 3}); err != nil || len(page.Messages) != 3 || page.Messages[2].ID != shown[2] {
		e.t.Errorf("ann's first page once two came due: %+v, %v; want them above the 3", page.Messages, err)
	}
	e.wantCountsFromFeed(ann)
}

// testThreadsPagedAcrossProcesses: ann pages her chats one a page, the
// first page served by process B, the next ones by process A (behind a
// load balancer). A's snapshot of the group's partition is older than
// B's: the group chat moved to the top since, through B. Paging never
// repeats a chat, nor skips one: B's first page has the group chat, A's
// next pages the two others, although A's own view still has the group
// chat between them.
func testThreadsPagedAcrossProcesses(e *env) {
	ann := e.member("ann", "eu")
	dm := func(thread string) {
		res := e.publish(inbox.Draft{Title: "hi", Thread: thread}, "ann")
		e.active(res.Message, "", e.part("ann"))
		e.clock.Advance(time.Second)
	}
	dm("d1")
	e.active(e.broadcastTo("eu", inbox.Draft{Title: "hello all", Thread: "g"}), "eu")
	e.clock.Advance(time.Second)
	dm("d2")
	a := inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(time.Hour))
	b := inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(time.Hour))
	if got := threadNames(listThreads(e.t, e.ctx, a, ann, 0)); !slices.Equal(got, []string{"d2", "g", "d1"}) {
		e.t.Fatalf("A's chats: %v, want d2, g, d1", got)
	}
	m, err := b.BroadcastGroup(e.ctx, e.scope, "eu", inbox.Draft{Title: "again", Thread: "g"})
	if err != nil {
		e.t.Fatalf("B's BroadcastGroup: %v", err)
	}
	e.active(m, "eu")
	var got []string
	o := inbox.ThreadOptions{Limit: 1}
	for page := 0; page < 10; page++ {
		ib := a
		if page == 0 {
			ib = b
		}
		p, err := ib.ListThreads(e.ctx, ann, o)
		if err != nil {
			e.t.Fatalf("ListThreads page %d: %v", page+1, err)
		}
		got = append(got, threadNames(p.Threads)...)
		if p.Cursor == "" {
			break
		}
		o.Cursor = p.Cursor
	}
	if !slices.Equal(got, []string{"g", "d2", "d1"}) {
		e.t.Errorf("ann's chats, the first page through B, the next through A: %v; want g, d2, d1, each once", got)
	}
}

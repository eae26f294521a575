package inbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// TestGroupPosition: MarkAllRead of a group chat writes one read position,
// whatever the number of its unread messages: her counts, the chat's
// counts and List agree that they are read, a later message is unread,
// an archive of a covered message keeps its read, and a covered message
// that expires leaves the counts exact.
func TestGroupPosition(t *testing.T) {
	ctx := context.Background()
	clock, mem, ib := groupChatStore(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	ann := scope.User("ann").InGroups("team")
	send := func(ttl time.Duration) string {
		t.Helper()
		res, err := ib.BroadcastGroup(ctx, scope, "team", inbox.Draft{Sender: "bob", Thread: "team", Title: "hi", TTL: ttl, Category: "chat"})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		return res.ID
	}
	short := send(time.Hour)
	var ids []string
	for range 5 {
		ids = append(ids, send(0))
	}
	if c := countsAgree(t, ib, ann, "before"); c.Unread != 6 {
		t.Fatalf("Counts before = %+v, want 6 unread", c.Tally)
	}
	n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "team"})
	if err != nil || n != 6 {
		t.Fatalf("MarkAllRead of the group chat = %d, %v; want 6", n, err)
	}
	if c := countsAgree(t, ib, ann, "after MarkAllRead"); c.Unread != 0 || c.Read != 6 {
		t.Errorf("Counts after MarkAllRead = %+v, want 6 read", c.Tally)
	}
	st, err := mem.Stats(ctx, driver.StatsQuery{Partition: ann.Partition(), Keys: []driver.Counter{{}, {Group: "team"}}})
	if err != nil {
		t.Fatal(err)
	}
	if ps := driver.GroupPositions(st.Counters); len(ps) != 1 {
		t.Errorf("her group positions = %v, want one", ps)
	}
	threads, err := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
	if err != nil || len(threads.Threads) != 1 || threads.Threads[0].Unread != 0 || threads.Threads[0].Read != 6 {
		t.Errorf("ListThreads after MarkAllRead = %+v, %v; want the chat read", threads, err)
	}
	later := send(0)
	if c := countsAgree(t, ib, ann, "a later message"); c.Unread != 1 {
		t.Errorf("Counts after a later message = %+v, want 1 unread", c.Tally)
	}
	if ok, err := ib.Archive(ctx, ann, ids[1]); err != nil || !ok {
		t.Fatalf("Archive of a covered message = %v, %v", ok, err)
	}
	m, err := ib.Get(ctx, ann, ids[1])
	if err != nil || m.ReadAt.IsZero() || m.ArchivedAt.IsZero() {
		t.Errorf("a covered message archived = %+v, %v; want archived read", m, err)
	}
	countsAgree(t, ib, ann, "a covered message archived")
	if ok, err := ib.MarkRead(ctx, ann, ids[2]); err != nil || ok {
		t.Errorf("MarkRead of a covered message = %v, %v; want false: read already", ok, err)
	}
	clock.Advance(2 * time.Hour) // short expires
	mem.Sweep()
	if c := countsAgree(t, ib, ann, "a covered message expired"); c.Unread != 1 || c.Read != 4 || c.Archived != 1 {
		t.Errorf("Counts after a covered message expired = %+v, want 1 unread, 4 read, 1 archived (%s gone)", c.Tally, short)
	}
	if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "team"}); err != nil || n != 1 {
		t.Errorf("MarkAllRead again = %d, %v; want 1 (%s)", n, err, later)
	}
	if c := countsAgree(t, ib, ann, "read again"); c.Unread != 0 {
		t.Errorf("Counts after the second MarkAllRead = %+v, want none unread", c.Tally)
	}
}

// TestGroupPositionHourEdge: a read position whose bound lies in the first
// second of an hour counts the thread's messages of the hour before from
// that hour's bucket: Counts, ListThreads and a later MarkAllRead read
// them, rather than fail with ErrConflict.
func TestGroupPositionHourEdge(t *testing.T) {
	ctx := context.Background()
	clock, _, ib := groupChatStore(time.Date(2030, 1, 1, 0, 59, 58, 0, time.UTC))
	ann := scope.User("ann").InGroups("team")
	for range 3 { // 00:59:58, 00:59:59, 01:00:00
		if _, err := ib.BroadcastGroup(ctx, scope, "team", inbox.Draft{Sender: "bob", Thread: "team", Title: "hi"}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "team"}); err != nil || n != 3 {
		t.Fatalf("MarkAllRead of the group chat = %d, %v; want 3", n, err)
	}
	if c := countsAgree(t, ib, ann, "read up to an hour's first second"); c.Unread != 0 || c.Read != 3 {
		t.Errorf("Counts = %+v, want 3 read", c.Tally)
	}
	threads, err := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
	if err != nil || len(threads.Threads) != 1 || threads.Threads[0].Read != 3 {
		t.Errorf("ListThreads = %+v, %v; want the chat's 3 read", threads, err)
	}
}

// TestGroupPositionArchivedBefore: a group chat's message she archived
// before her read position covered it reads as read in the archived view,
// as Get and ReadBy read it: the position lends it its read.
func TestGroupPositionArchivedBefore(t *testing.T) {
	ctx := context.Background()
	clock, _, ib := groupChatStore(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	ann := scope.User("ann").InGroups("team")
	var ids []string
	for range 2 {
		m, err := ib.BroadcastGroup(ctx, scope, "team", inbox.Draft{Sender: "bob", Thread: "team", Title: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
		clock.Advance(time.Second)
	}
	if _, err := ib.Archive(ctx, ann, ids[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "team"}); err != nil || n != 1 {
		t.Fatalf("MarkAllRead of the group chat = %d, %v; want 1", n, err)
	}
	got, err := ib.Get(ctx, ann, ids[0])
	if err != nil || got.ReadAt.IsZero() {
		t.Fatalf("Get of the archived message = %+v, %v; want it read by the position", got, err)
	}
	page, err := ib.List(ctx, ann, inbox.ListOptions{Archived: true})
	if err != nil || len(page.Messages) != 1 || !page.Messages[0].ReadAt.Equal(got.ReadAt) {
		t.Errorf("the archived view = %+v, %v; want %s read at %v", page.Messages, err, ids[0], got.ReadAt)
	}
	rb, err := ib.ReadBy(ctx, ann, []inbox.Message{got})
	if err != nil || len(rb) != 1 || len(rb[0].Readers) != 1 || !rb[0].Readers[0].ReadAt.Equal(got.ReadAt) {
		t.Errorf("ReadBy of the archived message = %+v, %v; want ann at %v", rb, err, got.ReadAt)
	}
}

// TestGroupPositionReadByOwnRead: a member who read a group chat's message
// herself before her read position covered it is told by ReadBy as read
// at her own read, as Get reads it, however many members read it: her
// reader item, not her position, gives the time.
func TestGroupPositionReadByOwnRead(t *testing.T) {
	ctx := context.Background()
	clock, _, ib := groupChatStore(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	m, err := ib.BroadcastGroup(ctx, scope, "team", inbox.Draft{Sender: "bob", Thread: "team", Title: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	var members []inbox.User
	for i := range 40 { // past the few a sort keeps in order whatever it does
		u := scope.User(fmt.Sprintf("u%02d", i)).InGroups("team")
		members = append(members, u)
		if _, err := ib.MarkRead(ctx, u, m.ID); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Minute)
	if _, err := ib.BroadcastGroup(ctx, scope, "team", inbox.Draft{Sender: "bob", Thread: "team", Title: "later"}); err != nil {
		t.Fatal(err)
	}
	for _, u := range members {
		if _, err := ib.MarkAllRead(ctx, u, inbox.ListOptions{Thread: "team"}); err != nil {
			t.Fatal(err)
		}
	}
	rb, err := ib.ReadBy(ctx, members[0], []inbox.Message{m})
	if err != nil || len(rb) != 1 || len(rb[0].Readers) != len(members) {
		t.Fatalf("ReadBy = %+v, %v; want the %d members", rb, err, len(members))
	}
	for _, r := range rb[0].Readers {
		got, err := ib.Get(ctx, scope.User(r.User).InGroups("team"), m.ID)
		if err != nil || !got.ReadAt.Equal(r.ReadAt) {
			t.Errorf("ReadBy has %s read at %v; Get %v, %v", r.User, r.ReadAt, got.ReadAt, err)
		}
	}
}

// unfenced reads users' watermarks as an earlier version left them, with
// no fence (Stats.Fence ""): Counts counts the unseen one by one.
type unfenced struct{ *memstore.Store }

func (s unfenced) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	st, err := s.Store.Stats(ctx, q)
	if !q.Partition.IsShared() {
		st.Fence = ""
	}
	return st, err
}

// TestGroupPositionUnseenUnfenced: with a watermark an earlier version
// wrote (no fence), Counts counts the unseen messages one by one, and a
// group chat's messages her read position covers are read, so not
// unseen, as with a fenced watermark.
func TestGroupPositionUnseenUnfenced(t *testing.T) {
	ctx := context.Background()
	clock, mem, ib := groupChatStore(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	old := inbox.New(unfenced{mem}, inbox.WithClock(clock.Now))
	ann := scope.User("ann").InGroups("team")
	send := func(thread string) {
		t.Helper()
		if _, err := ib.BroadcastGroup(ctx, scope, "team", inbox.Draft{Sender: "bob", Thread: thread, Title: "hi"}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	send("other") // unread, below her watermark: not unseen
	if _, err := ib.MarkSeen(ctx, ann); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	send("team")
	send("team")
	if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "team"}); err != nil || n != 2 {
		t.Fatalf("MarkAllRead of the group chat = %d, %v; want 2", n, err)
	}
	want := inbox.Tally{Total: 3, Read: 2, Unread: 1}
	for _, x := range []struct {
		what string
		ib   *inbox.Inbox
	}{{"fenced", ib}, {"unfenced", old}} {
		if c, err := x.ib.Counts(ctx, ann); err != nil || c.Tally != want {
			t.Errorf("%s: Counts = %+v, %v; want %+v", x.what, c.Tally, err, want)
		}
	}
}

// groupChatStore returns a clock at start, a memstore on it that feeds
// its changes, and an Inbox over it that handles its removals.
func groupChatStore(start time.Time) (*storetest.Clock, *memstore.Store, *inbox.Inbox) {
	clock := storetest.NewClock(start)
	mem := memstore.New(memstore.WithClock(clock.Now), memstore.WithChanges())
	ib := inbox.New(mem, inbox.WithClock(clock.Now))
	mem.HandleRemovalsWith(ib.HandleChange)
	return clock, mem, ib
}

package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// An EventSource is a store under test whose changes reach an Inbox's
// events, as production's do: a DynamoDB table's stream through
// inbox.Inbox.StreamHandler, or the store's own feed of changes through
// inbox.Inbox.HandleChange (memstore with WithChanges). NewStore may return
// one; Run then checks the events of every kind of change.
type EventSource interface {
	driver.Store
	// DeliverEvents hands every change made since the last call to ib
	// (made WithEvents), in order per item, and reports how many it
	// handed on.
	DeliverEvents(ctx context.Context, ib *inbox.Inbox) (int, error)
}

// eventTests are the Inbox subtests about change events.
func eventTests() []suiteTest {
	return []suiteTest{{"Events", testEvents}, {"EventsDeadReceipts", testEventsDeadReceipts}}
}

// wantEvent is what testEvents checks of an event.
type wantEvent struct {
	Kind      inbox.EventKind
	Partition string
	Message   string // the message's name in the test
	Title     string // created events only
	Seen      bool   // a watermark is set
}

// testEvents: each change an Inbox makes through the store (a direct
// message to two users, a broadcast, a group message, read, archive,
// unarchive, delete for one user of a copy and of a broadcast, snooze and
// unsnooze of a copy and of a group message, mark seen,
// redaction of a group message) makes the event of its kind, in the
// partition it changed, with the message it concerns, each once and with
// an ID of its own; a second delivery hands on nothing new.
func testEvents(e *env) {
	src, ib, events := e.eventInbox()
	ann, bob := e.member("ann", "admins"), e.user("bob")
	d := e.publish(inbox.Draft{Title: "direct", Category: "billing"}, "ann", "bob").Message
	b := e.broadcast(inbox.Draft{Title: "broadcast"})
	g := e.broadcastTo("admins", inbox.Draft{Title: "group"})
	names := map[string]string{d.ID: "direct", b.ID: "broadcast", g.ID: "group"}
	must := func(what string, changed bool, err error) {
		e.t.Helper()
		if err != nil || !changed {
			e.t.Fatalf("%s = %v, %v; want true, nil", what, changed, err)
		}
	}
	e.markRead(ann, d.ID, true)
	e.markRead(ann, b.ID, true)
	ok, err := e.ib.MarkInteracted(e.ctx, ann, b.ID)
	must("MarkInteracted(ann, broadcast)", ok, err)
	ok, err = e.ib.Archive(e.ctx, ann, g.ID)
	must("Archive(ann, group)", ok, err)
	ok, err = e.ib.Unarchive(e.ctx, ann, g.ID)
	must("Unarchive(ann, group)", ok, err)
	ok, err = e.ib.Delete(e.ctx, bob, d.ID)
	must("Delete(bob, direct)", ok, err)
	ok, err = e.ib.Delete(e.ctx, bob, b.ID)
	must("Delete(bob, broadcast)", ok, err)
	for _, id := range []string{d.ID, g.ID} { // a direct message; a receipt made, then removed
		ok, err = e.ib.Snooze(e.ctx, ann, id, e.clock.Now().Add(time.Hour))
		must("Snooze(ann, "+names[id]+")", ok, err)
		ok, err = e.ib.Unsnooze(e.ctx, ann, id)
		must("Unsnooze(ann, "+names[id]+")", ok, err)
	}
	e.clock.Advance(time.Second)
	ok, err = e.ib.MarkSeen(e.ctx, ann)
	must("MarkSeen(ann)", ok, err)
	e.seen[partitionOf(ann)] = inbox.SeenAt(e.clock.Now())
	// The changes so far are delivered before the redaction: an unarchive
	// or unsnooze of the group message met after its removal makes no
	// event (see testEventsDeadReceipts).
	if _, err := src.DeliverEvents(e.ctx, ib); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	if n, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: g.ID, Group: "admins"}); err != nil || n != 1 {
		e.t.Fatalf("Redact(group) = %d, %v; want 1, nil", n, err)
	}
	if _, err := src.DeliverEvents(e.ctx, ib); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	annPK, bobPK := partitionOf(ann).PK(), partitionOf(bob).PK()
	want := []wantEvent{
		{Kind: inbox.EventCreated, Partition: annPK, Message: "direct", Title: "direct"},
		{Kind: inbox.EventCreated, Partition: bobPK, Message: "direct", Title: "direct"},
		{Kind: inbox.EventCreated, Partition: e.pub().PK(), Message: "broadcast", Title: "broadcast"},
		{Kind: inbox.EventCreated, Partition: groupOf(e.scope, "admins").PK(), Message: "group", Title: "group"},
		{Kind: inbox.EventRead, Partition: annPK, Message: "direct"},
		{Kind: inbox.EventRead, Partition: annPK, Message: "broadcast"},
		{Kind: inbox.EventInteracted, Partition: annPK, Message: "broadcast"},
		{Kind: inbox.EventArchived, Partition: annPK, Message: "group"},
		{Kind: inbox.EventUnarchived, Partition: annPK, Message: "group"},
		{Kind: inbox.EventDeleted, Partition: bobPK, Message: "direct"},
		{Kind: inbox.EventDeleted, Partition: bobPK, Message: "broadcast"},
		{Kind: inbox.EventSnoozed, Partition: annPK, Message: "direct"},
		{Kind: inbox.EventUnsnoozed, Partition: annPK, Message: "direct"},
		{Kind: inbox.EventSnoozed, Partition: annPK, Message: "group"},
		{Kind: inbox.EventUnsnoozed, Partition: annPK, Message: "group"},
		{Kind: inbox.EventSeen, Partition: annPK, Seen: true},
		{Kind: inbox.EventRemoved, Partition: groupOf(e.scope, "admins").PK(), Message: "group"},
	}
	got := events.take()
	have := make([]wantEvent, 0, len(got))
	ids := map[string]bool{}
	for _, ev := range got {
		w := wantEvent{Kind: ev.Kind, Partition: ev.Partition.PK(), Message: names[ev.Message.ID], Seen: ev.Seen != ""}
		if ev.Kind == inbox.EventCreated {
			w.Title = ev.Message.Title
		}
		if ev.Kind == inbox.EventSeen && ev.Seen != e.seen[partitionOf(ann)] {
			e.t.Errorf("seen event's watermark %q, want %q", ev.Seen, e.seen[partitionOf(ann)])
		}
		if ids[ev.ID] || ev.ID == "" {
			e.t.Errorf("event ID %q empty or given twice", ev.ID)
		}
		ids[ev.ID] = true
		have = append(have, w)
	}
	order := func(a, b wantEvent) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) }
	slices.SortFunc(want, order)
	slices.SortFunc(have, order)
	if diff := cmp.Diff(want, have); diff != "" {
		e.t.Errorf("events (-want +got):\n%s", diff)
	}
	if _, err := src.DeliverEvents(e.ctx, ib); err != nil || len(events.take()) != 0 {
		e.t.Errorf("DeliverEvents again: events, or %v; want none", err)
	}
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)
}

// eventLog keeps the events an Inbox hands it. It is safe for
// concurrent use.
type eventLog struct {
	mu  sync.Mutex
	evs []inbox.Event
}

// take returns the events kept, and forgets them.
func (l *eventLog) take() []inbox.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.evs
	l.evs = nil
	return evs
}

// eventInbox returns e's store as an EventSource, and an Inbox over it
// (shared cache off) whose events go to the log returned; it skips the
// test for a store that is not an EventSource.
func (e *env) eventInbox() (EventSource, *inbox.Inbox, *eventLog) {
	src, ok := e.store.(EventSource)
	if !ok {
		e.t.Skip("the store is not a storetest.EventSource: its changes do not reach events")
	}
	l := &eventLog{}
	ib := inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0), inbox.WithEvents(func(_ context.Context, ev inbox.Event) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.evs = append(l.evs, ev)
		return nil
	}))
	return src, ib, l
}

// testEventsDeadReceipts: a Recount that removes the receipts of a
// broadcast redacted before it expired (one archived unread, one snoozed
// unread) makes no event: the user unarchived and unsnoozed nothing, and
// the broadcast's removal was announced already. Nor does an unarchive
// delivered after its broadcast's removal: nothing shows the message.
func testEventsDeadReceipts(e *env) {
	src, ib, events := e.eventInbox()
	ann := e.user("ann")
	a := e.broadcast(inbox.Draft{Title: "archived"})
	s := e.broadcast(inbox.Draft{Title: "snoozed"})
	u := e.broadcast(inbox.Draft{Title: "unarchived"})
	for _, id := range []string{a.ID, u.ID} {
		if ok, err := e.ib.Archive(e.ctx, ann, id); err != nil || !ok {
			e.t.Fatalf("Archive = %v, %v", ok, err)
		}
	}
	if ok, err := e.ib.Snooze(e.ctx, ann, s.ID, e.clock.Now().Add(time.Hour)); err != nil || !ok {
		e.t.Fatalf("Snooze = %v, %v", ok, err)
	}
	if _, err := src.DeliverEvents(e.ctx, ib); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	events.take()
	if ok, err := e.ib.Unarchive(e.ctx, ann, u.ID); err != nil || !ok {
		e.t.Fatalf("Unarchive = %v, %v", ok, err)
	}
	for _, id := range []string{a.ID, s.ID, u.ID} {
		if n, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: id, Group: inbox.PublicGroup}); err != nil || n != 1 {
			e.t.Fatalf("Redact = %d, %v; want 1, nil", n, err)
		}
	}
	if _, err := src.DeliverEvents(e.ctx, ib); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	removed := 0
	for _, ev := range events.take() {
		if ev.Kind != inbox.EventRemoved {
			e.t.Errorf("event %s of %s in %s after the redactions; want only removed ones", ev.Kind, ev.Message.ID, ev.Partition.PK())
		}
		removed++
	}
	if removed != 3 {
		e.t.Errorf("%d events after the redactions of 3 broadcasts; want 3 removed", removed)
	}
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Fatalf("Recount: %v", err)
	}
	if _, err := src.DeliverEvents(e.ctx, ib); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	for _, ev := range events.take() {
		e.t.Errorf("Recount's removal of a redacted broadcast's receipt made event %s of %s in %s; want none", ev.Kind, ev.Message.ID, ev.Partition.PK())
	}
}

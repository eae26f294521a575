package storetest

import (
	stdcmp "cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// This file holds the Inbox subtests of what an operator and a host's
// worker read of scheduled messages: Inbox.Scheduled and Inbox.Due.

// delivery returns user u's scheduled copy of m, as Scheduled and Due
// return it.
func (e *env) delivery(m driver.Message, u string) inbox.Delivery {
	return inbox.Delivery{Partition: e.part(u), Message: copyFor(m, u)}
}

// sharedDelivery returns scheduled broadcast or group message m, in its
// shared partition, as Scheduled and Due return it: once.
func (e *env) sharedDelivery(m driver.Message) inbox.Delivery {
	return inbox.Delivery{Partition: groupOf(e.scope, stdcmp.Or(m.Audience.Group, driver.PublicGroup)), Message: m}
}

// deliveryPosition returns d's position in the order of Scheduled and
// Due.
func deliveryPosition(d inbox.Delivery) string {
	return driver.ScheduledKey(d.Message.ID, d.Partition)
}

// deliveriesAll pages through call (Scheduled or Due with the options it
// is given) limit deliveries a page, and returns every one. It checks
// that no page holds more than limit, that they come in order of
// delivery time and position (ID, then user or group), and that none
// repeats.
func (e *env) deliveriesAll(what string, limit int, call func(inbox.ScheduledOptions) (inbox.DeliveryPage, error)) []inbox.Delivery {
	e.t.Helper()
	o := inbox.ScheduledOptions{Limit: limit}
	var out []inbox.Delivery
	for pages := 0; ; pages++ {
		if pages > 1000 {
			e.t.Fatalf("%s: more than 1000 pages", what)
		}
		p, err := call(o)
		if err != nil {
			e.t.Fatalf("%s (limit %d): %v", what, limit, err)
		}
		if size := stdcmp.Or(limit, inbox.DefaultPageSize); len(p.Deliveries) > size {
			e.t.Errorf("%s: %d copies on a page of %d", what, len(p.Deliveries), size)
		}
		for _, d := range p.Deliveries {
			if n := len(out); n > 0 {
				prev := out[n-1]
				if d.Message.DeliverAt.Before(prev.Message.DeliverAt) || deliveryPosition(prev) >= deliveryPosition(d) {
					e.t.Fatalf("%s: %s after %s: repeated or out of order", what, deliveryPosition(d), deliveryPosition(prev))
				}
			}
			out = append(out, d)
		}
		if p.Cursor == "" {
			return out
		}
		o.Cursor = p.Cursor
	}
}

// scheduledAllOf returns every copy Inbox.Scheduled lists for the env's
// scope, limit a page.
func (e *env) scheduledAllOf(limit int) []inbox.Delivery {
	e.t.Helper()
	return e.deliveriesAll(fmt.Sprintf("Scheduled(%v)", e.scope), limit, func(o inbox.ScheduledOptions) (inbox.DeliveryPage, error) {
		return e.ib.Scheduled(e.ctx, e.scope, o)
	})
}

// dueAll returns every copy Inbox.Due returns for the env's scope and the
// window [from, to), limit a page.
func (e *env) dueAll(from, to time.Time, limit int) []inbox.Delivery {
	e.t.Helper()
	return e.deliveriesAll(fmt.Sprintf("Due(%v, %v)", from, to), limit, func(o inbox.ScheduledOptions) (inbox.DeliveryPage, error) {
		return e.ib.Due(e.ctx, e.scope, from, to, o)
	})
}

// wantDeliveries checks that got equals want exactly.
func (e *env) wantDeliveries(what string, want, got []inbox.Delivery) {
	e.t.Helper()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	if diff := cmp.Diff(want, got, recordOpts()); diff != "" {
		e.t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// testScheduledList: Scheduled lists the scheduled copies of the inbox
// not due yet, each with its user, by delivery time (then ID and user),
// paged by any limit: not a message delivered at once, not another
// inbox's, not a copy redacted, and not a copy once it is due; a cursor
// taken earlier skips what came due since.
func testScheduledList(e *env) {
	start := e.clock.Now().UTC().Truncate(time.Second)
	e.wantDeliveries("Scheduled of an inbox with nothing scheduled", nil, e.scheduledAllOf(0))
	e.publish(inbox.Draft{Title: "now"}, "ann")
	a := e.publish(inbox.Draft{Title: "in an hour", Category: "billing", DeliverAt: start.Add(time.Hour), HostSystemID: "sched-a"}, "carl", "ann", "bob").Message
	b := e.publish(inbox.Draft{Title: "in half an hour", DeliverAt: start.Add(30 * time.Minute)}, "ann").Message
	c := e.publish(inbox.Draft{Title: "tomorrow", DeliverAt: start.Add(24 * time.Hour)}, "bob").Message
	e.publishIn(driver.Scope{Tenant: e.scope.Tenant, Inbox: "other"}, inbox.Draft{Title: "another inbox", DeliverAt: start.Add(time.Hour)}, "ann")

	want := []inbox.Delivery{e.delivery(b, "ann"), e.delivery(a, "ann"), e.delivery(a, "bob"), e.delivery(a, "carl"), e.delivery(c, "bob")}
	for _, limit := range []int{0, 1, 2, 4, inbox.MaxPageSize} {
		e.wantDeliveries(fmt.Sprintf("Scheduled, %d a page", limit), want, e.scheduledAllOf(limit))
	}
	first, err := e.ib.Scheduled(e.ctx, e.scope, inbox.ScheduledOptions{Limit: 1})
	if err != nil || len(first.Deliveries) != 1 || first.Cursor == "" {
		e.t.Fatalf("Scheduled, 1 a page: %+v, %v; want one copy and a cursor", first, err)
	}
	// A retry of a publish is no new copy.
	e.publish(inbox.Draft{Title: "in an hour", Category: "billing", DeliverAt: start.Add(time.Hour), HostSystemID: "sched-a"}, "ann")
	// Redact cancels a copy: it leaves the list.
	if n, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: a.ID, Users: []string{"carl"}}); err != nil || n != 1 {
		e.t.Fatalf("Redact(carl's copy) = %d, %v", n, err)
	}
	want = append(want[:3], want[4:]...)
	e.wantDeliveries("Scheduled after a cancel", want, e.scheduledAllOf(2))

	// A copy leaves the list at its delivery time, not a second before.
	setClock(e, b.DeliverAt.Add(-time.Second))
	e.wantDeliveries("Scheduled a second before the first is due", want, e.scheduledAllOf(3))
	setClock(e, b.DeliverAt)
	e.wantDeliveries("Scheduled when the first is due", want[1:], e.scheduledAllOf(3))
	// The first page's cursor, taken before, goes on after the copies due.
	rest := e.deliveriesAll("Scheduled from an earlier cursor", 10, func(o inbox.ScheduledOptions) (inbox.DeliveryPage, error) {
		if o.Cursor == "" {
			o.Cursor = first.Cursor
		}
		return e.ib.Scheduled(e.ctx, e.scope, o)
	})
	e.wantDeliveries("Scheduled with the cursor of a page taken before", want[1:], rest)
	setClock(e, a.DeliverAt)
	e.wantDeliveries("Scheduled when the second is due", want[3:], e.scheduledAllOf(1))
	setClock(e, c.DeliverAt)
	e.wantDeliveries("Scheduled when everything is due", nil, e.scheduledAllOf(1))
	e.checkInvariant()
}

// testDue: Due returns the scheduled copies whose delivery time is in
// [from, to) and has come, each with its user, paged by any limit: at its
// delivery time to the second (sub-second bounds included), not a message
// delivered at once, not a copy redacted or deleted, read or not, not one
// that expired; overlapping windows return a copy again, with the same
// event ID; a window that ends after now is served up to now.
func testDue(e *env) {
	start := e.clock.Now().UTC().Truncate(time.Second)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	a := e.publish(inbox.Draft{Title: "at 10", DeliverAt: at(10 * time.Minute)}, "bob", "ann").Message
	b := e.publish(inbox.Draft{Title: "at 20", DeliverAt: at(20 * time.Minute), TTL: time.Hour}, "ann").Message
	c := e.publish(inbox.Draft{Title: "at 20:01", DeliverAt: at(20*time.Minute + time.Second)}, "carl").Message
	d := e.publish(inbox.Draft{Title: "at 40", DeliverAt: at(40 * time.Minute)}, "dora").Message
	e.publish(inbox.Draft{Title: "now"}, "ann")

	e.wantDeliveries("Due before anything is due", nil, e.dueAll(start.Add(-time.Hour), at(time.Hour), 0))
	setClock(e, at(10*time.Minute))
	e.wantDeliveries("Due of a window that ends at the delivery time", nil, e.dueAll(start, at(10*time.Minute), 0))
	aa, ab := e.delivery(a, "ann"), e.delivery(a, "bob")
	e.wantDeliveries("Due at the delivery time, the window ending later", []inbox.Delivery{aa, ab}, e.dueAll(start, at(time.Hour), 1))
	e.wantDeliveries("Due of a window that starts at the delivery time", []inbox.Delivery{aa, ab}, e.dueAll(at(10*time.Minute), at(10*time.Minute+time.Second), 0))
	e.wantDeliveries("Due of a window that starts half a second after it", nil, e.dueAll(at(10*time.Minute+500*time.Millisecond), at(11*time.Minute), 0))

	setClock(e, at(30*time.Minute))
	bd, cd := e.delivery(b, "ann"), e.delivery(c, "carl")
	all := []inbox.Delivery{aa, ab, bd, cd}
	for _, limit := range []int{0, 1, 3} {
		e.wantDeliveries(fmt.Sprintf("Due of the last half hour, %d a page", limit), all, e.dueAll(start, at(30*time.Minute), limit))
	}
	e.wantDeliveries("Due of the window up to 20:00.5", []inbox.Delivery{bd}, e.dueAll(at(10*time.Minute+500*time.Millisecond), at(20*time.Minute+500*time.Millisecond), 0))
	e.wantDeliveries("Due of a window ending after now", all, e.dueAll(start, at(time.Hour), 2))
	// A copy read, or archived, since it came due is still returned; one
	// deleted by its user, or redacted, is not.
	e.markRead(e.user("ann"), b.ID, true)
	if ok, err := e.ib.Archive(e.ctx, e.user("ann"), a.ID); err != nil || !ok {
		e.t.Errorf("Archive(ann, %s) = %v, %v", a.ID, ok, err)
	}
	if ok, err := e.ib.Delete(e.ctx, e.user("bob"), a.ID); err != nil || !ok {
		e.t.Errorf("Delete(bob, %s) = %v, %v", a.ID, ok, err)
	}
	if n, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: c.ID, Users: []string{"carl"}}); err != nil || n != 1 {
		e.t.Errorf("Redact(carl's copy) = %d, %v", n, err)
	}
	all = []inbox.Delivery{aa, bd}
	e.wantDeliveries("Due after marks, a delete and a redaction", all, e.dueAll(start, at(30*time.Minute), 1))
	// Overlapping windows return a copy again, with the same event.
	first, second := e.dueAll(start, at(20*time.Minute+time.Second), 0), e.dueAll(at(15*time.Minute), at(30*time.Minute), 0)
	if len(first) != 2 || len(second) != 1 || first[1].Event().ID != second[0].Event().ID {
		e.t.Errorf("overlapping windows: %+v and %+v, want b's copy in both", first, second)
	}
	for _, dl := range all {
		ev := dl.Event()
		if ev.Kind != inbox.EventDue || ev.Partition != dl.Partition || ev.Partition.User == "" || ev.Message.ID != dl.Message.ID || !ev.At.Equal(dl.Message.DeliverAt) || ev.ID == "" {
			e.t.Errorf("Event of %s/%s: %+v", dl.Partition.User, dl.Message.ID, ev)
		}
	}
	// A copy that expired is not returned; one that came due later is.
	setClock(e, b.ExpiresAt)
	e.wantDeliveries("Due after b's expiry", []inbox.Delivery{aa, e.delivery(d, "dora")}, e.dueAll(start, b.ExpiresAt, 1))
	e.checkInvariant()
}

// testScheduledBadInput: Scheduled and Due refuse a bad scope, limit or
// cursor (malformed, altered, of List, of the other call, of another
// scope or window), and Due a window without a start or an end, empty or
// reversed, starting after now or more than MaxTTL before it; they write
// nothing.
func testScheduledListBadInput(e *env) {
	start := e.clock.Now().UTC().Truncate(time.Second)
	e.publish(inbox.Draft{Title: "soon", DeliverAt: start.Add(time.Minute)}, "ann", "bob", "carl")
	e.publish(inbox.Draft{Title: "now"}, "ann")
	sched, err := e.ib.Scheduled(e.ctx, e.scope, inbox.ScheduledOptions{Limit: 1})
	if err != nil || sched.Cursor == "" {
		e.t.Fatalf("Scheduled: %+v, %v; want a cursor", sched, err)
	}
	feed, err := e.ib.List(e.ctx, e.user("ann"), inbox.ListOptions{Limit: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	e.publish(inbox.Draft{Title: "second"}, "ann")
	if feed, err = e.ib.List(e.ctx, e.user("ann"), inbox.ListOptions{Limit: 1}); err != nil || feed.Cursor == "" {
		e.t.Fatalf("List: %+v, %v; want a cursor", feed, err)
	}
	setClock(e, start.Add(time.Minute))
	window := [2]time.Time{start, start.Add(time.Hour)}
	due, err := e.ib.Due(e.ctx, e.scope, window[0], window[1], inbox.ScheduledOptions{Limit: 1})
	if err != nil || due.Cursor == "" {
		e.t.Fatalf("Due: %+v, %v; want a cursor", due, err)
	}
	now := e.clock.Now()
	altered := []byte(sched.Cursor)
	if mid := len(altered) / 2; altered[mid] != 'A' {
		altered[mid] = 'A'
	} else {
		altered[mid] = 'B'
	}
	other := driver.Scope{Tenant: e.scope.Tenant, Inbox: "other"}
	before := e.snapshot()
	type call struct {
		scope    driver.Scope
		from, to time.Time
		due      bool
		o        inbox.ScheduledOptions
		want     error
	}
	for name, c := range map[string]call{
		"a tenant with a '#'":             {scope: driver.Scope{Tenant: "ac#me", Inbox: "alerts"}, want: inbox.ErrInvalidKey},
		"no inbox":                        {scope: driver.Scope{Tenant: "acme"}, want: inbox.ErrInvalidKey},
		"a negative limit":                {o: inbox.ScheduledOptions{Limit: -1}, want: inbox.ErrInvalidInput},
		"a limit over MaxPageSize":        {o: inbox.ScheduledOptions{Limit: inbox.MaxPageSize + 1}, want: inbox.ErrInvalidInput},
		"a malformed cursor":              {o: inbox.ScheduledOptions{Cursor: "not a cursor"}, want: inbox.ErrInvalidCursor},
		"an altered cursor":               {o: inbox.ScheduledOptions{Cursor: string(altered)}, want: inbox.ErrInvalidCursor},
		"a truncated cursor":              {o: inbox.ScheduledOptions{Cursor: base64.RawURLEncoding.EncodeToString([]byte{2, 1})}, want: inbox.ErrInvalidCursor},
		"a cursor of List":                {o: inbox.ScheduledOptions{Cursor: feed.Cursor}, want: inbox.ErrInvalidCursor},
		"a cursor of Due":                 {o: inbox.ScheduledOptions{Cursor: due.Cursor}, want: inbox.ErrInvalidCursor},
		"a cursor of another inbox":       {scope: other, o: inbox.ScheduledOptions{Cursor: sched.Cursor}, want: inbox.ErrInvalidCursor},
		"Due with a cursor of Scheduled":  {due: true, from: window[0], to: window[1], o: inbox.ScheduledOptions{Cursor: sched.Cursor}, want: inbox.ErrInvalidCursor},
		"Due with another window's":       {due: true, from: window[0], to: window[1].Add(time.Second), o: inbox.ScheduledOptions{Cursor: due.Cursor}, want: inbox.ErrInvalidCursor},
		"Due with another inbox's cursor": {due: true, scope: other, from: window[0], to: window[1], o: inbox.ScheduledOptions{Cursor: due.Cursor}, want: inbox.ErrInvalidCursor},
		"Due with a bad scope":            {due: true, scope: driver.Scope{Tenant: "a*", Inbox: "alerts"}, from: window[0], to: window[1], want: inbox.ErrInvalidKey},
		"Due with a bad limit":            {due: true, from: window[0], to: window[1], o: inbox.ScheduledOptions{Limit: -1}, want: inbox.ErrInvalidInput},
		"Due without a start":             {due: true, to: window[1], want: inbox.ErrInvalidInput},
		"Due without an end":              {due: true, from: window[0], want: inbox.ErrInvalidInput},
		"Due of an empty window":          {due: true, from: window[0], to: window[0], want: inbox.ErrInvalidInput},
		"Due with from after to":          {due: true, from: window[1], to: window[0], want: inbox.ErrInvalidInput},
		"Due of a window in the future":   {due: true, from: now.Add(time.Second), to: now.Add(time.Hour), want: inbox.ErrInvalidInput},
		"Due from over MaxTTL ago":        {due: true, from: now.Add(-inbox.MaxTTL - time.Second), to: now, want: inbox.ErrInvalidInput},
	} {
		if c.scope == (driver.Scope{}) {
			c.scope = e.scope
		}
		var err error
		if c.due {
			_, err = e.ib.Due(e.ctx, c.scope, c.from, c.to, c.o)
		} else {
			_, err = e.ib.Scheduled(e.ctx, c.scope, c.o)
		}
		if !errors.Is(err, c.want) {
			e.t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	e.wantUnchanged("refused calls of Scheduled and Due", before)
	// The window's bounds as such are fine: MaxTTL back, up to now.
	if _, err := e.ib.Due(e.ctx, e.scope, now.Add(-inbox.MaxTTL), now, inbox.ScheduledOptions{}); err != nil {
		e.t.Errorf("Due of the longest window: %v", err)
	}
}

// testScheduledShared: a scheduled broadcast and a group message are in
// Scheduled once each, in their shared partitions, among the copies of
// messages to users in order of delivery time, until they are due, and
// then in Due for a window that holds their delivery time, whether or
// not a user deleted them from a feed; a Redact takes one out of both;
// their events are in their shared partitions, with IDs that differ from
// the copies' and stay the same from call to call; paging one at a time
// returns each delivery once, in order.
func testScheduledShared(e *env) {
	start := e.clock.Now().UTC().Truncate(time.Second)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	ann := e.member("ann", "ops")
	a := e.publish(inbox.Draft{Title: "to users at 10", DeliverAt: at(10 * time.Minute)}, "bob", "ann").Message
	b := e.broadcast(inbox.Draft{Title: "to everyone at 20", Category: "news", DeliverAt: at(20 * time.Minute)})
	g := e.broadcastTo("ops", inbox.Draft{Title: "to ops at 25", DeliverAt: at(25 * time.Minute), TTL: time.Hour})
	c := e.publish(inbox.Draft{Title: "to carl at 30", DeliverAt: at(30 * time.Minute)}, "carl").Message
	x := e.broadcast(inbox.Draft{Title: "to everyone at 40, cancelled", DeliverAt: at(40 * time.Minute)})
	y := e.broadcastTo("admins", inbox.Draft{Title: "to admins at 40, cancelled", DeliverAt: at(40 * time.Minute)})
	e.broadcast(inbox.Draft{Title: "to everyone now"})
	e.broadcastTo("ops", inbox.Draft{Title: "to ops now"})

	want := []inbox.Delivery{e.delivery(a, "ann"), e.delivery(a, "bob"), e.sharedDelivery(b), e.sharedDelivery(g), e.delivery(c, "carl"), e.sharedDelivery(x), e.sharedDelivery(y)}
	if deliveryPosition(want[5]) > deliveryPosition(want[6]) {
		want[5], want[6] = want[6], want[5] // one second: their IDs order them
	}
	for _, limit := range []int{0, 1, 2, 3} {
		e.wantDeliveries(fmt.Sprintf("Scheduled with a broadcast and group messages, %d a page", limit), want, e.scheduledAllOf(limit))
	}
	events := map[string]string{} // event ID: the delivery's position
	for _, d := range want {
		ev := d.Event()
		if ev.Kind != inbox.EventDue || ev.Partition != d.Partition || ev.Message.ID != d.Message.ID || !ev.At.Equal(d.Message.DeliverAt) || ev.ID != d.Event().ID {
			e.t.Errorf("Event of %s: %+v", deliveryPosition(d), ev)
		}
		if other, ok := events[ev.ID]; ok {
			e.t.Errorf("the events of %s and %s share ID %q", deliveryPosition(d), other, ev.ID)
		}
		events[ev.ID] = deliveryPosition(d)
	}
	if ev := e.sharedDelivery(b).Event(); !ev.Partition.IsPublic() || ev.Partition.Scope() != e.scope || ev.Partition.User != "" {
		e.t.Errorf("the broadcast's event is in %+v, want the public partition", ev.Partition)
	}
	if ev := e.sharedDelivery(g).Event(); ev.Partition.Group != "ops" || ev.Partition.User != "" {
		e.t.Errorf("the group message's event is in %+v, want ops's partition", ev.Partition)
	}

	// Redact cancels a broadcast and a group message: they leave the list.
	for _, r := range []inbox.Redaction{{ID: x.ID, Group: driver.PublicGroup}, {ID: y.ID, Group: "admins"}} {
		if n, err := e.ib.Redact(e.ctx, e.scope, r); err != nil || n != 1 {
			e.t.Fatalf("Redact(%+v) = %d, %v; want 1", r, n, err)
		}
	}
	want = want[:5]
	e.wantDeliveries("Scheduled after the broadcast's and the group message's cancel", want, e.scheduledAllOf(1))

	// Due at their time: out of Scheduled, in Due, with the same events.
	setClock(e, b.DeliverAt)
	e.wantDeliveries("Scheduled when the broadcast is due", want[3:], e.scheduledAllOf(2))
	e.wantDeliveries("Due when the broadcast is due", want[:3], e.dueAll(start, at(time.Hour), 1))
	e.wantDeliveries("Due of a window that ends at the broadcast's time", want[:2], e.dueAll(start, b.DeliverAt, 0))
	if ok, err := e.ib.Delete(e.ctx, ann, b.ID); err != nil || !ok {
		e.t.Errorf("Delete(ann, the broadcast) = %v, %v", ok, err)
	}
	setClock(e, c.DeliverAt)
	e.wantDeliveries("Scheduled when everything is due", nil, e.scheduledAllOf(1))
	for _, limit := range []int{1, 2, 0} {
		got := e.dueAll(start, at(time.Hour), limit)
		e.wantDeliveries(fmt.Sprintf("Due of everything, %d a page (ann deleted the broadcast from her feed)", limit), want, got)
		for _, d := range got {
			if pos := events[d.Event().ID]; pos != deliveryPosition(d) {
				e.t.Errorf("Due's event of %s has ID %q, Scheduled's was of %q", deliveryPosition(d), d.Event().ID, pos)
			}
		}
	}
	e.wantDeliveries("Due of the window from the group message's time", want[3:], e.dueAll(g.DeliverAt, at(time.Hour), 1))
	// One that expired is not returned.
	setClock(e, g.ExpiresAt)
	e.wantDeliveries("Due after the group message's expiry", []inbox.Delivery{want[0], want[1], want[2], want[4]}, e.dueAll(start, g.ExpiresAt, 1))
	e.checkInvariant()
}

// testScheduledDueWithoutMarks: Due returns a copy as it was published,
// without any of its user's marks (the dynamo Store's index projects
// none): not the snooze, nor the interaction, she made since it came due.
func testScheduledDueWithoutMarks(e *env) {
	start := e.clock.Now().UTC().Truncate(time.Second)
	ann := e.user("ann")
	a := e.publish(inbox.Draft{Title: "at 10", DeliverAt: start.Add(10 * time.Minute)}, "ann").Message
	setClock(e, a.DeliverAt.Add(time.Minute))
	if ok, err := e.ib.MarkInteracted(e.ctx, ann, a.ID); err != nil || !ok {
		e.t.Fatalf("MarkInteracted(ann, %s) = %v, %v", a.ID, ok, err)
	}
	if ok, err := e.ib.Snooze(e.ctx, ann, a.ID, a.DeliverAt.Add(time.Hour)); err != nil || !ok {
		e.t.Fatalf("Snooze(ann, %s) = %v, %v", a.ID, ok, err)
	}
	e.wantDeliveries("Due of a copy snoozed and interacted with since it came due", []inbox.Delivery{e.delivery(a, "ann")}, e.dueAll(start, start.Add(time.Hour), 0))
	e.checkInvariant()
}

package storetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// testMarkRead: MarkRead of a direct message sets its ReadAt, of a
// broadcast creates the user's receipt; each reports changed once, counts
// once, and touches no other user.
func testMarkRead(e *env) {
	ann, bob, carol := e.user("ann"), e.user("bob"), e.user("carol")
	d := e.publish(inbox.Draft{Title: "d", Category: "billing"}, "ann", "bob").Message
	b := e.broadcast(inbox.Draft{Title: "b", Category: "news"})
	e.clock.Advance(time.Minute)
	at := e.clock.Now()

	e.markRead(ann, d.ID, true)
	e.markRead(ann, d.ID, false)
	e.markRead(ann, b.ID, true)
	e.clock.Advance(time.Minute)
	e.markRead(ann, b.ID, false)
	e.markRead(ann, d.ID, false)

	e.wantRecords("ann's records", []driver.Record{
		{Partition: partitionOf(ann), Receipt: true, Entry: someEntry, Message: driver.Message{ID: b.ID, Category: "news", ReadAt: at, ExpiresAt: b.ExpiresAt}},
		{Partition: partitionOf(ann), Entry: someEntry, Message: read(copyFor(d, "ann"), at)},
	}, e.records(partitionOf(ann)))
	e.wantRecords("public records", []driver.Record{{Partition: e.pub(), Message: b, Entry: someEntry}}, e.records(e.pub()))
	e.wantFeed(ann, inbox.ListOptions{}, read(b, at), read(copyFor(d, "ann"), at))
	e.wantFeed(bob, inbox.ListOptions{}, b, copyFor(d, "bob"))
	e.wantCounts(ann, inbox.Counts{Tally: tallyOf(2, 2), Categories: map[string]inbox.Tally{"billing": tallyOf(1, 1), "news": tallyOf(1, 1)}})
	e.wantCounts(bob, inbox.Counts{Tally: tallyOf(2, 0), Categories: map[string]inbox.Tally{"billing": tallyOf(1, 0), "news": tallyOf(1, 0)}})

	for _, c := range []struct {
		u    driver.User
		id   string
		what string
	}{
		{carol, d.ID, "a message published to others"},
		{ann, e.newID(), "an ID never published"},
		{e.userIn(driver.Scope{Tenant: e.scope.Tenant, Inbox: "other"}, "ann"), b.ID, "a broadcast of another inbox"},
	} {
		if changed, err := e.ib.MarkRead(e.ctx, c.u, c.id); !errors.Is(err, driver.ErrNotFound) {
			e.t.Errorf("MarkRead(%s, %s): got %v, %v; want ErrNotFound", c.u.ID, c.what, changed, err)
		}
	}
	e.wantCounts(carol, inbox.Counts{Tally: tallyOf(1, 0), Categories: map[string]inbox.Tally{"news": tallyOf(1, 0)}})
}

// testGet: Get returns one message as the user sees it (a broadcast with
// the user's read state) and ErrNotFound for a message the user does not
// have or that has expired.
func testGet(e *env) {
	ann, bob := e.user("ann"), e.user("bob")
	d := e.publish(inbox.Draft{Title: "d", Category: "billing", Body: nestedBody(), TTL: time.Hour}, "ann").Message
	b := e.broadcast(inbox.Draft{Title: "b", TTL: 2 * time.Hour})
	at := e.clock.Now()
	e.markRead(ann, b.ID, true)
	get := func(u driver.User, id string, want *driver.Message) {
		e.t.Helper()
		got, err := e.ib.Get(e.ctx, u, id)
		if want == nil {
			if !errors.Is(err, driver.ErrNotFound) {
				e.t.Errorf("Get(%s, %s): %+v, %v; want ErrNotFound", u.ID, id, got, err)
			}
			return
		}
		if err != nil {
			e.t.Errorf("Get(%s, %s): %v", u.ID, id, err)
			return
		}
		e.wantMessages("Get("+u.ID+", "+id+")", []driver.Message{*want}, []driver.Message{got})
	}
	annD, annB := copyFor(d, "ann"), read(b, at)
	get(ann, d.ID, &annD)
	get(ann, b.ID, &annB)
	get(bob, b.ID, &b)
	get(bob, d.ID, nil)
	get(ann, e.newID(), nil)
	e.clock.Advance(time.Hour)
	get(ann, d.ID, nil)
	get(ann, b.ID, &annB)
	e.clock.Advance(time.Hour)
	get(ann, b.ID, nil)
	get(bob, b.ID, nil)
}

// testMarkAllRead: MarkAllRead marks every unread message and broadcast,
// over several pages and batches, and reports how many.
func testMarkAllRead(e *env) {
	ann, bob, carol := e.user("ann"), e.user("bob"), e.user("carol")
	feed := e.buildFeed(9)
	unread := len(visibleIn(feed, inbox.ListOptions{UnreadOnly: true}))
	bobBefore := e.listAll(bob, inbox.ListOptions{})
	e.clock.Advance(time.Minute)
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{}); n != unread || err != nil {
		e.t.Errorf("MarkAllRead(ann): %d, %v; want %d, nil", n, err, unread)
	}
	for i, m := range feed {
		if !m.IsRead() {
			feed[i] = read(m, e.clock.Now())
		}
	}
	e.wantFeed(ann, inbox.ListOptions{}, feed...)
	e.wantFeed(ann, inbox.ListOptions{UnreadOnly: true})
	c := e.counts(ann)
	if c.Unread != 0 || c.Read != int64(len(feed)) || c.Total != int64(len(feed)) {
		e.t.Errorf("Counts(ann) after MarkAllRead: %+v, want %d read, 0 unread", c.Tally, len(feed))
	}
	for cat, t := range c.Categories {
		if t.Unread != 0 {
			e.t.Errorf("Counts(ann) after MarkAllRead: category %q has %d unread", cat, t.Unread)
		}
	}
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{}); n != 0 || err != nil {
		e.t.Errorf("MarkAllRead(ann) again: %d, %v; want 0, nil", n, err)
	}
	e.wantFeed(bob, inbox.ListOptions{}, bobBefore...)

	// More than two batches: carol has 2*MaxMarkBatch+3 messages of her
	// own, and the broadcasts, all unread.
	k := 2*driver.MaxMarkBatch + 3
	cats := []string{"a", "b", "", "c"}
	for i := range k {
		e.publish(inbox.Draft{Title: fmt.Sprint(i), Category: cats[i%len(cats)]}, "carol")
	}
	want := k + len(feed) - countDirect(feed)
	if got, err := e.ib.MarkAllRead(e.ctx, carol, inbox.ListOptions{}); got != want || err != nil {
		e.t.Errorf("MarkAllRead(carol): %d, %v; want %d, nil", got, err, want)
	}
	e.wantFeed(carol, inbox.ListOptions{Limit: 7, UnreadOnly: true})
	if c := e.counts(carol); c.Unread != 0 || c.Read != int64(want) || c.Total != int64(want) {
		e.t.Errorf("Counts(carol) after MarkAllRead: %+v, want %d read, 0 unread", c.Tally, want)
	}
}

// countDirect counts the messages of msgs that are not broadcasts.
func countDirect(msgs []driver.Message) int {
	n := 0
	for _, m := range msgs {
		if !m.IsBroadcast() {
			n++
		}
	}
	return n
}

package storetest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// aggregateTests are the Inbox subtests of aggregated messages
// (inbox.Draft.Aggregate).
func aggregateTests() []suiteTest {
	return []suiteTest{
		{"AggregateJoin", testAggregateJoin},
		{"AggregateMarks", testAggregateMarks},
		{"AggregateRetry", testAggregateRetry},
		{"AggregateBadInput", testAggregateBadInput},
		{"AggregateConcurrent", testAggregateConcurrent},
		{"AggregateSenders", testAggregateSenders},
		{"AggregateEvents", testAggregateEvents},
		{"AggregateBounds", testAggregateBounds},
		{"AggregatePosition", testAggregatePosition},
		{"AggregateOwn", testAggregateOwn},
	}
}

// like publishes to ann bob's, carol's... like of her post: an
// aggregated message of key "post-1", from sender.
func (e *env) like(sender string, users ...string) inbox.PublishResult {
	e.t.Helper()
	e.clock.Advance(time.Second)
	return e.publish(inbox.Draft{Aggregate: "post-1", Sender: sender, Category: "likes", Title: sender + " liked your post"}, users...)
}

// wantItem checks that u's feed shows one item of key "post-1": the
// message id, of count messages, from senders, with members (the latest
// first), read or not; and that Counts equals what List shows.
func (e *env) wantItem(what string, u driver.User, id string, count int, senders, members []string, read bool) {
	e.t.Helper()
	var items []driver.Message
	for _, m := range e.listAll(u, inbox.ListOptions{}) {
		if m.Thread == "post-1" {
			items = append(items, m)
		}
	}
	if len(items) != 1 {
		e.t.Fatalf("%s: %s's feed holds %d items of post-1, want 1", what, u.ID, len(items))
	}
	m := items[0]
	if m.ID != id || m.Count != count || !slices.Equal(m.Senders, senders) || !slices.Equal(m.Members, members) || m.IsRead() != read {
		e.t.Errorf("%s: %s's item %s: count %d, senders %v, members %v, read %v; want %s, %d, %v, %v, %v",
			what, u.ID, m.ID, m.Count, m.Senders, m.Members, m.IsRead(), id, count, senders, members, read)
	}
	got, err := e.ib.Get(e.ctx, u, m.ID)
	if err != nil || got.Count != m.Count || !slices.Equal(got.Senders, m.Senders) {
		e.t.Errorf("%s: Get(%s, %s): count %d, senders %v, %v; want List's", what, u.ID, m.ID, got.Count, got.Senders, err)
	}
	e.wantCountsFromFeed(u)
}

// testAggregateJoin: likes of one key collapse, in each user's feed, into
// one item: the newest message, with the count, the distinct senders
// (the latest first) and the earlier messages' IDs; it moves to the top
// past a message published since, and Counts counts it once, unread.
// Each user's item is her own: a like to ann and bob joins each one's.
func testAggregateJoin(e *env) {
	ann, bob := e.user("ann"), e.user("bob")
	first := e.like("bob", "ann").Message
	if first.Count != 1 || !slices.Equal(first.Senders, []string{"bob"}) || first.Thread != "post-1" || len(first.Members) != 0 {
		e.t.Errorf("first like: count %d, senders %v, thread %q, members %v; want 1, [bob], post-1, none", first.Count, first.Senders, first.Thread, first.Members)
	}
	e.wantItem("one like", ann, first.ID, 1, []string{"bob"}, nil, false)
	e.clock.Advance(time.Second)
	other := e.publish(inbox.Draft{Title: "unrelated"}, "ann").Message
	second := e.like("carol", "ann").Message
	third := e.like("bob", "ann", "bob").Message
	e.wantItem("three likes", ann, third.ID, 3, []string{"bob", "carol"}, []string{second.ID, first.ID}, false)
	feed := e.listAll(ann, inbox.ListOptions{})
	if len(feed) != 2 || feed[0].ID != third.ID || feed[1].ID != other.ID {
		e.t.Errorf("ann's feed: %d messages, first %v; want the item, then the unrelated message", len(feed), feed)
	}
	e.wantCounts(ann, inbox.Counts{Tally: tallyOf(2, 0), Categories: map[string]inbox.Tally{"likes": tallyOf(1, 0)}})
	// bob's own like, in his own feed: read, an item of one.
	e.wantItem("bob's own like", bob, third.ID, 1, []string{"bob"}, nil, true)
}

// testAggregateMarks: marks apply to the item as to any message; a like
// that joins an item ann read or archived makes it unread in her feed
// again, with the earlier likes in its count; one that follows her
// delete of the item starts a new item. MarkAllRead marks it. An item
// is not snoozed (a thread's message is not).
func testAggregateMarks(e *env) {
	ann := e.user("ann")
	e.markSeen(ann)
	a := e.like("bob", "ann").Message
	b := e.like("carol", "ann").Message
	e.markRead(ann, b.ID, true)
	e.wantItem("read", ann, b.ID, 2, []string{"carol", "bob"}, []string{a.ID}, true)
	c := e.like("dave", "ann").Message
	e.wantItem("a like after her read", ann, c.ID, 3, []string{"dave", "carol", "bob"}, []string{b.ID, a.ID}, false)
	e.wantCounts(ann, inbox.Counts{Tally: unseenOf(tallyOf(1, 0), 1), Categories: map[string]inbox.Tally{"likes": unseenOf(tallyOf(1, 0), 1)}})
	if _, err := e.ib.Archive(e.ctx, ann, c.ID); err != nil {
		e.t.Fatalf("Archive: %v", err)
	}
	e.wantCountsFromFeed(ann)
	d := e.like("erin", "ann").Message
	e.wantItem("a like after her archive", ann, d.ID, 4, []string{"erin", "dave", "carol", "bob"}, []string{c.ID, b.ID, a.ID}, false)
	if _, err := e.ib.Snooze(e.ctx, ann, d.ID, e.clock.Now().Add(time.Hour)); !errors.Is(err, inbox.ErrInvalidInput) {
		e.t.Errorf("Snooze of an item: %v; want ErrInvalidInput (an item is in its key's thread)", err)
	}
	f := e.like("bob", "ann").Message
	e.wantItem("another like", ann, f.ID, 5, []string{"bob", "erin", "dave", "carol"}, []string{d.ID, c.ID, b.ID, a.ID}, false)
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{}); err != nil || n != 1 {
		e.t.Errorf("MarkAllRead: %d, %v; want 1", n, err)
	}
	e.wantItem("after MarkAllRead", ann, f.ID, 5, []string{"bob", "erin", "dave", "carol"}, []string{d.ID, c.ID, b.ID, a.ID}, true)
	if _, err := e.ib.Delete(e.ctx, ann, f.ID); err != nil {
		e.t.Fatalf("Delete: %v", err)
	}
	e.wantCountsFromFeed(ann)
	g := e.like("carol", "ann").Message
	e.wantItem("a like after her delete", ann, g.ID, 1, []string{"carol"}, nil, false)
}

// testAggregateRetry: a publish retried with its HostSystemID after
// later likes joined its item finds it delivered (a duplicate), and
// counts nothing twice.
func testAggregateRetry(e *env) {
	ann := e.user("ann")
	e.clock.Advance(time.Second)
	d := inbox.Draft{Aggregate: "post-1", Sender: "bob", Category: "likes", Title: "bob liked your post", HostSystemID: "like-bob"}
	first := e.publish(d, "ann").Message
	second := e.like("carol", "ann").Message
	res, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, d)
	if err != nil || len(res.Duplicates) != 1 || len(res.Delivered) != 0 {
		e.t.Errorf("retry: delivered %v, duplicates %v, %v; want ann a duplicate", res.Delivered, res.Duplicates, err)
	}
	e.wantItem("after the retry", ann, second.ID, 2, []string{"carol", "bob"}, []string{first.ID}, false)
}

// testAggregateBadInput: an invalid key, a key with a thread, a
// scheduled aggregated message, a broadcast or group message with one
// are refused with a typed error and write nothing; a key that is a
// chat's thread, or whose item is of another category, is ErrConflict
// for that user, and writes nothing for her.
func testAggregateBadInput(e *env) {
	ann := e.user("ann")
	e.like("bob", "ann")
	e.publish(inbox.Draft{Thread: "chat-1", Sender: "bob", Title: "hi"}, "ann")
	before := e.snapshot()
	for _, c := range []struct {
		name string
		call func() error
		want error
	}{
		{"invalid key", func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Aggregate: "a#b", Title: "x"})
			return err
		}, inbox.ErrInvalidKey},
		{"with a thread", func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Aggregate: "k", Thread: "t", Title: "x"})
			return err
		}, inbox.ErrInvalidInput},
		{"scheduled", func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Aggregate: "k", DeliverAt: e.clock.Now().Add(time.Hour), Title: "x"})
			return err
		}, inbox.ErrInvalidInput},
		{"sender not a key", func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Aggregate: "k", Sender: "a#b", Title: "x"})
			return err
		}, inbox.ErrInvalidKey},
		{"negative window", func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Aggregate: "k", AggregateWindow: -time.Second, Title: "x"})
			return err
		}, inbox.ErrInvalidInput},
		{"a maximum without a key", func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{AggregateMax: 3, Title: "x"})
			return err
		}, inbox.ErrInvalidInput},
		{"broadcast", func() error {
			_, err := e.ib.Broadcast(e.ctx, e.scope, inbox.Draft{Aggregate: "k", Title: "x"})
			return err
		}, inbox.ErrInvalidInput},
		{"group message", func() error {
			_, err := e.ib.BroadcastGroup(e.ctx, e.scope, "team", inbox.Draft{Aggregate: "k", Title: "x"})
			return err
		}, inbox.ErrInvalidInput},
		{"a chat's thread", func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Aggregate: "chat-1", Title: "x"})
			return err
		}, inbox.ErrConflict},
		{"another category", func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Aggregate: "post-1", Category: "other", Title: "x"})
			return err
		}, inbox.ErrConflict},
	} {
		if err := c.call(); !errors.Is(err, c.want) {
			e.t.Errorf("%s: %v; want %v", c.name, err, c.want)
		}
	}
	e.wantUnchanged("after the refused publishes", before)
	e.wantCountsFromFeed(ann)
}

// testAggregateConcurrent: likes published at once, to two users, each
// join the item once: every user's item counts them all, with every
// sender, and her feed holds one item.
func testAggregateConcurrent(e *env) {
	const n = 8
	ann, bob := e.user("ann"), e.user("bob")
	e.clock.Advance(time.Second)
	ids := make([]string, n)
	parallel(n, func(i int) {
		res, err := e.ib.Publish(e.ctx, e.scope, []string{"ann", "bob"}, inbox.Draft{Aggregate: "post-1", Sender: fmt.Sprintf("u%d", i), Category: "likes", Title: "like"})
		if err != nil {
			e.t.Errorf("concurrent like %d: %v", i, err)
			return
		}
		ids[i] = res.Message.ID
	})
	for _, u := range []driver.User{ann, bob} {
		e.active(driver.Message{}, "", partitionOf(u))
		feed := e.listAll(u, inbox.ListOptions{})
		if len(feed) != 1 || feed[0].Count != n || len(feed[0].Senders) != n || len(feed[0].Members) != n-1 {
			e.t.Fatalf("%s's feed after %d concurrent likes: %d items, %+v; want one item of %d", u.ID, n, len(feed), feed, n)
		}
		got := append([]string{feed[0].ID}, feed[0].Members...)
		slices.Sort(got)
		want := slices.Clone(ids)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			e.t.Errorf("%s's item: messages %v; want %v", u.ID, got, want)
		}
		e.wantCountsFromFeed(u)
	}
}

// testAggregateSenders: an item keeps MaxAggregateSenders distinct
// senders; a like from another sender then starts a new item, and one
// from a sender it has joins it. Members keep the latest
// MaxAggregateMembers IDs while Count counts every like.
func testAggregateSenders(e *env) {
	ann := e.user("ann")
	var last driver.Message
	for i := range inbox.MaxAggregateSenders {
		last = e.like(fmt.Sprintf("u%02d", i), "ann").Message
	}
	for range 3 {
		last = e.like("u00", "ann").Message
	}
	if last.Count != inbox.MaxAggregateSenders+3 || len(last.Senders) != inbox.MaxAggregateSenders || len(last.Members) != inbox.MaxAggregateMembers || last.Senders[0] != "u00" {
		e.t.Errorf("the full item: count %d, %d senders (first %q), %d members; want %d, %d (u00), %d",
			last.Count, len(last.Senders), last.Senders[0], len(last.Members), inbox.MaxAggregateSenders+3, inbox.MaxAggregateSenders, inbox.MaxAggregateMembers)
	}
	next := e.like("new", "ann").Message
	if next.Count != 1 {
		e.t.Errorf("a like from a new sender to a full item: count %d, want 1 (a new item)", next.Count)
	}
	if feed := e.listAll(ann, inbox.ListOptions{}); len(feed) != 2 {
		e.t.Errorf("ann's feed: %d items, want 2", len(feed))
	}
	e.wantCountsFromFeed(ann)
}

// testAggregateEvents: a like that starts an item comes as created, one
// that joins it as aggregated, with the item's count and members, and the
// message it took in leaves with deleted.
func testAggregateEvents(e *env) {
	src, ib, events := e.eventInbox()
	ann := e.user("ann")
	a := e.like("bob", "ann").Message
	b := e.like("carol", "ann").Message
	if _, err := src.DeliverEvents(e.ctx, ib); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	type seen struct {
		kind  inbox.EventKind
		id    string
		count int
	}
	want := map[seen]bool{{inbox.EventCreated, a.ID, 1}: true, {inbox.EventAggregated, b.ID, 2}: true, {inbox.EventDeleted, a.ID, 1}: true}
	for _, ev := range events.take() {
		k := seen{ev.Kind, ev.Message.ID, ev.Message.Count}
		if !want[k] || ev.Partition != partitionOf(ann) {
			e.t.Errorf("event %s of %s (count %d) in %s: not expected", ev.Kind, k.id, k.count, ev.Partition.PK())
		}
		if ev.Kind == inbox.EventAggregated && !slices.Equal(ev.Message.Members, []string{a.ID}) {
			e.t.Errorf("aggregated event's members: %v, want [%s]", ev.Message.Members, a.ID)
		}
		delete(want, k)
	}
	for k := range want {
		e.t.Errorf("no event %s of %s (count %d)", k.kind, k.id, k.count)
	}
	e.wantCountsFromFeed(ann)
}

// testAggregateBounds: AggregateMax starts a new item once an item holds
// that many messages; AggregateWindow once its first message is that
// old. The item keeps its first message's ID (First); Counts counts each
// item once.
func testAggregateBounds(e *env) {
	ann := e.user("ann")
	pub := func(d inbox.Draft) driver.Message {
		e.t.Helper()
		e.clock.Advance(time.Second)
		return e.publish(d, "ann").Message
	}
	capped := inbox.Draft{Aggregate: "capped", Category: "likes", Sender: "bob", Title: "like", AggregateMax: 2}
	a, b, c := pub(capped), pub(capped), pub(capped)
	if a.Count != 1 || b.Count != 2 || b.First != a.ID || c.Count != 1 || c.First != "" {
		e.t.Errorf("AggregateMax 2: counts %d, %d, %d, b's first %q; want 1, 2, 1, a's %q", a.Count, b.Count, c.Count, b.First, a.ID)
	}
	daily := inbox.Draft{Aggregate: "daily", Category: "likes", Sender: "carol", Title: "like", AggregateWindow: time.Hour}
	d := pub(daily)
	e.clock.Advance(30 * time.Minute)
	f := pub(daily)
	e.clock.Advance(30 * time.Minute)
	g := pub(daily) // an hour and two seconds after d
	if f.Count != 2 || f.First != d.ID || g.Count != 1 {
		e.t.Errorf("AggregateWindow 1h: counts %d, %d (first %q); want 2 (first %q), then 1", f.Count, g.Count, f.First, d.ID)
	}
	feed := e.listAll(ann, inbox.ListOptions{})
	var ids []string
	for _, m := range feed {
		ids = append(ids, m.ID)
	}
	if want := []string{g.ID, f.ID, c.ID, b.ID}; !slices.Equal(ids, want) {
		e.t.Errorf("ann's feed %v, want %v", ids, want)
	} else if feed[1].First != d.ID || feed[3].First != a.ID || feed[0].First != "" {
		e.t.Errorf("the items' first messages as listed: %q, %q, %q; want %q, %q, none", feed[1].First, feed[3].First, feed[0].First, d.ID, a.ID)
	}
	e.wantCountsFromFeed(ann)
}

// testAggregatePosition: a like that joins an item her read position
// covers (MarkAllRead of the key's thread) takes it in as it reads, read
// by the position, and is unread itself; the counts equal List.
func testAggregatePosition(e *env) {
	ann := e.user("ann")
	e.like("bob", "ann")
	b := e.like("carol", "ann").Message
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "post-1"}); err != nil || n != 1 {
		e.t.Fatalf("MarkAllRead of the key's thread: %d, %v; want 1", n, err)
	}
	e.wantItem("read by her position", ann, b.ID, 2, []string{"carol", "bob"}, b.Members, true)
	c := e.like("dan", "ann").Message
	e.wantItem("a like after her position", ann, c.ID, 3, []string{"dan", "carol", "bob"}, []string{b.ID, b.Members[0]}, false)
	e.markRead(ann, c.ID, true)
	d := e.like("erin", "ann").Message
	e.wantItem("another like", ann, d.ID, 4, []string{"erin", "dan", "carol", "bob"}, []string{c.ID, b.ID, b.Members[0]}, false)
}

// testAggregateOwn: ann's own message of a key (she is its sender) leaves
// her item as read as it was: unread while bob's like in it is unread,
// read once she read it; alone, it is read.
func testAggregateOwn(e *env) {
	ann := e.user("ann")
	own := e.like("ann", "ann").Message
	e.wantItem("her own like alone", ann, own.ID, 1, []string{"ann"}, nil, true)
	b := e.like("bob", "ann").Message
	c := e.like("ann", "ann").Message
	e.wantItem("her own like after bob's unread one", ann, c.ID, 3, []string{"ann", "bob"}, []string{b.ID, own.ID}, false)
	e.markRead(ann, c.ID, true)
	d := e.like("ann", "ann").Message
	e.wantItem("her own like after she read the item", ann, d.ID, 4, []string{"ann", "bob"}, []string{c.ID, b.ID, own.ID}, true)
}

package storetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// inboxTests are the Inbox subtests of Run: an inbox.Inbox's behaviour over
// the store.
func inboxTests() []suiteTest {
	return []suiteTest{
		{"Publish", testPublish},
		{"Broadcast", testBroadcast},
		{"ListMerge", testListMerge},
		{"Pagination", testPagination},
		{"PaginationWhilePublishing", testPaginationWhilePublishing},
		{"Filters", testFilters},
		{"Expiry", testExpiry},
		{"Get", testGet},
		{"MarkRead", testMarkRead},
		{"MarkAllRead", testMarkAllRead},
		{"Counts", testCounts},
		{"Recount", testRecount},
		{"HostSystemID", testHostSystemID},
		{"HostSystemIDConflict", testHostSystemIDConflict},
		{"TTL", testTTL},
		{"BadInput", testBadInput},
	}
}

// allInboxTests are the Inbox subtests of Run.
func allInboxTests() []suiteTest {
	return append(append(append(append(append(append(append(append(append(append(append(append(append(append(append(append(append(append(append(inboxTests(), removalTests()...), groupTests()...), stateInboxTests()...), eventTests()...), threadTests()...), isolatedTests()...), bulkTests()...), scheduledTests()...), snoozeTests()...), viewTests()...), senderTests()...), readByTests()...), muteTests()...), muteCategoryTests()...), optOutTests()...), muteThreadTests()...), positionInboxTests()...), rvPositionTests()...), aggregateTests()...)
}

// visibleIn applies List's options to msgs (a feed, newest first).
func visibleIn(msgs []driver.Message, o inbox.ListOptions) []driver.Message {
	var out []driver.Message
	for _, m := range msgs {
		if (o.Category == "" || m.Category == o.Category) && (!o.UnreadOnly || !m.IsRead()) {
			out = append(out, m)
		}
	}
	return out
}

// testPublish: a publish to several users stores one copy per user under
// one shared ID, in their partitions only, and counts it for each.
func testPublish(e *env) {
	d := inbox.Draft{Sender: "admin", Label: "ops", Category: "billing", Title: "Invoice", Body: "due", CTAURI: "https://example.com/i"}
	res := e.publish(d, "ann", "bob", "ann")
	if fmt.Sprint(res.Delivered) != "[ann bob]" || res.Duplicates != nil || res.Failed != nil {
		e.t.Errorf("Publish to ann, bob, ann: delivered %v, duplicates %v, failed %v; want [ann bob], none, none", res.Delivered, res.Duplicates, res.Failed)
	}
	m := res.Message
	if err := driver.ValidateMessageID(m.ID); err != nil {
		e.t.Errorf("published ID: %v", err)
	}
	for _, u := range []string{"ann", "bob"} {
		e.wantRecords(u+"'s copy", []driver.Record{{Partition: e.part(u), Message: copyFor(m, u), Entry: someEntry}}, e.records(e.part(u)))
	}
	e.wantRecords("public partition after Publish", nil, e.records(e.pub()))
	e.wantRecords("carol's partition", nil, e.records(e.part("carol")))

	m2 := e.publish(inbox.Draft{Title: "second"}, "bob").Message
	if m2.ID <= m.ID {
		e.t.Errorf("second publish's ID %s is not above the first's %s", m2.ID, m.ID)
	}
	e.wantFeed(e.user("ann"), inbox.ListOptions{}, copyFor(m, "ann"))
	e.wantFeed(e.user("bob"), inbox.ListOptions{}, copyFor(m2, "bob"), copyFor(m, "bob"))
	e.wantCounts(e.user("ann"), inbox.Counts{Tally: tallyOf(1, 0), Categories: map[string]inbox.Tally{"billing": tallyOf(1, 0)}})
	e.wantCounts(e.user("bob"), inbox.Counts{Tally: tallyOf(2, 0), Categories: map[string]inbox.Tally{"billing": tallyOf(1, 0)}})
	e.wantCounts(e.user("carol"), inbox.Counts{})
}

// testBroadcast: a broadcast is stored once, in the public partition, and
// appears in every user's feed and counts, including users who have
// nothing else.
func testBroadcast(e *env) {
	b := e.broadcast(inbox.Draft{Category: "news", Title: "Maintenance at 22:00", Body: map[string]any{"window": "2h"}})
	if !b.IsBroadcast() {
		e.t.Errorf("broadcast message has audience %+v", b.Audience)
	}
	e.wantRecords("public partition", []driver.Record{{Partition: e.pub(), Message: b, Entry: someEntry}}, e.records(e.pub()))
	for _, u := range []string{"ann", "bob", "carol"} {
		e.wantRecords(u+"'s partition", nil, e.records(e.part(u)))
		e.wantFeed(e.user(u), inbox.ListOptions{}, b)
		e.wantCounts(e.user(u), inbox.Counts{Tally: tallyOf(1, 0), Categories: map[string]inbox.Tally{"news": tallyOf(1, 0)}})
	}
	other := e.userIn(driver.Scope{Tenant: e.scope.Tenant, Inbox: "other"}, "ann")
	e.wantFeed(other, inbox.ListOptions{})
	e.wantCounts(other, inbox.Counts{})
}

// testListMerge: List merges a user's messages with the broadcasts newest
// first, each broadcast read or unread by the user's own receipt.
func testListMerge(e *env) {
	ann, bob, carol := e.user("ann"), e.user("bob"), e.user("carol")
	d1 := e.publish(inbox.Draft{Title: "d1", Category: "billing"}, "ann", "bob").Message
	b1 := e.broadcast(inbox.Draft{Title: "b1", Category: "news"})
	d2 := e.publish(inbox.Draft{Title: "d2"}, "ann").Message
	b2 := e.broadcast(inbox.Draft{Title: "b2"})
	d3 := e.publish(inbox.Draft{Title: "d3", Category: "billing"}, "bob").Message
	e.clock.Advance(time.Minute)
	at := e.clock.Now()
	e.markRead(ann, b1.ID, true)
	e.markRead(bob, d1.ID, true)

	annFeed := []driver.Message{b2, copyFor(d2, "ann"), read(b1, at), copyFor(d1, "ann")}
	bobFeed := []driver.Message{copyFor(d3, "bob"), b2, b1, read(copyFor(d1, "bob"), at)}
	for _, limit := range []int{0, 1, 2, 3} {
		e.wantFeed(ann, inbox.ListOptions{Limit: limit}, annFeed...)
		e.wantFeed(bob, inbox.ListOptions{Limit: limit}, bobFeed...)
		e.wantFeed(carol, inbox.ListOptions{Limit: limit}, b2, b1)
	}
}

// buildFeed publishes a mixed feed for ann (messages to her alone and to
// her and bob, broadcasts, three categories), marks some read, and returns
// ann's feed newest first.
func (e *env) buildFeed(n int) []driver.Message {
	e.t.Helper()
	ann := e.user("ann")
	cats := []string{"billing", "", "news"}
	var feed []driver.Message
	for i := range n {
		d := inbox.Draft{Title: fmt.Sprintf("m%d", i), Category: cats[i%3]}
		var m driver.Message
		switch i % 4 {
		case 0, 2:
			m = copyFor(e.publish(d, "ann").Message, "ann")
		case 1:
			m = copyFor(e.publish(d, "bob", "ann").Message, "ann")
		case 3:
			m = e.broadcast(d)
		}
		if i%5 == 1 || i%7 == 3 {
			e.markRead(ann, m.ID, true)
			m = read(m, e.clock.Now())
		}
		feed = append([]driver.Message{m}, feed...)
		if i%6 == 5 {
			e.clock.Advance(time.Second)
		}
	}
	return feed
}

// testPagination: paging with small page sizes, with and without filters,
// returns every message once, newest first.
func testPagination(e *env) {
	feed := e.buildFeed(17)
	ann := e.user("ann")
	for limit := 1; limit <= 5; limit++ {
		for _, o := range []inbox.ListOptions{{}, {UnreadOnly: true}, {Category: "billing"}, {Category: ""}, {Category: "news", UnreadOnly: true}} {
			o.Limit = limit
			e.wantFeed(ann, o, visibleIn(feed, o)...)
		}
	}
	e.wantFeed(ann, inbox.ListOptions{Limit: inbox.MaxPageSize}, feed...)
}

// testPaginationWhilePublishing: messages published or broadcast between
// pages neither show up in the later pages nor shift them: the listing
// started is completed without a gap or a repeat, and a new listing shows
// the new messages first.
func testPaginationWhilePublishing(e *env) {
	feed := e.buildFeed(10)
	ann := e.user("ann")
	for _, limit := range []int{1, 3} {
		for _, o := range []inbox.ListOptions{{Limit: limit}, {Limit: limit, UnreadOnly: true}} {
			want := visibleIn(feed, o)
			var got, added []driver.Message
			for page := 0; ; page++ {
				p, err := e.ib.List(e.ctx, ann, o)
				if err != nil {
					e.t.Fatalf("List: %v", err)
				}
				got = append(got, p.Messages...)
				if p.Cursor == "" || page > 100 {
					break
				}
				o.Cursor = p.Cursor
				added = append([]driver.Message{copyFor(e.publish(inbox.Draft{Title: "between pages"}, "ann").Message, "ann")}, added...)
				if page%2 == 0 {
					added = append([]driver.Message{e.broadcast(inbox.Draft{Title: "broadcast between pages"})}, added...)
				}
			}
			e.wantMessages(fmt.Sprintf("pages of %d (unread only %v) while publishing", limit, o.UnreadOnly), want, got)
			feed = append(added, feed...)
			o.Cursor = ""
			e.wantFeed(ann, o, visibleIn(feed, o)...)
		}
	}
}

// testFilters: the category and unread-only filters, alone and together,
// on a short feed; a category without messages lists nothing.
func testFilters(e *env) {
	feed := e.buildFeed(8)
	ann := e.user("ann")
	for _, o := range []inbox.ListOptions{
		{Category: "billing"}, {Category: "news"}, {UnreadOnly: true},
		{Category: "billing", UnreadOnly: true}, {Category: "news", UnreadOnly: true},
	} {
		want := visibleIn(feed, o)
		if len(want) == 0 || len(want) == len(feed) {
			e.t.Fatalf("test setup: filter %+v keeps %d of %d messages", o, len(want), len(feed))
		}
		e.wantFeed(ann, o, want...)
	}
	p, err := e.ib.List(e.ctx, ann, inbox.ListOptions{Category: "nothing-here"})
	if err != nil || len(p.Messages) != 0 || p.Cursor != "" {
		e.t.Errorf("List(category without messages): %d messages, cursor %q, %v; want none, \"\", nil", len(p.Messages), p.Cursor, err)
	}
}

// testExpiry: a message is hidden from List and MarkRead is ErrNotFound
// from the second it expires, read or not, direct or broadcast, whether or
// not the store has deleted it yet.
func testExpiry(e *env) {
	ann, bob := e.user("ann"), e.user("bob")
	d1 := copyFor(e.publish(inbox.Draft{Title: "d1 1h", TTL: time.Hour}, "ann").Message, "ann")
	d2 := copyFor(e.publish(inbox.Draft{Title: "d2 3h", TTL: 3 * time.Hour, Category: "billing"}, "ann").Message, "ann")
	d3 := copyFor(e.publish(inbox.Draft{Title: "d3 1h read", TTL: time.Hour}, "ann").Message, "ann")
	b1 := e.broadcast(inbox.Draft{Title: "b1 1h", TTL: time.Hour})
	b2 := e.broadcast(inbox.Draft{Title: "b2 2h read", TTL: 2 * time.Hour, Category: "news"})
	at := e.clock.Now()
	e.markRead(ann, d3.ID, true)
	e.markRead(ann, b2.ID, true)
	d3, b2r := read(d3, at), read(b2, at)

	e.clock.Advance(time.Hour - time.Second)
	e.wantFeed(ann, inbox.ListOptions{}, b2r, b1, d3, d2, d1)
	e.wantFeed(bob, inbox.ListOptions{}, b2, b1)

	e.clock.Advance(time.Second) // d1, d3 and b1 expire now
	e.wantFeed(ann, inbox.ListOptions{}, b2r, d2)
	e.wantFeed(ann, inbox.ListOptions{Limit: 1, UnreadOnly: true}, d2)
	e.wantFeed(bob, inbox.ListOptions{Limit: 1}, b2)
	notFound := func(u driver.User, id, what string) {
		e.t.Helper()
		if changed, err := e.ib.MarkRead(e.ctx, u, id); !errors.Is(err, driver.ErrNotFound) {
			e.t.Errorf("MarkRead(%s, %s): got %v, %v; want ErrNotFound", u.ID, what, changed, err)
		}
	}
	notFound(ann, d1.ID, "expired unread message")
	notFound(ann, d3.ID, "expired read message")
	notFound(ann, b1.ID, "expired unread broadcast")
	notFound(bob, b1.ID, "expired unread broadcast")

	e.clock.Advance(time.Hour) // b2 expires
	notFound(ann, b2.ID, "expired broadcast ann read")
	notFound(bob, b2.ID, "expired broadcast")
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{}); n != 1 || err != nil {
		e.t.Errorf("MarkAllRead(ann) with one unexpired unread message: %d, %v; want 1, nil", n, err)
	}
	e.wantFeed(ann, inbox.ListOptions{}, read(d2, e.clock.Now()))
	e.wantFeed(bob, inbox.ListOptions{})
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)

	e.clock.Advance(time.Hour) // everything expired
	e.wantFeed(ann, inbox.ListOptions{})
	notFound(ann, d2.ID, "expired read message")
}

// wantCountsFromFeed checks that u's Counts are exactly what u's whole
// feed shows: the total, read and unread messages listed, overall and per
// category, the archived ones, and the unread ones above u's watermark.
func (e *env) wantCountsFromFeed(u driver.User) {
	e.t.Helper()
	feed := e.listAll(u, inbox.ListOptions{Limit: inbox.MaxPageSize})
	archived := e.listAll(u, inbox.ListOptions{Limit: inbox.MaxPageSize, Archived: true})
	seen, marked := e.seen[partitionOf(u)]
	want := countsOf(feed, archived, seen)
	want.Snoozed = int64(len(e.listAll(u, inbox.ListOptions{Limit: inbox.MaxPageSize, Snoozed: true})))
	if !marked {
		want = allUnseen(want)
	}
	if diff := cmp.Diff(want, e.counts(u)); diff != "" {
		e.t.Errorf("Counts(%s) differ from what List shows (-List +Counts):\n%s", u.ID, diff)
	}
	e.wantThreadsFromFeed(u)
}

// allUnseen returns c with every unread message unseen, overall and in
// each category: the counts of a user without a seen watermark.
func allUnseen(c inbox.Counts) inbox.Counts {
	c.Unseen = c.Unread
	for cat, t := range c.Categories {
		t.Unseen = t.Unread
		c.Categories[cat] = t
	}
	return c
}

// countsOf tallies listed messages as Counts should: feed (unarchived),
// archived, and the watermark seen; the unread messages listed muted
// count in Muted, not in Unread or Unseen.
func countsOf(feed, archived []driver.Message, seen string) inbox.Counts {
	sum := map[string]*inbox.Tally{"": {}}
	add := func(m driver.Message, f func(t *inbox.Tally)) {
		cats := []string{""}
		if m.Category != "" {
			cats = append(cats, m.Category)
		}
		for _, c := range cats {
			if sum[c] == nil {
				sum[c] = &inbox.Tally{}
			}
			f(sum[c])
		}
	}
	out := inbox.Counts{Categories: map[string]inbox.Tally{}}
	for _, m := range feed {
		add(m, func(t *inbox.Tally) {
			t.Total++
			switch {
			case m.IsRead():
				t.Read++
			case m.Muted:
				t.Muted++
			default:
				t.Unread++
			}
		})
		if !m.IsRead() && !m.Muted && m.ID > seen {
			add(m, func(t *inbox.Tally) { t.Unseen++ })
		}
	}
	for _, m := range archived {
		add(m, func(t *inbox.Tally) { t.Archived++ })
	}
	for c, t := range sum {
		if c == "" {
			out.Tally = *t
		} else {
			out.Categories[c] = *t
		}
	}
	return out
}

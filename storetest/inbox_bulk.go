package storetest

import (
	"errors"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// bulkTests are the Inbox subtests about actions on a whole view.
func bulkTests() []suiteTest {
	return []suiteTest{
		{"ArchiveAllAndDeleteAll", testArchiveAllAndDeleteAll},
		{"BulkBadInput", testBulkBadInput},
	}
}

// testArchiveAllAndDeleteAll: ArchiveAll archives exactly what the view
// shows (category, thread, up to the newest message shown), direct
// messages, broadcasts and group messages, read or not, in pages larger
// than one atomic unit; DeleteAll of the archived view empties it; the
// counts and threads agree with List after each, and the messages of
// other views are left alone.
func testArchiveAllAndDeleteAll(e *env) {
	ann := e.member("ann", "admins")
	var billing []string
	for i := range driver.MaxMarkBatch + 3 {
		switch i % 3 {
		case 0:
			billing = append(billing, e.publish(inbox.Draft{Title: "invoice", Category: "billing", Thread: "acct"}, "ann", "bob").Message.ID)
		case 1:
			billing = append(billing, e.broadcast(inbox.Draft{Title: "price change", Category: "billing"}).ID)
		default:
			billing = append(billing, e.broadcastTo("admins", inbox.Draft{Title: "budget", Category: "billing", Thread: "acct"}).ID)
		}
		e.clock.Advance(time.Second)
	}
	e.markRead(ann, billing[0], true)
	news := e.publish(inbox.Draft{Title: "news", Category: "news"}, "ann").Message.ID
	e.clock.Advance(time.Second)
	e.wantCountsFromFeed(ann)

	// The view ann saw stopped at the newest billing message: one that
	// arrives after stays.
	upTo := billing[len(billing)-1]
	late := e.publish(inbox.Draft{Title: "late invoice", Category: "billing"}, "ann").Message.ID
	n, err := e.ib.ArchiveAll(e.ctx, ann, inbox.ListOptions{Category: "billing", UpTo: upTo})
	if err != nil || n != len(billing) {
		e.t.Fatalf("ArchiveAll(billing) = %d, %v; want %d", n, err, len(billing))
	}
	e.wantCountsFromFeed(ann)
	feed := e.listAll(ann, inbox.ListOptions{})
	if len(feed) != 2 || feed[0].ID != late || feed[1].ID != news {
		e.t.Errorf("feed after ArchiveAll(billing): %v, want the late invoice and the news", ids(feed))
	}
	archived := e.listAll(ann, inbox.ListOptions{Archived: true})
	if len(archived) != len(billing) || !archived[len(archived)-1].IsRead() || archived[0].IsRead() {
		e.t.Errorf("archived after ArchiveAll: %d messages (first read %v), want %d with their read states", len(archived), archived[len(archived)-1].IsRead(), len(billing))
	}
	// bob's copies are his.
	if c := e.counts(e.user("bob")); c.Archived != 0 {
		e.t.Errorf("bob's counts after ann's ArchiveAll: %+v", c)
	}
	// Again: nothing left to archive.
	if n, err := e.ib.ArchiveAll(e.ctx, ann, inbox.ListOptions{Category: "billing", UpTo: upTo}); err != nil || n != 0 {
		e.t.Errorf("ArchiveAll again = %d, %v; want 0", n, err)
	}

	// Empty the archive of one thread, then all of it.
	n, err = e.ib.DeleteAll(e.ctx, ann, inbox.ListOptions{Archived: true, Thread: "acct"})
	want := 0
	for _, m := range archived {
		if m.Thread == "acct" {
			want++
		}
	}
	if err != nil || n != want || want == 0 {
		e.t.Errorf("DeleteAll(archived, acct) = %d, %v; want %d", n, err, want)
	}
	e.wantCountsFromFeed(ann)
	n, err = e.ib.DeleteAll(e.ctx, ann, inbox.ListOptions{Archived: true})
	if err != nil || n == 0 {
		e.t.Errorf("DeleteAll(archived) = %d, %v", n, err)
	}
	e.wantCountsFromFeed(ann)
	if left := e.listAll(ann, inbox.ListOptions{Archived: true}); len(left) != 0 {
		e.t.Errorf("archive after DeleteAll: %v", ids(left))
	}
	if feed := e.listAll(ann, inbox.ListOptions{}); len(feed) != 2 {
		e.t.Errorf("feed after emptying the archive: %v, want the late invoice and the news", ids(feed))
	}
	e.checkInvariant()
}

// ids returns the IDs of msgs.
func ids(msgs []driver.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.ID)
	}
	return out
}

// testBulkBadInput: ArchiveAll of the archived view, a bad filter, a bad
// user or a bad cursor-free UpTo is refused and changes nothing.
func testBulkBadInput(e *env) {
	ann := e.user("ann")
	e.publish(inbox.Draft{Title: "x", Category: "c"}, "ann")
	cases := []struct {
		name string
		call func() (int, error)
		want error
	}{
		{"archive the archive", func() (int, error) { return e.ib.ArchiveAll(e.ctx, ann, inbox.ListOptions{Archived: true}) }, inbox.ErrInvalidInput},
		{"archive a bad category", func() (int, error) { return e.ib.ArchiveAll(e.ctx, ann, inbox.ListOptions{Category: "a#b"}) }, inbox.ErrInvalidKey},
		{"delete a bad thread", func() (int, error) { return e.ib.DeleteAll(e.ctx, ann, inbox.ListOptions{Thread: "a\nb"}) }, inbox.ErrInvalidKey},
		{"delete up to a bad ID", func() (int, error) { return e.ib.DeleteAll(e.ctx, ann, inbox.ListOptions{UpTo: "yesterday"}) }, inbox.ErrInvalidInput},
		{"archive for a bad user", func() (int, error) {
			return e.ib.ArchiveAll(e.ctx, driver.User{Scope: e.scope, ID: "$public"}, inbox.ListOptions{})
		}, inbox.ErrInvalidKey},
	}
	for _, c := range cases {
		if n, err := c.call(); n != 0 || !errors.Is(err, c.want) {
			e.t.Errorf("%s: %d, %v; want 0, %v", c.name, n, err, c.want)
		}
	}
	e.wantCountsFromFeed(ann)
	if c := e.counts(ann); c.Total != 1 || c.Archived != 0 {
		e.t.Errorf("counts after refused bulk actions: %+v", c.Tally)
	}
}

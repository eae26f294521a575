package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// bulkTests are the Inbox subtests about actions on a whole view.
func bulkTests() []suiteTest {
	return []suiteTest{
		{"ArchiveAllAndDeleteAll", testArchiveAllAndDeleteAll},
		{"BulkBadInput", testBulkBadInput},
		{"BulkKeepsToView", testBulkKeepsToView},
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

// testBulkKeepsToView: when another writer's change refuses a bulk
// action's batch (ErrStateChanged), the action changes each message alone
// only if it is still in the view: emptying the archive keeps a message
// just unarchived, clearing the inbox archives no message just snoozed,
// marking all read leaves a message just archived unread, for a direct
// message, a broadcast and a group message alike; a change between the
// single write's read and its write has the message read again.
func testBulkKeepsToView(e *env) {
	ann := e.member("ann", "admins")
	race := &markRace{Store: e.store}
	ib := inbox.New(race, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0))
	round := 0
	// three publishes a direct message, a broadcast and a group message, of
	// a category of their own.
	three := func() (string, []string) {
		round++
		cat := fmt.Sprintf("c%d", round)
		ids := []string{
			e.publish(inbox.Draft{Title: "direct", Category: cat}, "ann").Message.ID,
			e.broadcast(inbox.Draft{Title: "everyone", Category: cat}).ID,
			e.broadcastTo("admins", inbox.Draft{Title: "group", Category: cat}).ID,
		}
		e.clock.Advance(time.Second)
		return cat, ids
	}
	// racing returns a change, for markRace, that calls op on id for ann
	// and wants it to change the message.
	racing := func(name string, op func(context.Context, driver.User, string) (bool, error), id *string) func([]driver.Mark) {
		return func(marks []driver.Mark) {
			for _, mk := range marks {
				if *id == "" && mk.Key.ID != "" {
					*id = mk.Key.ID // the first record marked (a watermark's fence names none)
				}
			}
			if ok, err := op(e.ctx, ann, *id); !ok || err != nil {
				e.t.Errorf("racing %s(%s) = %v, %v; want true, nil", name, *id, ok, err)
			}
		}
	}
	snooze := func(ctx context.Context, u driver.User, id string) (bool, error) {
		return e.ib.Snooze(ctx, u, id, e.clock.Now().Add(time.Hour))
	}
	// bulk runs call with the changes queued, and checks that they all ran
	// and that it reports want changes.
	bulk := func(what string, want int, call func() (int, error), changes ...func([]driver.Mark)) {
		e.t.Helper()
		race.race(changes...)
		n, err := call()
		if left := race.pending(); left != 0 {
			e.t.Errorf("%s: %d of the racing changes did not run", what, left)
		}
		if err != nil || n != want {
			e.t.Errorf("%s = %d, %v; want %d, nil", what, n, err, want)
		}
	}
	others := func(ids []string, k int) []string {
		return slices.Delete(slices.Clone(ids), k, k+1)
	}
	reversed := func(ids []string) []string {
		out := slices.Clone(ids)
		slices.Reverse(out)
		return out
	}
	for k, kind := range []string{"direct message", "broadcast", "group message"} {
		// Empty the archive while the user moves one back to the inbox.
		cat, ids := three()
		for _, id := range ids {
			if ok, err := e.ib.Archive(e.ctx, ann, id); !ok || err != nil {
				e.t.Fatalf("Archive(%s) = %v, %v", id, ok, err)
			}
		}
		bulk("DeleteAll(archived) racing Unarchive of a "+kind, 2, func() (int, error) {
			return ib.DeleteAll(e.ctx, ann, inbox.ListOptions{Archived: true, Category: cat})
		}, racing("Unarchive", e.ib.Unarchive, &ids[k]))
		e.wantIDs("the inbox after emptying the archive", e.listAll(ann, inbox.ListOptions{Category: cat}), ids[k:k+1], []bool{false})
		e.wantIDs("the archive after emptying it", e.listAll(ann, inbox.ListOptions{Category: cat, Archived: true}), nil, nil)

		// Clear the inbox while the user snoozes one.
		cat, ids = three()
		bulk("ArchiveAll racing Snooze of a "+kind, 2, func() (int, error) {
			return ib.ArchiveAll(e.ctx, ann, inbox.ListOptions{Category: cat})
		}, racing("Snooze", snooze, &ids[k]))
		snoozed := e.listAll(ann, inbox.ListOptions{Category: cat, Snoozed: true})
		e.wantIDs("the snoozed view after clearing the inbox", snoozed, ids[k:k+1], []bool{false})
		if len(snoozed) == 1 && snoozed[0].IsArchived() {
			e.t.Errorf("ArchiveAll archived the %s snoozed meanwhile", kind)
		}
		e.wantIDs("the archive after clearing the inbox", e.listAll(ann, inbox.ListOptions{Category: cat, Archived: true}), reversed(others(ids, k)), []bool{false, false})

		// Mark all read while the user archives one.
		cat, ids = three()
		bulk("MarkAllRead racing Archive of a "+kind, 2, func() (int, error) {
			return ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Category: cat})
		}, racing("Archive", e.ib.Archive, &ids[k]))
		e.wantIDs("the archive after marking all read", e.listAll(ann, inbox.ListOptions{Category: cat, Archived: true}), ids[k:k+1], []bool{false})
		e.wantIDs("the inbox after marking all read", e.listAll(ann, inbox.ListOptions{Category: cat}), reversed(others(ids, k)), []bool{true, true})
		e.wantCountsFromFeed(ann)
	}

	// A change that keeps the message in the view refuses the batch; the
	// user snoozes the message of the first single write between its read
	// and its write: it is read again, out of the view, and left alone.
	cat, _ := three()
	late, interacted := "", ""
	bulk("ArchiveAll racing MarkInteracted, then Snooze", 2, func() (int, error) {
		return ib.ArchiveAll(e.ctx, ann, inbox.ListOptions{Category: cat})
	}, racing("MarkInteracted", e.ib.MarkInteracted, &interacted), racing("Snooze", snooze, &late))
	if snoozed := e.listAll(ann, inbox.ListOptions{Category: cat, Snoozed: true}); len(snoozed) != 1 || snoozed[0].ID != late || snoozed[0].IsArchived() {
		e.t.Errorf("snoozed view after ArchiveAll: %v (archived: %v), want %s alone, not archived", ids(snoozed), len(snoozed) == 1 && snoozed[0].IsArchived(), late)
	}
	if archived := e.listAll(ann, inbox.ListOptions{Category: cat, Archived: true}); len(archived) != 2 {
		e.t.Errorf("archive after ArchiveAll: %v, want the two messages not snoozed", ids(archived))
	}
	e.wantCountsFromFeed(ann)
	e.checkInvariant()
}

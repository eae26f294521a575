package storetest

import (
	"fmt"
	"slices"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// muteThreadTests are the Inbox subtests of muting a thread of a user's
// direct messages (a one-to-one chat).
func muteThreadTests() []suiteTest {
	return []suiteTest{
		{"MuteThread", testMuteThread},
		{"MuteThreadRemovals", testMuteThreadRemovals},
		{"MuteThreadsOneBatch", testMuteThreadsOneBatch},
		{"MuteThreadsMarkSeen", testMuteThreadsMarkSeen},
	}
}

// muteThreads sets u's muted threads (nothing else muted) and checks what
// SetPreferences reports.
func (e *env) muteThreads(u driver.User, wantChanged bool, threads ...string) {
	e.t.Helper()
	changed, err := e.ib.SetPreferences(e.ctx, u, inbox.Preferences{MutedThreads: threads})
	if err != nil || changed != wantChanged {
		e.t.Fatalf("SetPreferences(%s, mute threads %v) = %v, %v; want %v, nil", u.ID, threads, changed, err, wantChanged)
	}
}

// threadIDs returns the IDs of the messages of u's thread t that u's
// feed, archived and snoozed views list.
func (e *env) threadIDs(u driver.User, t string) []string {
	var ids []string
	for _, o := range []inbox.ListOptions{{}, {Archived: true}, {Snoozed: true}} {
		o.Limit = inbox.MaxPageSize
		for _, m := range e.listAll(u, o) {
			if m.Thread == t && m.Audience.Kind != driver.AudienceGroup && m.Audience.Kind != driver.AudienceEveryone {
				ids = append(ids, m.ID)
			}
		}
	}
	return ids
}

// wantThreadMuted checks that u's views list the messages of her thread t
// muted, and no other (see wantMuted: her Counts, per category and
// Unseen, and her threads are what those views show), and that
// ListThreads shows t muted.
func (e *env) wantThreadMuted(u driver.User, t string) {
	e.t.Helper()
	e.wantMuted(u, e.threadIDs(u, t)...)
	for _, th := range listThreads(e.t, e.ctx, e.ib, u, inbox.MaxPageSize) {
		if th.Group == "" && th.Muted != (th.Thread == t) {
			e.t.Errorf("ListThreads(%s): thread %q muted %v", u.ID, th.Thread, th.Muted)
		}
	}
}

// testMuteThread: ann mutes her chat with bob (thread "bob"). Its
// messages, stored before and after, stay in her views marked muted, their
// unread in Muted, not in Unread or Unseen, overall and in each category,
// and ListThreads shows the chat muted, the instant SetPreferences
// returns; her other chat, and bob's copies, are not muted. Reads,
// archives and a watermark keep it exact; a recount keeps the
// mute's counts; unmuting gives the messages back as they stand.
func testMuteThread(e *env) {
	ann, bob := e.user("ann"), e.user("bob")
	var chat []driver.Message
	for i, cat := range []string{"chat", "chat", "billing"} {
		chat = append(chat, e.publish(inbox.Draft{Title: fmt.Sprint("bob ", i), Thread: "bob", Sender: "bob", Category: cat}, "ann", "bob").Message)
	}
	other := e.publish(inbox.Draft{Title: "carol", Thread: "carol", Sender: "carol", Category: "chat"}, "ann").Message
	e.markRead(ann, chat[0].ID, true)
	e.markSeen(ann)
	e.clock.Advance(time.Second)
	chat = append(chat, e.publish(inbox.Draft{Title: "bob 3", Thread: "bob", Sender: "bob", Category: "chat"}, "ann", "bob").Message)
	e.wantThreadMuted(ann, "")
	e.wantTally(ann, inbox.Tally{Total: 5, Read: 1, Unread: 4}, 1)

	e.muteThreads(ann, true, "bob")
	if p, err := e.ib.Preferences(e.ctx, ann); err != nil || !slices.Equal(p.MutedThreads, []string{"bob"}) {
		e.t.Errorf("Preferences(ann) = %+v, %v; want thread bob muted", p, err)
	}
	e.wantThreadMuted(ann, "bob")
	e.wantTally(ann, inbox.Tally{Total: 5, Read: 1, Unread: 1, Muted: 3}, 0)
	e.wantThreadMuted(bob, "")
	e.muteThreads(ann, false, "bob")

	// A message after the mute is muted too, with the marks of the others.
	later := e.publish(inbox.Draft{Title: "bob 4", Thread: "bob", Sender: "bob", Category: "billing"}, "ann", "bob").Message
	e.wantThreadMuted(ann, "bob")
	e.wantTally(ann, inbox.Tally{Total: 6, Read: 1, Unread: 1, Muted: 4}, 0)
	e.markRead(ann, later.ID, true)
	e.markRead(ann, chat[1].ID, true)
	if ok, err := e.ib.Archive(e.ctx, ann, chat[2].ID); err != nil || !ok {
		e.t.Fatalf("Archive(ann, %s) = %v, %v", chat[2].ID, ok, err)
	}
	e.wantThreadMuted(ann, "bob")
	e.wantTally(ann, inbox.Tally{Total: 5, Read: 3, Unread: 1, Muted: 1, Archived: 1}, 0)
	e.markSeen(ann)
	e.clock.Advance(time.Second)
	e.publish(inbox.Draft{Title: "bob 5", Thread: "bob", Sender: "bob", Category: "chat"}, "ann", "bob")
	e.publish(inbox.Draft{Title: "carol 2", Thread: "carol", Sender: "carol", Category: "chat"}, "ann")
	e.wantThreadMuted(ann, "bob")
	e.wantTally(ann, inbox.Tally{Total: 7, Read: 3, Unread: 2, Muted: 2, Archived: 1}, 1)

	// Muting another thread too, and a category: each counted once.
	e.setPreferences(ann, true, inbox.Preferences{MutedThreads: []string{"carol", "bob"}, MutedCategories: []string{"chat"}})
	e.wantMuted(ann, append(e.threadIDs(ann, "bob"), e.threadIDs(ann, "carol")...)...)
	e.wantTally(ann, inbox.Tally{Total: 7, Read: 3, Muted: 4, Archived: 1}, 0)
	e.setPreferences(ann, true, inbox.Preferences{MutedThreads: []string{"bob"}})
	e.wantThreadMuted(ann, "bob")

	// A recount finds the muted counts right, or sets them right.
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Fatalf("Recount(ann): %v", err)
	}
	e.wantThreadMuted(ann, "bob")
	e.wantTally(ann, inbox.Tally{Total: 7, Read: 3, Unread: 2, Muted: 2, Archived: 1}, 1)

	e.muteThreads(ann, true)
	e.wantThreadMuted(ann, "")
	e.wantTally(ann, inbox.Tally{Total: 7, Read: 3, Unread: 4, Archived: 1}, 2)
	_ = other
}

// testMuteThreadRemovals: a muted thread's messages that expire, are
// deleted, or whose removal waits for the stream (expired, or deleted
// behind the library's back, when the thread is muted) leave its muted
// count exactly once.
func testMuteThreadRemovals(e *env) {
	ann := e.user("ann")
	short := e.publish(inbox.Draft{Title: "short", Thread: "bob", Category: "chat", TTL: time.Minute}, "ann").Message
	e.publish(inbox.Draft{Title: "long", Thread: "bob", Category: "chat", TTL: time.Hour}, "ann")
	gone := e.publish(inbox.Draft{Title: "gone", Thread: "bob", Category: "billing", TTL: time.Hour}, "ann").Message
	// Unread and not muted: the muted count cannot hide in Unread's bound.
	e.publish(inbox.Draft{Title: "carol", Thread: "carol", Category: "chat", TTL: time.Hour}, "ann")
	h, harnessed := e.harness()
	if harnessed {
		// Deleted behind the library's back: its removal waits for the
		// stream, and the mute comes first.
		if _, err := h.Delete(e.ctx, driver.Key{Partition: e.part("ann"), ID: gone.ID}); err != nil {
			e.t.Fatalf("Delete(%s): %v", gone.ID, err)
		}
	} else if ok, err := e.ib.Delete(e.ctx, ann, gone.ID); err != nil || !ok {
		e.t.Fatalf("Delete(ann, %s) = %v, %v", gone.ID, ok, err)
	}
	e.muteThreads(ann, true, "bob")
	if harnessed {
		e.deliver(h)
	}
	e.wantThreadMuted(ann, "bob")
	e.wantTally(ann, inbox.Tally{Total: 3, Unread: 1, Muted: 2}, 1)
	e.clock.Advance(2 * time.Minute) // short expires: its removal may wait
	e.wantThreadMuted(ann, "bob")
	e.wantTally(ann, inbox.Tally{Total: 2, Unread: 1, Muted: 1}, 1)
	if harnessed {
		e.deliver(h)
	}
	e.wantThreadMuted(ann, "bob")
	e.wantTally(ann, inbox.Tally{Total: 2, Unread: 1, Muted: 1}, 1)
	del := e.publish(inbox.Draft{Title: "deleted", Thread: "bob", Category: "chat", TTL: time.Minute}, "ann").Message
	e.publish(inbox.Draft{Title: "expires", Thread: "bob", Category: "chat", TTL: time.Minute}, "ann")
	if ok, err := e.ib.Delete(e.ctx, ann, del.ID); err != nil || !ok {
		e.t.Fatalf("Delete(ann, %s) = %v, %v", del.ID, ok, err)
	}
	e.clock.Advance(2 * time.Minute)
	e.wantThreadMuted(ann, "bob")
	e.wantTally(ann, inbox.Tally{Total: 2, Unread: 1, Muted: 1}, 1)
	if harnessed {
		e.deliver(h)
		e.wantThreadMuted(ann, "bob")
	}
	e.muteThreads(ann, true)
	e.wantTally(ann, inbox.Tally{Total: 2, Unread: 2}, 2)
	_ = short
}

// testMuteThreadsOneBatch: ann mutes MaxMutedThreads chats, each with
// unread messages of a category above her watermark (none: no MarkSeen),
// and marks them all read, then archives them, a page of the whole feed
// at a time: each page changes the muted counters of as many threads as
// it fits, in one atomic unit, and her counts stay exact.
func testMuteThreadsOneBatch(e *env) {
	ann := e.user("ann")
	var threads []string
	for i := range driver.MaxMutedThreads {
		threads = append(threads, fmt.Sprintf("chat%02d", i))
	}
	for range 2 { // a page's messages each of another thread
		for _, t := range threads {
			e.publish(inbox.Draft{Title: t, Thread: t, Sender: t, Category: "chat"}, "ann")
		}
	}
	e.publish(inbox.Draft{Title: "other", Thread: "other", Sender: "other", Category: "chat"}, "ann")
	e.muteThreads(ann, true, threads...)
	e.wantTally(ann, inbox.Tally{Total: 41, Unread: 1, Muted: 40}, 1)
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{}); err != nil || n != 41 {
		e.t.Fatalf("MarkAllRead(ann) = %d, %v; want 41, nil", n, err)
	}
	e.wantTally(ann, inbox.Tally{Total: 41, Read: 41}, 0)
	e.wantMuted(ann, slices.Concat(func() [][]string {
		var ids [][]string
		for _, t := range threads {
			ids = append(ids, e.threadIDs(ann, t))
		}
		return ids
	}()...)...)
}

// testMuteThreadsMarkSeen: ann mutes MaxMutedThreads chats, each with
// unread messages of several categories above her watermark, and marks
// her feed seen: MarkSeen sets every muted thread's Above anew, in one
// atomic unit, and her counts stay exact.
func testMuteThreadsMarkSeen(e *env) {
	ann := e.user("ann")
	var threads []string
	for i := range driver.MaxMutedThreads {
		threads = append(threads, fmt.Sprintf("chat%02d", i))
	}
	for _, cat := range []string{"chat", "billing", "news", "ops", "promo"} {
		for _, t := range threads {
			e.publish(inbox.Draft{Title: t, Thread: t, Sender: t, Category: cat}, "ann")
		}
	}
	e.muteThreads(ann, true, threads...)
	e.wantTally(ann, inbox.Tally{Total: 100, Muted: 100}, 0)
	e.markSeen(ann)
	e.wantTally(ann, inbox.Tally{Total: 100, Muted: 100}, 0)
	e.muteThreads(ann, true)
	e.wantTally(ann, inbox.Tally{Total: 100, Unread: 100}, 0)
}

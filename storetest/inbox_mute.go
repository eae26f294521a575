package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// muteTests are the Inbox subtests of a user's preferences: muting a
// group.
func muteTests() []suiteTest {
	return []suiteTest{
		{"MuteGroup", testMuteGroup},
		{"MuteUnseen", testMuteUnseen},
		{"MuteExpiry", testMuteExpiry},
		{"MuteThreads", testMuteThreads},
		{"MuteMarkAllRead", testMuteMarkAllRead},
		{"MuteAcrossProcesses", testMuteAcrossProcesses},
		{"MuteBadInput", testMuteBadInput},
		{"MuteEvents", testMuteEvents},
		{"MuteRecount", testMuteRecount},
	}
}

// setMuted sets u's muted groups and checks what SetPreferences reports.
func (e *env) setMuted(u driver.User, wantChanged bool, groups ...string) {
	e.t.Helper()
	changed, err := e.ib.SetPreferences(e.ctx, u, inbox.Preferences{MutedGroups: groups})
	if err != nil || changed != wantChanged {
		e.t.Fatalf("SetPreferences(%s, mute %v) = %v, %v; want %v, nil", u.ID, groups, changed, err, wantChanged)
	}
}

// wantMuted checks that u's whole feed, archived and snoozed views list
// exactly the messages of muted (by ID) muted, that Get says the same of
// each, and that u's Counts and threads are what those views show (see
// wantCountsFromFeed).
func (e *env) wantMuted(u driver.User, muted ...string) {
	e.t.Helper()
	var listed []driver.Message
	for _, o := range []inbox.ListOptions{{Limit: 3}, {Archived: true}, {Snoozed: true}} {
		listed = append(listed, e.listAll(u, o)...)
	}
	for _, m := range listed {
		if m.Muted != slices.Contains(muted, m.ID) {
			e.t.Errorf("List(%s): message %s (group %q) muted %v, want %v", u.ID, m.ID, m.Audience.Group, m.Muted, !m.Muted)
		}
		if m.ArchivedAt.IsZero() && !m.Snoozed(e.clock.Now()) {
			got, err := e.ib.Get(e.ctx, u, m.ID)
			if err != nil || got.Muted != m.Muted {
				e.t.Errorf("Get(%s, %s): muted %v, %v; List says %v", u.ID, m.ID, got.Muted, err, m.Muted)
			}
		}
	}
	e.wantCountsFromFeed(u)
}

// wantTally checks the main figures of u's Counts.
func (e *env) wantTally(u driver.User, want inbox.Tally, unseen int64) {
	e.t.Helper()
	c := e.counts(u)
	if want.Unseen = unseen; c.Tally != want {
		e.t.Errorf("Counts(%s) = %+v, unseen %d; want %+v, unseen %d", u.ID, c.Tally, c.Unseen, want, unseen)
	}
}

// testMuteGroup: ann mutes devs. Its messages, stored before and after,
// stay in her views marked muted (List, the archived and snoozed views,
// Get) and their unread count in Muted, not in Unread or Unseen, overall
// and per category, the instant SetPreferences returns; reading one, or
// MarkAllRead of the whole feed (which acts on them as before), takes it
// out of Muted. Direct messages, everyone's broadcasts and the other
// group's messages are not muted, nor are devs' messages for bob, who is
// in devs too. Unmuting gives them back as they stand; setting the same
// preferences again reports no change; a mute of a group ann does not
// name changes nothing until she names it.
func testMuteGroup(e *env) {
	ann, bob := e.member("ann", "devs", "ops"), e.member("bob", "devs")
	d1 := e.publish(inbox.Draft{Title: "invoice", Category: "billing"}, "ann", "bob").Message
	d2 := e.publish(inbox.Draft{Title: "read", Category: "billing"}, "ann").Message
	e.markRead(ann, d2.ID, true)
	b := e.broadcast(inbox.Draft{Title: "release", Category: "news"})
	g1 := e.broadcastTo("devs", inbox.Draft{Title: "build red", Category: "build"})
	g2 := e.broadcastTo("devs", inbox.Draft{Title: "read one", Category: "build"})
	g3 := e.broadcastTo("devs", inbox.Draft{Title: "archived one"})
	g4 := e.broadcastTo("devs", inbox.Draft{Title: "snoozed one"})
	o1 := e.broadcastTo("ops", inbox.Draft{Title: "pager", Category: "build"})
	e.markRead(ann, g2.ID, true)
	if ok, err := e.ib.Archive(e.ctx, ann, g3.ID); err != nil || !ok {
		e.t.Fatalf("Archive(ann, %s) = %v, %v", g3.ID, ok, err)
	}
	if ok, err := e.ib.Snooze(e.ctx, ann, g4.ID, e.clock.Now().Add(time.Hour)); err != nil || !ok {
		e.t.Fatalf("Snooze(ann, %s) = %v, %v", g4.ID, ok, err)
	}
	e.wantMuted(ann)
	e.wantTally(ann, inbox.Tally{Total: 6, Read: 2, Unread: 4, Archived: 1}, 4)

	e.setMuted(ann, true, "devs")
	if p, err := e.ib.Preferences(e.ctx, ann); err != nil || !slices.Equal(p.MutedGroups, []string{"devs"}) {
		e.t.Errorf("Preferences(ann) = %v, %v; want [devs]", p.MutedGroups, err)
	}
	e.wantMuted(ann, g1.ID, g2.ID, g3.ID, g4.ID)
	e.wantTally(ann, inbox.Tally{Total: 6, Read: 2, Unread: 3, Muted: 1, Archived: 1}, 3)
	c := e.counts(ann)
	if want := (inbox.Tally{Total: 3, Read: 1, Unread: 1, Muted: 1, Unseen: 1}); c.Categories["build"] != want {
		e.t.Errorf("Counts(ann).Categories[build] = %+v, want %+v", c.Categories["build"], want)
	}
	e.wantMuted(bob)
	e.wantTally(bob, inbox.Tally{Total: 6, Unread: 6}, 6)
	e.setMuted(ann, false, "devs")

	// A message after the mute is muted too; reading one takes it out.
	g5 := e.broadcastTo("devs", inbox.Draft{Title: "build green", Category: "build"})
	e.wantTally(ann, inbox.Tally{Total: 7, Read: 2, Unread: 3, Muted: 2, Archived: 1}, 3)
	e.markRead(ann, g1.ID, true)
	e.wantMuted(ann, g1.ID, g2.ID, g3.ID, g4.ID, g5.ID)
	e.wantTally(ann, inbox.Tally{Total: 7, Read: 3, Unread: 3, Muted: 1, Archived: 1}, 3)

	// Unmuted, devs' unread come back as they stand.
	e.setMuted(ann, true)
	e.wantMuted(ann)
	e.wantTally(ann, inbox.Tally{Total: 7, Read: 3, Unread: 4, Archived: 1}, 4)

	// Muted again, MarkAllRead of the whole feed marks the muted too.
	e.setMuted(ann, true, "ops", "devs")
	e.wantMuted(ann, g1.ID, g2.ID, g3.ID, g4.ID, g5.ID, o1.ID)
	e.wantTally(ann, inbox.Tally{Total: 7, Read: 3, Unread: 2, Muted: 2, Archived: 1}, 2)
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{}); err != nil || n != 4 {
		e.t.Errorf("MarkAllRead(ann) = %d, %v; want 4 (%s, %s, %s, %s)", n, err, d1.ID, b.ID, g5.ID, o1.ID)
	}
	e.wantMuted(ann, g1.ID, g2.ID, g3.ID, g4.ID, g5.ID, o1.ID)
	e.wantTally(ann, inbox.Tally{Total: 7, Read: 7, Archived: 1}, 0)

	// A group ann mutes but does not name: nothing of it in her feed.
	outside := e.user("ann")
	e.wantMuted(outside)
	e.wantTally(outside, inbox.Tally{Total: 3, Read: 3}, 0)
}

// testMuteUnseen: Unseen leaves out the muted group's unread messages
// above ann's watermark, those her receipts mark (a read one, counted in
// her group's Above) and those they do not, with the shared cache off and
// on; unmuted, they are unseen again. (Counting Unseen over the whole
// feed, muted groups included, fails it.)
func testMuteUnseen(e *env) {
	for i, fresh := range []time.Duration{0, time.Hour} {
		e.t.Run(fmt.Sprintf("cache %v", fresh), func(t *testing.T) {
			e := e.withInbox(t, inbox.WithSharedCache(fresh))
			name, group := fmt.Sprint("ann", i), fmt.Sprint("devs", i)
			ann := e.member(name, group)
			for range 3 {
				e.publish(inbox.Draft{Title: "old"}, name)
			}
			e.broadcastTo(group, inbox.Draft{Title: "old devs"})
			e.clock.Advance(time.Second)
			e.markSeen(ann)
			e.clock.Advance(time.Second)
			e.publish(inbox.Draft{Title: "new"}, name)
			g1 := e.broadcastTo(group, inbox.Draft{Title: "new devs"})
			g2 := e.broadcastTo(group, inbox.Draft{Title: "new devs 2"})
			g3 := e.broadcastTo(group, inbox.Draft{Title: "new devs 3"})
			e.markRead(ann, g1.ID, true)
			e.wantTally(ann, inbox.Tally{Total: 8, Read: 1, Unread: 7}, 3)
			e.setMuted(ann, true, group)
			e.wantTally(ann, inbox.Tally{Total: 8, Read: 1, Unread: 4, Muted: 3}, 1)
			old := e.listAll(ann, inbox.ListOptions{})[4] // the old devs message
			e.wantMuted(ann, g1.ID, g2.ID, g3.ID, old.ID)
			// Her receipt of a muted message above the watermark moves
			// its group's Above: still out of Unseen.
			e.markRead(ann, g3.ID, true)
			e.wantTally(ann, inbox.Tally{Total: 8, Read: 2, Unread: 4, Muted: 2}, 1)
			e.setMuted(ann, true)
			e.wantTally(ann, inbox.Tally{Total: 8, Read: 2, Unread: 6}, 2)
			e.wantCountsFromFeed(ann)
		})
	}
}

// testMuteExpiry: a muted group's messages leave Total and Muted the
// moment they expire, before and after their removal is accounted.
func testMuteExpiry(e *env) {
	ann := e.member("ann", "devs")
	short := e.broadcastTo("devs", inbox.Draft{Title: "short", TTL: time.Minute, Category: "build"})
	e.broadcastTo("devs", inbox.Draft{Title: "read short", TTL: time.Minute})
	long := e.broadcastTo("devs", inbox.Draft{Title: "long", TTL: time.Hour})
	e.publish(inbox.Draft{Title: "direct", TTL: time.Minute}, "ann")
	e.markRead(ann, e.listAll(ann, inbox.ListOptions{})[2].ID, true)
	e.setMuted(ann, true, "devs")
	e.wantTally(ann, inbox.Tally{Total: 4, Read: 1, Unread: 1, Muted: 2}, 1)
	e.clock.Advance(2 * time.Minute)
	e.wantMuted(ann, long.ID)
	e.wantTally(ann, inbox.Tally{Total: 1, Muted: 1}, 0)
	if _, ok := e.counts(ann).Categories["build"]; ok {
		e.t.Errorf("Counts(ann) still has category build of %s, expired", short.ID)
	}
	if h, ok := e.harness(); ok {
		e.deliver(h)
		e.wantMuted(ann, long.ID)
		e.wantTally(ann, inbox.Tally{Total: 1, Muted: 1}, 0)
	}
}

// testMuteThreads: a muted group's chat shows muted in ListThreads, its
// unread in Tally.Muted (the sender's own message read, as ever), paged
// or whole; MarkAllRead of the chat marks its messages as before; the
// direct chat beside it is not muted.
func testMuteThreads(e *env) {
	ann, bob := e.member("ann", "devs"), e.member("bob", "devs")
	for i := range 3 {
		e.broadcastTo("devs", inbox.Draft{Title: fmt.Sprint("ci ", i), Thread: "ci", Sender: "bob"})
	}
	e.publish(inbox.Draft{Title: "hi", Thread: "dm", Sender: "bob"}, "ann", "bob")
	e.broadcastTo("devs", inbox.Draft{Title: "from ann", Thread: "ci", Sender: "ann"})
	e.setMuted(ann, true, "devs")
	threads := listThreads(e.t, e.ctx, e.ib, ann, 1)
	want := map[string]inbox.Thread{
		"devs/ci": {Muted: true, Tally: inbox.Tally{Total: 4, Read: 1, Muted: 3}},
		"/dm":     {Tally: inbox.Tally{Total: 1, Unread: 1}},
	}
	if len(threads) != len(want) {
		e.t.Errorf("ListThreads(ann): %d threads, want %d", len(threads), len(want))
	}
	for _, t := range threads {
		w := want[t.Group+"/"+t.Thread]
		if t.Muted != w.Muted || t.Tally != w.Tally || t.Latest.Muted != w.Muted {
			e.t.Errorf("ListThreads(ann): thread %s of %q: muted %v (latest %v), %+v; want muted %v, %+v", t.Thread, t.Group, t.Muted, t.Latest.Muted, t.Tally, w.Muted, w.Tally)
		}
	}
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "ci"}); err != nil || n != 3 {
		e.t.Errorf("MarkAllRead(ann, chat ci) = %d, %v; want 3", n, err)
	}
	e.wantTally(ann, inbox.Tally{Total: 5, Read: 4, Unread: 1}, 1)
	e.wantCountsFromFeed(ann)
}

// testMuteMarkAllRead: MarkAllRead of ann's feed marks the unread
// messages of a group she muted, below more of its messages she read
// (her own, in a chat) than one page reads: the pages that come back
// empty do not stop it, for her counts say the view still holds the
// muted ones.
func testMuteMarkAllRead(e *env) {
	ann := e.member("ann", "devs")
	var old []string
	for range 5 {
		old = append(old, e.broadcastTo("devs", inbox.Draft{Title: "old"}).ID)
	}
	for range 4*(driver.MaxMarkBatch+1) + 5 {
		e.broadcastTo("devs", inbox.Draft{Title: "mine", Thread: "ci", Sender: "ann"})
	}
	e.setMuted(ann, true, "devs")
	e.wantTally(ann, inbox.Tally{Total: 110, Read: 105, Muted: 5}, 0)
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{}); err != nil || n != len(old) {
		e.t.Errorf("MarkAllRead(ann) = %d, %v; want %d", n, err, len(old))
	}
	e.wantTally(ann, inbox.Tally{Total: 110, Read: 110}, 0)
}

// testMuteAcrossProcesses: two Inboxes (processes) over one store, each
// with the shared cache off or on, their snapshots read before the
// change: the instant one sets ann's preferences, the other's Counts,
// List, Get and ListThreads follow, exactly as its own List shows.
func testMuteAcrossProcesses(e *env) {
	for i, fresh := range []time.Duration{0, time.Hour} {
		e.t.Run(fmt.Sprintf("cache %v", fresh), func(t *testing.T) {
			one, other := e.withInbox(t, inbox.WithSharedCache(fresh)), e.withInbox(t, inbox.WithSharedCache(fresh))
			name, devs, ops := fmt.Sprint("ann", i), fmt.Sprint("devs", i), fmt.Sprint("ops", i)
			ann := one.member(name, devs, ops)
			one.publish(inbox.Draft{Title: "direct"}, name)
			one.broadcast(inbox.Draft{Title: "everyone"})
			g := one.broadcastTo(devs, inbox.Draft{Title: "devs", Thread: "ci"})
			o := one.broadcastTo(ops, inbox.Draft{Title: "ops"})
			one.wantCountsFromFeed(ann)
			other.wantCountsFromFeed(ann) // its snapshots, before the change
			one.setMuted(ann, true, devs)
			other.wantMuted(ann, g.ID)
			other.wantTally(ann, inbox.Tally{Total: 4 + int64(i), Unread: 3 + int64(i), Muted: 1}, 3+int64(i))
			other.setMuted(ann, true, ops) // the other process changes it
			one.wantMuted(ann, o.ID)
			other.wantMuted(ann, o.ID)
			one.wantTally(ann, inbox.Tally{Total: 4 + int64(i), Unread: 3 + int64(i), Muted: 1}, 3+int64(i))
		})
	}
}

// withInbox returns a copy of e for subtest t, with an Inbox of its own
// over e's store (another process), made with opts.
func (e *env) withInbox(t *testing.T, opts ...inbox.Option) *env {
	c := *e
	c.t, c.ctx = t, t.Context()
	c.ib = inbox.New(e.store, append([]inbox.Option{inbox.WithClock(e.clock.Now)}, opts...)...)
	return &c
}

// testMuteBadInput: an invalid group key, everyone's group, a group twice,
// more than MaxMutedGroups or an invalid user is refused with a typed
// error, and nothing is written.
func testMuteBadInput(e *env) {
	ann := e.member("ann", "devs")
	e.broadcastTo("devs", inbox.Draft{Title: "devs"})
	e.setMuted(ann, true, "devs")
	before := e.snapshot()
	var many []string
	for i := range inbox.MaxMutedGroups + 1 {
		many = append(many, fmt.Sprintf("g%d", i))
	}
	for _, c := range []struct {
		what   string
		u      driver.User
		groups []string
		want   error
	}{
		{"a group key with '#'", ann, []string{"ops", "a#b"}, inbox.ErrInvalidKey},
		{"an empty group key", ann, []string{""}, inbox.ErrInvalidKey},
		{"a group key of 129 bytes", ann, []string{string(make([]byte, driver.MaxKeyLen+1))}, inbox.ErrInvalidKey},
		{"everyone's group", ann, []string{driver.PublicGroup}, inbox.ErrInvalidKey},
		{"a group twice", ann, []string{"ops", "devs", "ops"}, inbox.ErrInvalidInput},
		{"more than MaxMutedGroups", ann, many, inbox.ErrInvalidInput},
		{"an invalid user", e.scope.User("").InGroups("devs"), []string{"ops"}, inbox.ErrInvalidKey},
	} {
		changed, err := e.ib.SetPreferences(e.ctx, c.u, inbox.Preferences{MutedGroups: c.groups})
		if !errors.Is(err, c.want) || changed {
			e.t.Errorf("SetPreferences with %s = %v, %v; want false, %v", c.what, changed, err, c.want)
		}
	}
	if _, err := e.ib.Preferences(e.ctx, e.scope.User("")); !errors.Is(err, inbox.ErrInvalidKey) {
		e.t.Errorf("Preferences of an invalid user: %v, want ErrInvalidKey", err)
	}
	e.wantUnchanged("SetPreferences with bad input", before)
	// The most groups a user can mute are taken.
	e.setMuted(ann, true, many[:inbox.MaxMutedGroups]...)
	if p, err := e.ib.Preferences(e.ctx, ann); err != nil || len(p.MutedGroups) != inbox.MaxMutedGroups {
		e.t.Errorf("Preferences(ann) = %d groups, %v; want %d", len(p.MutedGroups), err, inbox.MaxMutedGroups)
	}
	e.wantMuted(ann)
}

// testMuteEvents: each change of ann's preferences makes one
// EventPreferences in her partition, with the preferences as set; a call
// that changes nothing makes none.
func testMuteEvents(e *env) {
	src, ib, events := e.eventInbox()
	ann := e.member("ann", "devs")
	e.setMuted(ann, true, "ops", "devs")
	e.setMuted(ann, false, "devs", "ops")
	e.setMuted(ann, true)
	if _, err := src.DeliverEvents(e.ctx, ib); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	var got []string
	for _, ev := range events.take() {
		if ev.Kind != inbox.EventPreferences || ev.Partition != partitionOf(ann) || ev.Message.ID != "" {
			e.t.Errorf("event %+v, want a preferences event of ann", ev)
		}
		got = append(got, fmt.Sprint(ev.Preferences.MutedGroups))
	}
	if diff := cmp.Diff([]string{"[devs ops]", "[]"}, got); diff != "" {
		e.t.Errorf("preferences events (-want +got):\n%s", diff)
	}
}

// testMuteRecount: a recount that resets ann's counters keeps her
// preferences, and her counts stay muted.
func testMuteRecount(e *env) {
	ann := e.member("ann", "devs")
	g := e.broadcastTo("devs", inbox.Draft{Title: "devs"})
	e.publish(inbox.Draft{Title: "direct"}, "ann")
	e.setMuted(ann, true, "devs")
	// Counters off by one (as another program might leave them): the
	// recount resets them.
	if err := e.store.Mark(e.ctx, nil, []driver.Counter{{Partition: partitionOf(ann), Published: 1}}); err != nil {
		e.t.Fatalf("Mark(a counter change alone): %v", err)
	}
	c, err := e.ib.Recount(e.ctx, ann)
	if err != nil {
		e.t.Fatalf("Recount(ann): %v", err)
	}
	if want := (inbox.Tally{Total: 2, Unread: 1, Muted: 1, Unseen: 1}); c.Tally != want { // no watermark: the unread are unseen
		e.t.Errorf("Recount(ann) = %+v, want %+v", c.Tally, want)
	}
	if p, err := e.ib.Preferences(e.ctx, ann); err != nil || !slices.Equal(p.MutedGroups, []string{"devs"}) {
		e.t.Errorf("Preferences(ann) after a recount = %v, %v; want [devs]", p.MutedGroups, err)
	}
	e.wantMuted(ann, g.ID)
}

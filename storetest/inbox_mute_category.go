package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// muteCategoryTests are the Inbox subtests of muting a category, and of
// the per-category Unseen it takes out.
func muteCategoryTests() []suiteTest {
	return []suiteTest{
		{"CategoryUnseen", testCategoryUnseen},
		{"MuteCategory", testMuteCategory},
		{"MuteCategoryBadInput", testMuteCategoryBadInput},
	}
}

// setPreferences sets u's preferences to p and checks what
// SetPreferences reports.
func (e *env) setPreferences(u driver.User, wantChanged bool, p inbox.Preferences) {
	e.t.Helper()
	changed, err := e.ib.SetPreferences(e.ctx, u, p)
	if err != nil || changed != wantChanged {
		e.t.Fatalf("SetPreferences(%s, %+v) = %v, %v; want %v, nil", u.ID, p, changed, err, wantChanged)
	}
}

// wantCategoryUnseen checks the Unseen of u's Counts in each category of
// want (and nothing unseen in the others).
func (e *env) wantCategoryUnseen(u driver.User, want map[string]int64) {
	e.t.Helper()
	c := e.counts(u)
	for cat, t := range c.Categories {
		if t.Unseen != want[cat] {
			e.t.Errorf("Counts(%s).Categories[%s].Unseen = %d, want %d", u.ID, cat, t.Unseen, want[cat])
		}
	}
	for cat, n := range want {
		if _, ok := c.Categories[cat]; !ok && n != 0 {
			e.t.Errorf("Counts(%s) has no category %s, want %d unseen", u.ID, cat, n)
		}
	}
}

// testCategoryUnseen: Counts gives each category's Unseen, for direct
// messages, everyone's broadcasts and a group's messages, with ann's
// watermark in the same hour as the newest ones and days below them (so
// that the shared partitions count them from their time buckets, by
// category), with the shared cache off and on; reading one takes it out
// of its category's Unseen alone. Every step agrees with List.
func testCategoryUnseen(e *env) {
	for i, fresh := range []time.Duration{0, time.Hour} {
		e.t.Run(fmt.Sprintf("cache %v", fresh), func(t *testing.T) {
			e := e.withInbox(t, inbox.WithSharedCache(fresh))
			name, group := fmt.Sprint("ann", i), fmt.Sprint("devs", i)
			ann := e.member(name, group)
			e.publish(inbox.Draft{Title: "old", Category: "billing"}, name)
			e.broadcast(inbox.Draft{Title: "old news", Category: "news"})
			e.clock.Advance(time.Second)
			e.markSeen(ann)
			e.clock.Advance(time.Second)
			d := e.publish(inbox.Draft{Title: "invoice", Category: "billing"}, name).Message
			e.broadcast(inbox.Draft{Title: "release", Category: "news"})
			g := e.broadcastTo(group, inbox.Draft{Title: "build", Category: "build"})
			e.broadcastTo(group, inbox.Draft{Title: "plain"})
			e.wantCategoryUnseen(ann, map[string]int64{"billing": 1, "news": 1, "build": 1})
			e.wantCountsFromFeed(ann)
			// Days later, in another hour: the buckets count them.
			e.clock.Advance(50 * time.Hour)
			for range 3 {
				e.broadcast(inbox.Draft{Title: "later news", Category: "news"})
				e.clock.Advance(time.Minute)
			}
			e.markRead(ann, g.ID, true)
			e.markRead(ann, d.ID, true)
			e.wantCategoryUnseen(ann, map[string]int64{"news": 4})
			e.wantCountsFromFeed(ann)
			e.clock.Advance(time.Second)
			e.markSeen(ann)
			e.wantCategoryUnseen(ann, nil)
			e.wantCountsFromFeed(ann)
		})
	}
}

// testMuteCategory: ann mutes promo. Its messages (direct, everyone's,
// her group's, in a thread or not, stored before and after) stay in her
// views marked muted, and their unread count in Muted, not in Unread or
// Unseen, overall and in promo's tally, the instant SetPreferences
// returns, in this process (shared cache off) and another (cache on); a
// message both of a muted group and of promo counts once. ListThreads
// marks a thread's promo preview muted and counts the thread whole.
// Reading one while muted shows after the unmute; bob's counts are
// untouched.
func testMuteCategory(e *env) {
	one, other := e.withInbox(e.t, inbox.WithSharedCache(0)), e.withInbox(e.t, inbox.WithSharedCache(time.Hour))
	ann, bob := one.member("ann", "devs"), one.member("bob", "devs")
	one.publish(inbox.Draft{Title: "old promo", Category: "promo"}, "ann", "bob")
	one.clock.Advance(time.Second)
	one.markSeen(ann)
	one.clock.Advance(time.Second)
	d := one.publish(inbox.Draft{Title: "sale", Category: "promo"}, "ann", "bob").Message
	b := one.broadcast(inbox.Draft{Title: "everyone sale", Category: "promo"})
	g := one.broadcastTo("devs", inbox.Draft{Title: "team sale", Category: "promo", Thread: "deals"})
	n := one.broadcastTo("devs", inbox.Draft{Title: "build", Category: "build"})
	one.publish(inbox.Draft{Title: "invoice", Category: "billing"}, "ann")
	one.wantMuted(ann)
	one.wantTally(ann, inbox.Tally{Total: 6, Unread: 6}, 5)
	other.wantTally(ann, inbox.Tally{Total: 6, Unread: 6}, 5) // its snapshots, before the change

	one.setPreferences(ann, true, inbox.Preferences{MutedCategories: []string{"promo"}})
	promo := ids(one.listAll(ann, inbox.ListOptions{Category: "promo"}))
	if len(promo) != 4 {
		e.t.Fatalf("ann's promo messages %v, want 4", promo)
	}
	one.wantMuted(ann, promo...)
	other.wantMuted(ann, promo...)
	other.wantTally(ann, inbox.Tally{Total: 6, Unread: 2, Muted: 4}, 2)
	if c := other.counts(ann); c.Categories["promo"] != (inbox.Tally{Total: 4, Muted: 4}) {
		e.t.Errorf("Counts(ann).Categories[promo] = %+v, want 4 muted", c.Categories["promo"])
	}
	threads := listThreads(e.t, one.ctx, one.ib, ann, 0)
	if len(threads) != 1 || threads[0].Muted || !threads[0].Latest.Muted || threads[0].Unread != 1 || threads[0].Tally.Muted != 0 {
		e.t.Errorf("ann's threads %+v: want deals, not muted, its latest muted, counted whole (1 unread)", threads)
	}
	one.wantMuted(bob)
	one.wantTally(bob, inbox.Tally{Total: 5, Unread: 5}, 5)

	// Muted with its group too, the group's promo message counts once; a
	// message after the mute is muted.
	other.setPreferences(ann, true, inbox.Preferences{MutedGroups: []string{"devs"}, MutedCategories: []string{"promo"}})
	one.wantMuted(ann, append(promo, n.ID)...)
	one.wantTally(ann, inbox.Tally{Total: 6, Unread: 1, Muted: 5}, 1)
	p := one.publish(inbox.Draft{Title: "new sale", Category: "promo"}, "ann").Message
	one.markRead(ann, d.ID, true)
	one.markRead(ann, g.ID, true)
	other.wantMuted(ann, append(promo, n.ID, p.ID)...)
	other.wantTally(ann, inbox.Tally{Total: 7, Read: 2, Unread: 1, Muted: 4}, 1)

	// Unmuted, they come back as they stand.
	one.setPreferences(ann, true, inbox.Preferences{})
	other.wantMuted(ann)
	other.wantTally(ann, inbox.Tally{Total: 7, Read: 2, Unread: 5}, 4)
	if c := other.counts(ann); c.Categories["promo"].Unseen != 2 || !slices.Contains(ids(other.listAll(ann, inbox.ListOptions{UnreadOnly: true})), b.ID) {
		e.t.Errorf("after the unmute: promo %+v; want 2 unseen (%s and %s)", c.Categories["promo"], b.ID, p.ID)
	}
	one.wantCountsFromFeed(ann)
}

// testMuteCategoryBadInput: an invalid category key, a category twice or
// more than MaxMutedCategories is refused with a typed error, and nothing
// is written; the most a user can mute are taken, and "" is no category
// to mute.
func testMuteCategoryBadInput(e *env) {
	ann := e.member("ann", "devs")
	e.publish(inbox.Draft{Title: "promo", Category: "promo"}, "ann")
	e.setPreferences(ann, true, inbox.Preferences{MutedCategories: []string{"promo"}})
	before := e.snapshot()
	var many []string
	for i := range inbox.MaxMutedCategories + 1 {
		many = append(many, fmt.Sprintf("c%d", i))
	}
	for _, c := range []struct {
		what string
		cats []string
		want error
	}{
		{"a category key with '#'", []string{"ops", "a#b"}, inbox.ErrInvalidKey},
		{"a category key with '?'", []string{"?ops"}, inbox.ErrInvalidKey},
		{"no category", []string{""}, inbox.ErrInvalidKey},
		{"a category of 129 bytes", []string{string(make([]byte, driver.MaxKeyLen+1))}, inbox.ErrInvalidKey},
		{"a category twice", []string{"ops", "promo", "ops"}, inbox.ErrInvalidInput},
		{"more than MaxMutedCategories", many, inbox.ErrInvalidInput},
	} {
		changed, err := e.ib.SetPreferences(e.ctx, ann, inbox.Preferences{MutedGroups: []string{"devs"}, MutedCategories: c.cats})
		if !errors.Is(err, c.want) || changed {
			e.t.Errorf("SetPreferences with %s = %v, %v; want false, %v", c.what, changed, err, c.want)
		}
	}
	e.wantUnchanged("SetPreferences with bad input", before)
	e.setPreferences(ann, true, inbox.Preferences{MutedGroups: []string{"devs"}, MutedCategories: many[:inbox.MaxMutedCategories]})
	if p, err := e.ib.Preferences(e.ctx, ann); err != nil || len(p.MutedCategories) != inbox.MaxMutedCategories || !slices.Equal(p.MutedGroups, []string{"devs"}) {
		e.t.Errorf("Preferences(ann) = %+v, %v; want devs and %d categories", p, err, inbox.MaxMutedCategories)
	}
	e.wantMuted(ann)
}

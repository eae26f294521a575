package storetest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// optOutTests are the Inbox subtests of opting out of a category.
func optOutTests() []suiteTest {
	return []suiteTest{
		{"OptOut", testOptOut},
		{"OptOutBadInput", testOptOutBadInput},
		{"PreferenceDefaults", testPreferenceDefaults},
	}
}

// wantNoCategory checks that no view of u's feed but a thread's shows a
// message of category cat, and that Counts has no tally of it.
func (e *env) wantNoCategory(u driver.User, cat string) {
	e.t.Helper()
	for _, o := range []inbox.ListOptions{{}, {Category: cat}, {Archived: true}, {Snoozed: true}, {UnreadOnly: true}, {Category: cat, Archived: true}} {
		for _, m := range e.listAll(u, o) {
			if m.Category == cat {
				e.t.Errorf("List(%s, %+v) shows %s of %s, opted out of", u.ID, o, m.ID, cat)
			}
		}
	}
	if t, ok := e.counts(u).Categories[cat]; ok {
		e.t.Errorf("Counts(%s).Categories[%s] = %+v; opted out of, want none", u.ID, cat, t)
	}
}

// testOptOut: ann opts out of promo. Its messages (direct, everyone's,
// her group's, unread, read, archived, snoozed, stored before) leave
// every view of her feed and every figure of her Counts, the instant
// SetPreferences returns, in this process (shared cache off) and another
// (cache on), with her watermark below some of them; a thread's view and
// ListThreads show the thread whole. A promo Publish to ann and bob
// stores bob's copy only and names ann in OptedOut (a retry with the
// HostSystemID of a copy she had before is a Duplicate); MarkAllRead
// leaves the promo messages as they are. Opted in again, they come back
// as they stand; bob's counts are untouched throughout.
func testOptOut(e *env) {
	one, other := e.withInbox(e.t, inbox.WithSharedCache(0)), e.withInbox(e.t, inbox.WithSharedCache(time.Hour))
	ann, bob := one.member("ann", "devs"), one.member("bob", "devs")
	old := one.publish(inbox.Draft{Title: "old promo", Category: "promo", HostSystemID: "promo-1"}, "ann", "bob").Message
	snoozed := one.publish(inbox.Draft{Title: "later promo", Category: "promo"}, "ann").Message
	archived := one.publish(inbox.Draft{Title: "filed promo", Category: "promo"}, "ann").Message
	one.clock.Advance(time.Second)
	one.markSeen(ann)
	one.clock.Advance(time.Second)
	b := one.broadcast(inbox.Draft{Title: "everyone sale", Category: "promo"})
	g := one.broadcastTo("devs", inbox.Draft{Title: "team sale", Category: "promo", Thread: "deals"})
	one.broadcastTo("devs", inbox.Draft{Title: "build", Category: "build"})
	one.publish(inbox.Draft{Title: "invoice", Category: "billing"}, "ann")
	one.markRead(ann, b.ID, true)
	if ok, err := one.ib.Snooze(one.ctx, ann, snoozed.ID, one.clock.Now().Add(time.Hour)); err != nil || !ok {
		e.t.Fatalf("Snooze(ann, %s) = %v, %v", snoozed.ID, ok, err)
	}
	if ok, err := one.ib.Archive(one.ctx, ann, archived.ID); err != nil || !ok {
		e.t.Fatalf("Archive(ann, %s) = %v, %v", archived.ID, ok, err)
	}
	other.wantCountsFromFeed(ann) // its snapshots, before the change
	bobCounts := one.counts(bob)

	one.setPreferences(ann, true, inbox.Preferences{OptedOut: []string{"promo"}, MutedCategories: []string{"build"}})
	for _, x := range []*env{one, other} {
		x.wantNoCategory(ann, "promo")
		x.wantCountsFromFeed(ann)
		x.wantTally(ann, inbox.Tally{Total: 2, Unread: 1, Muted: 1}, 1)
		if c := x.counts(ann); c.Snoozed != 0 {
			e.t.Errorf("Counts(ann).Snoozed = %d, want 0: the snoozed message is promo's", c.Snoozed)
		}
		for _, o := range []inbox.ListOptions{{Category: "promo"}, {Category: "promo", Snoozed: true}, {Category: "promo", Archived: true}} {
			if p, err := x.ib.List(x.ctx, ann, o); err != nil || len(p.Messages) != 0 || p.Cursor != "" {
				e.t.Errorf("List(ann, %+v) = %d messages, cursor %q, %v; want an empty view", o, len(p.Messages), p.Cursor, err)
			}
		}
		// A thread shows whole, as ListThreads counts it.
		if got := ids(x.listAll(ann, inbox.ListOptions{Thread: "deals"})); !slices.Equal(got, []string{g.ID}) {
			e.t.Errorf("List(ann, thread deals) = %v, want %s", got, g.ID)
		}
		threads := listThreads(e.t, x.ctx, x.ib, ann, 0)
		if len(threads) != 1 || threads[0].Unread != 1 || threads[0].Latest.ID != g.ID {
			e.t.Errorf("ann's threads %+v: want deals, whole, 1 unread", threads)
		}
	}
	if m, err := one.ib.Get(one.ctx, ann, old.ID); err != nil || m.ID != old.ID {
		e.t.Errorf("Get(ann, %s) = %v, %v; want it: Get reads by ID", old.ID, m.ID, err)
	}

	// New promo: no copy for ann, bob's as ever; a retry of a copy she had
	// before is a duplicate.
	res, err := other.ib.Publish(other.ctx, e.scope, []string{"ann", "bob"}, inbox.Draft{Title: "new sale", Category: "promo"})
	if err != nil || !slices.Equal(res.OptedOut, []string{"ann"}) || !slices.Equal(res.Delivered, []string{"bob"}) {
		e.t.Fatalf("Publish(promo, ann and bob) = opted out %v, delivered %v, %v; want ann, bob", res.OptedOut, res.Delivered, err)
	}
	if recs := e.get(driver.Key{Partition: ann.Partition(), ID: res.Message.ID}); len(recs) != 0 {
		e.t.Errorf("ann's copy of %s stored though she opted out", res.Message.ID)
	}
	again, err := one.ib.Publish(one.ctx, e.scope, []string{"ann", "bob"}, inbox.Draft{Title: "old promo", Category: "promo", HostSystemID: "promo-1"})
	if err != nil || !slices.Equal(again.Duplicates, []string{"ann", "bob"}) || again.Message.ID != old.ID {
		e.t.Errorf("Publish again with promo-1 = duplicates %v, opted out %v, %v; want ann and bob", again.Duplicates, again.OptedOut, err)
	}
	if n, err := one.ib.MarkAllRead(one.ctx, ann, inbox.ListOptions{}); err != nil || n != 2 {
		e.t.Errorf("MarkAllRead(ann) = %d, %v; want 2 (build and billing)", n, err)
	}
	other.wantCountsFromFeed(ann)
	if c := one.counts(bob); c.Unread != bobCounts.Unread+1 {
		e.t.Errorf("Counts(bob).Unread = %d, want %d: the new sale", c.Unread, bobCounts.Unread+1)
	}

	// Opted in again: the promo messages as they stand.
	other.setPreferences(ann, true, inbox.Preferences{MutedCategories: []string{"build"}})
	promo := ids(one.listAll(ann, inbox.ListOptions{Category: "promo"}))
	if want := []string{g.ID, b.ID, old.ID}; !slices.Equal(promo, want) {
		e.t.Errorf("ann's promo after opting in again: %v, want %v", promo, want)
	}
	one.wantTally(ann, inbox.Tally{Total: 5, Read: 3, Unread: 2, Archived: 1}, 1)
	if c := one.counts(ann); c.Snoozed != 1 || c.Archived != 1 || c.Categories["promo"].Unread != 2 {
		e.t.Errorf("Counts(ann) opted in again: %+v; want 1 snoozed, 1 archived, 2 promo unread", c)
	}
	one.wantCountsFromFeed(ann)
	other.wantCountsFromFeed(ann)
}

// testOptOutBadInput: a category both muted and opted out of, an invalid
// key, a key twice or more than MaxOptedOut is refused with a typed
// error, and nothing is written; MaxOptedOut categories are taken.
func testOptOutBadInput(e *env) {
	ann := e.member("ann", "devs")
	e.publish(inbox.Draft{Title: "promo", Category: "promo"}, "ann")
	e.setPreferences(ann, true, inbox.Preferences{OptedOut: []string{"promo"}})
	before := e.snapshot()
	var many []string
	for i := range inbox.MaxOptedOut + 1 {
		many = append(many, fmt.Sprintf("c%d", i))
	}
	for _, c := range []struct {
		what string
		p    inbox.Preferences
		want error
	}{
		{"a category muted and opted out of", inbox.Preferences{MutedCategories: []string{"ops"}, OptedOut: []string{"ops", "promo"}}, inbox.ErrInvalidInput},
		{"a key with '*'", inbox.Preferences{OptedOut: []string{"*ops*"}}, inbox.ErrInvalidKey},
		{"a key with '#'", inbox.Preferences{OptedOut: []string{"a#b"}}, inbox.ErrInvalidKey},
		{"no category", inbox.Preferences{OptedOut: []string{""}}, inbox.ErrInvalidKey},
		{"a category twice", inbox.Preferences{OptedOut: []string{"ops", "promo", "ops"}}, inbox.ErrInvalidInput},
		{"more than MaxOptedOut", inbox.Preferences{OptedOut: many}, inbox.ErrInvalidInput},
	} {
		changed, err := e.ib.SetPreferences(e.ctx, ann, c.p)
		if !errors.Is(err, c.want) || changed {
			e.t.Errorf("SetPreferences with %s = %v, %v; want false, %v", c.what, changed, err, c.want)
		}
	}
	e.wantUnchanged("SetPreferences with bad input", before)
	e.setPreferences(ann, true, inbox.Preferences{MutedGroups: []string{"devs"}, OptedOut: many[:inbox.MaxOptedOut]})
	if p, err := e.ib.Preferences(e.ctx, ann); err != nil || len(p.OptedOut) != inbox.MaxOptedOut || !slices.Equal(p.MutedGroups, []string{"devs"}) {
		e.t.Errorf("Preferences(ann) = %+v, %v; want devs and %d categories opted out of", p, err, inbox.MaxOptedOut)
	}
	e.wantCountsFromFeed(ann)
}

// testPreferenceDefaults: a user without preferences of her own follows
// her inbox's default preferences, else her tenant's (the inbox's, when
// it sets any, replace the tenant's whole), in every view and count, in
// this process and another (its config cache off); Publish stores no copy
// for her of a category the defaults opt out of, but does for a user
// whose own preferences opt in. Her own, once set (even to none), win;
// ResetPreferences gives her the defaults again. Defaults that cannot be
// are refused with a typed error and change nothing.
func testPreferenceDefaults(e *env) {
	other := e.withInbox(e.t, inbox.WithConfigCacheTTL(0), inbox.WithSharedCache(time.Hour))
	ann, bob := e.member("ann", "devs"), e.member("bob", "devs")
	e.setPreferences(bob, true, inbox.Preferences{}) // his own: none
	e.publish(inbox.Draft{Title: "old promo", Category: "promo"}, "ann", "bob")
	e.broadcast(inbox.Draft{Title: "everyone sale", Category: "promo"})
	e.broadcast(inbox.Draft{Title: "news", Category: "news"})
	e.broadcastTo("devs", inbox.Draft{Title: "build", Category: "build"})
	e.publish(inbox.Draft{Title: "invoice", Category: "billing"}, "ann")

	wantPrefs := func(x *env, u driver.User, want inbox.Preferences) {
		e.t.Helper()
		if got, err := x.ib.Preferences(x.ctx, u); err != nil || !got.Equal(want) {
			e.t.Errorf("Preferences(%s) = %+v, %v; want %+v", u.ID, got, err, want)
		}
	}
	if err := e.ib.PutTenantSettings(e.ctx, e.scope.Tenant, inbox.TenantSettings{Preferences: inbox.Preferences{MutedCategories: []string{"news"}}}); err != nil {
		e.t.Fatalf("PutTenantSettings: %v", err)
	}
	for _, x := range []*env{e, other} {
		wantPrefs(x, ann, inbox.Preferences{MutedCategories: []string{"news"}})
		x.wantTally(ann, inbox.Tally{Total: 5, Unread: 4, Muted: 1}, 4)
		x.wantCountsFromFeed(ann)
		x.wantTally(bob, inbox.Tally{Total: 4, Unread: 4}, 4)
	}

	// The inbox's defaults replace the tenant's.
	if err := e.ib.PutInboxConfig(e.ctx, e.scope, inbox.InboxConfig{Preferences: inbox.Preferences{OptedOut: []string{"promo"}, MutedGroups: []string{"devs"}}}); err != nil {
		e.t.Fatalf("PutInboxConfig: %v", err)
	}
	for _, x := range []*env{e, other} {
		wantPrefs(x, ann, inbox.Preferences{OptedOut: []string{"promo"}, MutedGroups: []string{"devs"}})
		x.wantNoCategory(ann, "promo")
		x.wantTally(ann, inbox.Tally{Total: 3, Unread: 2, Muted: 1}, 2)
		x.wantCountsFromFeed(ann)
		x.wantTally(bob, inbox.Tally{Total: 4, Unread: 4}, 4)
	}
	res, err := other.ib.Publish(other.ctx, e.scope, []string{"ann", "bob"}, inbox.Draft{Title: "new sale", Category: "promo"})
	if err != nil || !slices.Equal(res.OptedOut, []string{"ann"}) || !slices.Equal(res.Delivered, []string{"bob"}) {
		e.t.Fatalf("Publish(promo, ann and bob) = opted out %v, delivered %v, %v; want ann, bob", res.OptedOut, res.Delivered, err)
	}
	if recs := e.get(driver.Key{Partition: ann.Partition(), ID: res.Message.ID}); len(recs) != 0 {
		e.t.Errorf("ann's copy of %s stored though the defaults opt out", res.Message.ID)
	}

	// Her own, even none, win; reset, the defaults apply again.
	other.setPreferences(ann, true, inbox.Preferences{})
	wantPrefs(e, ann, inbox.Preferences{Own: true})
	e.wantTally(ann, inbox.Tally{Total: 5, Unread: 5}, 5)
	e.wantCountsFromFeed(ann)
	if changed, err := e.ib.ResetPreferences(e.ctx, ann); err != nil || !changed {
		e.t.Errorf("ResetPreferences(ann) = %v, %v; want true, nil", changed, err)
	}
	if changed, err := e.ib.ResetPreferences(e.ctx, ann); err != nil || changed {
		e.t.Errorf("ResetPreferences(ann) again = %v, %v; want false, nil", changed, err)
	}
	other.wantTally(ann, inbox.Tally{Total: 3, Unread: 2, Muted: 1}, 2)
	other.wantCountsFromFeed(ann)

	before := e.snapshot()
	for _, c := range []struct {
		what string
		p    inbox.Preferences
		want error
	}{
		{"a category both muted and opted out of", inbox.Preferences{MutedCategories: []string{"a"}, OptedOut: []string{"a"}}, inbox.ErrInvalidInput},
		{"a key with '#'", inbox.Preferences{MutedGroups: []string{"a#b"}}, inbox.ErrInvalidKey},
		{"everyone's group", inbox.Preferences{MutedGroups: []string{driver.PublicGroup}}, inbox.ErrInvalidKey},
	} {
		if err := e.ib.PutInboxConfig(e.ctx, e.scope, inbox.InboxConfig{Preferences: c.p}); !errors.Is(err, c.want) {
			e.t.Errorf("PutInboxConfig with %s: %v, want %v", c.what, err, c.want)
		}
		if err := e.ib.PutTenantSettings(e.ctx, e.scope.Tenant, inbox.TenantSettings{Preferences: c.p}); !errors.Is(err, c.want) {
			e.t.Errorf("PutTenantSettings with %s: %v, want %v", c.what, err, c.want)
		}
		// The Store refuses them too, unsorted ones included.
		if err := e.store.PutInboxConfig(e.ctx, e.scope, driver.InboxConfig{Preferences: c.p}); err == nil {
			e.t.Errorf("Store.PutInboxConfig with %s: nil, want an error", c.what)
		}
	}
	if err := e.store.PutTenantSettings(e.ctx, e.scope.Tenant, driver.TenantSettings{Preferences: inbox.Preferences{OptedOut: []string{"b", "a"}}}); !errors.Is(err, inbox.ErrInvalidInput) {
		e.t.Errorf("Store.PutTenantSettings with unsorted opt-outs: %v, want ErrInvalidInput", err)
	}
	e.wantUnchanged("config changes with bad preferences", before)
}

package storetest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// groupTests are the Inbox subtests about messages to groups.
func groupTests() []suiteTest {
	return []suiteTest{
		{"Groups", testGroups},
		{"GroupMembershipChanges", testGroupMembershipChanges},
		{"GroupBadInput", testGroupBadInput},
		{"RemovedGroupMessage", testRemovedGroupMessage},
	}
}

// testGroups: a message to a group is stored once, in the group's
// partition, and members (the users whose calls list the group) see it in
// List, Get and Counts, mark it read with receipts of their own, and
// MarkAllRead marks it; others do not see it.
func testGroups(e *env) {
	ann, bob, carol := e.member("ann", "admins"), e.member("bob", "admins", "eu"), e.member("carol")
	d := e.publish(inbox.Draft{Title: "direct", Category: "billing"}, "ann", "bob")
	all := e.broadcast(inbox.Draft{Title: "to everyone", Category: "news"})
	admins := e.broadcastTo("admins", inbox.Draft{Title: "to admins", Category: "ops", Label: "Admins"})
	eu := e.broadcastTo("eu", inbox.Draft{Title: "to eu", Category: "ops"})
	if admins.Audience.Kind != driver.AudienceGroup || admins.Audience.Group != "admins" || !admins.IsBroadcast() {
		e.t.Errorf("group message audience %+v, want kind group, group admins", admins.Audience)
	}
	if recs := e.records(groupOf(e.scope, "admins")); len(recs) != 1 {
		e.t.Errorf("the admins partition holds %d records, want the one message", len(recs))
	}
	for _, u := range []string{"ann", "bob", "carol"} {
		if recs := e.records(e.part(u)); u == "carol" && len(recs) != 0 {
			e.t.Errorf("carol's partition holds %d records after the group messages, want none", len(recs))
		}
	}
	e.wantFeed(ann, inbox.ListOptions{}, admins, all, copyFor(d.Message, "ann"))
	e.wantFeed(bob, inbox.ListOptions{Limit: 1}, eu, admins, all, copyFor(d.Message, "bob"))
	e.wantFeed(carol, inbox.ListOptions{}, all)
	e.wantFeed(bob, inbox.ListOptions{Category: "ops"}, eu, admins)

	for _, c := range []struct {
		u    driver.User
		id   string
		want error
	}{{ann, eu.ID, driver.ErrNotFound}, {carol, admins.ID, driver.ErrNotFound}, {bob, eu.ID, nil}} {
		got, err := e.ib.Get(e.ctx, c.u, c.id)
		if !errors.Is(err, c.want) || c.want == nil && got.ID != c.id {
			e.t.Errorf("Get(%s, %s) = %v, %v; want %v", c.u.ID, c.id, got.ID, err, c.want)
		}
	}
	if _, err := e.ib.MarkRead(e.ctx, ann, eu.ID); !errors.Is(err, driver.ErrNotFound) {
		e.t.Errorf("MarkRead of another group's message: %v, want ErrNotFound", err)
	}
	at := e.clock.Now()
	e.markRead(ann, admins.ID, true)
	e.markRead(ann, admins.ID, false)
	e.wantFeed(ann, inbox.ListOptions{}, read(admins, at), all, copyFor(d.Message, "ann"))
	e.wantFeed(bob, inbox.ListOptions{UnreadOnly: true}, eu, admins, all, copyFor(d.Message, "bob"))
	e.wantCounts(ann, inbox.Counts{Tally: tallyOf(3, 1), Categories: map[string]inbox.Tally{"billing": tallyOf(1, 0), "news": tallyOf(1, 0), "ops": tallyOf(1, 1)}})
	e.wantCounts(bob, inbox.Counts{Tally: tallyOf(4, 0), Categories: map[string]inbox.Tally{"billing": tallyOf(1, 0), "news": tallyOf(1, 0), "ops": tallyOf(2, 0)}})
	if n, err := e.ib.MarkAllRead(e.ctx, bob, inbox.ListOptions{}); n != 4 || err != nil {
		e.t.Errorf("MarkAllRead(bob) = %d, %v; want 4", n, err)
	}
	for _, u := range []driver.User{ann, bob, carol} {
		e.wantCountsFromFeed(u)
	}
	if _, err := e.ib.Recount(e.ctx, bob); err != nil {
		e.t.Fatalf("Recount(bob): %v", err)
	}
	e.wantCounts(bob, inbox.Counts{Tally: tallyOf(4, 4), Categories: map[string]inbox.Tally{"billing": tallyOf(1, 1), "news": tallyOf(1, 1), "ops": tallyOf(2, 2)}})
}

// testGroupMembershipChanges: the groups a call lists decide the feed and
// the counts: leaving a group takes its messages and the user's reads of
// them out; joining brings the live messages in, with the reads the user
// had made.
func testGroupMembershipChanges(e *env) {
	in, out := e.member("ann", "admins"), e.member("ann")
	admins := e.broadcastTo("admins", inbox.Draft{Title: "one", Category: "ops"})
	e.broadcastTo("admins", inbox.Draft{Title: "two", Category: "ops"})
	all := e.broadcast(inbox.Draft{Title: "all"})
	e.markRead(in, admins.ID, true)
	e.markRead(in, all.ID, true)
	e.wantCounts(in, inbox.Counts{Tally: tallyOf(3, 2), Categories: map[string]inbox.Tally{"ops": tallyOf(2, 1)}})
	e.wantCounts(out, inbox.Counts{Tally: tallyOf(1, 1)})
	e.wantCountsFromFeed(out)
	if _, err := e.ib.MarkAllRead(e.ctx, out, inbox.ListOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.wantCounts(in, inbox.Counts{Tally: tallyOf(3, 2), Categories: map[string]inbox.Tally{"ops": tallyOf(2, 1)}})
	// A cursor is bound to the groups it was issued for.
	page, err := e.ib.List(e.ctx, in, inbox.ListOptions{Limit: 1})
	if err != nil || page.Cursor == "" {
		e.t.Fatalf("List(ann in admins, limit 1) = %v, %v", page.Cursor, err)
	}
	if _, err := e.ib.List(e.ctx, out, inbox.ListOptions{Limit: 1, Cursor: page.Cursor}); !errors.Is(err, driver.ErrInvalidCursor) {
		e.t.Errorf("a cursor of ann in admins used without the group: %v, want ErrInvalidCursor", err)
	}
	// The order the groups are listed in does not matter.
	both, reordered := e.member("ann", "admins", "eu"), e.member("ann", "eu", "admins", "eu")
	page, err = e.ib.List(e.ctx, both, inbox.ListOptions{Limit: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.ib.List(e.ctx, reordered, inbox.ListOptions{Limit: 1, Cursor: page.Cursor}); err != nil {
		e.t.Errorf("a cursor used with the same groups in another order: %v", err)
	}
	e.wantCounts(reordered, e.counts(both))
}

// testGroupBadInput: groups are keys, at most driver.MaxGroups; bad ones are
// refused before anything is written.
func testGroupBadInput(e *env) {
	e.broadcastTo("admins", inbox.Draft{Title: "x"})
	ann := e.user("ann") // noted as used before the snapshot
	before := e.snapshot()
	many := make([]string, driver.MaxGroups+1)
	for i := range many {
		many[i] = fmt.Sprint("g", i)
	}
	counts := func(u driver.User) func() error {
		return func() error { _, err := e.ib.Counts(e.ctx, u); return err }
	}
	list := func(u driver.User) func() error {
		return func() error { _, err := e.ib.List(e.ctx, u, inbox.ListOptions{}); return err }
	}
	markAll := func(u driver.User) func() error {
		return func() error { _, err := e.ib.MarkAllRead(e.ctx, u, inbox.ListOptions{}); return err }
	}
	broadcastTo := func(g string) func() error {
		return func() error { _, err := e.ib.BroadcastGroup(e.ctx, e.scope, g, inbox.Draft{}); return err }
	}
	for name, c := range map[string]struct {
		op   func() error
		want error
	}{
		"17 groups":          {counts(ann.InGroups(many...)), driver.ErrInvalidInput},
		"group with #":       {list(ann.InGroups("a#b")), driver.ErrInvalidKey},
		"empty group":        {markAll(ann.InGroups("")), driver.ErrInvalidKey},
		"long group":         {counts(ann.InGroups(strings.Repeat("g", driver.MaxKeyLen+1))), driver.ErrInvalidKey},
		"broadcast to a*":    {broadcastTo("a*"), driver.ErrInvalidKey},
		"broadcast to empty": {broadcastTo(""), driver.ErrInvalidKey},
	} {
		if err := c.op(); !errors.Is(err, c.want) {
			e.t.Errorf("%s: %v, want %v", name, err, c.want)
		}
		e.wantUnchanged(name, before)
	}
	// A group message's host ID used for everyone (or another group) is
	// another audience.
	e.broadcastTo("admins", inbox.Draft{HostSystemID: "g-1", Title: "x"})
	for _, g := range []string{driver.PublicGroup, "eu"} {
		if _, err := e.ib.BroadcastGroup(e.ctx, e.scope, g, inbox.Draft{HostSystemID: "g-1", Title: "x"}); !errors.Is(err, driver.ErrConflict) {
			e.t.Errorf("a group message's host ID for group %s: %v, want ErrConflict", g, err)
		}
	}
	if err := counts(ann.InGroups(many[:driver.MaxGroups]...))(); err != nil {
		e.t.Errorf("Counts of a user in %d groups: %v", driver.MaxGroups, err)
	}
}

// testRemovedGroupMessage: a group message removed before it expired
// leaves a tombstone: its readers stop counting their receipts of it at
// once, members and former members alike.
func testRemovedGroupMessage(e *env) {
	h := e.needHarness()
	ann, bob := e.member("ann", "admins"), e.member("bob", "admins")
	m := e.broadcastTo("admins", inbox.Draft{Title: "to remove", Category: "ops", TTL: 3 * time.Hour})
	kept := e.broadcastTo("admins", inbox.Draft{Title: "kept", Category: "ops", TTL: 3 * time.Hour})
	e.markRead(ann, m.ID, true)
	e.markRead(bob, kept.ID, true)
	e.remove(h, driver.Key{Partition: groupOf(e.scope, "admins"), ID: m.ID})
	e.deliver(h)
	e.wantCounts(ann, inbox.Counts{Tally: tallyOf(1, 0), Categories: map[string]inbox.Tally{"ops": tallyOf(1, 0)}})
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)
	e.wantCountsFromFeed(e.member("ann"))
	e.checkInvariant()
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Fatal(err)
	}
	e.wantCountsFromFeed(ann)
	e.checkInvariant()
}

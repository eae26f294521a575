package storetest

import (
	"errors"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// stateInboxTests are the Inbox subtests of the per-user marks: seen,
// archived, deleted, redacted, and marks by filter.
func stateInboxTests() []suiteTest {
	return []suiteTest{
		{"Seen", testSeen},
		{"SeenTornByPublish", testSeenTornByPublish},
		{"Archive", testArchive},
		{"Interacted", testInteracted},
		{"DeleteForOneUser", testDeleteForOneUser},
		{"Redact", testRedact},
		{"MarkAllReadByFilter", testMarkAllReadByFilter},
		{"ListUpTo", testListUpTo},
		{"StatesBadInput", testStatesBadInput},
	}
}

// testSeen: MarkSeen marks everything up to now seen; Unseen counts the
// unread messages above the watermark, of everyone, of the user's groups
// and the user's own; reading, archiving or deleting one takes it out.
func testSeen(e *env) {
	ann := e.member("ann", "admins")
	e.publish(inbox.Draft{Title: "old direct"}, "ann")
	e.broadcast(inbox.Draft{Title: "old broadcast"})
	e.wantCounts(ann, inbox.Counts{Tally: tallyOf(2, 0)}) // never marked seen: all unread are unseen
	e.clock.Advance(time.Second)
	e.markSeen(ann)
	e.wantCounts(ann, inbox.Counts{Tally: unseenOf(tallyOf(2, 0), 0)})
	if changed, err := e.ib.MarkSeen(e.ctx, ann); err != nil || changed {
		e.t.Errorf("MarkSeen again at the same instant: %v, %v; want false, nil", changed, err)
	}

	e.clock.Advance(time.Second)
	d := e.publish(inbox.Draft{Title: "new direct"}, "ann")
	b := e.broadcast(inbox.Draft{Title: "new broadcast"})
	g := e.broadcastTo("admins", inbox.Draft{Title: "new to admins"})
	e.broadcastTo("eu", inbox.Draft{Title: "not ann's group"})
	e.wantCounts(ann, inbox.Counts{Tally: unseenOf(tallyOf(5, 0), 3)})
	e.markRead(ann, b.ID, true)
	if _, err := e.ib.Archive(e.ctx, ann, g.ID); err != nil {
		e.t.Fatalf("Archive: %v", err)
	}
	e.wantCounts(ann, inbox.Counts{Tally: inbox.Tally{Total: 4, Read: 1, Unread: 3, Archived: 1, Unseen: 1}})
	if _, err := e.ib.Delete(e.ctx, ann, d.Message.ID); err != nil {
		e.t.Fatalf("Delete: %v", err)
	}
	e.wantCounts(ann, inbox.Counts{Tally: inbox.Tally{Total: 3, Read: 1, Unread: 2, Archived: 1, Unseen: 0}})
	// Leaving the group takes its unseen messages out; a fresh Inbox (no
	// remembered watermark) counts the same.
	e.clock.Advance(time.Second)
	g2 := e.broadcastTo("admins", inbox.Draft{Title: "later to admins"})
	e.wantCounts(ann, inbox.Counts{Tally: inbox.Tally{Total: 4, Read: 1, Unread: 3, Archived: 1, Unseen: 1}})
	e.wantCounts(e.member("ann"), inbox.Counts{Tally: inbox.Tally{Total: 3, Read: 1, Unread: 2, Unseen: 0}})
	fresh := inbox.New(e.store, inbox.WithClock(e.clock.Now))
	if c, err := fresh.Counts(e.ctx, ann); err != nil || c.Unseen != 1 {
		e.t.Errorf("Counts(ann) on a fresh Inbox: Unseen %d, %v; want 1", c.Unseen, err)
	}
	e.clock.Advance(time.Second)
	e.markSeen(ann)
	e.wantCounts(ann, inbox.Counts{Tally: inbox.Tally{Total: 4, Read: 1, Unread: 3, Archived: 1, Unseen: 0}})
	e.markRead(ann, g2.ID, true)
	e.wantCountsFromFeed(ann)
}

// testArchive: an archived message leaves the feed and Total, Read and
// Unread, and counts in Archived; the archived list shows it with its read
// state; unarchiving puts it back as it was. Direct, broadcast and group
// messages alike, each archive and unarchive changing things once.
func testArchive(e *env) {
	ann, bob := e.member("ann", "admins"), e.member("bob", "admins")
	d := copyFor(e.publish(inbox.Draft{Title: "direct", Category: "billing"}, "ann", "bob").Message, "ann")
	b := e.broadcast(inbox.Draft{Title: "broadcast", Category: "news"})
	g := e.broadcastTo("admins", inbox.Draft{Title: "group", Category: "ops"})
	e.markRead(ann, b.ID, true)
	readAt := e.clock.Now()
	e.clock.Advance(time.Minute)
	at := e.clock.Now()
	for _, id := range []string{d.ID, b.ID, g.ID} {
		for i, want := range []bool{true, false} {
			if changed, err := e.ib.Archive(e.ctx, ann, id); err != nil || changed != want {
				e.t.Errorf("Archive(%s) #%d = %v, %v; want %v", id, i+1, changed, err, want)
			}
		}
	}
	arch := func(m driver.Message) driver.Message { m.ArchivedAt = at; return m }
	e.wantFeed(ann, inbox.ListOptions{})
	e.wantFeed(ann, inbox.ListOptions{Archived: true, Limit: 1}, arch(g), arch(read(b, readAt)), arch(d))
	e.wantFeed(ann, inbox.ListOptions{Archived: true, UnreadOnly: true}, arch(g), arch(d))
	e.wantFeed(ann, inbox.ListOptions{Archived: true, Category: "news"}, arch(read(b, readAt)))
	e.wantFeed(e.member("ann"), inbox.ListOptions{Archived: true}, arch(read(b, readAt)), arch(d)) // not in admins now
	e.wantCounts(ann, inbox.Counts{Tally: inbox.Tally{Archived: 3}, Categories: map[string]inbox.Tally{
		"billing": {Archived: 1}, "news": {Archived: 1}, "ops": {Archived: 1}}})
	e.wantCounts(bob, inbox.Counts{Tally: tallyOf(3, 0), Categories: map[string]inbox.Tally{"billing": tallyOf(1, 0), "news": tallyOf(1, 0), "ops": tallyOf(1, 0)}})
	if got, err := e.ib.Get(e.ctx, ann, b.ID); err != nil || !got.ArchivedAt.Equal(at) || !got.ReadAt.Equal(readAt) {
		e.t.Errorf("Get(archived broadcast) = %+v, %v; want archived at %v, read at %v", got, err, at, readAt)
	}
	// Reading an archived message keeps it archived.
	e.markRead(ann, g.ID, true)
	e.wantCounts(ann, inbox.Counts{Tally: inbox.Tally{Archived: 3}, Categories: map[string]inbox.Tally{
		"billing": {Archived: 1}, "news": {Archived: 1}, "ops": {Archived: 1}}})
	for _, id := range []string{d.ID, b.ID, g.ID} {
		for i, want := range []bool{true, false} {
			if changed, err := e.ib.Unarchive(e.ctx, ann, id); err != nil || changed != want {
				e.t.Errorf("Unarchive(%s) #%d = %v, %v; want %v", id, i+1, changed, err, want)
			}
		}
	}
	e.wantFeed(ann, inbox.ListOptions{}, read(g, at), read(b, readAt), d)
	e.wantFeed(ann, inbox.ListOptions{Archived: true})
	e.wantCounts(ann, inbox.Counts{Tally: tallyOf(3, 2), Categories: map[string]inbox.Tally{"billing": tallyOf(1, 0), "news": tallyOf(1, 1), "ops": tallyOf(1, 1)}})
	// An unread broadcast archived and unarchived leaves no receipt.
	u := e.broadcast(inbox.Draft{Title: "unread"})
	for _, f := range []func() (bool, error){
		func() (bool, error) { return e.ib.Archive(e.ctx, ann, u.ID) },
		func() (bool, error) { return e.ib.Unarchive(e.ctx, ann, u.ID) },
	} {
		if ok, err := f(); !ok || err != nil {
			e.t.Fatalf("archive round trip of an unread broadcast: %v, %v", ok, err)
		}
	}
	if recs := e.get(driver.Key{Partition: partitionOf(ann), ID: u.ID}); len(recs) != 0 {
		e.t.Errorf("an unread broadcast archived and unarchived left a receipt: %+v", recs)
	}
	for _, uu := range []driver.User{ann, bob} {
		e.wantCountsFromFeed(uu)
	}
}

// testDeleteForOneUser: Delete removes a direct copy (others keep theirs)
// and hides a broadcast or group message for the user alone, whatever its
// marks; counts follow at once, a second Delete changes nothing, and the
// stream's report of the removed copy, delivered and redelivered, does not
// count it twice.
func testDeleteForOneUser(e *env) {
	ann, bob := e.member("ann", "admins"), e.member("bob", "admins")
	d := e.publish(inbox.Draft{Title: "direct", Category: "billing"}, "ann", "bob").Message
	b := e.broadcast(inbox.Draft{Title: "broadcast", Category: "news"})
	g := e.broadcastTo("admins", inbox.Draft{Title: "group", Category: "ops"})
	e.markRead(ann, d.ID, true)
	e.markRead(ann, b.ID, true)
	if _, err := e.ib.Archive(e.ctx, ann, b.ID); err != nil {
		e.t.Fatal(err)
	}
	for _, id := range []string{d.ID, b.ID, g.ID} {
		for i, want := range []bool{true, false} {
			if changed, err := e.ib.Delete(e.ctx, ann, id); err != nil || changed != want {
				e.t.Errorf("Delete(%s) #%d = %v, %v; want %v, nil", id, i+1, changed, err, want)
			}
		}
		if _, err := e.ib.Get(e.ctx, ann, id); !errors.Is(err, driver.ErrNotFound) {
			e.t.Errorf("Get(%s) after Delete: %v, want ErrNotFound", id, err)
		}
		for name, f := range map[string]func() (bool, error){
			"MarkRead": func() (bool, error) { return e.ib.MarkRead(e.ctx, ann, id) },
			"Archive":  func() (bool, error) { return e.ib.Archive(e.ctx, ann, id) },
		} {
			if _, err := f(); !errors.Is(err, driver.ErrNotFound) {
				e.t.Errorf("%s(%s) after Delete: %v, want ErrNotFound", name, id, err)
			}
		}
	}
	e.wantFeed(ann, inbox.ListOptions{})
	e.wantFeed(ann, inbox.ListOptions{Archived: true})
	e.wantCounts(ann, inbox.Counts{})
	e.wantFeed(bob, inbox.ListOptions{}, g, b, copyFor(d, "bob"))
	e.wantCounts(bob, inbox.Counts{Tally: tallyOf(3, 0), Categories: map[string]inbox.Tally{"billing": tallyOf(1, 0), "news": tallyOf(1, 0), "ops": tallyOf(1, 0)}})
	if h, ok := e.harness(); ok {
		e.deliver(h)
		e.redeliver(h)
		e.wantCounts(ann, inbox.Counts{})
	}
	if _, err := e.ib.Delete(e.ctx, ann, e.newID()); err != nil {
		e.t.Errorf("Delete of an unknown ID: %v, want nil (false)", err)
	}
}

// testRedact: Redact removes a direct message from every named recipient,
// and a broadcast or group message once; every reader's counts follow,
// readers who read, archived or deleted it included; a retry of its
// publish with the host system ID is refused; a second Redact removes
// nothing.
func testRedact(e *env) {
	ann, bob, carol := e.member("ann", "admins"), e.member("bob", "admins"), e.member("carol", "admins")
	keep := e.publish(inbox.Draft{Title: "kept"}, "ann", "bob", "carol").Message
	dDraft := inbox.Draft{Title: "leaked password", HostSystemID: "pw-1"}
	d := e.publish(dDraft, "ann", "bob").Message
	gDraft := inbox.Draft{Title: "wrong deploy time", Category: "ops", HostSystemID: "deploy-1"}
	g := e.broadcastTo("admins", gDraft)
	b := e.broadcast(inbox.Draft{Title: "wrong maintenance", Category: "news", TTL: 3 * time.Hour})
	e.markRead(ann, g.ID, true)
	e.markRead(ann, b.ID, true)
	if _, err := e.ib.Archive(e.ctx, bob, g.ID); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.ib.Archive(e.ctx, bob, b.ID); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.ib.Delete(e.ctx, carol, b.ID); err != nil {
		e.t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		r    inbox.Redaction
		want int
	}{
		{"direct message by ID and users", inbox.Redaction{ID: d.ID, Users: []string{"ann", "bob", "carol"}}, 2},
		{"group message by host system ID", inbox.Redaction{HostSystemID: "deploy-1"}, 1},
		{"broadcast by ID", inbox.Redaction{ID: b.ID, Group: driver.PublicGroup}, 1},
	} {
		for i, want := range []int{c.want, 0} {
			if n, err := e.ib.Redact(e.ctx, e.scope, c.r); err != nil || n != want {
				e.t.Errorf("Redact(%s) #%d = %d, %v; want %d, nil", c.name, i+1, n, err, want)
			}
		}
	}
	for _, u := range []driver.User{ann, bob, carol} {
		e.wantFeed(u, inbox.ListOptions{}, copyFor(keep, u.ID))
		e.wantFeed(u, inbox.ListOptions{Archived: true})
		e.wantCounts(u, inbox.Counts{Tally: tallyOf(1, 0)})
	}
	if _, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, dDraft); !errors.Is(err, driver.ErrConflict) {
		e.t.Errorf("retry of a redacted publish: %v, want ErrConflict", err)
	}
	if _, err := e.ib.BroadcastGroup(e.ctx, e.scope, "admins", gDraft); !errors.Is(err, driver.ErrConflict) {
		e.t.Errorf("retry of a redacted group message: %v, want ErrConflict", err)
	}
	if n, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{HostSystemID: "never-used"}); n != 0 || err != nil {
		e.t.Errorf("Redact of an unknown host system ID = %d, %v; want 0, nil", n, err)
	}
	if _, err := e.ib.Recount(e.ctx, carol); err != nil {
		e.t.Fatalf("Recount(carol): %v", err)
	}
	e.wantCounts(carol, inbox.Counts{Tally: tallyOf(1, 0)})
}

// testMarkAllReadByFilter: MarkAllRead marks exactly what List with the
// same options shows: a category, messages up to an ID, the archived ones.
func testMarkAllReadByFilter(e *env) {
	ann := e.member("ann", "admins")
	b1 := e.publish(inbox.Draft{Title: "bill 1", Category: "billing"}, "ann").Message
	n1 := e.broadcast(inbox.Draft{Title: "news 1", Category: "news"})
	e.clock.Advance(time.Second)
	b2 := e.broadcastTo("admins", inbox.Draft{Title: "bill 2", Category: "billing"})
	shown := e.listAll(ann, inbox.ListOptions{Category: "billing"})
	e.clock.Advance(time.Second)
	b3 := e.publish(inbox.Draft{Title: "bill 3 (after the view)", Category: "billing"}, "ann").Message
	arch := copyFor(e.publish(inbox.Draft{Title: "archived bill", Category: "billing"}, "ann").Message, "ann")
	if _, err := e.ib.Archive(e.ctx, ann, arch.ID); err != nil {
		e.t.Fatal(err)
	}
	arch.ArchivedAt = e.clock.Now()
	// The billing tab showed bill 2 and bill 1: only they are marked.
	n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Category: "billing", UpTo: shown[0].ID, Limit: 1, Cursor: "ignored"})
	if n != 2 || err != nil {
		e.t.Errorf("MarkAllRead(billing, up to %s) = %d, %v; want 2", shown[0].ID, n, err)
	}
	at := e.clock.Now()
	e.wantFeed(ann, inbox.ListOptions{}, copyFor(b3, "ann"), read(b2, at), n1, read(copyFor(b1, "ann"), at))
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Archived: true}); n != 1 || err != nil {
		e.t.Errorf("MarkAllRead(archived) = %d, %v; want 1", n, err)
	}
	e.wantFeed(ann, inbox.ListOptions{Archived: true}, read(arch, at))
	e.wantFeed(ann, inbox.ListOptions{UnreadOnly: true}, copyFor(b3, "ann"), n1)
	e.wantCountsFromFeed(ann)
}

// testListUpTo: ListOptions.UpTo lists only messages up to an ID, paging
// without gaps or repeats; IDAt turns a time into such an ID.
func testListUpTo(e *env) {
	ann := e.user("ann")
	var msgs []driver.Message
	for i := range 6 {
		if i%2 == 0 {
			msgs = append([]driver.Message{copyFor(e.publish(inbox.Draft{Title: "direct"}, "ann").Message, "ann")}, msgs...)
		} else {
			msgs = append([]driver.Message{e.broadcast(inbox.Draft{Title: "broadcast"})}, msgs...)
		}
		e.clock.Advance(time.Second)
	}
	e.wantFeed(ann, inbox.ListOptions{UpTo: msgs[2].ID, Limit: 2}, msgs[2:]...)
	e.wantFeed(ann, inbox.ListOptions{UpTo: inbox.IDAt(msgs[3].DeliveredAt), Limit: 1}, msgs[3:]...)
	e.wantFeed(ann, inbox.ListOptions{UpTo: inbox.IDAt(time.Unix(0, 0))})
	e.wantFeed(ann, inbox.ListOptions{UpTo: "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"}, msgs...)
}

// testStatesBadInput: the new operations validate their input like the
// others and write nothing when it is bad.
func testStatesBadInput(e *env) {
	ann := e.user("ann")
	d := e.publish(inbox.Draft{Title: "x"}, "ann").Message
	bad := driver.User{Scope: e.scope, ID: "a#b"}
	before := e.snapshot()
	for name, c := range map[string]struct {
		op   func() error
		want error
	}{
		"archive, bad id":     {func() error { _, err := e.ib.Archive(e.ctx, ann, "nope"); return err }, driver.ErrInvalidKey},
		"unarchive, bad user": {func() error { _, err := e.ib.Unarchive(e.ctx, bad, d.ID); return err }, driver.ErrInvalidKey},
		"delete, bad id":      {func() error { _, err := e.ib.Delete(e.ctx, ann, "m#1"); return err }, driver.ErrInvalidKey},
		"seen, bad user":      {func() error { _, err := e.ib.MarkSeen(e.ctx, bad); return err }, driver.ErrInvalidKey},
		"list, bad up-to":     {func() error { _, err := e.ib.List(e.ctx, ann, inbox.ListOptions{UpTo: "yesterday"}); return err }, driver.ErrInvalidInput},
		"mark all, bad up-to": {func() error { _, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{UpTo: "x"}); return err }, driver.ErrInvalidInput},
		"mark all, bad group": {func() error { _, err := e.ib.MarkAllRead(e.ctx, ann.InGroups("a*"), inbox.ListOptions{}); return err }, driver.ErrInvalidKey},
		"redact, nothing":     {func() error { _, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{}); return err }, driver.ErrInvalidInput},
		"redact, no audience": {func() error { _, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: d.ID}); return err }, driver.ErrInvalidInput},
		"redact, bad user": {func() error {
			_, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: d.ID, Users: []string{"ann", "$public"}})
			return err
		}, driver.ErrInvalidKey},
		"redact, bad group": {func() error {
			_, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: d.ID, Group: "a?"})
			return err
		}, driver.ErrInvalidKey},
		"redact, bad scope": {func() error {
			_, err := e.ib.Redact(e.ctx, driver.Scope{Tenant: "a*"}, inbox.Redaction{ID: d.ID, Users: []string{"ann"}})
			return err
		}, driver.ErrInvalidKey},
		"archive, unknown id": {func() error { _, err := e.ib.Archive(e.ctx, ann, e.newID()); return err }, driver.ErrNotFound},
		"unarchive, unknown":  {func() error { _, err := e.ib.Unarchive(e.ctx, ann, e.newID()); return err }, driver.ErrNotFound},
	} {
		if err := c.op(); !errors.Is(err, c.want) {
			e.t.Errorf("%s: %v, want %v", name, err, c.want)
		}
		e.wantUnchanged(name, before)
	}
}

// testInteracted: MarkInteracted records the interaction on a direct
// message and on a broadcast (the user's receipt), marks an unread one
// read (Counts follow) and keeps an earlier read's time, reports false the
// second time, and is ErrNotFound for a message the user cannot see and
// ErrInvalidKey for a malformed ID, writing nothing.
func testInteracted(e *env) {
	ann := e.user("ann")
	d := e.publish(inbox.Draft{Title: "direct", Category: "billing"}, "ann").Message
	b := e.broadcast(inbox.Draft{Title: "everyone"})
	read := e.publish(inbox.Draft{Title: "read before"}, "ann").Message
	e.markRead(ann, read.ID, true)
	readAt := e.clock.Now().Truncate(time.Second)
	e.clock.Advance(time.Minute)
	at := e.clock.Now().Truncate(time.Second)
	for _, id := range []string{d.ID, b.ID, read.ID} {
		if changed, err := e.ib.MarkInteracted(e.ctx, ann, id); err != nil || !changed {
			e.t.Errorf("MarkInteracted(%s) = %v, %v; want true, nil", id, changed, err)
		}
		if changed, err := e.ib.MarkInteracted(e.ctx, ann, id); err != nil || changed {
			e.t.Errorf("MarkInteracted(%s) again = %v, %v; want false, nil", id, changed, err)
		}
	}
	for _, m := range e.listAll(ann, inbox.ListOptions{}) {
		wantRead := at
		if m.ID == read.ID {
			wantRead = readAt
		}
		if !m.InteractedAt.Equal(at) || !m.ReadAt.Equal(wantRead) {
			e.t.Errorf("message %s: InteractedAt %v, ReadAt %v; want %v, %v", m.ID, m.InteractedAt, m.ReadAt, at, wantRead)
		}
	}
	if m, err := e.ib.Get(e.ctx, ann, b.ID); err != nil || !m.InteractedAt.Equal(at) {
		e.t.Errorf("Get of the broadcast: %v, %v; want interacted at %v", m.InteractedAt, err, at)
	}
	if c := e.counts(ann); c.Unread != 0 || c.Read != 3 {
		e.t.Errorf("Counts(ann) %+v, want all 3 read", c)
	}
	e.wantCountsFromFeed(ann)
	before := e.records(e.part("ann"))
	if _, err := e.ib.MarkInteracted(e.ctx, e.user("bob"), d.ID); !errors.Is(err, inbox.ErrNotFound) {
		e.t.Errorf("MarkInteracted of another user's message: %v, want ErrNotFound", err)
	}
	if _, err := e.ib.MarkInteracted(e.ctx, ann, "not an id"); !errors.Is(err, inbox.ErrInvalidKey) {
		e.t.Errorf("MarkInteracted of a malformed ID: %v, want ErrInvalidKey", err)
	}
	e.wantRecords("ann's records after refused interactions", before, e.records(e.part("ann")))
	e.checkInvariant()
}

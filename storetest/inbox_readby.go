package storetest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// readByTests are the Inbox subtests of inbox.Inbox.ReadBy.
func readByTests() []suiteTest {
	return []suiteTest{
		{"ReadBy", testReadBy},
		{"ReadByGone", testReadByGone},
		{"ReadByForeign", testReadByForeign},
		{"ReadByForeignEdited", testReadByForeignEdited},
		{"ReadByBadInput", testReadByBadInput},
		{"ReadByNotHers", testReadByNotHers},
		{"ReadByEvents", testReadByEvents},
	}
}

// readBy returns ReadBy's answer for u's msgs, as "id:user,user" per
// message, the IDs shortened to their last 4 characters.
func (e *env) readBy(u driver.User, msgs []driver.Message, members ...string) string {
	e.t.Helper()
	rb, err := e.ib.ReadBy(e.ctx, u, msgs, members...)
	if err != nil {
		e.t.Fatalf("ReadBy(%s, %d messages, %v): %v", u.ID, len(msgs), members, err)
	}
	if len(rb) != len(msgs) {
		e.t.Fatalf("ReadBy(%s): %d answers for %d messages", u.ID, len(rb), len(msgs))
	}
	var out []string
	for i, r := range rb {
		if r.ID != msgs[i].ID {
			e.t.Errorf("ReadBy(%s)[%d] is of %s, want %s", u.ID, i, r.ID, msgs[i].ID)
		}
		var who []string
		for _, rd := range r.Readers {
			who = append(who, rd.User)
		}
		out = append(out, r.ID[22:]+":"+strings.Join(who, ","))
	}
	return strings.Join(out, " ")
}

// short returns the readBy form of msgs, each with its readers.
func short(m ...any) string {
	var out []string
	for i := 0; i < len(m); i += 2 {
		out = append(out, m[i].(driver.Message).ID[22:]+":"+m[i+1].(string))
	}
	return strings.Join(out, " ")
}

// testReadBy: for a page of a group chat, ReadBy lists, per message, the
// members whose receipts are read, by user ID, with when, the sender left
// out, whoever asks; members keeps only those (and the asker); a member
// who archives keeps her read, one who deletes the message for herself
// unreads it. For a one-to-one chat it lists the other user if her copy
// is read, and the asker if hers is.
func testReadBy(e *env) {
	ann, bob, carol := e.member("ann", "team"), e.member("bob", "team"), e.member("carol", "team")
	g1 := e.broadcastTo("team", inbox.Draft{Sender: "ann", Thread: "team", Title: "standup?"})
	g2 := e.broadcastTo("team", inbox.Draft{Sender: "ann", Thread: "team", Title: "room 2"})
	g3 := e.broadcastTo("team", inbox.Draft{Sender: "carol", Thread: "team", Title: "ok"})
	dm := e.publish(inbox.Draft{Sender: "ann", Thread: "ann-bob", Title: "lunch?"}, "ann", "bob").Message
	page := func(u driver.User, thread string) []driver.Message {
		return e.listAll(u, inbox.ListOptions{Thread: thread})
	}
	if got, want := e.readBy(ann, page(ann, "team")), short(g3, "", g2, "", g1, ""); got != want {
		e.t.Errorf("ReadBy before any read: %s, want %s (the senders' own reads do not count)", got, want)
	}
	e.markRead(ann, g3.ID, true)
	e.clock.Advance(time.Second)
	at := e.clock.Now()
	for _, id := range []string{g1.ID, g2.ID, dm.ID} {
		e.markRead(bob, id, true)
	}
	e.clock.Advance(time.Second)
	e.markRead(carol, g2.ID, true)
	want := short(g3, "ann", g2, "bob,carol", g1, "bob")
	for _, u := range []driver.User{ann, bob, carol} {
		if got := e.readBy(u, page(u, "team")); got != want {
			e.t.Errorf("ReadBy(%s) of the group chat: %s, want %s", u.ID, got, want)
		}
	}
	rb, err := e.ib.ReadBy(e.ctx, ann, []driver.Message{g2})
	if err != nil || len(rb) != 1 || fmt.Sprint(rb[0].Readers) != fmt.Sprint([]inbox.Reader{{User: "bob", ReadAt: at}, {User: "carol", ReadAt: at.Add(time.Second)}}) {
		e.t.Errorf("ReadBy(ann, room 2) = %+v, %v; want bob at %v, carol a second later", rb, err, at)
	}
	if got, want := e.readBy(ann, page(ann, "team"), "carol"), short(g3, "ann", g2, "carol", g1, ""); got != want {
		e.t.Errorf("ReadBy(ann) of the group chat with member carol: %s, want %s", got, want)
	}
	if got, want := e.readBy(ann, page(ann, "ann-bob"), "bob"), short(dm, "bob"); got != want {
		e.t.Errorf("ReadBy(ann) of the one-to-one chat: %s, want %s", got, want)
	}
	if got, want := e.readBy(bob, page(bob, "ann-bob"), "ann"), short(dm, "bob"); got != want {
		e.t.Errorf("ReadBy(bob) of the one-to-one chat: %s, want %s (his own read; ann sent it)", got, want)
	}
	if got, want := e.readBy(ann, page(ann, "ann-bob")), short(dm, ""); got != want {
		e.t.Errorf("ReadBy(ann) of the one-to-one chat without members: %s, want %s", got, want)
	}

	// An archive keeps the read; a delete for oneself unreads.
	if ok, err := e.ib.Archive(e.ctx, bob, g2.ID); err != nil || !ok {
		e.t.Fatalf("Archive: %v, %v", ok, err)
	}
	if ok, err := e.ib.Delete(e.ctx, bob, g1.ID); err != nil || !ok {
		e.t.Fatalf("Delete: %v, %v", ok, err)
	}
	if got, want := e.readBy(ann, page(ann, "team")), short(g3, "ann", g2, "bob,carol", g1, ""); got != want {
		e.t.Errorf("ReadBy(ann) after bob archived room 2 and deleted standup: %s, want %s", got, want)
	}
	// MarkAllRead of the thread writes the readers too.
	if n, err := e.ib.MarkAllRead(e.ctx, carol, inbox.ListOptions{Thread: "team"}); err != nil || n != 1 {
		e.t.Errorf("MarkAllRead(carol, team) = %d, %v; want 1", n, err)
	}
	if got, want := e.readBy(ann, page(ann, "team")), short(g3, "ann", g2, "bob,carol", g1, "carol"); got != want {
		e.t.Errorf("ReadBy(ann) after carol marked the chat read: %s, want %s", got, want)
	}
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)
	e.wantCountsFromFeed(carol)
}

// testReadByGone: a message that expired, or that was removed for
// everyone (Redact), has no readers, though a stale page still holds it;
// a read receipt another program deletes takes its reader with it, once
// the stream accounts the deletion.
func testReadByGone(e *env) {
	ann, bob, carol := e.member("ann", "team"), e.member("bob", "team"), e.member("carol", "team")
	short1 := e.broadcastTo("team", inbox.Draft{Sender: "ann", Thread: "team", Title: "brief", TTL: time.Hour})
	long := e.broadcastTo("team", inbox.Draft{Sender: "ann", Thread: "team", Title: "long", TTL: 3 * time.Hour})
	redacted := e.broadcastTo("team", inbox.Draft{Sender: "ann", Thread: "team", Title: "oops", TTL: 3 * time.Hour})
	dm := e.publish(inbox.Draft{Sender: "ann", Thread: "ann-bob", Title: "brief", TTL: time.Hour}, "ann", "bob").Message
	for _, id := range []string{short1.ID, long.ID, redacted.ID} {
		e.markRead(bob, id, true)
		e.markRead(carol, id, true)
	}
	e.markRead(bob, dm.ID, true)
	stale := e.listAll(ann, inbox.ListOptions{Thread: "team"})
	staleDM := e.listAll(ann, inbox.ListOptions{Thread: "ann-bob"})
	if got, want := e.readBy(ann, stale), short(redacted, "bob,carol", long, "bob,carol", short1, "bob,carol"); got != want {
		e.t.Fatalf("ReadBy(ann) at first: %s, want %s", got, want)
	}
	if n, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: redacted.ID, Group: "team"}); err != nil || n != 1 {
		e.t.Fatalf("Redact: %d, %v", n, err)
	}
	if got, want := e.readBy(ann, stale), short(redacted, "", long, "bob,carol", short1, "bob,carol"); got != want {
		e.t.Errorf("ReadBy(ann) of a stale page after a redaction: %s, want %s", got, want)
	}
	if h, ok := e.harness(); ok {
		e.remove(h, driver.Key{Partition: partitionOf(carol), ID: long.ID}) // another program's delete of her receipt
		e.deliver(h)
		if got, want := e.readBy(ann, stale), short(redacted, "", long, "bob", short1, "bob,carol"); got != want {
			e.t.Errorf("ReadBy(ann) after carol's receipt was deleted: %s, want %s", got, want)
		}
	}
	e.clock.Advance(time.Hour)
	if got, want := e.readBy(ann, staleDM, "bob"), short(dm, ""); got != want {
		e.t.Errorf("ReadBy(ann) of an expired one-to-one message: %s, want %s", got, want)
	}
	if got := e.readBy(ann, stale); !strings.HasSuffix(got, short(short1, "")) {
		e.t.Errorf("ReadBy(ann) of a stale page after the brief message expired: %s, want it read by none", got)
	}
	e.wantCountsFromFeed(ann)
}

// testReadByForeign: another program's read receipt of a thread's
// broadcast (the seeds' design knows no threads) is not a reader until
// it is adopted into the thread (here by the stream handler's adoption
// of its INSERT), then it is; another program's read of the library's
// receipt (the seeds' SET readat) counts once the stream handler
// recounts it.
func testReadByForeign(e *env) {
	w := e.foreignWriter()
	ann, bob, dave := e.user("ann"), e.user("bob"), e.user("dave")
	g := e.broadcast(inbox.Draft{Sender: "ann", Thread: "news", Title: "release"})
	g2 := e.broadcast(inbox.Draft{Sender: "ann", Thread: "news", Title: "release notes"})
	// bob archives the notes: his receipt, unread; the other program reads it.
	if ok, err := e.ib.Archive(e.ctx, bob, g2.ID); err != nil || !ok {
		e.t.Fatalf("Archive: %v, %v", ok, err)
	}
	at := e.clock.Now()
	rec := driver.Record{Partition: partitionOf(dave), Receipt: true, Message: driver.Message{ID: g.ID, ReadAt: at, ExpiresAt: g.ExpiresAt}}
	if err := w.PutForeign(e.ctx, rec, delta(partitionOf(dave), "", 0, 1)); err != nil { // as the seeds count
		e.t.Fatalf("PutForeign(dave's receipt): %v", err)
	}
	modify := e.readForeign(partitionOf(bob), g2)
	page := e.listAll(ann, inbox.ListOptions{Thread: "news"})
	if got, want := e.readBy(ann, page), short(g2, "", g, ""); got != want {
		e.t.Errorf("ReadBy(ann) before the stream handler saw the other program's reads: %s, want %s", got, want)
	}
	if err := e.ib.HandleChange(e.ctx, driver.Change{ID: "insert-1", Op: driver.ChangeInsert, At: at, New: &rec}); err != nil {
		e.t.Fatalf("HandleChange(INSERT of dave's receipt): %v", err)
	}
	if err := e.ib.HandleChange(e.ctx, modify); err != nil {
		e.t.Fatalf("HandleChange(MODIFY of bob's receipt): %v", err)
	}
	if got, want := e.readBy(ann, page), short(g2, "bob", g, "dave"); got != want {
		e.t.Errorf("ReadBy(ann) after the stream handler adopted and recounted them: %s, want %s", got, want)
	}
	e.wantCountsFromFeed(dave)
	e.wantCountsFromFeed(bob)
}

// testReadByForeignEdited: another program's read of a receipt the
// user deleted does not make her a reader, once the stream handler
// recounts it or before; its read of a receipt the user archived unread
// does once she unarchives it, before the stream handler sees that read
// (her mark keeps it).
func testReadByForeignEdited(e *env) {
	ann, bob, carol := e.member("ann", "team"), e.member("bob", "team"), e.member("carol", "team")
	g := e.broadcastTo("team", inbox.Draft{Sender: "ann", Thread: "team", Title: "standup?"})
	e.markRead(bob, g.ID, true)
	if ok, err := e.ib.Delete(e.ctx, bob, g.ID); err != nil || !ok {
		e.t.Fatalf("Delete(bob): %v, %v", ok, err)
	}
	if ok, err := e.ib.Archive(e.ctx, carol, g.ID); err != nil || !ok {
		e.t.Fatalf("Archive(carol): %v, %v", ok, err)
	}
	e.clock.Advance(time.Second)
	bobRead, carolRead := e.readForeign(partitionOf(bob), g), e.readForeign(partitionOf(carol), g)
	if ok, err := e.ib.Unarchive(e.ctx, carol, g.ID); err != nil || !ok {
		e.t.Fatalf("Unarchive(carol): %v, %v", ok, err)
	}
	page := e.listAll(ann, inbox.ListOptions{Thread: "team"})
	if got, want := e.readBy(ann, page), short(g, "carol"); got != want {
		e.t.Errorf("ReadBy(ann) before the stream handler saw the other program's reads: %s, want %s", got, want)
	}
	for _, c := range []driver.Change{bobRead, carolRead} {
		if err := e.ib.HandleChange(e.ctx, c); err != nil {
			e.t.Fatalf("HandleChange(MODIFY of %s's receipt): %v", c.New.Partition.User, err)
		}
	}
	if got, want := e.readBy(ann, page), short(g, "carol"); got != want {
		e.t.Errorf("ReadBy(ann) after the stream handler recounted them: %s, want %s", got, want)
	}
	e.wantCountsFromFeed(bob)
	e.wantCountsFromFeed(carol)
}

// testReadByBadInput: a message of no thread, with a bad ID, not the
// user's (another user's copy, a group she does not name, another kind of
// audience), a member that is no user's key, and too many messages or
// members are refused with ErrInvalidInput or ErrInvalidKey, writing
// nothing.
func testReadByBadInput(e *env) {
	ann := e.member("ann", "team")
	g := e.broadcastTo("team", inbox.Draft{Sender: "bob", Thread: "team", Title: "hi"})
	other := e.broadcastTo("other", inbox.Draft{Sender: "bob", Thread: "other", Title: "not ann's"})
	dm := e.publish(inbox.Draft{Sender: "bob", Thread: "ann-bob", Title: "hi"}, "ann", "bob").Message
	plain := e.publish(inbox.Draft{Title: "no thread"}, "ann").Message
	badUser := e.user("a#b")
	before := e.snapshot()
	bobsCopy := dm
	bobsCopy.Audience.UIDs = []string{"bob"}
	badID := g
	badID.ID = "not-an-id"
	badThread := g
	badThread.Thread = "a#b"
	noKind := g
	noKind.Audience.Kind = ""
	many := make([]driver.Message, inbox.MaxPageSize+1)
	for i := range many {
		many[i] = g
	}
	members := make([]string, inbox.MaxPageSize+1)
	for i := range members {
		members[i] = fmt.Sprintf("u%d", i)
	}
	for _, c := range []struct {
		name    string
		u       driver.User
		msgs    []driver.Message
		members []string
		want    error
	}{
		{"a message of no thread", ann, []driver.Message{g, copyFor(plain, "ann")}, nil, inbox.ErrInvalidInput},
		{"a bad ID", ann, []driver.Message{badID}, nil, inbox.ErrInvalidKey},
		{"a bad thread", ann, []driver.Message{badThread}, nil, inbox.ErrInvalidKey},
		{"another user's copy", ann, []driver.Message{bobsCopy}, nil, inbox.ErrInvalidInput},
		{"a group she does not name", ann, []driver.Message{other}, nil, inbox.ErrInvalidInput},
		{"a group she left", e.user("ann"), []driver.Message{g}, nil, inbox.ErrInvalidInput},
		{"no audience kind", ann, []driver.Message{noKind}, nil, inbox.ErrInvalidInput},
		{"a bad member", ann, []driver.Message{g}, []string{"a#b"}, inbox.ErrInvalidKey},
		{"the public group as a member", ann, []driver.Message{g}, []string{driver.PublicGroup}, inbox.ErrInvalidKey},
		{"too many messages", ann, many, nil, inbox.ErrInvalidInput},
		{"too many members", ann, []driver.Message{g}, members, inbox.ErrInvalidInput},
		{"a bad user", badUser, []driver.Message{g}, nil, inbox.ErrInvalidKey},
	} {
		if _, err := e.ib.ReadBy(e.ctx, c.u, c.msgs, c.members...); !errors.Is(err, c.want) {
			e.t.Errorf("ReadBy with %s: %v, want %v", c.name, err, c.want)
		}
	}
	e.wantUnchanged("ReadBy with bad input", before)
	if rb, err := e.ib.ReadBy(e.ctx, ann, nil); err != nil || len(rb) != 0 {
		e.t.Errorf("ReadBy of no messages = %v, %v; want none", rb, err)
	}
}

// testReadByNotHers: ReadBy tells whether a member read a direct message
// only of a message the asker holds: her own (she sent it) or one she has
// a copy of. A message she passes as hers, of other users' chat, says
// nothing of its readers, whatever sender she gives it; a message of a
// chat of three, one of the others sent, says which of the others read
// it, at one more read of her own copy.
func testReadByNotHers(e *env) {
	ann, bob, carol := e.user("ann"), e.user("bob"), e.user("carol")
	private := e.publish(inbox.Draft{Sender: "carol", Thread: "bob-carol", Title: "between us"}, "bob", "carol").Message
	e.markRead(bob, private.ID, true)
	for _, sender := range []string{"ann", "carol", ""} {
		forged := copyFor(private, "ann")
		forged.Sender = sender
		if got, want := e.readBy(ann, []driver.Message{forged}, "bob", "carol"), short(private, ""); got != want {
			e.t.Errorf("ReadBy(ann) of bob and carol's message, passed as hers with sender %q: %s, want %s (no reader)", sender, got, want)
		}
	}
	if got, want := e.readBy(carol, e.listAll(carol, inbox.ListOptions{Thread: "bob-carol"}), "bob"), short(private, "bob"); got != want {
		e.t.Errorf("ReadBy(carol) of her own message: %s, want %s", got, want)
	}
	three := e.publish(inbox.Draft{Sender: "carol", Thread: "abc", Title: "all three"}, "ann", "bob", "carol").Message
	e.markRead(bob, three.ID, true)
	page := e.listAll(ann, inbox.ListOptions{Thread: "abc"})
	if got, want := e.readBy(ann, page, "bob", "carol"), short(three, "bob"); got != want {
		e.t.Errorf("ReadBy(ann) of carol's message to the three of them: %s, want %s", got, want)
	}
	other := page[0]
	other.Thread = "bob-carol"
	if got, want := e.readBy(ann, []driver.Message{other}, "bob"), short(three, ""); got != want {
		e.t.Errorf("ReadBy(ann) of her copy passed with another thread: %s, want %s", got, want)
	}
}

// testReadByEvents: another member's read of a thread's message comes as
// a read event in the reader's partition that names the message, its
// thread and, for a group's, the group: what a host needs to push the
// second tick to the chat's pages (then ReadBy, or the event itself,
// updates the page).
func testReadByEvents(e *env) {
	src, ib, events := e.eventInbox()
	_, bob := e.member("ann", "team"), e.member("bob", "team")
	g := e.broadcastTo("team", inbox.Draft{Sender: "ann", Thread: "team", Title: "standup?"})
	dm := e.publish(inbox.Draft{Sender: "ann", Thread: "ann-bob", Title: "lunch?"}, "ann", "bob").Message
	if _, err := src.DeliverEvents(e.ctx, ib); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	events.take()
	at := e.clock.Now()
	e.markRead(bob, g.ID, true)
	e.markRead(bob, dm.ID, true)
	if _, err := src.DeliverEvents(e.ctx, ib); err != nil {
		e.t.Fatalf("DeliverEvents: %v", err)
	}
	want := map[string]string{
		g.ID:  fmt.Sprintf("read in %s: thread team, group team, read at %v", partitionOf(bob).PK(), at),
		dm.ID: fmt.Sprintf("read in %s: thread ann-bob, group , read at %v", partitionOf(bob).PK(), at),
	}
	for _, ev := range events.take() {
		got := fmt.Sprintf("%s in %s: thread %s, group %s, read at %v", ev.Kind, ev.Partition.PK(), ev.Message.Thread, ev.Message.Audience.Group, ev.Message.ReadAt)
		if want[ev.Message.ID] != got {
			e.t.Errorf("event of %s: %s; want %s", ev.Message.ID, got, want[ev.Message.ID])
		}
		delete(want, ev.Message.ID)
	}
	for id, w := range want {
		e.t.Errorf("no event of %s: want %s", id, w)
	}
}

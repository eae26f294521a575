package storetest

import (
	"errors"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// snoozeTests are the Inbox subtests about snooze.
func snoozeTests() []suiteTest {
	return []suiteTest{
		{"Snooze", testSnooze},
		{"SnoozeBadInput", testSnoozeBadInput},
		{"SnoozedRemovedBehindItsBack", testSnoozedRemovedBehindItsBack},
		{"SnoozedAgainAtOneKey", testSnoozedAgainAtOneKey},
		{"SnoozedReadByAnotherProgram", testSnoozedReadByAnotherProgram},
	}
}

// testSnooze: a snoozed direct message, broadcast and group message leave
// the feed and its counts (and Unseen) for the snoozed view and
// Counts.Snoozed, a second before their time still, and come back at it,
// in their place, with their marks as they were (a mark made while
// snoozed included); Unsnooze brings one back at once, a new Snooze moves
// the time, Delete and Redact end one, and Counts equals List throughout.
func testSnooze(e *env) {
	ann := e.member("ann", "ops")
	start := e.clock.Now().UTC().Truncate(time.Second)
	direct := e.publish(inbox.Draft{Title: "direct", Category: "billing", TTL: 24 * time.Hour}, "ann").Message
	read := e.publish(inbox.Draft{Title: "read", TTL: 24 * time.Hour}, "ann").Message
	pub := e.broadcast(inbox.Draft{Title: "everyone", TTL: 24 * time.Hour})
	grp := e.broadcastTo("ops", inbox.Draft{Title: "ops", Category: "billing", TTL: 24 * time.Hour})
	gone := e.broadcast(inbox.Draft{Title: "to redact", TTL: 24 * time.Hour})
	e.markRead(ann, read.ID, true)
	e.markSeen(ann)
	e.clock.Advance(time.Second)
	newer := e.publish(inbox.Draft{Title: "after the watermark", TTL: 24 * time.Hour}, "ann").Message

	back := start.Add(time.Hour)
	snooze := func(id string, until time.Time, want bool) {
		e.t.Helper()
		if changed, err := e.ib.Snooze(e.ctx, ann, id, until); err != nil || changed != want {
			e.t.Errorf("Snooze(%s, %v) = %v, %v; want %v, nil", id, until, changed, err, want)
		}
	}
	for _, id := range []string{direct.ID, read.ID, pub.ID, grp.ID, gone.ID, newer.ID} {
		snooze(id, back, true)
	}
	snooze(direct.ID, back.Add(300*time.Millisecond), false) // the same second
	e.wantCountsFromFeed(ann)
	if c := e.counts(ann); c.Total != 0 || c.Snoozed != 6 || c.Unseen != 0 {
		e.t.Errorf("all snoozed: Counts(ann) %+v, want Total 0, Snoozed 6", c)
	}
	snoozed := e.listAll(ann, inbox.ListOptions{Snoozed: true, Limit: 2})
	if got, want := ids(snoozed), []string{newer.ID, gone.ID, grp.ID, pub.ID, read.ID, direct.ID}; !cmp.Equal(got, want) {
		e.t.Errorf("the snoozed view %v, want %v", got, want)
	}
	for _, m := range snoozed {
		if !m.SnoozedUntil.Equal(back) {
			e.t.Errorf("snoozed message %s: SnoozedUntil %v, want %v", m.ID, m.SnoozedUntil, back)
		}
	}
	if got := ids(e.listAll(ann, inbox.ListOptions{Snoozed: true, Category: "billing", UnreadOnly: true})); !cmp.Equal(got, []string{grp.ID, direct.ID}) {
		e.t.Errorf("the snoozed view of unread billing: %v, want the group message and the direct one", got)
	}
	// Marks while snoozed: the message stays snoozed and out of the
	// counts; they show when it returns.
	e.markRead(ann, pub.ID, true)
	if changed, err := e.ib.Archive(e.ctx, ann, grp.ID); err != nil || !changed {
		e.t.Errorf("Archive of a snoozed group message: %v, %v", changed, err)
	}
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{}); err != nil || n != 0 {
		e.t.Errorf("MarkAllRead with everything snoozed = %d, %v; want 0 (the feed is empty)", n, err)
	}
	if n, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: gone.ID, Group: driver.PublicGroup}); err != nil || n != 1 {
		e.t.Errorf("Redact of a snoozed broadcast = %d, %v", n, err)
	}
	if changed, err := e.ib.Unsnooze(e.ctx, ann, newer.ID); err != nil || !changed {
		e.t.Errorf("Unsnooze = %v, %v; want true", changed, err)
	}
	if changed, err := e.ib.Unsnooze(e.ctx, ann, newer.ID); err != nil || changed {
		e.t.Errorf("Unsnooze again = %v, %v; want false", changed, err)
	}
	snooze(read.ID, back.Add(time.Hour), true) // later
	e.wantCountsFromFeed(ann)
	if c := e.counts(ann); c.Total != 1 || c.Unseen != 1 || c.Snoozed != 4 {
		e.t.Errorf("after an unsnooze and a redaction: Counts(ann) %+v, want Total 1, Unseen 1, Snoozed 4", c)
	}

	setClock(e, back.Add(-time.Second))
	e.wantCountsFromFeed(ann)
	if got := ids(e.listAll(ann, inbox.ListOptions{})); !cmp.Equal(got, []string{newer.ID}) {
		e.t.Errorf("a second before their time: ann's feed %v, want only the unsnoozed one", got)
	}
	setClock(e, back)
	e.wantCountsFromFeed(ann)
	feed := e.listAll(ann, inbox.ListOptions{})
	if got, want := ids(feed), []string{newer.ID, pub.ID, direct.ID}; !cmp.Equal(got, want) {
		e.t.Errorf("at their time: ann's feed %v, want %v", got, want)
	}
	for _, m := range feed {
		if m.ID == pub.ID && !m.IsRead() || m.ID == direct.ID && m.IsRead() {
			e.t.Errorf("returned message %s: read %v, want its marks as they were", m.ID, m.IsRead())
		}
	}
	if got := ids(e.listAll(ann, inbox.ListOptions{Archived: true})); !cmp.Equal(got, []string{grp.ID}) {
		e.t.Errorf("at their time: ann's archive %v, want the group message archived while snoozed", got)
	}
	if c := e.counts(ann); c.Total != 3 || c.Unread != 2 || c.Unseen != 1 || c.Snoozed != 1 || c.Archived != 1 {
		e.t.Errorf("at their time: Counts(ann) %+v, want Total 3, Unread 2, Unseen 1 (below the watermark stays seen), Archived 1, Snoozed 1", c)
	}
	// Delete ends a snooze: the direct message goes, the broadcast hides.
	snooze(direct.ID, back.Add(time.Hour), true)
	snooze(pub.ID, back.Add(time.Hour), true)
	for _, id := range []string{direct.ID, pub.ID} {
		if changed, err := e.ib.Delete(e.ctx, ann, id); err != nil || !changed {
			e.t.Errorf("Delete of snoozed %s = %v, %v", id, changed, err)
		}
	}
	e.wantCountsFromFeed(ann)
	if c := e.counts(ann); c.Snoozed != 1 {
		e.t.Errorf("after deleting two snoozed messages: Snoozed %d, want 1", c.Snoozed)
	}
	setClock(e, back.Add(2*time.Hour))
	e.wantCountsFromFeed(ann)
	if c := e.counts(ann); c.Snoozed != 0 || c.Total != 2 {
		e.t.Errorf("every snooze over: Counts(ann) %+v, want Total 2, Snoozed 0", c)
	}
	if h, ok := e.harness(); ok {
		e.deliver(h)
		e.wantCountsFromFeed(ann)
	}
	e.checkInvariant()
}

// testSnoozeBadInput: a time not after now, more than MaxTTL ahead or not
// before the message's expiry, a message of a thread, and a snoozed view
// with Archived, Thread or UpTo are ErrInvalidInput; an unknown or
// malformed ID is ErrNotFound or ErrInvalidKey; none writes anything.
func testSnoozeBadInput(e *env) {
	ann := e.user("ann")
	m := e.publish(inbox.Draft{Title: "one", TTL: time.Hour}, "ann").Message
	chat := e.publish(inbox.Draft{Title: "chat", Thread: "t1"}, "ann").Message
	now := e.clock.Now()
	before := e.records(e.part("ann"))
	for name, c := range map[string]struct {
		id    string
		until time.Time
		want  error
	}{
		"in the past":       {m.ID, now.Add(-time.Minute), inbox.ErrInvalidInput},
		"now":               {m.ID, now, inbox.ErrInvalidInput},
		"beyond MaxTTL":     {m.ID, now.Add(inbox.MaxTTL + time.Hour), inbox.ErrInvalidInput},
		"at its expiry":     {m.ID, m.ExpiresAt, inbox.ErrInvalidInput},
		"a thread":          {chat.ID, now.Add(time.Minute), inbox.ErrInvalidInput},
		"an unknown id":     {"01ARZ3NDEKTSV4RRFFQ69G5FAV", now.Add(time.Minute), inbox.ErrNotFound},
		"a malformed id":    {"x\x00", now.Add(time.Minute), inbox.ErrInvalidKey},
		"the zero time":     {m.ID, time.Time{}, inbox.ErrInvalidInput},
		"an id of the user": {"", now.Add(time.Minute), inbox.ErrInvalidKey},
	} {
		if _, err := e.ib.Snooze(e.ctx, ann, c.id, c.until); !errors.Is(err, c.want) {
			e.t.Errorf("Snooze of %s: %v, want %v", name, err, c.want)
		}
	}
	if _, err := e.ib.Snooze(e.ctx, e.user("a\x00"), m.ID, now.Add(time.Minute)); !errors.Is(err, inbox.ErrInvalidKey) {
		e.t.Errorf("Snooze for a malformed user: %v, want ErrInvalidKey", err)
	}
	for name, o := range map[string]inbox.ListOptions{
		"archived": {Snoozed: true, Archived: true},
		"thread":   {Snoozed: true, Thread: "t1"},
		"up to":    {Snoozed: true, UpTo: m.ID},
	} {
		if _, err := e.ib.List(e.ctx, ann, o); !errors.Is(err, inbox.ErrInvalidInput) {
			e.t.Errorf("the snoozed view with %s: %v, want ErrInvalidInput", name, err)
		}
	}
	e.wantRecords("ann's records after refused snoozes", before, e.records(e.part("ann")))
	st, err := e.store.Stats(e.ctx, driver.StatsQuery{Partition: e.part("ann"), Now: now})
	if err != nil || len(st.Snoozed) != 0 {
		e.t.Errorf("snooze entries after refused snoozes: %v, %v; want none", st.Snoozed, err)
	}
	e.wantCountsFromFeed(ann)
}

// testSnoozedRemovedBehindItsBack: a snoozed direct message and a snoozed
// broadcast deleted by another writer (a DeleteItem) leave the snoozed
// view at once and Counts.Snoozed when their removal is accounted (the
// documented lag of such deletes), and stay out of the counts whether the
// stream's removals come before a Recount, after it, or twice: the
// recount takes a gone record's snooze entry with its ledger entry.
func testSnoozedRemovedBehindItsBack(e *env) {
	h := e.needHarness()
	ann := e.user("ann")
	d := e.publish(inbox.Draft{Title: "direct", TTL: 24 * time.Hour}, "ann").Message
	b := e.broadcast(inbox.Draft{Title: "everyone", TTL: 24 * time.Hour})
	stays := e.publish(inbox.Draft{Title: "stays", TTL: 24 * time.Hour}, "ann").Message
	until := e.clock.Now().Add(time.Hour)
	for _, id := range []string{d.ID, b.ID, stays.ID} {
		if _, err := e.ib.Snooze(e.ctx, ann, id, until); err != nil {
			e.t.Fatalf("Snooze(%s): %v", id, err)
		}
	}
	e.remove(h, driver.Key{Partition: e.part("ann"), ID: d.ID})
	e.remove(h, driver.Key{Partition: e.pub(), ID: b.ID})
	check := func(when string) {
		e.t.Helper()
		e.wantCountsFromFeed(ann)
		if c := e.counts(ann); c.Snoozed != 1 || c.Total != 0 {
			e.t.Errorf("%s: Counts(ann) %+v, want Snoozed 1 (the one left), Total 0", when, c)
		}
	}
	if h.Pending() == 0 {
		check("removed and accounted") // else the documented lag: Counts follows the stream
	}
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Fatalf("Recount: %v", err)
	}
	check("after a recount")
	e.deliver(h)
	check("after the stream's late delivery")
	e.redeliver(h)
	check("after a redelivery")
	setClock(e, until)
	e.wantCountsFromFeed(ann)
	if c := e.counts(ann); c.Snoozed != 0 || c.Total != 1 {
		e.t.Errorf("after the snooze: Counts(ann) %+v, want Total 1", c)
	}
	e.checkInvariant()
}

// testSnoozedAgainAtOneKey: a snoozed receipt, and a snoozed copy
// published with a host system ID, deleted behind the library's back and
// made again at the same key (a new receipt; the publish retried) and
// snoozed again, to the same second or a later one, before the stream
// accounts the deletion: the late removal, a redelivery and a Recount
// before or after it take the old record's snooze entry, never the new
// one's, so Counts equals List throughout.
func testSnoozedAgainAtOneKey(e *env) {
	h := e.needHarness()
	ann := e.user("ann")
	b := e.broadcast(inbox.Draft{Title: "everyone", TTL: 24 * time.Hour})
	draft := inbox.Draft{Title: "direct", HostSystemID: "again-1", TTL: 24 * time.Hour}
	d := e.publish(draft, "ann").Message
	until := e.clock.Now().Add(time.Hour).Truncate(time.Second)
	snooze := func(id string, at time.Time) {
		e.t.Helper()
		if changed, err := e.ib.Snooze(e.ctx, ann, id, at); err != nil || !changed {
			e.t.Fatalf("Snooze(%s, %v) = %v, %v", id, at, changed, err)
		}
	}
	check := func(when string) {
		e.t.Helper()
		e.wantCountsFromFeed(ann)
		if c := e.counts(ann); c.Total != 0 || c.Snoozed != 2 {
			e.t.Errorf("%s: Counts(ann) %+v, want both snoozed", when, c)
		}
	}
	for round, again := range []time.Time{until, until.Add(time.Minute)} {
		snooze(b.ID, until)
		snooze(d.ID, until)
		e.remove(h, driver.Key{Partition: e.part("ann"), ID: b.ID})
		e.remove(h, driver.Key{Partition: e.part("ann"), ID: d.ID})
		if got := e.publish(draft, "ann").Message; got.ID != d.ID {
			e.t.Fatalf("the retried publish got ID %s, want %s", got.ID, d.ID)
		}
		snooze(b.ID, again)
		snooze(d.ID, again)
		if round == 1 {
			if _, err := e.ib.Recount(e.ctx, ann); err != nil {
				e.t.Fatalf("Recount: %v", err)
			}
			check("recounted before the stream's delivery")
		}
		e.deliver(h)
		check("after the stream's late delivery")
		e.redeliver(h)
		if _, err := e.ib.Recount(e.ctx, ann); err != nil {
			e.t.Fatalf("Recount: %v", err)
		}
		check("after a redelivery and a recount")
		for _, id := range []string{b.ID, d.ID} {
			if _, err := e.ib.Unsnooze(e.ctx, ann, id); err != nil {
				e.t.Fatalf("Unsnooze(%s): %v", id, err)
			}
		}
	}
	e.checkInvariant()
}

// testSnoozedReadByAnotherProgram: another program marks read, as the
// seeds do, a direct message and a broadcast ann snoozed. Once the stream
// hands its MODIFY records to the handler (or a Recount runs first), their
// snooze entries and ledger entries count them read, so Counts equals
// List while they are snoozed, after a redelivery, and when they return,
// read. (Before that, Counts takes them out with the marks they had: the
// documented lag.)
func testSnoozedReadByAnotherProgram(e *env) {
	e.foreignWriter()
	ann := e.user("ann")
	annP := e.part("ann")
	e.publish(inbox.Draft{Title: "stays unread", TTL: 24 * time.Hour}, "ann")
	until := e.clock.Now().Add(time.Hour).Truncate(time.Second)
	check := func(when string, snoozed, total, read int64) {
		e.t.Helper()
		e.wantCountsFromFeed(ann)
		if c := e.counts(ann); c.Snoozed != snoozed || c.Total != total || c.Read != read {
			e.t.Errorf("%s: Counts(ann) %+v, want Snoozed %d, Total %d, Read %d", when, c, snoozed, total, read)
		}
	}
	// readBoth snoozes a new direct message and a new broadcast, has the
	// other program read both, and returns the MODIFY records.
	readBoth := func() []driver.Change {
		e.t.Helper()
		d := e.publish(inbox.Draft{Title: "direct", Category: "billing", TTL: 24 * time.Hour}, "ann").Message
		b := e.broadcast(inbox.Draft{Title: "everyone", TTL: 24 * time.Hour})
		var out []driver.Change
		for _, m := range []driver.Message{d, b} {
			if _, err := e.ib.Snooze(e.ctx, ann, m.ID, until); err != nil {
				e.t.Fatalf("Snooze(%s): %v", m.ID, err)
			}
			out = append(out, e.readForeign(annP, m))
		}
		return out
	}
	handle := func(cs []driver.Change) {
		e.t.Helper()
		for _, c := range cs {
			if err := e.ib.HandleChange(e.ctx, c); err != nil {
				e.t.Fatalf("HandleChange: %v", err)
			}
		}
	}
	first := readBoth()
	handle(first)
	check("read by another program, the stream handled", 2, 1, 0)
	handle(first)
	check("and redelivered", 2, 1, 0)

	second := readBoth()
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Fatalf("Recount: %v", err)
	}
	check("read by another program, recounted before the stream", 4, 1, 0)
	handle(second)
	check("and the stream after", 4, 1, 0)

	setClock(e, until)
	check("back from the snooze", 0, 5, 4)
	e.checkInvariant()
}

package storetest

import (
	"context"
	"sync"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// removalTests are the Inbox subtests about removals: expiry, deletes, the
// stream's late and repeated accounting, and Recount racing it.
func removalTests() []suiteTest {
	return []suiteTest{
		{"CountsThroughExpiry", testCountsThroughExpiry},
		{"RedeliveredRemovals", testRedeliveredRemovals},
		{"RecountWhileRemovalsPending", testRecountWhileRemovalsPending},
		{"RecountBeforeForeignRemovals", testRecountBeforeForeignRemovals},
		{"ForeignDeletesAroundRecount", testForeignDeletesAroundRecount},
		{"RemovedBroadcast", testRemovedBroadcast},
		{"ReadByAnotherProgramThenExpiry", testReadByAnotherProgramThenExpiry},
		{"DeletedReadByAnotherProgram", testDeletedReadByAnotherProgram},
		{"RecountRacesAPublish", testRecountRacesAPublish},
	}
}

// expiryFixture publishes to ann and bob and broadcasts, with TTLs of one
// to three hours, and marks some read.
func (e *env) expiryFixture() {
	e.t.Helper()
	ann, bob := e.user("ann"), e.user("bob")
	for i, ttl := range []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour} {
		cat := []string{"billing", "", "news"}[i]
		d := e.publish(inbox.Draft{Title: "direct", Category: cat, TTL: ttl}, "ann", "bob").Message
		b := e.broadcast(inbox.Draft{Title: "broadcast", Category: cat, TTL: ttl})
		if i != 1 {
			e.markRead(ann, d.ID, true)
			e.markRead(bob, b.ID, true)
		}
		e.markRead(ann, b.ID, true)
	}
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)
}

// testCountsThroughExpiry: Counts equals what List shows at every instant
// while messages expire: one second before and at each expiry, whether the
// store still holds the expired records, has deleted them with their
// removal pending, or has accounted the removal.
func testCountsThroughExpiry(e *env) {
	e.expiryFixture()
	users := []driver.User{e.user("ann"), e.user("bob"), e.user("carol")}
	check := func() {
		e.t.Helper()
		for _, u := range users {
			e.wantCountsFromFeed(u)
		}
	}
	for range 3 {
		e.clock.Advance(time.Hour - time.Second)
		check()
		e.clock.Advance(time.Second)
		check()
		if h, ok := e.harness(); ok {
			e.deliver(h)
			check()
		}
	}
	if c := e.counts(users[0]); c.Total != 0 {
		e.t.Errorf("Counts(ann) after everything expired: %+v, want nothing", c)
	}
}

// testRedeliveredRemovals: removals delivered late, then again, change the
// counters exactly once: counts match the feed and the counters match a
// recount after each delivery.
func testRedeliveredRemovals(e *env) {
	h := e.needHarness()
	e.expiryFixture()
	ann, bob := e.user("ann"), e.user("bob")
	feed := e.listAll(ann, inbox.ListOptions{})
	for i, m := range feed {
		if i%2 == 0 {
			p := partitionOf(ann)
			if m.IsBroadcast() {
				p = publicOf(e.scope)
			}
			e.remove(h, driver.Key{Partition: p, ID: m.ID})
		}
	}
	e.deliver(h)
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)
	e.checkInvariant()
	for range 2 {
		e.redeliver(h)
		e.wantCountsFromFeed(ann)
		e.wantCountsFromFeed(bob)
		e.checkInvariant()
	}
}

// testRecountWhileRemovalsPending: a Recount made while removals wait on
// the stream, then the late delivery (and a redelivery) of those removals,
// leave the counters equal to a recount and Counts equal to List: the late
// removals are not accounted twice.
func testRecountWhileRemovalsPending(e *env) {
	h := e.needHarness()
	e.expiryFixture()
	ann, bob := e.user("ann"), e.user("bob")
	annDirect := e.records(partitionOf(ann))
	e.remove(h, annDirect[0].Key())
	e.remove(h, annDirect[len(annDirect)-1].Key())
	e.clock.Advance(time.Hour) // the 1h messages expire: a store may delete them
	for _, u := range []driver.User{ann, bob} {
		if _, err := e.ib.Recount(e.ctx, u); err != nil {
			e.t.Fatalf("Recount(%s): %v", u.ID, err)
		}
		e.wantCountsFromFeed(u)
	}
	e.checkInvariant()
	e.deliver(h)
	e.redeliver(h)
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)
	e.checkInvariant()
}

// testRemovedBroadcast: once the removal of a broadcast that has not
// expired is accounted, no reader counts it as read any more, though
// their receipts stand until the broadcast's original expiry; Recount
// deletes those receipts and leaves the counts as they are.
func testRemovedBroadcast(e *env) {
	h := e.needHarness()
	ann, bob := e.user("ann"), e.user("bob")
	e.publish(inbox.Draft{Title: "unread direct"}, "ann")
	b := e.broadcast(inbox.Draft{Title: "to be removed", Category: "news", TTL: 3 * time.Hour})
	kept := e.broadcast(inbox.Draft{Title: "kept", Category: "news", TTL: 3 * time.Hour})
	e.markRead(ann, b.ID, true)
	e.markRead(ann, kept.ID, true)
	e.markRead(bob, b.ID, true)
	e.remove(h, driver.Key{Partition: publicOf(e.scope), ID: b.ID})
	e.deliver(h)
	want := inbox.Counts{Tally: tallyOf(2, 1), Categories: map[string]inbox.Tally{"news": tallyOf(1, 1)}}
	e.wantCounts(ann, want)
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)
	e.checkInvariant()
	e.redeliver(h)
	e.wantCounts(ann, want)

	e.clock.Advance(time.Hour)
	for _, u := range []driver.User{ann, bob} {
		if _, err := e.ib.Recount(e.ctx, u); err != nil {
			e.t.Fatalf("Recount(%s): %v", u.ID, err)
		}
	}
	e.wantCounts(ann, want)
	e.wantCountsFromFeed(bob)
	if recs := e.get(driver.Key{Partition: partitionOf(ann), ID: b.ID}); len(recs) != 0 {
		e.t.Errorf("ann's receipt of the removed broadcast after Recount: %+v, want it deleted", recs)
	}
	e.checkInvariant()
	e.clock.Advance(2 * time.Hour) // past the removed broadcast's expiry
	e.deliver(h)
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(bob)
}

// testRecountBeforeForeignRemovals: another program's items (no ledger
// entry, counted by that program's own counter changes), never adopted,
// expire and are deleted (as TTL does) while their removals wait on the
// stream; a Recount then leaves them out, and their late delivery, and a
// redelivery, must not count them out a second time. Another program's
// item written after the Recount is counted out when its removal comes.
func testRecountBeforeForeignRemovals(e *env) {
	h, foreign := e.foreignFixture()
	ann, bob := e.user("ann"), e.user("bob")
	expireAndDelete := func(recs ...driver.Record) {
		e.t.Helper()
		e.clock.Advance(time.Hour + time.Second)
		for _, r := range recs {
			e.remove(h, r.Key()) // TTL's delete: gone already on a store that expires records itself
		}
	}
	check := func(when string, total int64) { e.t.Helper(); e.wantFeedCounts(when, total, ann, bob) }
	direct, broadcast := foreign(e.part("ann"), "ops"), foreign(e.pub(), "")
	check("before expiry", 4)
	expireAndDelete(direct, broadcast)
	for _, u := range []driver.User{ann, bob} {
		if _, err := e.ib.Recount(e.ctx, u); err != nil {
			e.t.Fatalf("Recount(%s): %v", u.ID, err)
		}
	}
	check("after the Recount", 2)
	e.deliver(h)
	check("after the removals' late delivery", 2)
	e.redeliver(h)
	check("after their redelivery", 2)
	e.checkInvariant()

	// Written after the Recount: its removal counts it out, once.
	later := foreign(e.part("ann"), "ops")
	check("another program's item after the Recount", 3)
	expireAndDelete(later)
	e.deliver(h)
	e.redeliver(h)
	check("its removal delivered", 2)
	e.checkInvariant()
}

// testForeignDeletesAroundRecount: another program's items (no ledger
// entry), never adopted, deleted before they expire while a Recount runs
// around their removals' delivery. Deleted before the Recount read the
// partitions, the Recount leaves them out, and their late delivery, and
// a redelivery, must not count them out again (they once were: Counts
// fell below List until the next Recount). Written and deleted after the
// Recount, within its second, they are in the counters, and their
// removal must count them out: the stream handler cannot tell the two
// apart from the times alone, so it recounts.
func testForeignDeletesAroundRecount(e *env) {
	h, foreign := e.foreignFixture()
	ann, bob := e.user("ann"), e.user("bob")
	recount := func() {
		e.t.Helper()
		for _, u := range []driver.User{ann, bob} {
			if _, err := e.ib.Recount(e.ctx, u); err != nil {
				e.t.Fatalf("Recount(%s): %v", u.ID, err)
			}
		}
	}
	check := func(when string, total int64) { e.t.Helper(); e.wantFeedCounts(when, total, ann, bob) }
	direct, broadcast := foreign(e.part("ann"), "ops"), foreign(e.pub(), "")
	check("before the deletes", 4)
	e.clock.Advance(time.Second)
	e.remove(h, direct.Key())
	e.remove(h, broadcast.Key())
	e.clock.Advance(2 * time.Second)
	recount()
	check("after the Recount", 2)
	e.deliver(h)
	check("after the removals' late delivery", 2)
	e.redeliver(h)
	check("after their redelivery", 2)
	e.checkInvariant()

	// Written and deleted after the Recount, in its second.
	recount()
	direct, broadcast = foreign(e.part("ann"), "ops"), foreign(e.pub(), "")
	e.remove(h, direct.Key())
	e.remove(h, broadcast.Key())
	e.deliver(h)
	check("written and deleted right after a Recount, delivered", 2)
	e.redeliver(h)
	check("and redelivered", 2)
	e.checkInvariant()
}

// putForeign writes, as another program following the seeds, a message of
// category cat to partition p expiring in an hour (no ledger entry), with
// that program's counter changes, and returns it.
func (e *env) putForeign(w ForeignWriter, p driver.Partition, cat string) driver.Record {
	e.t.Helper()
	r := e.message(p, cat, time.Hour)
	r.Entry, r.Message.ExpiresAt = "", r.Message.ExpiresAt.Truncate(time.Second)
	deltas := []driver.Counter{{Partition: p, Published: 1}}
	if cat != "" {
		deltas = append(deltas, driver.Counter{Partition: p, Category: cat, Published: 1})
	}
	if err := w.PutForeign(e.ctx, r, deltas); err != nil {
		e.t.Fatalf("PutForeign: %v", err)
	}
	return r
}

// wantFeedCounts checks that users' Counts equal what List shows, and that
// the first one's Total is total (when names the moment).
func (e *env) wantFeedCounts(when string, total int64, users ...driver.User) {
	e.t.Helper()
	for _, u := range users {
		e.wantCountsFromFeed(u)
	}
	if c := e.counts(users[0]); c.Total != total {
		e.t.Errorf("%s: Counts(%s).Total = %d, want %d", when, users[0].ID, c.Total, total)
	}
}

// foreignFixture readies a case of another program's items: the store as a
// Harness and a ForeignWriter (else the case is skipped), a message to ann
// and a broadcast of the library's that stay, and a writer of that
// program's messages (see putForeign).
func (e *env) foreignFixture() (Harness, func(p driver.Partition, cat string) driver.Record) {
	e.t.Helper()
	h := e.needHarness()
	w, ok := e.store.(ForeignWriter)
	if !ok {
		e.t.Skip("the store is not a storetest.ForeignWriter")
	}
	e.publish(inbox.Draft{Title: "stays", TTL: 3 * time.Hour}, "ann")
	e.broadcast(inbox.Draft{Title: "stays too", TTL: 3 * time.Hour})
	return h, func(p driver.Partition, cat string) driver.Record { return e.putForeign(w, p, cat) }
}

// testReadByAnotherProgramThenExpiry: another program marks read, as the
// seeds do (readat, and read +1 in c#* and c#<category>), ann's direct
// message, a message of a thread, an archived message and an archived
// group message. Once the stream handler has seen the changes, Counts and
// ListThreads equal List, and stay so when the messages expire, before
// and after their removals are accounted (and accounted again): each
// ledger entry counts the marks its record carries, and the counters the
// seeds do not keep (the thread's, the group's, archivedread) follow.
func testReadByAnotherProgramThenExpiry(e *env) {
	e.foreignWriter()
	ann := e.member("ann", "admins")
	annP := e.part("ann")
	e.publish(inbox.Draft{Title: "stays", TTL: 3 * time.Hour}, "ann")
	ttl := time.Hour
	d := e.publish(inbox.Draft{Title: "direct", Category: "billing", TTL: ttl}, "ann").Message
	t := e.publish(inbox.Draft{Title: "in a thread", Thread: "chat", TTL: ttl}, "ann").Message
	a := e.publish(inbox.Draft{Title: "archived", Category: "news", TTL: ttl}, "ann").Message
	g := e.broadcastTo("admins", inbox.Draft{Title: "group", TTL: ttl})
	for _, id := range []string{a.ID, g.ID} {
		if _, err := e.ib.Archive(e.ctx, ann, id); err != nil {
			e.t.Fatalf("Archive(%s): %v", id, err)
		}
	}
	var changes []driver.Change
	for _, m := range []driver.Message{d, t, a, g} {
		changes = append(changes, e.readForeign(annP, m))
	}
	for _, c := range changes {
		if err := e.ib.HandleChange(e.ctx, c); err != nil {
			e.t.Fatalf("HandleChange: %v", err)
		}
	}
	e.wantCountsFromFeed(ann)
	if c := e.counts(ann); c.Read != 2 || c.Archived != 2 {
		e.t.Errorf("Counts(ann) %+v, want 2 read in the feed, 2 archived", c)
	}
	e.clock.Advance(ttl)
	e.wantCountsFromFeed(ann)
	if c := e.counts(ann); c.Total != 1 || c.Read != 0 || c.Archived != 0 {
		e.t.Errorf("expired: Counts(ann) %+v, want the one left, unread", c)
	}
	if h, ok := e.harness(); ok {
		for _, k := range []driver.Key{{Partition: annP, ID: d.ID}, {Partition: annP, ID: t.ID}, {Partition: annP, ID: a.ID}, {Partition: annP, ID: g.ID}, {Partition: groupOf(e.scope, "admins"), ID: g.ID}} {
			e.remove(h, k)
		}
		e.deliver(h)
		e.wantCountsFromFeed(ann)
		e.redeliver(h)
		e.wantCountsFromFeed(ann)

		// Read by the other program, and expired and removed before the
		// stream handler saw the read: the removal takes out what the
		// counters count (the thread's unread, the seeds' read).
		late := e.publish(inbox.Draft{Title: "read late", Thread: "chat", TTL: ttl}, "ann").Message
		e.readForeign(annP, late)
		e.clock.Advance(ttl)
		e.remove(h, driver.Key{Partition: annP, ID: late.ID})
		e.deliver(h)
		e.wantCountsFromFeed(ann)
		e.redeliver(h)
		e.wantCountsFromFeed(ann)
	}
	e.checkInvariant()
}

// testDeletedReadByAnotherProgram: another program marks read, as the
// seeds do (readat on the receipt, read +1 in c#* and c#<category>), a
// broadcast and a group message that ann deleted. The stream handler takes
// that program's read back: the messages stay hidden, Counts equals List
// as ann lists it in the group and out of it, a redelivery changes
// nothing, and Recount finds nothing to repair (it once failed on such a
// receipt, and the handler with it). One more is redacted before the
// handler sees its read, and two (one deleted, one archived) after it
// and before a redelivery: each dead receipt goes, with what its
// counters count of it as it stands.
func testDeletedReadByAnotherProgram(e *env) {
	e.foreignWriter()
	ann, out := e.member("ann", "admins"), e.user("ann")
	annP := e.part("ann")
	e.publish(inbox.Draft{Title: "stays"}, "ann")
	b := e.broadcast(inbox.Draft{Title: "everyone", Category: "news"})
	g := e.broadcastTo("admins", inbox.Draft{Title: "group", Category: "news"})
	late := e.broadcastTo("admins", inbox.Draft{Title: "redacted"})
	early := e.broadcastTo("admins", inbox.Draft{Title: "redacted after the handler", Category: "news"})
	archived := e.broadcastTo("admins", inbox.Draft{Title: "archived, redacted after the handler", Category: "news"})
	for _, m := range []driver.Message{b, g, late, early} {
		if _, err := e.ib.Delete(e.ctx, ann, m.ID); err != nil {
			e.t.Fatalf("Delete(%s): %v", m.ID, err)
		}
	}
	if _, err := e.ib.Archive(e.ctx, ann, archived.ID); err != nil {
		e.t.Fatalf("Archive(%s): %v", archived.ID, err)
	}
	read := func(m driver.Message) driver.Change { return e.readForeign(annP, m) }
	handle := func(cs ...driver.Change) {
		e.t.Helper()
		for _, c := range cs {
			if err := e.ib.HandleChange(e.ctx, c); err != nil {
				e.t.Fatalf("HandleChange: %v", err)
			}
		}
	}
	check := func(when string) {
		e.t.Helper()
		for _, u := range []driver.User{ann, out} {
			e.wantCountsFromFeed(u)
			if c := e.counts(u); c.Total != 1 || c.Read != 0 {
				e.t.Errorf("%s: Counts(%s in %v) %+v, want the one message left, unread", when, u.ID, u.Groups, c)
			}
		}
	}
	changes := []driver.Change{read(b), read(g)}
	handle(changes...)
	check("read by another program, the stream handled")
	handle(changes...)
	check("and redelivered")
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Fatalf("Recount: %v", err)
	}
	check("and recounted")

	redact := func(m driver.Message) {
		e.t.Helper()
		if n, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: m.ID, Group: "admins"}); err != nil || n != 1 {
			e.t.Fatalf("Redact(%s) = %d, %v", m.ID, n, err)
		}
	}
	c := read(late)
	redact(late)
	handle(c)
	check("read by another program, redacted before the stream")
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Fatalf("Recount: %v", err)
	}
	check("and recounted")

	// Handled, then redacted, then delivered again: the dead receipt goes
	// as it stands (recounted), not as the old image shows it.
	again := []driver.Change{read(early), read(archived)}
	handle(again...)
	check("read by another program, deleted or archived, handled")
	redact(early)
	redact(archived)
	handle(again...)
	check("redacted, and the reads delivered again")
	e.checkInvariant()
}

// recountRace is a Store that calls during, once, after a Recount's pass
// read the ledger of partition p (a Stats with Threads) and before it
// reads p's records (its next Query of p): a write that lands between the
// two reads.
type recountRace struct {
	driver.Store
	p      driver.Partition
	mu     sync.Mutex
	armed  bool
	done   bool
	during func()
}

func (s *recountRace) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	if q.Partition == s.p && q.Threads {
		s.mu.Lock()
		s.armed = true
		s.mu.Unlock()
	}
	return s.Store.Stats(ctx, q)
}

func (s *recountRace) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	s.mu.Lock()
	run := q.Partition == s.p && s.armed && !s.done
	s.done = s.done || run
	s.mu.Unlock()
	if run {
		s.during()
	}
	return s.Store.Query(ctx, q)
}

// testRecountRacesAPublish: a broadcast, or a direct message, published
// while a Recount reads its partition, after the ledger and before the
// records, has an entry that pass did not read. The Recount leaves it
// counted once with its one entry: it neither gives it a second entry nor
// takes the first for a removed record's, which would count the message
// out while it stands and leave a tombstone of a broadcast that still
// stands (its readers' receipts would stop counting).
func testRecountRacesAPublish(e *env) {
	ann := e.user("ann")
	for _, shared := range []bool{true, false} {
		p := partitionOf(ann)
		if shared {
			p = e.scope.Public()
		}
		var id string
		race := &recountRace{Store: e.store, p: p, during: func() {
			if shared {
				id = e.broadcast(inbox.Draft{Title: "during the recount"}).ID
			} else {
				id = e.publish(inbox.Draft{Title: "during the recount"}, "ann").Message.ID
			}
		}}
		ib := inbox.New(race, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0))
		if _, err := ib.Recount(e.ctx, ann); err != nil {
			e.t.Fatalf("Recount: %v", err)
		}
		if id == "" {
			e.t.Fatal("nothing published during the recount")
		}
		e.markRead(ann, id, true)
		e.wantCountsFromFeed(ann)
		st, err := e.store.Stats(e.ctx, driver.StatsQuery{Partition: p, Now: e.clock.Now()})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(st.Tombstones) != 0 {
			e.t.Errorf("tombstones of %s, whose message stands: %+v", p.PK(), st.Tombstones)
		}
		e.checkInvariant()
		e.clock.Advance(time.Second)
	}
}

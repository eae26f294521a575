package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stak/inbox/driver"
)

// testReaders: a receipt mark of a thread's broadcast keeps its reader
// item in step with the receipt's read mark, in the same unit
// (driver.Mark.ReaderChange): a read writes it, an archive leaves it, a
// deletion for the user deletes it, a mark refused writes nothing, a
// receipt of no thread has none, and PutMessage's receipts have none. A
// Readers query returns a thread's items by message ID, then user,
// between its bounds, a page at a time, without those expired at Now.
// ApplyRemoval of a read receipt deletes its item, unless a later
// receipt at the same key wrote it.
func testReaders(e *env) {
	ann, bob, carol, dave := e.part("ann"), e.part("bob"), e.part("carol"), e.part("dave")
	team := groupOf(e.scope, "team")
	now := e.clock.Now()
	msg := func(thread string, ttl time.Duration) driver.Record {
		b := e.message(team, "", ttl)
		b.Message.Thread = thread
		e.put(b)
		return b
	}
	b1, b2, plain, other := msg("t", time.Hour), msg("t", 2*time.Hour), msg("", time.Hour), msg("u", time.Hour)
	mark := func(mk driver.Mark) {
		e.t.Helper()
		if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, driver.MarkDeltas(mk)); err != nil {
			e.t.Fatalf("Mark(%s of %s, %+v to %+v): %v", mk.Key.ID, mk.Key.Partition.User, mk.From, mk.To, err)
		}
	}
	read := func(p driver.Partition, b driver.Record) driver.Mark {
		mk := receiptMark(p, b, now, now)
		mark(mk)
		return mk
	}
	reader := func(p driver.Partition, b driver.Record, entry string) driver.Reader {
		return driver.Reader{Partition: team, Thread: b.Message.Thread, ID: b.Message.ID, User: p.User, ReadAt: now, ExpiresAt: b.Message.ExpiresAt, Entry: entry}
	}
	annB1 := read(ann, b1)
	read(bob, b1)
	read(carol, b2)
	read(ann, plain)
	read(ann, other)
	e.wantReaders("after the reads", driver.Query{Thread: "t"}, reader(ann, b1, receiptEntry(b1)), reader(bob, b1, receiptEntry(b1)), reader(carol, b2, receiptEntry(b2)))
	e.wantReaders("of thread u", driver.Query{Thread: "u"}, reader(ann, other, receiptEntry(other)))
	e.wantReaders("above b1", driver.Query{Thread: "t", After: b1.Message.ID}, reader(carol, b2, receiptEntry(b2)))
	e.wantReaders("below b2", driver.Query{Thread: "t", Before: b2.Message.ID}, reader(ann, b1, receiptEntry(b1)), reader(bob, b1, receiptEntry(b1)))

	// A page at a time: Next is the After of the next page.
	var paged []driver.Reader
	q := driver.Query{Partition: team, Readers: true, Thread: "t", Limit: 1}
	for range 10 {
		res, err := e.store.Query(e.ctx, q)
		if err != nil {
			e.t.Fatalf("Query(readers, After %q): %v", q.After, err)
		}
		if len(res.Readers) > 1 {
			e.t.Errorf("a page of readers with Limit 1: %d", len(res.Readers))
		}
		paged = append(paged, res.Readers...)
		if res.Next == "" {
			break
		}
		q.After = res.Next
	}
	if got := readersOf(paged); got != readersOf([]driver.Reader{reader(ann, b1, ""), reader(bob, b1, ""), reader(carol, b2, "")}) {
		e.t.Errorf("readers paged one at a time: %s", got)
	}

	// An archive keeps the read, and the item; a mark refused writes
	// nothing; a deletion for the user unreads, and deletes it.
	archive := annB1
	archive.From, archive.To = archive.To, driver.State{ReadAt: now, ArchivedAt: now}
	mark(archive)
	again := receiptMark(bob, b1, now.Add(time.Second), now)
	if err := e.markFenced(bob, []driver.Mark{again}, driver.MarkDeltas(again)); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("Mark from no marks of bob's read receipt: %v, want ErrStateChanged", err)
	}
	del := receiptMark(bob, b1, now, now)
	del.From, del.To = del.To, driver.State{DeletedAt: now}
	mark(del)
	e.wantReaders("after ann's archive and bob's delete", driver.Query{Thread: "t"}, reader(ann, b1, receiptEntry(b1)), reader(carol, b2, receiptEntry(b2)))

	// The sender's read, put with her message, has no item.
	sent := e.message(team, "", time.Hour)
	sent.Message.Thread = "t"
	own := receiptMark(dave, sent, now, now)
	if err := e.store.PutMessage(e.ctx, sent, driver.MergeCounters(append(driver.PutDeltas(sent), driver.MarkDeltas(own)...)), own); err != nil {
		e.t.Fatalf("PutMessage with the sender's receipt: %v", err)
	}
	e.wantReaders("after a message put with its sender's read", driver.Query{Thread: "t"}, reader(ann, b1, receiptEntry(b1)), reader(carol, b2, receiptEntry(b2)))

	// A read receipt removed (another program's delete) takes its item
	// along; the late removal of an earlier receipt leaves a later one's.
	b2Readers := []driver.Reader{reader(carol, b2, receiptEntry(b2))}
	if h, ok := e.harness(); ok {
		d := read(dave, b2)
		e.remove(h, driver.Key{Partition: carol, ID: b2.Message.ID})
		e.remove(h, d.Key)
		later := receiptMark(dave, b2, now, now)
		later.Entry = driver.LedgerSK(b2.Message.ExpiresAt, b2.Message.ID, "later")
		mark(later)
		e.deliver(h)
		e.redeliver(h)
		b2Readers = []driver.Reader{reader(dave, b2, later.Entry)}
		e.wantReaders("after carol's and dave's receipts were deleted, and dave read again", driver.Query{Thread: "t"}, append([]driver.Reader{reader(ann, b1, receiptEntry(b1))}, b2Readers...)...)
	}

	// Readers of an expired message are left out, as its records are.
	e.clock.Advance(time.Hour)
	e.wantReaders("after b1 expired", driver.Query{Thread: "t", Now: e.clock.Now()}, b2Readers...)
}

// testReadersEdited: a reader item follows the read its receipt's
// ledger entry counts (Mark.Counted), not the marks another program gave
// the receipt since: a mark that keeps a read another program made, of a
// receipt whose entry counts it unread, writes the item; and a deleted
// receipt is unread, whatever readat another program set on it, so a
// mark that keeps its marks (a recount of it) writes none.
func testReadersEdited(e *env) {
	w := e.foreignWriter()
	ann, bob := e.part("ann"), e.part("bob")
	team := groupOf(e.scope, "team")
	e.used[team] = true
	b := e.message(team, "", time.Hour)
	b.Message.Thread = "t"
	e.put(b)
	now := e.clock.Now()
	mark := func(mk driver.Mark, deltas []driver.Counter) {
		e.t.Helper()
		if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, deltas); err != nil {
			e.t.Fatalf("Mark(%s of %s, %+v to %+v, counted %04b): %v", mk.Key.ID, mk.Key.Partition.User, mk.From, mk.To, mk.Counted, err)
		}
	}
	// As it stands: its marks, its entry's counted ones.
	stands := func(p driver.Partition, to driver.State) driver.Mark {
		e.t.Helper()
		recs := e.get(driver.Key{Partition: p, ID: b.Message.ID})
		if len(recs) != 1 {
			e.t.Fatalf("%s's receipt: %d records", p.User, len(recs))
		}
		mk := receiptMark(p, b, now, now)
		mk.Entry, mk.From, mk.To, mk.Counted = recs[0].Entry, recs[0].State(), to, recs[0].Counted
		return mk
	}
	// ann archives it unread; another program reads her receipt; she
	// unarchives it, keeping that read: her item is written. (That program
	// counts read +1 in c#* alone, as the seeds do.)
	archive := receiptMark(ann, b, now, now)
	archive.To = driver.State{ArchivedAt: now}
	mark(archive, driver.MarkDeltas(archive))
	e.clock.Advance(time.Second)
	readAt := e.clock.Now()
	if _, ok, err := w.ReadForeign(e.ctx, archive.Key, readAt, delta(ann, "", 0, 1)); err != nil || !ok {
		e.t.Fatalf("ReadForeign(ann's receipt): %v, %v", ok, err)
	}
	e.wantReaders("after another program read ann's archived receipt", driver.Query{Thread: "t"})
	unarchive := stands(ann, driver.State{ReadAt: readAt})
	mark(unarchive, driver.MarkDeltas(unarchive))
	annItem := driver.Reader{Partition: team, Thread: "t", ID: b.Message.ID, User: "ann", ReadAt: readAt, ExpiresAt: b.Message.ExpiresAt, Entry: archive.Entry}
	e.wantReaders("after ann unarchived it, keeping that read", driver.Query{Thread: "t"}, annItem)

	// bob reads it, then deletes it: no item; another program reads his
	// deleted receipt; a recount keeps its marks: still none.
	read := receiptMark(bob, b, now, now)
	mark(read, driver.MarkDeltas(read))
	del := stands(bob, driver.State{DeletedAt: now})
	mark(del, driver.MarkDeltas(del))
	if _, ok, err := w.ReadForeign(e.ctx, read.Key, readAt, delta(bob, "", 0, 1)); err != nil || !ok {
		e.t.Fatalf("ReadForeign(bob's deleted receipt): %v, %v", ok, err)
	}
	recs := e.get(read.Key)
	if len(recs) != 1 || !recs[0].Edited() {
		e.t.Fatalf("bob's receipt after another program read it: %+v, want one, edited", recs)
	}
	keep := stands(bob, recs[0].State())
	mark(keep, driver.MergeCounters(driver.EditDeltas(recs[0])))
	e.wantReaders("after a recount of bob's deleted receipt that another program read", driver.Query{Thread: "t"}, annItem)
	e.checkInvariant()
}

// testReadersBadInput: a Readers query of a user's partition, without a
// thread, with bounds that are not IDs (After may be a position), After
// not below Before, or with another filter is refused with
// ErrInvalidInput or ErrInvalidKey.
func testReadersBadInput(e *env) {
	team := groupOf(e.scope, "team")
	id := e.newID()
	for _, c := range []struct {
		name string
		q    driver.Query
		want error
	}{
		{"a user's partition", driver.Query{Partition: e.part("ann"), Thread: "t"}, driver.ErrInvalidInput},
		{"no thread", driver.Query{Partition: team}, driver.ErrInvalidInput},
		{"a bad thread", driver.Query{Partition: team, Thread: "a#b"}, driver.ErrInvalidKey},
		{"a bad group", driver.Query{Partition: groupOf(e.scope, "a#b"), Thread: "t"}, driver.ErrInvalidKey},
		{"Before not an ID", driver.Query{Partition: team, Thread: "t", Before: "x"}, driver.ErrInvalidKey},
		{"After not an ID", driver.Query{Partition: team, Thread: "t", After: "x#ann"}, driver.ErrInvalidKey},
		{"After a position of a bad user", driver.Query{Partition: team, Thread: "t", After: id + "#$public"}, driver.ErrInvalidKey},
		{"After not below Before", driver.Query{Partition: team, Thread: "t", After: id, Before: id}, driver.ErrInvalidInput},
		{"a category", driver.Query{Partition: team, Thread: "t", Category: "c"}, driver.ErrInvalidInput},
		{"unread only", driver.Query{Partition: team, Thread: "t", UnreadOnly: true}, driver.ErrInvalidInput},
		{"threads", driver.Query{Partition: team, Thread: "t", Threads: true}, driver.ErrInvalidInput},
		{"scheduled", driver.Query{Partition: team, Thread: "t", Scheduled: true}, driver.ErrInvalidInput},
	} {
		c.q.Readers, c.q.Limit = true, 10
		if _, err := e.store.Query(e.ctx, c.q); !errors.Is(err, c.want) {
			e.t.Errorf("Query of readers with %s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := e.store.Query(e.ctx, driver.Query{Partition: team, Readers: true, Thread: "t", After: id + "#ann", Limit: 1}); err != nil {
		e.t.Errorf("Query of readers after a position: %v", err)
	}
}

// wantReaders checks that the team group's reader items q selects (q's
// Partition, Readers and Limit set here) are want, in order, read a page
// of 100 at a time.
func (e *env) wantReaders(what string, q driver.Query, want ...driver.Reader) {
	e.t.Helper()
	got := e.readersNow(q)
	if readersOf(got) != readersOf(want) || !slices.EqualFunc(got, want, func(a, b driver.Reader) bool { return a == b }) {
		e.t.Errorf("readers %s:\n got %s\nwant %s", what, readersOf(got), readersOf(want))
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				e.t.Errorf("  %d: got %+v, want %+v", i, got[i], want[i])
			}
		}
	}
}

// readersNow returns the team group's reader items q selects, every page.
func (e *env) readersNow(q driver.Query) []driver.Reader {
	e.t.Helper()
	q.Partition, q.Readers, q.Limit = groupOf(e.scope, "team"), true, 100
	var out []driver.Reader
	for {
		res, err := e.store.Query(e.ctx, q)
		if err != nil {
			e.t.Fatalf("Query(readers of %q): %v", q.Thread, err)
		}
		out = append(out, res.Readers...)
		if res.Next == "" {
			return out
		}
		q.After = res.Next
	}
}

// readersOf describes readers: each message's short ID and user.
func readersOf(rs []driver.Reader) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "[%s %s %s] ", r.Thread, r.ID[20:], r.User)
	}
	return b.String()
}

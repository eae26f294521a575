package storetest

import (
	"errors"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// testForeignTimes: with a ForeignWriter, another program's times are kept
// as a Store that holds them in epoch seconds reads them back
// (driver.StoredTime): to the second, and a mark or a header's time
// outside the years 1970 to 9999 (a time in milliseconds written as
// seconds, a negative one) holds none, so that mark is unset, whatever
// that program counted. What a Store queries agrees with what it reads:
// the default and archived views hold what Get shows, and a mark's
// condition on the marks it read holds, before any adoption rewrites the
// items. After a Recount, Counts equals the model of the feed and what a
// full List shows; another program's read at such a time leaves the
// record unread. A Store refuses, as ErrInvalidInput, a record of the
// library's with such a time.
func testForeignTimes(e *env) {
	w, ok := e.store.(ForeignWriter)
	if !ok {
		return
	}
	ann := e.user("ann")
	annP := partitionOf(ann)
	now := e.clock.Now()
	far := time.Date(55000, 1, 1, 0, 0, 0, 0, time.UTC)    // 1.67e12 s: a time in milliseconds, written as seconds
	early := time.Date(1960, 6, 1, 0, 0, 0, 0, time.UTC)   // a negative number of seconds
	within := now.Add(-time.Minute + 300*time.Millisecond) // a fraction of a second
	second := within.Truncate(time.Second).UTC()
	stored := func(k driver.Key) driver.Record {
		e.t.Helper()
		recs := e.get(k)
		if len(recs) != 1 {
			e.t.Fatalf("GetRecords(%s): %d records", k.ID, len(recs))
		}
		return recs[0]
	}
	wantTime := func(what string, got, want time.Time) {
		e.t.Helper()
		if !got.Equal(want) {
			e.t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	foreign := func(cat string, set func(r *driver.Record), deltas []driver.Counter) driver.Record {
		e.t.Helper()
		r := e.message(annP, cat, time.Hour)
		r.Entry, r.Message.ExpiresAt = "", r.Message.ExpiresAt.Truncate(time.Second)
		set(&r)
		if err := w.PutForeign(e.ctx, r, deltas); err != nil {
			e.t.Fatalf("PutForeign: %v", err)
		}
		return r
	}

	// A Store refuses to write a time it would not read back.
	bad := e.message(annP, "", time.Hour)
	bad.Message.ReceivedAt = early
	if err := e.store.PutMessage(e.ctx, bad, driver.PutDeltas(bad)); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("PutMessage with ReceivedAt in 1960: %v, want ErrInvalidInput", err)
	}
	if recs := e.get(bad.Key()); len(recs) != 0 {
		e.t.Errorf("a refused PutMessage wrote %+v", recs)
	}

	// f: read at a time in milliseconds (the program counted the read),
	// archived within the years, acted on in 1960: unread and archived.
	f := foreign("billing", func(r *driver.Record) {
		r.Message.ReadAt, r.Message.ArchivedAt, r.Message.InteractedAt, r.Message.ReceivedAt = far, within, early, within
	}, delta(annP, "billing", 1, 1))
	// g: read in 1960, archived at a time in milliseconds, delivered then:
	// unread and not archived.
	g := foreign("", func(r *driver.Record) {
		r.Message.ReadAt, r.Message.ArchivedAt, r.Message.DeliveredAt = early, far, far
	}, delta(annP, "", 1, 1))
	// r: a receipt of the library's broadcast b, read within the years,
	// deleted at a time in milliseconds: read and not deleted.
	b := e.message(e.pub(), "news", time.Hour)
	e.put(b)
	r := driver.Record{Partition: annP, Receipt: true, Message: driver.Message{ID: b.Message.ID, Category: b.Message.Category, ReadAt: within, ExpiresAt: b.Message.ExpiresAt}, DeletedAt: far}
	if err := w.PutForeign(e.ctx, r, readDelta(annP, b)); err != nil {
		e.t.Fatalf("PutForeign(receipt): %v", err)
	}
	// h: read within the years.
	h := foreign("", func(r *driver.Record) { r.Message.ReadAt = within }, delta(annP, "", 1, 1))

	got := stored(f.Key())
	wantTime("f's ReadAt in milliseconds", got.Message.ReadAt, time.Time{})
	wantTime("f's ArchivedAt with a fraction", got.Message.ArchivedAt, second)
	wantTime("f's InteractedAt in 1960", got.Message.InteractedAt, time.Time{})
	wantTime("f's ReceivedAt with a fraction", got.Message.ReceivedAt, second)
	got = stored(g.Key())
	wantTime("g's ReadAt in 1960", got.Message.ReadAt, time.Time{})
	wantTime("g's ArchivedAt in milliseconds", got.Message.ArchivedAt, time.Time{})
	wantTime("g's DeliveredAt in milliseconds", got.Message.DeliveredAt, time.Time{})
	got = stored(r.Key())
	wantTime("the receipt's DeletedAt in milliseconds", got.DeletedAt, time.Time{})
	wantTime("the receipt's ReadAt with a fraction", got.Message.ReadAt, second)
	wantTime("h's ReadAt with a fraction", stored(h.Key()).Message.ReadAt, second)

	// Get, the views and a mark's condition, before anything adopts them.
	for _, c := range []struct {
		id             string
		read, archived bool
	}{{f.Message.ID, false, true}, {g.Message.ID, false, false}, {b.Message.ID, true, false}, {h.Message.ID, true, false}} {
		m, err := e.ib.Get(e.ctx, ann, c.id)
		if err != nil {
			e.t.Errorf("Get(%s): %v", c.id, err)
			continue
		}
		if m.IsRead() != c.read || m.IsArchived() != c.archived {
			e.t.Errorf("Get(%s): read %v, archived %v; want %v, %v", c.id, m.IsRead(), m.IsArchived(), c.read, c.archived)
		}
	}
	all := inbox.ListOptions{Limit: inbox.MaxPageSize}
	archived := inbox.ListOptions{Limit: inbox.MaxPageSize, Archived: true}
	e.wantIDs("the feed", e.listAll(ann, all), []string{h.Message.ID, b.Message.ID, g.Message.ID}, []bool{true, true, false})
	e.wantIDs("the archive", e.listAll(ann, archived), []string{f.Message.ID}, []bool{false})
	if ok, err := e.ib.MarkRead(e.ctx, ann, g.Message.ID); err != nil || !ok {
		e.t.Errorf("MarkRead of the message read in 1960 and archived in milliseconds: %v, %v; want it marked", ok, err)
	}

	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Fatalf("Recount: %v", err)
	}
	e.wantIDs("the feed after Recount", e.listAll(ann, all), []string{h.Message.ID, b.Message.ID, g.Message.ID}, []bool{true, true, true})
	e.wantIDs("the archive after Recount", e.listAll(ann, archived), []string{f.Message.ID}, []bool{false})
	wantTally := func(what string, want inbox.Tally) {
		e.t.Helper()
		if c := e.counts(ann); c.Tally != want { // ann marked nothing seen: Unseen is Unread
			e.t.Errorf("%s: Counts = %+v, want %+v", what, c.Tally, want)
		}
		e.wantCountsFromFeed(ann)
	}
	wantTally("after Recount", inbox.Tally{Total: 3, Read: 3, Archived: 1})
	if ok, err := e.ib.MarkRead(e.ctx, ann, f.Message.ID); err != nil || !ok {
		e.t.Errorf("MarkRead of the message read in milliseconds: %v, %v; want it marked", ok, err)
	}
	if ok, err := e.ib.Unarchive(e.ctx, ann, f.Message.ID); err != nil || !ok {
		e.t.Errorf("Unarchive of the message archived with a fraction: %v, %v; want it unarchived", ok, err)
	}
	wantTally("after MarkRead and Unarchive", inbox.Tally{Total: 4, Read: 4})

	// Another program's read at a time in milliseconds leaves it unread.
	g2 := e.putForeign(w, annP, "")
	if _, ok, err := w.ReadForeign(e.ctx, g2.Key(), far, delta(annP, "", 0, 1)); err != nil || !ok {
		e.t.Fatalf("ReadForeign: %v, %v", ok, err)
	}
	wantTime("ReadAt after a read in milliseconds", stored(g2.Key()).Message.ReadAt, time.Time{})
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Fatalf("Recount: %v", err)
	}
	e.wantIDs("the unread feed", e.listAll(ann, inbox.ListOptions{Limit: inbox.MaxPageSize, UnreadOnly: true}), []string{g2.Message.ID}, []bool{false})
	wantTally("after another program's read in milliseconds", inbox.Tally{Total: 5, Read: 4, Unread: 1, Unseen: 1})
}

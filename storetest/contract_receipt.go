package storetest

import (
	"errors"
	"time"

	"github.com/stak/inbox/driver"
)

// testMarklessReceipt: with a ForeignWriter, another program's receipt
// without marks (the seeds' unread receipt, readat NULL) is one a mark
// from no marks replaces (creating a receipt over it, and adopting it),
// while a receipt with marks still refuses such a mark with
// ErrStateChanged and writes nothing. An Inbox reads, recounts, marks
// and deletes it, and Counts agrees with List throughout.
func testMarklessReceipt(e *env) {
	w, ok := e.store.(ForeignWriter)
	if !ok {
		return
	}
	ann := e.user("ann")
	annP := partitionOf(ann)
	now := e.clock.Now()
	b := e.message(e.pub(), "news", time.Hour)
	e.put(b)
	read := e.message(e.pub(), "", time.Hour)
	e.put(read)
	for _, r := range []driver.Record{
		{Partition: annP, Receipt: true, Message: driver.Message{ID: b.Message.ID, Category: b.Message.Category, ExpiresAt: b.Message.ExpiresAt}},
		{Partition: annP, Receipt: true, Message: driver.Message{ID: read.Message.ID, ReadAt: now.Truncate(time.Second), ExpiresAt: read.Message.ExpiresAt}},
	} {
		d := readDelta(annP, read)
		if r.Message.ReadAt.IsZero() {
			d = nil
		}
		if err := w.PutForeign(e.ctx, r, d); err != nil {
			e.t.Fatalf("PutForeign(receipt): %v", err)
		}
	}
	// A mark from no marks over the receipt with marks is refused.
	mk := receiptMark(annP, read, now, now)
	mk.To = driver.State{ReadAt: now, ArchivedAt: now}
	if err := e.markFenced(annP, []driver.Mark{mk}, driver.MarkDeltas(mk)); !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("Mark from no marks over a read receipt: %v, want ErrStateChanged", err)
	}
	if recs := e.get(mk.Key); len(recs) != 1 || !recs[0].Message.ArchivedAt.IsZero() {
		e.t.Errorf("the refused mark changed the receipt: %+v", recs)
	}
	e.wantCountsFromFeed(ann)
	if _, err := e.ib.Get(e.ctx, ann, b.Message.ID); err != nil {
		e.t.Errorf("Get of the broadcast with a receipt without marks: %v", err)
	}
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Errorf("Recount with a receipt without marks: %v", err)
	}
	e.wantCountsFromFeed(ann)
	if ok, err := e.ib.MarkRead(e.ctx, ann, b.Message.ID); err != nil || !ok {
		e.t.Errorf("MarkRead of a broadcast with a receipt without marks: %v, %v; want it marked", ok, err)
	}
	recs := e.get(driver.Key{Partition: annP, ID: b.Message.ID})
	if len(recs) != 1 || !recs[0].Message.IsRead() || !recs[0].Ledgered() || recs[0].Counted != driver.MarksKnown|driver.MarkedRead {
		e.t.Errorf("the receipt after MarkRead: %+v; want it read, with an entry that counts its read", recs)
	}
	e.wantCountsFromFeed(ann)
	if ok, err := e.ib.Delete(e.ctx, ann, b.Message.ID); err != nil || !ok {
		e.t.Errorf("Delete: %v, %v", ok, err)
	}
	e.wantCountsFromFeed(ann)
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Errorf("Recount at the end: %v", err)
	}
	e.wantCountsFromFeed(ann)
}

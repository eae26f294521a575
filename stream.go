package inbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stak/inbox/driver"
)

// StreamHandler accounts records that DynamoDB removed (TTL expiry or a
// delete), from the table's stream, and derives change events for the
// EventHandler set with WithEvents. Pass it to lambda.Start:
//
//	lambda.Start(ib.StreamHandler)
//
// Only REMOVE events of kind UM items count: a removed message decrements
// published in its partition (c#* and c#<category>); a removed item with
// the user's marks (a read or archived message, a receipt) decrements the
// user's tallies of them; a broadcast removed before it expired leaves a
// tombstone, so that its readers' receipts stop counting at once. With
// events on, INSERT and MODIFY records of kind UM items (and of kind SN,
// seen watermarks, and UP, users' preferences) make the events of their
// changes (see EventKind). An
// INSERT or MODIFY of a message, broadcast or receipt that another
// program wrote (no ledger entry) adopts it, as Recount would (one
// transaction), with or without events: from then on Counts counts it out
// the moment it expires, and the Store indexes a direct message like the
// Inbox's own (until then an unread-only List misses it). A MODIFY of a
// library record whose marks another program changed (the seeds' mark
// read) rewrites its entries and the counters that program does not keep,
// in one Mark (see docs/consistency.md, Another program's items). So the event source mapping must
// always pass INSERT and MODIFY records of kind UM.
// Every other record is ignored.
//
// A REMOVE record is accounted from its keys and old image alone: an old
// image without tenant_key, inbox_key or uid (another program's item that
// leaves them out) is accounted in the partition its keys name; one whose
// attributes name another tenant, inbox or user than its keys fails.
//
// Each removal is applied exactly once, however often the record is
// delivered: for an item with a ledger entry, the decrements are applied
// with the deletion of the entry, in one atomic unit, and only if the entry
// is still there (so a Recount made while the removal was pending is not
// undone); for an item without one (written by another program), with a
// marker keyed by the record's event ID, unless a Recount read the
// partition after the item left the table (it counted the item out
// already). When the item left within seconds of a Recount's read (the
// stream times it to the second), the handler cannot tell whether the
// Recount saw it, so it recounts the partition after the removal: right
// either way, and rare. Events are at least once: a
// record's events go to the EventHandler after its accounting, records in
// the batch's order.
//
// The partition is taken from the record's Keys, never from the item's own
// attributes, and a record whose tenant_key, inbox_key or uid disagree with
// its key fails: a writer confined to one tenant's keys cannot steer the
// accounting, or an event, to another tenant.
//
// Records that fail are returned by sequence number as batch item failures
// (configure the event source mapping with ReportBatchItemFailures) and the
// others are applied; the returned error is always nil, so Lambda retries
// only the failures (from the first failure on: Lambda resumes the shard
// there). A record fails if its accounting fails or the EventHandler
// returns an error for one of its events. A malformed record fails rather
// than being dropped, so that it reaches the mapping's on-failure
// destination: that includes a REMOVE without an old image (a stream
// configured KEYS_ONLY or NEW_IMAGE cannot be accounted) and, with events
// on, an INSERT or MODIFY without the images events need, or whose new
// image holds an attribute of a type the Stores refuse to decode (another
// program's item; its removal is still accounted as its image reads). A
// string attribute that holds a number reads as its decimal, as the
// Stores read it.
func (ib *Inbox) StreamHandler(ctx context.Context, ev events.DynamoDBEvent) (_ events.DynamoDBEventResponse, err error) {
	reads := driver.BatchRequests(ctx)
	defer ib.observe(&ctx, "StreamHandler", Scope{}, "").batch(len(ev.Records), newestRecord(ev), reads).end(&err)
	failed := make([]bool, len(ev.Records))
	derived := make([][]Event, len(ev.Records))
	ib.each(len(ev.Records), func(i int) {
		var err error
		derived[i], err = ib.applyStreamRecord(ctx, ev.Records[i])
		failed[i] = err != nil
	})
	var resp events.DynamoDBEventResponse
	for i, r := range ev.Records {
		for _, e := range derived[i] {
			if failed[i] {
				break
			}
			failed[i] = ib.events(ctx, e) != nil
		}
		if failed[i] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
		}
	}
	noteFailed(ctx, len(resp.BatchItemFailures))
	return resp, nil
}

// applyStreamRecord accounts one stream record and returns its events, if
// the Inbox has an EventHandler.
func (ib *Inbox) applyStreamRecord(ctx context.Context, r events.DynamoDBEventRecord) ([]Event, error) {
	c, err := changeOf(r, ib.events != nil)
	if err != nil {
		return nil, err
	}
	return ib.applyChange(ctx, c)
}

// HandleChange does for c, a change that a Store feeds in its own form
// (memstore.WithChanges), what StreamHandler does for a stream record:
// accounts a removal exactly once, adopts another program's record,
// recounts a library record whose marks another program changed, and
// passes the change's events to the EventHandler set with WithEvents, in
// order. An error leaves the change to be delivered again: its accounting
// is not repeated, its events are. With memstore:
//
//	mem := memstore.New(memstore.WithChanges())
//	ib := inbox.New(mem, inbox.WithEvents(handle))
//	// ... after the calls whose events a test expects:
//	mem.DeliverChanges(ctx, ib.HandleChange)
func (ib *Inbox) HandleChange(ctx context.Context, c driver.Change) (err error) {
	defer ib.observe(&ctx, "HandleChange", changeScope(c), "").batch(1, c.At, nil).end(&err)
	evs, err := ib.applyChange(ctx, c)
	if err != nil {
		return err
	}
	for _, e := range evs {
		if err := ib.events(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// applyChange accounts change c: a removal's decrements (exactly once),
// the adoption of another program's record it writes, and the recount of
// a record whose marks another program changed (recountEdited); it
// returns c's events if the Inbox has an EventHandler.
func (ib *Inbox) applyChange(ctx context.Context, c driver.Change) ([]Event, error) {
	if c.Timer != nil {
		return nil, ib.foldTimed(ctx, driver.Key{Partition: c.Timer.Partition, ID: c.Timer.Message.ID}, c.TimedKey)
	}
	if rec := c.Old; c.Op == driver.ChangeRemove && rec != nil && (rec.Ledgered() || len(driver.RemovalDeltas(*rec)) > 0) {
		if !rec.Ledgered() && c.ID == "" {
			return nil, fmt.Errorf("%w: removal of %s without a change ID", ErrInvalidInput, rec.Message.ID)
		}
		r := driver.RemovalFor(*rec, c.ID, ib.now())
		r.At = c.At
		if _, err := ib.store.ApplyRemoval(ctx, r); err != nil {
			return nil, err
		}
		if !rec.Ledgered() {
			if err := ib.recountIfRemovedNear(ctx, r); err != nil {
				return nil, err
			}
		}
	}
	if c.Position != nil && !c.Position.IsZero() && c.Position.Done.IsZero() && !c.PositionOf.IsShared() && c.PositionGroup == "" {
		// A read position moved: its reads are written out.
		u := c.PositionOf.Scope().User(c.PositionOf.User)
		if err := ib.writeOut(ctx, u, c.PositionThread); err != nil {
			return nil, err
		}
	}
	if c.Op == driver.ChangeInsert || c.Op == driver.ChangeModify {
		if err := ib.adoptForeign(ctx, c.New); err != nil {
			return nil, err
		}
		if err := ib.recountEdited(ctx, c.New); err != nil {
			return nil, err
		}
	}
	if ib.events == nil {
		return nil, nil
	}
	evs := eventsOf(c)
	if rec := c.Old; c.Op == driver.ChangeRemove && rec != nil && rec.Receipt && len(evs) > 0 {
		stands, err := ib.broadcastStands(ctx, *rec, c.At)
		if err != nil || !stands {
			return nil, err
		}
	}
	return evs, nil
}

// broadcastStands reports whether the broadcast of rec, a receipt removed
// at time at with no mark but its archive or its snooze (the user's
// unarchive or unsnooze of an unread broadcast), stands unexpired when the
// handler meets the removal: 1 read unit, by key. Recount's removal of the
// receipts of a broadcast removed before it expired looks the same, and
// changes nothing the user sees: the broadcast's EventRemoved spoke for
// every reader. So does an unarchive the handler meets after the
// broadcast's removal: there is no clock common to the stream's times and
// the Inbox's to order the two by, and no page shows the message since.
func (ib *Inbox) broadcastStands(ctx context.Context, rec driver.Record, at time.Time) (bool, error) {
	_, found, err := ib.deadReceiptsOf(ctx, rec.Partition, []driver.Record{rec}, at)
	b, ok := found[rec.Message.ID]
	return err == nil && ok && at.Before(b.Message.ExpiresAt), err // a mark needs it unexpired
}

// recountIfRemovedNear recounts the partition of r's record, one without
// a ledger entry (another program's, never adopted), if a recount was
// made after it left the table (r.LeftAt), or too close to it to tell
// whether it read the partition before or after: ApplyRemoval then took
// the removal as counted out already (see driver.Store.ApplyRemoval),
// which is right if the record was gone when the recount read the
// partition and wrong if another program wrote it after the read (it was
// not adopted then). Recounting again, after the removal, is right either
// way. Whether this call applied the removal or an earlier delivery did,
// the check is made, so that a delivery that failed before its recount
// is made whole by the next one. It costs one Stats read; the recount,
// which reads the whole partition, comes only when a recount and the
// removal of an item that was never adopted fall within seconds of each
// other.
func (ib *Inbox) recountIfRemovedNear(ctx context.Context, r driver.Removal) error {
	p := r.Record.Partition
	st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Now: ib.now()})
	if err != nil {
		return err
	}
	if st.Recounted.IsZero() || st.Recounted.Before(r.LeftAt()) {
		return nil
	}
	return ib.repairPartition(ctx, p)
}

// adoptForeign adopts rec, the new image of an INSERT or MODIFY record
// (nil if it has none), if another program wrote it (it has no ledger
// entry): a direct message, a broadcast or group message, or a receipt.
// It gets an entry, as Recount would give it, so that from then on it is
// counted out the moment it expires, like the Inbox's own records (Counts
// reads the entries that expired), and a direct message joins the
// Store's index of unread messages (the dynamo Store's unread index, which
// an unread-only List reads). The adoption applies only if the record
// still stands as the image shows it, so a redelivered or late record
// changes nothing. Records that expired are left to their removal.
//
// A receipt of a broadcast in a thread is adopted into its thread: see
// adoptIntoThread.
func (ib *Inbox) adoptForeign(ctx context.Context, rec *driver.Record) error {
	if rec == nil || rec.Ledgered() || !ib.now().Before(rec.Message.ExpiresAt) {
		return nil
	}
	if rec.Receipt && !rec.State().IsZero() {
		shared := sharedOf(*rec)
		found, err := ib.store.GetRecords(ctx, []driver.Key{{Partition: shared, ID: rec.Message.ID}})
		if err != nil {
			return err
		}
		switch {
		case len(found) == 0:
			return ib.dropDeadReceipt(ctx, *rec)
		case found[0].Message.Thread != "":
			return ib.adoptIntoThread(ctx, *rec, found[0])
		}
	}
	adopted := *rec
	adopted.Entry, adopted.Counted = driver.NewLedgerSK(rec.Message.ExpiresAt, rec.Message.ID), driver.AdoptedCounted(*rec)
	if err := ib.store.Repair(ctx, rec.Partition, driver.Repair{Adopt: []driver.Record{*rec}, AdoptAs: []string{adopted.Entry}}); err != nil {
		return err
	}
	// Adopted, a record that its counters count with other marks than it
	// carries (see driver.ForeignCounted) is recounted at once.
	return ib.recountEdited(ctx, &adopted)
}

// recountEdited makes the ledger entry of rec, the new image of an INSERT
// or MODIFY record (nil if it has none), count the marks rec carries, if
// another program changed them (driver.Record.Edited: the seeds' writer
// marking it read): with the entry, the snooze entry of a snoozed record
// and the counters that program does not keep (driver.EditDeltas: a
// thread's, a group's, archivedread), in one Mark that applies only if
// the record still stands as the image shows it (its marks and the marks
// its entry counts), so a redelivered or late record changes nothing.
// Until then Counts takes a snoozed message out of the counts with the
// marks it had, and an expired one with the marks its entry counts.
// Records that expired, or are gone, are left to their removal, which
// accounts them as their counters count them (driver.RemovalDeltas).
func (ib *Inbox) recountEdited(ctx context.Context, rec *driver.Record) error {
	now := ib.now()
	if rec == nil || !rec.Edited() || !now.Before(rec.Message.ExpiresAt) {
		return nil
	}
	mk := recountMark(*rec, now)
	err := ib.applyMarks(ctx, rec.Partition, []driver.Mark{mk}, driver.MergeCounters(slices.Concat(driver.EditDeltas(*rec), mk.TimedDeltas(), driver.MutedDeltas(mk))))
	switch {
	case errors.Is(err, ErrNotFound) && rec.Receipt:
		// The broadcast is gone: the receipt, dead, goes with what its
		// counters count of it, as Recount's dead receipts do, for a
		// process that counts its group out (the user left the group)
		// would count another program's read of it else. It is read
		// again for that: rec may be an old image, the receipt
		// recounted since.
		found, err := ib.store.GetRecords(ctx, []driver.Key{{Partition: sharedOf(*rec), ID: rec.Message.ID}, rec.Key()})
		if err != nil {
			return err
		}
		var receipt *driver.Record
		for i := range found {
			if found[i].Partition.IsShared() {
				return nil // it stands: the receipt is the one gone
			}
			receipt = &found[i]
		}
		if receipt == nil || !receipt.Receipt || !receipt.Ledgered() {
			return nil
		}
		return ib.removeDeadReceipt(ctx, *receipt)
	case errors.Is(err, driver.ErrStateChanged) || errors.Is(err, ErrNotFound):
		return nil // changed since (a later record brings it) or gone
	}
	return err
}

// recountMark returns the mark that rewrites the ledger entry (and snooze
// entry, or a scheduled message's pending entry before it is due) of rec,
// a user's direct message or receipt with one, as rec stands: its marks
// stay as they are.
func recountMark(rec driver.Record, now time.Time) driver.Mark {
	u := User{Scope: rec.Partition.Scope(), ID: rec.Partition.User}
	if !rec.Receipt {
		mk := markFor(u, rec, nil, rec.State(), now)
		if !rec.Message.Due(now) {
			mk.DeliverAt = rec.Message.DeliverAt // its pending entry gets its marks
		}
		return mk
	}
	b := driver.Record{Partition: sharedOf(rec), Message: driver.Message{ID: rec.Message.ID, Category: rec.Message.Category, Thread: rec.Message.Thread, ExpiresAt: rec.Message.ExpiresAt}}
	return markFor(u, b, &rec, rec.State(), now)
}

// dropDeadReceipt adopts receipt, another program's receipt (no ledger
// entry) of a broadcast that no longer exists (removed before it expired),
// and then deletes it with its marks, as Recount does with a dead receipt:
// adopted and kept, it would count in no thread (its broadcast, and so
// its thread, is gone), while a process whose snapshot of the shared
// partition still holds the broadcast lists it in its thread, read; gone,
// that process lists the broadcast unread in its thread and counts it so,
// until its snapshot shows the broadcast's removal. Each step applies
// only if the receipt still stands as adopted.
func (ib *Inbox) dropDeadReceipt(ctx context.Context, receipt driver.Record) error {
	adopt := receipt
	receipt.Entry, receipt.Counted = driver.NewLedgerSK(receipt.Message.ExpiresAt, receipt.Message.ID), driver.AdoptedCounted(adopt)
	if err := ib.store.Repair(ctx, receipt.Partition, driver.Repair{Adopt: []driver.Record{adopt}, AdoptAs: []string{receipt.Entry}}); err != nil {
		return err
	}
	return ib.removeDeadReceipt(ctx, receipt)
}

// removeDeadReceipt deletes receipt, a user's receipt with a ledger entry
// whose broadcast no longer exists, with the entry and what the counters
// count of it (driver.RemovalDeltas), if the entry is still there.
func (ib *Inbox) removeDeadReceipt(ctx context.Context, receipt driver.Record) error {
	_, err := ib.store.ApplyRemoval(ctx, driver.Removal{Record: receipt, Deltas: driver.RemovalDeltasOf(receipt), Delete: true, Now: ib.now()})
	return err
}

// adoptIntoThread adopts receipt, another program's receipt (no ledger
// entry) of broadcast b, which is in a thread, with a mark that keeps its
// marks: the receipt gets b's thread and an entry, and its marks move
// into the thread's counters in the same atomic unit (another program
// counts no thread). If the receipt changed meanwhile nothing is written:
// whoever changed it adopted it, or its next change will.
func (ib *Inbox) adoptIntoThread(ctx context.Context, receipt, b driver.Record) error {
	u := User{Scope: receipt.Partition.Scope(), ID: receipt.Partition.User}
	mk := markFor(u, b, &receipt, receipt.State(), ib.now())
	err := ib.applyMarks(ctx, receipt.Partition, []driver.Mark{mk}, driver.MarkDeltas(mk))
	if errors.Is(err, driver.ErrStateChanged) || errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// sharedOf returns the shared partition of receipt r's broadcast.
func sharedOf(r driver.Record) Partition {
	if g := r.Message.Audience.Group; g != "" {
		return r.Partition.Scope().Group(g)
	}
	return r.Partition.Scope().Public()
}

// errNotDueYet reports a timer that went off before this process's clock
// reached its entry's time: the stream delivers it again.
var errNotDueYet = errors.New("inbox: a timed entry's timer went off before its time, by this clock")

// foldTimed folds the timed entry at sk of the record at k, whose timer
// went off (its time came): one Mark that keeps the record's marks and
// deletes the entry with its tallies (driver.Fold), if the record still
// notes it. A record that notes another entry, or none, or that is gone
// or expired (its removal takes its entry), was folded or removed since:
// nothing is written, so a redelivered timer changes nothing. Until it is
// folded, Counts reads the entry among those whose time has come.
func (ib *Inbox) foldTimed(ctx context.Context, k driver.Key, sk string) error {
	for range markAttempts {
		recs, err := ib.store.GetRecords(ctx, []driver.Key{k})
		if err != nil || len(recs) == 0 || recs[0].Timed != sk {
			return err
		}
		mk, ok := driver.Fold(recs[0], ib.now())
		if !ok {
			return fmt.Errorf("%w: %s of %s", errNotDueYet, sk, k.Partition.PK())
		}
		err = ib.applyMarks(ctx, k.Partition, []driver.Mark{mk}, driver.MarkDeltas(mk))
		switch {
		case errors.Is(err, ErrNotFound):
			return nil
		case !errors.Is(err, driver.ErrStateChanged):
			return err
		}
	}
	return fmt.Errorf("inbox: folding %s of %s: the record kept changing: %w", sk, k.Partition.PK(), ErrConflict)
}

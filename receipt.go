package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stak/inbox/driver"
)

// markAttempts bounds how often a state change reads and retries after
// another writer changed the same record first.
const markAttempts = 8

// transition changes u's marks on message id with change, which returns the
// new marks given the message (u's direct message, or the broadcast) and
// u's current marks, or false to change nothing. It reads
// the message as u sees it (lookup), writes the change as one Store.Mark
// conditional on the marks it read, and starts over if another writer
// changed them first. It reports whether this call changed anything.
func (ib *Inbox) transition(ctx context.Context, u User, id string, change func(driver.Record, driver.State) (driver.State, bool)) (bool, error) {
	return ib.transitionAt(ctx, u, id, false, change)
}

// transitionAt is transition; with scheduled it also finds a scheduled
// message that is not due yet (Redact cancels one).
func (ib *Inbox) transitionAt(ctx context.Context, u User, id string, scheduled bool, change func(driver.Record, driver.State) (driver.State, bool)) (bool, error) {
	if err := u.Validate(); err != nil {
		return false, err
	}
	if err := driver.ValidateMessageID(id); err != nil {
		return false, err
	}
	var readBelow time.Time // her read position reads the message read then
	for range markAttempts {
		now := ib.now()
		rec, receipt, err := ib.lookupState(ctx, u, id, now, scheduled)
		if err != nil {
			return false, err
		}
		// A direct message a read position covers reads as read (see
		// markThreadRead).
		over, err := ib.covering(ctx, u, rec)
		if err != nil {
			return false, err
		}
		from := over.State()
		if receipt != nil {
			from = receipt.State()
		}
		// A group chat's message her position there covers reads as read
		// too, unless her receipt says otherwise (see position_group.go).
		lent, err := ib.lending(ctx, u, rec, receipt)
		if err != nil {
			return false, err
		}
		if !lent.IsZero() {
			from.ReadAt = lent
		}
		to, ok := change(over, from)
		if !ok {
			return false, nil
		}
		if !readBelow.IsZero() && to.ReadAt.IsZero() && to.DeletedAt.IsZero() {
			to.ReadAt = readBelow
		}

		mk := markFor(u, rec, receipt, to, now)
		// Read uncovered: should a position move over the message before
		// the write, the Store refuses it (driver.Mark.MadeUncovered),
		// and the next attempt reads it as the position does.
		mk.Uncovered = receipt == nil && driver.Coverable(over)
		if mk.Delete && !rec.Ledgered() {
			// Another program's message, deleted: adopt it first, so that
			// the stream's report of the deletion finds its entry gone
			// with it and changes nothing (without an entry, the stream
			// would account the removal again, by its event ID).
			if err := ib.store.Repair(ctx, rec.Partition, driver.Repair{Adopt: []driver.Record{rec}, AdoptAs: []string{mk.Entry}}); err != nil {
				return false, err
			}
			continue
		}
		err = ib.applyMarks(ctx, u.Partition(), []driver.Mark{mk}, driver.MarkDeltas(mk))
		if ce := (*driver.CoveredError)(nil); errors.As(err, &ce) {
			// Unread again below her read position in its thread (an
			// unarchive): everything below it reads as read, so the
			// message is marked read too, at the position's time.
			if readBelow, err = ib.readBelow(ctx, u, ce.Group, ce.Thread, id); err != nil {
				return false, err
			}
			continue
		}
		if !errors.Is(err, driver.ErrStateChanged) {
			return err == nil, err
		}
	}
	return false, fmt.Errorf("inbox: marking %s for %s: the message kept changing: %w", id, u.ID, ErrConflict)
}

// markFor returns the mark that sets u's marks on rec to to, at now: rec
// is u's direct message, or a broadcast or group message with u's receipt
// of it (nil if u has none). It keeps the ledger entry of a direct message
// or of an existing receipt, and gives a new receipt, or a message without
// one, a new entry.
func markFor(u User, rec driver.Record, receipt *driver.Record, to driver.State, now time.Time) driver.Mark {
	msg := rec.Message
	mk := driver.Mark{Key: driver.Key{Partition: u.Partition(), ID: msg.ID}, Now: now, Category: msg.Category, Thread: msg.Thread, ExpiresAt: msg.ExpiresAt, Entry: rec.Entry, From: rec.State(), To: to, Counted: rec.Counted, Timed: rec.Timed}
	if rec.Partition.IsShared() {
		mk.Receipt, mk.Shared, mk.Entry, mk.From, mk.Counted, mk.Timed = true, rec.Partition, "", driver.State{}, 0, ""
		if receipt != nil {
			mk.Entry, mk.From, mk.Counted, mk.Timed = receipt.Entry, receipt.State(), receipt.Counted, receipt.Timed
		}
	}
	if mk.Entry == "" {
		mk.Entry = driver.NewLedgerSK(msg.ExpiresAt, msg.ID)
		mk.Adopts = !mk.From.IsZero() || !mk.Receipt // a record stands, without an entry
	}
	if !mk.Receipt && !to.DeletedAt.IsZero() {
		mk.Delete, mk.To = true, driver.State{} // a direct message is removed
		mk.DeliverAt = msg.DeliverAt            // with its pending entry, if scheduled
	}
	return mk
}

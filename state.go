package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// State is a user's marks on one message: read, archived, deleted. A
// direct message carries them on the user's copy; a broadcast or group
// message on the user's receipt, which exists while any mark is set.
type State struct {
	ReadAt     time.Time
	ArchivedAt time.Time
	// DeletedAt hides a broadcast or group message from the user. It is
	// never set with the other marks, and never on a direct message (a
	// direct message the user deletes is removed).
	DeletedAt time.Time
}

// IsZero reports whether s has no mark.
func (s State) IsZero() bool { return s == State{} }

// same reports whether s and o set the same marks, whatever their times.
func (s State) same(o State) bool {
	return s.ReadAt.IsZero() == o.ReadAt.IsZero() && s.ArchivedAt.IsZero() == o.ArchivedAt.IsZero() && s.DeletedAt.IsZero() == o.DeletedAt.IsZero()
}

// State returns the user's marks on r: a direct message's own, or a
// receipt's. A broadcast or group message in its shared partition has none.
func (r Record) State() State {
	if r.Partition.IsShared() {
		return State{}
	}
	return State{ReadAt: r.Message.ReadAt, ArchivedAt: r.Message.ArchivedAt, DeletedAt: r.DeletedAt}
}

// withState returns r with the user's marks s.
func (r Record) withState(s State) Record {
	r.Message.ReadAt, r.Message.ArchivedAt, r.DeletedAt = s.ReadAt, s.ArchivedAt, s.DeletedAt
	return r
}

// markAttempts bounds how often a state change reads and retries after
// another writer changed the same record first.
const markAttempts = 8

// transition changes u's marks on message id with change, which returns the
// new marks given the message (u's direct message, or the broadcast) and
// u's current marks, or false to change nothing. It reads
// the message as u sees it (lookup), writes the change as one Store.Mark
// conditional on the marks it read, and starts over if another writer
// changed them first. It reports whether this call changed anything.
func (ib *Inbox) transition(ctx context.Context, u User, id string, change func(Record, State) (State, bool)) (bool, error) {
	if err := u.Validate(); err != nil {
		return false, err
	}
	if err := ValidateMessageID(id); err != nil {
		return false, err
	}
	for range markAttempts {
		now := ib.now()
		rec, receipt, err := ib.lookupState(ctx, u, id, now)
		if err != nil {
			return false, err
		}
		from := rec.State()
		if receipt != nil {
			from = receipt.State()
		}
		to, ok := change(rec, from)
		if !ok {
			return false, nil
		}
		mk := markFor(u, rec, receipt, to, now)
		if mk.Delete && !rec.Ledgered() {
			// Another program's message, deleted: adopt it first, so that
			// the stream's report of the deletion finds its entry gone
			// with it and changes nothing (without an entry, the stream
			// would account the removal again, by its event ID).
			if err := ib.store.Repair(ctx, rec.Partition, Repair{Adopt: []Record{rec}, AdoptAs: []string{mk.Entry}}); err != nil {
				return false, err
			}
			continue
		}
		err = ib.store.Mark(ctx, []Mark{mk}, markDeltas(mk))
		if !errors.Is(err, ErrStateChanged) {
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
func markFor(u User, rec Record, receipt *Record, to State, now time.Time) Mark {
	msg := rec.Message
	mk := Mark{Key: Key{Partition: u.partition(), ID: msg.ID}, Now: now, Category: msg.Category, ExpiresAt: msg.ExpiresAt, Entry: rec.Entry, From: rec.State(), To: to}
	if rec.Partition.IsShared() {
		mk.Receipt, mk.Shared, mk.Entry, mk.From = true, rec.Partition, "", State{}
		if receipt != nil {
			mk.Entry, mk.From = receipt.Entry, receipt.State()
		}
	}
	if mk.Entry == "" {
		mk.Entry = newLedgerSK(msg.ExpiresAt, msg.ID)
	}
	if !mk.Receipt && !to.DeletedAt.IsZero() {
		mk.Delete, mk.To = true, State{} // a direct message is removed
	}
	return mk
}

// records returns the record mk finds and the one it leaves, as the
// ledger records them (nil where there is none: a receipt not yet
// created, or removed; a direct message deleted).
func (mk Mark) records() (before, after *Record) {
	rec := Record{Partition: mk.Key.Partition, Receipt: mk.Receipt, Entry: mk.Entry, Message: Message{ID: mk.Key.ID, Category: mk.Category, ExpiresAt: mk.ExpiresAt}}
	if mk.Receipt && !mk.Shared.IsPublic() {
		rec.Message.Audience.Group = mk.Shared.Group
	}
	if !mk.Receipt || !mk.From.IsZero() {
		b := rec.withState(mk.From)
		before = &b
	}
	if !mk.Delete && (!mk.Receipt || !mk.To.IsZero()) {
		a := rec.withState(mk.To)
		after = &a
	}
	return before, after
}

// markDeltas returns the counter changes of mark mk: what the record
// counts after it less what it counted before.
func markDeltas(mk Mark) []Counter {
	before, after := mk.records()
	var out []Counter
	if before != nil {
		out = append(out, RemovalDeltas(*before)...)
	}
	if after != nil {
		out = append(out, recordCounters(*after)...)
	}
	return mergeCounters(out)
}

// recordCounters returns what rec adds to its partition's counters: a
// message or broadcast adds published; in a user's partition a record adds
// read if read, archived if archived, archivedread if both, hidden if
// deleted (a receipt); a receipt of a group's message adds its marks to the
// group's counters too.
func recordCounters(rec Record) []Counter {
	var t Counter
	if !rec.Receipt {
		t.Published = 1
	}
	if !rec.Partition.IsShared() {
		st := rec.State()
		if !st.ReadAt.IsZero() {
			t.Read = 1
		}
		if !st.ArchivedAt.IsZero() {
			t.Archived = 1
			t.ArchivedRead = t.Read
		}
		if !st.DeletedAt.IsZero() {
			t.Hidden = 1
		}
	}
	out := tallyDeltas(rec.Partition, rec.Message.Category, "", t)
	if g := rec.Message.Audience.Group; rec.Receipt && g != "" {
		out = append(out, tallyDeltas(rec.Partition, rec.Message.Category, g, t)...)
	}
	return mergeCounters(out)
}

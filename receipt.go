package inbox

import (
	"context"
	"errors"
	"time"
)

// MarkRead marks message id read for u: a direct message gets its readat
// set, a broadcast gets a read receipt in u's partition (copying the
// broadcast's category and expiry, so it expires with it). It reports
// whether this call changed anything: false if the message was already
// read. It costs two round trips: a strongly consistent read of both
// candidate keys, then one atomic write of the mark and u's read counters,
// conditional on the message being unread, so concurrent and repeated calls
// move the counters exactly once.
//
// A message that does not exist, or has expired, is ErrNotFound.
func (ib *Inbox) MarkRead(ctx context.Context, u User, id string) (bool, error) {
	if err := u.Validate(); err != nil {
		return false, err
	}
	if err := ValidateMessageID(id); err != nil {
		return false, err
	}
	now := ib.now()
	rec, err := ib.lookup(ctx, u, id, now)
	if err != nil {
		return false, err
	}
	if rec.Message.IsRead() {
		return false, nil
	}
	mk := markFor(u, rec, now)
	err = ib.store.MarkRead(ctx, []Mark{mk}, counterDeltas(mk.Key.Partition, mk.Category, 0, 1))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrAlreadyRead):
		return false, nil
	}
	return false, err
}

// markFor returns the mark that records u reading rec (u's direct message,
// or a broadcast) at now: it keeps a direct message's ledger entry, and
// gives a receipt, or a message without one, a new entry.
func markFor(u User, rec Record, now time.Time) Mark {
	msg := rec.Message
	mk := Mark{Key: Key{Partition: u.partition(), ID: msg.ID}, ReadAt: now, Now: now, Receipt: rec.Partition.IsPublic(), Category: msg.Category, ExpiresAt: msg.ExpiresAt, Entry: rec.Entry}
	if mk.Receipt || mk.Entry == "" {
		mk.Entry = newLedgerSK(msg.ExpiresAt, msg.ID)
	}
	return mk
}

// MarkAllRead marks every unread, unexpired message of u read, direct
// messages and broadcasts alike, and returns how many it marked. It pages
// through u's unread feed and writes each page of up to MaxMarkBatch marks,
// with the summed counter changes, as one atomic unit; if another writer
// marked one of them meanwhile, that page falls back to one write per
// message, so the counters stay exact.
//
// Messages published while it runs may be left unread.
func (ib *Inbox) MarkAllRead(ctx context.Context, u User) (int, error) {
	if err := u.Validate(); err != nil {
		return 0, err
	}
	marked := 0
	opts := ListOptions{Limit: MaxMarkBatch, UnreadOnly: true}
	for {
		recs, cursor, err := ib.page(ctx, u, opts)
		if err != nil {
			return marked, err
		}
		n, err := ib.markBatch(ctx, u, recs)
		marked += n
		if err != nil {
			return marked, err
		}
		if cursor == "" {
			return marked, nil
		}
		opts.Cursor = cursor
	}
}

// markBatch marks recs (unread, from u's feed) read in one atomic unit, or
// one by one if that fails a condition. It returns how many it marked.
func (ib *Inbox) markBatch(ctx context.Context, u User, recs []Record) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	now := ib.now()
	marks := make([]Mark, len(recs))
	var deltas []Counter
	for i, r := range recs {
		marks[i] = markFor(u, r, now)
		deltas = append(deltas, counterDeltas(marks[i].Key.Partition, marks[i].Category, 0, 1)...)
	}
	err := ib.store.MarkRead(ctx, marks, mergeCounters(deltas))
	if err == nil {
		return len(recs), nil
	}
	if !errors.Is(err, ErrAlreadyRead) && !errors.Is(err, ErrNotFound) {
		return 0, err
	}
	marked := 0
	for _, mk := range marks {
		err := ib.store.MarkRead(ctx, []Mark{mk}, counterDeltas(mk.Key.Partition, mk.Category, 0, 1))
		switch {
		case err == nil:
			marked++
		case errors.Is(err, ErrAlreadyRead), errors.Is(err, ErrNotFound):
		default:
			return marked, err
		}
	}
	return marked, nil
}

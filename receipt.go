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
	err = ib.store.MarkRead(ctx, []Mark{mk}, markDeltas(mk))
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
	mk := Mark{Key: Key{Partition: u.partition(), ID: msg.ID}, ReadAt: now, Now: now, Category: msg.Category, ExpiresAt: msg.ExpiresAt, Entry: rec.Entry}
	if rec.Partition.IsShared() {
		mk.Receipt, mk.Shared = true, rec.Partition
	}
	if mk.Receipt || mk.Entry == "" {
		mk.Entry = newLedgerSK(msg.ExpiresAt, msg.ID)
	}
	return mk
}

// markDeltas returns the counter changes of mark mk: read +1 in the user's
// counters, and in the group's read counters for a group's message.
func markDeltas(mk Mark) []Counter {
	return readDeltas(mk.Key.Partition, mk.Category, receiptGroup(mk), 1)
}

// receiptGroup returns the group a receipt of mk records: its broadcast's
// group, "" for everyone's or a direct message.
func receiptGroup(mk Mark) string {
	if !mk.Receipt || mk.Shared.IsPublic() {
		return ""
	}
	return mk.Shared.Group
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

// markBatch marks recs (unread, from u's feed) read, in as few atomic
// units as fit in a transaction (see chunkMarks), each falling back to one
// write per message if another writer marked one of them meanwhile. It
// returns how many it marked.
func (ib *Inbox) markBatch(ctx context.Context, u User, recs []Record) (int, error) {
	now := ib.now()
	marks := make([]Mark, len(recs))
	for i, r := range recs {
		marks[i] = markFor(u, r, now)
	}
	marked := 0
	for _, chunk := range chunkMarks(marks) {
		var deltas []Counter
		for _, mk := range chunk {
			deltas = append(deltas, markDeltas(mk)...)
		}
		err := ib.store.MarkRead(ctx, chunk, mergeCounters(deltas))
		if err == nil {
			marked += len(chunk)
			continue
		}
		if !errors.Is(err, ErrAlreadyRead) && !errors.Is(err, ErrNotFound) {
			return marked, err
		}
		for _, mk := range chunk {
			err := ib.store.MarkRead(ctx, []Mark{mk}, markDeltas(mk))
			switch {
			case err == nil:
				marked++
			case errors.Is(err, ErrAlreadyRead), errors.Is(err, ErrNotFound):
			default:
				return marked, err
			}
		}
	}
	return marked, nil
}

// maxTransactItems is DynamoDB's limit on the items of one transaction,
// which one Store.MarkRead must fit in.
const maxTransactItems = 100

// chunkMarks splits marks into runs of at most MaxMarkBatch whose
// transaction fits in maxTransactItems items: a direct mark takes two (the
// message and its ledger entry), a receipt two and one check of its
// broadcast, and each counter changed one.
func chunkMarks(marks []Mark) [][]Mark {
	var out [][]Mark
	for len(marks) > 0 {
		n, items := 0, 0
		var deltas []Counter
		for n < len(marks) && n < MaxMarkBatch {
			d := append(append([]Counter(nil), deltas...), markDeltas(marks[n])...)
			cost := 2
			if marks[n].Receipt {
				cost++
			}
			if n > 0 && items+cost+len(mergeCounters(d)) > maxTransactItems {
				break
			}
			items += cost
			deltas = d
			n++
		}
		out = append(out, marks[:n])
		marks = marks[n:]
	}
	return out
}

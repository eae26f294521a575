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
	msg, err := ib.lookup(ctx, u, id, now)
	if err != nil {
		return false, err
	}
	if msg.IsRead() {
		return false, nil
	}
	userKey := Key{Partition: u.partition(), ID: id}
	err = ib.store.MarkRead(ctx, []Mark{markFor(userKey, msg, now)}, counterDeltas(userKey.Partition, msg.Category, 0, 1))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrAlreadyRead):
		return false, nil
	}
	return false, err
}

// markFor returns the mark that records u reading msg (found in u's
// partition or, for a broadcast, the public one) at now.
func markFor(userKey Key, msg Message, now time.Time) Mark {
	mk := Mark{Key: userKey, ReadAt: now, Now: now}
	if msg.IsBroadcast() {
		mk.Receipt = &Receipt{Category: msg.Category, ExpiresAt: msg.ExpiresAt}
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
		page, err := ib.List(ctx, u, opts)
		if err != nil {
			return marked, err
		}
		n, err := ib.markBatch(ctx, u, page.Messages)
		marked += n
		if err != nil {
			return marked, err
		}
		if page.Cursor == "" {
			return marked, nil
		}
		opts.Cursor = page.Cursor
	}
}

// markBatch marks msgs (unread, from u's feed) read in one atomic unit, or
// one by one if that fails a condition. It returns how many it marked.
func (ib *Inbox) markBatch(ctx context.Context, u User, msgs []Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	now := ib.now()
	marks := make([]Mark, len(msgs))
	var deltas []Counter
	for i, m := range msgs {
		key := Key{Partition: u.partition(), ID: m.ID}
		marks[i] = markFor(key, m, now)
		deltas = append(deltas, counterDeltas(key.Partition, m.Category, 0, 1)...)
	}
	err := ib.store.MarkRead(ctx, marks, mergeCounters(deltas))
	if err == nil {
		return len(msgs), nil
	}
	if !errors.Is(err, ErrAlreadyRead) && !errors.Is(err, ErrNotFound) {
		return 0, err
	}
	marked := 0
	for i, mk := range marks {
		err := ib.store.MarkRead(ctx, []Mark{mk}, counterDeltas(mk.Key.Partition, msgs[i].Category, 0, 1))
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

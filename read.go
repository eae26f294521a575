package inbox

import (
	"context"
	"errors"

	"github.com/stak/inbox/driver"
)

// MarkRead marks message id read for u: a direct message gets its readat
// set, a broadcast or group message gets u's receipt (copying the
// message's category and expiry, so it expires with it). It reports
// whether this call changed anything: false if the message was already
// read. It costs two round trips: a strongly consistent read of every
// place the message can be, then one atomic write of the mark and u's
// counters, conditional on u's marks being those read, so concurrent and
// repeated calls move the counters exactly once.
//
// A message that does not exist, has expired, or that u deleted is
// ErrNotFound. Reading an archived message keeps it archived.
func (ib *Inbox) MarkRead(ctx context.Context, u User, id string) (bool, error) {
	return ib.transition(ctx, u, id, func(_ driver.Record, s driver.State) (driver.State, bool) {
		if !s.ReadAt.IsZero() {
			return s, false
		}
		s.ReadAt = ib.now()
		return s, true
	})
}

// MarkAllRead marks read every unread, unexpired message of u that List
// with o shows (its Category, Thread, UpTo and Archived filters; Limit and Cursor
// are ignored), direct messages, broadcasts and group messages alike, and
// returns how many it marked: pass the options of the view whose "mark all
// read" button was pressed, with UpTo set to the newest message it showed,
// and it marks exactly that view.
//
// It pages through u's unread feed and writes each page of up to
// MaxMarkBatch marks, with the summed counter changes, as one atomic unit;
// if another writer changed one of them meanwhile, that page falls back to
// one write per message, so the counters stay exact. Its cost grows with
// the unread messages it marks (and the broadcasts it passes), not with
// the direct messages u has read: one unread-only page (see List) and one
// transaction per MaxMarkBatch messages.
func (ib *Inbox) MarkAllRead(ctx context.Context, u User, o ListOptions) (int, error) {
	if err := u.Validate(); err != nil {
		return 0, err
	}
	marked := 0
	o.Limit, o.Cursor, o.UnreadOnly = driver.MaxMarkBatch, "", true
	for {
		recs, cursor, err := ib.page(ctx, u, o)
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
		o.Cursor = cursor
	}
}

// markBatch marks recs (unread, from u's feed, with u's receipts) read, in
// as few atomic units as fit in a transaction (see chunkMarks), each
// falling back to one MarkRead per message if another writer changed one
// of them meanwhile. It returns how many it marked.
func (ib *Inbox) markBatch(ctx context.Context, u User, recs []feedRecord) (int, error) {
	now := ib.now()
	marks := make([]driver.Mark, len(recs))
	for i, r := range recs {
		to := r.state()
		to.ReadAt = now
		marks[i] = markFor(u, r.Record, r.receipt, to, now)
	}
	marked := 0
	for _, chunk := range chunkMarks(marks) {
		var deltas []driver.Counter
		for _, mk := range chunk {
			deltas = append(deltas, driver.MarkDeltas(mk)...)
		}
		err := ib.store.Mark(ctx, chunk, driver.MergeCounters(deltas))
		if err == nil {
			marked += len(chunk)
			continue
		}
		if !errors.Is(err, driver.ErrStateChanged) && !errors.Is(err, ErrNotFound) {
			return marked, err
		}
		for _, mk := range chunk {
			changed, err := ib.MarkRead(ctx, u, mk.Key.ID)
			switch {
			case err == nil && changed:
				marked++
			case err == nil, errors.Is(err, ErrNotFound):
			default:
				return marked, err
			}
		}
	}
	return marked, nil
}

// maxTransactItems is DynamoDB's limit on the items of one transaction,
// which one Store.Mark must fit in.
const maxTransactItems = 100

// chunkMarks splits marks into runs of at most MaxMarkBatch whose
// transaction fits in maxTransactItems items: a direct mark takes two (the
// message and its ledger entry), a receipt two and one check of its
// broadcast, and each counter changed one.
func chunkMarks(marks []driver.Mark) [][]driver.Mark {
	var out [][]driver.Mark
	for len(marks) > 0 {
		n, items := 0, 0
		var deltas []driver.Counter
		for n < len(marks) && n < driver.MaxMarkBatch {
			d := append(append([]driver.Counter(nil), deltas...), driver.MarkDeltas(marks[n])...)
			cost := 2 // the record and its entry
			if marks[n].Receipt {
				cost++ // the check of the broadcast
			}
			if n > 0 && items+cost+len(driver.MergeCounters(d)) > maxTransactItems {
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

package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"

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
func (ib *Inbox) MarkRead(ctx context.Context, u User, id string) (_ bool, err error) {
	defer ib.observe(&ctx, "MarkRead", u.Scope, u.ID).end(&err)
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
// MaxMarkBatch marks (22 in a thread, whose receipts write their reader
// items too: see ReadBy), with the summed counter changes, as one atomic unit;
// if another writer changed one of them meanwhile, that page falls back to
// one write per message, so the counters stay exact. It changes exactly
// what the view holds at the instant each message is changed, never more:
// each single write reads the message again, and marks it only if it is
// still in the view, on condition that its marks are still those read (a
// message another call archived, snoozed or deleted meanwhile is left as
// that call left it). Its cost grows with
// the unread messages it marks (and the broadcasts it passes), not with
// the direct messages u has read: one unread-only page (see List) and one
// transaction per MaxMarkBatch messages.
func (ib *Inbox) MarkAllRead(ctx context.Context, u User, o ListOptions) (_ int, err error) {
	defer ib.observe(&ctx, "MarkAllRead", u.Scope, u.ID).end(&err)
	o.UnreadOnly = true
	return ib.bulk(ctx, u, o, func(s driver.State, now time.Time) driver.State {
		s.ReadAt = now
		return s
	})
}

// bulk gives every message of u that List with o shows (Limit and Cursor
// ignored) the marks set returns, page by page, and returns how many it
// changed: each page of up to MaxMarkBatch messages is one atomic unit
// (see chunkMarks), falling back to one write per message, of each message
// still in the view, for a page another writer changed meanwhile. A page
// lists what is left of the view below the previous one, so the changed
// messages, which leave the view or not, are passed once; after a short
// page, once u's counts say the view is empty, the rest is not read.
func (ib *Inbox) bulk(ctx context.Context, u User, o ListOptions, set func(driver.State, time.Time) driver.State) (int, error) {
	if err := u.Validate(); err != nil {
		return 0, err
	}
	if o.Snoozed {
		return 0, fmt.Errorf("%w: a bulk action on the snoozed view", ErrInvalidInput)
	}
	after := "" // the IDs below it are up to o.UpTo; "" bounds none
	if o.UpTo != "" {
		var err error
		if after, err = idAfter(o.UpTo); err != nil {
			return 0, err
		}
	}
	keep := func(m driver.Message, s driver.State, now time.Time) bool {
		return inView(m, s, o, now) && (after == "" || m.ID < after)
	}
	changed := 0
	o.Limit, o.Cursor = driver.MaxMarkBatch, ""
	if o.Thread != "" {
		o.Limit = threadMarkBatch
	}
	for {
		recs, cursor, err := ib.page(ctx, u, o)
		if err != nil {
			return changed, err
		}
		n, err := ib.markBatch(ctx, u, recs, set, keep)
		changed += n
		if err != nil {
			return changed, err
		}
		if cursor == "" {
			return changed, nil
		}
		// A short page says filters dropped records: the rest of the view
		// may be long and hold nothing to change (archived messages below
		// the default view's, say). Exact counts tell when nothing is
		// left, at a round trip of stats.
		if len(recs) < o.Limit {
			if empty, err := ib.viewEmpty(ctx, u, o); err != nil || empty {
				return changed, err
			}
		}
		o.Cursor = cursor
	}
}

// viewEmpty reports whether List with o shows u nothing at all, from u's
// Counts (exactly what List shows): a view of one thread is never said
// empty.
func (ib *Inbox) viewEmpty(ctx context.Context, u User, o ListOptions) (bool, error) {
	if o.Thread != "" {
		return false, nil
	}
	c, err := ib.Counts(ctx, u)
	if err != nil {
		return false, err
	}
	t := c.Tally
	if o.Category != "" {
		t = c.Categories[o.Category]
	}
	switch {
	case o.Snoozed:
		return c.Snoozed == 0, nil // none at all; else the view may hold some
	case o.Archived:
		return t.Archived == 0, nil
	case o.UnreadOnly:
		return t.Unread == 0, nil
	}
	return t.Total == 0, nil
}

// markBatch gives recs (from u's feed, with u's receipts) the marks set
// returns, in as few atomic units as fit in a transaction (see
// chunkMarks), each falling back to one write per message if another
// writer changed one of them meanwhile. Another program's direct message
// deleted is written alone too, adopted first. A message written alone is
// read again and changed only if keep says it is still in the view, as
// read, by a mark conditional on the marks read: a change made between
// the read and the write has it read again. It returns how many it
// changed.
func (ib *Inbox) markBatch(ctx context.Context, u User, recs []feedRecord, set func(driver.State, time.Time) driver.State, keep func(driver.Message, driver.State, time.Time) bool) (int, error) {
	now := ib.now()
	var marks []driver.Mark
	var alone []string
	for _, r := range recs {
		mk := markFor(u, r.Record, r.receipt, set(r.state(), now), now)
		if mk.Delete && !r.Record.Ledgered() {
			alone = append(alone, mk.Key.ID)
			continue
		}
		marks = append(marks, mk)
	}
	marked := 0
	one := func(id string) error {
		changed, err := ib.transition(ctx, u, id, func(rec driver.Record, s driver.State) (driver.State, bool) {
			now := ib.now()
			if !keep(rec.Message, s, now) {
				return s, false
			}
			return set(s, now), true
		})
		switch {
		case err == nil && changed:
			marked++
		case err == nil, errors.Is(err, ErrNotFound):
		default:
			return err
		}
		return nil
	}
	for _, chunk := range chunkMarks(marks) {
		var deltas []driver.Counter
		for _, mk := range chunk {
			deltas = append(deltas, driver.MarkDeltas(mk)...)
		}
		err := ib.applyMarks(ctx, u.Partition(), chunk, driver.MergeCounters(deltas))
		if err == nil {
			marked += len(chunk)
			continue
		}
		if !errors.Is(err, driver.ErrStateChanged) && !errors.Is(err, ErrNotFound) {
			return marked, err
		}
		for _, mk := range chunk {
			if err := one(mk.Key.ID); err != nil {
				return marked, err
			}
		}
	}
	for _, id := range alone {
		if err := one(id); err != nil {
			return marked, err
		}
	}
	return marked, nil
}

// threadMarkBatch is the page of a bulk action on one thread: a receipt
// of a thread's broadcast takes its reader item besides (see chunkMarks),
// so that a page's marks and their counters still fit one transaction.
const threadMarkBatch = 22

// maxTransactItems is DynamoDB's limit on the items of one transaction,
// which one Store.Mark must fit in.
const maxTransactItems = 100

// chunkMarks splits marks into runs of at most MaxMarkBatch whose
// transaction fits in maxTransactItems items: a direct mark takes two (the
// message and its ledger entry), a receipt two and one check of its
// broadcast (and one more for its reader item, in a thread), and each
// counter changed one.
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
			if _, ok := marks[n].ReaderChange(); ok {
				cost++ // its reader item
			}
			puts, del := marks[n].TimedWrites()
			cost += len(puts) + len(del) // its snooze or pending entries
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

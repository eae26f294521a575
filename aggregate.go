package inbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sync/errgroup"

	"github.com/stak/inbox/driver"
)

// MaxAggregateSenders is the most distinct senders an aggregated item
// keeps (Message.Senders): a message of its key from another sender,
// once it has this many, starts a new item.
const MaxAggregateSenders = driver.MaxAggregateSenders

// MaxAggregateMembers is the most IDs of its earlier messages an
// aggregated item keeps (Message.Members), by which a retried publish
// of one of them (same HostSystemID) finds it delivered. A retry finds
// its message only in the key's newest item: after that item took this
// many more messages, or after a new item started (AggregateWindow,
// AggregateMax, MaxAggregateSenders), a retry delivers the message again,
// as a new message of its key.
const MaxAggregateMembers = driver.MaxAggregateMembers

// An aggregated message (Draft.Aggregate) joins its key's item in the
// user's feed when it is written: the item's newest message is replaced
// by the new one, which carries the item's count, senders and the IDs of
// its latest earlier messages, in one atomic write (Store.PutMessage with
// the replaced message's Delete mark). So the item is one record of the
// feed at every instant: Counts counts it once, List shows it once, at
// the place of its newest message, and every mark (read, seen, archive,
// delete, interacted; not snooze, as of any thread's message) applies to
// it as to any message, with its counters. A message that joins an item
// the user read or archived makes it unread in the feed again (the new
// record has none of her marks): the item's earlier messages are taken
// in as they stood. Her own message (she is its Sender) leaves the item
// as read as it was: read if she had read it, else unread.
//
// The messages of a key join one at a time: the write is conditioned on
// the Latest of the key's thread counter as read (driver.Record.Follows),
// so two publishes that race write one after the other, the second
// taking the first in. A join reads the user's c#* and the key's thread
// counter (her watermark, her read positions, the thread's Latest) and
// the key's newest message, in one round trip, then writes.

// putAggregated writes rec, u's copy of an aggregated message (Count 1,
// its own sender), joining it to the item of its key in u's feed: the
// key's newest message, if it is live and the item can take rec in
// (joinable), is deleted in the same write, and rec carries its count,
// senders and members. It returns the record written. A copy u has
// already (rec's ID is the item's, or one of its members) is
// driver.ErrExists. A key whose newest message is not an aggregated one
// of rec's category (a chat's thread, another category) is ErrConflict.
func (ib *Inbox) putAggregated(ctx context.Context, u User, rec driver.Record, b bounds) (driver.Record, error) {
	p, key := u.Partition(), rec.Message.Thread
	base := rec
	w, err := ib.fenceSeen(ctx, p) // her watermark, as Above is kept for
	if err != nil {
		return driver.Record{}, err
	}
	for attempt := range aggregateAttempts {
		if attempt > 0 {
			// Another message of the key came first: many at once (a
			// popular post's likes) take turns, with a jittered pause.
			pause := min(time.Millisecond<<min(attempt, 6), 50*time.Millisecond)
			select {
			case <-ctx.Done():
				// Between attempts, none in flight: nothing was written.
				return driver.Record{}, notWritten{fmt.Errorf("inbox: aggregate %q of %s stopped between its attempts: %w", key, u.ID, ctx.Err())}
			case <-time.After(pause/2 + rand.N(pause)):
			}
		}
		now := ib.now()
		var st driver.Stats
		var head []driver.Record
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() (err error) {
			st, err = ib.store.Stats(gctx, driver.StatsQuery{Partition: p, Keys: []driver.Counter{{}, {Thread: key}}})
			return err
		})
		g.Go(func() error {
			res, err := ib.store.Query(gctx, driver.Query{Partition: p, Thread: key, Limit: 1, Now: now})
			head = res.Records
			return err
		})
		if err := g.Wait(); err != nil {
			return driver.Record{}, err
		}
		rec = base
		for _, c := range st.Counters {
			if c.Thread == key && c.Group == "" && c.Category == "" && !c.Muted && !c.Covered {
				rec.Follows = c.Latest
			}
		}
		if rec.Follows != "" && (len(head) == 0 || head[0].Message.ID != rec.Follows) {
			// The newest message is not the thread's Latest: read before
			// it was written, or it is gone (deleted, expired). Read again,
			// after the Latest: a message written since fails the write's
			// condition.
			res, err := ib.store.Query(ctx, driver.Query{Partition: p, Thread: key, Limit: 1, Now: now})
			if err != nil {
				return driver.Record{}, err
			}
			head = res.Records
		}
		positions := driver.Positions(st.Counters)
		marks := []driver.Mark{{Key: driver.Key{Partition: p}, Now: now, Seen: w, Fence: true}}
		var deltas []driver.Counter
		if len(head) == 1 && !head[0].Receipt {
			h := head[0]
			if h.Message.ID == rec.Message.ID || slices.Contains(h.Message.Members, rec.Message.ID) {
				return h, fmt.Errorf("%w: %s already has message %s", driver.ErrExists, u.ID, rec.Message.ID)
			}
			if h.Message.Count == 0 || h.Message.Category != rec.Message.Category {
				return driver.Record{}, fmt.Errorf("%w: aggregate key %q of %s is a thread's, or another category's", ErrConflict, key, u.ID)
			}
			if b.joinable(h.Message, rec.Message, now) {
				rec.Message.Count = h.Message.Count + 1
				rec.Message.Senders = joinSenders(rec.Message.Senders, h.Message.Senders)
				rec.Message.Members = joinMembers(h.Message.ID, h.Message.Members)
				rec.Message.First = cmp.Or(h.Message.First, h.Message.ID)
				if over := driver.Overlay(h, positions); rec.Message.IsRead() && !over.Message.IsRead() {
					// Her own message, written read, joins an item she has
					// not read: the others' messages in it stay unread.
					rec.Message.ReadAt = time.Time{}
				}
				mk := markFor(u, h, nil, driver.State{DeletedAt: now}, now)
				over := driver.Overlay(h, positions)
				mk.Uncovered = driver.Coverable(over)
				marks = append(marks, mk)
				deltas = append(driver.MarkDeltas(mk), driver.AboveDeltas(mk, w)...)
			}
		}
		if pos := driver.PositionFor(st.Counters, "", key); pos.Covers(rec.Message.ID) && !rec.Message.IsRead() {
			rec.Message.ReadAt = pos.ReadAt(rec.Message.ID) // below her read position (a publisher's clock behind)
		}
		put := driver.PutDeltas(rec)
		if rec.Message.ID <= w {
			for i := range put {
				put[i].Above = 0
			}
		}
		deltas = driver.MergeCounters(append(put, deltas...))
		err := ib.store.PutMessage(ctx, rec, deltas, marks...)
		var ce *driver.CoveredError
		var moved *driver.SeenError
		switch {
		case err == nil:
			return rec, nil
		case errors.As(err, &moved):
			w = moved.Seen
			ib.seen.put(p, w)
		case errors.Is(err, driver.ErrStateChanged), errors.Is(err, driver.ErrNotFound), errors.As(err, &ce):
			// Another message of the key, a mark of its newest, a moved
			// watermark or read position: read again.
			continue
		default:
			return driver.Record{}, err
		}
	}
	return driver.Record{}, fmt.Errorf("inbox: aggregate %q of %s kept changing: %w", key, u.ID, ErrConflict)
}

// notWritten is an error of a copy's write that says that nothing was
// written, whatever it wraps (a context's error between two attempts):
// Publish reports the copy Failed, not Unknown.
type notWritten struct{ error }

// Unwrap returns the error.
func (e notWritten) Unwrap() error { return e.error }

// aggregateAttempts bounds the attempts of one copy's join: each one
// that fails lost to another message of the key, written meanwhile.
const aggregateAttempts = 64

// bounds are an aggregated message's bounds of the item it joins
// (Draft.AggregateWindow, Draft.AggregateMax; zero for none).
type bounds struct {
	window time.Duration
	max    int
}

// joinable reports whether the item whose newest message is h can take
// m in at now: it keeps at most MaxAggregateSenders distinct senders,
// and b's bounds: its first message less than b.window old, fewer than
// b.max messages.
func (b bounds) joinable(h, m driver.Message, now time.Time) bool {
	for _, s := range m.Senders {
		if !slices.Contains(h.Senders, s) && len(h.Senders) >= MaxAggregateSenders {
			return false
		}
	}
	if b.max > 0 && h.Count >= b.max || int64(h.Count) >= driver.MaxAggregateCount {
		return false
	}
	if first, err := ulid.Parse(cmp.Or(h.First, h.ID)); b.window > 0 && (err != nil || !now.Before(ulid.Time(first.Time()).Add(b.window))) {
		return false
	}
	return true
}

// joinSenders returns the senders of an item that takes in a message of
// senders own: own first, then the item's, each once, at most
// MaxAggregateSenders.
func joinSenders(own, item []string) []string {
	out := slices.Clone(own)
	for _, s := range item {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out[:min(len(out), MaxAggregateSenders)]
}

// joinMembers returns the members of a message that takes in message id
// of the item with members: id first, at most MaxAggregateMembers.
func joinMembers(id string, members []string) []string {
	out := append([]string{id}, members...)
	return out[:min(len(out), MaxAggregateMembers)]
}

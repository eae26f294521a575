package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// seenTearingStore is a Store that runs between once, just after a Query
// of part's records above a watermark (MarkSeen's read of the records a
// publisher's clock ahead put there) returns, and has the first Stats of
// part (whole) wait for it when that Query is made beside it: a write
// that lands between the two reads, the records read before it, the
// counters after.
type seenTearingStore struct {
	driver.Store
	part    driver.Partition
	between func() error

	once    sync.Once
	waited  atomic.Bool // the first Stats of part has begun
	queried atomic.Bool // the Query of part's records has begun
	err     error       // between's
	tore    atomic.Bool // between has run
}

// Query runs between after the first Query of part's records above a
// watermark.
func (s *seenTearingStore) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	mine := q.Partition == s.part && q.After != "" && !q.Unseen
	if mine {
		s.queried.Store(true)
	}
	res, err := s.Store.Query(ctx, q)
	if mine {
		s.once.Do(func() {
			s.err = s.between()
			s.tore.Store(true)
		})
	}
	return res, err
}

// Stats has the first whole Stats of part wait for between (up to 10 s)
// if the Query of part's records begins beside it (within 100 ms).
func (s *seenTearingStore) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	if q.Partition == s.part && len(q.Keys) == 0 && q.Hour.IsZero() && !s.waited.Swap(true) {
		for deadline := time.Now().Add(100 * time.Millisecond); !s.queried.Load() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		for deadline := time.Now().Add(10 * time.Second); s.queried.Load() && !s.tore.Load() && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	return s.Store.Stats(ctx, q)
}

// testSeenTornByPublish: MarkSeen counts in Unseen a message published
// above its new watermark (by a publisher whose clock runs ahead) while it
// reads, landing after MarkSeen read the records above the watermark and
// before it read the user's counters: its Above, which the publish added
// under the old watermark, is not taken out as if no record above the new
// one stood.
func testSeenTornByPublish(e *env) {
	ann := e.member("ann")
	e.publish(inbox.Draft{Title: "old"}, "ann")
	e.clock.Advance(time.Second)
	e.markSeen(ann)
	e.clock.Advance(time.Second)
	// A publisher whose clock runs two seconds ahead: its message is
	// above the watermark MarkSeen sets.
	ahead := inbox.New(e.store, inbox.WithClock(func() time.Time { return e.clock.Now().Add(2 * time.Second) }), inbox.WithSharedCache(0))
	var late string
	s := &seenTearingStore{Store: e.store, part: partitionOf(ann), between: func() error {
		r, err := ahead.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Title: "new"})
		late = r.Message.ID
		return err
	}}
	ib := inbox.New(s, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0))
	w := inbox.SeenAt(e.clock.Now())
	if changed, err := ib.MarkSeen(e.ctx, ann); err != nil || !changed {
		e.t.Fatalf("MarkSeen: %v, %v; want true, nil", changed, err)
	}
	if s.err != nil || !s.tore.Load() {
		e.t.Fatalf("the publish between MarkSeen's reads: ran %v, %v", s.tore.Load(), s.err)
	}
	e.seen[partitionOf(ann)] = w
	if st := e.stats(partitionOf(ann), e.clock.Now()); st.Seen != w {
		e.t.Fatalf("the watermark is %s, want %s", st.Seen, w)
	}
	if late <= w {
		e.t.Fatalf("the message published between the reads, %s, is not above the watermark %s", late, w)
	}
	e.wantCounts(ann, inbox.Counts{Tally: unseenOf(tallyOf(2, 0), 1)})
	e.wantCountsFromFeed(ann)
}

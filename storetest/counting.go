package storetest

import (
	"context"
	"sync/atomic"

	"github.com/stak/inbox/driver"
)

// countingStore is a Store that counts some of its calls, and passes
// every call to the Store it wraps: Query calls (all, and those of one
// thread, with the records these return), Stats calls (all, and the
// reads by key, isolated or not) and Mark calls. It is safe for
// concurrent use if the wrapped Store is.
type countingStore struct {
	driver.Store
	queries, threadQueries, threadRecords atomic.Int64
	stats, isolated, plain                atomic.Int64
	marks                                 atomic.Int64
}

// Query counts q, and, if q is of a thread, the records it returns.
func (s *countingStore) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	s.queries.Add(1)
	res, err := s.Store.Query(ctx, q)
	if q.Thread != "" {
		s.threadQueries.Add(1)
		s.threadRecords.Add(int64(len(res.Records)))
	}
	return res, err
}

// Stats counts q, and whether it reads by key, isolated or not.
func (s *countingStore) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	s.stats.Add(1)
	switch {
	case len(q.Keys) == 0:
	case q.Isolated:
		s.isolated.Add(1)
	default:
		s.plain.Add(1)
	}
	return s.Store.Stats(ctx, q)
}

// Mark counts the call.
func (s *countingStore) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	s.marks.Add(1)
	return s.Store.Mark(ctx, marks, deltas)
}

// untallied is a Store whose Queries of threads with ActivityOnly return
// no tallies (driver.QueryResult.Tallied false), as the dynamo Store does
// on a table whose index does not hold them (an earlier version's): an
// Inbox over it reads the counters it lists by key.
type untallied struct{ driver.Store }

// Query strips the tallies, as the type's doc says.
func (s untallied) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	res, err := s.Store.Query(ctx, q)
	if q.ActivityOnly {
		res.Tallied = false
		for i, c := range res.Threads {
			res.Threads[i] = driver.Counter{Partition: c.Partition, Thread: c.Thread, Latest: c.Latest}
		}
	}
	return res, err
}

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

package storetest

import (
	"context"
	"sync/atomic"

	"github.com/stak/inbox/driver"
)

// PublicReads is a Store that counts the reads (Query and Stats) of public
// partitions, the requests a shared-partition cache saves, and passes
// every call to the Store it wraps. It is for tests and benchmarks of the
// cache, and is safe for concurrent use if the wrapped Store is.
type PublicReads struct {
	driver.Store
	reads atomic.Int64
}

// Reads returns how many reads of public partitions s has passed on.
func (s *PublicReads) Reads() int64 { return s.reads.Load() }

// Query counts a read of a public partition and passes q on.
func (s *PublicReads) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	if q.Partition.IsPublic() {
		s.reads.Add(1)
	}
	return s.Store.Query(ctx, q)
}

// Stats counts a read of a public partition and passes it on.
func (s *PublicReads) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	if q.Partition.IsPublic() {
		s.reads.Add(1)
	}
	return s.Store.Stats(ctx, q)
}

// Reset sets the count back to zero.
func (s *PublicReads) Reset() { s.reads.Store(0) }

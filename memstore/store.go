package memstore

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/stak/inbox"
)

// Store is an in-memory inbox.Store. Create it with New. It is safe for
// concurrent use by multiple goroutines.
type Store struct {
	mu    sync.Mutex
	clock func() time.Time
	seq   uint64 // last sequence number given to a stored entry

	records  map[inbox.Key]*storedRecord
	ids      map[inbox.Partition][]string // each partition's record IDs, ascending
	counters map[inbox.Partition]map[string]inbox.Counter
	claims   map[claimKey]claim
	removals map[string]removal
	tenants  map[string]inbox.TenantSettings
	inboxes  map[inbox.Scope]inbox.InboxConfig
	expiries expiryHeap
}

var _ inbox.Store = (*Store)(nil)

// storedRecord is a record and the sequence number of its write, which
// tells its expiry entry from a stale one left by a deleted namesake.
type storedRecord struct {
	rec inbox.Record
	seq uint64
}

// claimKey identifies a host-system-ID claim.
type claimKey struct {
	scope inbox.Scope
	host  string
}

// claim is a host-system-ID claim: the message ID it holds.
type claim struct {
	id      string
	seq     uint64
	expires time.Time
}

// removal is the marker of an applied removal.
type removal struct {
	seq uint64
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock that decides expiry (default time.Now). Pass the
// same fake clock to inbox.WithClock to move both together; nil keeps the
// default.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.clock = now
		}
	}
}

// New returns an empty Store.
func New(opts ...Option) *Store {
	s := &Store{
		clock:    time.Now,
		records:  map[inbox.Key]*storedRecord{},
		ids:      map[inbox.Partition][]string{},
		counters: map[inbox.Partition]map[string]inbox.Counter{},
		claims:   map[claimKey]claim{},
		removals: map[string]removal{},
		tenants:  map[string]inbox.TenantSettings{},
		inboxes:  map[inbox.Scope]inbox.InboxConfig{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// begin locks s and sweeps expired entries; it fails if ctx is done. On
// success the caller must unlock s.mu.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.sweep(s.clock())
	return nil
}

// Sweep removes every record that has expired by the clock's time now,
// applying inbox.RemovalDeltas to the counters for each, and drops expired
// host-system-ID claims and removal markers. It returns how many records it
// removed. Every other method sweeps first too, so tests need not call it.
func (s *Store) Sweep() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sweep(s.clock())
}

// nextSeq returns a new sequence number.
func (s *Store) nextSeq() uint64 {
	s.seq++
	return s.seq
}

// addDeltas adds each change to its counter, creating it at zero.
func (s *Store) addDeltas(deltas []inbox.Counter) {
	for _, d := range deltas {
		cs := s.counters[d.Partition]
		if cs == nil {
			cs = map[string]inbox.Counter{}
			s.counters[d.Partition] = cs
		}
		c, ok := cs[d.Category]
		if !ok {
			c = inbox.Counter{Partition: d.Partition, Category: d.Category}
		}
		c.Published += d.Published
		c.Read += d.Read
		cs[d.Category] = c
	}
}

// expire schedules an expiry entry.
func (s *Store) expire(e expiry) { heap.Push(&s.expiries, e) }

package memstore

import (
	"container/heap"
	"time"

	"github.com/stak/inbox/driver"
)

// expiryKind says what an expiry entry removes.
type expiryKind uint8

const (
	expireRecord expiryKind = iota
	expireClaim
	expireMarker
	expireTombstone
	expireTimer  // a timed entry's timer: the entry's time has come
	expireLegacy // an earlier version's timed entry, deleted by TTL
	expireReader // a reader item, deleted by TTL
)

// expiry schedules the removal of one stored entry at its ExpiresAt. Entries
// are never updated in place: one whose seq no longer matches the stored
// entry (deleted, or replaced by a later write) is skipped when due.
type expiry struct {
	at     time.Time
	kind   expiryKind
	seq    uint64
	key    driver.Key // a record's or a tombstone's
	claim  claimKey
	marker markerKey
	timed  string // a timer's, a legacy entry's or a reader item's sort key
}

// expiryHeap is a min-heap of expiries by time, for container/heap.
type expiryHeap []expiry

// Len is the number of pending expiries (heap.Interface).
func (h expiryHeap) Len() int { return len(h) }

// Less orders expiries by time (heap.Interface).
func (h expiryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }

// Swap swaps two expiries (heap.Interface).
func (h expiryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push appends an expiry (heap.Interface).
func (h *expiryHeap) Push(x any) { *h = append(*h, x.(expiry)) }

// Pop removes the last expiry (heap.Interface).
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// sweep removes every entry that expires at or before now, as DynamoDB's
// TTL does: a record is deleted and its removal accounted (or held, with
// WithStreamLag); claims, markers and tombstones are dropped. Ledger
// entries never expire. It returns how many records it removed and costs
// one comparison when nothing is due. s.mu must be held.
func (s *Store) sweep(now time.Time) int {
	n := 0
	for len(s.expiries) > 0 && !now.Before(s.expiries[0].at) {
		e := heap.Pop(&s.expiries).(expiry)
		switch e.kind {
		case expireRecord:
			if sr, ok := s.records[e.key]; ok && sr.seq == e.seq {
				s.removed(sr.rec, s.drop(e.key, true), true)
				n++
			}
		case expireClaim:
			if c, ok := s.claims[e.claim]; ok && c.seq == e.seq {
				delete(s.claims, e.claim)
			}
		case expireMarker:
			if seq, ok := s.markers[e.marker]; ok && seq == e.seq {
				delete(s.markers, e.marker)
			}
		case expireTombstone:
			if t, ok := s.tombstones[e.key.Partition][e.key.ID]; ok && t.seq == e.seq {
				delete(s.tombstones[e.key.Partition], e.key.ID)
			}
		case expireTimer:
			if _, ok := s.timed[e.key.Partition][e.timed]; ok {
				s.timerFired(e.key, e.timed)
			}
		case expireLegacy:
			s.delTimed(e.key.Partition, e.timed)
		case expireReader:
			if r, ok := s.readers[e.key.Partition][e.timed]; ok && r.seq == e.seq {
				delete(s.readers[e.key.Partition], e.timed)
			}
		}
	}
	return n
}

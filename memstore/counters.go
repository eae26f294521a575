package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stak/inbox"
)

// Counters returns every counter of partition p, sorted by category (the
// total, category "", first).
func (s *Store) Counters(ctx context.Context, p inbox.Partition) ([]inbox.Counter, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]inbox.Counter, 0, len(s.counters[p]))
	for _, c := range s.counters[p] {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b inbox.Counter) int { return strings.Compare(a.Category, b.Category) })
	return out, nil
}

// ApplyRemoval records removal r.ID and adds r.Deltas to their counters,
// unless r.ID is already recorded and not expired: then it returns false
// and changes nothing. Removal IDs are one namespace across partitions.
func (s *Store) ApplyRemoval(ctx context.Context, r inbox.Removal) (bool, error) {
	if err := s.begin(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	if _, ok := s.removals[r.ID]; ok {
		return false, nil
	}
	seq := s.nextSeq()
	s.removals[r.ID] = removal{seq: seq}
	s.expire(expiry{at: r.ExpiresAt, kind: expireRemoval, seq: seq, removal: r.ID})
	s.addDeltas(r.Deltas)
	return true, nil
}

// ResetCounters replaces every counter of p with counters. A counter of
// another partition, or two for one category, is ErrInvalidInput and
// changes nothing.
func (s *Store) ResetCounters(ctx context.Context, p inbox.Partition, counters []inbox.Counter) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	cs := make(map[string]inbox.Counter, len(counters))
	for _, c := range counters {
		if c.Partition != p {
			return fmt.Errorf("%w: counter of %s reset in %s", inbox.ErrInvalidInput, c.Partition.PK(), p.PK())
		}
		if _, dup := cs[c.Category]; dup {
			return fmt.Errorf("%w: two counters for category %q", inbox.ErrInvalidInput, c.Category)
		}
		cs[c.Category] = c
	}
	if len(cs) == 0 {
		delete(s.counters, p)
		return nil
	}
	s.counters[p] = cs
	return nil
}

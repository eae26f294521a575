package storetest

import (
	"context"
	"maps"
	"sort"

	"github.com/google/go-cmp/cmp"
	"github.com/stak/inbox"
)

// tally is what one counter should hold.
type tally struct {
	Published int64
	Read      int64
}

// recount tallies partition p's counters from recs, its records, by the
// rules of the design, independently of package inbox's accounting: each
// message or broadcast adds published 1, each record with ReadAt in a user
// partition (a read message or a receipt) adds read 1, both to the total
// ("") and to the record's category. Only non-zero tallies are kept.
func recount(p inbox.Partition, recs []inbox.Record) map[string]tally {
	out := map[string]tally{}
	for _, r := range recs {
		var published, read int64
		if !r.Receipt {
			published = 1
		}
		if !r.Message.ReadAt.IsZero() && !p.IsPublic() {
			read = 1
		}
		cats := []string{""}
		if r.Message.Category != "" {
			cats = append(cats, r.Message.Category)
		}
		for _, c := range cats {
			t := out[c]
			t.Published += published
			t.Read += read
			out[c] = t
		}
	}
	for c, t := range out {
		if t == (tally{}) {
			delete(out, c)
		}
	}
	return out
}

// tallies returns counters as tallies by category, leaving out zero ones
// (a counter at zero and a missing counter say the same).
func tallies(cs []inbox.Counter) map[string]tally {
	out := map[string]tally{}
	for _, c := range cs {
		if t := (tally{c.Published, c.Read}); t != (tally{}) {
			out[c.Category] = t
		}
	}
	return out
}

// checkInvariant checks that every counter of every partition the test
// used equals a recount of the partition's records, expired ones included
// (their removal has not been accounted while they exist).
func (e *env) checkInvariant() {
	e.t.Helper()
	parts := make([]inbox.Partition, 0, len(e.used))
	for p := range e.used {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].PK() < parts[j].PK() })
	for _, p := range parts {
		want := recount(p, e.records(p))
		got := tallies(e.counters(p))
		if maps.Equal(want, got) {
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			e.t.Errorf("invariant: counters of %s differ from a recount of its records (-recount +counters):\n%s", p.PK(), diff)
		}
	}
}

// checkInvariantAtEnd runs checkInvariant when the test ends, before any
// cleanup the store registered.
func (e *env) checkInvariantAtEnd() {
	e.t.Cleanup(func() {
		e.ctx = context.Background() // the test's context is done by now
		e.checkInvariant()
	})
}

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

// recount tallies partition p's counters, by sort key, from recs, its
// records or ledger entries, by the rules of the design, independently of
// package inbox's accounting: each message or broadcast adds published 1,
// each record with ReadAt in a user partition (a read message or a
// receipt) adds read 1, both to the total (c#*) and to the record's
// category (c#<category>); a receipt of a group's message adds its read
// to the group's counters too (c#*#<group>, c#<category>#<group>). Only
// non-zero tallies are kept.
func recount(p inbox.Partition, recs []inbox.Record) map[string]tally {
	out := map[string]tally{}
	for _, r := range recs {
		var published, read int64
		if !r.Receipt {
			published = 1
		}
		if !r.Message.ReadAt.IsZero() && !p.IsShared() {
			read = 1
		}
		cats := []string{""}
		if r.Message.Category != "" {
			cats = append(cats, r.Message.Category)
		}
		for _, c := range cats {
			add := func(sk string, published, read int64) {
				t := out[sk]
				t.Published += published
				t.Read += read
				out[sk] = t
			}
			add(inbox.CounterSK(c, ""), published, read)
			if g := r.Message.Audience.Group; r.Receipt && g != "" {
				add(inbox.CounterSK(c, g), 0, read)
			}
		}
	}
	for c, t := range out {
		if t == (tally{}) {
			delete(out, c)
		}
	}
	return out
}

// tallies returns counters as tallies by sort key, leaving out zero ones
// (a counter at zero and a missing counter say the same).
func tallies(cs []inbox.Counter) map[string]tally {
	out := map[string]tally{}
	for _, c := range cs {
		if t := (tally{c.Published, c.Read}); t != (tally{}) {
			out[inbox.CounterSK(c.Category, c.Group)] = t
		}
	}
	return out
}

// checkInvariant checks, for every partition the test used, the invariant
// the design rests on:
//
//   - the counters equal a tally of the partition's ledger entries;
//   - every record has a ledger entry that records it exactly;
//   - an entry without a record is one whose removal the store holds (a
//     Harness's Pending): with none pending, the counters equal a recount
//     of the records, expired ones included (their removal has not been
//     accounted while they exist).
func (e *env) checkInvariant() {
	e.t.Helper()
	parts := make([]inbox.Partition, 0, len(e.used))
	for p := range e.used {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].PK() < parts[j].PK() })
	pending := 0
	if h, ok := e.harness(); ok {
		pending = h.Pending()
	}
	orphans := 0
	for _, p := range parts {
		entries := e.ledger(p)
		if want, got := recount(p, entries), tallies(e.counters(p)); !maps.Equal(want, got) {
			e.t.Errorf("invariant: counters of %s differ from a tally of its ledger (-ledger +counters):\n%s", p.PK(), cmp.Diff(want, got))
		}
		byEntry := map[string]inbox.Record{}
		for _, en := range entries {
			if _, dup := byEntry[en.Entry]; dup || !en.Ledgered() {
				e.t.Errorf("invariant: %s has ledger entry %q twice, or without its name", p.PK(), en.Entry)
			}
			byEntry[en.Entry] = en
		}
		for _, r := range e.records(p) {
			en, ok := byEntry[r.Entry]
			delete(byEntry, r.Entry)
			if !ok || !sameEntry(en, r) {
				e.t.Errorf("invariant: record %s/%s (receipt %v, category %q, read %v, expires %v, entry %q) has no ledger entry that records it (found %v: %+v)",
					p.PK(), r.Message.ID, r.Receipt, r.Message.Category, r.Message.IsRead(), r.Message.ExpiresAt, r.Entry, ok, en)
			}
		}
		orphans += len(byEntry)
	}
	if orphans > pending {
		e.t.Errorf("invariant: %d ledger entries have no record, but only %d removals are pending", orphans, pending)
	}
}

// sameEntry reports whether ledger entry en records rec: the same entry,
// kind, ID, category, group (of a receipt), read state and expiry.
func sameEntry(en, rec inbox.Record) bool {
	group := func(r inbox.Record) string {
		if r.Receipt {
			return r.Message.Audience.Group
		}
		return ""
	}
	return rec.Ledgered() && en.Entry == rec.Entry && en.Message.ID == rec.Message.ID && en.Receipt == rec.Receipt && en.Message.Category == rec.Message.Category && group(en) == group(rec) &&
		en.Message.IsRead() == rec.Message.IsRead() && en.Message.ExpiresAt.Equal(rec.Message.ExpiresAt)
}

// checkInvariantAtEnd runs checkInvariant when the test ends, before any
// cleanup the store registered.
func (e *env) checkInvariantAtEnd() {
	e.t.Cleanup(func() {
		e.ctx = context.Background() // the test's context is done by now
		e.checkInvariant()
	})
}

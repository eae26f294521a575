package storetest

import (
	"context"
	"maps"
	"sort"

	"github.com/google/go-cmp/cmp"
	"github.com/stak/inbox/driver"
)

// tally is what one counter should hold.
type tally struct {
	Published    int64
	Read         int64
	Archived     int64
	ArchivedRead int64
	Hidden       int64
}

// recount tallies partition p's counters, by sort key, from recs, its
// records or ledger entries, by the rules of the design, independently of
// package inbox's accounting: each message or broadcast adds published 1;
// in a user partition each record with ReadAt (a read message or receipt)
// adds read 1, with ArchivedAt archived 1, with both archivedread 1, and
// a receipt with DeletedAt hidden 1; all to the total (c#*) and to the
// record's category (c#<category>). A receipt of a group's message adds
// its marks to the group's counters too (c#*#<group>,
// c#<category>#<group>). A record of a thread adds the same to the
// thread's counter: its own (b#<thread>) for a message or broadcast, the
// receipts of its group's (b#<thread>#<group>, b#<thread>#$public for
// everyone's) for a receipt. Only non-zero tallies are kept.
func recount(p driver.Partition, recs []driver.Record) map[string]tally {
	out := map[string]tally{}
	for _, r := range recs {
		var t tally
		if !r.Receipt {
			t.Published = 1
		}
		if !p.IsShared() {
			// A deleted receipt is hidden, whatever other marks another
			// program gave it.
			read, archived := !r.Message.ReadAt.IsZero(), !r.Message.ArchivedAt.IsZero()
			if t.Hidden = b2i(r.Receipt && !r.DeletedAt.IsZero()); t.Hidden == 1 {
				read, archived = false, false
			}
			t.Read, t.Archived, t.ArchivedRead = b2i(read), b2i(archived), b2i(read && archived)
		}
		cats := []string{""}
		if r.Message.Category != "" {
			cats = append(cats, r.Message.Category)
		}
		for _, c := range cats {
			add := func(sk string, t tally) {
				o := out[sk]
				o.Published += t.Published
				o.Read += t.Read
				o.Archived += t.Archived
				o.ArchivedRead += t.ArchivedRead
				o.Hidden += t.Hidden
				out[sk] = o
			}
			add(driver.CounterSK(c, ""), t)
			if g := r.Message.Audience.Group; r.Receipt && g != "" {
				add(driver.CounterSK(c, g), t)
			}
			if th := r.Message.Thread; th != "" && c == "" {
				switch g := r.Message.Audience.Group; {
				case !r.Receipt:
					add(driver.ThreadCounterSK(th, ""), t)
				case g != "":
					add(driver.ThreadCounterSK(th, g), t)
				default:
					add(driver.ThreadCounterSK(th, driver.PublicGroup), t)
				}
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

// b2i returns 1 for true, 0 for false.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// tallies returns counters as tallies by sort key, leaving out zero ones
// (a counter at zero and a missing counter say the same).
func tallies(cs []driver.Counter) map[string]tally {
	out := map[string]tally{}
	for _, c := range cs {
		if t := (tally{c.Published, c.Read, c.Archived, c.ArchivedRead, c.Hidden}); t != (tally{}) {
			out[c.SK()] = t
		}
	}
	return out
}

// checkInvariant checks, for every partition the test used, the invariant
// the design rests on:
//
//   - the counters equal a tally of the partition's ledger entries;
//   - every record has a ledger entry that records it exactly, and notes
//     the marks that entry counts (driver.Record.Counted);
//   - an entry without a record is one whose removal the store holds (a
//     Harness's Pending): with none pending, the counters equal a recount
//     of the records, expired ones included (their removal has not been
//     accounted while they exist).
func (e *env) checkInvariant() {
	e.t.Helper()
	parts := make([]driver.Partition, 0, len(e.used))
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
		byEntry := map[string]driver.Record{}
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
			} else if r.Counted != driver.CountedOf(r) {
				e.t.Errorf("invariant: record %s/%s notes counted marks %04b, but its entry counts %04b", p.PK(), r.Message.ID, r.Counted, driver.CountedOf(r))
			}
		}
		orphans += len(byEntry)
	}
	if orphans > pending {
		e.t.Errorf("invariant: %d ledger entries have no record, but only %d removals are pending", orphans, pending)
	}
}

// sameEntry reports whether ledger entry en records rec: the same entry,
// kind, ID, category, group (of a receipt), marks and expiry.
func sameEntry(en, rec driver.Record) bool {
	group := func(r driver.Record) string {
		if r.Receipt {
			return r.Message.Audience.Group
		}
		return ""
	}
	return rec.Ledgered() && en.Entry == rec.Entry && en.Message.ID == rec.Message.ID && en.Receipt == rec.Receipt && en.Message.Category == rec.Message.Category && en.Message.Thread == rec.Message.Thread && group(en) == group(rec) &&
		en.Message.IsRead() == rec.Message.IsRead() && en.Message.IsArchived() == rec.Message.IsArchived() && en.DeletedAt.IsZero() == rec.DeletedAt.IsZero() &&
		en.Message.ExpiresAt.Equal(rec.Message.ExpiresAt)
}

// checkInvariantAtEnd runs checkInvariant when the test ends, before any
// cleanup the store registered.
func (e *env) checkInvariantAtEnd() {
	e.t.Cleanup(func() {
		e.ctx = context.Background() // the test's context is done by now
		e.checkInvariant()
	})
}

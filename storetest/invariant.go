package storetest

import (
	"context"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/oklog/ulid/v2"

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
//     accounted while they exist);
//   - the reader items of every shared partition are those its live
//     thread's broadcasts' receipts say (see checkReaders).
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
	recs, sts := map[driver.Partition][]driver.Record{}, map[driver.Partition]driver.Stats{}
	for _, p := range parts {
		st := e.stats(p, farFuture) // the whole ledger, every timed entry
		sts[p] = st
		entries := st.Expired
		if want, got := recount(p, entries), tallies(st.Counters); !maps.Equal(want, got) {
			e.t.Errorf("invariant: counters of %s differ from a tally of its ledger (-ledger +counters):\n%s", p.PK(), cmp.Diff(want, got))
		}
		byEntry := map[string]driver.Record{}
		for _, en := range entries {
			if _, dup := byEntry[en.Entry]; dup || !en.Ledgered() {
				e.t.Errorf("invariant: %s has ledger entry %q twice, or without its name", p.PK(), en.Entry)
			}
			byEntry[en.Entry] = en
		}
		records := e.records(p)
		recs[p] = records
		for _, r := range records {
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
		e.checkTimed(p, st, records)
		e.checkThreadEntries(p, st)
		e.checkReceiptHints(p, st, records)
		e.checkAbove(p, st)
		e.checkMutedThreads(p, st)
		e.checkCoveredThreads(p, st)
		if p.IsShared() {
			e.checkBuckets(p, st)
		}
	}
	if orphans > pending {
		e.t.Errorf("invariant: %d ledger entries have no record, but only %d removals are pending", orphans, pending)
	}
	e.checkReaders(parts, recs, sts)
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

// timedTally returns what the timed entries es tally, by sort key, as the
// messages they hide, independently of package driver: published 1, and
// read, archived and archivedread by the entry's marks, on the total and
// the entry's category, and again on its group's for a receipt of a
// group's message.
func timedTally(es []driver.Record) map[string]tally {
	out := map[string]tally{}
	for _, r := range es {
		read, archived := !r.Message.ReadAt.IsZero(), !r.Message.ArchivedAt.IsZero()
		t := tally{Published: 1, Read: b2i(read), Archived: b2i(archived), ArchivedRead: b2i(read && archived)}
		cats := []string{""}
		if r.Message.Category != "" {
			cats = append(cats, r.Message.Category)
		}
		for _, c := range cats {
			sks := []string{driver.CounterSK(c, "")}
			if g := r.Message.Audience.Group; r.Receipt && g != "" {
				sks = append(sks, driver.CounterSK(c, g))
			}
			for _, sk := range sks {
				o := out[sk]
				o.Published += t.Published
				o.Read += t.Read
				o.Archived += t.Archived
				o.ArchivedRead += t.ArchivedRead
				out[sk] = o
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

// checkTimed checks the timed entries of p (snooze and pending entries):
// the counters' Snoozed and Pending tallies equal a tally of the entries
// stored; each entry is of a ledger entry of entries, and the record of
// that ledger entry, if it stands, notes the entry (Record.Timed) and has
// its marks (an entry without a record is of a record whose removal is
// pending, which its ledger entry tells).
func (e *env) checkTimed(p driver.Partition, st driver.Stats, recs []driver.Record) {
	e.t.Helper()
	entries, all := st.Expired, st.Due
	var snoozed, pending []driver.Record
	for _, t := range all {
		if t.Message.DeliverAt.IsZero() {
			snoozed = append(snoozed, t)
		} else {
			pending = append(pending, t)
		}
	}
	gotS, gotP := map[string]tally{}, map[string]tally{}
	for _, c := range st.Counters {
		if t := (tally{c.Snoozed.Published, c.Snoozed.Read, c.Snoozed.Archived, c.Snoozed.ArchivedRead, c.Snoozed.Hidden}); t != (tally{}) {
			gotS[c.SK()] = t
		}
		if t := (tally{c.Pending.Published, c.Pending.Read, c.Pending.Archived, c.Pending.ArchivedRead, c.Pending.Hidden}); t != (tally{}) {
			gotP[c.SK()] = t
		}
	}
	if want := timedTally(snoozed); !maps.Equal(want, gotS) {
		e.t.Errorf("invariant: snoozed tallies of %s differ from a tally of its snooze entries (-entries +counters):\n%s", p.PK(), cmp.Diff(want, gotS))
	}
	if want := timedTally(pending); !maps.Equal(want, gotP) {
		e.t.Errorf("invariant: pending tallies of %s differ from a tally of its pending entries (-entries +counters):\n%s", p.PK(), cmp.Diff(want, gotP))
	}
	ledgered := map[string]bool{}
	for _, en := range entries {
		ledgered[en.Entry] = true
	}
	records := map[string]driver.Record{}
	for _, r := range recs {
		records[r.Entry] = r
	}
	noted := map[string]bool{}
	for _, t := range all {
		sk := driver.TimedKeyOf(t)
		noted[sk] = true
		r, ok := records[t.Entry]
		switch {
		case !ledgered[t.Entry]:
			e.t.Errorf("invariant: timed entry %s of %s belongs to no ledger entry", sk, p.PK())
		case !ok:
		case r.Timed != sk:
			e.t.Errorf("invariant: record %s/%s notes timed entry %q, not the one stored, %s", p.PK(), r.Message.ID, r.Timed, sk)
		case !r.State().Same(t.State()) && !r.Edited():
			e.t.Errorf("invariant: timed entry %s of %s has other marks than its record: %+v, record %+v", sk, p.PK(), t.State(), r.State())
		}
	}
	for _, r := range records {
		if r.Timed != "" && !noted[r.Timed] {
			e.t.Errorf("invariant: record %s/%s notes timed entry %s, which is not stored", p.PK(), r.Message.ID, r.Timed)
		}
	}
}

// checkReceiptHints checks the receipts' hints (driver.Counter.Latest and
// Top) of user partition p's counters of its receipts of shared threads,
// in st (with its whole ledger), against recs, its records: each receipt
// of a thread's message has its thread's counter (a missing one says she
// has none), and a counter with a hint has no receipt above its Latest,
// and as Top the marks of its receipt of the message Latest, or none if
// there is no such receipt (one whose removal is pending aside: its
// message expired, or is gone, and shows nowhere; one another program
// marked aside, until the stream handler accounts the change).
func (e *env) checkReceiptHints(p driver.Partition, st driver.Stats, recs []driver.Record) {
	if p.IsShared() {
		return
	}
	hints := map[string]driver.Counter{}
	for _, c := range st.Counters {
		if c.Thread != "" && c.Group != "" {
			hints[c.SK()] = c
		}
	}
	counterOf := func(r driver.Record) string {
		g := r.Message.Audience.Group
		if g == "" {
			g = driver.PublicGroup
		}
		return driver.ThreadCounterSK(r.Message.Thread, g)
	}
	pending := map[string]bool{}
	for _, en := range st.Expired {
		if !en.Receipt || en.Message.Thread == "" {
			continue
		}
		pending[en.Message.ID] = true
		c, ok := hints[counterOf(en)]
		switch {
		case !ok:
			e.t.Errorf("invariant: %s has receipt %s of thread %s, and no counter of the thread's receipts", p.PK(), en.Message.ID, en.Message.Thread)
		case c.Latest != "" && en.Message.ID > c.Latest:
			e.t.Errorf("invariant: %s has receipt %s of thread %s, above its counter's Latest %s", p.PK(), en.Message.ID, en.Message.Thread, c.Latest)
		}
	}
	byKey := map[string]driver.Record{}
	for _, r := range recs {
		if r.Receipt && r.Message.Thread != "" {
			byKey[counterOf(r)+"/"+r.Message.ID] = r
			delete(pending, r.Message.ID)
		}
	}
	for sk, c := range hints {
		if c.Latest == "" {
			continue
		}
		r, ok := byKey[sk+"/"+c.Latest]
		switch {
		case ok && !r.Edited() && (!c.Top.Equal(r.State()) || c.TopEntry != r.Entry):
			e.t.Errorf("invariant: counter %s of %s has Top %+v of entry %s, but its receipt of %s has marks %+v, entry %s", sk, p.PK(), c.Top, c.TopEntry, c.Latest, r.State(), r.Entry)
		case !ok && !pending[c.Latest] && !c.Top.IsZero():
			e.t.Errorf("invariant: counter %s of %s has Top %+v, but no receipt of %s", sk, p.PK(), c.Top, c.Latest)
		}
	}
}

// checkAbove checks a user partition's Above tallies (driver.Counter.Above)
// against a recount, independently of package driver, of its ledger
// entries above its Fence: a direct message adds 1 if it is neither read
// nor archived, a receipt -1 if it has any mark (read, archived,
// deleted); each less, if its timed entry is stored, what that entry's
// message would add (1 if it is neither read nor archived). Each counts
// in its category's Above too, and a receipt of a group's message in the
// group's (and the group's category's).
func (e *env) checkAbove(p driver.Partition, st driver.Stats) {
	e.t.Helper()
	if p.IsShared() {
		return
	}
	entries := st.Expired
	timed := map[string]driver.Record{}
	for _, t := range st.Due {
		timed[t.Entry] = t
	}
	want := map[string]int64{}
	for _, en := range entries {
		if en.Message.ID <= st.Fence {
			continue
		}
		m := en.Message
		var n int64
		switch {
		case !en.Receipt:
			n = b2i(m.ReadAt.IsZero() && m.ArchivedAt.IsZero())
		default:
			n = -b2i(!m.ReadAt.IsZero() || !m.ArchivedAt.IsZero() || !en.DeletedAt.IsZero())
		}
		if t, ok := timed[en.Entry]; ok {
			n -= b2i(t.Message.ReadAt.IsZero() && t.Message.ArchivedAt.IsZero())
		}
		cats := []string{"*"}
		if m.Category != "" {
			cats = append(cats, m.Category)
		}
		for _, c := range cats {
			want[c] += n
			if g := m.Audience.Group; en.Receipt && g != "" {
				want[c+"/"+g] += n
			}
		}
	}
	got := map[string]int64{}
	for _, c := range st.Counters {
		if c.Thread == "" && c.Above != 0 {
			k := c.Category
			if k == "" {
				k = "*"
			}
			if c.Group != "" {
				k += "/" + c.Group
			}
			got[k] = c.Above
		}
	}
	for g, n := range want {
		if n == 0 {
			delete(want, g)
		}
	}
	if !maps.Equal(want, got) {
		e.t.Errorf("invariant: the above tallies of %s (above %q) differ from a recount of its ledger (-ledger +counters):\n%s", p.PK(), st.Fence, cmp.Diff(want, got))
	}
}

// checkMutedThreads checks the counters of a user partition's muted
// threads (driver.Counter.Muted) against a recount, independently of
// package driver, of its ledger entries: one Unread and Above per thread
// its own preferences mute, and per category of its messages, where a
// direct message of the thread adds 1 to Unread if it is neither read nor
// archived, and as much to Above if its ID is above the Fence (a thread's
// messages have no timed entry); no counter of a thread not muted.
func (e *env) checkMutedThreads(p driver.Partition, st driver.Stats) {
	e.t.Helper()
	if p.IsShared() {
		return
	}
	type tally struct{ unread, above int64 }
	want := map[string]tally{}
	prefs := st.Preferences
	for _, en := range st.Expired {
		m := en.Message
		if en.Receipt || m.Thread == "" || !prefs.Own || !slices.Contains(prefs.MutedThreads, m.Thread) {
			continue
		}
		n := b2i(m.ReadAt.IsZero() && m.ArchivedAt.IsZero())
		for _, c := range []string{"*", m.Category} {
			if c == "" {
				continue
			}
			t := want[m.Thread+"/"+c]
			t.unread += n
			if m.ID > st.Fence {
				t.above += n
			}
			want[m.Thread+"/"+c] = t
		}
	}
	got := map[string]tally{}
	for _, c := range st.Counters {
		if c.Muted && (c.Unread != 0 || c.Above != 0) {
			k := c.Category
			if k == "" {
				k = "*"
			}
			got[c.Thread+"/"+k] = tally{c.Unread, c.Above}
		}
	}
	for k, t := range want {
		if t == (tally{}) {
			delete(want, k)
		}
	}
	if !maps.Equal(want, got) {
		e.t.Errorf("invariant: the muted threads' counters of %s (muting %v, above %q) differ from a recount of its ledger (-ledger +counters):\n%s",
			p.PK(), prefs.MutedThreads, st.Fence, cmp.Diff(want, got, cmp.AllowUnexported(tally{})))
	}
}

// checkCoveredThreads checks the counters of what a user partition's
// read positions cover (driver.Counter.Covered) against a recount,
// independently of package driver, of its ledger entries: per thread
// with a position (on its counter of all categories), and per category
// of its messages, a direct message of the thread below the position's
// bound adds 1 to Unread if it is neither read nor archived, and as much
// to Above if its ID is above the Fence; no covered counter of a thread
// without a position, and no position that is not a valid one.
func (e *env) checkCoveredThreads(p driver.Partition, st driver.Stats) {
	e.t.Helper()
	type tally struct{ unread, above int64 }
	bounds := map[string]string{}
	got := map[string]tally{}
	for _, c := range st.Counters {
		if !c.Covered {
			continue
		}
		if p.IsShared() {
			e.t.Errorf("invariant: shared partition %s holds covered counter %s", p.PK(), c.SK())
		}
		// A group's thread's, apart from a direct one's of the same name.
		thread := c.Thread
		if c.Group != "" {
			thread = c.Group + ":" + c.Thread
		}
		if c.Category == "" && !c.Position.IsZero() {
			if steps, ok := c.Position.Steps(); !ok || len(steps) > driver.MaxPositionSteps {
				e.t.Errorf("invariant: the read position of thread %q in %s is not one: %+v", thread, p.PK(), c.Position)
			}
			bounds[thread] = c.Position.Bound
		}
		k := c.Category
		if k == "" {
			k = "*"
		}
		if c.Unread != 0 || c.Above != 0 {
			got[thread+"/"+k] = tally{c.Unread, c.Above}
		}
	}
	for _, c := range st.Counters {
		thread := c.Thread
		if c.Group != "" {
			thread = c.Group + ":" + c.Thread
		}
		if c.Covered && bounds[thread] == "" {
			e.t.Errorf("invariant: covered counter %s of %s without a read position of its thread", c.SK(), p.PK())
		}
	}
	want := map[string]tally{}
	for _, en := range st.Expired {
		m := en.Message
		thread := m.Thread
		var n int64
		switch {
		case en.Receipt && m.Audience.Group != "" && m.Audience.Group != driver.PublicGroup:
			// A group's thread's: her receipts below the bound, each -1
			// where it reads, archives or deletes its message.
			thread = m.Audience.Group + ":" + m.Thread
			n = -b2i(!m.ReadAt.IsZero() || !m.ArchivedAt.IsZero() || !en.DeletedAt.IsZero())
		case en.Receipt:
			continue
		default:
			n = b2i(m.ReadAt.IsZero() && m.ArchivedAt.IsZero())
		}
		b := bounds[thread]
		if m.Thread == "" || b == "" || m.ID >= b {
			continue
		}
		for _, c := range []string{"*", m.Category} {
			if c == "" || n == 0 {
				continue
			}
			t := want[thread+"/"+c]
			t.unread += n
			if m.ID > st.Fence {
				t.above += n
			}
			want[thread+"/"+c] = t
		}
	}
	if !maps.Equal(want, got) {
		e.t.Errorf("invariant: the covered threads' counters of %s (bounds %v, above %q) differ from a recount of its ledger (-ledger +counters):\n%s",
			p.PK(), bounds, st.Fence, cmp.Diff(want, got, cmp.AllowUnexported(tally{})))
	}
}

// checkBuckets checks a shared partition's time buckets against a count of
// its ledger entries by the second of their IDs: each day's hours, and
// each hour's seconds, with the hour's versions in both equal, and so
// each category's (Categories nil when none counts a record) and each
// thread's (as driver.Buckets counts them: its own test checks it).
func (e *env) checkBuckets(p driver.Partition, st driver.Stats) {
	e.t.Helper()
	entries := st.Expired
	threadDays, threadHours := map[time.Time]map[driver.Slice][24]int64{}, map[time.Time]map[driver.Slice]map[int]int64{}
	if ds, hs, err := driver.Buckets(entries); err != nil {
		e.t.Errorf("invariant: the buckets of the ledger of %s: %v", p.PK(), err)
	} else {
		for _, d := range ds {
			threadDays[d.Day] = d.Threads
		}
		for _, h := range hs {
			threadHours[h.Hour] = h.Threads
		}
	}
	want := map[time.Time]map[int]int64{}               // by hour, by second
	wantCat := map[time.Time]map[string]map[int]int64{} // by hour, by category, by second
	wantDay := map[time.Time]map[string][24]int64{}     // by day, by category
	for _, en := range entries {
		u, err := ulid.ParseStrict(en.Message.ID)
		if err != nil {
			e.t.Errorf("invariant: ledger entry %s of %s: %v", en.Entry, p.PK(), err)
			continue
		}
		t := time.UnixMilli(int64(u.Time())).UTC().Truncate(time.Second)
		h := t.Truncate(time.Hour)
		if want[h] == nil {
			want[h] = map[int]int64{}
		}
		want[h][int(t.Sub(h)/time.Second)]++
		if c := en.Message.Category; c != "" {
			if wantCat[h] == nil {
				wantCat[h] = map[string]map[int]int64{}
			}
			if wantCat[h][c] == nil {
				wantCat[h][c] = map[int]int64{}
			}
			wantCat[h][c][int(t.Sub(h)/time.Second)]++
			d := t.Truncate(24 * time.Hour)
			if wantDay[d] == nil {
				wantDay[d] = map[string][24]int64{}
			}
			hours := wantDay[d][c]
			hours[t.Hour()]++
			wantDay[d][c] = hours
		}
	}
	days := map[time.Time]driver.DayBucket{}
	for _, d := range st.Days {
		days[d.Day] = d
	}
	for _, d := range st.Days {
		if d.Categories != nil && len(d.Categories) == 0 {
			e.t.Errorf("invariant: the day bucket of %s at %v has empty Categories, not nil", p.PK(), d.Day)
		}
		got := map[string][24]int64{}
		for c, hours := range d.Categories {
			if hours == ([24]int64{}) {
				e.t.Errorf("invariant: the day bucket of %s at %v keeps category %q, which counts no record", p.PK(), d.Day, c)
				continue
			}
			got[c] = hours
		}
		if !maps.Equal(wantDay[d.Day], got) {
			e.t.Errorf("invariant: the day bucket of %s at %v counts by category %v, its ledger %v", p.PK(), d.Day, got, wantDay[d.Day])
		}
		if d.Threads != nil && len(d.Threads) == 0 {
			e.t.Errorf("invariant: the day bucket of %s at %v has empty Threads, not nil", p.PK(), d.Day)
		}
		if !maps.Equal(threadDays[d.Day], d.Threads) || len(threadDays[d.Day]) != len(d.Threads) {
			e.t.Errorf("invariant: the day bucket of %s at %v counts by thread %v, its ledger %v", p.PK(), d.Day, d.Threads, threadDays[d.Day])
		}
		for i, n := range d.Hours {
			h := d.Day.Add(time.Duration(i) * time.Hour)
			var w int64
			for _, c := range want[h] {
				w += c
			}
			if n != w {
				e.t.Errorf("invariant: the day bucket of %s at %v counts %d records in hour %d, its ledger %d", p.PK(), d.Day, n, i, w)
			}
			if n == 0 {
				continue
			}
			hb, err := e.store.Stats(e.ctx, driver.StatsQuery{Partition: p, Hour: h})
			if err != nil || hb.Hour == nil {
				e.t.Errorf("invariant: the hour bucket of %s at %v: %+v, %v", p.PK(), h, hb.Hour, err)
				continue
			}
			got := map[int]int64{}
			for sec, c := range hb.Hour.Seconds {
				if c != 0 {
					got[sec] = c
				}
			}
			if !maps.Equal(want[h], got) || hb.Hour.Version != d.Versions[i] {
				e.t.Errorf("invariant: the hour bucket of %s at %v (version %d, its day's %d) counts %v, its ledger %v", p.PK(), h, hb.Hour.Version, d.Versions[i], got, want[h])
			}
			if hb.Hour.Categories != nil && len(hb.Hour.Categories) == 0 {
				e.t.Errorf("invariant: the hour bucket of %s at %v has empty Categories, not nil", p.PK(), h)
			}
			if !maps.EqualFunc(wantCat[h], hb.Hour.Categories, maps.Equal) || len(wantCat[h]) != len(hb.Hour.Categories) {
				e.t.Errorf("invariant: the hour bucket of %s at %v counts by category %v, its ledger %v", p.PK(), h, hb.Hour.Categories, wantCat[h])
			}
			if !maps.EqualFunc(threadHours[h], hb.Hour.Threads, maps.Equal) || len(threadHours[h]) != len(hb.Hour.Threads) {
				e.t.Errorf("invariant: the hour bucket of %s at %v counts by thread %v, its ledger %v", p.PK(), h, hb.Hour.Threads, threadHours[h])
			}
		}
	}
	for h := range want {
		if _, ok := days[h.Truncate(24*time.Hour)]; !ok {
			e.t.Errorf("invariant: %s has no day bucket for its records of %v", p.PK(), h)
		}
	}
}

// checkThreadEntries checks that a Query of p's threads lists each thread
// whose own counter has a Latest, once and in order of activity, and,
// where it returns their tallies (Tallied, with ActivityOnly too), the
// tallies of st's counters, each with a Rev: the dynamo Store reads them
// with ActivityOnly from a copy the unread index projects.
func (e *env) checkThreadEntries(p driver.Partition, st driver.Stats) {
	e.t.Helper()
	want := map[string]driver.Counter{}
	for _, c := range st.Counters {
		if c.Thread != "" && c.Group == "" && c.Latest != "" {
			want[c.Thread] = c
		}
	}
	if len(want) == 0 {
		return // most partitions of most tests: spare DynamoDB Local the queries
	}
	for _, activityOnly := range []bool{false, true} {
		q := driver.Query{Partition: p, Threads: true, ActivityOnly: activityOnly, Limit: 100}
		listed, seen, above := 0, map[string]bool{}, ""
		for {
			res, err := e.store.Query(e.ctx, q)
			if err != nil {
				e.t.Fatalf("invariant: Query of the threads of %s: %v", p.PK(), err)
			}
			for _, c := range res.Threads {
				listed++
				key := driver.ActivityKey(c.Latest, c.Thread)
				if seen[c.Thread] || above != "" && key >= above {
					e.t.Errorf("invariant: a Query (ActivityOnly %v) of the threads of %s lists thread %s twice, or out of the order of activity", activityOnly, p.PK(), c.Thread)
				}
				seen[c.Thread], above = true, key
				w, ok := want[c.Thread]
				got := c
				got.Rev = w.Rev
				if !res.Tallied {
					w = driver.Counter{Partition: w.Partition, Thread: w.Thread, Latest: w.Latest}
				} else if c.Rev == 0 {
					e.t.Errorf("invariant: thread %s of %s listed with its tallies, without a Rev", c.Thread, p.PK())
				}
				if diff := cmp.Diff(w, got); !ok || diff != "" {
					e.t.Errorf("invariant: thread %s of %s as a Query (ActivityOnly %v) lists it differs from its counter (-counter +listed):\n%s", c.Thread, p.PK(), activityOnly, diff)
				}
			}
			if q.Before = res.Next; q.Before == "" {
				break
			}
		}
		if listed != len(want) {
			e.t.Errorf("invariant: a Query (ActivityOnly %v) lists %d threads of %s, its counters %d", activityOnly, listed, p.PK(), len(want))
		}
	}
}

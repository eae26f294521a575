package inbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/stak/inbox/driver"
)

// recountPageSize is how many records Recount reads per round trip.
const recountPageSize = 500

// recountSkew is how far the clocks that time a recount (the host's) and
// a stream record (DynamoDB's) may disagree: a recount's time is taken
// that much after its read, so that a removal the stream times before
// the read is not mistaken for one after it. A later recount time only
// makes the stream handler recount more often (see recountIfRemovedNear).
const recountSkew = 5 * time.Second

// recountPasses bounds the passes Recount makes over one partition: each
// pass either finds nothing to fix, fixes the ledger (and reads again), or
// loses a race with a concurrent write to the counters (and reads again).
const recountPasses = 8

// farFuture is a time after every record's expiry: Stats with it returns a
// partition's whole ledger.
var farFuture = time.Unix(1<<40, 0).UTC()

// Recount rebuilds the counters and ledger of the inbox's public
// partition, of u's groups' partitions and of u's partition from the
// records they hold, and returns u's counts afterwards. It is the
// operators' repair path, for counters that drifted because the table was
// changed behind the library's back. It reads every record of those
// partitions, so its cost grows with them.
//
// It is safe to run while the partitions are in use and while removals are
// pending on the stream, and Counts stays exact while it runs, since every
// change it makes is one atomic unit that keeps counters and ledger in
// step:
//
//   - a record without a ledger entry (written by another program), or
//     whose entry differs from it, gets its entry (it is adopted);
//   - the entry of a record that no longer exists, whose removal is still
//     pending on the stream, is accounted as that removal would be (with
//     the tombstone of a broadcast removed before it expired), so the
//     stream's late delivery finds no entry and changes nothing;
//   - an unexpired receipt whose broadcast no longer exists is deleted and
//     its marks taken out of the counts;
//   - last, if the counters still differ from a recount of the records,
//     they are replaced, but only if no other write changed them since they
//     were read; otherwise that partition starts over, up to a few times,
//     then Recount fails with ErrConflict. The same write (one update of
//     the partition's total when the counters were right) records the
//     recount's time, so that the stream's late removal of another
//     program's item, never adopted, that left the table (deleted or
//     expired) before the recount read the partition is not counted out a
//     second time (a recount left it out already); when the removal is too
//     close to the recount's time to tell, the stream handler recounts
//     the partition after it (see StreamHandler).
func (ib *Inbox) Recount(ctx context.Context, u User) (_ Counts, err error) {
	defer ib.observe(&ctx, "Recount", u.Scope, u.ID).end(&err)
	if err := u.Validate(); err != nil {
		return Counts{}, err
	}
	for _, p := range append(u.Shared(), u.Partition()) {
		if err := ib.RecountPartition(ctx, p); err != nil {
			return Counts{}, err
		}
	}
	return ib.Counts(ctx, u)
}

// RecountPartition rebuilds the counters and ledger of one partition, a
// user's or a shared one (everyone's or a group's), from the records it
// holds, as Recount does for each partition it names. It lets an operator
// repair a whole inbox with one pass over its partitions (each shared
// partition once, however many users read it), where calling Recount for
// every user would repair the shared partitions once per user.
//
// It is safe to run while the partition is in use and while removals are
// pending on the stream, for the reasons Recount gives: each change is one
// atomic unit of counters and ledger, and the counters are replaced only
// if no other write moved them since they were read (else the partition is
// read again, a few times at most, then ErrConflict).
//
// Its cost grows with the partition: each pass reads p's whole ledger and
// every record of p (and, for a user's partition, the broadcasts of the
// user's unexpired receipts), in pages of a few hundred records; one pass
// when nothing is wrong, one more after each fix of the ledger. It writes
// what it repairs, and one update of the partition's total (its recount
// time) when nothing is wrong. An invalid p is ErrInvalidKey, and nothing is
// read.
func (ib *Inbox) RecountPartition(ctx context.Context, p Partition) (err error) {
	defer ib.observe(&ctx, "RecountPartition", p.Scope(), p.User).end(&err)
	if err := p.Validate(); err != nil {
		return err
	}
	return ib.repairPartition(ctx, p)
}

// errRepairAgain reports a repair pass that changed the ledger: the next
// pass reads the partition again.
var errRepairAgain = errors.New("inbox: repair changed the ledger")

// repairPartition repairs p, pass after pass, until one finds the ledger
// and the counters right (or replaces the counters).
func (ib *Inbox) repairPartition(ctx context.Context, p Partition) error {
	for range recountPasses {
		err := ib.repairPass(ctx, p)
		if !errors.Is(err, ErrConflict) && !errors.Is(err, errRepairAgain) {
			return err
		}
	}
	return fmt.Errorf("inbox: recount of %s: the partition kept changing: %w", p.PK(), ErrConflict)
}

// repairPass reads p's ledger and records. If the ledger is wrong it fixes
// it and returns errRepairAgain; else, if the counters differ from a
// recount, it replaces them (ErrConflict if a write came between).
func (ib *Inbox) repairPass(ctx context.Context, p Partition) error {
	now := ib.now()
	st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Now: farFuture, Threads: true})
	if err != nil {
		return err
	}
	recs, err := ib.partitionRecords(ctx, p)
	if err != nil {
		return err
	}
	// The recount time: after the partition was read (see
	// driver.Repair.Recounted), with the clocks' skew allowed for.
	read := ib.now().Add(recountSkew)
	dead, broadcasts, err := ib.deadReceiptsOf(ctx, p, recs, now)
	if err != nil {
		return err
	}
	entries := make(map[string]driver.Record, len(st.Expired))
	for _, e := range st.Expired {
		entries[e.Entry] = e
	}
	// late holds the entries of records read whose entry the ledger read
	// lacks but holds now: a write (a publish, an adoption) that came
	// between the two reads. Such a record is left to the next pass, which
	// reads both: adopted again, its first entry would be left without a
	// record, and taken for a removed record's.
	late, err := ib.lateEntries(ctx, p, recs, entries)
	if err != nil {
		return err
	}
	var r driver.Repair
	var removals []driver.Removal
	var intoThreads, rewritten, raced int
	// readopt gives rec a new entry, and takes out its entry e (none if
	// e is zero) with no deltas: the next pass recounts the counters.
	readopt := func(e, rec driver.Record) {
		if e.Ledgered() {
			removals = append(removals, driver.Removal{Record: e, Now: now})
		}
		r.Adopt = append(r.Adopt, rec)
		r.AdoptAs = append(r.AdoptAs, driver.NewLedgerSK(rec.Message.ExpiresAt, rec.Message.ID))
	}
	// The tallied timed entries (read to the far future: all of them), by
	// key, and the keys of them by ledger entry (for the entries of
	// records that are gone, below); an earlier version's snooze and
	// pending entries, not tallied, by ledger entry.
	tallied := make(map[string]driver.Record, len(st.Due))
	talliedOf := make(map[string]string, len(st.Due))
	for _, e := range st.Due {
		k := driver.TimedKeyOf(e)
		tallied[k], talliedOf[e.Entry] = e, k
	}
	snoozes := make(map[string]time.Time, len(st.Snoozed))
	pending := make(map[string]time.Time, len(st.Pending))
	for _, z := range st.Snoozed {
		snoozes[z.Entry] = z.Message.SnoozedUntil
	}
	for _, z := range st.Pending {
		pending[z.Entry] = z.Message.DeliverAt
	}
	// timedStale reports whether rec's timed entry is not what it should
	// be: one it notes that is missing, or holds other marks than rec's
	// counted ones (Counts takes it out of the counts with the entry's);
	// or none noted while it is snoozed or not due (an earlier version's
	// entry, not tallied: converted).
	timedStale := func(rec driver.Record) bool {
		if rec.Timed != "" {
			want, ok := rec.TimedEntry()
			have, there := tallied[rec.Timed]
			return !ok || !there || !have.State().Same(want.State())
		}
		return rec.Message.Snoozed(now) || !rec.Receipt && !rec.Message.Due(now)
	}
	claimed := map[string]bool{}
	deltas := driver.CounterDeltas(p, "", 0, 0) // the total always exists
	var ledgered []driver.Record                // a shared partition's records, for its buckets
	for _, rec := range recs {
		e, ok := entries[rec.Entry]
		if ok {
			delete(entries, rec.Entry)
		}
		switch b, inThread := broadcasts[rec.Message.ID]; {
		case !ok && late[rec.Entry]:
			raced++
		case !rec.Ledgered() && rec.Receipt && inThread && b.Message.Thread != "" && !rec.State().IsZero() && now.Before(b.Message.ExpiresAt):
			// Another program's receipt of a thread's broadcast: adopted
			// into the thread, its marks moving into its counters. (One
			// of a broadcast that expired, which no mark reaches, is
			// adopted as below, as of a broadcast in no thread.)
			if err := ib.adoptIntoThread(ctx, rec, b); err != nil {
				return err
			}
			intoThreads++
		case ok && p.IsShared() && sameEntry(e, rec) && timedStale(rec) && now.Before(rec.Message.ExpiresAt):
			// A scheduled broadcast whose pending entry is not what it
			// should be (an earlier version's): written again.
			mk := sharedTimedMark(rec, now)
			switch err := ib.applyMarks(ctx, p, []driver.Mark{mk}, driver.MarkDeltas(mk)); {
			case err == nil || errors.Is(err, driver.ErrStateChanged) || errors.Is(err, ErrNotFound):
				rewritten++
			default:
				return err
			}
		case ok && !p.IsShared() && sameEntryBut(e, rec) && (!sameEntry(e, rec) || rec.Counted != driver.CountedOf(rec) || timedStale(rec)) && now.Before(rec.Message.ExpiresAt) && !dead[rec.Message.ID]:
			// An entry that counts other marks than the record carries
			// (another program changed them): rewritten as the record
			// stands, with its snooze entry, as the stream handler
			// does (see recountEdited). Or an entry that counts them,
			// on a record that notes other counted marks, or none
			// (written, or last marked, by a version of the library
			// that did not note them), or whose snooze or pending entry
			// holds other marks: the note and the entries are
			// rewritten, and the counters are left to the next pass.
			var deltas []driver.Counter
			if !sameEntry(e, rec) {
				deltas = driver.EditDeltas(rec)
			}
			mk := recountMark(rec, now)
			err := ib.applyMarks(ctx, p, []driver.Mark{mk}, driver.MergeCounters(slices.Concat(deltas, mk.TimedDeltas(), driver.MutedDeltas(mk))))
			switch {
			case err == nil || errors.Is(err, driver.ErrStateChanged):
				rewritten++ // done, or changed since: the next pass reads it again
			case errors.Is(err, ErrNotFound):
				readopt(e, rec) // its broadcast is not the one it counts: as below
			default:
				return err
			}
		case !ok || !sameEntry(e, rec):
			// No entry, or one that does not record it (the table was
			// edited): a new entry adopts the record; the counters are
			// recounted in the next pass.
			if !ok {
				e = driver.Record{}
			}
			readopt(e, rec)
		case dead[rec.Message.ID]:
			removals = append(removals, driver.Removal{Record: rec, Deltas: driver.RemovalDeltasOf(rec), Delete: true, Now: now})
		default:
			deltas = append(deltas, driver.RecordCounters(rec)...)
			if e, ok := rec.TimedEntry(); ok {
				deltas = append(deltas, driver.TimedCounters(e)...)
				claimed[rec.Timed] = true
			}
			if !p.IsShared() && rec.Message.ID > st.Seen {
				deltas = append(deltas, driver.AboveCounters(rec)...)
			}
			deltas = append(deltas, driver.MutedCounters(rec)...)
			deltas = append(deltas, driver.CoveredCounters(rec)...)
			if p.IsShared() {
				ledgered = append(ledgered, rec)
			}
		}
	}
	// The entries left are of records that are gone: account their pending
	// removals now, with a snoozed record's snooze entry and a scheduled
	// one's pending entry (which its ledger entry does not name), so that
	// they stop taking the record out of the counts as the recount does.
	for _, e := range entries {
		e.Message.SnoozedUntil, e.Message.DeliverAt = snoozes[e.Entry], pending[e.Entry]
		if k, ok := talliedOf[e.Entry]; ok {
			e.Timed, claimed[k] = k, true
		}
		removals = append(removals, driver.Removal{Record: e, Deltas: driver.RemovalDeltasOf(e), Tombstone: driver.LeavesTombstone(e, now), Now: now})
	}
	// A tallied entry no record notes (the table was edited) is dropped.
	for k := range tallied {
		if !claimed[k] && rewritten == 0 && raced == 0 && len(r.Adopt) == 0 {
			r.Drop = append(r.Drop, k)
		}
	}
	adopt := r.Adopt
	if len(adopt) > 0 || len(r.Drop) > 0 {
		if err := ib.store.Repair(ctx, p, r); err != nil {
			return err
		}
	}
	for _, r := range removals {
		if _, err := ib.store.ApplyRemoval(ctx, r); err != nil {
			return err
		}
	}
	if len(adopt) > 0 || len(r.Drop) > 0 || len(removals) > 0 || intoThreads > 0 || rewritten > 0 || raced > 0 {
		return errRepairAgain
	}
	// A muted thread's counters are kept only while it is muted; a
	// covered thread's count the records its position covers, which
	// stands.
	deltas = slices.DeleteFunc(deltas, func(c driver.Counter) bool {
		return !st.Preferences.Keeps(c) || !driver.Covering(st.Counters, c)
	})
	for i := range deltas {
		deltas[i].Of = ""
	}
	for t, pos := range driver.Positions(st.Counters) {
		deltas = append(deltas, driver.Counter{Partition: p, Thread: t, Covered: true, Position: pos})
	}
	for k, pos := range driver.GroupPositions(st.Counters) {
		deltas = append(deltas, driver.Counter{Partition: p, Group: k.Group, Thread: k.Thread, Covered: true, Position: pos})
	}
	counters := driver.MergeCounters(deltas)
	// A thread's Latest is its last activity, which the removal of its
	// latest message does not lower: the recount keeps the stored one
	// unless the records hold a later message.
	latest := map[string]string{}
	for _, c := range st.Counters {
		latest[c.SK()] = c.Latest
	}
	for i, c := range counters {
		if stored := latest[c.SK()]; stored > c.Latest {
			// The receipts' hint of a user's counter of a shared thread
			// too: her receipt of the message Latest is gone.
			counters[i].Latest, counters[i].Top, counters[i].TopEntry = stored, driver.State{}, ""
		}
	}
	// The counters, reset or found right, stand for a recount that read
	// the partition before read (the partition's recount time never goes
	// back): a record without a ledger entry that left the table by then
	// is left out, so its removal, when the stream delivers it, must not
	// count it out again; one that another program wrote after the read
	// is in the counters and must be, and the stream handler recounts when
	// the two are too close to tell apart (see recountIfRemovedNear).
	recounted := read
	if st.Recounted.After(recounted) {
		recounted = st.Recounted
	}
	reset := driver.Repair{Reset: true, Version: st.Version, Counters: counters, Before: st.Counters, Recent: st.Recent, Now: now, Recounted: recounted}
	if p.IsShared() {
		if reset.Days, reset.Hours, err = driver.Buckets(ledgered); err != nil {
			return err
		}
	} else {
		reset.Seen, reset.Preferences = st.Seen, st.Preferences
	}
	if sameCounters(st.Counters, counters) && st.Fence == reset.Seen && (!p.IsShared() || st.Bucketed && sameDays(st.Days, reset.Days)) {
		return ib.store.Repair(ctx, p, driver.Repair{Stamp: true, Version: st.Version, Recounted: recounted})
	}
	err = ib.store.Repair(ctx, p, reset)
	if err == nil {
		noteRepaired(ctx, driftOf(st.Counters, counters))
	}
	return err
}

// sameCounters reports whether stored, a partition's counters as read,
// are exactly want, a recount of them: the same tallies (their own, their
// timed entries' and Above), Latest, Top and TopEntry, and no other counter, even at
// zero (a thread whose messages are all gone keeps none: it would be read
// by every ListThreads), but for the total, which always stays.
func sameCounters(stored, want []driver.Counter) bool {
	key := func(c driver.Counter) driver.Counter {
		t := c.Tallies()
		t.Latest = c.Latest
		return t
	}
	w, tops := map[string]driver.Counter{}, map[string]driver.Counter{}
	for _, c := range want {
		w[c.SK()], tops[c.SK()] = key(c), c
	}
	n := 0
	for _, c := range stored {
		k := c.SK()
		got, ok := w[k]
		switch {
		case ok:
			if got != key(c) || !c.Top.Equal(tops[k].Top) || c.TopEntry != tops[k].TopEntry {
				return false
			}
			n++
		case k != driver.CounterSK("", "") && !c.Muted || !c.IsZero():
			return false // a muted thread's counter at zero is as none
		}
	}
	return n == len(w) || n == len(w)-1 && w[driver.CounterSK("", "")] == (driver.Counter{})
}

// sameDays reports whether two sets of day buckets count the same records
// per hour, and per category or thread and hour (their versions aside), days
// counting none aside: a day whose only counts are a thread's counts some.
func sameDays(a, b []driver.DayBucket) bool {
	counts := func(ds []driver.DayBucket) map[time.Time]driver.DayBucket {
		out := map[time.Time]driver.DayBucket{}
		for _, d := range ds {
			if d = d.Clone(); d.Hours != [24]int64{} || d.Categories != nil || d.Threads != nil {
				d.Versions = [24]int64{}
				out[d.Day] = d
			}
		}
		return out
	}
	ca, cb := counts(a), counts(b)
	if len(ca) != len(cb) {
		return false
	}
	for d, x := range ca {
		y, ok := cb[d]
		if !ok || x.Hours != y.Hours || !maps.Equal(x.Categories, y.Categories) || !maps.Equal(x.Threads, y.Threads) {
			return false
		}
	}
	return true
}

// sharedTimedMark returns the mark that writes again the pending entry of
// rec, a scheduled broadcast of a shared partition (or folds it, due):
// it changes no marks (a broadcast has none).
func sharedTimedMark(rec driver.Record, now time.Time) driver.Mark {
	mk := driver.Mark{Key: rec.Key(), Now: now, Entry: rec.Entry, Category: rec.Message.Category, Thread: rec.Message.Thread,
		ExpiresAt: rec.Message.ExpiresAt, Timed: rec.Timed}
	if !rec.Message.Due(now) {
		mk.DeliverAt = rec.Message.DeliverAt
	}
	return mk
}

// sameEntry reports whether ledger entry e records what rec adds to the
// counters (e is rec's entry).
func sameEntry(e, rec driver.Record) bool { return sameEntryBut(e, rec) && e.State().Same(rec.State()) }

// sameEntryBut reports whether ledger entry e records rec but for the
// user's marks: the same kind of record, category, thread, group and
// expiry.
func sameEntryBut(e, rec driver.Record) bool {
	return e.Receipt == rec.Receipt && e.Message.Category == rec.Message.Category && e.Message.Thread == rec.Message.Thread &&
		(!rec.Receipt || e.Message.Audience.Group == rec.Message.Audience.Group) &&
		e.Message.ExpiresAt.Equal(rec.Message.ExpiresAt)
}

// sameTallies reports whether two sets of counters of one partition hold
// the same non-zero tallies, with the same Latest.
func sameTallies(a, b []driver.Counter) bool {
	tallies := func(cs []driver.Counter) map[string]driver.Counter {
		out := map[string]driver.Counter{}
		for _, c := range cs {
			if !c.IsZero() {
				t := c.Tallies()
				t.Latest = c.Latest
				out[c.SK()] = t
			}
		}
		return out
	}
	ta, tb := tallies(a), tallies(b)
	if len(ta) != len(tb) {
		return false
	}
	for k, v := range ta {
		if tb[k] != v {
			return false
		}
	}
	return true
}

// lateEntries returns the ledger entries of recs, records of p read after
// entries (p's ledger), that entries lacks and p's ledger holds now,
// read again only if some record's entry is missing from entries.
func (ib *Inbox) lateEntries(ctx context.Context, p Partition, recs []driver.Record, entries map[string]driver.Record) (map[string]bool, error) {
	missing := map[string]bool{}
	for _, rec := range recs {
		if _, ok := entries[rec.Entry]; rec.Ledgered() && !ok {
			missing[rec.Entry] = true
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Now: farFuture})
	if err != nil {
		return nil, err
	}
	late := map[string]bool{}
	for _, e := range st.Expired {
		if missing[e.Entry] {
			late[e.Entry] = true
		}
	}
	return late, nil
}

// partitionRecords returns every record of p, expired ones too.
func (ib *Inbox) partitionRecords(ctx context.Context, p Partition) ([]driver.Record, error) {
	return ib.queryAll(ctx, driver.Query{Partition: p, Limit: recountPageSize})
}

// deadReceiptsOf returns the IDs of p's unexpired receipts whose broadcast
// (to everyone, or to the receipt's group) no longer exists (it was removed
// before it expired): they no longer count; and the broadcasts of the
// others, by ID.
func (ib *Inbox) deadReceiptsOf(ctx context.Context, p Partition, recs []driver.Record, now time.Time) (map[string]bool, map[string]driver.Record, error) {
	var keys []driver.Key
	for _, r := range recs {
		if r.Receipt && now.Before(r.Message.ExpiresAt) {
			keys = append(keys, driver.Key{Partition: sharedOf(r), ID: r.Message.ID})
		}
	}
	dead := make(map[string]bool, len(keys))
	for _, k := range keys {
		dead[k.ID] = true
	}
	found, err := ib.getRecords(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	broadcasts := make(map[string]driver.Record, len(found))
	for _, b := range found {
		delete(dead, b.Message.ID)
		broadcasts[b.Message.ID] = b
	}
	return dead, broadcasts, nil
}

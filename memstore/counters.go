package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stak/inbox/driver"
)

// Stats returns q.Partition's counters (sorted by sort key, with
// q.Threads its threads' first), their version, its seen watermark and
// Fence, the ledger entries expiring at or before q.Now (sorted by
// expiry, then ID), the timed entries due by then (by time), its
// tombstones (by ID), the timed entries of an earlier version (by time),
// and a shared partition's day buckets (by day); with q.Hour, the hour
// bucket of that hour alone; with q.Keys, the counters with those keys, in
// their order, each once, and the version, as one view with or without
// q.Isolated (the store is read under its lock).
func (s *Store) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	if err := s.begin(ctx); err != nil {
		return driver.Stats{}, err
	}
	defer s.mu.Unlock()
	if err := driver.ValidateStatsQuery(q); err != nil {
		return driver.Stats{}, err
	}
	p, now := q.Partition, q.Now
	if !q.Hour.IsZero() {
		return driver.Stats{Hour: s.hourBucket(p, q.Hour)}, nil
	}
	if len(q.Keys) > 0 {
		// Read under the lock, with or without Isolated: one view.
		st := driver.Stats{Version: s.versions[p], Preferences: s.prefs[p].Clone(), Bucketed: p.IsShared()}
		read := make(map[string]bool, len(q.Keys))
		for _, k := range q.Keys {
			k.Partition = p
			if sk := k.SK(); !read[sk] {
				read[sk] = true
				if c, ok := s.counters[p][sk]; ok {
					st.Counters = append(st.Counters, c)
				}
				if k.Category == "" && k.Thread == "" {
					// The total comes with the covered threads'
					// counters of direct messages, a group's counter
					// with those of its threads, as the dynamo Store
					// keeps them on these.
					for _, c := range s.counters[p] {
						if c.Covered && c.Group == k.Group && !read[c.SK()] {
							read[c.SK()] = true
							st.Counters = append(st.Counters, c)
						}
					}
				}
			}
		}
		return st, nil
	}
	st := driver.Stats{Version: s.versions[p], Seen: s.seen[p], Fence: s.fence[p], Recounted: s.recounted[p], Preferences: s.prefs[p].Clone()}
	if q.Threads {
		st.Counters = make([]driver.Counter, 0, len(s.counters[p]))
		for _, c := range s.counters[p] {
			st.Counters = append(st.Counters, c)
		}
	} else {
		st.Counters = make([]driver.Counter, 0, len(s.plain[p]))
		for sk := range s.plain[p] {
			st.Counters = append(st.Counters, s.counters[p][sk])
		}
	}
	slices.SortFunc(st.Counters, func(a, b driver.Counter) int { return strings.Compare(a.SK(), b.SK()) })
	st.Expired = s.ledger.expired(p, now)
	for _, t := range s.tombstones[p] {
		st.Tombstones = append(st.Tombstones, t.rec)
	}
	slices.SortFunc(st.Tombstones, func(a, b driver.Record) int { return strings.Compare(a.Message.ID, b.Message.ID) })
	st.Due = s.due(p, now)
	st.Snoozed, st.Pending = s.legacyTimed(p)
	if slots := s.recent[p]; slots != nil {
		for _, slot := range slots {
			for k := range slot {
				st.Recent = append(st.Recent, k)
			}
		}
	}
	if p.IsShared() {
		st.Days, st.Bucketed = s.dayBuckets(p), true
	}
	return st, nil
}

// ApplyRemoval accounts r as the driver.Store contract says: by the ledger
// entry of a Ledgered record, else by a marker of r.EventID in the
// record's partition. A removal whose DynamoDB transaction would hold more
// than driver.MaxTransactItems items (driver.RemovalItems, and, made
// again without the deltas' Above, see removalFits) is ErrInvalidInput.
func (s *Store) ApplyRemoval(ctx context.Context, r driver.Removal) (bool, error) {
	if err := driver.ValidateEntry(r.Record); err != nil {
		return false, err
	}
	if r.Record.Ledgered() {
		if err := validateBucketed(r.Record); err != nil {
			return false, err
		}
	}
	if r.Delete && !r.Record.Ledgered() {
		return false, fmt.Errorf("%w: deleting record %s, which has no ledger entry", driver.ErrInvalidInput, r.Record.Message.ID)
	}
	if err := driver.ValidateDeltas(r.Deltas); err != nil {
		return false, err
	}
	if err := driver.ValidateRemovalItems(r); err != nil {
		return false, err
	}
	if err := s.begin(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	if err := s.removalFits(r); err != nil {
		return false, err
	}
	return s.applyRemoval(r, true), nil
}

// removalFits refuses, with ErrInvalidInput, a removal r that applies
// but whose DynamoDB transaction, made again without the deltas' Above
// changes (the watermark of its record's partition is not below the
// record), would hold more than driver.MaxTransactItems items, as the
// dynamo Store refuses it (see driver.RemovalItems): without the reader
// item, if another receipt's stands at its key. s.mu must be held.
func (s *Store) removalFits(r driver.Removal) error {
	rec := r.Record
	above := false
	for _, d := range r.Deltas {
		above = above || d.Above != 0
	}
	if !above || s.fenceOf(rec.Partition) < rec.Message.ID {
		return nil // made once, or again as big
	}
	if rec.Ledgered() {
		sr, there := s.records[rec.Key()]
		if !s.ledger.has(entryOf(rec)) || r.Delete && there && sr.rec.Entry != rec.Entry {
			return nil // applied before: not made again
		}
	} else if _, ok := s.markers[markerKey{p: rec.Partition, id: r.EventID}]; ok {
		return nil
	}
	again := r
	again.Deltas = make([]driver.Counter, len(r.Deltas))
	for i, d := range r.Deltas {
		d.Above = 0
		again.Deltas[i] = d
	}
	n := driver.RemovalItems(again)
	if rd, ok := r.ReaderRemoval(); ok {
		if have, ok := s.readers[rd.Partition][driver.ReaderSK(rd.Thread, rd.ID, rd.User)]; ok && have.r.Entry != rd.Entry {
			n-- // another receipt's reader item stays
		}
	}
	if n > driver.MaxTransactItems {
		return fmt.Errorf("%w: removal of %s takes %d transaction items, at most %d", driver.ErrInvalidInput, rec.Message.ID, n, driver.MaxTransactItems)
	}
	return nil
}

// applyRemoval applies r if it was not applied before, with the check of
// the recount time if guard is set (see driver.Store.ApplyRemoval). s.mu
// must be held.
func (s *Store) applyRemoval(r driver.Removal, guard bool) bool {
	rec := r.Record
	if rec.Ledgered() {
		k := entryOf(rec)
		if !s.ledger.has(k) {
			return false
		}
		sr, there := s.records[rec.Key()]
		if r.Delete && there && sr.rec.Entry != rec.Entry {
			return false // another record stands at the key now
		}
		s.ledger.del(k)
		if rec.Timed != "" {
			s.delTimed(rec.Partition, rec.Timed)
		}
		if u := rec.Message.SnoozedUntil; !u.IsZero() {
			s.delTimed(rec.Partition, driver.SnoozeSK(u, rec.Entry))
		}
		if at := rec.Message.DeliverAt; !at.IsZero() {
			s.delTimed(rec.Partition, driver.PendingSK(at, rec.Entry))
		}
		if rec.Partition.IsShared() {
			s.bucket(rec.Partition, rec.Message.ID, driver.SliceOf(rec), -1)
		}
		if rd, ok := r.ReaderRemoval(); ok {
			s.delReader(rd, true)
		}
		if r.Delete && there {
			s.drop(rec.Key(), false)
		}
	} else {
		k := markerKey{p: rec.Partition, id: r.EventID}
		if _, ok := s.markers[k]; ok {
			return false
		}
		seq := s.nextSeq()
		s.markers[k] = seq
		s.expire(expiry{at: r.Now.Add(driver.RemovalMarkerTTL), kind: expireMarker, seq: seq, marker: k})
		if rc, ok := s.recounted[rec.Partition]; ok && guard && !rc.Before(r.LeftAt()) {
			r.Deltas = nil // a recount made when it had left counted it out
		}
	}
	s.addDeltas(s.aboveIf(r.Deltas, rec.Message.ID))
	if r.Tombstone {
		t := driver.Record{Partition: rec.Partition, Message: driver.Message{ID: rec.Message.ID, Category: rec.Message.Category, Thread: rec.Message.Thread, ExpiresAt: rec.Message.ExpiresAt}}
		sr := &storedRecord{rec: t, seq: s.nextSeq()}
		if s.tombstones[rec.Partition] == nil {
			s.tombstones[rec.Partition] = map[string]*storedRecord{}
		}
		s.tombstones[rec.Partition][rec.Message.ID] = sr
		s.expire(expiry{at: t.Message.ExpiresAt, kind: expireTombstone, seq: sr.seq, key: rec.Key()})
	}
	return true
}

// Repair adopts r.Adopt's records that still stand as given, then, with
// r.Reset, replaces p's counters if their version is still r.Version and
// they hold r.Before's tallies.
func (s *Store) Repair(ctx context.Context, p driver.Partition, r driver.Repair) error {
	cs := make(map[string]driver.Counter, len(r.Counters))
	for _, c := range r.Counters {
		if c.Partition != p {
			return fmt.Errorf("%w: counter of %s reset in %s", driver.ErrInvalidInput, c.Partition.PK(), p.PK())
		}
		if err := driver.ValidateCounter(c); err != nil {
			return err
		}
		k := c.SK()
		if _, dup := cs[k]; dup {
			return fmt.Errorf("%w: two counters %s", driver.ErrInvalidInput, k)
		}
		c.Rev = 0 // the Store's to give (revise), as the dynamo Store ignores it
		if !r.Preferences.Keeps(c) {
			continue // kept only while its thread is muted
		}
		cs[k] = c
	}
	if len(r.AdoptAs) != len(r.Adopt) {
		return fmt.Errorf("%w: %d records to adopt, %d entries", driver.ErrInvalidInput, len(r.Adopt), len(r.AdoptAs))
	}
	if err := driver.ValidateRepairPreferences(p, r); err != nil {
		return err
	}
	if err := driver.ValidateRepairBuckets(r); err != nil {
		return err
	}
	for i, rec := range r.Adopt {
		as := rec
		as.Entry = r.AdoptAs[i]
		if err := driver.ValidateEntry(as); err != nil || rec.Partition != p || !as.Ledgered() {
			return fmt.Errorf("%w: record %s of %s adopted in %s as %q", driver.ErrInvalidInput, rec.Message.ID, rec.Partition.PK(), p.PK(), r.AdoptAs[i])
		}
		if !rec.Ledgered() {
			if err := validateBucketed(rec); err != nil {
				return err
			}
		}
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	for i, rec := range r.Adopt {
		sr, ok := s.records[rec.Key()]
		if !ok || !sameMarks(sr.rec, rec.State()) || sr.rec.Entry != rec.Entry {
			continue
		}
		old := sr.rec
		sr.rec.Entry, sr.rec.Counted = r.AdoptAs[i], driver.AdoptedCounted(old)
		s.noteChange(driver.ChangeModify, &old, &sr.rec, false)
		s.indexed(&old, &sr.rec)
		s.ledger.put(entryOf(sr.rec), entry(sr.rec))
		switch {
		case old.Ledgered():
		case p.IsShared():
			s.bucket(p, old.Message.ID, driver.SliceOf(old), 1) // adopted: counted in the buckets
		case old.Message.ID > s.fence[p]:
			// Adopted: counted in Above; in no thread, as another
			// program counts it (a Recount counts it there).
			s.addDeltas(slices.DeleteFunc(driver.AboveCounters(sr.rec), func(c driver.Counter) bool { return c.Muted }))
		}
	}
	for _, sk := range r.Drop {
		s.delTimed(p, sk)
	}
	if !r.Reset && !r.Stamp {
		return nil
	}
	if s.versions[p] != r.Version || r.Reset && !sameTallies(s.counters[p], r.Before) {
		return fmt.Errorf("%w: counters of %s changed since version %d", driver.ErrConflict, p.PK(), r.Version)
	}
	s.recounted[p] = r.Recounted.Truncate(time.Second)
	if !r.Reset {
		s.versions[p]++
		return nil
	}
	if _, ok := cs[driver.CounterSK("", "")]; !ok {
		cs[driver.CounterSK("", "")] = driver.Counter{Partition: p} // the total always stays, at zero
	}
	for _, c := range s.counters[p] {
		s.revise(c) // counters dropped, and those kept, changed or not
	}
	s.counters[p] = cs
	for _, c := range cs {
		s.revise(c)
	}
	delete(s.plain, p)
	for _, c := range cs {
		s.notePlain(c)
	}
	delete(s.activity, p)
	for _, c := range cs {
		if c.Thread != "" && c.Group == "" && c.Latest != "" {
			s.noteActivity(p, c.Thread, "", c.Latest)
		}
	}
	s.versions[p]++
	s.fence[p] = r.Seen
	if !p.IsShared() {
		if r.Preferences.IsZero() {
			delete(s.prefs, p)
		} else {
			s.prefs[p] = r.Preferences.Clone()
		}
	}
	if p.IsShared() {
		s.resetBuckets(p, r.Days, r.Hours)
	}
	return nil
}

// resetBuckets replaces p's time buckets with days and hours, each hour's
// version in both a new one. s.mu must be held.
func (s *Store) resetBuckets(p driver.Partition, days []driver.DayBucket, hours []driver.HourBucket) {
	v := int64(s.nextSeq())
	s.days[p] = map[time.Time]*driver.DayBucket{}
	s.hours[p] = map[time.Time]*driver.HourBucket{}
	for _, d := range days {
		d = d.Clone()
		for i := range d.Versions {
			d.Versions[i] = v
		}
		s.days[p][d.Day] = &d
	}
	for _, h := range hours {
		h = h.Clone()
		h.Version = v
		s.hours[p][h.Hour] = &h
	}
}

// sameTallies reports whether stored, a partition's counters by sort key,
// hold exactly the own tallies of before (and no other counter), muted
// threads' counters aside, as the dynamo Store checks them (see
// driver.Repair.Before).
func sameTallies(stored map[string]driver.Counter, before []driver.Counter) bool {
	n := 0
	for _, b := range before {
		if b.Muted {
			continue
		}
		if c, ok := stored[b.SK()]; !ok || c.Own() != b.Own() {
			return false
		}
		n++
	}
	for _, c := range stored {
		if !c.Muted {
			n--
		}
	}
	return n == 0
}

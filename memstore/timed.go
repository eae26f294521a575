package memstore

import (
	"slices"
	"strings"
	"time"

	"github.com/stak/inbox/driver"
)

// putTimed stores timed entry e (a record with its SnoozedUntil or
// DeliverAt) at sort key sk: a TimedKey, in time order with the others
// of its partition, or an earlier version's key (SnoozeSK, PendingSK). A
// TimedKey gets its timer, which fires at the entry's time. s.mu must be
// held.
func (s *Store) putTimed(sk string, e driver.Record) {
	m := s.timed[e.Partition]
	if m == nil {
		m = map[string]driver.Record{}
		s.timed[e.Partition] = m
	}
	if _, ok := m[sk]; !ok && driver.IsTimedKey(sk) {
		insertSorted(s.timedKeys, e.Partition, sk)
		s.expire(expiry{at: driver.TimedAt(e), kind: expireTimer, key: e.Key(), timed: sk})
	}
	m[sk] = e
}

// delTimed deletes the timed entry at sk of p, if there. s.mu must be
// held.
func (s *Store) delTimed(p driver.Partition, sk string) {
	if _, ok := s.timed[p][sk]; !ok {
		return
	}
	delete(s.timed[p], sk)
	if driver.IsTimedKey(sk) {
		removeSorted(s.timedKeys, p, sk)
	}
}

// due returns p's stored timed entries (TimedKey) whose time is at or
// before now, by time: what Stats reads of them, at the cost of those
// entries. s.mu must be held.
func (s *Store) due(p driver.Partition, now time.Time) []driver.Record {
	keys := s.timedKeys[p]
	n, _ := slices.BinarySearch(keys, driver.LedgerBound(now))
	var out []driver.Record
	for _, sk := range keys[:n] {
		if e := s.timed[p][sk]; !now.Before(driver.TimedAt(e)) {
			out = append(out, e)
		}
	}
	return out
}

// legacyTimed returns p's timed entries of an earlier version (SnoozeSK
// and PendingSK), snooze entries first, each by time. s.mu must be held.
func (s *Store) legacyTimed(p driver.Partition) (snoozed, pending []driver.Record) {
	var keys []string
	for sk := range s.timed[p] {
		if !driver.IsTimedKey(sk) {
			keys = append(keys, sk)
		}
	}
	slices.Sort(keys)
	for _, sk := range keys {
		if strings.HasPrefix(sk, driver.SnoozePrefix) {
			snoozed = append(snoozed, s.timed[p][sk])
		} else {
			pending = append(pending, s.timed[p][sk])
		}
	}
	return snoozed, pending
}

// PutLegacyTimed stores e, a snooze entry (SnoozedUntil set) or a pending
// entry (DeliverAt set) of the record with key e.Key(), as an earlier
// version of the library kept it: under SnoozeSK or PendingSK, not
// tallied in the counters, and expiring at its time. It lets a test show
// what this version makes of a table that version wrote. The record must
// exist, note no timed entry, and have e's Entry.
func (s *Store) PutLegacyTimed(e driver.Record) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sr, ok := s.records[e.Key()]
	if !ok || sr.rec.Timed != "" || sr.rec.Entry != e.Entry {
		return false
	}
	sk := driver.SnoozeSK(e.Message.SnoozedUntil, e.Entry)
	if !e.Message.DeliverAt.IsZero() {
		sk = driver.PendingSK(e.Message.DeliverAt, e.Entry)
	}
	s.putTimed(sk, e)
	s.expire(expiry{at: driver.TimedAt(e), kind: expireLegacy, key: e.Key(), timed: sk})
	return true
}

// fenceOf returns the watermark p's Above is kept for. s.mu must be held.
func (s *Store) fenceOf(p driver.Partition) string { return s.fence[p] }

// aboveIf returns deltas without their Above where the seen watermark of
// their partition is at or above id: the Above of PutMessage and
// ApplyRemoval counts only for a record above it. s.mu must be held.
func (s *Store) aboveIf(deltas []driver.Counter, id string) []driver.Counter {
	out := make([]driver.Counter, 0, len(deltas))
	for _, d := range deltas {
		if d.Above != 0 && s.fenceOf(d.Partition) >= id {
			d.Above = 0
		}
		out = append(out, d)
	}
	return out
}

// bucket adds n to the time buckets of record id of shared partition p.
// s.mu must be held.
func (s *Store) bucket(p driver.Partition, id string, n int64) {
	t, err := driver.BucketTime(id)
	if err != nil {
		return // IDs are validated before writes
	}
	if s.days[p] == nil {
		s.days[p] = map[time.Time]*driver.DayBucket{}
		s.hours[p] = map[time.Time]*driver.HourBucket{}
	}
	d := driver.DayOf(t)
	db := s.days[p][d]
	if db == nil {
		db = &driver.DayBucket{Day: d}
		s.days[p][d] = db
	}
	v := int64(s.nextSeq()) // the hour's version, set in both buckets
	db.Hours[t.Hour()] += n
	db.Versions[t.Hour()] = v
	h := driver.HourOf(t)
	hb := s.hours[p][h]
	if hb == nil {
		hb = &driver.HourBucket{Hour: h, Seconds: map[int]int64{}}
		s.hours[p][h] = hb
	}
	hb.Seconds[int(t.Sub(h)/time.Second)] += n
	hb.Version = v
}

// dayBuckets returns p's day buckets, by day. s.mu must be held.
func (s *Store) dayBuckets(p driver.Partition) []driver.DayBucket {
	var out []driver.DayBucket
	for _, d := range s.days[p] {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b driver.DayBucket) int { return a.Day.Compare(b.Day) })
	return out
}

// hourBucket returns a copy of p's hour bucket of t's hour, nil if none.
// s.mu must be held.
func (s *Store) hourBucket(p driver.Partition, t time.Time) *driver.HourBucket {
	hb := s.hours[p][driver.HourOf(t)]
	if hb == nil {
		return nil
	}
	c := *hb
	c.Seconds = make(map[int]int64, len(hb.Seconds))
	for k, v := range hb.Seconds {
		if v != 0 {
			c.Seconds[k] = v
		}
	}
	return &c
}

// snoozeQuery serves a Query with Snoozed: p's stored snooze entries
// (TimedKey), by ID descending below q.Before, at most q.Limit, as the
// dynamo Store reads them from its unread index. s.mu must be held.
func (s *Store) snoozeQuery(q driver.Query) driver.QueryResult {
	var es []driver.Record
	for _, sk := range s.timedKeys[q.Partition] {
		e := s.timed[q.Partition][sk]
		if e.Message.DeliverAt.IsZero() && (q.Before == "" || e.Message.ID < q.Before) {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b driver.Record) int { return strings.Compare(b.Message.ID, a.Message.ID) })
	res := driver.QueryResult{}
	for i, e := range es {
		if i == q.Limit {
			res.Next = es[i-1].Message.ID
			break
		}
		res.Records = append(res.Records, e.Clone())
	}
	return res
}

// noteActivity moves thread t of p in the order of activity from was to
// latest ("" for none). s.mu must be held.
func (s *Store) noteActivity(p driver.Partition, t, was, latest string) {
	if was != "" {
		removeSorted(s.activity, p, driver.ActivityKey(was, t))
	}
	if latest != "" {
		insertSorted(s.activity, p, driver.ActivityKey(latest, t))
	}
}

// threadsQuery serves a Query with Threads: p's threads' own counters by
// activity, latest first, below q.Before, at most q.Limit, as the dynamo
// Store reads them from its unread index. s.mu must be held.
func (s *Store) threadsQuery(q driver.Query) driver.QueryResult {
	keys := s.activity[q.Partition]
	hi := len(keys)
	if q.Before != "" {
		hi, _ = slices.BinarySearch(keys, q.Before) // the keys of activities below Before
	}
	var res driver.QueryResult
	for i := hi - 1; i >= 0; i-- {
		if len(res.Threads) == q.Limit {
			res.Next = res.Threads[len(res.Threads)-1].Latest
			break
		}
		latest, t, _ := strings.Cut(keys[i], "#")
		c, ok := s.counters[q.Partition][driver.ThreadCounterSK(t, "")]
		if !ok || c.Latest != latest {
			continue
		}
		res.Threads = append(res.Threads, c)
	}
	return res
}

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
	if _, ok := m[sk]; !ok && !driver.IsTimedKey(sk) {
		s.legacy.insert(e.Partition, sk)
	}
	if _, ok := m[sk]; !ok && driver.IsTimedKey(sk) {
		s.timedKeys.insert(e.Partition, sk)
		if e.Message.DeliverAt.IsZero() {
			s.snoozeIDs.insert(e.Partition, e.Message.ID+"\x00"+sk)
		}
		s.expire(expiry{at: driver.TimedAt(e), kind: expireTimer, key: e.Key(), timed: sk})
	}
	m[sk] = e
}

// delTimed deletes the timed entry at sk of p, if there. s.mu must be
// held.
func (s *Store) delTimed(p driver.Partition, sk string) {
	e, ok := s.timed[p][sk]
	if !ok {
		return
	}
	delete(s.timed[p], sk)
	if driver.IsTimedKey(sk) {
		s.timedKeys.remove(p, sk)
		s.snoozeIDs.remove(p, e.Message.ID+"\x00"+sk)
	} else {
		s.legacy.remove(p, sk)
	}
}

// due returns p's stored timed entries (TimedKey) whose time is at or
// before now, by time: what Stats reads of them, at the cost of those
// entries. s.mu must be held.
func (s *Store) due(p driver.Partition, now time.Time) []driver.Record {
	bound := driver.LedgerBound(now)
	var out []driver.Record
	s.timedKeys.get(p).ascend("", func(sk string) bool {
		if sk >= bound {
			return false
		}
		if e := s.timed[p][sk]; !now.Before(driver.TimedAt(e)) {
			out = append(out, e)
		}
		return true
	})
	return out
}

// legacyTimed returns p's timed entries of an earlier version (SnoozeSK
// and PendingSK), snooze entries first, each by time. s.mu must be held.
func (s *Store) legacyTimed(p driver.Partition) (snoozed, pending []driver.Record) {
	s.legacy.get(p).ascend("", func(sk string) bool {
		if strings.HasPrefix(sk, driver.SnoozePrefix) {
			snoozed = append(snoozed, s.timed[p][sk])
		} else {
			pending = append(pending, s.timed[p][sk])
		}
		return true
	})
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

// validateBucketed refuses, as the dynamo Store does, to count in its
// partition's time buckets a shared record whose category or thread is
// not a key (each names its counts there): ErrInvalidKey.
func validateBucketed(rec driver.Record) error {
	if !rec.Partition.IsShared() {
		return nil
	}
	if err := driver.ValidateCategory(rec.Message.Category); err != nil {
		return err
	}
	return driver.ValidateThread(rec.Message.Thread)
}

// bucket adds n to the time buckets of record id, of slice k (its thread
// and category), of shared partition p. s.mu must be held.
func (s *Store) bucket(p driver.Partition, id string, k driver.Slice, n int64) {
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
	db.Add(t, k, n)
	db.Versions[t.Hour()] = v
	h := driver.HourOf(t)
	hb := s.hours[p][h]
	if hb == nil {
		hb = &driver.HourBucket{Hour: h, Seconds: map[int]int64{}}
		s.hours[p][h] = hb
	}
	hb.Add(t, k, n)
	hb.Version = v
}

// dayBuckets returns copies of p's day buckets, by day. s.mu must be
// held.
func (s *Store) dayBuckets(p driver.Partition) []driver.DayBucket {
	var out []driver.DayBucket
	for _, d := range s.days[p] {
		out = append(out, d.Clone())
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
	c := hb.Clone()
	return &c
}

// snoozeQuery serves a Query with Snoozed: p's stored snooze entries
// (TimedKey), by ID descending below q.Before, at most q.Limit, as the
// dynamo Store reads them from its unread index. s.mu must be held.
func (s *Store) snoozeQuery(q driver.Query) driver.QueryResult {
	res := driver.QueryResult{}
	s.snoozeIDs.get(q.Partition).descend(q.Before, func(key string) bool {
		if len(res.Records) == q.Limit {
			res.Next = res.Records[len(res.Records)-1].Message.ID
			return false
		}
		_, sk, _ := strings.Cut(key, "\x00")
		res.Records = append(res.Records, s.timed[q.Partition][sk].Clone())
		return true
	})
	return res
}

// noteActivity moves thread t of p in the order of activity from was to
// latest ("" for none). s.mu must be held.
func (s *Store) noteActivity(p driver.Partition, t, was, latest string) {
	if was != "" {
		s.activity.remove(p, driver.ActivityKey(was, t))
	}
	if latest != "" {
		s.activity.insert(p, driver.ActivityKey(latest, t))
	}
}

// threadsQuery serves a Query with Threads: p's threads' own counters by
// activity, latest first, below q.Before, at most q.Limit, as the dynamo
// Store reads them from its unread index. s.mu must be held.
func (s *Store) threadsQuery(q driver.Query) driver.QueryResult {
	res := driver.QueryResult{Tallied: true} // with ActivityOnly too: they cost nothing more here
	s.activity.get(q.Partition).descend(q.Before, func(key string) bool {
		if len(res.Threads) == q.Limit {
			res.Next = res.Threads[len(res.Threads)-1].Latest
			return false
		}
		latest, t, _ := strings.Cut(key, "#")
		if c, ok := s.counters[q.Partition][driver.ThreadCounterSK(t, "")]; ok && c.Latest == latest {
			c.Rev = s.revs[driver.Key{Partition: c.Partition, ID: c.Thread}]
			res.Threads = append(res.Threads, c)
		}
		return true
	})
	return res
}

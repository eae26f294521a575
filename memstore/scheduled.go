package memstore

import (
	"sort"
	"time"

	"github.com/stak/inbox/driver"
)

// scheduledQuery serves a Query with Scheduled as the dynamo Store serves
// it from its scheduled index: the scheduled records of q's scope
// (driver.InScheduledIndex: the users' copies, and the broadcasts and
// group messages in their shared partitions), ascending by
// driver.ScheduledKey, above q.After and up to q.Before (an entry at
// Before is evaluated and dropped, as a BETWEEN of DynamoDB's returns
// it), at most q.Limit evaluated, the expired dropped, each without the
// user's marks (the index does not project them). Unlike the index it is
// strongly consistent, and its cost grows with the store's records (it
// scans them): it is for tests. s.mu must be held.
func (s *Store) scheduledQuery(q driver.Query) driver.QueryResult {
	scope := q.Partition.Scope()
	type entry struct {
		pos string
		key driver.Key
	}
	var entries []entry
	for p, ids := range s.ids {
		if p.Scope() != scope {
			continue
		}
		ids.ascend("", func(id string) bool {
			k := driver.Key{Partition: p, ID: id}
			if pos := driver.ScheduledKey(id, p); driver.InScheduledIndex(s.records[k].rec) &&
				(q.After == "" || pos > q.After) && (q.Before == "" || pos <= q.Before) {
				entries = append(entries, entry{pos, k})
			}
			return true
		})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].pos < entries[j].pos })
	var res driver.QueryResult
	for i, e := range entries {
		if i == q.Limit {
			res.Next = entries[i-1].pos
			break
		}
		rec := s.records[e.key].rec
		if e.pos == q.Before || !q.Now.IsZero() && !q.Now.Before(rec.Message.ExpiresAt) {
			continue
		}
		rec = rec.Clone()
		rec.Message.ReadAt, rec.Message.ArchivedAt, rec.Timed = time.Time{}, time.Time{}, ""
		rec.Message.SnoozedUntil, rec.Message.InteractedAt = time.Time{}, time.Time{} // not projected either
		res.Records = append(res.Records, rec)
	}
	return res
}

package memstore

import (
	"strings"

	"github.com/stak/inbox/driver"
)

// inIndex reports whether rec is in the dynamo Store's unread index: a
// record of the library's own (another program's is not until adopted)
// in a user's partition that is a receipt, or a direct message neither
// read nor archived.
func inIndex(rec driver.Record) bool {
	return rec.Ledgered() && !rec.Partition.IsShared() && (rec.Receipt || !rec.Message.IsRead() && !rec.Message.IsArchived())
}

// indexKey returns rec's key in the unread index: its ID, for a receipt
// its ID then "r" (just above the ID, as in the dynamo Store's index).
func indexKey(rec driver.Record) string {
	if rec.Receipt {
		return rec.Message.ID + "r"
	}
	return rec.Message.ID
}

// indexed moves a record in the unread index from what old holds to what
// new does (nil for none). s.mu must be held.
func (s *Store) indexed(old, new *driver.Record) {
	if old != nil && inIndex(*old) && !(new != nil && inIndex(*new) && indexKey(*new) == indexKey(*old)) {
		s.unread.remove(old.Partition, indexKey(*old))
	}
	if new != nil && inIndex(*new) {
		s.unread.insert(new.Partition, indexKey(*new))
	}
}

// indexQuery serves, as the dynamo Store serves them from its unread
// index, a user's unread feed (UnreadOnly with NotArchived) and a Query
// with Unseen: the records of the index below q.Before and above q.After,
// at most q.Limit of them evaluated, newest first, filtered by q.Now and
// q.Category; an unread feed drops the receipts it evaluates, an unseen
// query keeps them and, on its first page, reports the partition's
// counter version. Its cost grows with the records of the index it
// evaluates, not with the partition's read ones: its pages are the dynamo
// Store's. s.mu must be held.
func (s *Store) indexQuery(q driver.Query) driver.QueryResult {
	res := driver.QueryResult{}
	if q.Unseen && q.Before == "" {
		// The first page reads the user's c#* with the records, as the
		// index holds it above them; later pages do not.
		res.Version, res.Versioned = s.versions[q.Partition], true
	}
	evaluated, last := 0, ""
	s.unread.get(q.Partition).descend(q.Before, func(key string) bool {
		if q.After != "" && key <= q.After {
			return false
		}
		id := strings.TrimSuffix(key, "r")
		rec := s.records[driver.Key{Partition: q.Partition, ID: id}].rec
		if evaluated == q.Limit {
			res.Next = last
			return false
		}
		evaluated, last = evaluated+1, id
		switch {
		case !q.Now.IsZero() && (!q.Now.Before(rec.Message.ExpiresAt) || !rec.Message.Due(q.Now)),
			q.Category != "" && rec.Message.Category != q.Category,
			rec.Receipt && !q.Unseen:
			return true
		}
		res.Records = append(res.Records, rec.Clone())
		return true
	})
	return res
}

// threadQuery serves a Query of one thread as the dynamo Store serves it
// from its thread index: the thread's records (messages and receipts)
// below q.Before and above q.After, at most q.Limit of them evaluated,
// newest first, then q's other filters. s.mu must be held.
func (s *Store) threadQuery(q driver.Query) driver.QueryResult {
	return s.evaluate(q, s.threadIDs.get(threadKey{q.Partition, q.Thread}))
}

// evaluate reads q's partition's records whose IDs ids holds, as DynamoDB
// evaluates a Query: at most q.Limit of them below q.Before and above
// q.After, newest first, keeping those q's filters keep; Next is the last
// evaluated, if more remain. s.mu must be held.
func (s *Store) evaluate(q driver.Query, ids *sortedSet) driver.QueryResult {
	res := driver.QueryResult{}
	evaluated, last := 0, ""
	ids.descend(q.Before, func(id string) bool {
		if q.After != "" && id <= q.After {
			return false
		}
		if evaluated == q.Limit {
			res.Next = last
			return false
		}
		evaluated, last = evaluated+1, id
		if rec := s.records[driver.Key{Partition: q.Partition, ID: id}].rec; q.Keeps(rec) {
			res.Records = append(res.Records, rec.Clone())
		}
		return true
	})
	return res
}

// threadKey names the records of one thread of a partition, in the thread
// index.
type threadKey struct {
	p      driver.Partition
	thread string
}

// threaded moves a record in the thread index from old's thread to new's
// (nil for none). s.mu must be held.
func (s *Store) threaded(old, new *driver.Record) {
	if old != nil && old.Message.Thread != "" && !(new != nil && new.Message.Thread == old.Message.Thread) {
		s.threadIDs.remove(threadKey{old.Partition, old.Message.Thread}, old.Message.ID)
	}
	if new != nil && new.Message.Thread != "" {
		s.threadIDs.insert(threadKey{new.Partition, new.Message.Thread}, new.Message.ID)
	}
}

package memstore

import (
	"sort"

	"github.com/stak/inbox/driver"
)

// inIndex reports whether rec is in the dynamo Store's unread index: a
// record of the library's own (another program's is not until adopted)
// in a user's partition that is a receipt, or a direct message neither
// read nor archived.
func inIndex(rec driver.Record) bool {
	return rec.Ledgered() && !rec.Partition.IsShared() && (rec.Receipt || !rec.Message.IsRead() && !rec.Message.IsArchived())
}

// indexQuery serves, as the dynamo Store serves them from its unread
// index, a user's unread feed (UnreadOnly with NotArchived) and a Query
// with Unseen: the records of the index below q.Before and above q.After,
// at most q.Limit of them evaluated, newest first, filtered by q.Now and
// q.Category; an unread feed drops the receipts it evaluates, an unseen
// query keeps them and, on its first page, reports the partition's
// counter version. Its cost
// grows with the partition's records between the bounds (in memory), its
// pages are the dynamo Store's. s.mu must be held.
func (s *Store) indexQuery(q driver.Query) driver.QueryResult {
	ids := s.ids[q.Partition]
	hi := len(ids)
	if q.Before != "" {
		hi = sort.SearchStrings(ids, q.Before)
	}
	res := driver.QueryResult{Records: make([]driver.Record, 0, min(q.Limit, hi))}
	if q.Unseen && q.Before == "" {
		// The first page reads the user's c#* with the records, as the
		// index holds it above them; later pages do not.
		res.Version, res.Versioned = s.versions[q.Partition], true
	}
	evaluated, last := 0, ""
	for i := hi - 1; i >= 0; i-- {
		rec := s.records[driver.Key{Partition: q.Partition, ID: ids[i]}].rec
		// The index holds a receipt just above its ID: the receipt of the
		// message at After is above After.
		if q.After != "" && (ids[i] < q.After || ids[i] == q.After && !rec.Receipt) {
			break
		}
		if !inIndex(rec) {
			continue
		}
		if evaluated == q.Limit {
			res.Next = last
			break
		}
		evaluated, last = evaluated+1, ids[i]
		switch {
		case !q.Now.IsZero() && (!q.Now.Before(rec.Message.ExpiresAt) || !rec.Message.Due(q.Now)),
			q.Category != "" && rec.Message.Category != q.Category,
			rec.Receipt && !q.Unseen:
			continue
		}
		res.Records = append(res.Records, rec.Clone())
	}
	return res
}

// threadQuery serves a Query of one thread as the dynamo Store serves it
// from its thread index: the thread's records (messages and receipts)
// below q.Before and above q.After, at most q.Limit of them evaluated,
// newest first, then q's other filters. s.mu must be held.
func (s *Store) threadQuery(q driver.Query) driver.QueryResult {
	ids := s.ids[q.Partition]
	hi := len(ids)
	if q.Before != "" {
		hi = sort.SearchStrings(ids, q.Before)
	}
	res := driver.QueryResult{}
	evaluated, last := 0, ""
	for i := hi - 1; i >= 0 && (q.After == "" || ids[i] > q.After); i-- {
		rec := s.records[driver.Key{Partition: q.Partition, ID: ids[i]}].rec
		if rec.Message.Thread != q.Thread {
			continue
		}
		if evaluated == q.Limit {
			res.Next = last
			break
		}
		evaluated, last = evaluated+1, ids[i]
		if q.Keeps(rec) {
			res.Records = append(res.Records, rec.Clone())
		}
	}
	return res
}

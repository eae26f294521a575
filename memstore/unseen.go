package memstore

import (
	"sort"

	"github.com/stak/inbox"
)

// unseenQuery serves a Query with Unseen (see inbox.Query): the unread,
// unarchived direct messages and the receipts of q.Partition below
// q.Before and above q.After, at most q.Limit of them evaluated, newest
// first, with the partition's counter version. s.mu must be held.
func (s *Store) unseenQuery(q inbox.Query) inbox.QueryResult {
	ids := s.ids[q.Partition]
	hi := len(ids)
	if q.Before != "" {
		hi = sort.SearchStrings(ids, q.Before)
	}
	res := inbox.QueryResult{Version: s.versions[q.Partition], Versioned: true}
	evaluated, last := 0, ""
	for i := hi - 1; i >= 0; i-- {
		if q.After != "" && ids[i] <= q.After {
			break
		}
		rec := s.records[inbox.Key{Partition: q.Partition, ID: ids[i]}].rec
		if !rec.Ledgered() || !rec.Receipt && (rec.Message.IsRead() || rec.Message.IsArchived()) {
			continue // not in the dynamo Store's index: another program's, or read or archived
		}
		if evaluated == q.Limit {
			res.Next = last
			break
		}
		evaluated, last = evaluated+1, ids[i]
		if q.Now.IsZero() || q.Now.Before(rec.Message.ExpiresAt) {
			res.Records = append(res.Records, rec.Clone())
		}
	}
	return res
}

package memstore

import (
	"maps"
	"slices"
	"strings"

	"github.com/stak/inbox/driver"
)

// storedReader is a reader item and the sequence number of its write,
// which tells its expiry entry from a stale one.
type storedReader struct {
	r   driver.Reader
	seq uint64
}

// putReader writes reader item r, replacing any at its key, and schedules
// its expiry. s.mu must be held.
func (s *Store) putReader(r driver.Reader) {
	sk := driver.ReaderSK(r.Thread, r.ID, r.User)
	if s.readers[r.Partition] == nil {
		s.readers[r.Partition] = map[string]storedReader{}
	}
	sr := storedReader{r: r, seq: s.nextSeq()}
	s.readers[r.Partition][sk] = sr
	s.expire(expiry{at: r.ExpiresAt, kind: expireReader, seq: sr.seq, key: driver.Key{Partition: r.Partition}, timed: sk})
}

// delReader deletes the reader item at r's key, if there is one and, with
// own set, if it stands for r's Entry. s.mu must be held.
func (s *Store) delReader(r driver.Reader, own bool) {
	sk := driver.ReaderSK(r.Thread, r.ID, r.User)
	if have, ok := s.readers[r.Partition][sk]; ok && (!own || have.r.Entry == r.Entry) {
		delete(s.readers[r.Partition], sk)
	}
}

// readerChanges applies what marks do to their reader items
// (driver.Mark.ReaderChange). s.mu must be held.
func (s *Store) readerChanges(marks []driver.Mark) {
	for _, mk := range marks {
		r, ok := mk.ReaderChange()
		switch {
		case !ok:
		case r.ReadAt.IsZero():
			s.delReader(r, false)
		default:
			s.putReader(r)
		}
	}
}

// readersQuery returns the reader items q selects (driver.Query.Readers),
// as the dynamo Store's Query of their sort keys: ascending, at most
// q.Limit evaluated, then those expired at q.Now dropped. s.mu must be
// held.
func (s *Store) readersQuery(q driver.Query) driver.QueryResult {
	if q.Positions {
		prefix := driver.ReaderPositionSK(q.Thread, "")
		var res driver.QueryResult
		for _, sk := range slices.Sorted(maps.Keys(s.readers[q.Partition])) {
			if strings.HasPrefix(sk, prefix) {
				res.Readers = append(res.Readers, s.readers[q.Partition][sk].r)
			}
		}
		return res
	}
	prefix := driver.ReaderPrefix + q.Thread + "#"
	lo := prefix + q.After + "$" // above every item of message After
	if strings.Contains(q.After, "#") {
		lo = prefix + q.After + "\x00" // above the position After
	}
	if q.After == "" {
		lo = prefix
	}
	hi := prefix + q.Before // below every item of message Before
	if q.Before == "" {
		hi = prefix + "~" // below the position items
	}
	var sks []string
	for sk := range s.readers[q.Partition] {
		if sk >= lo && sk < hi {
			sks = append(sks, sk)
		}
	}
	slices.Sort(sks)
	var res driver.QueryResult
	for i, sk := range sks {
		if i == q.Limit {
			res.Next = strings.TrimPrefix(sks[i-1], prefix)
			break
		}
		r := s.readers[q.Partition][sk].r
		if !q.Now.IsZero() && !q.Now.Before(r.ExpiresAt) {
			continue
		}
		res.Readers = append(res.Readers, r)
	}
	return res
}

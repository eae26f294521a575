package memstore

import (
	"slices"
	"time"

	"github.com/stak/inbox/driver"
)

// ledgerIndex holds the ledger entries of every partition, by key, and
// each partition's entry names in order (the order of their sort keys:
// by expiry, then ID), so that Stats finds the entries expired by a time
// at the cost of those entries, not of the partition's whole ledger, as a
// DynamoDB range query does. It is guarded by the Store's mutex.
type ledgerIndex struct {
	entries map[entryKey]driver.Record
	names   map[driver.Partition][]string // sorted
}

func newLedgerIndex() *ledgerIndex {
	return &ledgerIndex{entries: map[entryKey]driver.Record{}, names: map[driver.Partition][]string{}}
}

// has reports whether the entry at k exists.
func (l *ledgerIndex) has(k entryKey) bool {
	_, ok := l.entries[k]
	return ok
}

// put writes entry e at k.
func (l *ledgerIndex) put(k entryKey, e driver.Record) {
	if _, ok := l.entries[k]; !ok {
		insertSorted(l.names, k.p, k.entry)
	}
	l.entries[k] = e
}

// del deletes the entry at k, if any.
func (l *ledgerIndex) del(k entryKey) {
	if _, ok := l.entries[k]; !ok {
		return
	}
	delete(l.entries, k)
	removeSorted(l.names, k.p, k.entry)
}

// insertSorted inserts v, in order, into m[p], a sorted slice.
func insertSorted(m map[driver.Partition][]string, p driver.Partition, v string) {
	s := m[p]
	i, _ := slices.BinarySearch(s, v)
	m[p] = slices.Insert(s, i, v)
}

// removeSorted removes v, if there, from m[p], a sorted slice, and drops
// m[p] when it is left empty.
func removeSorted(m map[driver.Partition][]string, p driver.Partition, v string) {
	s := m[p]
	if i, ok := slices.BinarySearch(s, v); ok {
		s = slices.Delete(s, i, i+1)
	}
	if len(s) == 0 {
		delete(m, p)
	} else {
		m[p] = s
	}
}

// expired returns p's entries that expire at or before now, by expiry
// then ID.
func (l *ledgerIndex) expired(p driver.Partition, now time.Time) []driver.Record {
	names := l.names[p]
	n, _ := slices.BinarySearch(names, driver.LedgerBound(now))
	var out []driver.Record
	for _, name := range names[:n] {
		if e := l.entries[entryKey{p: p, entry: name}]; !now.Before(e.Message.ExpiresAt) {
			out = append(out, e)
		}
	}
	return out
}

package memstore

import (
	"slices"
	"time"

	"github.com/stak/inbox"
)

// ledgerIndex holds the ledger entries of every partition, by key, and
// each partition's entry names in order (the order of their sort keys:
// by expiry, then ID), so that Stats finds the entries expired by a time
// at the cost of those entries, not of the partition's whole ledger, as a
// DynamoDB range query does. It is guarded by the Store's mutex.
type ledgerIndex struct {
	entries map[entryKey]inbox.Record
	names   map[inbox.Partition][]string // sorted
}

func newLedgerIndex() *ledgerIndex {
	return &ledgerIndex{entries: map[entryKey]inbox.Record{}, names: map[inbox.Partition][]string{}}
}

// has reports whether the entry at k exists.
func (l *ledgerIndex) has(k entryKey) bool {
	_, ok := l.entries[k]
	return ok
}

// put writes entry e at k.
func (l *ledgerIndex) put(k entryKey, e inbox.Record) {
	if _, ok := l.entries[k]; !ok {
		names := l.names[k.p]
		i, _ := slices.BinarySearch(names, k.entry)
		l.names[k.p] = slices.Insert(names, i, k.entry)
	}
	l.entries[k] = e
}

// del deletes the entry at k, if any.
func (l *ledgerIndex) del(k entryKey) {
	if _, ok := l.entries[k]; !ok {
		return
	}
	delete(l.entries, k)
	names := l.names[k.p]
	if i, ok := slices.BinarySearch(names, k.entry); ok {
		names = slices.Delete(names, i, i+1)
	}
	if len(names) == 0 {
		delete(l.names, k.p)
	} else {
		l.names[k.p] = names
	}
}

// expired returns p's entries that expire at or before now, by expiry
// then ID.
func (l *ledgerIndex) expired(p inbox.Partition, now time.Time) []inbox.Record {
	names := l.names[p]
	n, _ := slices.BinarySearch(names, inbox.LedgerBound(now))
	var out []inbox.Record
	for _, name := range names[:n] {
		if e := l.entries[entryKey{p: p, entry: name}]; !now.Before(e.Message.ExpiresAt) {
			out = append(out, e)
		}
	}
	return out
}

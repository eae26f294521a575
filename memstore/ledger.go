package memstore

import (
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
	names   sets[driver.Partition]
}

func newLedgerIndex() *ledgerIndex {
	return &ledgerIndex{entries: map[entryKey]driver.Record{}, names: sets[driver.Partition]{}}
}

// has reports whether the entry at k exists.
func (l *ledgerIndex) has(k entryKey) bool {
	_, ok := l.entries[k]
	return ok
}

// put writes entry e at k.
func (l *ledgerIndex) put(k entryKey, e driver.Record) {
	if _, ok := l.entries[k]; !ok {
		l.names.insert(k.p, k.entry)
	}
	l.entries[k] = e
}

// del deletes the entry at k, if any.
func (l *ledgerIndex) del(k entryKey) {
	if _, ok := l.entries[k]; !ok {
		return
	}
	delete(l.entries, k)
	l.names.remove(k.p, k.entry)
}

// expired returns p's entries that expire at or before now, by expiry
// then ID.
func (l *ledgerIndex) expired(p driver.Partition, now time.Time) []driver.Record {
	bound := driver.LedgerBound(now)
	var out []driver.Record
	l.names.get(p).ascend("", func(name string) bool {
		if name >= bound {
			return false
		}
		if e := l.entries[entryKey{p: p, entry: name}]; !now.Before(e.Message.ExpiresAt) {
			out = append(out, e)
		}
		return true
	})
	return out
}

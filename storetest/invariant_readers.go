package storetest

import (
	"slices"
	"sort"
	"time"

	"github.com/stak/inbox/driver"
)

// readerKey names a user's reader item of a shared partition's message.
type readerKey struct {
	p        driver.Partition // the shared partition
	id, user string
}

// readsOf reports whether ledger entry en, a receipt's, counts it read:
// read and not deleted (a deleted receipt is hidden, whatever other marks
// it carries).
func readsOf(en driver.Record) bool {
	return !en.Message.ReadAt.IsZero() && en.DeletedAt.IsZero()
}

// checkReaders checks the reader items (driver.Reader) of the shared
// partitions of parts against the receipts' ledger entries in the user
// partitions of parts, given each partition's records (recs) and its
// whole ledger (stats read to farFuture, sts):
//
//   - every item is of its partition and thread, and expires with its
//     message, as a record, ledger entry or tombstone of the partition
//     tells; one whose message none knows has expired;
//   - for each thread's broadcast that stands and has not expired, a user
//     has an item exactly when her receipt's ledger entry counts it read
//     (driver.Record.Counted's read, not deleted): an item with the
//     receipt's Entry and ReadAt. Allowed: no item for the sender's
//     read put with the message (PutMessage's receipts have none, and
//     ReadBy never lists her anyway; a Store test may put others',
//     env.putRead). Allowed transiently: an item of a receipt that is gone while its removal waits
//     for the stream (its ledger entry, read, is still there: the
//     removal deletes the item with it); another program's receipt not
//     yet adopted, or its read not yet handled by the stream (the ledger
//     entry counts other marks than the record carries), has the item its
//     entry says, none if it has no entry.
//
// Items of a broadcast that has expired, or is gone (redacted, deleted
// by another program or by TTL), are allowed: they expire with it, and
// Inbox.ReadBy leaves them out (expired, or a tombstone), which the
// property tests check through ReadBy.
func (e *env) checkReaders(parts []driver.Partition, recs map[driver.Partition][]driver.Record, sts map[driver.Partition]driver.Stats) {
	e.t.Helper()
	now := e.clock.Now()
	type msgKey struct {
		p  driver.Partition
		id string
	}
	broadcasts := map[msgKey]driver.Record{}
	expiry := map[msgKey]time.Time{}
	threads := map[driver.Partition]map[string]bool{}
	thread := func(p driver.Partition, t string) {
		if t == "" {
			return
		}
		if threads[p] == nil {
			threads[p] = map[string]bool{}
		}
		threads[p][t] = true
	}
	current := map[readerKey]driver.Record{}   // a receipt that stands, with its ledger entry
	entries := map[readerKey][]driver.Record{} // every ledger entry of a user's receipts of a message
	for _, p := range parts {
		st := sts[p]
		if p.IsShared() {
			for _, r := range recs[p] {
				k := msgKey{p, r.Message.ID}
				broadcasts[k], expiry[k] = r, r.Message.ExpiresAt
				thread(p, r.Message.Thread)
			}
			for _, en := range append(slices.Clone(st.Expired), st.Tombstones...) {
				expiry[msgKey{p, en.Message.ID}] = en.Message.ExpiresAt
				thread(p, en.Message.Thread)
			}
			continue
		}
		byEntry := map[string]driver.Record{}
		for _, en := range st.Expired {
			if !en.Receipt {
				continue
			}
			shared := p.Scope().Public()
			if g := en.Message.Audience.Group; g != "" {
				shared = p.Scope().Group(g)
			}
			k := readerKey{shared, en.Message.ID, p.User}
			entries[k] = append(entries[k], en)
			byEntry[en.Entry] = en
			thread(shared, en.Message.Thread)
		}
		for _, r := range recs[p] {
			if _, ok := byEntry[r.Entry]; r.Receipt && ok {
				shared := p.Scope().Public()
				if g := r.Message.Audience.Group; g != "" {
					shared = p.Scope().Group(g)
				}
				current[readerKey{shared, r.Message.ID, p.User}] = r
			}
		}
	}
	items := map[readerKey]driver.Reader{}
	for _, p := range parts {
		if !p.IsShared() {
			continue
		}
		ts := make([]string, 0, len(threads[p]))
		for t := range threads[p] {
			ts = append(ts, t)
		}
		sort.Strings(ts)
		for _, t := range ts {
			for _, it := range e.readerItems(p, t) {
				k := msgKey{p, it.ID}
				exp, known := expiry[k]
				switch {
				case it.Partition != p || it.Thread != t:
					e.t.Errorf("invariant: reader item %s/%s of %s, listed with thread %s of %s, is of thread %s of %s", it.ID, it.User, p.PK(), t, p.PK(), it.Thread, it.Partition.PK())
				case known && !it.ExpiresAt.Equal(exp):
					e.t.Errorf("invariant: reader item %s/%s of %s expires at %v, its message at %v", it.ID, it.User, p.PK(), it.ExpiresAt, exp)
				case !known && now.Before(it.ExpiresAt):
					e.t.Errorf("invariant: reader item %s/%s of %s (thread %s) expires at %v, but %s has no record, ledger entry or tombstone of its message", it.ID, it.User, p.PK(), t, it.ExpiresAt, p.PK())
				}
				if b, ok := broadcasts[k]; ok && b.Message.Thread != t {
					e.t.Errorf("invariant: reader item %s/%s of %s is of thread %s, its message of thread %q", it.ID, it.User, p.PK(), t, b.Message.Thread)
				}
				items[readerKey{p, it.ID, it.User}] = it
			}
		}
	}
	// Each live thread's broadcast, and each user with a receipt entry or
	// an item of it.
	users := map[msgKey]map[string]bool{}
	for _, m := range []map[readerKey]bool{keysOf(entries), keysOf(items)} {
		for k := range m {
			mk := msgKey{k.p, k.id}
			if users[mk] == nil {
				users[mk] = map[string]bool{}
			}
			users[mk][k.user] = true
		}
	}
	for mk, us := range users {
		b, ok := broadcasts[mk]
		if !ok || b.Message.Thread == "" || !now.Before(b.Message.ExpiresAt) {
			continue
		}
		for u := range us {
			k := readerKey{mk.p, mk.id, u}
			it, has := items[k]
			r, stands := current[k]
			var en driver.Record
			for _, x := range entries[k] {
				if stands && x.Entry == r.Entry {
					en = x
				}
			}
			// An entry of a receipt that is gone, read: its removal,
			// still to come, deletes the item.
			pendingRead := func(entry string) bool {
				return slices.ContainsFunc(entries[k], func(x driver.Record) bool {
					return x.Entry == entry && (!stands || x.Entry != r.Entry) && readsOf(x)
				})
			}
			want := stands && readsOf(en)
			switch {
			case want && !has:
				if !e.putRead[k] && (u != b.Message.Sender || !en.Message.ReadAt.Equal(b.Message.DeliveredAt)) {
					e.t.Errorf("invariant: %s's receipt of %s of %s (thread %s, entry %s) is read, but there is no reader item", u, mk.id, mk.p.PK(), b.Message.Thread, r.Entry)
				}
			case want && (it.Entry != r.Entry || !it.ReadAt.Equal(en.Message.ReadAt)):
				e.t.Errorf("invariant: %s's reader item of %s of %s stands for entry %s read at %v, her receipt's entry is %s read at %v", u, mk.id, mk.p.PK(), it.Entry, it.ReadAt, r.Entry, en.Message.ReadAt)
			case !want && has && !pendingRead(it.Entry):
				e.t.Errorf("invariant: %s has a reader item of %s of %s (entry %s, read at %v), but her receipt is not read (receipt standing %v, entry %q: read %v, deleted %v; %d entries)",
					u, mk.id, mk.p.PK(), it.Entry, it.ReadAt, stands, en.Entry, !en.Message.ReadAt.IsZero(), !en.DeletedAt.IsZero(), len(entries[k]))
			}
		}
	}
}

// keysOf returns the keys of m as a set.
func keysOf[V any](m map[readerKey]V) map[readerKey]bool {
	out := make(map[readerKey]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// readerItems returns every reader item of thread t in shared partition
// p, expired or not, a page at a time.
func (e *env) readerItems(p driver.Partition, t string) []driver.Reader {
	e.t.Helper()
	q := driver.Query{Partition: p, Readers: true, Thread: t, Limit: 100}
	var out []driver.Reader
	for pages := 0; ; pages++ {
		res, err := e.store.Query(e.ctx, q)
		if err != nil || pages > 10000 {
			e.t.Fatalf("Query(readers of %s of %s, after %q): %v", t, p.PK(), q.After, err)
		}
		out = append(out, res.Readers...)
		if res.Next == "" {
			return out
		}
		q.After = res.Next
	}
}

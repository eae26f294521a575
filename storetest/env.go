package storetest

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/oklog/ulid/v2"
	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// env is one test's world: a fresh store, a clock, an Inbox over both, and
// the partitions the test used (checked against a recount at the end). Its
// helpers fail the test on any unexpected error. Only the goroutine running
// the test may use it, except for the Inbox (safe for concurrent use).
type env struct {
	t     *testing.T
	ctx   context.Context
	clock *Clock
	store driver.Store
	ib    *inbox.Inbox
	scope driver.Scope
	ids   *ulid.MonotonicEntropy
	used  map[driver.Partition]bool
	seen  map[driver.Partition]string // the watermarks of the users the test marked seen
	// activity holds the latest ID the test published in each thread.
	activity map[threadOf]string
	// putRead holds the receipts the test put read with their message
	// (PutMessage), which have no reader item: the Inbox puts only its
	// sender's (see checkReaders).
	putRead map[readerKey]bool
}

// threadOf names a thread for env.activity: a user's direct messages of
// it (p the user's partition, group ""), or a group's (p zero, group the
// group or PublicGroup).
type threadOf struct {
	p             driver.Partition
	group, thread string
}

// active records that message id was published in thread t of group g
// (PublicGroup for everyone, "" for the direct messages of users).
func (e *env) active(m driver.Message, g string, users ...driver.Partition) {
	if m.Thread == "" {
		return
	}
	keys := []threadOf{{group: g, thread: m.Thread}}
	if g == "" {
		keys = keys[:0]
		for _, p := range users {
			keys = append(keys, threadOf{p: p, thread: m.Thread})
		}
	}
	for _, k := range keys {
		e.activity[k] = max(e.activity[k], m.ID)
	}
}

// newEnv returns an env on a fresh store from newStore; seed makes the
// Inbox's message IDs and the env's own IDs deterministic. The Inbox's
// shared-partition cache is off, since tests write records behind its
// back, unless opts turn it on.
func newEnv(t *testing.T, newStore NewStore, seed uint64, opts ...inbox.Option) *env {
	return newEnvOver(t, newStore, seed, nil, opts...)
}

// newEnvOver is newEnv with the Inbox over wrap(store) (the store itself
// if wrap is nil); env.store is the store, unwrapped.
func newEnvOver(t *testing.T, newStore NewStore, seed uint64, wrap func(driver.Store) driver.Store, opts ...inbox.Option) *env {
	clock := NewClock(startTime())
	store := newStore(t, clock.Now)
	over := store
	if wrap != nil {
		over = wrap(store)
	}
	e := &env{
		t:     t,
		ctx:   t.Context(),
		clock: clock,
		store: store,
		ib: inbox.New(over, append([]inbox.Option{inbox.WithClock(clock.Now), inbox.WithEntropy(rand.NewChaCha8(seedBytes(seed, 1))),
			inbox.WithSharedCache(0)}, opts...)...),
		scope: driver.Scope{Tenant: "acme", Inbox: "alerts"},
		ids:   ulid.Monotonic(rand.NewChaCha8(seedBytes(seed, 2)), 0),
		used:  map[driver.Partition]bool{},
		seen:  map[driver.Partition]string{},

		activity: map[threadOf]string{},
		putRead:  map[readerKey]bool{},
	}
	e.used[e.pub()] = true
	return e
}

// seedBytes derives a ChaCha8 seed from seed and a stream number.
func seedBytes(seed, stream uint64) [32]byte {
	var b [32]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	binary.LittleEndian.PutUint64(b[8:], stream)
	return b
}

// user returns user id of the env's scope and notes its partition as used.
func (e *env) user(id string) driver.User { return e.userIn(e.scope, id) }

// userIn returns user id of scope s and notes its partition and s's public
// partition as used.
func (e *env) userIn(s driver.Scope, id string) driver.User {
	u := s.User(id)
	e.used[partitionOf(u)] = true
	e.used[publicOf(s)] = true
	return u
}

// member returns user id of the env's scope in groups, and notes the
// partitions of the user and the groups as used.
func (e *env) member(id string, groups ...string) driver.User {
	for _, g := range groups {
		e.used[groupOf(e.scope, g)] = true
	}
	return e.user(id).InGroups(groups...)
}

// part returns the partition of user id in the env's scope, noted as used.
func (e *env) part(id string) driver.Partition { return partitionOf(e.user(id)) }

// pub returns the public partition of the env's scope.
func (e *env) pub() driver.Partition { return publicOf(e.scope) }

// partitionOf returns u's partition.
func partitionOf(u driver.User) driver.Partition {
	return driver.Partition{Tenant: u.Scope.Tenant, Inbox: u.Scope.Inbox, User: u.ID}
}

// publicOf returns the public partition of s.
func publicOf(s driver.Scope) driver.Partition {
	return groupOf(s, driver.PublicGroup)
}

// groupOf returns the partition of group g of s.
func groupOf(s driver.Scope, g string) driver.Partition {
	return driver.Partition{Tenant: s.Tenant, Inbox: s.Inbox, Group: g}
}

// newID returns a new ULID at the clock's time, above every earlier one.
func (e *env) newID() string {
	return ulid.MustNew(ulid.Timestamp(e.clock.Now()), e.ids).String()
}

// message returns a new message record in p (a broadcast if p is public)
// of category cat, delivered now and expiring ttl later. It is not stored.
func (e *env) message(p driver.Partition, cat string, ttl time.Duration) driver.Record {
	now := e.clock.Now()
	id := e.newID()
	aud := driver.Audience{Kind: driver.AudienceUsers, Label: "on-call", UIDs: []string{p.User}}
	switch {
	case p.IsPublic():
		aud = driver.Audience{Kind: driver.AudienceEveryone, Label: "everyone"}
	case p.IsShared():
		aud = driver.Audience{Kind: driver.AudienceGroup, Label: "team", Group: p.Group}
	}
	return driver.Record{Partition: p, Entry: driver.LedgerSK(now.Add(ttl), id, "storetest"), Message: driver.Message{
		ID:          id,
		Sender:      "storetest",
		Audience:    aud,
		Category:    cat,
		Title:       "title " + id,
		Body:        "body " + id,
		CTAURI:      "https://example.com/m/" + id,
		ReceivedAt:  now.Add(-time.Minute),
		DeliveredAt: now,
		ExpiresAt:   now.Add(ttl),
	}}
}

// someEntry stands for a ledger entry the suite cannot know (one the Inbox
// made): records compare with recordOpts, to which any Entry equals any
// other but "".
const someEntry = "some entry"

// receiptEntry returns the ledger entry of p's receipt of broadcast b.
func receiptEntry(b driver.Record) string {
	return driver.LedgerSK(b.Message.ExpiresAt, b.Message.ID, "receipt")
}

// receipt returns the receipt record of user partition p for broadcast b,
// read at readAt.
func receipt(p driver.Partition, b driver.Record, readAt time.Time) driver.Record {
	return driver.Record{Partition: p, Receipt: true, Entry: receiptEntry(b), Message: driver.Message{
		ID: b.Message.ID, Category: b.Message.Category, Thread: b.Message.Thread, ReadAt: readAt, ExpiresAt: b.Message.ExpiresAt,
		Audience: driver.Audience{Group: b.Message.Audience.Group},
	}}
}

// delta returns the changes to p's total counter and, if cat is set, to its
// category counter.
func delta(p driver.Partition, cat string, published, read int64) []driver.Counter {
	out := []driver.Counter{{Partition: p, Published: published, Read: read}}
	if cat != "" {
		out = append(out, driver.Counter{Partition: p, Category: cat, Published: published, Read: read})
	}
	return out
}

// readDelta returns the changes to p's counters of reading broadcast b:
// read +1 in the total and b's category, and in the group's read counters
// for a group's broadcast.
func readDelta(p driver.Partition, b driver.Record) []driver.Counter {
	out := delta(p, b.Message.Category, 0, 1)
	if g := b.Message.Audience.Group; g != "" {
		for _, c := range delta(p, b.Message.Category, 0, 1) {
			c.Group = g
			out = append(out, c)
		}
	}
	return out
}

// put stores rec with the counter changes the Inbox makes with it
// (driver.PutDeltas: published +1, and its pending entry's if it is
// scheduled).
func (e *env) put(rec driver.Record) {
	e.t.Helper()
	if err := e.store.PutMessage(e.ctx, rec, driver.PutDeltas(rec)); err != nil {
		e.t.Fatalf("PutMessage(%s/%s): %v", rec.Partition.PK(), rec.Message.ID, err)
	}
}

// markFenced applies marks, of user partition p, with deltas and the changes
// they make to p's Above (driver.AboveDeltas), under a fence of p's
// watermark, as the Inbox applies its marks.
func (e *env) markFenced(p driver.Partition, marks []driver.Mark, deltas []driver.Counter) error {
	e.t.Helper()
	if p.IsShared() {
		return e.store.Mark(e.ctx, marks, deltas)
	}
	w := e.stats(p, e.clock.Now()).Fence
	var above []driver.Counter
	for _, mk := range marks {
		above = append(above, driver.AboveDeltas(mk, w)...)
	}
	if len(above) == 0 {
		return e.store.Mark(e.ctx, marks, deltas)
	}
	fence := driver.Mark{Key: driver.Key{Partition: p}, Now: e.clock.Now(), Seen: w, Fence: true}
	return e.store.Mark(e.ctx, append([]driver.Mark{fence}, marks...), driver.MergeCounters(append(slices.Clone(deltas), above...)))
}

// markDirect marks direct message rec read at the clock's time, with read
// +1 on its counters, and returns rec as now stored.
func (e *env) markDirect(rec driver.Record) driver.Record {
	e.t.Helper()
	now := e.clock.Now()
	if err := e.markFenced(rec.Partition, []driver.Mark{directMark(rec, now, now)}, delta(rec.Partition, rec.Message.Category, 0, 1)); err != nil {
		e.t.Fatalf("MarkRead(%s/%s): %v", rec.Partition.PK(), rec.Message.ID, err)
	}
	rec.Message.ReadAt = now
	return rec
}

// setMarks changes the marks of direct message *rec to to, with no counter
// changes (the query contract does not look at counters), and updates
// *rec.
func (e *env) setMarks(rec *driver.Record, to driver.State) {
	e.t.Helper()
	mk := directMark(*rec, time.Time{}, e.clock.Now())
	mk.From, mk.To = rec.State(), to
	if err := e.markFenced(rec.Partition, []driver.Mark{mk}, driver.MarkDeltas(mk)); err != nil {
		e.t.Fatalf("Mark(%s/%s to %+v): %v", rec.Partition.PK(), rec.Message.ID, to, err)
	}
	rec.Message.ReadAt, rec.Message.ArchivedAt, rec.Timed = to.ReadAt, to.ArchivedAt, timedAfter(mk)
}

// readPair stores, in user partition p, a read direct message of category
// billing and, in the public partition, a news broadcast p has read, both
// expiring in an hour; it returns the message, the broadcast and p's
// receipt.
func (e *env) readPair(p driver.Partition) (direct, broadcast, receipt driver.Record) {
	direct = e.message(p, "billing", time.Hour)
	e.put(direct)
	direct = e.markDirect(direct)
	broadcast = e.message(e.pub(), "news", time.Hour)
	e.put(broadcast)
	return direct, broadcast, e.markReceipt(p, broadcast)
}

// markReceipt creates user partition p's receipt for broadcast b at the
// clock's time, with read +1 on p's counters (and on the group's, for a
// group's broadcast), and returns the receipt.
func (e *env) markReceipt(p driver.Partition, b driver.Record) driver.Record {
	e.t.Helper()
	now := e.clock.Now()
	if err := e.markFenced(p, []driver.Mark{receiptMark(p, b, now, now)}, readDelta(p, b)); err != nil {
		e.t.Fatalf("MarkRead(receipt %s/%s): %v", p.PK(), b.Message.ID, err)
	}
	return receipt(p, b, now)
}

// receiptMark returns the mark creating p's receipt for broadcast b.
func receiptMark(p driver.Partition, b driver.Record, readAt, now time.Time) driver.Mark {
	return driver.Mark{
		Key:       driver.Key{Partition: p, ID: b.Message.ID},
		To:        driver.State{ReadAt: readAt},
		Now:       now,
		Receipt:   true,
		Shared:    b.Partition,
		Category:  b.Message.Category,
		Thread:    b.Message.Thread,
		ExpiresAt: b.Message.ExpiresAt,
		Entry:     receiptEntry(b),
	}
}

// directMark returns the mark of direct message rec read at readAt, which
// keeps its ledger entry.
func directMark(rec driver.Record, readAt, now time.Time) driver.Mark {
	return driver.Mark{Key: rec.Key(), To: driver.State{ReadAt: readAt}, Now: now, Category: rec.Message.Category, ExpiresAt: rec.Message.ExpiresAt, Entry: rec.Entry, Timed: rec.Timed}
}

// timedAfter returns the Timed the record of mark mk notes after it: the
// key of the timed entry it writes, or none.
func timedAfter(mk driver.Mark) string {
	puts, _ := mk.TimedWrites()
	for _, e := range puts {
		return driver.TimedKeyOf(e)
	}
	return ""
}

// get returns the records at keys, as GetRecords returns them, sorted by
// partition key and ID.
func (e *env) get(keys ...driver.Key) []driver.Record {
	e.t.Helper()
	recs, err := e.store.GetRecords(e.ctx, keys)
	if err != nil {
		e.t.Fatalf("GetRecords: %v", err)
	}
	sortRecords(recs)
	for _, r := range recs {
		e.checkStored(r)
	}
	return recs
}

// sorted returns recs sorted as get returns them.
func sorted(recs ...driver.Record) []driver.Record {
	out := append([]driver.Record(nil), recs...)
	sortRecords(out)
	return out
}

// sortRecords sorts by partition key, then ID.
func sortRecords(recs []driver.Record) {
	sort.Slice(recs, func(i, j int) bool {
		if pi, pj := recs[i].Partition.PK(), recs[j].Partition.PK(); pi != pj {
			return pi < pj
		}
		return recs[i].Message.ID < recs[j].Message.ID
	})
}

// records returns every record of p, expired or not, newest first, paging
// through Store.Query; it checks the order and that no record repeats.
func (e *env) records(p driver.Partition) []driver.Record {
	e.t.Helper()
	var out []driver.Record
	q := driver.Query{Partition: p, Limit: 100}
	for pages := 0; ; pages++ {
		if pages > 10000 {
			e.t.Fatalf("Query(%s): more than 10000 pages", p.PK())
		}
		res, err := e.store.Query(e.ctx, q)
		if err != nil {
			e.t.Fatalf("Query(%s, before %q): %v", p.PK(), q.Before, err)
		}
		for _, r := range res.Records {
			if q.Before != "" && r.Message.ID >= q.Before {
				e.t.Fatalf("Query(%s, before %q) returned %s, not below Before", p.PK(), q.Before, r.Message.ID)
			}
			if n := len(out); n > 0 && r.Message.ID >= out[n-1].Message.ID {
				e.t.Fatalf("Query(%s): %s after %s, not in descending order", p.PK(), r.Message.ID, out[n-1].Message.ID)
			}
			if r.Partition != p {
				e.t.Fatalf("Query(%s) returned a record of partition %s", p.PK(), r.Partition.PK())
			}
			e.checkStored(r)
			out = append(out, r)
		}
		if res.Next == "" {
			return out
		}
		if q.Before != "" && res.Next >= q.Before {
			e.t.Fatalf("Query(%s, before %q): Next %q does not move down", p.PK(), q.Before, res.Next)
		}
		q.Before = res.Next
	}
}

// checkStored checks what every record read back must satisfy: times in
// UTC at whole seconds, and no read state in the public partition.
func (e *env) checkStored(r driver.Record) {
	e.t.Helper()
	m := r.Message
	for name, tm := range map[string]time.Time{"ReceivedAt": m.ReceivedAt, "DeliveredAt": m.DeliveredAt, "ReadAt": m.ReadAt, "ExpiresAt": m.ExpiresAt} {
		if tm.IsZero() {
			continue
		}
		if tm.Location() != time.UTC || tm.Nanosecond() != 0 {
			e.t.Errorf("record %s/%s: %s %v is not a whole second in UTC", r.Partition.PK(), m.ID, name, tm)
		}
	}
	if r.Partition.IsShared() && (r.Receipt || m.IsRead()) {
		e.t.Errorf("record %s/%s: a receipt or read message in a shared partition: %+v", r.Partition.PK(), m.ID, r)
	}
}

// stats returns Stats(p, at); it checks that its counters, entries and
// tombstones are all of p.
func (e *env) stats(p driver.Partition, at time.Time) driver.Stats {
	e.t.Helper()
	st, err := e.store.Stats(e.ctx, driver.StatsQuery{Partition: p, Now: at, Threads: true})
	if err != nil {
		e.t.Fatalf("Stats(%s): %v", p.PK(), err)
	}
	for _, r := range append(st.Expired, st.Tombstones...) {
		if r.Partition != p {
			e.t.Errorf("Stats(%s) returned an entry or tombstone of %s", p.PK(), r.Partition.PK())
		}
		if r.Message.ExpiresAt.Location() != time.UTC || r.Message.ExpiresAt.Nanosecond() != 0 {
			e.t.Errorf("Stats(%s): entry %s expires at %v, not a whole second in UTC", p.PK(), r.Message.ID, r.Message.ExpiresAt)
		}
	}
	return st
}

// timedEntries returns p's stored timed entries (see driver.TimedKey), the
// pending ones if pending, else the snooze entries, by time.
func (e *env) timedEntries(p driver.Partition, pending bool) []driver.Record {
	e.t.Helper()
	var out []driver.Record
	for _, t := range e.stats(p, farFuture).Due {
		if t.Message.DeliverAt.IsZero() != pending {
			out = append(out, t)
		}
	}
	return out
}

// wantSnoozedTallies checks that p's counters' Snoozed tallies are want's
// tallies (given as counters' own: published, read, ...), no other
// counter having any.
func (e *env) wantSnoozedTallies(p driver.Partition, want ...driver.Counter) {
	e.t.Helper()
	got := map[string]driver.Tallies{}
	for _, c := range e.counters(p) {
		if c.Snoozed != (driver.Tallies{}) {
			got[c.SK()] = c.Snoozed
		}
	}
	w := map[string]driver.Tallies{}
	for _, c := range want {
		w[c.SK()] = c.Own()
	}
	if diff := cmp.Diff(w, got); diff != "" {
		e.t.Errorf("snoozed tallies of %s (-want +got):\n%s", p.PK(), diff)
	}
}

// ledger returns every ledger entry of p.
func (e *env) ledger(p driver.Partition) []driver.Record {
	e.t.Helper()
	return e.stats(p, farFuture).Expired
}

// farFuture is after every expiry the suite uses: Stats with it returns a
// partition's whole ledger.
var farFuture = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)

// counters returns p's stats records sorted by category; it checks that
// each is in p and that no category repeats.
func (e *env) counters(p driver.Partition) []driver.Counter {
	e.t.Helper()
	cs := e.stats(p, e.clock.Now()).Counters
	sk := driver.Counter.SK
	sort.Slice(cs, func(i, j int) bool { return sk(cs[i]) < sk(cs[j]) })
	for i, c := range cs {
		if c.Partition != p {
			e.t.Errorf("Counters(%s) returned a counter of %s", p.PK(), c.Partition.PK())
		}
		if i > 0 && sk(cs[i-1]) == sk(c) {
			e.t.Errorf("Counters(%s) returned %s twice", p.PK(), sk(c))
		}
	}
	return cs
}

// wantCounters checks that p's stats records are exactly want.
func (e *env) wantCounters(p driver.Partition, want ...driver.Counter) {
	e.t.Helper()
	got := e.counters(p)
	want = slices.Clone(want)
	for _, cs := range [][]driver.Counter{got, want} {
		for i := range cs {
			// The tallies of timed entries and above the watermark are
			// the invariant's (checkInvariant) and their own tests'.
			cs[i].Snoozed, cs[i].Pending, cs[i].Above = driver.Tallies{}, driver.Tallies{}, 0
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i].SK() < want[j].SK() })
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		e.t.Errorf("Counters(%s) (-want +got):\n%s", p.PK(), diff)
	}
}

// counter returns a stats record value.
func counter(p driver.Partition, cat string, published, read int64) driver.Counter {
	return driver.Counter{Partition: p, Category: cat, Published: published, Read: read}
}

// recordOpts compare records: an empty audience UID list equals a nil one,
// and someEntry equals any ledger entry but "".
func recordOpts() cmp.Options {
	field := func(name string) func(cmp.Path) bool {
		return func(p cmp.Path) bool {
			sf, ok := p.Last().(cmp.StructField)
			return ok && sf.Name() == name
		}
	}
	return cmp.Options{
		// Checked by Store/Counted: the marks the entry counts, which
		// the Store derives.
		cmpopts.IgnoreFields(driver.Record{}, "Counted"),
		cmp.FilterPath(field("UIDs"), cmpopts.EquateEmpty()),
		cmp.FilterPath(field("Entry"), cmp.Comparer(func(a, b string) bool {
			return a == b || (a == someEntry) != (b == someEntry) && a != "" && b != ""
		})),
	}
}

// wantRecords checks that got equals want exactly.
func (e *env) wantRecords(what string, want, got []driver.Record) {
	e.t.Helper()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	if diff := cmp.Diff(want, got, recordOpts()); diff != "" {
		e.t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// keys returns the keys of recs.
func keys(recs ...driver.Record) []driver.Key {
	out := make([]driver.Key, len(recs))
	for i, r := range recs {
		out[i] = r.Key()
	}
	return out
}

package memstore

import (
	"container/heap"
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/stak/inbox/driver"
)

// Store is an in-memory driver.Store. Create it with New. It is safe for
// concurrent use by multiple goroutines.
type Store struct {
	mu    sync.Mutex
	clock func() time.Time
	lag   bool   // removals wait for Deliver, as behind a lagging stream
	seq   uint64 // last sequence number given to a stored entry

	records    map[driver.Key]*storedRecord
	ids        sets[driver.Partition] // each partition's record IDs
	unread     sets[driver.Partition] // the unread index: see indexKey
	threadIDs  sets[threadKey]        // the thread index: each thread's record IDs
	ledger     *ledgerIndex
	tombstones map[driver.Partition]map[string]*storedRecord // by message ID
	readers    map[driver.Partition]map[string]storedReader  // reader items, by sort key
	timed      map[driver.Partition]map[string]driver.Record // timed entries, by sort key
	timedKeys  sets[driver.Partition]                        // each partition's TimedKeys
	snoozeIDs  sets[driver.Partition]                        // its snooze entries': <id>\x00<TimedKey>
	legacy     sets[driver.Partition]                        // its timed entries of an earlier version: their keys
	fence      map[driver.Partition]string                   // the watermarks Above is kept for
	days       map[driver.Partition]map[time.Time]*driver.DayBucket
	hours      map[driver.Partition]map[time.Time]*driver.HourBucket
	activity   sets[driver.Partition]                         // each partition's threads by activity: driver.ActivityKey
	counters   map[driver.Partition]map[string]driver.Counter // by CounterSK
	plain      map[driver.Partition]map[string]bool           // the sort keys of the counters of no thread
	revs       map[driver.Key]int64                           // the threads' own counters' Revs, by partition and thread
	rev        int64                                          // the last Rev given
	versions   map[driver.Partition]int64
	recounted  map[driver.Partition]time.Time // recount times, to the second
	seen       map[driver.Partition]string    // seen watermarks
	prefs      map[driver.Partition]driver.Preferences
	prefsSet   map[driver.Partition]bool // the partitions whose preferences were ever set
	recent     map[driver.Partition]*[driver.RecentSlotCount]map[driver.Key]bool
	claims     map[claimKey]claim
	markers    map[markerKey]uint64 // applied removals of unledgered records, by seq
	tenants    map[string]driver.TenantSettings
	inboxes    map[driver.Scope]driver.InboxConfig
	expiries   expiryHeap

	pending   []event                                    // removals not yet delivered (lag mode)
	delivered []event                                    // removals delivered, kept for Redeliver
	handler   func(context.Context, driver.Change) error // see HandleRemovalsWith

	feed      bool            // changes are held for DeliverChanges
	changes   []driver.Change // changes not yet delivered
	deliverMu sync.Mutex      // serializes DeliverChanges
}

var _ driver.Store = (*Store)(nil)

// storedRecord is a record and the sequence number of its write, which
// tells its expiry entry from a stale one left by a deleted namesake.
type storedRecord struct {
	rec driver.Record
	seq uint64
}

// entryKey identifies a ledger entry: its partition and Entry.
type entryKey struct {
	p     driver.Partition
	entry string
}

// claimKey identifies a host-system-ID claim.
type claimKey struct {
	scope driver.Scope
	host  string
}

// claim is a host-system-ID claim.
type claim struct {
	c   driver.HostClaim
	seq uint64
}

// markerKey identifies the marker of an applied removal of an unledgered
// record: its partition and event ID.
type markerKey struct {
	p  driver.Partition
	id string
}

// event is a removal as the table's stream would carry it: the removed
// record as it last stood, under an event ID; or the removal of a timed
// entry's timer (timed set), of the record at rec's key.
type event struct {
	id    string
	rec   driver.Record
	at    time.Time // when it was removed, to the second
	byTTL bool
	timed string // a timer's entry
}

// change returns ev as the stream's REMOVE record reports it.
func (ev event) change() driver.Change {
	if ev.timed != "" {
		k := driver.Record{Partition: ev.rec.Partition, Message: driver.Message{ID: ev.rec.Message.ID}}
		return driver.Change{ID: ev.id, Op: driver.ChangeRemove, At: ev.at, ByTTL: true, Timer: &k, TimedKey: ev.timed}
	}
	old := ev.rec.Clone()
	return driver.Change{ID: ev.id, Op: driver.ChangeRemove, At: ev.at, ByTTL: ev.byTTL, Old: &old}
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock that decides expiry (default time.Now). Pass the
// same fake clock to inbox.WithClock to move both together; nil keeps the
// default.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.clock = now
		}
	}
}

// WithStreamLag makes the Store hold every removal (an expiry or a Delete)
// until Deliver is called, as a table's stream does when the function that
// accounts it lags behind: the record is gone at once, its counters fall
// when the removal is delivered. Counts stay exact either way; this shows
// the raw counters and lets a test deliver removals late or twice. A test
// that writes another program's items (and deletes them, or recounts)
// should also pass its Inbox's HandleChange to HandleRemovalsWith.
func WithStreamLag() Option { return func(s *Store) { s.lag = true } }

// HandleRemovalsWith makes Deliver, Redeliver and DeliverSome hand each
// held removal (see WithStreamLag) to h, as a REMOVE record of the table's
// stream, instead of accounting it with ApplyRemoval's logic alone: pass
// an Inbox's HandleChange, and the removals are accounted by the Inbox as
// its StreamHandler accounts DynamoDB's, in full (with the recount that
// follows the removal of another program's item made close to a Recount):
//
//	mem := memstore.New(memstore.WithStreamLag())
//	mem.HandleRemovalsWith(inbox.New(mem).HandleChange)
//
// h is called without the Store's lock held, one removal at a time, in
// order; a removal it fails is held again, with those after it.
func (s *Store) HandleRemovalsWith(h func(context.Context, driver.Change) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// New returns an empty Store.
func New(opts ...Option) *Store {
	s := &Store{
		clock:      time.Now,
		records:    map[driver.Key]*storedRecord{},
		ids:        sets[driver.Partition]{},
		unread:     sets[driver.Partition]{},
		threadIDs:  sets[threadKey]{},
		ledger:     newLedgerIndex(),
		tombstones: map[driver.Partition]map[string]*storedRecord{},
		readers:    map[driver.Partition]map[string]storedReader{},
		timed:      map[driver.Partition]map[string]driver.Record{},
		timedKeys:  sets[driver.Partition]{},
		snoozeIDs:  sets[driver.Partition]{},
		legacy:     sets[driver.Partition]{},
		fence:      map[driver.Partition]string{},
		days:       map[driver.Partition]map[time.Time]*driver.DayBucket{},
		hours:      map[driver.Partition]map[time.Time]*driver.HourBucket{},
		activity:   sets[driver.Partition]{},
		counters:   map[driver.Partition]map[string]driver.Counter{},
		plain:      map[driver.Partition]map[string]bool{},
		revs:       map[driver.Key]int64{},
		versions:   map[driver.Partition]int64{},
		recounted:  map[driver.Partition]time.Time{},
		seen:       map[driver.Partition]string{},
		prefs:      map[driver.Partition]driver.Preferences{},
		prefsSet:   map[driver.Partition]bool{},
		recent:     map[driver.Partition]*[driver.RecentSlotCount]map[driver.Key]bool{},
		claims:     map[claimKey]claim{},
		markers:    map[markerKey]uint64{},
		tenants:    map[string]driver.TenantSettings{},
		inboxes:    map[driver.Scope]driver.InboxConfig{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// begin locks s and sweeps expired entries; it fails if ctx is done. On
// success the caller must unlock s.mu.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.sweep(s.clock())
	return nil
}

// Sweep removes every record that has expired by the clock's time now, as
// DynamoDB's TTL does, and accounts each removal (or holds it, with
// WithStreamLag); it drops expired host-system-ID claims, tombstones and
// removal markers. It returns how many records it removed. Every other
// method sweeps first too, so tests need not call it.
func (s *Store) Sweep() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sweep(s.clock())
}

// Deliver accounts every removal the Store holds (see WithStreamLag), in
// the order they happened, and returns how many it applied. Without
// WithStreamLag there are none.
func (s *Store) Deliver(ctx context.Context) (int, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	evs := s.pending
	s.pending = nil
	s.delivered = append(s.delivered, evs...)
	return s.account(ctx, evs, true)
}

// Redeliver accounts again every removal delivered so far, as a stream
// delivers a record more than once, and returns how many it applied: none,
// if accounting is exactly once.
func (s *Store) Redeliver(ctx context.Context) (int, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	return s.account(ctx, slices.Clone(s.delivered), false)
}

// Pending reports how many removals wait for Deliver.
func (s *Store) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// account accounts evs, removals taken from those held, and unlocks s.mu,
// which must be held: with the handler set (HandleRemovalsWith), by
// handing them to it without the lock, and, if held is set, holding again
// the one it fails and those after it; otherwise at once. It returns how
// many it applied (handed over, with the handler).
func (s *Store) account(ctx context.Context, evs []event, held bool) (int, error) {
	h := s.handler
	if h == nil {
		defer s.mu.Unlock()
		return s.apply(evs, false), nil
	}
	s.mu.Unlock()
	for i, ev := range evs {
		if err := h(ctx, ev.change()); err != nil {
			if held {
				s.mu.Lock()
				s.pending = append(slices.Clone(evs[i:]), s.pending...)
				s.mu.Unlock()
			}
			return i, err
		}
	}
	return len(evs), nil
}

// apply accounts evs as the stream handler does, with ApplyRemoval's
// logic: atOnce when they are accounted as they happen, so that no
// recount can have come between a removal and its accounting (and the
// recount-time check of driver.Store.ApplyRemoval is left out). s.mu must
// be held.
func (s *Store) apply(evs []event, atOnce bool) int {
	n := 0
	now := s.clock().UTC().Truncate(time.Second)
	for _, ev := range evs {
		if ev.timed != "" {
			if s.fold(ev.rec.Key(), ev.timed) {
				n++
			}
			continue
		}
		r := driver.RemovalFor(ev.rec, ev.id, now)
		r.At = ev.at
		if s.applyRemoval(r, !atOnce) {
			n++
		}
	}
	return n
}

// timerFired records that the timer of the timed entry at sk of the
// record at k went off: the entry is folded now, or with WithStreamLag
// held for Deliver, as the removal of its timer on a table's stream is.
// s.mu must be held.
func (s *Store) timerFired(k driver.Key, sk string) {
	ev := event{id: "memstore-" + strconv.FormatUint(s.nextSeq(), 10), rec: driver.Record{Partition: k.Partition, Message: driver.Message{ID: k.ID}}, at: s.changeTime(), byTTL: true, timed: sk}
	if s.feed {
		s.changes = append(s.changes, ev.change())
	}
	if s.lag {
		s.pending = append(s.pending, ev)
		return
	}
	s.apply([]event{ev}, true)
}

// fold folds the timed entry at sk of the record at k, as the stream
// handler does when the entry's timer is removed (driver.Fold): it
// reports whether it did (false if the record notes another entry, or
// none). s.mu must be held.
func (s *Store) fold(k driver.Key, sk string) bool {
	sr, ok := s.records[k]
	if !ok || sr.rec.Timed != sk {
		return false
	}
	mk, ok := driver.Fold(sr.rec, s.clock().UTC().Truncate(time.Second))
	if !ok {
		return false
	}
	deltas := append(driver.MarkDeltas(mk), driver.AboveDeltas(mk, s.fenceOf(k.Partition))...)
	return s.mark([]driver.Mark{mk}, driver.MergeCounters(deltas)) == nil
}

// removed records that rec is gone (deleted, or expired if byTTL), by the
// removal of ID id (see drop): the removal is accounted now, or held for
// Deliver. s.mu must be held.
func (s *Store) removed(rec driver.Record, id string, byTTL bool) {
	ev := event{id: id, rec: rec, at: s.changeTime(), byTTL: byTTL}
	if s.lag {
		s.pending = append(s.pending, ev)
		return
	}
	s.apply([]event{ev}, true)
}

// nextSeq returns a new sequence number.
func (s *Store) nextSeq() uint64 {
	s.seq++
	return s.seq
}

// addDeltas adds each change to its counter, creating it at zero, and moves
// the partitions' versions. s.mu must be held.
func (s *Store) addDeltas(deltas []driver.Counter) { s.addCounts(deltas, true) }

// addCounts adds each change to its counter, creating it at zero, and, if
// bump is set, moves the partitions' versions (another program's changes
// leave them: the version is the library's). s.mu must be held.
func (s *Store) addCounts(deltas []driver.Counter, bump bool) {
	for _, d := range deltas {
		if !s.prefs[d.Partition].Keeps(d) {
			continue // a muted thread's counter, of a thread not muted
		}
		if d.Covered && d.Of != "" && !s.covers(d.Partition, d.Group, d.Thread, d.Of) {
			continue // a covered thread's counter, of a record its position does not cover
		}
		cs := s.counters[d.Partition]
		if cs == nil {
			cs = map[string]driver.Counter{}
			s.counters[d.Partition] = cs
		}
		k := d.SK()
		c, ok := cs[k]
		if !ok {
			c = driver.Counter{Partition: d.Partition, Category: d.Category, Group: d.Group, Thread: d.Thread, Muted: d.Muted, Covered: d.Covered}
			s.notePlain(c)
		}
		was := c.Latest
		if d.Group != "" && d.Thread != "" {
			// A user's receipts of a shared thread: the hint as a Store
			// applies it, not as changes merge.
			hint := c
			c.Add(d)
			c.Latest, c.Top, c.TopEntry = hint.Latest, hint.Top, hint.TopEntry
			c.ApplyHint(d, ok)
		} else {
			c.Add(d)
		}
		cs[k] = c
		s.revise(c)
		if c.Latest != was && c.Group == "" {
			s.noteActivity(d.Partition, c.Thread, was, c.Latest)
		}
		if bump {
			s.versions[d.Partition]++
		}
	}
}

// revise gives c, if it is a thread's own counter, a new Rev (see
// driver.Counter.Rev). s.mu must be held.
func (s *Store) revise(c driver.Counter) {
	if c.Thread != "" && c.Group == "" && !c.Muted && !c.Covered {
		s.rev++
		s.revs[driver.Key{Partition: c.Partition, ID: c.Thread}] = s.rev
	}
}

// mutes reports whether the own preferences of user partition p mute
// thread t (see driver.Counter.Muted). s.mu must be held.
func (s *Store) mutes(p driver.Partition, t string) bool {
	prefs := s.prefs[p]
	return prefs.Own && prefs.MutesThread(t)
}

// covers reports whether the read position of thread t (of group g's
// messages, "" for direct ones) in user partition p covers the record
// with ID id (see driver.Counter.Covered). s.mu must be held.
func (s *Store) covers(p driver.Partition, g, t, id string) bool {
	return s.counters[p][driver.CoveredCounterSK("", t, g)].Position.Covers(id)
}

// expire schedules an expiry entry.
func (s *Store) expire(e expiry) { heap.Push(&s.expiries, e) }

// notePlain notes c's key among its partition's counters of no thread (a
// muted thread's counter among them: Stats returns it with the others),
// if it is one of them. s.mu must be held.
func (s *Store) notePlain(c driver.Counter) {
	if c.Thread != "" && !c.Muted && !c.Covered {
		return
	}
	if s.plain[c.Partition] == nil {
		s.plain[c.Partition] = map[string]bool{}
	}
	s.plain[c.Partition][c.SK()] = true
}

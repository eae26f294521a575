package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/stak/inbox/driver"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"
)

// DefaultSharedFreshness is how long, by default, an Inbox serves a shared
// partition's newest records and stats from memory (see WithSharedCache).
const DefaultSharedFreshness = time.Second

// sharedHead is how many of a shared partition's newest records a snapshot
// holds: a first page of the default size, and the record after it that
// tells whether there is a next page.
const sharedHead = DefaultPageSize + 1

// WithSharedCache sets how long List and Counts may serve a shared
// partition (the public one, and each group's) from a snapshot in this
// Inbox's memory instead of reading it again: its newest sharedHead
// records and its stats, read together. Every user of an inbox reads the
// same shared partitions, so without it each List and Counts reads them
// again, and one inbox's public partition caps the inbox at DynamoDB's
// 3,000 read units a second per partition, whatever the number of users.
//
// The default is DefaultSharedFreshness; 0 turns the cache off. With it
// on:
//
//   - Concurrent misses of one partition make one read (singleflight): a
//     process reads each shared partition at most about once per
//     freshness interval, however many users it serves.
//   - This Inbox's own writes to a shared partition (Broadcast,
//     BroadcastGroup, Redact, the stream accounting of a shared record,
//     Recount) drop its snapshot, so the process sees them at once.
//   - A snapshot is one view of its partition: its newest records and its
//     stats are read twice, in parallel, until two reads agree, so that no
//     write lands between them (a partition written faster than that, 8
//     times in a row, is read from the store for the next freshness
//     interval instead). Each List and Counts call keeps the first
//     snapshot it gets of each shared partition for the whole call, but
//     for one that Counts reads again (below).
//   - Another process's broadcast, group message or removal shows up to
//     the freshness bound late, in List and Counts alike. Expiry is never
//     late: records and ledger entries are filtered by the time of each
//     call, and the snapshot holds the ledger entries that expire within
//     the bound.
//   - A user's own partition is never cached: the user's messages and
//     marks show at once. When the user marked, through another process,
//     a broadcast that a snapshot lacks (Stats.Recent names it), Counts
//     reads that partition again, after the user's, and keeps the new
//     snapshot, so a receipt is never counted against a view without its
//     broadcast. This relies on the freshness bound, plus the clock skew
//     between processes and a broadcast's publish, staying below
//     RecentSlotWidth: a receipt of an older broadcast is not recorded.
//   - Pages below the snapshot's records, and filtered reads it does not
//     cover, are read from the store; every List guarantee (no gap, no
//     repeat, filters) holds. A broadcast below the snapshot's records
//     that another process removes leaves those pages before it leaves
//     Counts, within the freshness bound.
//   - An Inbox keeps at most 1,024 snapshots (the stale ones are dropped
//     first), however many groups it serves.
//
// Each process keeps its own snapshots; WithSharedBackend shares them
// across a fleet.
func WithSharedCache(freshness time.Duration) Option {
	return func(ib *Inbox) { ib.freshness = max(freshness, 0) }
}

// SharedBackend holds shared-partition snapshots for a fleet of processes
// (see WithSharedBackend), e.g. a Redis server (package rediscache).
// Implementations must be safe for concurrent use. Values are opaque
// bytes; keys are at most a few hundred bytes of UTF-8.
type SharedBackend interface {
	// Load returns the value saved at key and how much longer it lives;
	// found is false if there is none (never saved, expired or dropped).
	Load(ctx context.Context, key string) (value []byte, ttl time.Duration, found bool, err error)
	// Save stores value at key for ttl, replacing any value there.
	Save(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Drop removes the value at key, if any.
	Drop(ctx context.Context, key string) error
}

// WithSharedBackend shares the snapshots of WithSharedCache through b
// across every process that uses it, so that a fleet (a thousand Lambda
// environments, say) reads each shared partition from DynamoDB about once
// per freshness interval, not once per process. It has no effect with the
// cache off. Every process sharing b must use the same freshness.
//
// A process still collapses its own concurrent misses and keeps what it
// loaded in memory, so b serves each process at most about once per
// partition and interval. What holds with it:
//
//   - A snapshot is served at most the freshness bound after it was read
//     from the store, whichever process read it: b's ttl counts down
//     from the read.
//   - A process's own writes to a shared partition drop the partition's
//     snapshot from b too (a Drop after the write, whatever its outcome,
//     bounded by a second), so every process sees them at once unless a
//     refresh that began before the write saves its snapshot after the
//     drop; that one is served at most the freshness bound. The writing
//     process itself never takes a snapshot from b that predates its
//     write: it reads the store once, and accepts from b only snapshots
//     with a counter version (Stats.Version) at least that read's.
//   - b failing (Load, Save or Drop returning an error, or a value that
//     does not decode) never fails a List or Counts: the process reads
//     the store instead, as without b. Each such failure costs the time
//     b takes to answer; bound it with b's own timeouts, since a refresh
//     waits for b and the callers that joined it wait with it.
//   - Misses are collapsed within a process, not across processes. So
//     that a fleet does not miss all at once when a snapshot expires, each
//     process keeps a snapshot from b until a random point in the last
//     half of its life, and one that finds it past that point reads the
//     store and saves the next: the first process to get there refreshes
//     it for the others, and only those that miss before its save also
//     read the store. A fleet starting cold (b empty) still reads once
//     per process that misses before the first save.
func WithSharedBackend(b SharedBackend) Option {
	return func(ib *Inbox) { ib.backend = b }
}

// sharedCacheSize bounds the snapshots one Inbox keeps: past it, the
// stale ones are dropped first, then any, so that an inbox of many groups
// costs memory for the partitions read within the freshness bound, not
// for every partition ever read.
const sharedCacheSize = 1024

// sharedWritesSize bounds the shared partitions whose last write an Inbox
// remembers (write generations); past it they are forgotten together.
const sharedWritesSize = 1 << 14

// snapshotReads bounds the reads of one refresh: a snapshot is taken when
// two reads in a row, each of the newest records and the stats in
// parallel, agree (see read); after the third, each waits a few random
// milliseconds more.
const snapshotReads = 8

// knownSize bounds the IDs an Inbox remembers per shared partition as
// known to be in any snapshot read after it learnt them (see learn).
const knownSize = 256

// sharedCache is the Store of an Inbox: it passes every call to the Store
// it wraps, drops a shared partition's snapshot when a write through it
// may change that partition, and serves the feed reads of shared
// partitions (through a view) from snapshots. It is safe for concurrent
// use.
type sharedCache struct {
	Store
	fresh time.Duration
	clock func() time.Time // the Inbox's clock: the time of the data
	real  func() time.Time // the time that bounds freshness

	backend   SharedBackend // nil for none
	namespace string        // the Store's, in backend keys

	flights singleflight.Group
	mu      sync.Mutex
	snaps   map[Partition]*snapshot
	// untallied holds the shared partitions whose Query of threads with
	// ActivityOnly came back without their tallies (a table of an earlier
	// version, or a counter another program wrote): their snapshots then
	// read the counters themselves at once; the other partitions' still
	// read the index's entries. Past sharedCacheSize partitions they are
	// forgotten together.
	untallied map[Partition]bool
	// gens holds the write generation of each shared partition this
	// process wrote; one it does not hold is at base. A refresh keeps its
	// snapshot only if no write came since it began.
	gens map[Partition]uint64
	seq  uint64 // the last generation given
	base uint64 // the generation of partitions gens does not hold
	// floor holds, for a partition this process wrote within the last
	// two freshness bounds, the least counter version a snapshot from the
	// backend must have: -1 until the store has been read after the write.
	floor map[Partition]versionFloor
	// readSeq numbers the store reads of snapshots, in the order they
	// begin; known holds, per shared partition, IDs learnt to exist and
	// the readSeq when they were (see learn).
	readSeq uint64
	known   map[Partition]map[string]uint64
	// churn holds, per shared partition that kept changing while it was
	// read, when (by the real clock) it may be read for a snapshot again;
	// past sharedCacheSize partitions, those past that time are dropped,
	// then all.
	churn map[Partition]time.Time
	// hook is Hooks.SharedCache, nil for none.
	hook func(context.Context, CacheEvent)
}

// versionFloor is a floor of sharedCache and when the write that set it
// was made (by the real clock).
type versionFloor struct {
	version int64
	at      time.Time
}

// snapshot is a shared partition as one refresh read it: its newest
// records and its stats, from one consistent view of the partition.
type snapshot struct {
	at, realAt time.Time // the Inbox's clock and the real clock at the read
	gen        uint64
	head       []driver.Record // the newest records, all of them if complete
	complete   bool
	stats      driver.Stats // with the ledger entries expiring up to at+fresh
	// threads are the partition's newest threads by activity (their own
	// counters), all of them if threadsComplete.
	threads         []driver.Counter
	threadsComplete bool
	fresh           time.Duration
	// seq orders the reads of this Inbox: the snapshot's read began after
	// every read numbered below it (0 for one loaded from the backend).
	seq uint64
}

// has reports whether s, a snapshot of p, is known to reflect message id
// of p: id is in its head, or was removed before the read (a tombstone),
// or this Inbox learnt that id existed before s was read (see learn).
func (c *sharedCache) has(s *snapshot, p Partition, id string) bool {
	for _, r := range s.head {
		if r.Message.ID == id {
			return true
		}
	}
	for _, t := range s.stats.Tombstones {
		if t.Message.ID == id {
			return true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	learnt, ok := c.known[p][id]
	return ok && s.seq > learnt
}

// learn notes that messages ids of shared partition p exist now (a user's
// partition, just read, holds receipts of them): every snapshot of p read
// from now on reflects them. A snapshot of p must be read after it for
// has to count on it.
func (c *sharedCache) learn(p Partition, ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.known) >= sharedCacheSize {
		clear(c.known)
	}
	m := c.known[p]
	if m == nil {
		m = map[string]uint64{}
		c.known[p] = m
	}
	for _, id := range ids {
		if _, ok := m[id]; ok {
			continue
		}
		if len(m) >= knownSize {
			for k := range m { // forget one, at random
				delete(m, k)
				break
			}
		}
		m[id] = c.readSeq
	}
}

func newSharedCache(s Store, fresh time.Duration, clock func() time.Time, b SharedBackend) *sharedCache {
	c := &sharedCache{Store: s, fresh: fresh, clock: clock, real: time.Now, backend: b,
		snaps: map[Partition]*snapshot{}, untallied: map[Partition]bool{}, gens: map[Partition]uint64{}, floor: map[Partition]versionFloor{},
		known: map[Partition]map[string]uint64{}, churn: map[Partition]time.Time{}}
	if n, ok := s.(driver.Namespacer); ok {
		c.namespace = n.Namespace()
	}
	return c
}

// backendDropTimeout bounds the backend's Drop after a write.
const backendDropTimeout = time.Second

// gen returns p's write generation. c.mu must be held.
func (c *sharedCache) gen(p Partition) uint64 {
	if g, ok := c.gens[p]; ok {
		return g
	}
	return c.base
}

// invalidate drops p's snapshot if p is shared, and makes a refresh in
// flight from before not stored. It drops the backend's snapshot of p
// too, so that the other processes see the write at once, whatever the
// write's outcome (one that failed, e.g. by a timeout, may have been
// applied) and even if the caller has given up (within
// backendDropTimeout).
func (c *sharedCache) invalidate(ctx context.Context, p Partition) {
	if !p.IsShared() {
		return
	}
	c.mu.Lock()
	if len(c.gens) >= sharedWritesSize {
		// Forget every partition's generation at once: each moves to a
		// new base, above every generation a refresh in flight holds.
		clear(c.gens)
		c.base = c.seq + 1
		c.seq++
	}
	c.seq++
	c.gens[p] = c.seq
	delete(c.snaps, p)
	now := c.real()
	for q, f := range c.floor {
		if now.Sub(f.at) > 2*c.fresh {
			delete(c.floor, q) // any backend snapshot older than it expired
		}
	}
	c.floor[p] = versionFloor{version: -1, at: now}
	c.mu.Unlock()
	if c.backend != nil && c.fresh > 0 {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backendDropTimeout)
		defer cancel()
		_ = c.backend.Drop(ctx, c.backendKey(p)) // see WithSharedBackend: never fails the write
	}
}

// PutMessage passes to the Store, and drops the snapshot of a shared
// record's partition.
func (c *sharedCache) PutMessage(ctx context.Context, rec driver.Record, deltas []driver.Counter, receipts ...driver.Mark) error {
	err := c.Store.PutMessage(ctx, rec, deltas, receipts...)
	c.invalidate(ctx, rec.Partition)
	return err
}

// ApplyRemoval passes to the Store, and drops the snapshot of a shared
// record's partition.
func (c *sharedCache) ApplyRemoval(ctx context.Context, r driver.Removal) (bool, error) {
	applied, err := c.Store.ApplyRemoval(ctx, r)
	c.invalidate(ctx, r.Record.Partition)
	return applied, err
}

// Mark passes to the Store, and drops the snapshot of a shared partition
// a mark folds a scheduled broadcast's pending entry of.
func (c *sharedCache) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	err := c.Store.Mark(ctx, marks, deltas)
	for _, mk := range marks {
		c.invalidate(ctx, mk.Key.Partition)
	}
	return err
}

// Repair passes to the Store, and drops p's snapshot.
func (c *sharedCache) Repair(ctx context.Context, p Partition, r driver.Repair) error {
	err := c.Store.Repair(ctx, p, r)
	c.invalidate(ctx, p)
	return err
}

// backendKey is the backend key of shared partition p's snapshot: the
// Store's namespace (its table) and p's key.
func (c *sharedCache) backendKey(p Partition) string {
	return "inbox/snapshot/v3/" + strconv.Quote(c.namespace) + "/" + p.PK()
}

// wireSnapshot is a snapshot as the backend holds it.
type wireSnapshot struct {
	At              time.Time        `json:"at"`
	Head            []driver.Record  `json:"head"`
	Complete        bool             `json:"complete"`
	Stats           driver.Stats     `json:"stats"`
	Threads         []driver.Counter `json:"threads"`
	ThreadsComplete bool             `json:"threadsComplete"`
}

// snapshot returns a snapshot of shared partition p fresh at now (the
// Inbox's clock), reading one if none is: one read for all concurrent
// callers. It returns nil with the cache off.
func (c *sharedCache) snapshot(ctx context.Context, p Partition, now time.Time) (*snapshot, error) {
	if c.fresh == 0 || !p.IsShared() {
		return nil, nil
	}
	s, gen := c.current(p, now)
	if s != nil {
		c.cacheEvent(ctx, CacheHit, p)
		return s, nil
	}
	c.cacheEvent(ctx, CacheMiss, p)
	c.mu.Lock()
	churning := c.real().Before(c.churn[p])
	if !churning {
		delete(c.churn, p)
	}
	c.mu.Unlock()
	if churning {
		return nil, nil // it kept changing: read the store, as with the cache off
	}
	// The flight is per generation: a caller after a write does not join
	// a read that started before it. The read serves every caller that
	// joins it, so one caller's cancellation does not cancel it (the
	// client's timeouts still bound it); each caller still returns when
	// its own ctx is done.
	ch := c.flights.DoChan(p.PK()+"\x00"+strconv.FormatUint(gen, 10), func() (any, error) {
		// A read that ended between current and here stored its
		// snapshot: use it rather than read again.
		if s, g := c.current(p, now); s != nil && g == gen {
			return s, nil
		}
		return c.refresh(context.WithoutCancel(ctx), p, gen, true)
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if errors.Is(r.Err, errChurn) {
			return nil, nil // read the store, as with the cache off
		}
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*snapshot), nil
	}
}

// current returns p's snapshot if it is fresh at now (nil if not), and
// p's write generation.
func (c *sharedCache) current(p Partition, now time.Time) (*snapshot, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, gen := c.snaps[p], c.gen(p)
	if s != nil && c.servable(s, now) {
		return s, gen
	}
	return nil, gen
}

// servable reports whether s may still be served at now (the Inbox's
// clock), by both clocks.
func (c *sharedCache) servable(s *snapshot, now time.Time) bool {
	// now is truncated to the second (records' precision), s.at not.
	return !now.Before(s.at.Truncate(time.Second)) && now.Sub(s.at) < c.fresh && c.real().Sub(s.realAt) < c.fresh
}

// refresh returns a new snapshot of p, from the backend if it holds one
// this process may use (only if useBackend), else read from the store
// (and saved to the backend), and stores it as p's snapshot unless a write
// to p came meanwhile.
func (c *sharedCache) refresh(ctx context.Context, p Partition, gen uint64, useBackend bool) (*snapshot, error) {
	if useBackend {
		if s := c.load(ctx, p, gen); s != nil {
			c.cacheEvent(ctx, CacheLoad, p)
			return c.keep(p, s), nil
		}
	}
	c.cacheEvent(ctx, CacheRefresh, p)
	s, err := c.read(ctx, p, gen)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	current := c.gen(p) == gen
	if f, ok := c.floor[p]; current && ok && f.version == -1 {
		c.floor[p] = versionFloor{version: s.stats.Version, at: f.at}
	}
	c.mu.Unlock()
	if c.backend != nil && current {
		// Not once this process wrote to p since the read began: the
		// snapshot may predate the write.
		if v, err := json.Marshal(wireSnapshot{At: s.at, Head: s.head, Complete: s.complete, Stats: s.stats, Threads: s.threads, ThreadsComplete: s.threadsComplete}); err == nil {
			_ = c.backend.Save(ctx, c.backendKey(p), v, c.fresh) // see WithSharedBackend
		}
	}
	return c.keep(p, s), nil
}

// load returns p's snapshot from the backend, nil if there is none this
// process may use: none, one it cannot decode, one older than its own
// last write (by counter version), or on any error.
func (c *sharedCache) load(ctx context.Context, p Partition, gen uint64) *snapshot {
	if c.backend == nil {
		return nil
	}
	c.mu.Lock()
	floor, wrote := c.floor[p]
	c.mu.Unlock()
	if wrote && floor.version == -1 {
		return nil
	}
	v, ttl, found, err := c.backend.Load(ctx, c.backendKey(p))
	if err != nil || !found || ttl <= 0 || ttl > c.fresh {
		return nil
	}
	// The processes of a fleet would all miss together when the
	// snapshot expires, and all read the store. So each keeps it until a
	// random point in the last half of its life, and one that finds it
	// past that point reads the store and saves the next: the first
	// process to do so refreshes it for the others.
	early := rand.N(c.fresh/2 + 1)
	if ttl <= early {
		return nil
	}
	var w wireSnapshot
	if json.Unmarshal(v, &w) != nil || wrote && w.Stats.Version < floor.version || !w.valid(p) ||
		c.clock().Sub(w.At) >= c.fresh {
		// Not one this process may serve: corrupt, older than its write,
		// or, by this process's clock, older than the bound, past which
		// its ledger entries no longer cover expiry. (So a process whose
		// clock is ahead of the reader's by the bound cannot use it.)
		return nil
	}
	// It was read fresh-ttl ago; another host's clock may be ahead.
	at := w.At
	if now := c.clock().UTC(); at.After(now) {
		at = now
	}
	return &snapshot{at: at, realAt: c.real().Add(ttl - early - c.fresh), gen: gen, fresh: c.fresh,
		head: w.Head, complete: w.Complete, stats: w.Stats, threads: w.Threads, threadsComplete: w.ThreadsComplete}
}

// valid reports whether w can be a snapshot of shared partition p as a
// refresh reads one: at most sharedHead valid records (broadcasts, not
// receipts) of p in strictly descending ID order, and stats of p alone. A
// value from the backend that is
// not is ignored, so that a corrupt or forged one cannot break List's
// paging (which relies on the order) or show another partition's records.
func (w wireSnapshot) valid(p Partition) bool {
	if len(w.Head) > sharedHead || w.At.IsZero() {
		return false
	}
	for i, r := range w.Head {
		if r.Partition != p || r.Receipt || driver.ValidateMessageID(r.Message.ID) != nil || driver.ValidateRecord(r) != nil ||
			i > 0 && r.Message.ID >= w.Head[i-1].Message.ID {
			return false
		}
	}
	for _, c := range w.Stats.Counters {
		if c.Partition != p || driver.ValidateCounter(c) != nil {
			return false
		}
	}
	for i, c := range w.Threads {
		if c.Partition != p || driver.ValidateCounter(c) != nil || c.Thread == "" || c.Group != "" || c.Latest == "" ||
			i > 0 && driver.ActivityKey(c.Latest, c.Thread) >= driver.ActivityKey(w.Threads[i-1].Latest, w.Threads[i-1].Thread) {
			return false
		}
	}
	for _, rs := range [][]driver.Record{w.Stats.Expired, w.Stats.Tombstones, w.Stats.Due, w.Stats.Pending, w.Stats.Snoozed} {
		for _, r := range rs {
			if r.Partition != p {
				return false
			}
		}
	}
	return len(w.Stats.Recent) == 0
}

// keep stores s as p's snapshot unless a write to p came since its
// generation, and returns it. Past sharedCacheSize snapshots it drops the
// stale ones, then any.
func (c *sharedCache) keep(p Partition, s *snapshot) *snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen(p) != s.gen {
		return s
	}
	if _, ok := c.snaps[p]; !ok && len(c.snaps) >= sharedCacheSize {
		now := c.clock().UTC().Truncate(time.Second)
		for q, old := range c.snaps {
			if !c.servable(old, now) {
				delete(c.snaps, q)
			}
		}
		for q := range c.snaps {
			if len(c.snaps) < sharedCacheSize*3/4 {
				break
			}
			delete(c.snaps, q) // map order: any
		}
	}
	c.snaps[p] = s
	return s
}

// snapshotsKept reports how many snapshots c holds (for tests).
func (c *sharedCache) snapshotsKept() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.snaps)
}

// errChurn reports a shared partition that kept changing while it was
// read: no snapshot of it could be taken.
var errChurn = errors.New("inbox: shared partition kept changing while it was read")

// read reads p's newest records and its stats from the store, in
// parallel, again and again until two reads in a row agree: then no write
// to p landed between the two requests of the second read (it would have
// changed one of them from the first read, made before it), so its
// records and stats are one consistent view of p. A partition that keeps
// changing for snapshotReads reads is errChurn: the callers then read it
// from the store, as with the cache off.
func (c *sharedCache) read(ctx context.Context, p Partition, gen uint64) (*snapshot, error) {
	c.mu.Lock()
	c.readSeq++
	seq := c.readSeq
	c.mu.Unlock()
	var prev *snapshot
	for i := range snapshotReads {
		if i > 1 {
			time.Sleep(time.Duration(rand.N(1<<i)) * time.Millisecond) // let a burst of writes pass
		}
		s, err := c.readOnce(ctx, p, gen)
		if err != nil {
			return nil, err
		}
		if prev != nil && prev.same(s) {
			s.seq = seq
			return s, nil
		}
		prev = s
	}
	c.mu.Lock()
	now := c.real()
	if len(c.churn) >= sharedCacheSize {
		for q, until := range c.churn {
			if !now.Before(until) {
				delete(c.churn, q)
			}
		}
		if len(c.churn) >= sharedCacheSize {
			clear(c.churn) // each is tried for a snapshot again
		}
	}
	c.churn[p] = now.Add(c.fresh) // read it from the store until then
	c.mu.Unlock()
	return nil, fmt.Errorf("%w: %s", errChurn, p.PK())
}

// readOnce reads p's newest records and its stats from the store, in
// parallel.
func (c *sharedCache) readOnce(ctx context.Context, p Partition, gen uint64) (*snapshot, error) {
	s := &snapshot{at: c.clock().UTC(), realAt: c.real(), gen: gen, fresh: c.fresh}
	var head, threads driver.QueryResult
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		head, err = c.Store.Query(gctx, driver.Query{Partition: p, Before: s.bound(c.fresh), Limit: sharedHead})
		return err
	})
	g.Go(func() (err error) {
		// Ledger and timed entries whose time comes within the freshness
		// bound are read now and filtered by each caller's time.
		s.stats, err = c.Store.Stats(gctx, driver.StatsQuery{Partition: p, Now: s.at.Truncate(time.Second).Add(c.fresh.Truncate(time.Second) + time.Second)})
		return err
	})
	g.Go(func() (err error) {
		// The newest threads, for a first page of ListThreads, with
		// their tallies: from the index's entries where they hold them
		// (a table of an earlier version's: from the counters).
		c.mu.Lock()
		q := driver.Query{Partition: p, Threads: true, ActivityOnly: !c.untallied[p], Limit: sharedHead}
		c.mu.Unlock()
		if threads, err = c.Store.Query(gctx, q); err == nil && !threads.Tallied {
			c.mu.Lock()
			if len(c.untallied) >= sharedCacheSize {
				clear(c.untallied) // each is asked again with ActivityOnly once
			}
			c.untallied[p] = true
			c.mu.Unlock()
			q.ActivityOnly = false
			threads, err = c.Store.Query(gctx, q)
		}
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	s.head, s.complete = head.Records, head.Next == ""
	s.threads, s.threadsComplete = threads.Threads, threads.Next == ""
	return s, nil
}

// same reports whether two reads of a partition saw the same records and
// stats (its version, counters, tombstones and expired entries).
func (s *snapshot) same(o *snapshot) bool {
	entries := func(rs []driver.Record) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.Message.ID + "\x00" + r.Entry
		}
		slices.Sort(out)
		return out
	}
	return s.complete == o.complete && s.stats.Version == o.stats.Version &&
		s.threadsComplete == o.threadsComplete && sameTallies(s.threads, o.threads) &&
		slices.Equal(entries(s.head), entries(o.head)) &&
		slices.Equal(entries(s.stats.Tombstones), entries(o.stats.Tombstones)) &&
		slices.Equal(entries(s.stats.Expired), entries(o.stats.Expired)) &&
		sameTallies(s.stats.Counters, o.stats.Counters)
}

// view is what one List or Counts call reads of the shared partitions:
// the first snapshot it gets of each, kept for the whole call, so that
// every read of the call sees one consistent view of each partition. It
// is safe for concurrent use.
type view struct {
	c     *sharedCache
	now   time.Time
	mu    sync.Mutex
	snaps map[Partition]*snapshot
}

// newView returns an empty view of c's shared partitions at now.
func (c *sharedCache) newView(now time.Time) *view {
	return &view{c: c, now: now, snaps: map[Partition]*snapshot{}}
}

// snapshot returns the view's snapshot of p: nil for a user's partition
// or with the cache off.
func (v *view) snapshot(ctx context.Context, p Partition) (*snapshot, error) {
	v.mu.Lock()
	s, ok := v.snaps[p]
	v.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := v.c.snapshot(ctx, p, v.now)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if old, ok := v.snaps[p]; ok {
		return old, nil // another read of the call got there first
	}
	v.snaps[p] = s
	return s, nil
}

// renew replaces the view's snapshot of shared partition p by one read
// from the store now, after the caller learnt that messages ids exist
// (see learn). It is how Counts catches up with a user's partition that is
// newer than the snapshot. With the cache off it does nothing: every read
// goes to the store.
func (v *view) renew(ctx context.Context, p Partition, ids []string) error {
	if v.c.fresh == 0 {
		return nil
	}
	v.c.learn(p, ids)
	v.c.mu.Lock()
	gen := v.c.gen(p)
	v.c.mu.Unlock()
	s, err := v.c.refresh(ctx, p, gen, false)
	if errors.Is(err, errChurn) {
		s, err = nil, nil // read the store, as with the cache off
	}
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.snaps[p] = s
	v.mu.Unlock()
	return nil
}

// lookup returns what the view knows of message k of a shared partition:
// its record if the view's snapshot holds it; known true with a nil
// record if the snapshot knows it is not in the partition (removed before
// the snapshot was read, or within the IDs the snapshot holds all of and
// not among them); known false if the cache is off or the message lies
// below what the snapshot holds (read it from the store).
func (v *view) lookup(ctx context.Context, k driver.Key) (_ *driver.Record, known bool, _ error) {
	s, err := v.snapshot(ctx, k.Partition)
	if err != nil || s == nil {
		return nil, false, err
	}
	for _, r := range s.head {
		if r.Message.ID == k.ID {
			r = r.Clone()
			return &r, true, nil
		}
	}
	for _, t := range s.stats.Tombstones {
		if t.Message.ID == k.ID {
			return nil, true, nil
		}
	}
	return nil, s.covers(driver.Query{Before: idAbove(k.ID)}), nil
}

// idAbove returns a Before bound that keeps id: id followed by a byte
// above every ID character.
func idAbove(id string) string { return id + "\x7f" }

// stats returns p's stats at the view's time, with the ledger entries
// expired by then and the tombstones that expire after it: from p's
// snapshot if p is shared and the cache is on, else from the Store. With
// threads they hold p's threads' counters (a snapshot always does);
// without, they may.
func (v *view) stats(ctx context.Context, p Partition, threads bool) (driver.Stats, error) {
	s, err := v.snapshot(ctx, p)
	if err != nil {
		return driver.Stats{}, err
	}
	var all driver.Stats
	if s != nil {
		all = s.stats
	} else if all, err = v.c.Store.Stats(ctx, driver.StatsQuery{Partition: p, Now: v.now, Threads: threads}); err != nil {
		return driver.Stats{}, err
	}
	st := all
	st.Expired = keptOf(all.Expired, func(e driver.Record) bool { return !v.now.Before(e.Message.ExpiresAt) })
	st.Tombstones = keptOf(all.Tombstones, func(t driver.Record) bool { return v.now.Before(t.Message.ExpiresAt) })
	return st, nil
}

// keptOf returns the records of recs that keep holds, in order: recs
// itself, capped so that an append copies it, when it holds for all (a
// snapshot's records are shared, and read only), else a copy.
func keptOf(recs []driver.Record, keep func(driver.Record) bool) []driver.Record {
	i := 0
	for i < len(recs) && keep(recs[i]) {
		i++
	}
	if i == len(recs) {
		return recs[:len(recs):len(recs)]
	}
	out := slices.Clone(recs[:i])
	for _, r := range recs[i+1:] {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// query runs q: from the view's snapshot of q's partition if it is
// shared, the cache is on and the snapshot covers the IDs q reads; else
// from the Store. Served from a snapshot, it evaluates the snapshot's
// records below q.Before and above q.After, at most q.Limit, applies q's
// filters, and returns as Next the last ID evaluated, or "" when the
// snapshot holds the whole partition below it.
func (v *view) query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	s, err := v.snapshot(ctx, q.Partition)
	if err != nil {
		return driver.QueryResult{}, err
	}
	if s == nil || !s.covers(q) {
		return v.c.Store.Query(ctx, q)
	}
	res := driver.QueryResult{Records: make([]driver.Record, 0, min(q.Limit, len(s.head)))}
	evaluated := 0
	for i, r := range s.head {
		id := r.Message.ID
		if q.Before != "" && id >= q.Before {
			continue
		}
		if q.After != "" && id <= q.After {
			return res, nil // nothing above After remains
		}
		evaluated++
		if matches(r, q) {
			res.Records = append(res.Records, r.Clone())
		}
		if evaluated == q.Limit {
			if i+1 < len(s.head) || !s.complete {
				res.Next = id
			}
			return res, nil
		}
	}
	if !s.complete {
		res.Next = s.head[len(s.head)-1].Message.ID
	}
	return res, nil
}

// bound returns the Before of the read of s's newest records: above
// every record that may come due while s is served (the freshness bound
// after its read) or that a publisher whose clock is ahead may have
// written, by maxClockSkew; a record above it is scheduled, and hidden
// from every caller s serves.
func (s *snapshot) bound(fresh time.Duration) string {
	return feedBound(s.at.Add(fresh))
}

// feedBound returns where a read of a feed at now starts: above every
// record due by now, allowing for the clocks of the publishers
// (maxClockSkew). A scheduled message above it, not due, is not read, so
// that a page holds what it shows, however much is scheduled ahead.
func feedBound(now time.Time) string { return idAbove(IDAt(now.Add(maxClockSkew))) }

// covers reports whether the snapshot holds the first record q would
// read: every record of the partition below q.Before (which must be at or
// below the snapshot's bound: above it, records the snapshot was not read
// for may come due) down to the snapshot's last.
func (s *snapshot) covers(q driver.Query) bool {
	switch {
	case q.Before == "" || q.Before > s.bound(s.fresh):
		return false
	case s.complete:
		return true
	case len(s.head) == 0:
		return false
	}
	return q.Before > s.head[len(s.head)-1].Message.ID
}

// matches applies q's filters to r, as a Store does.
func matches(r driver.Record, q driver.Query) bool {
	st := r.State()
	switch {
	case !q.Now.IsZero() && (!q.Now.Before(r.Message.ExpiresAt) || !r.Message.Due(q.Now)):
		return false
	case q.Category != "" && r.Message.Category != q.Category:
		return false
	case q.UnreadOnly && (r.Receipt || !st.ReadAt.IsZero()):
		return false
	case q.Archived == driver.NotArchived && !st.ArchivedAt.IsZero():
		return false
	case q.Archived == driver.OnlyArchived && st.ArchivedAt.IsZero():
		return false
	}
	return true
}

// threads returns a page of shared partition p's threads by activity
// (their own counters), latest first, below before ("" for none), at most
// limit: from the view's snapshot of p when it holds them, else from the
// Store (Query with Threads).
func (v *view) threads(ctx context.Context, p Partition, before string, limit int) (driver.QueryResult, error) {
	s, err := v.snapshot(ctx, p)
	if err != nil {
		return driver.QueryResult{}, err
	}
	if s == nil || !s.threadsComplete && (len(s.threads) == 0 || before != "" && before <= s.threads[len(s.threads)-1].Latest) {
		// ListThreads reads the counters of threads no snapshot holds by
		// key.
		return v.c.Store.Query(ctx, driver.Query{Partition: p, Threads: true, ActivityOnly: true, Before: before, Limit: limit})
	}
	var res driver.QueryResult
	for i, c := range s.threads {
		if before != "" && c.Latest >= before {
			continue
		}
		if len(res.Threads) == limit {
			res.Next = res.Threads[len(res.Threads)-1].Latest
			return res, nil
		}
		res.Threads = append(res.Threads, c)
		if i == len(s.threads)-1 && !s.threadsComplete {
			res.Next = c.Latest
		}
	}
	return res, nil
}

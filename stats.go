package inbox

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stak/inbox/driver"
)

// Tally is the counts of a user's messages: Total, Read and Unread count
// the messages List shows by default (not archived); Archived counts the
// archived ones.
type Tally struct {
	Total    int64
	Read     int64
	Unread   int64
	Archived int64
}

// Counts is a user's counts in one inbox, direct messages and broadcasts
// together: exactly what a full List of the user's feed shows.
type Counts struct {
	Tally
	// Unseen counts the messages of Total that are unread and above the
	// user's seen watermark (see Inbox.MarkSeen): a badge's number.
	Unseen int64
	// Categories holds a Tally for each category of which the user's feed
	// holds a message.
	Categories map[string]Tally
	// Snoozed counts the messages the user snoozed that have not returned
	// yet (see Inbox.Snooze): what List with ListOptions.Snoozed shows.
	// None of them is in the other figures.
	Snoozed int64
}

// newTally turns the summed tallies of a user's feed into a Tally: Total
// is what is published less what is archived or hidden, Read the reads of
// what is not archived. Counts are exact, so no figure is negative unless
// the table was changed behind the library's back (Recount repairs that);
// it is then shown as zero.
func newTally(c driver.Counter) Tally {
	total := max(c.Published-c.Archived-c.Hidden, 0)
	read := max(c.Read-c.ArchivedRead, 0)
	return Tally{Total: total, Read: read, Unread: max(total-read, 0), Archived: max(c.Archived, 0)}
}

// countSum adds up counters and changes to them by category.
type countSum map[string]*driver.Counter

// add adds c's tallies to its category's sum.
func (s countSum) add(c driver.Counter) {
	t := s[c.Category]
	if t == nil {
		t = &driver.Counter{Category: c.Category}
		s[c.Category] = t
	}
	t.Add(c.Tallies())
}

// counts returns the sums as Counts, leaving out empty categories.
func (s countSum) counts() Counts {
	out := Counts{Categories: map[string]Tally{}}
	for cat, t := range s {
		if cat == "" {
			out.Tally = newTally(*t)
			continue
		}
		if tl := newTally(*t); tl != (Tally{}) {
			out.Categories[cat] = tl
		}
	}
	return out
}

// Counts returns u's counts, overall and per category: exactly what a full
// List of u's feed shows at this instant (u's direct messages and the
// messages of everyone and of u's groups, less what u archived or deleted),
// the archived ones, and how many are unseen.
//
// It reads the stats of u's partition and of each shared one
// (Store.Stats, in parallel: one round trip, whatever the number of
// messages; the shared ones from the snapshots of WithSharedCache), adds
// their counters, takes out u's marks on the messages of groups u is not
// in, and takes out the ledger entries of records that have expired, so
// messages that DynamoDB's TTL has not deleted yet, or whose deletion the
// stream has not accounted yet, are not counted.
//
// Unseen (u has a seen watermark) is read in the same round trip, from the
// watermark this Inbox last saw for u: u's unread direct messages and u's
// receipts above it (Query.Unseen: the dynamo Store reads them from its
// unread index, with u's counter version, so that they and the stats are
// one view of u's partition; on a mismatch Counts reads both again), and
// the broadcasts above it that u holds no receipt of, from the shared
// partitions' views. Its cost grows with the unread messages and the
// broadcasts above the watermark, not with the feed or what u has read; a
// user without a watermark costs nothing more (Unseen is Unread).
//
// A second round trip is made only when needed: while a broadcast
// removed before its expiry stands as a tombstone, u's receipt of it is
// read once per Inbox (a tombstoned broadcast gets no new receipts, so
// that u has none is remembered); when a shared partition's view lacks a
// broadcast u holds a receipt of (one u marked through another process
// after the view was read), that partition is read again (with the cache
// off, its stats are read again after u's whenever u lately marked a
// broadcast younger than RecentSlotWidth); and when more than a page of
// records lies above the watermark. The version check
// covers the first page of the unseen records (100 above a watermark this
// Inbox saw before): the records of later pages are taken as read. If the
// user's partition changes between its reads four times in a row, Counts
// fails with an error matching ErrConflict.
func (ib *Inbox) Counts(ctx context.Context, u User) (_ Counts, err error) {
	defer ib.observe(&ctx, "Counts", u.Scope, u.ID).end(&err)
	if err := u.Validate(); err != nil {
		return Counts{}, err
	}
	for range countsAttempts {
		c, ok, err := ib.counts(ctx, u)
		if err != nil || ok {
			return c, err
		}
	}
	return Counts{}, fmt.Errorf("inbox: counts of %s: the user's partition kept changing while it was read: %w", u.ID, ErrConflict)
}

// countsAttempts bounds the reads of one Counts call whose stats and
// unseen records disagree (a write landed between them).
const countsAttempts = 4

// counts is one attempt of Counts: ok is false if u's stats and the
// records of its unseen count were not one view of u's partition.
func (ib *Inbox) counts(ctx context.Context, u User) (_ Counts, ok bool, _ error) {
	now := ib.now()
	v := ib.cache.newView(now)
	parts := append([]Partition{u.Partition()}, u.Shared()...)
	after, limit := ib.seen.get(u.Partition())
	var probe *driver.QueryResult
	stats, err := ib.feedStats(ctx, v, parts, now, false, func(ctx context.Context) error {
		if limit == 0 {
			return nil
		}
		res, err := ib.store.Query(ctx, driver.Query{Partition: parts[0], Unseen: true, After: after, Limit: limit, Now: now})
		probe = &res
		return err
	})
	if err != nil {
		return Counts{}, false, err
	}
	in := map[string]bool{"": true} // the groups whose receipts count
	for _, p := range parts[2:] {
		in[p.Group] = true
	}
	sum := countSum{"": {}}
	for _, c := range stats[0].Counters {
		switch {
		case c.Thread != "":
			// threads are counted by ListThreads
		case c.Group == "":
			sum.add(c)
		case !in[c.Group]:
			sum.add(c.Negated())
		}
	}
	var tombstones []driver.Record
	removed := map[string]bool{}
	for _, st := range stats[1:] {
		for _, c := range st.Counters {
			if c.Group == "" && c.Thread == "" {
				sum.add(driver.Counter{Category: c.Category, Published: c.Published})
			}
		}
		tombstones = append(tombstones, st.Tombstones...)
		for _, t := range st.Tombstones {
			removed[t.Message.ID] = true
		}
	}
	// Expired entries, and receipts of removed broadcasts, are counted
	// out, but for the receipts of groups left out already.
	out := func(recs ...driver.Record) {
		for _, r := range recs {
			if !r.Receipt || in[r.Message.Audience.Group] {
				for _, d := range driver.RemovalDeltas(r) {
					if d.Group == "" && d.Thread == "" {
						sum.add(d)
					}
				}
			}
		}
	}
	for _, st := range stats {
		out(st.Expired...)
		out(notDue(st, now)...) // counted when stored, shown when due
	}
	dead, err := ib.deadReceipts(ctx, u, tombstones, now)
	if err != nil {
		return Counts{}, false, err
	}
	out(dead...)
	snoozed := snoozing(stats[0], in, removed, now)
	for _, e := range snoozed {
		out(asFeedMessage(e)) // counted, hidden until it returns
	}
	c := sum.counts()
	c.Snoozed = int64(len(snoozed))
	seen := stats[0].Seen
	ib.seen.put(u.Partition(), seen)
	if seen == "" {
		// No watermark: nothing was ever marked seen.
		c.Unseen = c.Unread
		return c, true, nil
	}
	if after > seen {
		// The watermark this Inbox remembered is above the stored one
		// (the table was restored, say): the probe missed records.
		probe = nil
	}
	c.Unseen, ok, err = ib.unseen(ctx, v, parts, probe, stats[0].Version, seen, now)
	return c, ok, err
}

// feedStats reads the stats of parts (a user's partition, then the
// shared ones the user reads) through v, in parallel, with also in the
// same round trip; with threads, the threads' counters too. u's partition
// counts u's receipts of every message it holds one of, while a shared
// partition's view (a snapshot, or a read made in parallel) may predate a
// broadcast u has a receipt of: u made it in the meantime, through another
// process. u's recent receipts name them; such a partition is read again,
// now that u's partition has been read, so that the view holds every
// message u's receipts are of.
func (ib *Inbox) feedStats(ctx context.Context, v *view, parts []Partition, now time.Time, threads bool, also func(context.Context) error) ([]driver.Stats, error) {
	stats := make([]driver.Stats, len(parts))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range parts {
		g.Go(func() (err error) { stats[i], err = v.stats(gctx, p, threads); return err })
	}
	g.Go(func() error { return also(gctx) })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	behind := map[int][]string{}
	for _, k := range stats[0].Recent {
		i := slices.Index(parts[1:], k.Partition) + 1
		if i == 0 || !driver.RecentID(k.ID, now) {
			continue // a group this call does not name; a broadcast every view holds
		}
		s, err := v.snapshot(ctx, k.Partition)
		if err != nil {
			return nil, err
		}
		if s == nil || !ib.cache.has(s, k.Partition, k.ID) {
			behind[i] = append(behind[i], k.ID)
		}
	}
	if len(behind) > 0 {
		g, gctx := errgroup.WithContext(ctx)
		for i, ids := range behind {
			g.Go(func() (err error) {
				if err = v.renew(gctx, parts[i], ids); err != nil {
					return err
				}
				stats[i], err = v.stats(gctx, parts[i], threads)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
	}
	return stats, nil
}

// unseen counts the messages of parts above the seen watermark seen that
// u's feed shows unread: u's unread direct messages above it, and the
// broadcasts above it in the shared partitions' views of which u holds no
// receipt (a receipt is a mark: read, archived or deleted). probe is the
// first page of u's unseen records (nil if not read), read with the stats
// of counter version version; ok is false if a page of u's records was of
// another version (a write came between).
func (ib *Inbox) unseen(ctx context.Context, v *view, parts []Partition, probe *driver.QueryResult, version int64, seen string, now time.Time) (n int64, ok bool, err error) {
	q := driver.Query{Partition: parts[0], Unseen: true, After: seen, Limit: unseenPage, Now: now}
	if probe == nil {
		res, err := ib.store.Query(ctx, q)
		if err != nil {
			return 0, false, err
		}
		probe = &res
	}
	marked := map[string]bool{} // shared messages u has a receipt of
	for res := *probe; ; {
		if res.Versioned && res.Version != version {
			return 0, false, nil
		}
		for _, r := range res.Records {
			switch {
			case r.Message.ID <= seen:
			case r.Receipt:
				// A receipt whose one mark is a snooze that has ended
				// leaves its broadcast unread, and unseen.
				if st := r.State(); st.Same(driver.State{}) && !r.Message.Snoozed(now) {
					continue
				}
				marked[r.Message.ID] = true
			case !r.Message.IsRead() && !r.Message.IsArchived() && now.Before(r.Message.ExpiresAt) && r.Message.Due(now) && !r.Message.Snoozed(now):
				n++
			}
		}
		if res.Next == "" || res.Next <= seen {
			break
		}
		q.Before = res.Next
		if res, err = ib.store.Query(ctx, q); err != nil {
			return 0, false, err
		}
	}
	for _, p := range parts[1:] {
		sq := driver.Query{Partition: p, After: seen, Limit: unseenPage, Now: now, Archived: driver.NotArchived}
		for {
			res, err := v.query(ctx, sq)
			if err != nil {
				return 0, false, err
			}
			for _, r := range res.Records {
				if r.Message.ID > seen && !marked[r.Message.ID] {
					n++
				}
			}
			if res.Next == "" || res.Next <= seen {
				break
			}
			sq.Before = res.Next
		}
	}
	return n, true, nil
}

// deadReceipts returns u's unexpired receipts of the broadcasts tombstones
// name: broadcasts removed before they expired, whose receipts still
// stand and count as read until they expire. It reads u's receipt of each
// tombstone, but for those it found u has none of before: a tombstoned
// broadcast gets no new receipt, so that stays true.
func (ib *Inbox) deadReceipts(ctx context.Context, u User, tombstones []driver.Record, now time.Time) ([]driver.Record, error) {
	keys := make([]driver.Key, 0, len(tombstones))
	for _, t := range tombstones {
		if k := (driver.Key{Partition: u.Partition(), ID: t.Message.ID}); !ib.noReceipts.has(k) {
			keys = append(keys, k)
		}
	}
	recs, err := ib.getRecords(ctx, keys)
	if err != nil {
		return nil, err
	}
	found := make(map[string]bool, len(recs))
	var out []driver.Record
	for _, r := range recs {
		found[r.Message.ID] = true
		if r.Receipt && now.Before(r.Message.ExpiresAt) {
			out = append(out, r)
		}
	}
	for _, k := range keys {
		if !found[k.ID] {
			ib.noReceipts.add(k)
		}
	}
	return out, nil
}

// keySet is a set of keys bounded to keySetSize: past it, it forgets them
// all. It is safe for concurrent use.
type keySet struct {
	mu sync.Mutex
	m  map[driver.Key]bool
}

// keySetSize bounds a keySet.
const keySetSize = 1 << 16

// has reports whether k is in the set.
func (s *keySet) has(k driver.Key) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k]
}

// add puts k in the set.
func (s *keySet) add(k driver.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= keySetSize {
		s.m = map[driver.Key]bool{}
	}
	s.m[k] = true
}

// maxGetKeys is the most keys of one Store.GetRecords.
const maxGetKeys = 100

// notDue returns the scheduled records of the partition of stats st that
// are not due at now: stored and counted, not yet shown. Their pending
// entries come with the stats, in the same read (see Store.PutMessage).
func notDue(st driver.Stats, now time.Time) []driver.Record {
	var out []driver.Record
	for _, e := range st.Pending {
		if !e.Message.Due(now) && now.Before(e.Message.ExpiresAt) {
			out = append(out, e)
		}
	}
	return out
}

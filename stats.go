package inbox

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stak/inbox/driver"
)

// Tally is the counts of a user's messages: Total, Read, Unread and Muted
// count the messages List shows by default (not archived), Total = Read +
// Unread + Muted; Archived counts the archived ones.
type Tally struct {
	Total  int64
	Read   int64
	Unread int64
	// Archived counts the messages the user archived.
	Archived int64
	// Muted counts the unread messages of the groups, categories and
	// threads of direct messages the user muted (see
	// Inbox.SetPreferences), which Unread leaves out.
	Muted int64
	// Unseen counts the messages of Unread above the user's seen
	// watermark (see Inbox.MarkSeen): a badge's number, overall or a
	// category's.
	Unseen int64
}

// Counts is a user's counts in one inbox, direct messages and broadcasts
// together: exactly what a full List of the user's feed shows.
type Counts struct {
	Tally
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
// the archived ones, and how many are unseen (overall and per category).
// The unread messages of the groups and categories u muted (see
// SetPreferences) count in Muted, not in Unread or Unseen, and the
// messages of the categories u opted out of count nowhere: the
// preferences are read with u's counters, so the counts follow a change
// the instant it is made.
//
// It reads the stats of u's partition and of each shared one
// (Store.Stats, in parallel: one round trip, whatever the number of
// messages; the shared ones from the snapshots of WithSharedCache), adds
// their counters, takes out u's marks on the messages of groups u is not
// in, the messages hidden until a time (snoozed, or scheduled and not due:
// tallied on the counters, less the entries whose time has come), and the
// ledger entries of records that have expired, so messages that
// DynamoDB's TTL has not deleted yet, or whose deletion the stream has not
// accounted yet, are not counted.
//
// Unseen (u has a seen watermark) comes from the same reads: u's
// partition keeps, on its counters (its total and each category's), the
// unread messages above the watermark less the broadcasts above it that
// u's receipts mark (Counter.Above, kept with every write and set anew by
// MarkSeen); each shared partition's records above it are counted from
// its snapshot's newest records when they reach down to the watermark,
// else from its time buckets (driver.DayBucket, by category, read with
// its stats), with one more read, of the watermark's hour bucket, when
// that hour holds records. So
// its cost is the same for 10 or 10,000 unseen messages; a user without a
// watermark costs nothing more (Unseen is Unread).
//
// A second round trip is made only when needed: for an hour bucket (a
// shared partition written since the watermark, in its hour); while a
// broadcast removed before its expiry stands as a tombstone, u's receipt
// of it is read once per Inbox (a tombstoned broadcast gets no new
// receipts, so that u has none is remembered); and when a shared
// partition's view lacks a broadcast u holds a receipt of (one u marked
// through another process after the view was read), that partition is
// read again (with the cache off, its stats are read again after u's
// whenever u lately marked a broadcast younger than RecentSlotWidth). A
// partition written by an earlier version of the library, until it is
// recounted or u marks seen, counts its records above the watermark one
// by one, as that version did.
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

// countsAttempts bounds the reads of one Counts call whose reads disagree
// (a write landed between them).
const countsAttempts = 4

// feed is what Counts and the bulk actions know of a user's feed at one
// instant: the stats of the user's partition and of each shared one, and
// what they hide or take out.
type feed struct {
	u     User
	now   time.Time
	parts []Partition
	stats []driver.Stats
	// in holds the groups whose receipts count ("" for everyone's).
	in map[string]bool
	// dead are u's receipts of broadcasts removed before they expired.
	dead []driver.Record
	// removed holds the IDs of those broadcasts.
	removed map[string]bool
	// covers holds what the user's read positions in groups' threads
	// cover (see groupCovers).
	covers map[driver.GroupThread]*groupCover
}

// counts is one attempt of Counts: ok is false if its reads were not one
// view of u's feed.
func (ib *Inbox) counts(ctx context.Context, u User) (_ Counts, ok bool, _ error) {
	now := ib.now()
	v := ib.cache.newView(now)
	f, err := ib.readFeed(ctx, v, u, now)
	if err != nil {
		return Counts{}, false, err
	}
	if f.covers, ok, err = ib.groupCovers(ctx, v, f.parts, f.stats, f.dead, f.now); err != nil || !ok {
		return Counts{}, false, err
	}
	c, snoozed := f.tallies()
	c.Snoozed = snoozed[""]
	// The feed as if u were not in the groups she muted: its unread
	// are Unread, the rest of the whole feed's Muted.
	q := f.unmuted()
	if q != f {
		m, _ := q.tallies()
		c = withMuted(c, m)
	}
	mutedUnread, mutedAbove := f.mutedThreads()
	c = c.withMutedThreads(mutedUnread)
	st := f.stats[0]
	ib.seen.put(u.Partition(), st.Fence)
	if st.Seen == "" {
		// No watermark: nothing was ever marked seen.
		return c.withPreferences(nil, snoozed, st.Preferences), true, nil
	}
	n, ok, err := ib.unseenAbove(ctx, v, q, mutedAbove)
	if err != nil || !ok {
		return Counts{}, false, err
	}
	return c.withPreferences(n, snoozed, st.Preferences), true, nil
}

// mutedThreads returns the unread messages of the threads of f's user's
// direct messages she muted (her preferences, read with her stats),
// overall and by category, and those of them above her watermark: their
// muted counters (driver.Counter.Muted), which count the messages as
// Counter.Above does, less the records expired, as unseenAbove takes them
// out of the partition's Above (a thread's messages are never snoozed nor
// scheduled: no timed entry hides one). Nil if she mutes none.
func (f *feed) mutedThreads() (unread, above catSum) {
	st := f.stats[0]
	prefs := st.Preferences
	if len(prefs.MutedThreads) == 0 {
		return nil, nil
	}
	unread, above = catSum{}, catSum{}
	for _, c := range st.Counters {
		switch {
		case c.Muted && prefs.MutesThread(c.Thread):
			unread[c.Category] += c.Unread
			above[c.Category] += c.Above
		case c.Covered && c.Group == "" && prefs.MutesThread(c.Thread):
			// Read, though the muted counters count them unread.
			unread[c.Category] -= c.Unread
			above[c.Category] -= c.Above
		}
	}
	add := func(r driver.Record, n int64) {
		if r.Receipt || r.Partition.IsShared() || !prefs.MutesThread(r.Message.Thread) {
			return
		}
		unread.add(r.Message.Category, n)
		if r.Message.ID > st.Seen {
			above.add(r.Message.Category, n)
		}
	}
	for _, e := range st.Expired {
		add(e, -driver.Unseen(e))
	}
	return unread, above
}

// withMutedThreads returns c with the unread messages of the threads its
// user muted (unread, overall and by category: see feed.mutedThreads)
// moved from Unread to Muted.
func (c Counts) withMutedThreads(unread catSum) Counts {
	if unread == nil {
		return c
	}
	move := func(t Tally, k string) Tally {
		n := min(max(unread[k], 0), t.Unread)
		t.Unread, t.Muted = t.Unread-n, t.Muted+n
		return t
	}
	c.Tally = move(c.Tally, "")
	for cat, t := range c.Categories {
		c.Categories[cat] = move(t, cat)
	}
	return c
}

// withPreferences returns c without the categories prefs opt out of (their
// tallies, unseen and snoozed, of n and snoozed, taken out of the
// totals), with the unread messages of the categories prefs mute moved
// from Unread to Muted, overall and in each of those categories, and
// with the Unseen of n, overall (less the muted categories') and of each
// category (none of a muted one); nil n means no watermark: every unread
// message is unseen. Counts are exact, so an Unseen is never negative
// nor above its Unread unless the table was changed behind the library's
// back (or, for a moment, another program marked a message and the
// stream has not told the library yet): it is then bounded so.
func (c Counts) withPreferences(n, snoozed catSum, prefs Preferences) Counts {
	for _, cat := range prefs.OptedOut {
		t := c.Categories[cat]
		c.Total, c.Read, c.Unread = max(c.Total-t.Total, 0), max(c.Read-t.Read, 0), max(c.Unread-t.Unread, 0)
		c.Archived, c.Muted = max(c.Archived-t.Archived, 0), max(c.Muted-t.Muted, 0)
		c.Snoozed = max(c.Snoozed-snoozed[cat], 0)
		delete(c.Categories, cat)
		if n != nil {
			n[""] -= n[cat]
		}
	}
	for _, cat := range prefs.MutedCategories {
		t, ok := c.Categories[cat]
		if !ok {
			continue
		}
		c.Unread, c.Muted = c.Unread-t.Unread, c.Muted+t.Unread
		t.Muted, t.Unread = t.Muted+t.Unread, 0
		c.Categories[cat] = t
		if n != nil {
			n[""] -= n[cat]
		}
	}
	set := func(t Tally, k string) Tally {
		t.Unseen = t.Unread
		if n != nil {
			t.Unseen = min(max(n[k], 0), t.Unread)
		}
		return t
	}
	c.Tally = set(c.Tally, "")
	for cat, t := range c.Categories {
		c.Categories[cat] = set(t, cat)
	}
	return c
}

// catSum adds up a count of messages (unseen, or snoozed) overall ("")
// and by category.
type catSum map[string]int64

// add adds n messages of category cat.
func (s catSum) add(cat string, n int64) {
	s[""] += n
	if cat != "" {
		s[cat] += n
	}
}

// merge adds o to s.
func (s catSum) merge(o catSum) {
	for k, n := range o {
		s[k] += n
	}
}

// readFeed reads what Counts needs of u's feed at now, through v: the
// stats of u's partition and of the shared ones (see feedStats), and u's
// receipts of the broadcasts removed before they expired.
func (ib *Inbox) readFeed(ctx context.Context, v *view, u User, now time.Time) (*feed, error) {
	parts := append([]Partition{u.Partition()}, u.Shared()...)
	stats, err := ib.feedStats(ctx, v, parts, now, false, func(context.Context) error { return nil })
	if err != nil {
		return nil, err
	}
	if stats[0].Preferences, err = ib.inEffect(ctx, u.Scope, stats[0].Preferences); err != nil {
		return nil, err
	}
	// The expired records a read position covers count as read: as the
	// covered counters count them (see driver.Counter.Covered).
	if positions := driver.Positions(stats[0].Counters); len(positions) > 0 {
		expired := make([]driver.Record, len(stats[0].Expired))
		for i, e := range stats[0].Expired {
			expired[i] = driver.Overlay(e, positions)
		}
		stats[0].Expired = expired
	}
	f := &feed{u: u, now: now, parts: parts, stats: stats, in: map[string]bool{"": true}, removed: map[string]bool{}}
	for _, p := range parts[2:] {
		f.in[p.Group] = true
	}
	var tombstones []driver.Record
	for _, st := range stats[1:] {
		if tombstones == nil {
			tombstones = st.Tombstones // read only; an append copies it
		} else {
			tombstones = append(tombstones[:len(tombstones):len(tombstones)], st.Tombstones...)
		}
		for _, t := range st.Tombstones {
			f.removed[t.Message.ID] = true
		}
	}
	if f.dead, err = ib.deadReceipts(ctx, u, tombstones, now); err != nil {
		return nil, err
	}
	return f, nil
}

// unmuted returns f as if its user were not in the groups she muted (her
// preferences, read with her stats): their partitions left out, and her
// receipts of their messages with them, as for a group she does not name.
// It returns f itself if she mutes none of the groups f reads.
func (f *feed) unmuted() *feed {
	prefs := f.stats[0].Preferences
	if prefs.IsZero() {
		return f
	}
	q := &feed{u: f.u, now: f.now, in: maps.Clone(f.in), removed: f.removed, covers: f.covers}
	for i, p := range f.parts {
		if i > 1 && prefs.Mutes(p.Group) {
			delete(q.in, p.Group)
			continue
		}
		q.parts, q.stats = append(q.parts, p), append(q.stats, f.stats[i])
	}
	if len(q.parts) == len(f.parts) {
		return f
	}
	for _, r := range f.dead {
		if q.counts(r) {
			q.dead = append(q.dead, r)
		}
	}
	return q
}

// withMuted returns all, the counts of a whole feed, with the unread
// messages of the groups its user muted moved from Unread to Muted:
// those not among the unread of unmuted, the counts of the feed without
// them, overall and in each category.
func withMuted(all, unmuted Counts) Counts {
	split := func(a, u Tally) Tally {
		a.Muted = max(a.Unread-u.Unread, 0)
		a.Unread -= a.Muted
		return a
	}
	all.Tally = split(all.Tally, unmuted.Tally)
	for cat, t := range all.Categories {
		all.Categories[cat] = split(t, unmuted.Categories[cat])
	}
	return all
}

// counts reports whether record r of u's partition (a direct message, or
// a receipt) counts in the feed: a receipt of a group f's user is not in
// does not.
func (f *feed) counts(r driver.Record) bool { return !r.Receipt || f.in[r.Message.Audience.Group] }

// tallies returns the feed's Counts but Unseen and Snoozed, and how many
// messages are snoozed, overall and by category.
func (f *feed) tallies() (Counts, catSum) {
	sum := countSum{"": {}}
	snoozed := catSum{}
	// hidden returns what c's messages add to the feed: its own tallies
	// less those of its timed entries.
	hidden := func(c driver.Counter) driver.Counter {
		t := c.Own().Counter()
		for _, h := range []driver.Tallies{c.Snoozed, c.Pending} {
			t.Add(h.Counter().Negated())
		}
		t.Category = c.Category
		return t
	}
	for _, c := range f.stats[0].Counters {
		switch {
		case c.Covered && c.Group == "":
			// The records a read position covers are read.
			sum.add(driver.Counter{Category: c.Category, Read: c.Unread})
		case c.Thread != "":
			// threads are counted by ListThreads
		case c.Group == "":
			sum.add(hidden(c))
			snoozed[c.Category] += c.Snoozed.Published
		case !f.in[c.Group]:
			sum.add(hidden(c).Negated())
			snoozed[c.Category] -= c.Snoozed.Published
		}
	}
	for _, st := range f.stats[1:] {
		for _, c := range st.Counters {
			if c.Group == "" && c.Thread == "" {
				sum.add(driver.Counter{Category: c.Category, Published: c.Published - c.Pending.Published})
			}
		}
	}
	// The group messages her read positions cover are read.
	for k, c := range f.covers {
		if f.in[k.Group] {
			for cat, n := range c.read {
				sum.add(driver.Counter{Category: cat, Read: n})
			}
		}
	}
	// Expired entries are counted out, but for the receipts of groups
	// left out already.
	out := func(recs ...driver.Record) {
		for _, r := range recs {
			if r.Partition.IsShared() || f.counts(r) {
				for _, d := range driver.RemovalDeltas(r) {
					if d.Group == "" && d.Thread == "" {
						sum.add(d)
					}
				}
			}
		}
	}
	// back adds the message timed entry e hides back: its time has come.
	back := func(e driver.Record, sign int64) {
		for _, d := range driver.TimedCounters(e) {
			if d.Group == "" {
				t := d.Snoozed
				if !e.Message.DeliverAt.IsZero() {
					t = d.Pending
				}
				c := t.Counter()
				c.Category = d.Category
				if sign < 0 {
					c = c.Negated()
				}
				sum.add(c)
			}
		}
		if e.Message.DeliverAt.IsZero() {
			snoozed.add(e.Message.Category, -sign)
		}
	}
	for _, st := range f.stats {
		out(st.Expired...)
		for _, e := range due(st, f.now) {
			if e.Partition.IsShared() || f.counts(e) {
				back(e, 1)
			}
		}
	}
	out(f.dead...)
	for _, r := range f.dead {
		// A dead receipt's snooze hides nothing: its broadcast is gone.
		if e, ok := r.TimedEntry(); ok && f.now.Before(driver.TimedAt(e)) {
			back(e, 1)
		}
	}
	// An earlier version's snooze and pending entries are not tallied:
	// they are taken out one by one.
	legacy := f.legacyHidden()
	for _, e := range legacy {
		out(asFeedMessage(e))
		if !e.Message.SnoozedUntil.IsZero() {
			snoozed.add(e.Message.Category, 1)
		}
	}
	return sum.counts(), snoozed
}

// due returns the timed entries of st whose time is at or before now:
// they no longer hide their records, whose tallies the counters still
// take out until a mark folds them.
func due(st driver.Stats, now time.Time) []driver.Record {
	var out []driver.Record
	for _, e := range st.Due {
		if !now.Before(driver.TimedAt(e)) {
			out = append(out, e)
		}
	}
	return out
}

// legacyHidden returns the snooze and pending entries of an earlier
// version (not tallied) that hide a message of f's feed at its time: of
// u's partition (snoozed, of a message not expired, and for a receipt of
// a broadcast of a group u is in that was not removed; or not due), and of
// each shared one (not due).
func (f *feed) legacyHidden() []driver.Record {
	out := snoozing(f.stats[0], f.in, f.removed, f.now)
	for _, st := range f.stats {
		out = append(out, notDue(st, f.now)...)
	}
	return out
}

// unseenAbove returns f's unseen count: the unread messages of its feed
// above its user's watermark, less muted, those of the threads she muted
// (see feed.mutedThreads). ok is false if its reads were not one view.
func (ib *Inbox) unseenAbove(ctx context.Context, v *view, f *feed, muted catSum) (catSum, bool, error) {
	st := f.stats[0]
	seen := st.Seen
	if st.Fence != seen {
		// An earlier version kept no Above: the records are counted.
		return ib.unseen(ctx, v, f.parts, st.Preferences, positionsOf(st.Counters), st.Version, seen, f.now)
	}
	n := catSum{}
	// The threads u muted: out of Unseen.
	for k, m := range muted {
		n[k] -= m
	}
	for _, c := range st.Counters {
		// The total's and each category's Above (see driver.Counter).
		switch {
		case c.Covered && c.Group == "":
			n[c.Category] -= c.Above // read
		case c.Covered:
			// a group's thread's: with the messages it covers, below
		case c.Thread != "":
		case c.Group == "":
			n[c.Category] += c.Above
		case !f.in[c.Group]:
			n[c.Category] -= c.Above
		}
	}
	for k, c := range f.covers {
		if f.in[k.Group] {
			for cat, m := range c.above {
				n[cat] -= m // read
			}
		}
	}
	for _, e := range due(st, f.now) {
		if e.Message.ID > seen && f.counts(e) {
			n.add(e.Message.Category, driver.Unseen(asFeedMessage(e))) // hidden no more
		}
	}
	for _, e := range st.Expired {
		if e.Message.ID > seen && f.counts(e) {
			n.add(e.Message.Category, -driver.Unseen(e))
		}
	}
	for _, r := range f.dead {
		if r.Message.ID > seen {
			n.add(r.Message.Category, -driver.AboveOf(r))
			if e, ok := r.TimedEntry(); ok && !f.now.Before(driver.TimedAt(e)) {
				n.add(r.Message.Category, -driver.Unseen(asFeedMessage(e))) // added back as due
			}
		}
	}
	for _, e := range f.legacyHidden() {
		if !e.Partition.IsShared() && e.Message.ID > seen {
			n.add(e.Message.Category, -driver.Unseen(asFeedMessage(e)))
		}
	}
	// The shared partitions in parallel: each may read its watermark's
	// hour bucket, all in one round trip.
	shared := make([]catSum, len(f.parts)-1)
	oks := make([]bool, len(shared))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range f.parts[1:] {
		g.Go(func() (err error) {
			shared[i], oks[i], err = ib.sharedAbove(gctx, v, p, f.stats[i+1], seen, f.now)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, false, err
	}
	for i, m := range shared {
		if !oks[i] {
			return nil, false, nil
		}
		n.merge(m)
	}
	return n, true, nil
}

// sharedAbove returns how many records of shared partition p, whose stats
// are st, List shows above the watermark seen at now: from the view's
// snapshot of p when its newest records reach down to the watermark; else
// from p's time buckets, less those not due yet (all above any
// watermark) and those expired; else, for a partition written before
// this version kept buckets, by counting the records one by one. ok is
// false if p's hour bucket was read at another instant than its stats:
// the caller reads again.
func (ib *Inbox) sharedAbove(ctx context.Context, v *view, p Partition, st driver.Stats, seen string, now time.Time) (catSum, bool, error) {
	if !hasTotal(st) {
		return nil, true, nil // nothing was ever written there: no record, no bucket
	}
	s, err := v.snapshot(ctx, p)
	if err != nil {
		return nil, false, err
	}
	if s != nil && s.covers(driver.Query{Before: idAbove(seen)}) || !st.Bucketed {
		n, err := ib.countAbove(ctx, v, p, seen, now)
		return n, err == nil, err
	}
	var hour *driver.HourBucket
	if t, err := driver.BucketTime(seen); err == nil && hourHolds(st.Days, t) {
		hs, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Hour: t})
		if err != nil {
			return nil, false, err
		}
		hour = hs.Hour
	}
	n := catSum{}
	for _, c := range st.Counters {
		if c.Group != "" || c.Thread != "" {
			continue
		}
		// The partition's total and each of its categories: the records
		// its buckets count above the watermark.
		m, ok, err := driver.CountAboveIn(st.Days, hour, seen, driver.Slice{Category: c.Category})
		if err != nil || !ok {
			return nil, false, ib.staleBuckets(ctx, v, p, err)
		}
		n[c.Category] += m - c.Pending.Published // not due: above every watermark
	}
	for _, e := range due(st, now) {
		n.add(e.Message.Category, 1) // due, while its tallies still count it pending
	}
	for _, e := range st.Expired {
		if e.Message.ID > seen {
			n.add(e.Message.Category, -1)
		}
	}
	for _, e := range notDue(st, now) {
		if e.Message.ID > seen {
			n.add(e.Message.Category, -1) // an earlier version's scheduled broadcast
		}
	}
	return n, true, nil
}

// hasTotal reports whether st holds its partition's total counter (c#*),
// which every write of a record creates, the library's and, following the
// seeds, another program's.
func hasTotal(st driver.Stats) bool {
	for _, c := range st.Counters {
		if c.Category == "" && c.Group == "" && c.Thread == "" {
			return true
		}
	}
	return false
}

// hourHolds reports whether days count records in t's hour.
func hourHolds(days []driver.DayBucket, t time.Time) bool {
	d := driver.DayOf(t)
	for _, b := range days {
		if b.Day.Equal(d) {
			return b.Hours[t.Hour()] != 0
		}
	}
	return false
}

// countAbove counts the records of shared partition p above seen that
// List shows at now, one by one, through v.
func (ib *Inbox) countAbove(ctx context.Context, v *view, p Partition, seen string, now time.Time) (catSum, error) {
	n := catSum{}
	sq := driver.Query{Partition: p, After: seen, Before: feedBound(now), Limit: unseenPage, Now: now, Archived: driver.NotArchived}
	for {
		res, err := v.query(ctx, sq)
		if err != nil {
			return nil, err
		}
		for _, r := range res.Records {
			if r.Message.ID > seen {
				n.add(r.Message.Category, 1)
			}
		}
		if res.Next == "" || res.Next <= seen {
			return n, nil
		}
		sq.Before = res.Next
	}
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
	behind, err := ib.behind(ctx, v, parts, stats[0].Recent, now)
	if err != nil {
		return nil, err
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

// behind returns, by index in parts, the shared partitions whose view in
// v lacks a broadcast of recent, the recent receipts of u's partition
// (parts[0]): u marked it through another process after v's snapshot of
// the partition was read. With the cache off, every one of recent's
// partitions is (its stats are read again after u's).
func (ib *Inbox) behind(ctx context.Context, v *view, parts []Partition, recent []driver.Key, now time.Time) (map[int][]string, error) {
	behind := map[int][]string{}
	for _, k := range recent {
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
	return behind, nil
}

// catchUp renews in v the snapshot of each shared partition of parts (u's
// partition first) that lacks a broadcast u lately marked through another
// process (u's recent receipts, read with u's stats), as Counts does, so
// that a List made before a Counts in one process, nothing written
// between, sees the view Counts sees. It returns the partitions renewed,
// by index in parts, and u's preferences (see pagePreferences). With the
// cache off it reads nothing else: every read is fresh.
func (ib *Inbox) catchUp(ctx context.Context, v *view, parts []Partition, now time.Time) ([]int, pageStats, error) {
	if v.c.fresh == 0 {
		ps, err := ib.pagePreferences(ctx, parts, nil)
		return nil, ps, err
	}
	st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: parts[0], Now: now})
	if err != nil {
		return nil, pageStats{}, err
	}
	ps, err := ib.pagePreferences(ctx, parts, &st)
	if err != nil {
		return nil, pageStats{}, err
	}
	behind, err := ib.behind(ctx, v, parts, st.Recent, now)
	if err != nil || len(behind) == 0 {
		return nil, ps, err
	}
	var out []int
	g, gctx := errgroup.WithContext(ctx)
	for i, ids := range behind {
		out = append(out, i)
		g.Go(func() error { return v.renew(gctx, parts[i], ids) })
	}
	return out, ps, g.Wait()
}

// pageStats is what a page of a user's feed reads of her stats: her
// preferences in effect, and the read positions of her threads (see
// driver.Position), which her records there read with.
type pageStats struct {
	prefs     Preferences
	positions readPositions
}

// readPositions are a user's read positions: in threads of her direct
// messages, by thread, and of groups' messages (see position_group.go).
type readPositions struct {
	direct map[string]driver.Position
	group  map[driver.GroupThread]driver.Position
}

// positionsOf returns the read positions counters hold (a user's, as
// Stats returns them).
func positionsOf(counters []driver.Counter) readPositions {
	return readPositions{direct: driver.Positions(counters), group: driver.GroupPositions(counters)}
}

// pagePreferences returns the preferences of the user whose partition is
// parts[0], for a page of her feed through parts: those of st, her stats
// if read, else read by key (a muted category concerns every user, in
// groups or not), or the defaults if she has none of her own (see
// inEffect); and her read positions, read with them.
func (ib *Inbox) pagePreferences(ctx context.Context, parts []Partition, st *driver.Stats) (pageStats, error) {
	if st == nil {
		// Her total, and her counter of each of her groups, which holds
		// her read positions in the group's threads.
		keys := []driver.Counter{{}}
		for _, p := range parts[min(2, len(parts)):] {
			keys = append(keys, driver.Counter{Group: p.Group})
		}
		s, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: parts[0], Keys: keys})
		if err != nil {
			return pageStats{}, err
		}
		st = &s
	}
	prefs, err := ib.inEffect(ctx, parts[0].Scope(), st.Preferences)
	return pageStats{prefs: prefs, positions: positionsOf(st.Counters)}, err
}

// unseen counts the messages of parts above the seen watermark seen that
// u's feed shows unread (with her read positions): u's unread direct messages above it, and the
// broadcasts above it in the shared partitions' views of which u holds no
// receipt (a receipt is a mark: read, archived or deleted) and that no
// read position of hers in a group's thread covers, but for u's
// messages of the threads prefs, her preferences, mute. A page of u's
// records read with the stats of counter version version; ok is false if
// one was of another version (a write came between).
func (ib *Inbox) unseen(ctx context.Context, v *view, parts []Partition, prefs Preferences, positions readPositions, version int64, seen string, now time.Time) (n catSum, ok bool, err error) {
	n = catSum{}
	q := driver.Query{Partition: parts[0], Unseen: true, After: seen, Limit: unseenPage, Now: now}
	res, err := ib.store.Query(ctx, q)
	if err != nil {
		return nil, false, err
	}
	marked := map[string]bool{} // shared messages u has a receipt of
	for {
		if res.Versioned && res.Version != version {
			return nil, false, nil
		}
		for _, r := range res.Records {
			r = driver.Overlay(r, positions.direct) // read by a position: seen
			switch {
			case r.Message.ID <= seen:
			case r.Receipt:
				// A receipt whose one mark is a snooze that has ended
				// leaves its broadcast unread, and unseen.
				if st := r.State(); st.Same(driver.State{}) && !r.Message.Snoozed(now) {
					continue
				}
				marked[r.Message.ID] = true
			case prefs.MutesThread(r.Message.Thread):
				// A thread u muted: out of Unseen.
			case !r.Message.IsRead() && !r.Message.IsArchived() && now.Before(r.Message.ExpiresAt) && r.Message.Due(now) && !r.Message.Snoozed(now):
				n.add(r.Message.Category, 1)
			}
		}
		if res.Next == "" || res.Next <= seen {
			break
		}
		q.Before = res.Next
		if res, err = ib.store.Query(ctx, q); err != nil {
			return nil, false, err
		}
	}
	for _, p := range parts[1:] {
		sq := driver.Query{Partition: p, After: seen, Before: feedBound(now), Limit: unseenPage, Now: now, Archived: driver.NotArchived}
		for {
			res, err := v.query(ctx, sq)
			if err != nil {
				return nil, false, err
			}
			for _, r := range res.Records {
				if r.Message.ID > seen && !marked[r.Message.ID] && lentRead(r, nil, positions.group).IsZero() {
					n.add(r.Message.Category, 1)
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

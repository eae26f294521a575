package inbox

import (
	"context"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"
)

// Counter is one stats record (kind US): the published and read tallies of
// a partition, for all categories (Category "", stored as c#*) or one
// category (c#<category>). The same type carries a change to a counter,
// where the fields hold the amounts to add.
//
// In a user's partition, the seed's counters tally every read, receipts of
// everyone's and of every group's messages alike; counters with a Group
// tally again the reads of that group's messages (c#*#<group>,
// c#<category>#<group>), so that Counts can leave out the groups the user
// is not in.
type Counter struct {
	Partition Partition
	// Category is "" for the partition's total (c#*).
	Category string
	// Group is set for the read counters of one group's messages in a
	// user's partition; "" for the partition's own counters.
	Group     string
	Published int64
	// Read is always zero in a shared partition.
	Read int64
}

// Tally is a total, read and unread count.
type Tally struct {
	Total  int64
	Read   int64
	Unread int64
}

// Counts is a user's counts in one inbox, direct messages and broadcasts
// together: exactly what a full List of the user's feed shows.
type Counts struct {
	Tally
	// Categories holds a Tally for each category of which the user's feed
	// holds a message.
	Categories map[string]Tally
}

// newTally computes unread from total and read. Counts are exact, so read
// never exceeds total unless the table was changed behind the library's
// back (Recount repairs that); unread is then shown as zero, not negative.
func newTally(total, read int64) Tally {
	return Tally{Total: total, Read: read, Unread: max(total-read, 0)}
}

// countSum adds up counters and changes to them by category.
type countSum map[string]*Counter

// add adds c's tallies to its category's sum (read only with withRead).
func (s countSum) add(c Counter, withRead bool) {
	t := s[c.Category]
	if t == nil {
		t = &Counter{Category: c.Category}
		s[c.Category] = t
	}
	t.Published += c.Published
	if withRead {
		t.Read += c.Read
	}
}

// counts returns the sums as Counts, leaving out empty categories.
func (s countSum) counts() Counts {
	out := Counts{Categories: map[string]Tally{}}
	for cat, t := range s {
		if cat == "" {
			out.Tally = newTally(t.Published, t.Read)
			continue
		}
		if t.Published != 0 || t.Read != 0 {
			out.Categories[cat] = newTally(t.Published, t.Read)
		}
	}
	return out
}

// Counts returns u's total, read and unread counts, overall and per
// category: exactly what a full List of u's feed shows at this instant,
// u's direct messages and the messages of everyone and of u's groups.
//
// It reads the stats of u's partition and of each shared one
// (Store.Stats, in parallel: one round trip, whatever the number of
// messages), adds their counters, takes out the reads of groups u is not
// in, and takes out the ledger entries of records that have expired, so
// messages that DynamoDB's TTL has not deleted yet, or whose deletion the
// stream has not accounted yet, are not counted. While a broadcast removed
// before its expiry has receipts standing (until its original expiry), a
// second round trip reads u's receipt of each such broadcast, so that u's
// read count leaves it out too.
func (ib *Inbox) Counts(ctx context.Context, u User) (Counts, error) {
	if err := u.Validate(); err != nil {
		return Counts{}, err
	}
	now := ib.now()
	shared := u.shared()
	stats := make([]Stats, 1+len(shared))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range append([]Partition{u.partition()}, shared...) {
		g.Go(func() (err error) { stats[i], err = ib.store.Stats(gctx, p, now); return err })
	}
	if err := g.Wait(); err != nil {
		return Counts{}, err
	}
	in := map[string]bool{"": true} // the groups whose reads count
	for _, p := range shared[1:] {
		in[p.Group] = true
	}
	sum := countSum{"": {}}
	for _, c := range stats[0].Counters {
		switch {
		case c.Group == "":
			sum.add(c, true)
		case !in[c.Group]:
			sum.add(Counter{Category: c.Category, Read: -c.Read}, true)
		}
	}
	var tombstones []Record
	for _, st := range stats[1:] {
		for _, c := range st.Counters {
			if c.Group == "" {
				sum.add(c, false)
			}
		}
		tombstones = append(tombstones, st.Tombstones...)
	}
	// Expired entries, and receipts of removed broadcasts, are counted
	// out, but for the reads of groups left out already.
	out := func(recs ...Record) {
		for _, r := range recs {
			if !r.Receipt || in[r.Message.Audience.Group] {
				for _, d := range RemovalDeltas(r) {
					if d.Group == "" {
						sum.add(d, true)
					}
				}
			}
		}
	}
	for _, st := range stats {
		out(st.Expired...)
	}
	dead, err := ib.deadReceipts(ctx, u, tombstones, now)
	if err != nil {
		return Counts{}, err
	}
	out(dead...)
	return sum.counts(), nil
}

// deadReceipts returns u's unexpired receipts of the broadcasts tombstones
// name: broadcasts removed before they expired, whose receipts still
// stand and count as read until they expire.
func (ib *Inbox) deadReceipts(ctx context.Context, u User, tombstones []Record, now time.Time) ([]Record, error) {
	keys := make([]Key, 0, len(tombstones))
	for _, t := range tombstones {
		keys = append(keys, Key{Partition: u.partition(), ID: t.Message.ID})
	}
	var out []Record
	for len(keys) > 0 {
		n := min(len(keys), maxGetKeys)
		recs, err := ib.store.GetRecords(ctx, keys[:n])
		if err != nil {
			return nil, err
		}
		keys = keys[n:]
		for _, r := range recs {
			if r.Receipt && now.Before(r.Message.ExpiresAt) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// maxGetKeys is the most keys of one Store.GetRecords.
const maxGetKeys = 100

// counterDeltas returns the changes to partition p's total and, if category
// is set, its category counter.
func counterDeltas(p Partition, category string, published, read int64) []Counter {
	out := []Counter{{Partition: p, Published: published, Read: read}}
	if category != "" {
		out = append(out, Counter{Partition: p, Category: category, Published: published, Read: read})
	}
	return out
}

// readDeltas returns the changes to user partition p's read counters for
// read messages of category of group (of everyone's, or a direct message,
// if group is ""): the seed's counters, and the group's.
func readDeltas(p Partition, category, group string, read int64) []Counter {
	out := counterDeltas(p, category, 0, read)
	if group != "" {
		for _, c := range counterDeltas(p, category, 0, read) {
			c.Group = group
			out = append(out, c)
		}
	}
	return out
}

// mergeCounters sums changes to the same counter, in a stable order.
func mergeCounters(cs []Counter) []Counter {
	type key struct {
		p          Partition
		cat, group string
	}
	idx := map[key]int{}
	var out []Counter
	for _, c := range cs {
		k := key{c.Partition, c.Category, c.Group}
		if i, ok := idx[k]; ok {
			out[i].Published += c.Published
			out[i].Read += c.Read
			continue
		}
		idx[k] = len(out)
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition.PK() < out[j].Partition.PK()
		}
		return CounterSK(out[i].Category, out[i].Group) < CounterSK(out[j].Category, out[j].Group)
	})
	return out
}

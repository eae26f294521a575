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
type Counter struct {
	Partition Partition
	// Category is "" for the partition's total (c#*).
	Category  string
	Published int64
	// Read is always zero in the public partition.
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

// add adds c to its category's sum; read counts only with withRead.
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
// category: exactly what a full List of u's feed shows at this instant.
//
// It reads the stats of u's partition and of the public one (Store.Stats,
// in parallel: one round trip, whatever the number of messages), adds
// their counters and takes out the ledger entries of records that have
// expired, so messages that DynamoDB's TTL has not deleted yet, or whose
// deletion the stream has not accounted yet, are not counted. While a
// broadcast removed before its expiry has receipts standing (until its
// original expiry), a second round trip reads u's receipt of each such
// broadcast, so that u's read count leaves it out too.
func (ib *Inbox) Counts(ctx context.Context, u User) (Counts, error) {
	if err := u.Validate(); err != nil {
		return Counts{}, err
	}
	now := ib.now()
	var user, public Stats
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { public, err = ib.store.Stats(gctx, u.Scope.public(), now); return err })
	g.Go(func() (err error) { user, err = ib.store.Stats(gctx, u.partition(), now); return err })
	if err := g.Wait(); err != nil {
		return Counts{}, err
	}
	sum := countSum{"": {}}
	for _, c := range user.Counters {
		sum.add(c, true)
	}
	for _, c := range public.Counters {
		sum.add(c, false)
	}
	for _, e := range append(user.Expired, public.Expired...) {
		for _, d := range RemovalDeltas(e) {
			sum.add(d, true)
		}
	}
	dead, err := ib.deadReceipts(ctx, u, public.Tombstones, now)
	if err != nil {
		return Counts{}, err
	}
	for _, r := range dead {
		for _, d := range RemovalDeltas(r) {
			sum.add(d, true)
		}
	}
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

// mergeCounters sums changes to the same counter, in a stable order.
func mergeCounters(cs []Counter) []Counter {
	type key struct {
		p   Partition
		cat string
	}
	idx := map[key]int{}
	var out []Counter
	for _, c := range cs {
		k := key{c.Partition, c.Category}
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
		return out[i].Category < out[j].Category
	})
	return out
}

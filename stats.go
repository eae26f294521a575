package inbox

import (
	"context"
	"sort"
	"sync"
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
// together.
type Counts struct {
	Tally
	// Categories holds a Tally for each category that has a stats record in
	// the user's or the public partition.
	Categories map[string]Tally
}

// newTally computes unread, never below zero: read can briefly exceed
// total while removals of expired messages and their receipts are accounted
// one stream record at a time.
func newTally(total, read int64) Tally {
	return Tally{Total: total, Read: read, Unread: max(total-read, 0)}
}

// countsFrom combines a user's counters with the public partition's.
func countsFrom(user, public []Counter) Counts {
	type pr struct{ published, read int64 }
	sum := map[string]*pr{}
	add := func(cs []Counter, withRead bool) {
		for _, c := range cs {
			p := sum[c.Category]
			if p == nil {
				p = &pr{}
				sum[c.Category] = p
			}
			p.published += c.Published
			if withRead {
				p.read += c.Read
			}
		}
	}
	add(user, true)
	add(public, false)
	out := Counts{Categories: map[string]Tally{}}
	for cat, p := range sum {
		if cat == "" {
			out.Tally = newTally(p.published, p.read)
			continue
		}
		out.Categories[cat] = newTally(p.published, p.read)
	}
	return out
}

// Counts returns u's total, read and unread counts, overall and per
// category, from the stats records of u's partition and the public one
// only: one round trip (the two reads run in parallel), whatever the number
// of messages.
//
// Counts include messages that have expired but that DynamoDB's TTL has not
// yet deleted (which List already hides): they fall when the deletion is
// accounted by StreamHandler.
func (ib *Inbox) Counts(ctx context.Context, u User) (Counts, error) {
	if err := u.Validate(); err != nil {
		return Counts{}, err
	}
	var (
		wg           sync.WaitGroup
		user, public []Counter
		uErr, pErr   error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		public, pErr = ib.store.Counters(ctx, u.Scope.public())
	}()
	user, uErr = ib.store.Counters(ctx, u.partition())
	wg.Wait()
	if uErr != nil {
		return Counts{}, uErr
	}
	if pErr != nil {
		return Counts{}, pErr
	}
	return countsFrom(user, public), nil
}

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

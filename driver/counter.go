package driver

import "sort"

// Counter is one stats record (kind US): the tallies of a partition, for
// all categories (Category "", stored as c#*) or one category
// (c#<category>). The same type carries a change to a counter, where the
// fields hold the amounts to add.
//
// Published and Read are the seed's: the messages of the partition, and
// the records of a user's partition that are read (its read messages and
// receipts). The other tallies are the user's marks, in a user's
// partition only: Archived (records archived), ArchivedRead (archived and
// read) and Hidden (receipts of broadcasts the user deleted).
//
// In a user's partition, the counters tally receipts of everyone's and of
// every group's messages alike; counters with a Group tally again the
// receipts of that group's messages (c#*#<group>, c#<category>#<group>),
// so that Counts can leave out the groups the user is not in.
type Counter struct {
	Partition Partition
	// Category is "" for the partition's total (c#*).
	Category string
	// Group is set for the counters of one group's receipts in a user's
	// partition; "" for the partition's own counters.
	Group     string
	Published int64
	// Read, Archived, ArchivedRead and Hidden are always zero in a shared
	// partition.
	Read         int64
	Archived     int64
	ArchivedRead int64
	Hidden       int64
}

// tallies returns c's tallies alone, without its key.
func (c Counter) Tallies() Counter {
	return Counter{Published: c.Published, Read: c.Read, Archived: c.Archived, ArchivedRead: c.ArchivedRead, Hidden: c.Hidden}
}

// IsZero reports whether every tally of c is zero.
func (c Counter) IsZero() bool { return c.Tallies() == Counter{} }

// Add adds d's tallies to c's (not its key): how a store applies a change.
func (c *Counter) Add(d Counter) {
	c.Published += d.Published
	c.Read += d.Read
	c.Archived += d.Archived
	c.ArchivedRead += d.ArchivedRead
	c.Hidden += d.Hidden
}

// negated returns c with every tally negated.
func (c Counter) Negated() Counter {
	c.Published, c.Read, c.Archived, c.ArchivedRead, c.Hidden = -c.Published, -c.Read, -c.Archived, -c.ArchivedRead, -c.Hidden
	return c
}

// CounterDeltas returns the changes to partition p's total and, if category
// is set, its category counter.
func CounterDeltas(p Partition, category string, published, read int64) []Counter {
	return tallyDeltas(p, category, "", Counter{Published: published, Read: read})
}

// tallyDeltas returns the changes t to partition p's counters of group
// ("" for the partition's own): the total's and, if category is set, the
// category's.
func tallyDeltas(p Partition, category, group string, t Counter) []Counter {
	t = t.Tallies()
	t.Partition, t.Group = p, group
	out := []Counter{t}
	if category != "" {
		t.Category = category
		out = append(out, t)
	}
	return out
}

// MergeCounters sums changes to the same counter, in a stable order.
func MergeCounters(cs []Counter) []Counter {
	type key struct {
		p          Partition
		cat, group string
	}
	idx := map[key]int{}
	var out []Counter
	for _, c := range cs {
		k := key{c.Partition, c.Category, c.Group}
		if i, ok := idx[k]; ok {
			out[i].Add(c)
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

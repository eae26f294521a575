package driver

import (
	"fmt"
	"sort"
)

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
//
// A thread's counter (Thread set, Category "") tallies the same for the
// records of one thread (ThreadCounterSK): in a shared partition its
// broadcasts; in a user's partition the user's direct messages of the
// thread (Group "") and, apart, the user's receipts of its messages to
// each group (Group set, PublicGroup for everyone's), so that each of a
// user's threads is counted from its own partition's counter and the
// user's receipts of it, without a total across them.
type Counter struct {
	Partition Partition
	// Category is "" for the partition's total (c#*) and for a thread's
	// counter.
	Category string
	// Group is set for the counters of one group's receipts in a user's
	// partition; "" for the partition's own counters.
	Group string
	// Thread is set for a thread's counter.
	Thread string
	// Latest is, on a thread's own counter (Group ""), the greatest ID of
	// the messages ever counted in it: the thread's last activity, which
	// removals do not lower. In a change, it raises the counter's Latest
	// to at least this ("" leaves it).
	Latest    string
	Published int64
	// Read, Archived, ArchivedRead and Hidden are always zero in a shared
	// partition.
	Read         int64
	Archived     int64
	ArchivedRead int64
	Hidden       int64
}

// SK returns the sort key of c's stats record: CounterSK, or
// ThreadCounterSK for a thread's counter.
func (c Counter) SK() string {
	if c.Thread != "" {
		return ThreadCounterSK(c.Thread, c.Group)
	}
	return CounterSK(c.Category, c.Group)
}

// Tallies returns c's tallies alone, without its key or Latest.
func (c Counter) Tallies() Counter {
	return Counter{Published: c.Published, Read: c.Read, Archived: c.Archived, ArchivedRead: c.ArchivedRead, Hidden: c.Hidden}
}

// IsZero reports whether every tally of c is zero.
func (c Counter) IsZero() bool { return c.Tallies() == Counter{} }

// Add adds d's tallies to c's (not its key) and raises c's Latest to d's:
// how a store applies a change.
func (c *Counter) Add(d Counter) {
	c.Latest = max(c.Latest, d.Latest)
	c.Published += d.Published
	c.Read += d.Read
	c.Archived += d.Archived
	c.ArchivedRead += d.ArchivedRead
	c.Hidden += d.Hidden
}

// Negated returns c with every tally negated, and no Latest.
func (c Counter) Negated() Counter {
	c.Latest = ""
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
		p  Partition
		sk string
	}
	idx := map[key]int{}
	var out []Counter
	for _, c := range cs {
		k := key{c.Partition, c.SK()}
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
		return out[i].SK() < out[j].SK()
	})
	return out
}

// threadDeltas returns the change t to the counter of rec's thread, if it
// has one: rec's own (with rec's ID as its Latest, for a message or
// broadcast), or for a receipt the user's receipts of the thread's
// messages to rec's group (PublicGroup for everyone's).
func threadDeltas(rec Record, t Counter) []Counter {
	if rec.Message.Thread == "" {
		return nil
	}
	t = t.Tallies()
	t.Partition, t.Thread = rec.Partition, rec.Message.Thread
	switch {
	case !rec.Receipt:
		t.Latest = rec.Message.ID
	case rec.Message.Audience.Group != "":
		t.Group = rec.Message.Audience.Group
	default:
		t.Group = PublicGroup
	}
	return []Counter{t}
}

// ValidateCounter checks the key of counter c, as every Store must before
// it writes one: a category and group that are keys, a thread's counter
// without a category, and a group or a Latest only where they can be (a
// group only in a user's partition, a Latest, a message ID, only on a
// thread's own counter). Anything else is ErrInvalidInput.
func ValidateCounter(c Counter) error {
	bad := func(what string) error {
		return fmt.Errorf("%w: counter %s of %s: %s", ErrInvalidInput, c.SK(), c.Partition.PK(), what)
	}
	switch {
	case ValidateCategory(c.Category) != nil || ValidateThread(c.Thread) != nil:
		return bad("not a key")
	case c.Group != "" && (ValidateGroup(c.Group) != nil || c.Partition.IsShared()):
		return bad("a group that cannot be")
	case c.Group == PublicGroup && c.Thread == "":
		return bad("the public group outside a thread's counter")
	case c.Thread != "" && c.Category != "":
		return bad("a thread's counter of a category")
	case c.Latest != "" && (c.Thread == "" || c.Group != "" || ValidateMessageID(c.Latest) != nil):
		return bad("a latest message that cannot be")
	}
	return nil
}

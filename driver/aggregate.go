package driver

import (
	"fmt"
	"strconv"
)

// MaxAggregateSenders is the most distinct senders an aggregated message
// (Message.Count) keeps: an item whose next message comes from another
// sender once it has this many starts a new item.
const MaxAggregateSenders = 20

// MaxAggregateMembers is the most IDs of the messages it took in that an
// aggregated message keeps (Message.Members): the latest of them, by
// which a retried publish of one of them finds it delivered.
const MaxAggregateMembers = 20

// MaxAggregateCount is the greatest Message.Count: an item that holds
// this many messages takes no more (a new item starts).
const MaxAggregateCount int64 = 1<<53 - 1

// AggregateAttribute names the dynamo Store's attribute of an aggregated
// message's item fields (a map of its count, senders and members).
const AggregateAttribute = "aggregate"

// ValidateAggregate checks the aggregate fields of rec: set only on a
// message in a thread of a user's partition, delivered now, with a count
// of at least its members and one, and at most MaxAggregateSenders
// senders (keys, or "" for none, each once) and MaxAggregateMembers
// members (message IDs, each once, not its own).
func ValidateAggregate(rec Record) error {
	m := rec.Message
	if m.Count == 0 {
		if len(m.Senders) > 0 || len(m.Members) > 0 || m.First != "" || rec.Follows != "" {
			return fmt.Errorf("%w: record %s: senders, members, first or follows without a count", ErrInvalidInput, m.ID)
		}
		return nil
	}
	switch {
	case m.Count < 0 || m.Count < len(m.Members)+1 || int64(m.Count) > MaxAggregateCount:
		return fmt.Errorf("%w: aggregated record %s: count %d below its %d members and itself", ErrInvalidInput, m.ID, m.Count, len(m.Members))
	case rec.Receipt || rec.Partition.IsShared() || m.Thread == "" || !m.DeliverAt.IsZero():
		return fmt.Errorf("%w: aggregated record %s: only a user's direct message in a thread, delivered now", ErrInvalidInput, m.ID)
	case len(m.Senders) > MaxAggregateSenders || len(m.Members) > MaxAggregateMembers:
		return fmt.Errorf("%w: aggregated record %s: %d senders and %d members, at most %d and %d", ErrInvalidInput, m.ID, len(m.Senders), len(m.Members), MaxAggregateSenders, MaxAggregateMembers)
	case m.First != "" && (m.Count < 2 || m.First == m.ID || ValidateMessageID(m.First) != nil):
		return fmt.Errorf("%w: aggregated record %s: first message %q of an item of %d", ErrInvalidInput, m.ID, m.First, m.Count)
	case rec.Follows != "" && ValidateMessageID(rec.Follows) != nil:
		return fmt.Errorf("%w: aggregated record %s follows %q, no message ID", ErrInvalidInput, m.ID, rec.Follows)
	}
	seen := map[string]bool{}
	for _, s := range m.Senders {
		if seen[s] {
			return fmt.Errorf("%w: aggregated record %s: sender %q twice", ErrInvalidInput, m.ID, s)
		}
		seen[s] = true
		if s != "" {
			if err := ValidateUserID(s); err != nil {
				return fmt.Errorf("aggregated record %s: sender: %w", m.ID, err)
			}
		}
	}
	ids := map[string]bool{m.ID: true}
	for _, id := range m.Members {
		if ids[id] {
			return fmt.Errorf("%w: aggregated record %s: member %q twice, or itself", ErrInvalidInput, m.ID, id)
		}
		ids[id] = true
		if err := ValidateMessageID(id); err != nil {
			return fmt.Errorf("aggregated record %s: member: %w", m.ID, err)
		}
	}
	return nil
}

// aggregateSize returns the size of rec's aggregate attribute as
// DynamoDB counts it (zero for a message that is not aggregated).
func aggregateSize(m Message) int {
	if m.Count == 0 {
		return 0
	}
	v := map[string]any{"n": float64(m.Count)}
	if len(m.Senders) > 0 {
		s := make([]any, len(m.Senders))
		for i, x := range m.Senders {
			s[i] = x
		}
		v["s"] = s
	}
	if len(m.Members) > 0 {
		s := make([]any, len(m.Members))
		for i, x := range m.Members {
			s[i] = x
		}
		v["m"] = s
	}
	if m.First != "" {
		v["f"] = m.First
	}
	return len(AggregateAttribute) + valueSize(v)
}

// ValidateReplaced checks mk, a mark given to PutMessage with rec that
// is no receipt: the deletion of the message of rec's item that rec
// takes in (rec aggregated with more than itself), of rec's partition
// and thread.
func validateReplaced(rec Record, mk Mark) error {
	m := rec.Message
	switch {
	case m.Count < 2 || mk.Receipt || !mk.Delete || mk.Key.Partition != rec.Partition || mk.Key.ID == "" || mk.Key.ID == m.ID || mk.Thread != m.Thread:
		return fmt.Errorf("%w: mark of %q in %s put with %s: not the deletion of a message of its item", ErrInvalidInput, mk.Key.ID, mk.Key.Partition.PK(), m.ID)
	case mk.Cover != nil || mk.Preferences != nil || mk.Fence || mk.Seen != "":
		return fmt.Errorf("%w: mark of %q put with %s: not a message's", ErrInvalidInput, mk.Key.ID, m.ID)
	}
	return nil
}

// ValidateAggregatedPut checks that the deltas of PutMessage of rec, an
// aggregated message (Count set), change its thread's own counter with
// rec's ID as Latest, which the put's condition on the counter's Latest
// (Record.Follows) stands on: ErrInvalidInput otherwise. Every Store
// calls it before it writes; it checks nothing of another record.
func ValidateAggregatedPut(rec Record, deltas []Counter) error {
	if rec.Message.Count == 0 {
		return nil
	}
	for _, d := range deltas {
		if d.Partition == rec.Partition && d.Thread == rec.Message.Thread && d.Group == "" && d.Category == "" && !d.Muted && !d.Covered && d.Latest == rec.Message.ID {
			return nil
		}
	}
	return fmt.Errorf("%w: aggregated record %s put without its thread's change of Latest", ErrInvalidInput, rec.Message.ID)
}

// AggregateRead is an aggregate attribute as a decoder read it: its
// count's decimal (n), its senders (s), members (m) and first message
// (f); Shaped is false if any part held another type than the library
// writes (a number, lists of strings, a string), a NULL or a set.
type AggregateRead struct {
	N                string
	Senders, Members []string
	First            string
	Shaped           bool
}

// WithAggregate returns rec with the aggregate fields a decoder read
// (the dynamo Store's item, or a stream image) set: only on the library's
// direct message of a thread in a user's partition (ledgered, no
// receipt), and only if a is shaped as the library writes it and
// ValidateAggregate accepts it; else rec as it is. Empty lists read as
// none. Both decoders read the attribute so, whatever another program put
// there.
func WithAggregate(rec Record, a AggregateRead) Record {
	if !a.Shaped || !rec.Ledgered() || rec.Receipt || rec.Partition.IsShared() || rec.Message.Thread == "" {
		return rec
	}
	count, err := strconv.Atoi(a.N)
	if err != nil || count <= 0 {
		return rec
	}
	m := rec.Message
	m.Count, m.Senders, m.Members, m.First = count, a.Senders, a.Members, a.First
	if len(m.Senders) == 0 {
		m.Senders = nil
	}
	if len(m.Members) == 0 {
		m.Members = nil
	}
	if ValidateAggregate(Record{Partition: rec.Partition, Message: m}) != nil {
		return rec
	}
	rec.Message = m
	return rec
}

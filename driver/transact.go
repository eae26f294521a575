package driver

import "fmt"

// MaxTransactItems is the most items one DynamoDB transaction
// (TransactWriteItems) may hold, and so the most one Store.PutMessage,
// Store.Mark or Store.ApplyRemoval may ask for (see PutItems, MarkItems
// and RemovalItems): DynamoDB refuses a larger one whole, and every Store
// refuses it so, with ErrInvalidInput, before it writes anything.
const MaxTransactItems = 100

// PutItems returns how many items the DynamoDB transaction of
// Store.PutMessage(rec, deltas, receipts...) holds, as the dynamo Store
// makes it: the record and its ledger entry; a scheduled record's pending
// entry and its timer; a shared partition's record's day and hour
// buckets; each receipt and its ledger entry; and one per counter
// deltas change, but a muted or covered thread's (Counter.Muted,
// Counter.Covered) and a category's whose only change is to its Above,
// which are written to their partition's total (c#*), or, for a covered
// thread of a group's messages (Group set), to the user's counter of the
// group (c#*#<group>, CounterSK("", group)); with the total of each
// partition of deltas, of rec's partition if it is shared or rec has a
// category (for its condition: bucketed, or not opted out), and of each
// user partition whose recent receipts a receipt records
// (Mark.RecordsRecent), once, and the counter of each group a covered
// change is written to, once, and only if deltas do not change it
// already (a receipt's write usually does).
//
// A PutMessage whose partition's watermark is not below rec's ID makes
// its transaction again without that partition's Above changes (see
// Store.PutMessage): PutItems of the deltas so changed, which may be more
// (a category's change of Above alone takes no item of its own, as it is
// written to the total; a change of nothing takes one).
func PutItems(rec Record, deltas []Counter, receipts []Mark) int {
	n := 2 // the record and its ledger entry
	if !rec.Message.DeliverAt.IsZero() {
		n += 2 // the pending entry and its timer
	}
	p := rec.Partition
	var totals []Partition
	if p.IsShared() {
		n += 2 // the day and hour buckets
		totals = append(totals, p)
	} else if rec.Message.Category != "" {
		totals = append(totals, p)
	}
	for _, d := range deltas {
		if d.Above != 0 && !d.Partition.IsShared() {
			totals = append(totals, d.Partition)
		}
	}
	for _, mk := range receipts {
		switch {
		case mk.Fence:
			totals = append(totals, mk.Key.Partition) // its condition, on c#*
			continue
		case !mk.Receipt:
			// The message an aggregated one takes in, deleted with its
			// entry and timed entries.
			_, dels := mk.TimedWrites()
			n += 2 + len(dels)
			continue
		}
		n += 2 // the receipt and its ledger entry
		if mk.RecordsRecent() {
			totals = append(totals, mk.Key.Partition)
		}
	}
	return n + counterItems(deltas, totals, nil)
}

// MarkItems returns how many items the DynamoDB transaction of
// Store.Mark(marks, deltas) holds, as the dynamo Store makes it: for a
// preferences mark, two (the total, c#*, and the preferences item); for
// each watermark mark but a Fence, the seen item; for each cover mark
// (Mark.Cover), the position item (PositionSK); for each mark of a
// record, the record and its ledger entry, the timed entries it deletes
// and those it writes (Mark.TimedWrites) with the timer of each one
// written at a new key, its reader item (Mark.ReaderChange) and, for a
// receipt, one check of its broadcast per broadcast; and the counters as
// PutItems counts them, with the total of each partition of a watermark
// or cover mark and of each partition whose recent receipts a mark records
// (Mark.RecordsRecent), and with the user's counter of the group
// (c#*#<group>) of each cover mark of a group's thread
// (CoverChange.Group), which keeps her position there, and of each
// receipt mark of a group's message that is refused if her position
// covers it (Mark.UnreadOverCover, Mark.MadeUncovered), whose condition
// is there, each once and only if not counted already. Two marks of one
// key count as two.
func MarkItems(marks []Mark, deltas []Counter) int {
	if len(marks) == 1 && marks[0].Preferences != nil {
		return 2
	}
	n := 0
	var totals []Partition
	var groups []Counter
	checked := map[Key]bool{}
	for _, mk := range marks {
		if mk.RecordsRecent() {
			totals = append(totals, mk.Key.Partition)
		}
		if mk.Receipt && mk.Shared.Group != "" && (mk.UnreadOverCover() || mk.MadeUncovered()) {
			groups = append(groups, Counter{Partition: mk.Key.Partition, Group: mk.Shared.Group})
		}
		if mk.Key.ID == "" {
			totals = append(totals, mk.Key.Partition)
			if mk.Cover != nil && mk.Cover.Group != "" {
				groups = append(groups, Counter{Partition: mk.Key.Partition, Group: mk.Cover.Group})
			}
			if !mk.Fence {
				n++ // the seen item, or a cover mark's position item
			}
			continue
		}
		n += 2 // the record and its ledger entry
		puts, dels := mk.TimedWrites()
		n += len(dels)
		for _, e := range puts {
			n++
			if mk.Timed != TimedKeyOf(e) {
				n++ // a new entry's timer
			}
		}
		if _, ok := mk.ReaderChange(); ok {
			n++
		}
		if shared := (Key{Partition: mk.Shared, ID: mk.Key.ID}); mk.Receipt && !checked[shared] {
			checked[shared] = true
			n++ // the check of its broadcast
		}
	}
	return n + counterItems(deltas, totals, groups)
}

// RemovalItems returns how many items the DynamoDB transaction of
// Store.ApplyRemoval(r) holds, as the dynamo Store makes it first: the
// deletion of the record's ledger entry (for a record without one, the
// marker); for a record with one, the deletion of its timed entries (the
// one it notes, or those an earlier version kept of it: see
// Store.ApplyRemoval) and, in a shared partition, the updates of its day
// and hour buckets; the deletion of its reader item
// (Removal.ReaderRemoval); the tombstone; with Delete, the record's
// deletion; and the counters as PutItems counts them, with the total of
// the record's partition for a record without an entry (for the check
// of its recount time) or deltas that change an Above.
//
// Made again, the transaction may hold fewer items (without the reader
// item, when another receipt's stands at its key; or without the
// counters, when a recount counted the record out already) or, when the
// watermark of the record's partition is not below its ID, those of the
// deltas without any Above change, which may be more (see PutItems).
func RemovalItems(r Removal) int {
	rec := r.Record
	n := 1 // the entry's deletion, or the marker
	if rec.Ledgered() {
		switch {
		case rec.Timed != "":
			n++
		default:
			if !rec.Message.SnoozedUntil.IsZero() {
				n++
			}
			if !rec.Message.DeliverAt.IsZero() {
				n++
			}
		}
		if rec.Partition.IsShared() {
			n += 2 // the day and hour buckets
		}
	}
	if _, ok := r.ReaderRemoval(); ok {
		n++
	}
	if r.Tombstone {
		n++
	}
	if r.Delete {
		n++
	}
	var totals []Partition
	above := false
	for _, d := range r.Deltas {
		above = above || d.Above != 0
	}
	if !rec.Ledgered() || above {
		totals = append(totals, rec.Partition)
	}
	return n + counterItems(r.Deltas, totals, nil)
}

// counterItems returns how many counter items deltas write, as the
// dynamo Store writes them, with the totals (c#*) of partitions and the
// user's counters of groups (c#*#<group>, of groups' Partition and
// Group) besides: one per counter changed, but a muted or covered
// thread's, whose change is written to its partition's total, or, for a
// covered thread of a group's messages, to the user's counter of the
// group, and a category's whose only change is to its Above, which is
// written to the total too; the total of each partition of those changes
// and of totals, once; and the counter of each group of those covered
// changes and of groups that deltas do not change already, once.
func counterItems(deltas []Counter, totals []Partition, groups []Counter) int {
	n := 0
	partitions := map[Partition]bool{}
	for _, p := range totals {
		partitions[p] = true
	}
	type groupKey struct {
		p     Partition
		group string
	}
	written := map[groupKey]bool{} // the counters of groups written, true once counted
	for _, g := range groups {
		written[groupKey{g.Partition, g.Group}] = false
	}
	for _, d := range deltas {
		partitions[d.Partition] = true
		if d.Covered && d.Group != "" {
			if k := (groupKey{d.Partition, d.Group}); !written[k] {
				written[k] = false
			}
		}
		if d.Muted || d.Covered || d.Category == "" && d.Group == "" && d.Thread == "" {
			continue // on the total, or on the counter of the group
		}
		if d.Category == "" && d.Thread == "" {
			written[groupKey{d.Partition, d.Group}] = true // counted here
		}
		if d.Category != "" && d.Above != 0 {
			if d.Above = 0; d == (Counter{Partition: d.Partition, Category: d.Category, Group: d.Group}) {
				continue // its Above on the total
			}
		}
		n++
	}
	for _, counted := range written {
		if !counted {
			n++
		}
	}
	return n + len(partitions)
}

// ValidatePutItems checks that the DynamoDB transaction of
// Store.PutMessage(rec, deltas, receipts...) holds at most
// MaxTransactItems items (PutItems), as every Store must before it
// writes: ErrInvalidInput otherwise.
func ValidatePutItems(rec Record, deltas []Counter, receipts []Mark) error {
	if n := PutItems(rec, deltas, receipts); n > MaxTransactItems {
		return fmt.Errorf("%w: put of %s takes %d transaction items, at most %d", ErrInvalidInput, rec.Message.ID, n, MaxTransactItems)
	}
	return nil
}

// ValidateRemovalItems checks that the DynamoDB transaction of
// Store.ApplyRemoval(r) holds at most MaxTransactItems items
// (RemovalItems), as every Store must before it writes: ErrInvalidInput
// otherwise.
func ValidateRemovalItems(r Removal) error {
	if n := RemovalItems(r); n > MaxTransactItems {
		return fmt.Errorf("%w: removal of %s takes %d transaction items, at most %d", ErrInvalidInput, r.Record.Message.ID, n, MaxTransactItems)
	}
	return nil
}

// validateMarkItems checks that the DynamoDB transaction of
// Store.Mark(marks, deltas) holds at most MaxTransactItems items
// (MarkItems): ErrInvalidInput otherwise.
func validateMarkItems(marks []Mark, deltas []Counter) error {
	if n := MarkItems(marks, deltas); n > MaxTransactItems {
		return fmt.Errorf("%w: %d marks take %d transaction items, at most %d", ErrInvalidInput, len(marks), n, MaxTransactItems)
	}
	return nil
}

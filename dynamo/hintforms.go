package dynamo

import (
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/driver"
)

// hintSeen is a receipts' hint (driver.Counter.Latest, TopEntry) of a
// user's counter of her receipts of a shared thread as a write found or
// left it: whether the counter exists, its Latest ("" for no hint) and
// the entry of its Top ("" for none).
type hintSeen struct {
	exists        bool
	latest, entry string
}

// applies reports whether change d of a receipts' hint applies to a
// counter holding h (driver.Counter.ApplyHint's rule): whether the form
// of hintUpdate that changes the hint is the one whose condition holds.
func (h hintSeen) applies(d driver.Counter) bool {
	if d.Top.IsZero() {
		return h.exists && h.latest == d.Latest && h.entry == d.TopEntry
	}
	return !h.exists || h.latest != "" && h.latest <= d.Latest
}

// hintSeenOf returns the receipts' hint of old, a counter item as a
// failed condition returned it (nil: there was none).
func hintSeenOf(old map[string]types.AttributeValue) hintSeen {
	if old == nil {
		return hintSeen{}
	}
	h := hintSeen{exists: true}
	if v, ok := old[attrLatest].(*types.AttributeValueMemberS); ok {
		h.latest = v.Value
	}
	if top, ok := old[attrTop].(*types.AttributeValueMemberM); ok {
		if e, ok := top.Value["e"].(*types.AttributeValueMemberS); ok {
			h.entry = e.Value
		}
	}
	return h
}

// isHintChange reports whether d changes a receipts' hint (see
// hintUpdate).
func isHintChange(d driver.Counter) bool { return d.Group != "" && d.Thread != "" && d.Latest != "" }

// hintForms remembers, for up to hintFormsSize users' counters of their
// receipts of shared threads, the receipts' hint each held when a write
// of this Store last met it, so that the next change of it is made from
// its first attempt in the form of hintUpdate whose condition holds: a
// receipt written below Latest (the pages of a MarkAllRead after the
// first, the read of an older message, or any write on a counter without
// a hint) in the form that leaves the hint, the removal of the receipt
// at Latest in the one that clears it. Without it a write takes the form
// that changes the hint and a removal the one that leaves it, and pays a
// transaction more where that is wrong. A guess only, which the form's
// condition checks: a stale one costs an attempt more, never a wrong
// hint. It is safe for concurrent use.
type hintForms struct {
	mu sync.Mutex
	m  map[[2]string]hintSeen
}

// hintFormsSize bounds the counters a hintForms remembers: past it, it
// forgets them all and starts again.
const hintFormsSize = 1 << 15

// skips returns the forms (see guardedCounterUpdates) of the first
// attempt of a write of deltas: for each change of a receipts' hint whose
// counter f remembers, the form whose condition holds on the hint as
// remembered.
func (f *hintForms) skips(deltas []driver.Counter) map[[2]string]bool {
	out := map[[2]string]bool{}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range deltas {
		if !isHintChange(d) {
			continue
		}
		if h, ok := f.m[hintKey(d)]; ok && h.applies(d) == d.Top.IsZero() {
			out[hintKey(d)] = true // not the usual first form (see counterUpdate)
		}
	}
	return out
}

// saw records the hints a failed write found (see hintFailed).
func (f *hintForms) saw(e *hintFailed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, k := range e.keys {
		f.put(k, e.seen[i])
	}
}

// wrote records the hints deltas left, written in the forms skips holds.
func (f *hintForms) wrote(deltas []driver.Counter, skips map[[2]string]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range deltas {
		if !isHintChange(d) {
			continue
		}
		k := hintKey(d)
		h, known := f.m[k]
		switch changed := skips[k] == d.Top.IsZero(); {
		case changed && d.Top.IsZero():
			f.put(k, hintSeen{exists: true, latest: d.Latest}) // the receipt at Latest removed
		case changed:
			f.put(k, hintSeen{exists: true, latest: d.Latest, entry: d.TopEntry})
		case known && !h.applies(d):
			h.exists = true // left as it was (a removal's form creates a missing counter)
			f.put(k, h)
		default:
			delete(f.m, k) // not as remembered: unknown
		}
	}
}

// put remembers h for the counter at k. f.mu must be held.
func (f *hintForms) put(k [2]string, h hintSeen) {
	if f.m == nil || len(f.m) >= hintFormsSize {
		f.m = map[[2]string]hintSeen{}
	}
	f.m[k] = h
}

// forget forgets the hints of partition p's counters: a reset of its
// counters (Repair) writes them anew.
func (f *hintForms) forget(p driver.Partition) {
	pk := p.PK()
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.m {
		if k[0] == pk {
			delete(f.m, k)
		}
	}
}

// reset records the hints of counters, a partition's counters as a
// Repair wrote them.
func (f *hintForms) reset(counters []driver.Counter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range counters {
		if c.Group == "" || c.Thread == "" {
			continue
		}
		h := hintSeen{exists: true, latest: c.Latest}
		if !c.Top.IsZero() {
			h.entry = c.TopEntry
		}
		f.put(hintKey(c), h)
	}
}

// flipHints makes the next attempt of a write, whose receipts' hints that
// hint names failed their conditions, with each in the other form (and
// remembers the hints the failure showed), or returns kind once the write
// has been made again maxHintFlips times: another write changed those
// counters between every attempt.
func (s *Store) flipHints(hint *hintFailed, skips map[[2]string]bool, flips *int, kind error) error {
	if *flips++; *flips > maxHintFlips {
		return fmt.Errorf("%w: the receipts of counter %s kept changing", kind, hint.names())
	}
	s.forms.saw(hint)
	hint.flip(skips)
	return nil
}

package driver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A timed entry is what hides a record from its user's feed until a time:
// the snooze entry of a snoozed record (until its SnoozedUntil), or the
// pending entry of a scheduled message (until its DeliverAt). It is the
// record as its ledger entry holds it, with that time, stored beside the
// ledger under TimedKey, and tallied in its partition's counters
// (Counter.Snoozed, Counter.Pending, TimedCounters) for as long as it is
// stored: Counts takes the tallies out, less those of the entries whose
// time has come (Stats.Due), so that what is hidden costs one counter read,
// however much is hidden.
//
// A record notes the key of its entry (Record.Timed). The entry stays when
// its time comes, until a mark of its record deletes it (any mark of the
// record does, and the mark that folds it: see Fold) with its tallies: the
// Store writes a timer with each entry (TimerSK), which DynamoDB's TTL
// deletes at the entry's time, and the stream handler folds the entry when
// the timer's removal reaches it. Until then Counts reads the entry among
// those whose time has come, and counts the record back.

// The suffixes of a timed entry's key: a pending entry's, a snooze entry's.
const (
	pendingSuffix = "q"
	snoozeSuffix  = "z"
)

// TimedKey returns the sort key of the timed entry of the record whose
// ledger entry is entry (a LedgerSK), hiding it until at: a pending entry
// if pending, else a snooze entry. It is e#<at in epoch seconds, 10
// digits>#<id>#<tag>#q (or #z): in the ledger's order of time, so that
// Stats reads the entries whose time has come with the ledger entries
// that have expired, in the same range, and none of the others.
func TimedKey(at time.Time, entry string, pending bool) string {
	suffix := snoozeSuffix
	if pending {
		suffix = pendingSuffix
	}
	return timedSK(LedgerPrefix, at, entry) + "#" + suffix
}

// IsTimedKey reports whether sk is a TimedKey (of either kind).
func IsTimedKey(sk string) bool {
	_, _, _, err := parseTimedKey(sk)
	return err == nil
}

// parseTimedKey splits a TimedKey into its time, its record's ID and
// ledger tag, and its kind.
func parseTimedKey(sk string) (at time.Time, idTag string, pending bool, err error) {
	bad := fmt.Errorf("%w: timed key %q", ErrInvalidKey, sk)
	rest, ok := strings.CutPrefix(sk, LedgerPrefix)
	parts := strings.Split(rest, "#")
	if !ok || len(parts) != 4 || len(parts[0]) != ledgerEpochDigits || parts[3] != pendingSuffix && parts[3] != snoozeSuffix {
		return time.Time{}, "", false, bad
	}
	sec, err := strconv.ParseUint(parts[0], 10, 63)
	if err != nil {
		return time.Time{}, "", false, bad
	}
	if _, _, err := ParseLedgerSK(LedgerPrefix + parts[0] + "#" + parts[1] + "#" + parts[2]); err != nil {
		return time.Time{}, "", false, bad
	}
	return time.Unix(int64(sec), 0).UTC(), parts[1] + "#" + parts[2], parts[3] == pendingSuffix, nil
}

// ParseTimedKey parses a TimedKey of a record that expires at expires into
// its time, its record's ledger entry (a LedgerSK) and its kind. Any other
// key is ErrInvalidKey.
func ParseTimedKey(sk string, expires time.Time) (at time.Time, entry string, pending bool, err error) {
	at, idTag, pending, err := parseTimedKey(sk)
	if err != nil {
		return time.Time{}, "", false, err
	}
	return at, fmt.Sprintf("%s%0*d#%s", LedgerPrefix, ledgerEpochDigits, ledgerEpoch(expires), idTag), pending, nil
}

// TimedKeyOf returns the key of e, a timed entry (a record with its
// SnoozedUntil, or a pending one with its DeliverAt).
func TimedKeyOf(e Record) string {
	if !e.Message.DeliverAt.IsZero() {
		return TimedKey(e.Message.DeliverAt, e.Entry, true)
	}
	return TimedKey(e.Message.SnoozedUntil, e.Entry, false)
}

// TimerPrefix begins the sort key of a timed entry's timer: w#<its
// TimedKey>. It sorts after every key Stats reads.
const TimerPrefix = "w#"

// TimerSK returns the sort key of the timer of the timed entry at sk: an
// item that expires (by DynamoDB's TTL) at the entry's time, whose removal
// tells the stream handler to fold the entry (see Fold).
func TimerSK(sk string) string { return TimerPrefix + sk }

// TimedAt returns when timed entry e stops hiding its record: its
// DeliverAt, or its SnoozedUntil.
func TimedAt(e Record) time.Time {
	if !e.Message.DeliverAt.IsZero() {
		return e.Message.DeliverAt
	}
	return e.Message.SnoozedUntil
}

// TimedCounters returns what timed entry e adds to its partition's
// counters while it is stored: the tallies of the message it hides (a
// message's, published with the user's marks, for a receipt's snooze
// entry too: the broadcast it hides counts in its shared partition), in
// Pending for a pending entry, in Snoozed for a snooze entry, on the
// partition's total and its category's, and, for a receipt of a group's
// message, on the group's counters too, as RecordCounters puts a
// receipt's marks.
func TimedCounters(e Record) []Counter {
	msg := e
	msg.Receipt, msg.Message.Audience.Group, msg.Message.Thread = false, "", ""
	var own Tallies
	for _, c := range RecordCounters(msg) {
		if c.Category == "" && c.Group == "" && c.Thread == "" {
			own = c.Own()
		}
	}
	out := tallyDeltas(e.Partition, e.Message.Category, "", Counter{})
	if g := e.Message.Audience.Group; e.Receipt && g != "" {
		out = append(out, tallyDeltas(e.Partition, e.Message.Category, g, Counter{})...)
	}
	for i := range out {
		if e.Message.DeliverAt.IsZero() {
			out[i].Snoozed = own
		} else {
			out[i].Pending = own
		}
	}
	return out
}

// Unseen returns what rec adds to the unread messages of its user's feed,
// as its counters count it (its counted marks, see Record.Counted): 1 for
// a direct message neither read nor archived, -1 for a receipt that marks
// its broadcast read, archived or deleted (the broadcast counts unread in
// its shared partition), 0 for any other. A record of a shared partition
// adds 1 as a message does (its readers' receipts take it out).
func Unseen(rec Record) int64 {
	t := RecordCounters(rec.WithState(rec.countedState()))
	for _, c := range t {
		if c.Category == "" && c.Group == "" && c.Thread == "" {
			return c.Published - c.Archived - c.Hidden - c.Read + c.ArchivedRead
		}
	}
	return 0
}

// countedState returns the marks rec's counters count: its Counted marks
// if known (another program may have changed the marks since), else its
// own, with its snooze and interaction.
func (r Record) countedState() State {
	st := r.State()
	c := r.accounted()
	if c == 0 || c == st.Counted() {
		return st
	}
	counted := c.state()
	counted.SnoozedUntil, counted.InteractedAt = st.SnoozedUntil, st.InteractedAt
	return counted
}

// AboveOf returns what rec, a record of a user's partition, adds to its
// partition's Above while its ID is above the seen watermark: its Unseen,
// less that of its stored timed entry (Record.Timed), which hides it from
// the feed (a snoozed or not yet due direct message adds 0; a snoozed
// receipt -1, for the broadcast it hides). Another program's record (no
// ledger entry) adds nothing: that program keeps no Above, and the record
// counts in it once adopted.
func AboveOf(rec Record) int64 {
	if rec.Partition.IsShared() || !rec.Ledgered() {
		return 0
	}
	n := Unseen(rec)
	if rec.Timed != "" {
		e := rec.WithState(rec.countedState())
		e.Receipt, e.Message.Audience.Group = false, ""
		n -= Unseen(e)
	}
	return n
}

// aboveDeltas returns the change n to the Above of rec's partition: on
// its total and its category's, on its group's (and its group's
// category's) for a receipt of a group's message, and on its thread's
// muted counters (mutedDeltas) for a direct message of a thread.
func aboveDeltas(rec Record, n int64) []Counter {
	if n == 0 {
		return nil
	}
	out := mutedDeltas(rec, 0, n)
	cats := []string{""}
	if c := rec.Message.Category; c != "" {
		cats = append(cats, c)
	}
	for _, c := range cats {
		out = append(out, Counter{Partition: rec.Partition, Category: c, Above: n})
		if g := rec.Message.Audience.Group; rec.Receipt && g != "" {
			out = append(out, Counter{Partition: rec.Partition, Category: c, Group: g, Above: n})
		}
	}
	return out
}

// PutDeltas returns the counter changes of PutMessage(rec): what rec adds
// to its counters (RecordCounters), its pending entry's tallies if it is
// scheduled (Record.Timed), in a user's partition its Above, which
// the Store applies only if the partition's seen watermark is below rec's
// ID, and, for a direct message of a thread, its thread's muted counters
// (MutedCounters, and their Above), which the Store applies only if the
// thread is muted.
func PutDeltas(rec Record) []Counter {
	out := RecordCounters(rec)
	if e, ok := rec.TimedEntry(); ok {
		out = append(out, TimedCounters(e)...)
	}
	out = append(out, aboveDeltas(rec, AboveOf(rec))...)
	out = append(out, mutedDeltas(rec, AboveOf(rec), 0)...)
	return MergeCounters(out)
}

// RemovalDeltasOf returns the counter changes of the removal of rec: its
// RemovalDeltas, its stored timed entry's tallies taken out with the
// entry, in a user's partition its Above taken out, which the Store
// applies only if the partition's seen watermark is below rec's ID, and
// its thread's muted counters, as PutDeltas.
func RemovalDeltasOf(rec Record) []Counter {
	out := RemovalDeltas(rec)
	if e, ok := rec.TimedEntry(); ok {
		for _, c := range TimedCounters(e) {
			out = append(out, c.Negated())
		}
	}
	out = append(out, aboveDeltas(rec, -AboveOf(rec))...)
	out = append(out, mutedDeltas(rec, -AboveOf(rec), 0)...)
	return MergeCounters(out)
}

// TimedEntry returns the timed entry rec notes (Record.Timed), as stored:
// the record as its ledger entry holds it (its counted marks), with the
// entry's time; ok is false if rec notes none, or an entry of another
// record.
func (r Record) TimedEntry() (Record, bool) {
	if r.Timed == "" {
		return Record{}, false
	}
	at, entry, pending, err := ParseTimedKey(r.Timed, r.Message.ExpiresAt)
	if err != nil || entry != r.Entry {
		return Record{}, false
	}
	e := r.WithState(r.countedState())
	e.Timed, e.Counted = "", 0
	e.Message = Message{ID: r.Message.ID, Category: r.Message.Category, Thread: r.Message.Thread, ExpiresAt: r.Message.ExpiresAt,
		ReadAt: e.Message.ReadAt, ArchivedAt: e.Message.ArchivedAt, InteractedAt: e.Message.InteractedAt}
	if r.Receipt {
		e.Message.Audience.Group = r.Message.Audience.Group
	}
	if pending {
		e.Message.DeliverAt = at
	} else {
		e.Message.SnoozedUntil = at
	}
	return e, true
}

// AboveDeltas returns the changes of mark mk to the Above of its user's
// partition, where the partition's seen watermark is seen: none if mk's
// record is at or below the watermark; else what its record adds after
// the mark less what it added before (AboveOf), with the same change to
// the Above of its thread's muted counters (see Counter.Muted). Store.Mark
// applies them only under a fence of that watermark (a watermark mark
// with Fence).
func AboveDeltas(mk Mark, seen string) []Counter {
	if mk.Key.ID == "" || mk.Key.ID <= seen || mk.Key.Partition.IsShared() {
		return nil
	}
	rec, n := mk.unseenChange()
	return aboveDeltas(rec, n)
}

// MutedDeltas returns the changes of mark mk to the Unread of the muted
// and covered counters of its record's thread (see Counter.Muted and
// Counter.Covered), whatever the watermark: what its record adds to the
// unread after the mark less what it added before (AboveOf), for a direct
// message of a thread or a receipt of a group's message of a thread; nil
// for any other mark. MarkDeltas includes them.
func MutedDeltas(mk Mark) []Counter {
	if mk.Key.ID == "" || mk.Key.Partition.IsShared() || mk.Thread == "" || mk.Receipt && (mk.Shared.IsPublic() || mk.Shared.Group == "") {
		return nil
	}
	rec, n := mk.unseenChange()
	return mutedDeltas(rec, n, 0)
}

// unseenChange returns mk's record (its key's partition, category,
// thread and group) and what it adds to the unread messages not hidden
// (AboveOf) after mk less before (an adopted record added nothing before:
// another program keeps no such count).
func (mk Mark) unseenChange() (Record, int64) {
	before, after := mk.records()
	var n int64
	if before != nil && !mk.Adopts {
		b := *before
		b.Counted, b.Timed = mk.Counted, mk.Timed
		n -= AboveOf(b)
	}
	if after != nil {
		a := *after
		puts, _ := mk.TimedWrites()
		for _, e := range puts {
			a.Timed = TimedKeyOf(e)
		}
		n += AboveOf(a)
	}
	rec := Record{Partition: mk.Key.Partition, Receipt: mk.Receipt, Message: Message{ID: mk.Key.ID, Category: mk.Category, Thread: mk.Thread}}
	if mk.Receipt && !mk.Shared.IsPublic() {
		rec.Message.Audience.Group = mk.Shared.Group
	}
	return rec, n
}

// mutedDeltas returns the changes unread and above to the muted counters
// (Counter.Muted) of rec's thread, of all its messages and of rec's
// category, and the same to its covered counters (Counter.Covered, of
// rec's ID), for a direct message of a thread in a user's partition; to
// the covered counters of its group's thread alone for a receipt of a
// group's message of a thread; nil for any other record.
func mutedDeltas(rec Record, unread, above int64) []Counter {
	if unread == 0 && above == 0 || rec.Partition.IsShared() || rec.Message.Thread == "" {
		return nil
	}
	var out []Counter
	if rec.Receipt {
		g := rec.Message.Audience.Group
		if g == "" || g == PublicGroup {
			return nil
		}
		for _, c := range []string{"", rec.Message.Category} {
			if c == "" && len(out) > 0 {
				break // no category
			}
			out = append(out, Counter{Partition: rec.Partition, Category: c, Group: g, Thread: rec.Message.Thread, Covered: true, Of: rec.Message.ID, Unread: unread, Above: above})
		}
		return out
	}
	for _, c := range []string{"", rec.Message.Category} {
		if c == "" && len(out) > 0 {
			break // no category
		}
		m := Counter{Partition: rec.Partition, Category: c, Thread: rec.Message.Thread, Muted: true, Unread: unread, Above: above}
		cov := m
		cov.Muted, cov.Covered, cov.Of = false, true, rec.Message.ID
		out = append(out, m, cov)
	}
	return out
}

// MutedCounters returns what rec, a record of a user's partition, adds
// to the Unread of its thread's muted counters (see Counter.Muted): its
// AboveOf, for a direct message of a thread.
func MutedCounters(rec Record) []Counter {
	return slices.DeleteFunc(mutedDeltas(rec, AboveOf(rec), 0), func(c Counter) bool { return c.Covered })
}

// CoveredCounters returns what rec, a record of a user's partition, adds
// to the Unread of its thread's covered counters (see Counter.Covered),
// each with Of rec's ID: its AboveOf, for a direct message of a thread.
func CoveredCounters(rec Record) []Counter {
	return slices.DeleteFunc(mutedDeltas(rec, AboveOf(rec), 0), func(c Counter) bool { return c.Muted })
}

// TimedDeltas returns the changes of mark mk to the tallies of its
// record's timed entries: the stored one's (mk.Timed) taken out, and the
// one TimedWrites puts added.
func (mk Mark) TimedDeltas() []Counter {
	var out []Counter
	if mk.Timed != "" && !mk.Adopts {
		before, _ := mk.records()
		if before != nil {
			b := *before
			b.Counted, b.Timed = mk.Counted, mk.Timed
			if e, ok := b.TimedEntry(); ok {
				for _, c := range TimedCounters(e) {
					out = append(out, c.Negated())
				}
			}
		}
	}
	puts, _ := mk.TimedWrites()
	for _, e := range puts {
		out = append(out, TimedCounters(e)...)
	}
	return out
}

// Fold returns the mark that folds the timed entry of rec whose time has
// come at now: a mark that keeps rec's marks (a shared partition's
// scheduled broadcast has none), deleting the entry with its tallies, and
// noting none on rec; ok is false if rec notes no entry, or one whose time
// has not come. The stream handler makes it when an entry's timer is
// removed (Change.Timer), as any mark of the record would.
func Fold(rec Record, now time.Time) (mk Mark, ok bool) {
	e, found := rec.TimedEntry()
	if !found || now.Before(TimedAt(e)) {
		return Mark{}, false
	}
	mk = Mark{Key: rec.Key(), Now: now, Receipt: rec.Receipt, Entry: rec.Entry, Category: rec.Message.Category, Thread: rec.Message.Thread,
		ExpiresAt: rec.Message.ExpiresAt, From: rec.State(), To: rec.State(), Counted: rec.Counted, Timed: rec.Timed}
	if rec.Receipt {
		mk.Shared = rec.Partition.Scope().Public()
		if g := rec.Message.Audience.Group; g != "" {
			mk.Shared = rec.Partition.Scope().Group(g)
		}
	}
	return mk, true
}

// AboveCounters returns what rec, a record of a user's partition above its
// seen watermark, adds to the partition's Above (AboveOf): on its total
// and its category's, and on its group's for a receipt of a group's
// message. Recount sums them.
func AboveCounters(rec Record) []Counter { return aboveDeltas(rec, AboveOf(rec)) }

package driver

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
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
	//
	// On a user's counter of her receipts of a shared thread's messages
	// (Group set), Latest and Top are the receipts' hint: Latest is the
	// greatest ID of her receipts the counter ever counted (removals do
	// not lower it either), so that she has no receipt of a message above
	// it, Top her marks on the message Latest as her receipt of it holds
	// them, and TopEntry that receipt's ledger entry (both zero once it
	// is removed). ListThreads previews a shared thread's newest message
	// from them, without reading her receipt. Latest "" is no hint (a
	// counter an earlier version wrote, or a write that found one):
	// nothing is known. In a change (see HintOf), Latest is the receipt
	// written or removed, Top its marks after the change and TopEntry its
	// entry: a Store applies a write (Top set) if the counter is missing
	// or its Latest is at or below the receipt's, raising Latest and
	// setting Top and TopEntry, and a removal (Top zero) only if Latest
	// and TopEntry are the receipt's (not those of a receipt written at
	// its key since), clearing Top and TopEntry; it leaves all three
	// otherwise, in the same atomic unit as the tallies (which it adds
	// whatever the hint).
	Latest    string
	Top       State
	TopEntry  string
	Published int64
	// Read, Archived, ArchivedRead and Hidden are always zero in a shared
	// partition.
	Read         int64
	Archived     int64
	ArchivedRead int64
	Hidden       int64
	// Snoozed and Pending are the tallies of the partition's stored
	// snooze and pending entries (see TimedKey) of this counter's
	// category and group, each tallied as the message it hides from the
	// feed (TimedCounters), whether its time has come or not: a Store keeps
	// them in the same atomic unit as every write or deletion of an entry.
	// Counts takes out Snoozed and Pending less the entries whose time has
	// come (Stats.Due): the messages hidden at that instant, read from
	// one counter, whatever their number.
	Snoozed Tallies
	Pending Tallies
	// Above is, on a user partition's total (c#*), its categories'
	// (c#<category>) and those of its receipts of each group (c#*#<group>,
	// c#<category>#<group>), the sum of Unseen over the records it counts
	// whose ID is above the partition's seen watermark (Stats.Fence), each
	// less the Unseen of its stored snooze or pending entry (see AboveOf):
	// the unread messages of the feed (of the category) above the
	// watermark, less the broadcasts above it that the user's receipts
	// mark. It is zero elsewhere (a shared partition's, a thread's, but a muted thread's). Store.Mark adds it only under a fence of
	// the watermark, PutMessage and ApplyRemoval only if the watermark is
	// below the record's ID (see Store).
	Above int64
	// Rev is set on the threads' own counters a Query with Threads
	// returns with their tallies (QueryResult.Tallied; zero elsewhere, in
	// a change, and where the Store keeps none, as the dynamo Store on a
	// counter an earlier version wrote last): a value the Store gives
	// the counter anew at each write of it, never one it had before, so
	// that two reads of the counter with one Rev read it unchanged between
	// them (see Query.ActivityOnly). Stats leaves it zero.
	Rev int64
	// Muted makes c the counter of a muted thread: of the thread Thread
	// of a user's direct messages (Group ""), muted by her own
	// preferences (Preferences.MutedThreads), and of its messages of
	// Category ("" for all of them). It keeps Unread and Above alone, and
	// only while the thread is muted: a Store applies a change of it, in
	// the same atomic unit as the write it comes with, only if the
	// partition's preferences mute its thread at that write, and drops it
	// otherwise (its Above under the same condition as the partition's
	// Above); a preferences mark that mutes the thread writes it
	// (PreferencesChange.Muted), one that unmutes it removes it. Stats
	// returns the muted threads' counters with the others; a Repair that
	// resets the counters writes those of its Counters whose thread its
	// Preferences mute. Counts takes them out of Unread and Unseen.
	Muted bool
	// Unread is, on a muted thread's counter, the thread's unread
	// messages (of its category) not hidden by a timed entry: the sum of
	// AboveOf over its records, whatever the watermark; on a covered
	// thread's counter, the same of the records its Position covers. Zero
	// elsewhere.
	Unread int64
	// Covered makes c the counter of the records a user's read position
	// covers (see Position) in the thread Thread of her direct messages
	// (Group ""), of Category ("" for all of them): the sum of AboveOf
	// over the records whose ID is below the position's Bound, kept as
	// Unread, and of those above the partition's seen watermark, as Above
	// (under the same condition as the partition's Above). These records
	// hold no read mark, yet read as read: Counts counts them so, from
	// these counters, and List shows them so, from the Position. Every
	// write of a record of the thread comes with its change of these
	// counters, with Of its ID: a Store applies it, in the same atomic
	// unit, only if the thread's Position covers that ID at the write, and
	// drops it otherwise. A cover mark (Mark.Cover) writes the Position
	// and its own changes (Of ""), which apply as they are. Stats returns
	// them with the others.
	//
	// With Group set, c is a counter of a user's read position in the
	// thread Thread of group Group's messages (see Position), which are
	// stored once, in the group's partition: Unread and Above are the sum
	// of AboveOf over her receipts of the thread's messages below the
	// Bound (above the watermark for Above), each at most zero (-1 for a
	// receipt that reads, archives, deletes or snoozes its message, 0 for
	// one that leaves it unread). So the messages the position covers,
	// unread but for it, are the thread's messages below the Bound, as the
	// group's time buckets count them (DayBucket.Threads), plus Unread:
	// neither term moves when a message below it expires or is removed,
	// but by the removal of its receipt, which comes with its change.
	// Every write of a receipt of the thread's messages to the group comes
	// with its change (Of the message's ID), applied as above.
	Covered bool
	// Of is, in a change of a covered thread's counter that a record's
	// write makes, the record's ID (see Covered); "" elsewhere.
	Of string
	// Position is, on a covered thread's counter of all its categories
	// (Category ""), the thread's read position; zero elsewhere, and in a
	// change.
	Position Position
}

// Position is a user's read position in a thread of her direct messages,
// which marks a conversation read in one write, whatever the number of
// its unread messages (inbox.Inbox.MarkAllRead of a thread): each record
// of the thread whose ID is below Bound, unread, and not archived,
// deleted or hidden by a timed entry (AboveOf counts it) reads as read
// (ReadAt). A record keeps its own marks: a mark of one makes its read
// explicit, and the stream handler does so for each, then records that
// it did (Done: its time), keeping the position, so that a record read
// before the handler's mark and the position read after show the same.
// A Done position with nothing left to cover is dropped (Mark.Cover with
// To zero) only once readers cannot hold such a record any more (see
// inbox.Inbox.MarkAllRead).
//
// A position moved up while it stands keeps its earlier steps, so that
// each record reads as read when the move that covered it was made: At
// is the time of the last move, which covered the records from the
// previous Bound up, and Earlier the earlier moves, oldest first, as
// EncodeSteps writes them.
type Position struct {
	Bound   string
	At      time.Time
	Earlier string
	// Done is when every record the position covered was marked read
	// explicitly (zero: not yet, or moved since).
	Done time.Time
}

// WrittenOut returns p with Done at: its records marked read.
func (p Position) WrittenOut(at time.Time) Position {
	p.Done = at
	return p
}

// Step is one move of a Position: the records below Bound (and above the
// previous step's) read as read at At.
type Step struct {
	Bound string
	At    time.Time
}

// EncodeSteps returns steps as Position.Earlier holds them:
// <bound>:<epoch seconds>, joined by ";" (a ULID holds neither).
func EncodeSteps(steps []Step) string {
	parts := make([]string, len(steps))
	for i, st := range steps {
		parts[i] = st.Bound + ":" + strconv.FormatInt(st.At.Unix(), 10)
	}
	return strings.Join(parts, ";")
}

// Steps returns p's moves, oldest first; ok is false if p.Earlier is not
// as EncodeSteps writes steps of ascending bounds below p.Bound, at times
// a time attribute holds (0 to MaxEpoch).
func (p Position) Steps() (_ []Step, ok bool) {
	if len(p.Earlier) > maxEarlier {
		// Longer than MaxPositionSteps steps can be (another program's
		// value): refused before it is split, as Overlay reads it for
		// each record it covers.
		return nil, false
	}
	var out []Step
	if p.Earlier != "" {
		for _, part := range strings.Split(p.Earlier, ";") {
			b, at, found := strings.Cut(part, ":")
			sec, err := strconv.ParseInt(at, 10, 64)
			if !found || err != nil || sec < 0 || sec > MaxEpoch || ValidateMessageID(b) != nil || len(out) > 0 && out[len(out)-1].Bound >= b {
				return nil, false
			}
			out = append(out, Step{Bound: b, At: time.Unix(sec, 0).UTC()})
		}
	}
	if len(out) > 0 && out[len(out)-1].Bound >= p.Bound {
		return nil, false
	}
	return append(out, Step{Bound: p.Bound, At: p.At}), true
}

// Raised returns p moved up to bound at at, its moves so far kept as its
// earlier steps (p zero: the first move).
func (p Position) Raised(bound string, at time.Time) Position {
	if p.IsZero() {
		return Position{Bound: bound, At: at}
	}
	steps, _ := p.Steps()
	return Position{Bound: bound, At: at, Earlier: EncodeSteps(steps)}
}

// maxEarlier is the longest Position.Earlier of MaxPositionSteps steps:
// each a message ID, ":", and epoch seconds (at most 20 characters),
// joined by ";".
const maxEarlier = MaxPositionSteps * (26 + 1 + 20 + 1)

// MaxPositionSteps is the most moves a Position keeps (see
// Position.Earlier): past it, the Inbox marks the thread's messages one
// by one until the position, written out, may start anew (see
// inbox.Inbox.MarkAllRead).
const MaxPositionSteps = 4

// valid reports whether p is a position a Store keeps: a bound that is a
// message ID, a time a time attribute holds (ValidTime: the marks its
// write-out makes carry it), and at most MaxPositionSteps moves, as Steps
// reads them.
func (p Position) valid() bool {
	steps, ok := p.Steps()
	return ok && ValidateMessageID(p.Bound) == nil && !p.At.IsZero() && ValidTime(p.At) && len(steps) <= MaxPositionSteps &&
		(p.Done.IsZero() || ValidTime(p.Done))
}

// Covers reports whether p covers a record with ID id.
func (p Position) Covers(id string) bool { return p.Bound != "" && id < p.Bound }

// ReadAt returns the time a record with ID id, which p covers, reads as
// read at: that of the move that covered it.
func (p Position) ReadAt(id string) time.Time {
	steps, ok := p.Steps()
	if !ok {
		return p.At
	}
	for _, st := range steps {
		if id < st.Bound {
			return st.At
		}
	}
	return p.At
}

// Equal reports whether p and o are the same position.
func (p Position) Equal(o Position) bool {
	return p.Bound == o.Bound && p.At.Equal(o.At) && p.Earlier == o.Earlier && p.Done.Equal(o.Done)
}

// IsZero reports whether p is no position.
func (p Position) IsZero() bool {
	return p.Bound == "" && p.At.IsZero() && p.Earlier == "" && p.Done.IsZero()
}

// Positions returns the read positions in threads of direct messages
// that counters hold (a partition's, as Stats returns them), by thread.
func Positions(counters []Counter) map[string]Position {
	out := map[string]Position{}
	for _, c := range counters {
		if c.Covered && c.Group == "" && c.Category == "" && !c.Position.IsZero() {
			out[c.Thread] = c.Position
		}
	}
	return out
}

// PositionFor returns the read position counters (a user partition's, as
// Stats returns them) hold in thread of group's messages ("" for her
// direct messages); zero if none.
func PositionFor(counters []Counter, group, thread string) Position {
	for _, c := range counters {
		if c.Covered && c.Group == group && c.Thread == thread && c.Category == "" {
			return c.Position
		}
	}
	return Position{}
}

// Covering reports whether d, a change of a covered counter made by the
// write of a record (Counter.Of set), applies where counters hold the
// read positions: whether its position covers the record. Any other
// change applies as it is.
func Covering(counters []Counter, d Counter) bool {
	return !d.Covered || d.Of == "" || PositionFor(counters, d.Group, d.Thread).Covers(d.Of)
}

// GroupThread names a thread of a group's messages.
type GroupThread struct {
	Group, Thread string
}

// GroupPositions returns the read positions in threads of groups'
// messages that counters hold (a user partition's, as Stats returns
// them), by group and thread.
func GroupPositions(counters []Counter) map[GroupThread]Position {
	out := map[GroupThread]Position{}
	for _, c := range counters {
		if c.Covered && c.Group != "" && c.Category == "" && !c.Position.IsZero() {
			out[GroupThread{Group: c.Group, Thread: c.Thread}] = c.Position
		}
	}
	return out
}

// Coverable reports whether a read position could cover rec: a direct
// message of a thread in a user's partition that AboveOf counts (unread,
// not archived nor deleted, not hidden by a timed entry, ledgered).
func Coverable(rec Record) bool {
	return !rec.Receipt && !rec.Partition.IsShared() && rec.Message.Thread != "" && AboveOf(rec) > 0
}

// UnreadOverCover reports whether mk, a direct mark that changes its
// record's marks and keeps it, writes no read on a record a read position
// could cover as it stands before the mark (Coverable with From's marks,
// Counted and Timed): made by a writer that did not see a position
// covering the record, it would drop the read the position lends it (an
// archive that read the record before the position moved over it). A
// Store refuses it if its thread's position covers the record at the
// write (see Store.Mark), as it refuses a mark that leaves the record
// coverable there.
//
// A receipt mark of a group's message of a thread is one too if it keeps
// the receipt undeleted and the message reads unread but for a read
// position (see Counter.Covered): her receipt of it is missing, or holds
// no read, as it stands before the mark.
func (mk Mark) UnreadOverCover() bool {
	return mk.To.ReadAt.IsZero() && mk.changesCoverable()
}

// MadeUncovered reports whether mk, a direct mark that changes its
// record's marks and keeps it, on a record a read position could cover
// as it stands before the mark (as UnreadOverCover), was made by a
// writer that read the record as no position covers it (Mark.Uncovered):
// a Store refuses it if its thread's position covers the record at the
// write (see Store.Mark), whatever it writes. The position read the
// record before the mark's write, and the mark, made without that read,
// would claim a change the position made.
func (mk Mark) MadeUncovered() bool {
	return mk.Uncovered && mk.changesCoverable()
}

// changesCoverable reports whether mk is a direct mark that changes its
// record's marks and keeps it, on a record a read position could cover
// as it stands before the mark (Coverable with From's marks, Counted and
// Timed), or a receipt mark of a group's message of a thread that changes
// its marks, keeps the receipt undeleted, where her receipt holds no read
// (or is missing).
func (mk Mark) changesCoverable() bool {
	if mk.Key.ID == "" || mk.Delete || mk.Adopts || mk.From == mk.To {
		return false
	}
	before, _ := mk.records()
	if mk.Receipt {
		if mk.Thread == "" || mk.Shared.Group == "" || mk.Shared.IsPublic() || !mk.To.DeletedAt.IsZero() {
			return false
		}
		return before == nil || before.Message.ReadAt.IsZero()
	}
	if before == nil {
		return false
	}
	b := *before
	b.Counted, b.Timed = mk.Counted, mk.Timed
	if b.Counted == 0 {
		b.Counted = mk.From.Counted()
	}
	return Coverable(b)
}

// Overlay returns rec as it reads where positions are the read positions
// of its partition's threads (Positions): a direct message of a thread
// in a user's partition that its thread's position covers and that
// AboveOf counts (unread, not archived nor deleted, not hidden; as its
// counters count it) is read at the position's time, in its marks and
// its Counted; any other record is returned as it is.
func Overlay(rec Record, positions map[string]Position) Record {
	if len(positions) == 0 || !Coverable(rec) {
		return rec
	}
	pos, ok := positions[rec.Message.Thread]
	if !ok || !pos.Covers(rec.Message.ID) {
		return rec
	}
	if rec.Message.ReadAt.IsZero() {
		rec.Message.ReadAt = pos.ReadAt(rec.Message.ID)
	}
	if c := rec.accounted(); c != 0 {
		rec.Counted = c | MarkedRead
	}
	return rec
}

// Tallies are the counts a Counter keeps of the entries of a partition
// that hide messages until a time (Counter.Snoozed, Counter.Pending): the
// same tallies as a Counter's own, of the messages they hide.
type Tallies struct {
	Published    int64
	Read         int64
	Archived     int64
	ArchivedRead int64
	Hidden       int64
}

// add adds o to t.
func (t *Tallies) add(o Tallies) {
	t.Published += o.Published
	t.Read += o.Read
	t.Archived += o.Archived
	t.ArchivedRead += o.ArchivedRead
	t.Hidden += o.Hidden
}

// negated returns t with every count negated.
func (t Tallies) negated() Tallies {
	return Tallies{-t.Published, -t.Read, -t.Archived, -t.ArchivedRead, -t.Hidden}
}

// Own returns c's own tallies (not Snoozed, Pending or Above) as Tallies.
func (c Counter) Own() Tallies {
	return Tallies{c.Published, c.Read, c.Archived, c.ArchivedRead, c.Hidden}
}

// Counter returns t as the tallies of a Counter with no key.
func (t Tallies) Counter() Counter {
	return Counter{Published: t.Published, Read: t.Read, Archived: t.Archived, ArchivedRead: t.ArchivedRead, Hidden: t.Hidden}
}

// SK returns the sort key of c's stats record: CounterSK, or
// ThreadCounterSK for a thread's counter, or MutedCounterSK for a muted
// thread's.
func (c Counter) SK() string {
	if c.Covered {
		return CoveredCounterSK(c.Category, c.Thread, c.Group)
	}
	if c.Muted {
		return MutedCounterSK(c.Category, c.Thread)
	}
	if c.Thread != "" {
		return ThreadCounterSK(c.Thread, c.Group)
	}
	return CounterSK(c.Category, c.Group)
}

// Tallies returns c's tallies alone (its own, Snoozed, Pending and
// Above), without its key, Latest or Top.
func (c Counter) Tallies() Counter {
	return Counter{Published: c.Published, Read: c.Read, Archived: c.Archived, ArchivedRead: c.ArchivedRead, Hidden: c.Hidden,
		Snoozed: c.Snoozed, Pending: c.Pending, Above: c.Above, Unread: c.Unread}
}

// IsZero reports whether every tally of c is zero.
func (c Counter) IsZero() bool { return c.Tallies() == Counter{} }

// Add adds d's tallies to c's (not its key) and raises c's Latest to d's,
// with its Top where d's Latest is at or above c's (of two at one Latest,
// a write's Top over a removal's): how MergeCounters sums the changes of
// one write, and a Recount the records it counts. A Store applies a
// receipts' hint as ApplyHint says.
func (c *Counter) Add(d Counter) {
	switch {
	case d.Latest > c.Latest:
		c.Top, c.TopEntry = d.Top, d.TopEntry
	case d.Latest == c.Latest && !d.Top.IsZero():
		c.Top, c.TopEntry = d.Top, d.TopEntry
	}
	c.Latest = max(c.Latest, d.Latest)
	if !d.Position.IsZero() {
		c.Position = d.Position
	}
	c.Published += d.Published
	c.Read += d.Read
	c.Archived += d.Archived
	c.ArchivedRead += d.ArchivedRead
	c.Hidden += d.Hidden
	c.Snoozed.add(d.Snoozed)
	c.Pending.add(d.Pending)
	c.Above += d.Above
	c.Unread += d.Unread
}

// Negated returns c with every tally negated, and no Latest or Top.
func (c Counter) Negated() Counter {
	c.Latest, c.Top, c.TopEntry = "", State{}, ""
	c.Published, c.Read, c.Archived, c.ArchivedRead, c.Hidden = -c.Published, -c.Read, -c.Archived, -c.ArchivedRead, -c.Hidden
	c.Snoozed, c.Pending, c.Above, c.Unread = c.Snoozed.negated(), c.Pending.negated(), -c.Above, -c.Unread
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

// MergeCounters sums changes to the same counter, in a stable order: a
// covered thread's counter's changes of each record apart (Counter.Of).
func MergeCounters(cs []Counter) []Counter {
	type key struct {
		p      Partition
		sk, of string
	}
	idx := map[key]int{}
	var out []Counter
	for _, c := range cs {
		k := key{c.Partition, c.SK(), c.Of} // a covered counter's changes by record
		if c.Of != "" {
			c.Position = Position{}
		}
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
		if out[i].SK() != out[j].SK() {
			return out[i].SK() < out[j].SK()
		}
		return out[i].Of < out[j].Of
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
	if rec.Receipt {
		t.Latest, t.Top, t.TopEntry = rec.Message.ID, rec.State(), rec.Entry
	}
	return []Counter{t}
}

// HintOf returns the change to the receipts' hint (Counter.Latest and
// Top) of the counter of receipt rec's thread that writing rec with
// marks to makes (to zero: removing it), with no tallies; ok is false if
// rec is no receipt of a thread's message, or one without a ledger
// entry (another program's, which no hint counts: a mark adopts it with
// an entry, and so into the hint).
func HintOf(rec Record, to State) (Counter, bool) {
	if !rec.Receipt || rec.Message.Thread == "" || rec.Partition.IsShared() || !rec.Ledgered() {
		return Counter{}, false
	}
	h := threadDeltas(rec, Counter{})[0]
	h.Top = to
	return h, true
}

// withHint returns deltas, changes of receipt rec's partition, with the
// change to the receipts' hint of its thread's counter that writing rec
// with marks to makes (HintOf): on that counter's change, or as one of
// its own, with no tallies. Other deltas are returned as they are.
func withHint(deltas []Counter, rec Record, to State) []Counter {
	h, ok := HintOf(rec, to)
	if !ok {
		return deltas
	}
	for i, d := range deltas {
		if d.Partition == h.Partition && d.SK() == h.SK() {
			deltas[i].Latest, deltas[i].Top, deltas[i].TopEntry = h.Latest, h.Top, h.TopEntry
			return deltas
		}
	}
	return MergeCounters(append(deltas, h))
}

// ApplyHint applies the receipts' hint of change d (see Counter.Latest)
// to c, a user's counter of her receipts of a shared thread's messages as
// stored (exists false if there is none): how a Store applies it.
func (c *Counter) ApplyHint(d Counter, exists bool) {
	switch {
	case d.Latest == "":
	case d.Top.IsZero():
		if c.Latest == d.Latest && c.TopEntry == d.TopEntry {
			c.Top, c.TopEntry = State{}, ""
		}
	case !exists || c.Latest != "" && c.Latest <= d.Latest:
		c.Latest, c.Top, c.TopEntry = d.Latest, d.Top, d.TopEntry
	}
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
	if c.Covered {
		switch {
		case c.Muted || ValidateCategory(c.Category) != nil || c.Thread == "" || ValidateThread(c.Thread) != nil:
			return bad("not a key")
		case c.Partition.IsShared() || c.Group == PublicGroup || c.Group != "" && ValidateGroup(c.Group) != nil || c.Latest != "" || c.Rev != 0 || !c.Top.IsZero() || c.TopEntry != "":
			return bad("a covered thread's counter off a user's own or a group's thread")
		case c.Own() != Tallies{} || c.Snoozed != Tallies{} || c.Pending != Tallies{}:
			return bad("a covered thread's counter with tallies besides Unread and Above")
		case c.Of != "" && ValidateMessageID(c.Of) != nil:
			return bad("a record that cannot be")
		case !c.Position.IsZero() && (c.Category != "" || c.Of != "" || !c.Position.valid()):
			return bad("a position that cannot be")
		}
		return nil
	}
	switch {
	case c.Of != "" || !c.Position.IsZero():
		return bad("a record or position off a covered thread's counter")
	}
	if c.Muted {
		switch {
		case ValidateCategory(c.Category) != nil || c.Thread == "" || ValidateThread(c.Thread) != nil:
			return bad("not a key")
		case c.Partition.IsShared() || c.Group != "" || c.Latest != "" || c.Rev != 0:
			return bad("a muted thread's counter off a user's own thread")
		case c.Own() != Tallies{} || c.Snoozed != Tallies{} || c.Pending != Tallies{}:
			return bad("a muted thread's counter with tallies besides Unread and Above")
		}
		return nil
	}
	switch {
	case c.Unread != 0:
		return bad("an unread tally off a muted thread's counter")
	case ValidateCategory(c.Category) != nil || ValidateThread(c.Thread) != nil:
		return bad("not a key")
	case c.Group != "" && (ValidateGroup(c.Group) != nil || c.Partition.IsShared()):
		return bad("a group that cannot be")
	case c.Group == PublicGroup && c.Thread == "":
		return bad("the public group outside a thread's counter")
	case c.Thread != "" && c.Category != "":
		return bad("a thread's counter of a category")
	case c.Latest != "" && (c.Thread == "" || c.Group != "" && c.Partition.IsShared() || ValidateMessageID(c.Latest) != nil):
		return bad("a latest message that cannot be")
	case (!c.Top.IsZero() || c.TopEntry != "") && (c.Latest == "" || c.Group == ""):
		return bad("a receipts' hint off a user's counter of her receipts of a thread")
	case c.Above != 0 && (c.Partition.IsShared() || c.Thread != ""):
		return bad("an above tally off a user's totals and categories")
	case c.Thread != "" && (c.Snoozed != Tallies{} || c.Pending != Tallies{}):
		return bad("a thread's counter of timed entries")
	}
	return nil
}

// ActivityKey returns the key of thread t's place in the order of its
// partition's threads by last activity: its Latest, then its key (a
// thread key has no '#'), so that the keys of the threads whose activity
// is below a message ID sort below that ID.
func ActivityKey(latest, t string) string { return latest + "#" + t }

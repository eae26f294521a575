package driver

import (
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// AudienceKind says who a message was addressed to.
type AudienceKind string

// Audience kinds, as stored in headers.audiences.kind.
const (
	// AudienceUsers marks a message published to a list of users; each user
	// holds a copy in their own partition.
	AudienceUsers AudienceKind = "users"
	// AudienceEveryone marks a broadcast, stored once in the public partition.
	AudienceEveryone AudienceKind = "everyone"
	// AudienceGroup marks a message to a group, stored once in the group's
	// partition.
	AudienceGroup AudienceKind = "group"
)

// Audience is who a message was addressed to.
type Audience struct {
	Kind AudienceKind
	// Label names the audience for display, e.g. "on-call".
	Label string
	// UIDs lists the recipient of this copy (one user, never the whole
	// audience, so an item's size does not grow with the audience). It is
	// empty for a broadcast.
	UIDs []string
	// Group is the group of a message to a group; in a receipt, the group
	// of the message read ("" for everyone's).
	Group string
}

// Message is a stored message as a user sees it.
type Message struct {
	// ID is a ULID, shared by every recipient of one publish.
	ID           string
	HostSystemID string
	Sender       string
	Audience     Audience
	Category     string
	// Thread is the conversation the message belongs to ("" for none): a
	// key, as Category. A receipt carries its message's, so that a
	// thread's records are read together (Query.Thread).
	Thread string
	Title  string
	Body   any
	CTAURI string
	// ReceivedAt is when the host system received the message.
	ReceivedAt time.Time
	// DeliveredAt is when the message was stored, or, for a scheduled
	// message, when it comes due (then equal to DeliverAt).
	DeliveredAt time.Time
	// DeliverAt is when a scheduled message comes due, to the second; zero
	// for a message delivered when it was stored. Until then it is hidden
	// from its recipients (see Due). Its ID is minted at that time, so it
	// takes its place in the feed by delivery time.
	DeliverAt time.Time
	// ReadAt is when the user read the message; zero while unread. For a
	// broadcast it comes from the user's read receipt.
	ReadAt time.Time
	// ArchivedAt is when the user archived the message; zero if it is not
	// archived. For a broadcast it comes from the user's receipt.
	ArchivedAt time.Time
	// ExpiresAt is when the message expires (the expiredat TTL attribute).
	ExpiresAt time.Time
	// SnoozedUntil is when a message the user snoozed returns to the
	// user's feed (see State.SnoozedUntil); zero if it was not snoozed.
	// For a broadcast it comes from the user's receipt.
	SnoozedUntil time.Time
	// InteractedAt is when the user acted on the message (clicked its
	// action, say), apart from reading it; zero if the user did not. For
	// a broadcast it comes from the user's receipt.
	InteractedAt time.Time
	// Count is, on an aggregated message (inbox.Draft.Aggregate), the
	// number of messages of its item: this one and those it took in; zero
	// on a message that is not aggregated. An aggregated message is in the
	// thread of its key (Thread).
	Count int
	// Senders are an aggregated message's distinct senders ("" is none),
	// the latest first: its own, then those of the messages it took in, at
	// most MaxAggregateSenders.
	Senders []string
	// Members are the IDs of the messages an aggregated message took in,
	// the latest first, at most MaxAggregateMembers: the newest of its
	// item's earlier messages (Count counts them all).
	Members []string
	// First is, on an aggregated message that took others in, the ID of
	// its item's first message (whose time bounds the item: see
	// inbox.Draft.AggregateWindow); "" on an item of one, whose first
	// message is itself.
	First string
	// Muted is set by inbox.Inbox.List, Get and ListThreads on a message
	// of a group, a category or a thread of her direct messages the user
	// muted (see inbox.Preferences): unread, it counts
	// in inbox.Tally.Muted, not in Unread or Unseen. A Store neither keeps
	// nor returns it.
	Muted bool
}

// IsBroadcast reports whether m was broadcast, stored once for its whole
// audience: to everyone in the inbox, or to a group (Audience.Group).
func (m Message) IsBroadcast() bool {
	return m.Audience.Kind == AudienceEveryone || m.Audience.Kind == AudienceGroup
}

// Due reports whether m is visible at now: it was not scheduled, or its
// DeliverAt is not after now.
func (m Message) Due(now time.Time) bool { return m.DeliverAt.IsZero() || !now.Before(m.DeliverAt) }

// Snoozed reports whether m is snoozed at now: hidden from the user's
// feed until SnoozedUntil.
func (m Message) Snoozed(now time.Time) bool { return now.Before(m.SnoozedUntil) }

// IsRead reports whether m has been read.
func (m Message) IsRead() bool { return !m.ReadAt.IsZero() }

// IsArchived reports whether m has been archived.
func (m Message) IsArchived() bool { return !m.ArchivedAt.IsZero() }

// Record is one item of a partition as a Store persists it: a message, a
// broadcast (in the public partition or a group's) or a receipt.
//
// A receipt (Receipt true) is a user's state of a broadcast or group
// message: it lives in the user's partition under the message's ID and
// carries only Message.ID, Message.Category, Message.Thread,
// Message.ExpiresAt, the user's
// marks (Message.ReadAt, Message.ArchivedAt, DeletedAt) and, for a group's
// message, Message.Audience.Group; its other fields are zero. The seeds
// call it a read receipt: one with ReadAt is one.
type Record struct {
	Partition Partition
	Receipt   bool
	Message   Message
	// DeletedAt is set on a receipt of a broadcast or group message that
	// the user deleted from their inbox (it stays hidden from them); zero
	// otherwise. A direct message a user deletes is removed instead.
	DeletedAt time.Time
	// Entry is the sort key of the record's ledger entry (see Store and
	// LedgerSK), set by the Inbox on every record it writes; "" for a
	// record another program wrote to the table, until a mark or Recount
	// adopts it. Such a record is counted as the seeds count, in no
	// thread's counter: a Store returns it with no Thread, whatever the
	// item holds.
	Entry string
	// Counted is, for a record of a user's partition with a ledger entry,
	// the marks that entry counts (State.Counted of the marks the Store
	// last wrote with the record): a Store records it with every such
	// record it writes (PutMessage, Mark, Repair's adoption) and returns
	// it with the record. It differs from the record's own marks when
	// another program changed them since (see Edited). Zero where the
	// Store cannot tell: a shared partition's record, another program's
	// record, one written before stores recorded it, or one whose stored
	// value is no set of marks (see ParseCountedAttr).
	Counted MarkSet
	// Timed is the key (TimedKey) of the record's stored timed entry: its
	// snooze entry while it is snoozed, or its pending entry while it is
	// scheduled and not yet due, and after either's time until a mark
	// folds it (see Fold); "" if it has none. A Store records it with the
	// record in the same atomic unit as the entry's write or deletion
	// (PutMessage, Mark) and returns it. Records snoozed or scheduled by
	// an earlier version of the library note none: their entries, under
	// SnoozeSK and PendingSK, are not tallied in the counters, and expire
	// by TTL at their time (Stats.Snoozed, Stats.Pending).
	Timed string
	// Follows, on an aggregated message given to PutMessage (Count set),
	// is the Latest of its thread's own counter as the writer read it (""
	// for no counter, or none with a Latest): PutMessage applies only if it
	// still is, else ErrStateChanged. So the messages of one key join their
	// item one at a time. It is never stored, nor returned.
	Follows string
	// OptOutDefault, on a record given to PutMessage, says that the
	// default preferences in effect (Config.DefaultPreferences) opt out
	// of its category: a user partition without preferences of its own
	// gets no copy either. It is never stored, nor returned.
	OptOutDefault bool
}

// Ledgered reports whether r has a ledger entry.
func (r Record) Ledgered() bool { return r.Entry != "" }

// Edited reports whether another program changed the counted marks of r,
// a record with a ledger entry, since the Store last wrote it: its entry
// counts other marks than it carries. The seeds' writer marks a message
// read so (SET readat, and read +1 in the user's c#* and c#<category>).
func (r Record) Edited() bool { return r.Ledgered() && r.edited() }

// edited reports whether r's counters count other marks than r carries
// (see accounted).
func (r Record) edited() bool {
	c := r.accounted()
	return c != 0 && c != r.State().Counted()
}

// accounted returns the marks the counters count of r, its writer having
// counted any change beyond them as the seeds count (see EditDeltas): a
// ledgered record's Counted (zero, unknown, if it has none); for another
// program's record, ForeignCounted of its marks; zero in a shared
// partition.
func (r Record) accounted() MarkSet {
	switch {
	case r.Partition.IsShared():
		return 0
	case r.Ledgered():
		return r.Counted
	}
	return ForeignCounted(r.State())
}

// ForeignCounted returns the marks the counters count of st, the marks of
// a record another program wrote and counted: all of them, but for a
// deleted receipt, which the counters count as hidden (RecordCounters),
// the read that program counted as the seeds count besides.
func ForeignCounted(st State) MarkSet {
	c := st.Counted()
	if c&MarkedDeleted != 0 {
		c &^= MarkedRead
	}
	return c
}

// AdoptedCounted returns the Counted a Store records on rec, a record of
// Repair.Adopt as read, when it gives it its new entry: its marks, as
// ForeignCounted counts another program's (zero in a shared partition).
// Repair writes no counters, so a record whose counters count other
// marks than it carries is then Edited, for the stream handler or the
// next pass of Recount to rewrite.
func AdoptedCounted(rec Record) MarkSet {
	if rec.Ledgered() {
		return CountedOf(rec)
	}
	return rec.accounted()
}

// A MarkSet is the set of a user's marks that the counters count on one
// record (read, archived, deleted), as Record.Counted records it. The
// zero MarkSet is unknown; every known one has MarksKnown set, so that a
// Store can keep it as a small number.
type MarkSet uint8

// The bits of a MarkSet.
const (
	MarksKnown MarkSet = 1 << iota
	MarkedRead
	MarkedArchived
	MarkedDeleted
)

// Valid reports whether s is a MarkSet a Store may record on a record,
// a receipt or not: known, with no other bits than these, and deleted only
// on a receipt (a direct message the user deletes is removed). A deleted
// receipt may be read or archived too: another program marked it so.
func (s MarkSet) Valid(receipt bool) bool {
	return s&MarksKnown != 0 && s < MarkedDeleted<<1 && (receipt || s&MarkedDeleted == 0)
}

// ParseCounted returns the MarkSet that n, a Record.Counted attribute as
// stored (a small number), holds for a record, a receipt or not: zero
// (unknown) for 0, ErrInvalidInput unless it is Valid.
func ParseCounted(n uint64, receipt bool) (MarkSet, error) {
	switch s := MarkSet(n); {
	case n == 0:
		return 0, nil
	case n > uint64(^MarkSet(0)) || !s.Valid(receipt):
		return 0, fmt.Errorf("%w: %s %d is no set of marks of a %s", ErrInvalidInput, CountedAttribute, n, map[bool]string{true: "receipt", false: "message"}[receipt])
	default:
		return s, nil
	}
}

// ParseCountedAttr returns the MarkSet a Store reads from the counted
// attribute (CountedAttribute) of a record with a ledger entry in a
// user's partition, a receipt or not: number is the attribute as it
// stands, in decimal ("" if it is missing or not a number). Another
// program may write anything there; what is no Valid set for the record
// (past a byte, negative, a fraction, a byte of no marks) reads as zero,
// unknown, as if the record had none, and never fails the read: a Mark
// then writes the record's counted marks anew. A record without a ledger
// entry has no Counted, whatever the attribute holds.
func ParseCountedAttr(number string, receipt bool) MarkSet {
	n, err := strconv.ParseUint(number, 10, 8)
	if err != nil {
		return 0
	}
	s, err := ParseCounted(n, receipt)
	if err != nil {
		return 0
	}
	return s
}

// CountedOf returns the Counted a Store records with rec, written with its
// ledger entry: its marks (State.Counted) in a user's partition, zero
// elsewhere or without an entry.
func CountedOf(rec Record) MarkSet {
	if !rec.Ledgered() || rec.Partition.IsShared() {
		return 0
	}
	return rec.State().Counted()
}

// state returns a State with the marks of s, set at an arbitrary time:
// what a record with s counts.
func (s MarkSet) state() State {
	at := func(b MarkSet) time.Time {
		if s&b == 0 {
			return time.Time{}
		}
		return time.Unix(1, 0).UTC()
	}
	return State{ReadAt: at(MarkedRead), ArchivedAt: at(MarkedArchived), DeletedAt: at(MarkedDeleted)}
}

// Key returns the record's key.
func (r Record) Key() Key { return Key{Partition: r.Partition, ID: r.Message.ID} }

// ValidateHostSystemID checks a host system ID ("" for none): at most
// MaxHostSystemIDLen bytes of printable UTF-8.
func ValidateHostSystemID(id string) error {
	if len(id) > MaxHostSystemIDLen {
		return fmt.Errorf("%w: host system id is %d bytes, more than %d", ErrInvalidKey, len(id), MaxHostSystemIDLen)
	}
	if id == "" {
		return nil
	}
	return checkPrintable("host system id", id)
}

func checkPrintable(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidKey, what)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return fmt.Errorf("%w: %s contains a non-printing character", ErrInvalidKey, what)
		}
	}
	return nil
}

// State is a user's marks on one message: read, archived, deleted. A
// direct message carries them on the user's copy; a broadcast or group
// message on the user's receipt, which exists while any mark is set.
type State struct {
	ReadAt     time.Time
	ArchivedAt time.Time
	// DeletedAt hides a broadcast or group message from the user. It is
	// never set with the other marks, and never on a direct message (a
	// direct message the user deletes is removed).
	DeletedAt time.Time
	// SnoozedUntil hides the message from the user's feed until then (to
	// the second), whatever its other marks; once it has passed it hides
	// nothing, whether or not it is still stored. It counts in no counter:
	// a snoozed record's snooze entry (see Store.Mark) is what takes it out
	// of the user's counts while it is snoozed.
	SnoozedUntil time.Time
	// InteractedAt records that the user acted on the message, apart from
	// reading it. It counts in no counter.
	InteractedAt time.Time
}

// IsZero reports whether s has no mark.
func (s State) IsZero() bool { return s == State{} }

// Equal reports whether s and o hold the same marks at the same times.
func (s State) Equal(o State) bool {
	return s.ReadAt.Equal(o.ReadAt) && s.ArchivedAt.Equal(o.ArchivedAt) && s.DeletedAt.Equal(o.DeletedAt) &&
		s.SnoozedUntil.Equal(o.SnoozedUntil) && s.InteractedAt.Equal(o.InteractedAt)
}

// Same reports whether s and o set the same counted marks (read,
// archived, deleted), whatever their times, snoozes and interactions.
func (s State) Same(o State) bool {
	return s.ReadAt.IsZero() == o.ReadAt.IsZero() && s.ArchivedAt.IsZero() == o.ArchivedAt.IsZero() && s.DeletedAt.IsZero() == o.DeletedAt.IsZero()
}

// Counted returns the marks of s that the counters count, as a MarkSet.
func (s State) Counted() MarkSet {
	out := MarksKnown
	if !s.ReadAt.IsZero() {
		out |= MarkedRead
	}
	if !s.ArchivedAt.IsZero() {
		out |= MarkedArchived
	}
	if !s.DeletedAt.IsZero() {
		out |= MarkedDeleted
	}
	return out
}

// State returns the user's marks on r: a direct message's own, or a
// receipt's. A broadcast or group message in its shared partition has none.
func (r Record) State() State {
	if r.Partition.IsShared() {
		return State{}
	}
	return State{ReadAt: r.Message.ReadAt, ArchivedAt: r.Message.ArchivedAt, DeletedAt: r.DeletedAt, SnoozedUntil: r.Message.SnoozedUntil, InteractedAt: r.Message.InteractedAt}
}

// WithState returns r with the user's marks s.
func (r Record) WithState(s State) Record {
	r.Message.ReadAt, r.Message.ArchivedAt, r.DeletedAt, r.Message.SnoozedUntil, r.Message.InteractedAt = s.ReadAt, s.ArchivedAt, s.DeletedAt, s.SnoozedUntil, s.InteractedAt
	return r
}

// records returns the record mk finds and the one it leaves, as the
// ledger records them (nil where there is none: a receipt not yet
// created, or removed; a direct message deleted). A receipt without marks
// that mk finds (see Store.Mark) is one if its entry counts marks of it
// (mk.Counted), so that they are taken out.
func (mk Mark) records() (before, after *Record) {
	rec := Record{Partition: mk.Key.Partition, Receipt: mk.Receipt, Entry: mk.Entry, Message: Message{ID: mk.Key.ID, Category: mk.Category, Thread: mk.Thread, ExpiresAt: mk.ExpiresAt}}
	if mk.Receipt && !mk.Shared.IsPublic() {
		rec.Message.Audience.Group = mk.Shared.Group
	}
	if !mk.Receipt || !mk.From.IsZero() || mk.Counted != 0 {
		b := rec.WithState(mk.From)
		if mk.Adopts {
			// Counted by another program: in no thread, as it counts.
			b.Message.Thread, b.Entry = "", ""
		}
		before = &b
	}
	if !mk.Delete && (!mk.Receipt || !mk.To.IsZero()) {
		a := rec.WithState(mk.To)
		after = &a
	}
	return before, after
}

// MarkDeltas returns the counter changes of mark mk: what the record
// counts after it less what it counted before (with mk.Counted, the
// marks its ledger entry counts: see EditDeltas), and the tallies of the
// timed entry it puts less those of the one it deletes (see
// TimedWrites), and the change to its thread's muted counters
// (MutedDeltas). They raise no thread's Latest, and change no Above (see
// AboveDeltas); for a receipt of a thread's message they change the
// receipts' hint of its thread's counter (HintOf), whatever the tallies.
func MarkDeltas(mk Mark) []Counter {
	before, after := mk.records()
	var out []Counter
	if before != nil {
		b := *before
		b.Counted = mk.Counted
		out = append(out, RemovalDeltas(b)...)
	}
	if after != nil {
		out = append(out, RecordCounters(*after)...)
	}
	out = MergeCounters(slices.Concat(out, mk.TimedDeltas(), MutedDeltas(mk)))
	for i := range out {
		out[i].Latest, out[i].Top, out[i].TopEntry = "", State{}, "" // a mark is no activity
	}
	if mk.Receipt {
		rec, to := before, State{}
		if after != nil {
			rec, to = after, after.State()
		}
		if rec != nil {
			out = withHint(out, *rec, to)
		}
	}
	return out
}

// RecordCounters returns what rec adds to its partition's counters: a
// message or broadcast adds published; in a user's partition a record adds
// read if read, archived if archived, archivedread if both, or hidden alone
// if deleted (a receipt); a receipt of a group's message adds its marks to
// the group's counters too; and a record of a thread adds the same to the
// thread's counter (see Counter), a message or broadcast raising its
// Latest.
func RecordCounters(rec Record) []Counter {
	var t Counter
	if !rec.Receipt {
		t.Published = 1
	}
	switch st := rec.State(); {
	case rec.Partition.IsShared():
	case !st.DeletedAt.IsZero():
		// A deleted receipt counts as hidden only, whatever other marks
		// another program gave it (see EditDeltas).
		t.Hidden = 1
	default:
		if !st.ReadAt.IsZero() {
			t.Read = 1
		}
		if !st.ArchivedAt.IsZero() {
			t.Archived = 1
			t.ArchivedRead = t.Read
		}
	}
	out := tallyDeltas(rec.Partition, rec.Message.Category, "", t)
	if g := rec.Message.Audience.Group; rec.Receipt && g != "" {
		out = append(out, tallyDeltas(rec.Partition, rec.Message.Category, g, t)...)
	}
	out = append(out, threadDeltas(rec, t)...)
	return MergeCounters(out)
}

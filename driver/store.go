package driver

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
)

// Store persists an Inbox's records. It holds no logic of its own: the Inbox
// validates input, computes IDs, TTLs and counter changes, merges feeds and
// accounts removals, and a Store only carries out each method below as one
// atomic unit (on DynamoDB, one request or one transaction), except Repair,
// which says how it is split.
//
// Implementations must be safe for concurrent use. The storetest package is
// the conformance suite every Store must pass. The dynamo package is the
// production Store and the memstore package an in-memory one for tests.
//
// Counters are created at zero the first time a change touches them; a
// change's Latest raises a thread counter's Latest, never lowers it, and
// a change of a user's counter of her receipts of a shared thread moves
// its receipts' hint as Counter.Latest says (Counter.ApplyHint). Times
// are stored with one-second precision (epoch seconds on DynamoDB); the
// Inbox truncates every time it writes, so a Store returns what it was given.
//
// # The ledger
//
// With every message, broadcast and receipt it writes, a Store keeps the
// record's ledger entry, named by Record.Entry (LedgerSK): a copy of what
// the record adds to the counters (its key, expiry, category, thread,
// whether it is a receipt and of which group, and the user's marks on it),
// written and changed in the same
// atomic unit as the record and its counters, and the record notes its
// entry. Unlike the record, an entry does not expire: only ApplyRemoval
// (when the record's removal is accounted) deletes it. So at any time the
// entries of a partition add up to its counters, and Stats can return the
// entries of the records that have expired, whether or not they have been
// deleted yet: the Inbox takes them out of its counts, which is how Counts
// equals List while expired records wait for deletion and their removals
// wait for the stream. Each record written gets an entry of its own, so a
// record written again at a key whose earlier record's removal is still
// pending does not lose its entry to that removal.
//
// A record written to the table by another program (following the same
// design) has no entry. It is counted as that program counted it, and its
// removal is accounted by the stream event's ID instead (see Removal); a
// mark (inbox.Inbox.MarkRead) or Repair gives it an entry, which adopts it.
type Store interface {
	// PutMessage creates rec, a message or broadcast (never a receipt), and
	// its ledger entry rec.Entry, and adds deltas to their counters, all or
	// nothing. A record without Entry is ErrInvalidInput. A record of a
	// user's partition gets its marks as its Counted (see Record.Counted),
	// whatever rec.Counted says. A scheduled record (Message.DeliverAt set)
	// notes its pending entry (Record.Timed, TimedKey(DeliverAt, Entry,
	// true)) and gets it in the same unit: the record as its ledger entry
	// holds it, with DeliverAt; and the entry's timer (TimerSK), which
	// expires (on DynamoDB, by TTL) at DeliverAt. A shared partition's
	// record counts in its time buckets (see DayBucket).
	//
	// receipts (at most MaxPutReceipts, see ValidatePutReceipts) create,
	// in the same unit, users' receipts of rec, a shared partition's
	// record delivered now: each as Mark would create it (its ledger
	// entry, To.Counted() as its Counted, and, if it RecordsRecent, the
	// broadcast's key among its partition's recent receipts), rec's
	// existence standing for the check of its broadcast, but with no
	// reader item (see Mark.ReaderChange). The Inbox writes the sender's
	// read of her own group message so (see inbox.Draft.Sender), with the
	// receipt's counter changes (MarkDeltas, AboveDeltas) among deltas;
	// her reads are implied, and never listed (see inbox.Inbox.ReadBy).
	//
	// An aggregated message (Message.Count set: see Record.Follows) is
	// written only if its thread's own counter's Latest is rec.Follows
	// (none for ""), else ErrStateChanged; the message of its item it
	// takes in, if any, is deleted in the same unit, by a direct Delete
	// mark among receipts, which applies as Mark applies it (its
	// conditions, its ledger entry and timed entries; its counter
	// changes among deltas); and a Fence mark of rec's partition among
	// them makes that partition's Above apply on condition that its
	// watermark is the mark's Seen (else a *SeenError), rather than by
	// rec's ID, so that the Above of both messages is exact.
	//
	// The deltas' Above (see Counter.Above) of a user's partition apply
	// only if that partition's seen watermark (Stats.Fence) is below rec's
	// ID, the rest in any case, but for the counters of a muted thread
	// (Counter.Muted), which apply only if the partition's own
	// preferences mute that thread at the write, in every method that
	// takes deltas. In
	// this and every other method deltas name each counter at most once.
	// If a record with rec's key, or a receipt's, already exists it
	// returns an error matching ErrExists and changes nothing. A record of
	// a user's partition whose category the partition's preferences opt
	// out of (Preferences.OptsOut, as they stand at the write), or, if the
	// partition has none of its own (Preferences.Own), whose
	// rec.OptOutDefault is set, is not written: it returns an error
	// matching ErrOptedOut and changes nothing. A direct message of a
	// thread in a user's partition that a read position would cover
	// (Coverable, and the thread's Position covers its ID) is not
	// written either: it returns a *CoveredError and changes nothing (the
	// Inbox puts it read, at the position's time).
	// A call whose DynamoDB
	// transaction would hold more than MaxTransactItems items
	// (ValidatePutItems, of the deltas as they apply: without the Above
	// of a partition whose watermark is not below rec's ID) returns an
	// error matching ErrInvalidInput and changes nothing. A retry of a PutMessage that
	// succeeded (e.g. after a lost response) must not apply twice. An
	// error matching a sentinel (ErrInvalidInput, ErrThrottled, ...) and
	// not a context's error says that nothing was written; any other error
	// leaves it unknown, and the Inbox reports it so
	// (inbox.ErrOutcomeUnknown).
	PutMessage(ctx context.Context, rec Record, deltas []Counter, receipts ...Mark) error

	// GetRecords returns the records that exist at keys, expired or not, in
	// one round trip, in no particular order; missing keys are left out.
	// Reads are strongly consistent. At most 100 distinct keys.
	GetRecords(ctx context.Context, keys []Key) ([]Record, error)

	// Query returns records (messages, broadcasts and receipts) of one
	// partition in descending ID order, see Query, strongly consistent.
	// Counters, ledger entries and other non-message items are never
	// returned. With q.Readers it lists a thread's reader items instead
	// (see Query.Readers). With q.Scheduled it lists instead the scheduled direct
	// messages of a whole inbox, in ascending order, eventually
	// consistent (see Query.Scheduled); a Store over storage that cannot
	// list them returns an error matching ErrUnsupported.
	Query(ctx context.Context, q Query) (QueryResult, error)

	// Mark applies every mark, writes each marked record's ledger entry
	// Mark.Entry (as the record stands after the mark; deleted with it) and
	// adds deltas to their counters, all or nothing, in one atomic unit.
	// Callers pass at most MaxMarkBatch marks, each key at most once,
	// whose DynamoDB transaction holds at most MaxTransactItems items
	// (MarkItems; more is ErrInvalidInput, see ValidateMarks). A
	// mark changes a user's marks on one message from From to To (see
	// State), or the user's seen watermark:
	//
	// For a direct mark (Receipt unset), the message at Key must exist,
	// expire after Now, have the mark's Category, ExpiresAt and, if the
	// mark has one, DeliverAt, the entry Mark.Entry or none (then it is
	// adopted), exactly From's marks (ReadAt, ArchivedAt, InteractedAt set
	// or unset alike) and, unless Mark.Counted is zero, that Counted; it
	// gets To's marks, Entry and, as its Counted, To.Counted(). With Delete
	// it is deleted instead, with its entry.
	//
	// For a receipt mark, the broadcast with Key.ID in Shared (of Key's
	// tenant and inbox) must exist, expire after Now and have the mark's
	// Category and ExpiresAt (else ErrNotFound, if the receipt's own
	// condition, below, holds; else ErrStateChanged). The receipt at Key
	// must have exactly From's marks, the entry Mark.Entry (or none, then
	// it is adopted) and, unless Mark.Counted is zero, that Counted; if
	// From is zero there may be no record at Key instead (a receipt
	// without marks is the seeds' unread receipt, readat NULL). The
	// receipt gets To's marks, of Shared's group, and To.Counted(); if To
	// is zero it is deleted with its entry.
	//
	// A mark whose From and To are the same rewrites the record's ledger
	// entry, snooze entry (and, with DeliverAt, pending entry) as the
	// record stands, whatever marks another program gave it: after that
	// program changed its marks (Record.Edited), that is how they come to
	// count the record as it is.
	//
	// A receipt mark of a thread's message keeps, in the same atomic unit,
	// the user's reader item of it (see Reader) in step with the read its
	// ledger entry counts (read and not deleted), as Mark.ReaderChange
	// says: written at ReaderSK(Thread, Key.ID, user) in Shared, with
	// To.ReadAt, Entry and ExpiresAt as its expiry, when the mark makes
	// the receipt read (or adopts it, or keeps its marks, read), deleted
	// when it makes it unread, whatever item is there.
	//
	// A receipt mark that creates a receipt of a recent broadcast
	// (Mark.RecordsRecent) also records, in the same atomic unit, the
	// broadcast's key (Shared and Key.ID) among the recent receipts of the
	// user's partition, in slot add of RecentSlots(mk.Now), and forgets
	// every recent receipt in slot clear (see Stats.Recent).
	//
	// Each mark writes and deletes its record's timed entries as
	// Mark.TimedWrites says, and notes the entry it writes on the record
	// (Record.Timed, none if it writes none); the record must note
	// Mark.Timed. A record's marks include SnoozedUntil, to the second, in
	// the conditions above. A mark of a shared partition's broadcast (no
	// marks, From and To zero, a Timed or a DeliverAt) only writes its
	// pending entry again, or folds it: the broadcast must exist, expire
	// after Now and note Mark.Timed.
	//
	// A watermark mark (Seen set, Key.ID empty) raises the seen watermark
	// of the user partition Key.Partition to Seen if it is below
	// (Stats.Seen), and records Seen as its Fence; with Versioned, only if
	// the partition's counter version is Version. A watermark mark with
	// Fence changes nothing, and the call applies only if the partition's
	// Fence is Seen. Deltas that change a partition's Above need a
	// watermark mark of it (either kind): ErrInvalidInput without. A
	// watermark mark has no entry of its own.
	//
	// A direct mark whose record, as it leaves it, a read position would
	// cover (Coverable with To's marks, and its thread's Position covers
	// its ID), but for a mark whose From and To are the same, is refused
	// with a *CoveredError: it would make the record unread below the
	// position, where it reads as read. So is a direct mark that changes
	// the marks of a record the position covers as it stands, keeps it,
	// and writes no read (UnreadOverCover): made without the read the
	// position lends the record (an archive that read it before the
	// position moved over it), it would drop that read. So is a direct
	// mark its writer made reading the record uncovered (Uncovered) that
	// changes the marks of a record the position covers as it stands,
	// and keeps it (MadeUncovered), whatever it writes: the position read
	// the record first, and the mark, made from a read before the move,
	// would claim a change the move made (a MarkRead racing MarkAllRead
	// of its chat would write a read the position wrote already, and
	// both calls would report it). The writer reads again, and finds the
	// record read.
	//
	// If a condition fails nothing is applied and the error matches
	// ErrStateChanged (the marks, or the receipt's existence, are not From;
	// the watermark is not below Seen, or the version not Version; a
	// fence's watermark is not Seen: a *SeenError) or ErrNotFound (the
	// message or broadcast is missing or expired). With several marks the
	// error may name either reason.
	//
	// A preferences mark (Preferences set, Key.ID empty, nothing else but,
	// if it mutes threads anew, Versioned and Muted) replaces the
	// preferences of the user partition Key.Partition (Stats.Preferences)
	// with Preferences.To if they are exactly Preferences.From (and, if
	// Versioned, the version is Version; else ErrStateChanged), writes the
	// counters of Muted and drops those of the threads To no longer mutes
	// (Counter.Muted), and changes the
	// partition's counter version (Stats.Version; its total counter is
	// created at zero if missing), in one atomic unit, so that a read
	// checked against the version sees the change. It comes alone in its
	// call, without deltas (see ValidateMarks), else ErrInvalidInput. A
	// Store that feeds changes feeds it (Change.Preferences); the dynamo
	// Store writes, in the same unit, the item PreferencesSK (kind UP),
	// for its stream.
	Mark(ctx context.Context, marks []Mark, deltas []Counter) error

	// Stats returns, in one round trip and as one consistent read, every
	// stats record of partition q.Partition with their version (with
	// q.Threads, its threads' counters too; else none of them), its seen
	// watermark and Fence, the ledger entries of the partition that expire
	// at or before q.Now, the timed entries whose time is at or before
	// q.Now (Due), the tombstones, the earlier version's snooze and pending
	// entries still stored, of a user partition its preferences, and, of
	// a shared partition, its day buckets
	// (on DynamoDB, one Query of adjacent sort keys; a read past one page
	// is checked against the version, and read again if a write came
	// between). With q.Hour it reads one hour bucket instead. With q.Keys
	// it reads the counters with those keys and the Version alone (the
	// total, of a user's partition, with its covered threads' counters,
	// Counter.Covered), by key in one round trip: one isolated read with
	// q.Isolated, else each
	// counter as it stands at some instant of the call (see
	// StatsQuery.Keys). See Stats. A query ValidateStatsQuery refuses is
	// ErrInvalidInput.
	Stats(ctx context.Context, q StatsQuery) (Stats, error)

	// ApplyRemoval accounts the removal of r.Record, at most once, all or
	// nothing, and reports whether this call applied it.
	//
	// If r.Record has an Entry, the removal applies only if that ledger
	// entry exists in r.Record's partition: the entry is deleted,
	// r.Deltas are added, with r.Tombstone a tombstone of the record (its
	// ID, category and expiry) is written, and with r.Delete the record
	// itself is deleted if it is there. Otherwise it returns false and
	// changes nothing: the removal was applied before.
	//
	// A record without an Entry is accounted by r.EventID (at most 128
	// bytes) instead: the removal applies only if no removal with that ID
	// was applied in r.Record's partition, and the store keeps a marker of
	// it until at least r.Now plus RemovalMarkerTTL. r.Delete is
	// ErrInvalidInput for such a record. If the record left the table
	// (r.LeftAt: its deletion, or its expiry, whichever came first) at or
	// before the partition's recount time (Stats.Recounted, both to the
	// second), the marker and the tombstone are written but r.Deltas are
	// not applied, atomically with the check: a recount that read the
	// partition after the record left counted it out already, and one
	// whose time is that close to the record's removal may have (see
	// Repair.Recounted): the Inbox then recounts the partition.
	//
	// A removal that applies to a read receipt of a thread's message
	// also deletes, in the same unit, its reader item (Removal.ReaderRemoval)
	// if that item's Entry is the receipt's: one a later receipt at the
	// same key wrote stays.
	//
	// A removal that applies to a record with an Entry also deletes, in
	// the same unit, its timed entry (r.Record.Timed) and the entries an
	// earlier version kept of it (SnoozeSK, if r.Record.Message.SnoozedUntil
	// is set; PendingSK, if its DeliverAt is), and, for a shared
	// partition's record, takes it out of its time buckets. The deltas'
	// Above apply only if the partition's seen watermark (Stats.Fence) is
	// below the record's ID.
	//
	// A removal whose DynamoDB transaction would hold more than
	// MaxTransactItems items (ValidateRemovalItems; or, made again
	// without the deltas' Above because the watermark of the record's
	// partition is not below its ID, RemovalItems of those) returns an
	// error matching ErrInvalidInput and changes nothing.
	ApplyRemoval(ctx context.Context, r Removal) (applied bool, err error)

	// Repair gives each record of r.Adopt that still exists as given (same
	// key, marks and Entry, or none) the ledger entry r.Adopt's AdoptAs
	// names, recording it on the record (and, as its Counted,
	// AdoptedCounted of the record as given), atomically per record; a
	// record that is gone or changed is skipped. A record adopted that had
	// no entry counts, in the same unit, in its shared partition's time
	// buckets, or in its user partition's Above (AboveCounters of it as
	// adopted) if its ID is above the partition's Fence. It deletes the timed
	// entries r.Drop names. Then, with r.Reset, it replaces every stats
	// record of partition p, the threads' counters included, with
	// r.Counters (a thread's counter with the Latest given), records r.Seen
	// as p's Fence and, for a shared partition, replaces its time buckets
	// with r.Days and r.Hours (see Repair.Days), and records r.Recounted as
	// p's recount time, but only if p's counter version still equals
	// r.Version and its counters still hold r.Before's tallies, no other
	// having appeared: otherwise it returns an error matching ErrConflict
	// and leaves the counters as they are. With r.Stamp instead it records
	// r.Recounted alone, under the version condition, and changes the
	// version. The adoptions and the reset are not atomic together. A
	// record or counter of another partition, or two counters of one
	// category, is ErrInvalidInput and changes nothing.
	Repair(ctx context.Context, p Partition, r Repair) error

	// ClaimHostID returns the claim that stands for c.HostSystemID in
	// c.Scope: c itself if this call made it, or an earlier claim that
	// expires after c.Now, with the ID, group, expiry and digest it was
	// made with (an expired one is replaced by c). A claim may be
	// forgotten after its ExpiresAt.
	//
	// With c.Retire it makes no claim: it sets the Digest of the standing
	// claim to RetiredDigest, if that claim's ID is c.ID (or c.ID is
	// empty), and returns it so changed; with no standing claim it returns
	// a zero HostClaim. With c.Peek it changes nothing: it returns the
	// standing claim as it is (strongly consistent), or a zero HostClaim.
	ClaimHostID(ctx context.Context, c HostClaim) (HostClaim, error)

	// Config returns the tenant settings and inbox config of s in one round
	// trip; a missing record leaves its field nil.
	Config(ctx context.Context, s Scope) (Config, error)

	// PutTenantSettings creates or replaces a tenant's settings. Settings
	// that TenantSettings.Validate refuses are refused with its error, and
	// nothing is written.
	PutTenantSettings(ctx context.Context, tenant string, ts TenantSettings) error

	// PutInboxConfig creates or replaces an inbox's config. A config that
	// InboxConfig.Validate refuses is refused with its error, and nothing
	// is written.
	PutInboxConfig(ctx context.Context, s Scope, ic InboxConfig) error
}

// MaxPutReceipts is the most receipts one Store.PutMessage creates with
// its record, so that the record, its buckets, the receipts, their ledger
// entries and every counter they change fit in one DynamoDB transaction
// (100 items): a receipt takes two items and at most five counters.
const MaxPutReceipts = 8

// ValidatePutReceipts checks what receipts may ask of Store.PutMessage
// with rec, whatever is stored, as every Store must before it writes: at
// most MaxPutReceipts, each in its own user partition, and each a valid
// mark (ValidateMark) that creates a receipt of rec: rec is a shared
// partition's record, not scheduled, and each mark is a receipt of it
// (Shared its partition, Key.ID its ID, its Category, Thread and
// ExpiresAt, Now before its expiry), with no From, Counted, Timed or
// Adopts, and To's marks set but for a snooze (which would need a timed
// entry) or a deletion. Anything else is ErrInvalidInput.
func ValidatePutReceipts(rec Record, receipts []Mark) error {
	if len(receipts) == 0 {
		return nil
	}
	bad := func(mk Mark, what string) error {
		return fmt.Errorf("%w: receipt of %q in %s put with %s: %s", ErrInvalidInput, mk.Key.ID, mk.Key.Partition.PK(), rec.Partition.PK(), what)
	}
	if len(receipts) > MaxPutReceipts {
		return fmt.Errorf("%w: %d receipts put with %s, at most %d", ErrInvalidInput, len(receipts), rec.Message.ID, MaxPutReceipts)
	}
	users := make(map[Partition]bool, len(receipts))
	var replaced, fenced bool
	for _, mk := range receipts {
		if err := ValidateMark(mk); err != nil {
			return err
		}
		m := rec.Message
		if m.Count > 0 {
			// An aggregated message's: the deletion of the message it
			// takes in, and a fence of its partition's watermark.
			switch {
			case mk.Fence && mk.Key.ID == "":
				if fenced || mk.Key.Partition != rec.Partition {
					return bad(mk, "a second fence, or another partition's")
				}
				fenced = true
			case replaced:
				return bad(mk, "a second message taken in")
			default:
				if err := validateReplaced(rec, mk); err != nil {
					return err
				}
				replaced = true
			}
			continue
		}
		switch {
		case !rec.Partition.IsShared() || rec.Receipt || !m.DeliverAt.IsZero():
			return bad(mk, "a record that is not a shared partition's, delivered now")
		case !mk.Receipt || mk.Shared != rec.Partition || mk.Key.ID != m.ID:
			return bad(mk, "not a receipt of the record")
		case mk.Category != m.Category || mk.Thread != m.Thread || !mk.ExpiresAt.Equal(m.ExpiresAt) || !mk.Now.Before(m.ExpiresAt):
			return bad(mk, "another category, thread or expiry than the record's, or expired")
		case !mk.From.IsZero() || mk.Counted != 0 || mk.Timed != "" || mk.Adopts:
			return bad(mk, "marks of a receipt that stands")
		case mk.To.IsZero() || !mk.To.DeletedAt.IsZero() || !mk.To.SnoozedUntil.IsZero():
			return bad(mk, "no marks, a deletion or a snooze")
		case users[mk.Key.Partition]:
			return bad(mk, "a second receipt in one partition")
		}
		users[mk.Key.Partition] = true
	}
	return nil
}

// MaxMarkBatch is the most marks an Inbox passes to one Store.Mark, so
// that marks, their ledger entries, conditions and counters fit in one
// DynamoDB transaction (100 items): a receipt takes three items (the
// receipt, its entry and the check of its broadcast), four with its
// reader item, and each mark can add counters; an Inbox splits a batch
// whose items would not fit.
const MaxMarkBatch = 24

// Query selects records of one partition for Store.Query.
type Query struct {
	Partition Partition
	// Before is an exclusive upper bound on IDs; "" starts at the newest.
	Before string
	// After is an exclusive lower bound on IDs; "" reads to the oldest.
	After string
	// Limit is the most records the store evaluates (before filtering), at
	// least 1. A store may evaluate fewer and return Next. For a user's
	// unread feed (UnreadOnly with NotArchived) a store may evaluate only
	// the unread, unarchived messages, as from an index of them.
	Limit int
	// Category keeps only records of this category; "" keeps all.
	Category string
	// UnreadOnly keeps only messages and broadcasts without ReadAt:
	// receipts are dropped too (the Inbox reads the receipts of the
	// broadcasts it lists by key). With Archived NotArchived it selects a
	// user's unread feed, which a Store should read at a cost that grows
	// with the unread messages, not with the partition (the dynamo Store
	// reads a sparse index of them).
	UnreadOnly bool
	// Archived filters by the archive mark: see ArchiveFilter.
	Archived ArchiveFilter
	// Now drops records that expire at or before Now, and scheduled
	// messages not due at Now (Message.Due); zero keeps all.
	Now time.Time
	// Thread keeps only the records of this thread (messages and
	// receipts); "" keeps all. A Store should read them at a cost that
	// grows with the thread's records, not with the partition (the dynamo
	// Store reads its thread index): Limit then counts only them.
	Thread string
	// Unseen selects, in a user's partition, what decides the user's
	// unseen count above After (see inbox.Inbox.Counts): the unread, unarchived
	// direct messages and every receipt, evaluated alone (Limit counts
	// only them; the dynamo Store reads them from its unread index), and
	// asks for the partition's counter version as read with them
	// (QueryResult.Version). Category, UnreadOnly and Archived must be
	// unset with it.
	Unseen bool
	// Scheduled selects, instead of one partition's records, the
	// scheduled messages (InScheduledIndex: DeliverAt set, due or not) of
	// an inbox, in every partition: each user's copy of a direct message,
	// and each broadcast or group message, stored once in its shared
	// partition. Partition names the scope alone (no User, no Group).
	// They are evaluated in ascending order of their position,
	// ScheduledKey(ID, partition), strictly between After and Before
	// (positions, or bare IDs: see ScheduledKey), at most Limit of them;
	// Next is the position of the last one evaluated, the After of the
	// following page ("" when none remain). Now drops those that expire at
	// or before it (not those due: the caller picks a delivery-time range
	// with the bounds). Each record comes with its Partition (its user's,
	// or the shared one), its ledger Entry and no marks nor Timed (ReadAt and
	// ArchivedAt zero, whatever the user did since it came due). Category, Thread, UnreadOnly, Archived
	// and Unseen must be unset with it. A Store should read them at a
	// cost that grows with what it evaluates, not with the inbox (the
	// dynamo Store reads its scheduled index, a global secondary index
	// that projects a message's content and no marks, so that a mark
	// writes nothing to it).
	//
	// Unlike every other read, it may be eventually consistent: the
	// dynamo Store's index is a global one, which DynamoDB updates after
	// the write returns (usually within a second), so a copy written or
	// deleted just before may be missing from it or still in it. A Store
	// that cannot list them returns an error matching ErrUnsupported.
	Scheduled bool
	// Snoozed selects, instead of records, the user partition's stored
	// snooze entries (see TimedKey), each as its record as the entry holds
	// it (with its SnoozedUntil and marks), in descending ID order below
	// Before, at most Limit; Next as for records. Entries whose time has
	// passed are among them until they are folded. Only Before and Limit
	// may be set with it. A Store should read them at a cost that grows
	// with them, not with the partition (the dynamo Store reads them from
	// its unread index, under their own keys).
	Snoozed bool
	// Threads selects, instead of records, the partition's threads' own
	// counters (Counter.Thread set, Group "": a user's direct threads, or
	// a shared partition's), by last activity (Latest) descending, each
	// below Before if set (a message ID: those whose Latest is below it),
	// at most Limit, in QueryResult.Threads; Next is the Latest of the last
	// one evaluated ("" when none remain). Only Before and Limit may be set
	// with it. A Store should read them at a cost that grows with the
	// page, not with the partition's threads (the dynamo Store reads its
	// unread index, where each thread counter is kept under its activity).
	Threads bool
	// ActivityOnly, with Threads, asks for each thread's Partition,
	// Thread and Latest alone: a Store returns the tallies and Rev too only
	// if it reads them at no cost besides (the dynamo Store reads its
	// index's entries alone, not the counters they point to, and a table
	// whose index holds the tallies has them there), and then sets
	// QueryResult.Tallied; else they are zero, for a caller that reads the
	// counters it lists again by key.
	ActivityOnly bool
	// Readers selects, instead of records, the reader items (see Reader)
	// of the shared partition's messages of Thread whose IDs are strictly
	// between After and Before ("" bounds none), in QueryResult.Readers,
	// in ascending order of message ID, then user; at most Limit
	// evaluated; Next is the After of the following page (a position,
	// <id>#<user>, which After may be), "" when none remain. Now drops
	// those that expire at or before it. Only Thread, After, Before,
	// Limit and Now may be set with it, of a shared partition. A Store
	// reads them at a cost that grows with them, not with the partition
	// (the dynamo Store: one Query of a range of sort keys, ReaderSK).
	// With Positions too, it lists instead the thread's members' position
	// items (ReaderPositionSK), by user, all of them (Next ""; Limit
	// ignored): only Thread and Limit may be set with them.
	Readers   bool
	Positions bool
}

// Keeps reports whether q's filters keep rec (its Category, Thread,
// UnreadOnly, Now and Archived; not its bounds, Unseen or Scheduled;
// with Scheduled, Now drops the expired only): what a Store that filters
// in memory applies.
func (q Query) Keeps(rec Record) bool {
	m := rec.Message
	switch {
	case q.Category != "" && m.Category != q.Category, q.Thread != "" && m.Thread != q.Thread:
		return false
	case q.UnreadOnly && (rec.Receipt || m.IsRead()):
		return false
	case !q.Now.IsZero() && (!q.Now.Before(m.ExpiresAt) || !q.Scheduled && !m.Due(q.Now)):
		return false
	case q.Archived == NotArchived && !rec.Receipt && m.IsArchived():
		return false
	case q.Archived == OnlyArchived && !m.IsArchived():
		return false
	}
	return true
}

// ValidateQuery checks what q may ask of Store.Query, whatever is stored,
// as every Store must before it reads: an Unseen query is of a user's
// partition, without Category, Thread, UnreadOnly or Archived, and a
// Category or Thread is a key; a Scheduled query names a scope alone,
// with no other filter, and bounds that are message IDs or ScheduledKey
// positions, After below Before; a Readers query is of a shared
// partition and a thread, with ID bounds (After may be a position).
// Anything else is ErrInvalidInput (or ErrInvalidKey).
func ValidateQuery(q Query) error {
	if q.Readers {
		return validateReadersQuery(q)
	}
	if q.Positions {
		return fmt.Errorf("%w: a query of positions without Readers", ErrInvalidInput)
	}
	if q.Scheduled {
		return validateScheduledQuery(q)
	}
	if q.Snoozed && (q.Partition.IsShared() || q.Category != "" || q.Thread != "" || q.UnreadOnly || q.Archived != AnyArchived || q.Unseen || q.After != "" || q.Threads) {
		return fmt.Errorf("%w: a query of snooze entries of %s with other filters, or of a shared partition", ErrInvalidInput, q.Partition.PK())
	}
	if q.Threads && (q.Category != "" || q.Thread != "" || q.UnreadOnly || q.Archived != AnyArchived || q.Unseen || q.After != "" || !q.Now.IsZero()) {
		return fmt.Errorf("%w: a query of the threads of %s with other filters", ErrInvalidInput, q.Partition.PK())
	}
	if q.ActivityOnly && !q.Threads {
		return fmt.Errorf("%w: ActivityOnly in a query of %s without Threads", ErrInvalidInput, q.Partition.PK())
	}
	if q.Threads && q.Before != "" {
		if err := ValidateMessageID(q.Before); err != nil {
			return err
		}
	}
	if q.Unseen && (q.Partition.IsShared() || q.Category != "" || q.Thread != "" || q.UnreadOnly || q.Archived != AnyArchived) {
		return fmt.Errorf("%w: an unseen query of %s with other filters, or of a shared partition", ErrInvalidInput, q.Partition.PK())
	}
	if err := ValidateCategory(q.Category); err != nil {
		return err
	}
	return ValidateThread(q.Thread)
}

// QueryResult is one page of Store.Query.
type QueryResult struct {
	// Records matched the query, in descending ID order.
	Records []Record
	// Next is the Before of the following page: the ID of the last record
	// evaluated, which may be lower than the last one returned when filters
	// dropped records. "" means no records remain below (above After); a
	// non-empty Next may lead to an empty page.
	Next string
	// Version is, for a Query with Unseen, the partition's counter version
	// (Stats.Version) in the same consistent read as Records, if Versioned:
	// a Store that cannot read it with them leaves Versioned false.
	Version   int64
	Versioned bool
	// Threads are, for a Query with Threads, the threads' counters, by
	// activity, latest first, each with its Rev if Tallied.
	Threads []Counter
	// Tallied is set when Threads hold their tallies: always without
	// ActivityOnly, and with it where the Store read them at no cost.
	Tallied bool
	// Readers are, for a Query with Readers, the reader items, by message
	// ID, then user.
	Readers []Reader
}

// ArchiveFilter selects records of a Store.Query by the archive mark.
type ArchiveFilter int

// The values of ArchiveFilter.
const (
	// AnyArchived keeps every record.
	AnyArchived ArchiveFilter = iota
	// NotArchived drops messages that have ArchivedAt; receipts are kept.
	NotArchived
	// OnlyArchived keeps only messages and receipts that have ArchivedAt.
	OnlyArchived
)

// Mark is one change of Store.Mark: the user's marks on a direct message
// or on a broadcast or group message (its receipt), or the user's seen
// watermark.
type Mark struct {
	// Key is the direct message, or where the receipt goes: the user's
	// partition and the broadcast's ID. A watermark mark has no ID.
	Key Key
	// Now is the time the message or broadcast must expire after.
	Now time.Time
	// Receipt is set for a receipt of a broadcast, unset for a direct
	// message.
	Receipt bool
	// Shared is, for a receipt, the partition of its broadcast: the public
	// partition, or a group's (the receipt records the group).
	Shared Partition
	// Entry is the ledger entry of the record: the direct message's or
	// receipt's own, or a new one (LedgerSK) for a new receipt or a message
	// without one.
	Entry string
	// Category and ExpiresAt are the marked message's (a receipt copies
	// them from its broadcast). The store records them in the ledger entry
	// it writes for the mark.
	Category  string
	ExpiresAt time.Time
	// Thread is the marked message's thread: a new receipt copies it from
	// its broadcast, so that Query.Thread finds it beside its thread's
	// messages.
	Thread string
	// Adopts is set when the marked record has no ledger entry (another
	// program wrote it; Entry is a new one): before the mark it counts as
	// that program counted it, in no thread's counter (see MarkDeltas).
	// A Store's conditions are the same either way.
	Adopts bool
	// From are the marks the record must have; To the marks it gets.
	From, To State
	// Uncovered is set, on a direct mark of a record, by a writer that
	// read the record as no read position covers it (Coverable with
	// From's marks, and its thread's Position, as read, not covering its
	// ID), so that To holds no read the position lends it: Store.Mark
	// refuses such a mark that changes the record's marks and keeps it
	// if the position covers the record at the write (see
	// Mark.MadeUncovered).
	Uncovered bool
	// Counted is the record's Counted as read: the marks its ledger entry
	// counts (zero if the Store could not tell, or there is no record). The
	// record must still have it, unless it is zero, and gets To.Counted();
	// where another program edited the record (Counted is not
	// From.Counted()), the mark's deltas include what that program did not
	// count (see MarkDeltas).
	Counted MarkSet
	// Delete asks for a direct message to be deleted, with its entry.
	Delete bool
	// DeliverAt is, for a scheduled direct message, its due time, or zero
	// (a mark that leaves its pending entry alone). The message must have
	// it. Deleted, it goes with its pending entry; kept before it is due
	// (another program marked it, and the mark rewrites its entries), its
	// pending entry gets To's marks, for Counts takes the message out of
	// the user's counts with them until it is due (see TimedWrites).
	DeliverAt time.Time
	// Timed is the record's Timed as read: the key of its stored timed
	// entry, "" for none. The record must still note it; the mark deletes
	// that entry, with its tallies, unless it writes it again at the same
	// key (see TimedWrites).
	Timed string
	// Seen is the watermark a watermark mark raises to: the greatest
	// message ID that counts as seen (see SeenAt). With Fence, it is the
	// watermark the call's Above deltas were computed for instead.
	Seen string
	// Fence makes a watermark mark a fence, which changes nothing: the
	// call applies only if the partition's watermark, as its Above is
	// kept for (Stats.Fence), is Seen ("" for none); else nothing is
	// applied and the error is a *SeenError with that watermark. A call
	// whose deltas change a partition's Above needs one for it.
	Fence bool
	// Preferences makes the mark a preferences mark, which changes the
	// user's preferences (see Store.Mark): Key names the user's partition
	// alone, with no ID, and nothing else but Now is set, and, if it
	// mutes threads anew, Versioned, Version and Muted.
	Preferences *PreferencesChange
	// Versioned makes a watermark mark that raises the watermark, or a
	// preferences mark, apply only if the partition's counter version is
	// Version (Stats.Version), else ErrStateChanged: MarkSeen sets the
	// partition's Above anew with it, and a mute of threads their
	// counters, from a read at that version.
	Versioned bool
	Version   int64
	// Muted makes a watermark mark with Versioned, or a preferences mark,
	// set the counters of some of its partition's muted threads anew (see
	// MutedReset).
	Muted *MutedReset
	// Cover makes the mark a cover mark, which moves the user's read
	// position in a thread of her direct messages (see Position): Key
	// names her partition alone, with no ID, and nothing else but Now,
	// Versioned and Version is set.
	Cover *CoverChange
}

// CoverChange moves a user's read position in thread Thread of her
// direct messages (Group ""), or of group Group's messages, from From to
// To (zero: none), see Counter.Covered. A move of a group's thread's
// also writes To as her position item in the group's partition (see
// Reader.Position), in the same atomic unit.
// Store.Mark applies it only if the thread's position is From and the
// partition's counter version is the mark's Version (Mark.Versioned: no
// write of the partition came since the caller read the records the move
// covers), else ErrStateChanged, and changes the version. The call's
// deltas of the thread's covered counters (with no Counter.Of) are what
// the records the move covers, or uncovers, add: they apply as they are.
// A Store that keeps no read positions (memstore and the dynamo Store
// keep them) refuses a cover mark with ErrUnsupported and writes nothing; it never
// returns a covered counter, so that nothing reads as covered, and the
// Inbox marks the messages one by one.
// With To zero it removes the thread's covered counters, which must then
// count nothing, as the call's deltas leave them (else ErrStateChanged):
// the deltas take out the records it still covers that are gone, their
// removals not yet accounted (expired, see Stats.Expired), which a
// removal then accounts as uncovered. As a watermark mark, it fences
// the deltas' Above: the version stands for the watermark they were
// computed for.
type CoverChange struct {
	Thread   string
	Group    string
	From, To Position
}

// MutedReset sets the counters of muted threads (Counter.Muted) of a
// user's partition anew, with a versioned watermark or preferences mark
// (Mark.Muted): each of Threads gets exactly Counters' counters of it
// (a category they leave out is at zero), in place of deltas, which the
// call may not hold for those threads. With a watermark mark, the
// partition's preferences must mute each of Threads (else
// ErrStateChanged), as they do at the version read: MarkSeen sets their
// Above anew so, a write whose size grows with the threads, not with the
// categories of their messages. With a preferences mark, Threads are
// exactly the threads it mutes anew (PreferencesChange.NewlyMuted),
// counted at the version read: the threads' counters from their records.
type MutedReset struct {
	// Threads are the threads set anew: sorted, each once, at most
	// MaxMutedThreads.
	Threads []string
	// Counters are their counters, each once, of the mark's partition,
	// of one of Threads.
	Counters []Counter
}

// validate checks r as the muted reset of partition p (see MutedReset).
func (r MutedReset) validate(p Partition) error {
	bad := func(what string) error {
		return fmt.Errorf("%w: a muted reset of %s: %s", ErrInvalidInput, p.PK(), what)
	}
	if len(r.Threads) == 0 || len(r.Threads) > MaxMutedThreads {
		return bad(fmt.Sprintf("%d threads, 1 to %d", len(r.Threads), MaxMutedThreads))
	}
	for i, t := range r.Threads {
		if t == "" || ValidateThread(t) != nil || i > 0 && r.Threads[i-1] >= t {
			return bad("threads not keys, sorted, each once")
		}
	}
	seen := map[string]bool{}
	for _, c := range r.Counters {
		switch {
		case ValidateCounter(c) != nil || !c.Muted || c.Partition != p:
			return bad("a muted thread's counter that cannot be, or of another partition")
		case !slices.Contains(r.Threads, c.Thread):
			return bad("a counter of a thread it does not name")
		case seen[c.SK()]:
			return bad("a counter twice")
		}
		seen[c.SK()] = true
	}
	return nil
}

// CoveredError reports that a write would leave a direct message of
// thread Thread in user partition Partition unread below the thread's
// read position (Coverable, and the position covers its ID), where it
// would read as read: a PutMessage of one, or a mark that makes one
// unread (an unarchive). It matches ErrStateChanged. The Inbox writes it
// again, read at the position's time: everything below a read position
// reads as read.
type CoveredError struct {
	Partition Partition
	Thread    string
	// Group is the message's group, for a receipt of a group's message
	// ("" for a direct message).
	Group string
	ID    string
}

// Error implements error.
func (e *CoveredError) Error() string {
	if e.Group != "" {
		return fmt.Sprintf("inbox: message %s of thread %q of group %q lies below the read position of %s", e.ID, e.Thread, e.Group, e.Partition.PK())
	}
	return fmt.Sprintf("inbox: message %s of thread %q in %s lies below its read position", e.ID, e.Thread, e.Partition.PK())
}

// Unwrap makes a *CoveredError match ErrStateChanged.
func (e *CoveredError) Unwrap() error { return ErrStateChanged }

// SeenError is the error of a Store.Mark whose fence (Mark.Fence) did not
// hold: the partition's watermark, as its Above is kept for, is Seen. It
// matches ErrStateChanged.
type SeenError struct {
	Partition Partition
	Seen      string
}

// Error describes the fence that failed.
func (e *SeenError) Error() string {
	return fmt.Sprintf("inbox: seen watermark of %s is %q", e.Partition.PK(), e.Seen)
}

// Is reports whether target is ErrStateChanged.
func (e *SeenError) Is(target error) bool { return target == ErrStateChanged }

// EntryRecord returns the record mark mk leaves, as its ledger entry
// records it: the direct message or receipt (of its broadcast's group,
// none for everyone's) at mk.Key, with mk's Entry, category, expiry and
// the marks mk.To (its SnoozedUntil and InteractedAt too, which a ledger
// entry does not keep).
func (mk Mark) EntryRecord() Record {
	rec := Record{Partition: mk.Key.Partition, Receipt: mk.Receipt, Entry: mk.Entry, DeletedAt: mk.To.DeletedAt, Message: Message{
		ID: mk.Key.ID, Category: mk.Category, Thread: mk.Thread, ReadAt: mk.To.ReadAt, ArchivedAt: mk.To.ArchivedAt, ExpiresAt: mk.ExpiresAt,
		SnoozedUntil: mk.To.SnoozedUntil, InteractedAt: mk.To.InteractedAt,
	}}
	if mk.Receipt && !mk.Shared.IsPublic() {
		rec.Message.Audience.Group = mk.Shared.Group
	}
	return rec
}

// ValidateMark checks what mk may ask of Store.Mark, whatever is stored,
// as every Store must before it writes: a mark of a user's partition,
// or a fold of a shared partition's scheduled broadcast (no marks, a
// timed entry); a watermark mark (Seen or Fence, no ID) with nothing
// else; a preferences mark (no ID) with nothing else, valid preferences
// (ValidatePreferences) and To other than From; otherwise a valid ledger entry, marks a record can have
// (DeletedAt only alone, and only on a receipt), no Delete of a receipt,
// a receipt's broadcast in a shared partition of the same inbox, and a
// Timed key of the record's own entry. Anything else is ErrInvalidInput.
func ValidateMark(mk Mark) error {
	p := mk.Key.Partition
	bad := func(what string) error {
		return fmt.Errorf("%w: mark of %q in %s: %s", ErrInvalidInput, mk.Key.ID, p.PK(), what)
	}
	fold := !mk.Receipt && !mk.Delete && mk.From.IsZero() && mk.To.IsZero() && (mk.Timed != "" || !mk.DeliverAt.IsZero()) && mk.Key.ID != ""
	if mk.Preferences != nil {
		rest := mk
		rest.Key.Partition, rest.Now, rest.Preferences = Partition{}, time.Time{}, nil
		rest.Versioned, rest.Version, rest.Muted = false, 0, nil
		newly := mk.Preferences.NewlyMuted()
		switch {
		case len(newly) > 0 && (!mk.Versioned || mk.Muted == nil || !slices.Equal(mk.Muted.Threads, newly)):
			return bad("a preferences mark that mutes threads anew, without their counters as read at a version")
		case len(newly) == 0 && (mk.Versioned || mk.Muted != nil):
			return bad("a preferences mark that mutes no thread anew, with a version or counters")
		case rest != Mark{} || p.IsShared():
			return bad("a preferences mark with other changes, or of a shared partition")
		case ValidatePreferences(mk.Preferences.From) != nil || ValidatePreferences(mk.Preferences.To) != nil:
			return bad("preferences that cannot be")
		case !mk.Preferences.From.Own && !mk.Preferences.From.None() || !mk.Preferences.To.Own && !mk.Preferences.To.None():
			return bad("preferences that mute or opt out of something, and are not the user's own")
		case mk.Preferences.From.Equal(mk.Preferences.To):
			return bad("a preferences mark that changes nothing")
		}
		if mk.Muted != nil {
			return mk.Muted.validate(p)
		}
		return nil
	}
	if c := mk.Cover; c != nil {
		rest := mk
		rest.Key.Partition, rest.Now, rest.Cover, rest.Versioned, rest.Version = Partition{}, time.Time{}, nil, false, 0
		switch {
		case rest != Mark{} || p.IsShared() || !mk.Versioned:
			return bad("a cover mark with other changes, without a version, or of a shared partition")
		case c.Thread == "" || ValidateThread(c.Thread) != nil:
			return bad(fmt.Sprintf("thread %q", c.Thread))
		case c.Group == PublicGroup || c.Group != "" && ValidateGroup(c.Group) != nil:
			return bad(fmt.Sprintf("group %q", c.Group))
		case c.From == c.To:
			return bad("a cover mark that changes nothing")
		}
		for _, pos := range []Position{c.From, c.To} {
			if !pos.IsZero() && !pos.valid() {
				return bad("a position that cannot be")
			}
		}
		return nil
	}
	switch {
	case p.IsShared() && !fold:
		return bad("a shared partition")
	case mk.Seen != "" || mk.Fence || mk.Key.ID == "":
		if mk.Seen == "" && !mk.Fence || mk.Key.ID != "" || mk.Receipt || mk.Delete || mk.Uncovered || mk.Entry != "" || !mk.From.IsZero() || !mk.To.IsZero() || mk.Timed != "" ||
			mk.Fence && mk.Versioned || p.IsShared() {
			return bad("a watermark mark with other changes")
		}
		if mk.Muted != nil {
			if !mk.Versioned {
				return bad("a muted reset without a version")
			}
			return mk.Muted.validate(p)
		}
		return nil
	case mk.Muted != nil:
		return bad("a muted reset off a watermark mark")
	case mk.Entry == "" || ValidateEntry(mk.EntryRecord()) != nil:
		return bad(fmt.Sprintf("ledger entry %q", mk.Entry))
	case ValidateThread(mk.Thread) != nil:
		return bad(fmt.Sprintf("thread %q", mk.Thread))
	case !(mk.From == mk.To && !mk.Delete) && (!validMarks(mk.From, mk.Receipt) || !validMarks(mk.To, mk.Receipt)):
		// A mark that keeps the marks as they stand (an adoption, a
		// recount) keeps whatever marks another program wrote.
		return bad("marks that cannot be")
	case mk.Counted != 0 && !mk.Counted.Valid(mk.Receipt):
		return bad(fmt.Sprintf("counted marks %d", mk.Counted))
	case mk.Delete && mk.Receipt:
		return bad("a receipt deleted with Delete")
	case mk.Uncovered && mk.Receipt:
		return bad("a receipt read uncovered: a position covers direct messages alone")
	case !mk.DeliverAt.IsZero() && mk.Receipt:
		return bad("a due time on a receipt")
	case mk.Receipt && (!mk.Shared.IsShared() || mk.Shared.Scope() != p.Scope()):
		return bad("a receipt of no shared partition of its inbox")
	case mk.Timed != "" && !timedOf(mk.Timed, mk.Entry, mk.ExpiresAt):
		return bad(fmt.Sprintf("timed entry %q", mk.Timed))
	}
	return nil
}

// timedOf reports whether sk is a TimedKey of the record whose ledger
// entry is entry, expiring at expires.
func timedOf(sk, entry string, expires time.Time) bool {
	_, e, _, err := ParseTimedKey(sk, expires)
	return err == nil && e == entry
}

// validMarks reports whether st can be a record's marks: DeletedAt only
// alone, and only on a receipt; SnoozedUntil to the second.
func validMarks(st State, receipt bool) bool {
	return (st.DeletedAt.IsZero() || receipt && st.ReadAt.IsZero() && st.ArchivedAt.IsZero() && st.SnoozedUntil.IsZero() && st.InteractedAt.IsZero()) &&
		st.SnoozedUntil.Equal(st.SnoozedUntil.Truncate(time.Second))
}

// TimedWrites returns what Store.Mark does to the timed entries of mk's
// record. puts are the entries to write (at most one), each the record as
// mk leaves it (EntryRecord) with its time, at its TimedKeyOf: the
// snooze entry, if the record stays snoozed after mk (To.SnoozedUntil
// after mk.Now); or the pending entry, if the record is a scheduled
// direct message not due at mk.Now (mk.DeliverAt after it) that stays.
// The record notes the key of the entry put (Record.Timed), or none. del
// are the sort keys to delete (they may be gone already): the record's
// stored entry (mk.Timed), unless it is written again at the same key,
// which folds an entry whose time has come; and, for a record that notes
// none, the entries an earlier version of the library kept of it under
// SnoozeSK and PendingSK while they still hide it (a snooze not over, a
// message not due), which are not tallied.
func (mk Mark) TimedWrites() (puts []Record, del []string) {
	if mk.Seen != "" || mk.Fence || mk.Key.ID == "" {
		return nil, nil
	}
	stays := !mk.Delete && !(mk.Receipt && mk.To.IsZero())
	want := ""
	switch {
	case stays && mk.Now.Before(mk.To.SnoozedUntil):
		e := mk.EntryRecord()
		puts, want = append(puts, e), TimedKeyOf(e)
	case stays && !mk.Receipt && mk.Now.Before(mk.DeliverAt):
		e := mk.EntryRecord()
		e.Message.SnoozedUntil, e.Message.DeliverAt = time.Time{}, mk.DeliverAt
		puts, want = append(puts, e), TimedKeyOf(e)
	}
	if mk.Timed != "" && mk.Timed != want {
		del = append(del, mk.Timed)
	}
	if mk.Timed == "" {
		if from := mk.From.SnoozedUntil; mk.Now.Before(from) {
			del = append(del, SnoozeSK(from, mk.Entry))
		}
		if mk.Now.Before(mk.DeliverAt) {
			del = append(del, PendingSK(mk.DeliverAt, mk.Entry))
		}
	}
	return puts, del
}

// ValidateDeltas checks each counter of deltas (ValidateCounter) and that
// none is named twice (a DynamoDB transaction cannot touch one item
// twice; a covered thread's counter, kept on its partition's total, once
// per record, Counter.Of), as every Store must before it writes:
// ErrInvalidInput otherwise.
func ValidateDeltas(deltas []Counter) error {
	seen := make(map[Partition]map[string]bool, 1)
	for _, d := range deltas {
		if err := ValidateCounter(d); err != nil {
			return err
		}
		sk := d.SK() + "#" + d.Of
		if seen[d.Partition][sk] {
			return fmt.Errorf("%w: counter %s of %s changed twice", ErrInvalidInput, sk, d.Partition.PK())
		}
		if seen[d.Partition] == nil {
			seen[d.Partition] = map[string]bool{}
		}
		seen[d.Partition][sk] = true
	}
	return nil
}

// StatsQuery selects what Store.Stats reads of one partition.
type StatsQuery struct {
	Partition Partition
	// Now selects the ledger entries that expire at or before it, and the
	// timed entries whose time is at or before it.
	Now time.Time
	// Threads asks for the counters of the partition's threads too (see
	// Counter). They are left out otherwise, so that the stats Counts
	// reads do not grow with the number of threads.
	Threads bool
	// Hour, if set, asks instead for the hour bucket of Hour's hour alone
	// (Stats.Hour), of a shared partition: nothing else is read.
	Hour time.Time
	// Keys, if set, asks instead for the partition's counters with these
	// keys alone (their Category, Group and Thread; Partition ignored),
	// read by key in one round trip, strongly consistent, in
	// Stats.Counters (each once, those missing left out), with the
	// partition's Version and, of a user partition, its Preferences, of a
	// shared one whether it is Bucketed (its total is read with them):
	// nothing else is read. At most
	// MaxStatsKeys distinct keys besides the total (see
	// ValidateStatsQuery).
	//
	// Without Isolated the counters need not be one view: each is read
	// as it stands at some instant of the call, and a write that lands
	// during the call may show in some of them and not in others, nor in
	// Version (the dynamo Store reads them with one BatchGetItem, item by
	// item).
	Keys []Counter
	// Isolated, with Keys, asks for the counters and the Version as one
	// isolated read: as they all stood at one instant, no write landing
	// between the reads of any two of them (the dynamo Store reads them
	// with one TransactGetItems, which AWS bills 2 read units per 4 KB of
	// each item, twice a BatchGetItem's). Without Keys it is
	// ErrInvalidInput.
	Isolated bool
}

// MaxStatsKeys is the most distinct keys, besides the partition's total,
// of one Store.Stats with StatsQuery.Keys: with the total, read for its
// version, they are DynamoDB's 100 items of one BatchGetItem or
// TransactGetItems.
const MaxStatsKeys = 99

// ValidateStatsQuery checks what q may ask of Store.Stats, whatever is
// stored, as every Store must before it reads: Isolated only with Keys;
// each of Keys a counter's key (ValidateCounter, of q.Partition; their
// tallies and Latest are ignored), at most MaxStatsKeys distinct ones
// besides the partition's total (keys named twice count once). Anything
// else is ErrInvalidInput.
func ValidateStatsQuery(q StatsQuery) error {
	if q.Isolated && len(q.Keys) == 0 {
		return fmt.Errorf("%w: an isolated stats read of %s without keys", ErrInvalidInput, q.Partition.PK())
	}
	distinct := make(map[string]bool, len(q.Keys))
	for _, k := range q.Keys {
		k = Counter{Partition: q.Partition, Category: k.Category, Group: k.Group, Thread: k.Thread}
		if err := ValidateCounter(k); err != nil {
			return err
		}
		if sk := k.SK(); sk != CounterSK("", "") {
			distinct[sk] = true
		}
	}
	if len(distinct) > MaxStatsKeys {
		return fmt.Errorf("%w: %d counter keys of %s besides its total, at most %d", ErrInvalidInput, len(distinct), q.Partition.PK(), MaxStatsKeys)
	}
	return nil
}

// Stats is what Store.Stats returns of one partition.
type Stats struct {
	// Counters are the partition's stats records (with StatsQuery.Threads,
	// its threads' counters too, each with its Latest).
	Counters []Counter
	// Version changes whenever any of the partition's counters changes; it
	// fences Repair against concurrent writes.
	Version int64
	// Expired holds the ledger entries, as records (Key, Receipt, Category, Thread,
	// the marks, the group of a receipt, ExpiresAt and Entry set), of the
	// partition's records that expire at or before the time Stats was
	// given, whether or not the record still exists: their removal has not
	// been accounted yet.
	Expired []Record
	// Tombstones are the partition's broadcasts whose removal was accounted
	// before they expired, as records (ID, Category, Thread and the
	// original ExpiresAt set), every one still stored: the caller leaves out those
	// that expired by its time (a tombstone's receipts expire with it).
	// Receipts of them may still stand in users' partitions.
	Tombstones []Record
	// Seen is a user partition's seen watermark: every message ID up to it
	// counts as seen; "" if the user never marked anything seen.
	Seen string
	// Fence is the watermark a user partition's Above is kept for (see
	// Counter.Above): Seen, once a watermark mark or a Repair that reset
	// the counters set it with the Above tallies; "" before. Above counts
	// the records above Seen only if Fence is Seen.
	Fence string
	// Preferences are a user partition's preferences, as the last
	// preferences mark set them (zero if none did), in the same
	// consistent read as the counters and their version. On DynamoDB
	// they are an attribute of the c#* item, read with the counters.
	Preferences Preferences
	// Recent holds, for a user partition, the broadcasts and group
	// messages (their shared partition and ID) of which the user's
	// receipts were created recently: every key Store.Mark recorded in a
	// slot it has not cleared since, in any order. On DynamoDB they are
	// string sets on the c#* item, read with the counters.
	Recent []Key
	// Due are the partition's stored timed entries (see TimedKey) whose
	// time is at or before the time Stats was given: their tallies are in
	// the counters' Snoozed and Pending, and they no longer hide their
	// records (the caller leaves out those whose time is after its own).
	Due []Record
	// Snoozed and Pending are the partition's snooze and pending entries
	// of an earlier version of the library (under SnoozeSK and
	// PendingSK, not tallied in the counters) still stored, as records
	// with their SnoozedUntil or DeliverAt: the caller leaves out those
	// whose time has passed (DynamoDB's TTL deletes them then).
	Snoozed []Record
	Pending []Record
	// Recounted is the partition's recount time, the Recounted of the
	// last Repair that reset or stamped its counters (zero if none did).
	Recounted time.Time
	// Days are a shared partition's day buckets (see DayBucket), and
	// Bucketed whether they count all its records: a partition whose
	// first record a Store of this version wrote, or whose buckets a
	// Repair reset; one written before is not until it is recounted.
	Days     []DayBucket
	Bucketed bool
	// Hour is the hour bucket StatsQuery.Hour asked for (nil if the
	// partition holds none), read alone.
	Hour *HourBucket
}

// RecentSlotWidth is the width of the time slots in which Store.Mark
// records the receipts it creates of recent broadcasts (Stats.Recent). A
// key recorded at time t stays until a receipt is recorded two slots
// later (by that mark's clock): at least RecentSlotWidth when the clocks
// of a fleet agree, and, with no later receipt, for good (an Inbox ignores
// keys of broadcasts older than RecentSlotWidth). An Inbox relies on it
// staying longer than its shared-partition freshness bound (see
// inbox.WithSharedCache) plus the clock skew between the processes of a fleet.
const RecentSlotWidth = 10 * time.Minute

// RecentSlotCount is the number of slots Stats.Recent is kept in.
const RecentSlotCount = 4

// RecentSlots returns the slot (0 to RecentSlotCount-1) in which a receipt
// created at now is recorded, and the slot cleared at the same time: the
// one two slots away, so that a key stays recorded through the slot after
// its own, and clocks of a fleet a slot apart clear nothing the others
// still need.
func RecentSlots(now time.Time) (add, clear int) {
	i := int(now.Unix()/int64(RecentSlotWidth/time.Second)) % RecentSlotCount
	if i < 0 {
		i += RecentSlotCount
	}
	return i, (i + RecentSlotCount/2) % RecentSlotCount
}

// RecordsRecent reports whether Store.Mark records mk in Stats.Recent: mk
// creates a receipt (from no marks to some) of a broadcast younger, by
// its ID's time, than RecentSlotWidth at mk.Now. An older broadcast is in
// every snapshot an Inbox may serve (see inbox.WithSharedCache), so its
// receipts need no record, and a user's Recent stays bounded by the
// broadcasts of the last minutes, however many old ones the user marks.
func (mk Mark) RecordsRecent() bool {
	return mk.Receipt && mk.From.IsZero() && !mk.To.IsZero() && RecentID(mk.Key.ID, mk.Now)
}

// RecentID reports whether message id was made less than RecentSlotWidth
// before now (by the clock of the process that made it).
func RecentID(id string, now time.Time) bool {
	u, err := ulid.ParseStrict(id)
	return err == nil && now.Sub(ulid.Time(u.Time())) < RecentSlotWidth
}

// Removal is the accounting of one removed record for Store.ApplyRemoval.
type Removal struct {
	// Record is the removed record as it last stood.
	Record Record
	// EventID identifies the removal of a record without a ledger entry,
	// e.g. a stream record's event ID; at most 128 bytes.
	EventID string
	// Deltas are the counter changes (negative).
	Deltas []Counter
	// Tombstone asks for a tombstone of the record: a broadcast removed
	// before it expired.
	Tombstone bool
	// Delete asks the store to delete the record too: the Inbox removes it
	// itself, rather than accounting a removal the stream reports.
	Delete bool
	// Now is when the removal is applied.
	Now time.Time
	// At is when the record left the table, to the second, as a stream
	// record's approximate creation time tells (a delete, or TTL's
	// deletion some time after the record expired); zero if not known.
	// It matters only for a record without an Entry: see LeftAt.
	At time.Time
}

// LeftAt returns when r's record left the table, for the recount-time
// check of Store.ApplyRemoval: the earlier of its expiry (when it left
// every view) and At truncated to the second (when it was deleted, if
// before), or the expiry alone when At is zero.
func (r Removal) LeftAt() time.Time {
	left := r.Record.Message.ExpiresAt.Truncate(time.Second)
	if at := r.At.Truncate(time.Second); !at.IsZero() && at.Before(left) {
		left = at
	}
	return left
}

// Repair is what Store.Repair writes to one partition: see inbox.Inbox.Recount.
type Repair struct {
	// Adopt lists records to write new ledger entries for, as they were
	// read: records without one, or whose entry differs from them.
	Adopt []Record
	// AdoptAs holds the Entry each record of Adopt gets, by index.
	AdoptAs []string
	// Reset asks for the counters to be replaced by Counters, if the
	// partition's counter version is still Version (Stats.Version) and
	// its counters still hold the tallies of Before.
	Reset    bool
	Version  int64
	Counters []Counter
	// Before are the partition's counters as read with Version
	// (Stats.Counters, read with Threads): the reset applies only if each still holds these
	// tallies (its own, Counter.Own) and no other counter of the partition has appeared since,
	// for another program following the seeds changes the tallies alone,
	// without the version, and a reset must not overwrite its change (the
	// other tallies, and a muted thread's counters, only the library's
	// writes change, which move the version).
	Before []Counter
	// Recent are the partition's recent receipts as read with Version
	// (Stats.Recent): the reset keeps them, recorded anew at Now (see
	// RecentSlots), so that a Store that keeps them on the counters does
	// not lose them.
	Recent []Key
	Now    time.Time
	// Preferences are, with Reset of a user partition, its preferences
	// as read with Version (Stats.Preferences): the reset keeps them
	// (ValidatePreferences, else ErrInvalidInput), so that a Store that
	// keeps them on the counters does not lose them.
	Preferences Preferences
	// Recounted is the time of the recount the counters stand for, taken
	// after it read the partition: every record that was gone when the
	// recount read the partition is not in them, and every one that stood
	// then has a ledger entry (it was adopted). The reset (or the stamp)
	// records it as the partition's recount time (Stats.Recounted), so
	// that the late removal of a record without a ledger entry that left
	// the table by then is not counted out a second time (see
	// Store.ApplyRemoval).
	Recounted time.Time
	// Stamp asks, instead of Reset, only for Recounted to be recorded, if
	// the version is still Version: the recount found the counters right.
	Stamp bool
	// Seen is, with Reset, the watermark (Stats.Seen as read with Version)
	// that the Above tallies of Counters are for: the reset records it as
	// the partition's Fence.
	Seen string
	// Days and Hours are, with Reset of a shared partition, its time
	// buckets as recounted (see Buckets): the reset replaces its day
	// buckets with Days (the others go) and writes each of Hours (an hour
	// bucket Days counts no record in is never read), with the versions
	// of each hour equal, and records the partition as Bucketed. A
	// category that is no key, or a second outside 0 to 3599, is
	// ErrInvalidInput (see ValidateRepairBuckets).
	Days  []DayBucket
	Hours []HourBucket
	// Drop are sort keys of timed entries of the partition that no record
	// notes (Record.Timed): Repair deletes them, before the reset, which
	// leaves their tallies out.
	Drop []string
}

// HostClaim is the claim of a host system ID for Store.ClaimHostID.
type HostClaim struct {
	Scope        Scope
	HostSystemID string
	// ID is the message ID claimed.
	ID string
	// ExpiresAt is when the claim, and every copy made under it, expires.
	ExpiresAt time.Time
	// Group is the shared partition's group of a broadcast (PublicGroup
	// for everyone's), "" for a message published to users.
	Group string
	// Digest identifies the message's content, so that a reuse of the host
	// system ID with other content can be refused; RetiredDigest once the
	// message was redacted.
	Digest string
	// Now is the time an earlier claim must expire after to stand.
	Now time.Time
	// Retire asks ClaimHostID to retire the standing claim instead of
	// making one.
	Retire bool
	// Peek asks ClaimHostID for the standing claim alone, changing
	// nothing.
	Peek bool
}

// RetiredDigest is the Digest of a claim whose message was redacted: a
// retry with its host system ID is refused (ErrConflict) until it expires.
const RetiredDigest = "retired"

// Clone returns r with nothing shared with it: the audience's UIDs and the
// body (maps and slices, recursively) are copied.
func (r Record) Clone() Record {
	r.Message.Audience.UIDs = slices.Clone(r.Message.Audience.UIDs)
	r.Message.Senders = slices.Clone(r.Message.Senders)
	r.Message.Members = slices.Clone(r.Message.Members)
	r.Message.Body = cloneBody(r.Message.Body)
	return r
}

// cloneBody copies a JSON-like value: maps and slices of any, recursively.
// Other values (strings, numbers, booleans, nil) are immutable or copied
// by assignment.
func cloneBody(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = cloneBody(e)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cloneBody(e)
		}
		return out
	}
	return v
}

// Namespacer is implemented by a Store that names the data it holds (the
// dynamo Store: its table), so that the snapshots of stores of several
// tables that share one SharedBackend are kept apart. A Store that does not
// implement it shares the empty namespace.
type Namespacer interface {
	// Namespace returns a name unique to the data the Store holds.
	Namespace() string
}

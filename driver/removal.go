package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// RemovalMarkerTTL is how long a Store remembers an applied removal of a
// record without a ledger entry. Stream records live 24 hours, so no
// redelivery comes later than that.
const RemovalMarkerTTL = 48 * time.Hour

// RemovalFor returns the accounting of rec's removal that inbox.Inbox.StreamHandler
// applies when the stream reports it at now under eventID: the counter
// changes of RemovalDeltasOf, and a tombstone if rec is a broadcast that had
// not expired. A Store that removes records by itself, like the in-memory
// one, applies exactly this.
func RemovalFor(rec Record, eventID string, now time.Time) Removal {
	return Removal{
		Record:    rec,
		EventID:   removalID(eventID),
		Deltas:    RemovalDeltasOf(rec),
		Tombstone: LeavesTombstone(rec, now),
		Now:       now,
	}
}

// LeavesTombstone reports whether the removal of rec at now must leave a
// tombstone: rec is a broadcast (to everyone or a group) that had not
// expired, whose readers' receipts still stand.
func LeavesTombstone(rec Record, now time.Time) bool {
	return rec.Partition.IsShared() && !rec.Receipt && now.Before(rec.Message.ExpiresAt)
}

// removalID returns the event ID, or its SHA-256 if it is too long or
// unprintable to be a key.
func removalID(eventID string) string {
	if len(eventID) <= 128 && checkPrintable("event id", eventID) == nil {
		return eventID
	}
	sum := sha256.Sum256([]byte(eventID))
	return hex.EncodeToString(sum[:])
}

// RemovalDeltas returns the counter changes that account for rec's removal:
// the negation of what it adds (published -1 in its partition if it is a
// message or broadcast; read, archived, archivedread and hidden -1 in the
// user's partition for the marks it carries, in the group's counters too
// for a receipt of a group's message), for a record whose counters count
// other marks than it carries (another program edited it) as they count it
// (see EditDeltas). Stores that remove records themselves, like the
// in-memory one, apply exactly these.
func RemovalDeltas(rec Record) []Counter {
	out := RecordCounters(rec)
	for i := range out {
		out[i] = out[i].Negated()
	}
	if rec.edited() {
		out = MergeCounters(append(out, EditDeltas(rec)...))
	}
	return withHint(out, rec, State{})
}

// EditDeltas returns, for rec, a record whose counters count other marks
// than it carries (a record whose counted marks another program changed,
// Record.Edited; or another program's deleted receipt it also marked
// read, see ForeignCounted), what its writer did not count of the
// difference: the counters hold what they count of it plus what that
// program counted, which is what the seeds count (read +1 or -1, in the
// user's c#* and c#<category>, as the record's read mark changed); these
// deltas bring them to what rec counts as it stands (the rest: archived
// and archivedread, hidden, a group receipt's group counters, a thread's
// counter; and, for a deleted receipt, which counts as hidden only, the
// read that program counted taken back). Nil for any other record.
func EditDeltas(rec Record) []Counter {
	if !rec.edited() {
		return nil
	}
	was := rec.WithState(rec.accounted().state())
	read := func(r Record) int64 {
		if r.State().ReadAt.IsZero() {
			return 0
		}
		return 1
	}
	out := RecordCounters(rec)
	for _, c := range RecordCounters(was) {
		out = append(out, c.Negated())
	}
	for _, c := range tallyDeltas(rec.Partition, rec.Message.Category, "", Counter{Read: read(rec) - read(was)}) {
		out = append(out, c.Negated()) // what the seeds' writer counted
	}
	var nonzero []Counter
	for _, c := range MergeCounters(out) {
		if c.Latest, c.Top, c.TopEntry = "", (State{}), ""; !c.IsZero() {
			nonzero = append(nonzero, c)
		}
	}
	return withHint(nonzero, rec, rec.State())
}

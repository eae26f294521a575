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
// changes of RemovalDeltas, and a tombstone if rec is a broadcast that had
// not expired. A Store that removes records by itself, like the in-memory
// one, applies exactly this.
func RemovalFor(rec Record, eventID string, now time.Time) Removal {
	return Removal{
		Record:    rec,
		EventID:   removalID(eventID),
		Deltas:    RemovalDeltas(rec),
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

// RemovalDeltas returns the counter changes that account for rec's
// removal: the negation of what it adds (published -1 in its partition if
// it is a message or broadcast; read, archived, archivedread and hidden -1
// in the user's partition for the marks it carries, in the group's
// counters too for a receipt of a group's message), for a record another
// program edited (Record.Edited) as its counters count it (see
// EditDeltas). Stores that remove records themselves, like the in-memory
// one, apply exactly these.
func RemovalDeltas(rec Record) []Counter {
	out := RecordCounters(rec)
	for i := range out {
		out[i] = out[i].Negated()
	}
	if rec.Edited() {
		out = MergeCounters(append(out, EditDeltas(rec)...))
	}
	return out
}

// EditDeltas returns, for rec, a record whose counted marks another
// program changed (Record.Edited), what that program did not count of
// its change: the counters hold what rec.Counted counts, less what that
// program counted, which is what the seeds count (read, in the user's c#*
// and c#<category>); the rest (archived and archivedread, hidden, a group
// receipt's group counters, a thread's counter) follows the record's
// marks only when these deltas are added. Nil for any other record.
func EditDeltas(rec Record) []Counter {
	if !rec.Edited() {
		return nil
	}
	was := rec.withState(rec.Counted.state())
	var out []Counter
	for _, c := range MergeCounters(append(RecordCounters(rec), RemovalDeltas(was)...)) {
		if c.Group == "" && c.Thread == "" {
			c.Read = 0 // the seeds count it
		}
		if c.Latest = ""; !c.IsZero() {
			out = append(out, c)
		}
	}
	return out
}

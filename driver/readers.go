package driver

import (
	"fmt"
	"strings"
	"time"
)

// ReaderPrefix begins the sort key of a reader item: r#<thread>#<id>#<user>
// (ReaderSK), in the shared partition of the message read.
const ReaderPrefix = "r#"

// Reader is a reader item: a user's read of a shared partition's message
// in a thread, kept beside the message by Store.Mark in step with the
// read mark of the user's receipt (see Mark.ReaderChange), so that one
// range of a thread's sort keys (Query.Readers) tells who read each of a
// page of its messages. It expires with the message.
type Reader struct {
	// Partition is the message's shared partition.
	Partition Partition
	// Thread and ID are the message's.
	Thread string
	ID     string
	// User is the reader, whose receipt of the message is read.
	User string
	// ReadAt is the receipt's ReadAt.
	ReadAt time.Time
	// ExpiresAt is the message's expiry: the item's TTL.
	ExpiresAt time.Time
	// Entry is the ledger entry of the receipt the item stands for, so
	// that the late removal of an earlier receipt at the same key leaves
	// a later one's item alone (see Store.ApplyRemoval).
	Entry string
	// Position is, on a member's position item (ID "", no ExpiresAt nor
	// Entry: see ReaderPositionSK), her read position in the thread (see
	// Counter.Covered), which a cover mark of the thread writes there in
	// the same atomic unit: every message of the thread below its Bound
	// is read by her at Position.ReadAt, unless her receipt of it says
	// otherwise. Zero elsewhere.
	Position Position
}

// ReaderPositionSK returns the sort key of user's position item in thread
// of a group's partition: r#<thread>#~#<user>, above the reader items of
// every message of the thread ('~' sorts above every ID's characters).
func ReaderPositionSK(thread, user string) string {
	return ReaderPrefix + thread + "#~#" + user
}

// ReaderSK returns the sort key of user's reader item of message id in
// thread: r#<thread>#<id>#<user>. A thread's items sort together by
// message ID, then by user.
func ReaderSK(thread, id, user string) string {
	return ReaderPrefix + thread + "#" + id + "#" + user
}

// ParseReaderSK parses a sort key made by ReaderSK; anything else is
// ErrInvalidKey.
func ParseReaderSK(sk string) (thread, id, user string, err error) {
	parts := strings.Split(strings.TrimPrefix(sk, ReaderPrefix), "#")
	if !strings.HasPrefix(sk, ReaderPrefix) || len(parts) != 3 || parts[0] == "" || ValidateThread(parts[0]) != nil ||
		ValidateMessageID(parts[1]) != nil || ValidateUserID(parts[2]) != nil {
		return "", "", "", fmt.Errorf("%w: reader key %q", ErrInvalidKey, sk)
	}
	return parts[0], parts[1], parts[2], nil
}

// ReaderChange returns what Store.Mark does, with mk, to the reader item
// of mk's receipt: ok is false if it leaves it alone; else it writes r,
// or, if r.ReadAt is zero, deletes the item at r's key. Only a receipt
// mark of a thread's message (Receipt and Thread set) touches one. The
// item follows the read the receipt's ledger entry counts (Counted, or,
// if that is unknown, From's marks) as the counters do: read, and not
// deleted (a deleted receipt is hidden, whatever readat another program
// set on it). A mark that makes the receipt read so writes it, with
// To.ReadAt; one that makes it unread (a deletion for the user, the
// receipt's removal) deletes it; and a mark that adopts the receipt or
// keeps its marks (From equal to To: a recount after another program
// changed them) writes it as To stands, read or not. A mark that leaves
// the read as its entry counts it (an archive, a snooze) leaves the item
// alone.
func (mk Mark) ReaderChange() (r Reader, ok bool) {
	if !mk.Receipt || mk.Thread == "" || mk.Key.ID == "" {
		return Reader{}, false
	}
	was := mk.From
	if mk.Counted != 0 {
		was = mk.Counted.state()
	}
	wasRead, isRead := readerReads(was), readerReads(mk.To)
	if wasRead == isRead && !mk.Adopts && mk.From != mk.To {
		return Reader{}, false
	}
	r = Reader{Partition: mk.Shared, Thread: mk.Thread, ID: mk.Key.ID, User: mk.Key.Partition.User, ExpiresAt: mk.ExpiresAt, Entry: mk.Entry}
	if isRead {
		r.ReadAt = mk.To.ReadAt
	}
	return r, true
}

// readerReads reports whether a receipt with marks s has a reader item:
// read, and not deleted.
func readerReads(s State) bool { return !s.ReadAt.IsZero() && s.DeletedAt.IsZero() }

// ReaderRemoval returns the reader item that Store.ApplyRemoval deletes
// with r, if r applies: ok is true for a receipt with a ledger entry, read,
// of a thread's message, that had not expired by r.Now (an expired one's
// item expires with it). The item is deleted only if it stands for the
// receipt's entry (Reader.Entry).
func (r Removal) ReaderRemoval() (rd Reader, ok bool) {
	rec := r.Record
	m := rec.Message
	if !rec.Receipt || !rec.Ledgered() || rec.Partition.IsShared() || m.Thread == "" || m.ReadAt.IsZero() || !r.Now.Before(m.ExpiresAt) {
		return Reader{}, false
	}
	shared := rec.Partition.Scope().Public()
	if g := m.Audience.Group; g != "" {
		shared = rec.Partition.Scope().Group(g)
	}
	return Reader{Partition: shared, Thread: m.Thread, ID: m.ID, User: rec.Partition.User, ExpiresAt: m.ExpiresAt, Entry: rec.Entry}, true
}

// validateReadersQuery checks a Query with Readers: a shared partition,
// a thread, bounds that are message IDs (After may be a position a
// previous page returned as Next: <id>#<user>), After below Before, and
// no other filter but Now.
func validateReadersQuery(q Query) error {
	bad := func(what string) error {
		return fmt.Errorf("%w: readers query of %s: %s", ErrInvalidInput, q.Partition.PK(), what)
	}
	if err := q.Partition.Validate(); err != nil {
		return err
	}
	switch {
	case !q.Partition.IsShared():
		return bad("a user's partition: reader items are in shared ones")
	case q.Category != "" || q.UnreadOnly || q.Archived != AnyArchived || q.Unseen || q.Scheduled || q.Snoozed || q.Threads || q.ActivityOnly:
		return bad("with other filters")
	case q.Thread == "":
		return bad("no thread")
	case q.Positions && (q.After != "" || q.Before != "" || !q.Now.IsZero()):
		return bad("positions with bounds")
	}
	if err := ValidateThread(q.Thread); err != nil {
		return err
	}
	if q.Before != "" {
		if err := ValidateMessageID(q.Before); err != nil {
			return err
		}
	}
	if q.After != "" {
		id, user, isPos := strings.Cut(q.After, "#")
		if err := ValidateMessageID(id); err != nil {
			return err
		}
		if isPos {
			if err := ValidateUserID(user); err != nil {
				return err
			}
		}
		if q.Before != "" && id >= q.Before {
			return bad(fmt.Sprintf("After %q is not below Before %q", q.After, q.Before))
		}
	}
	return nil
}

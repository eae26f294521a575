package memstore

import (
	"context"
	"strconv"
	"time"

	"github.com/stak/inbox/driver"
)

// WithChanges makes the Store feed its changes, as a DynamoDB table's
// stream with new and old images does: every record it creates, changes
// or removes (by expiry, a delete, a mark or a redaction) and every seen
// watermark it writes becomes a driver.Change, held until DeliverChanges
// hands it on. Pass inbox.Inbox.HandleChange to DeliverChanges and the
// Inbox's EventHandler gets the events the table's stream would give it
// (WithEvents), and another program's records (PutForeign) are adopted
// as the stream handler adopts them, so a test or a demo sees what
// production shows without DynamoDB. A Store without it keeps no changes.
func WithChanges() Option { return func(s *Store) { s.feed = true } }

// DeliverChanges hands every change the Store holds (see WithChanges) to
// h, in the order they were made, and returns how many h took. A change
// is dropped once h returns nil for it; at h's first error DeliverChanges
// stops and returns it, and that change comes first on the next call, as
// a stream's failed record does. h may call the Store. Calls are
// serialized; without WithChanges there is nothing to deliver.
func (s *Store) DeliverChanges(ctx context.Context, h func(context.Context, driver.Change) error) (int, error) {
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	held := s.changes
	s.mu.Unlock()
	n := 0
	var err error
	for _, c := range held {
		if err = h(ctx, c); err != nil {
			break
		}
		n++
	}
	s.mu.Lock()
	s.changes = s.changes[n:]
	s.mu.Unlock()
	return n, err
}

// noteChange holds a change of the record at a key, from old to new (nil
// for none; copied), if the Store feeds changes, and returns its ID: a
// fresh one, also the ID of the removal a ChangeRemove makes (made even
// without WithChanges). s.mu must be held.
func (s *Store) noteChange(op driver.ChangeOp, old, new *driver.Record, byTTL bool) string {
	if !s.feed && op != driver.ChangeRemove {
		return ""
	}
	id := "memstore-" + strconv.FormatUint(s.nextSeq(), 10)
	if !s.feed {
		return id
	}
	c := driver.Change{ID: id, Op: op, At: s.changeTime(), ByTTL: byTTL}
	if old != nil {
		r := old.Clone()
		c.Old = &r
	}
	if new != nil {
		r := new.Clone()
		c.New = &r
	}
	s.changes = append(s.changes, c)
	return id
}

// noteSeen holds the change of p's seen watermark to w, if the Store feeds
// changes. s.mu must be held.
func (s *Store) noteSeen(p driver.Partition, w string) {
	if !s.feed {
		return
	}
	op := driver.ChangeModify
	if _, ok := s.seen[p]; !ok {
		op = driver.ChangeInsert
	}
	s.changes = append(s.changes, driver.Change{ID: "memstore-" + strconv.FormatUint(s.nextSeq(), 10), Op: op, At: s.changeTime(), Seen: w, SeenOf: p})
}

// notePreferences holds the change of p's preferences from old to to, if
// the Store feeds changes: an insert when p had none before, as the
// dynamo Store's first write of its preferences item is. s.mu must be
// held.
func (s *Store) notePreferences(p driver.Partition, old, to driver.Preferences) {
	if !s.feed {
		return
	}
	op := driver.ChangeModify
	if !s.prefsSet[p] {
		op = driver.ChangeInsert
	}
	s.prefsSet[p] = true
	to = to.Clone()
	s.changes = append(s.changes, driver.Change{ID: "memstore-" + strconv.FormatUint(s.nextSeq(), 10), Op: op, At: s.changeTime(), Preferences: &to, PreferencesOf: p})
}

// notePosition holds cover change c of p (its position moved to c.To;
// zero: dropped), if the Store feeds changes. s.mu must be held.
func (s *Store) notePosition(p driver.Partition, c driver.CoverChange, op driver.ChangeOp) {
	if !s.feed {
		return
	}
	pos := c.To
	s.changes = append(s.changes, driver.Change{ID: "memstore-" + strconv.FormatUint(s.nextSeq(), 10), Op: op, At: s.changeTime(), Position: &pos, PositionOf: p, PositionThread: c.Thread, PositionGroup: c.Group})
}

// changeTime is the time a change is made, to the second, as a stream
// records it.
func (s *Store) changeTime() time.Time { return s.clock().UTC().Truncate(time.Second) }

package memstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/stak/inbox/driver"
)

// PutForeign writes rec as another program following the seeds writes an
// item: a message, broadcast or receipt with no ledger entry (rec.Entry
// must be ""), and the counter changes deltas that program makes with it
// (the seeds' published and read). A record already at rec's key is
// ErrExists. rec.Counted, whatever it holds, is not kept: a record with no
// ledger entry has no counted marks (see driver.Record), as package dynamo
// ignores the counted attribute of such an item. Its times are kept as
// package dynamo reads them back from epoch seconds (driver.StoredTime):
// to the second, and a mark or header time outside the years 1970 to 9999
// holds none (the mark is unset); an expiry is clamped as
// driver.StoredExpiry says. It lets a test show what
// the library makes of other programs' items: List shows them, Counts
// counts them as their counters say, and a mark, Recount or the stream
// handler adopts them. Its expiry and removal are accounted like any
// other record's.
func (s *Store) PutForeign(ctx context.Context, rec driver.Record, deltas []driver.Counter) error {
	if m := rec.Message; rec.Ledgered() || m.Thread != "" || !m.SnoozedUntil.IsZero() || !m.DeliverAt.IsZero() {
		return fmt.Errorf("%w: another program's record %s with a ledger entry, a thread, a snooze or a due time", driver.ErrInvalidInput, rec.Message.ID)
	}
	if m := rec.Message; rec.Partition.IsShared() && !(m.ReadAt.IsZero() && m.ArchivedAt.IsZero() && m.InteractedAt.IsZero() && rec.DeletedAt.IsZero()) || !rec.Receipt && !rec.DeletedAt.IsZero() {
		// What package dynamo would not read as marks.
		return fmt.Errorf("%w: another program's record %s with marks on a broadcast, or deleted as a message", driver.ErrInvalidInput, rec.Message.ID)
	}
	if err := driver.ValidateDeltas(deltas); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	k := rec.Key()
	if _, ok := s.records[k]; ok {
		return fmt.Errorf("%w: record %s in %s", driver.ErrExists, k.ID, k.Partition.PK())
	}
	sr := &storedRecord{rec: rec.Clone(), seq: s.nextSeq()}
	sr.rec.Counted = 0 // another program's counted means nothing: package dynamo reads none
	m := &sr.rec.Message
	for _, t := range []*time.Time{&m.ReadAt, &m.ArchivedAt, &m.InteractedAt, &sr.rec.DeletedAt, &m.ReceivedAt, &m.DeliveredAt} {
		*t = driver.StoredTime(*t)
	}
	m.ExpiresAt = driver.StoredExpiry(m.ExpiresAt)
	s.records[k] = sr
	s.ids.insert(k.Partition, k.ID)
	s.expire(expiry{at: m.ExpiresAt, kind: expireRecord, seq: sr.seq, key: k})
	s.noteChange(driver.ChangeInsert, nil, &sr.rec, false)
	s.addCounts(deltas, false) // another program moves no version
	return nil
}

// ReadForeign marks the record at k read at, as another program following
// the seeds marks a message or receipt read: it sets the record's ReadAt
// if it has none (at as package dynamo reads it back, driver.StoredTime:
// an at outside the years 1970 to 9999 leaves it unread), and makes that
// program's counter changes deltas (the seeds' read), moving no version.
// It returns the stream's MODIFY record of the change, for a test to hand
// to the stream handler (inbox.Inbox.HandleChange) when the stream would;
// ok is false, and nothing is written, if there is no record at k or it
// is read already.
// The record keeps its ledger entry, if it has one, which then counts
// other marks than it carries (driver.Record.Edited) until the stream
// handler, a mark or a Recount rewrites it.
func (s *Store) ReadForeign(ctx context.Context, k driver.Key, at time.Time, deltas []driver.Counter) (c driver.Change, ok bool, err error) {
	if err := driver.ValidateDeltas(deltas); err != nil {
		return driver.Change{}, false, err
	}
	if err := s.begin(ctx); err != nil {
		return driver.Change{}, false, err
	}
	defer s.mu.Unlock()
	sr, found := s.records[k]
	if !found || k.Partition.IsShared() || sr.rec.Message.IsRead() {
		return driver.Change{}, false, nil
	}
	old := sr.rec.Clone()
	sr.rec.Message.ReadAt = driver.StoredTime(at) // none outside the years 1970 to 9999, as package dynamo reads it
	s.indexed(&old, &sr.rec)
	id := s.noteChange(driver.ChangeModify, &old, &sr.rec, false)
	if id == "" {
		id = "memstore-" + strconv.FormatUint(s.nextSeq(), 10)
	}
	s.addCounts(deltas, false) // another program moves no version
	now := sr.rec.Clone()
	return driver.Change{ID: id, Op: driver.ChangeModify, At: s.changeTime(), Old: &old, New: &now}, true, nil
}

// DeliverSome accounts the removals the Store holds (see WithStreamLag)
// for which deliver returns true, by their position among those held, as
// a stream whose handler fails some records and leaves others for a later
// batch does: the rest stay held. A removal is never accounted before an
// earlier held removal of the same key (DynamoDB Streams keep each item's
// records in order), so one held back holds back the later ones of its
// key. It returns how many it applied.
func (s *Store) DeliverSome(ctx context.Context, deliver func(i int) bool) (int, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	var now, later []event
	blocked := map[driver.Key]bool{}
	for i, ev := range s.pending {
		k := ev.rec.Key()
		if blocked[k] || !deliver(i) {
			blocked[k] = true
			later = append(later, ev)
			continue
		}
		now = append(now, ev)
	}
	s.pending = later
	s.delivered = append(s.delivered, now...)
	return s.account(ctx, now, true)
}

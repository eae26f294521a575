package memstore

import (
	"context"
	"fmt"

	"github.com/stak/inbox/driver"
)

// PutForeign writes rec as another program following the seeds writes an
// item: a message, broadcast or receipt with no ledger entry (rec.Entry
// must be ""), and the counter changes deltas that program makes with it
// (the seeds' published and read). A record already at rec's key is
// ErrExists. It lets a test show what the library makes of other
// programs' items: List shows them, Counts counts them as their counters
// say, and a mark, Recount or the stream handler adopts them. Its expiry
// and removal are accounted like any other record's.
func (s *Store) PutForeign(ctx context.Context, rec driver.Record, deltas []driver.Counter) error {
	if m := rec.Message; rec.Ledgered() || m.Thread != "" || !m.SnoozedUntil.IsZero() || !m.DeliverAt.IsZero() {
		return fmt.Errorf("%w: another program's record %s with a ledger entry, a thread, a snooze or a due time", driver.ErrInvalidInput, rec.Message.ID)
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
	s.records[k] = sr
	insertSorted(s.ids, k.Partition, k.ID)
	s.expire(expiry{at: rec.Message.ExpiresAt, kind: expireRecord, seq: sr.seq, key: k})
	s.noteChange(driver.ChangeInsert, nil, &sr.rec, false)
	s.addCounts(deltas, false) // another program moves no version
	return nil
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

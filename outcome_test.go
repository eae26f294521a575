package inbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// lostMarks is a Store whose Mark number lose (counting from 1) is
// applied, and then answered as a cancelled context would answer a
// write in flight (the response lost); with refuse set it is refused
// instead, unapplied (ErrThrottled).
type lostMarks struct {
	driver.Store
	lose, n int
	refuse  bool
}

func (s *lostMarks) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	if s.n++; s.n != s.lose {
		return s.Store.Mark(ctx, marks, deltas)
	}
	if s.refuse {
		return driver.ErrThrottled
	}
	if err := s.Store.Mark(ctx, marks, deltas); err != nil {
		return err
	}
	return context.Canceled
}

// TestMarkOutcomeUnknown: a mark whose write may have been applied when
// the call failed (ctx cancelled while it was in flight) reports
// ErrOutcomeUnknown, as ErrOutcomeUnknown's doc says of any write: a bulk
// action returns how many it changed before, which the lost batch may
// exceed, and a single change returns false though it may have been
// made. A write the Store refused, unapplied, does not.
func TestMarkOutcomeUnknown(t *testing.T) {
	ctx := context.Background()
	ann := inbox.User{Scope: scope, ID: "ann"}
	setup := func(lose int, refuse bool) (*inbox.Inbox, []string) {
		clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		st := &lostMarks{Store: memstore.New(memstore.WithClock(clock.Now)), lose: lose, refuse: refuse}
		ib := inbox.New(st, inbox.WithClock(clock.Now))
		var ids []string
		for range 2*driver.MaxMarkBatch + 5 {
			res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "x"})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, res.Message.ID)
			clock.Advance(time.Second)
		}
		return ib, ids
	}
	bulk := map[string]func(*inbox.Inbox) (int, error){
		"MarkAllRead": func(ib *inbox.Inbox) (int, error) { return ib.MarkAllRead(ctx, ann, inbox.ListOptions{}) },
		"ArchiveAll":  func(ib *inbox.Inbox) (int, error) { return ib.ArchiveAll(ctx, ann, inbox.ListOptions{}) },
		"DeleteAll":   func(ib *inbox.Inbox) (int, error) { return ib.DeleteAll(ctx, ann, inbox.ListOptions{}) },
	}
	for name, call := range bulk {
		ib, _ := setup(2, false)
		n, err := call(ib)
		if n != driver.MaxMarkBatch || !errors.Is(err, inbox.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
			t.Errorf("%s with its second batch's outcome lost = %d, %v; want %d, ErrOutcomeUnknown and context.Canceled", name, n, err, driver.MaxMarkBatch)
		}
		ib, _ = setup(2, true)
		if n, err := call(ib); n != driver.MaxMarkBatch || !errors.Is(err, inbox.ErrThrottled) || errors.Is(err, inbox.ErrOutcomeUnknown) {
			t.Errorf("%s with its second batch refused = %d, %v; want %d, ErrThrottled and no ErrOutcomeUnknown", name, n, err, driver.MaxMarkBatch)
		}
	}
	single := map[string]func(*inbox.Inbox, string) (bool, error){
		"MarkRead":       func(ib *inbox.Inbox, id string) (bool, error) { return ib.MarkRead(ctx, ann, id) },
		"Archive":        func(ib *inbox.Inbox, id string) (bool, error) { return ib.Archive(ctx, ann, id) },
		"Delete":         func(ib *inbox.Inbox, id string) (bool, error) { return ib.Delete(ctx, ann, id) },
		"MarkInteracted": func(ib *inbox.Inbox, id string) (bool, error) { return ib.MarkInteracted(ctx, ann, id) },
	}
	single["MarkSeen"] = func(ib *inbox.Inbox, _ string) (bool, error) { return ib.MarkSeen(ctx, ann) }
	single["SetPreferences"] = func(ib *inbox.Inbox, _ string) (bool, error) {
		return ib.SetPreferences(ctx, ann, inbox.Preferences{MutedCategories: []string{"promo"}})
	}
	for name, call := range single {
		ib, ids := setup(1, false)
		if ok, err := call(ib, ids[0]); ok || !errors.Is(err, inbox.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
			t.Errorf("%s with its outcome lost = %v, %v; want false, ErrOutcomeUnknown and context.Canceled", name, ok, err)
		}
		ib, ids = setup(1, true)
		if ok, err := call(ib, ids[0]); ok || !errors.Is(err, inbox.ErrThrottled) || errors.Is(err, inbox.ErrOutcomeUnknown) {
			t.Errorf("%s refused = %v, %v; want false, ErrThrottled and no ErrOutcomeUnknown", name, ok, err)
		}
	}
}

// lostRemoval is a Store whose ApplyRemoval is applied, then answered as
// a cancelled context would answer a write in flight.
type lostRemoval struct{ driver.Store }

func (s lostRemoval) ApplyRemoval(ctx context.Context, r driver.Removal) (bool, error) {
	if _, err := s.Store.ApplyRemoval(ctx, r); err != nil {
		return false, err
	}
	return false, context.Canceled
}

// TestRedactOutcomeUnknown: Redact's removal of a broadcast whose
// outcome is lost reports ErrOutcomeUnknown, and a second Redact finds
// it gone.
func TestRedactOutcomeUnknown(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	ib := inbox.New(lostRemoval{mem}, inbox.WithClock(clock.Now))
	msg, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	r := inbox.Redaction{ID: msg.ID, Group: inbox.PublicGroup}
	if n, err := ib.Redact(ctx, scope, r); n != 0 || !errors.Is(err, inbox.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Errorf("Redact with its outcome lost = %d, %v; want 0, ErrOutcomeUnknown and context.Canceled", n, err)
	}
	if n, err := inbox.New(mem, inbox.WithClock(clock.Now)).Redact(ctx, scope, r); n != 0 || err != nil {
		t.Errorf("Redact again = %d, %v; want 0, nil: the first removed it", n, err)
	}
}

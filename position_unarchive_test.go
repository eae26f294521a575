package inbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// afterCoveredMark runs f once, right after the first Mark the Store
// refuses with a *driver.CoveredError (a write that would leave a message
// unread below a read position): between the refused write and the
// caller's next step.
type afterCoveredMark struct {
	inbox.Store
	once  sync.Once
	fired bool
	f     func()
}

func (s *afterCoveredMark) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	err := s.Store.Mark(ctx, marks, deltas)
	if ce := (*driver.CoveredError)(nil); errors.As(err, &ce) {
		s.once.Do(func() { s.f(); s.fired = true })
	}
	return err
}

// TestRVUnarchiveWhileWrittenOut: Unarchive of a message archived unread
// below a read position makes it read, at the position's time (everything
// below a chat's read position reads as read); the stream handler writing
// the position out meanwhile must not make the Unarchive fail.
func TestRVUnarchiveWhileWrittenOut(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem, other, ann, ids := chatOfThree(t, clock)
	if ok, err := other.Archive(ctx, ann, ids[0]); err != nil || !ok {
		t.Fatalf("Archive = %v, %v", ok, err)
	}
	if _, err := mem.DeliverChanges(ctx, other.HandleChange); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	if n, err := other.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n != 2 {
		t.Fatalf("MarkAllRead = %d, %v; want 2", n, err)
	}
	st := &afterCoveredMark{Store: mem, f: func() {
		if _, err := mem.DeliverChanges(ctx, other.HandleChange); err != nil {
			t.Error(err)
		}
	}}
	ib := inbox.New(st, inbox.WithClock(clock))
	if ok, err := ib.Unarchive(ctx, ann, ids[0]); err != nil || !ok {
		t.Fatalf("Unarchive below a position the stream handler writes out meanwhile = %v, %v; want true, nil", ok, err)
	}
	if !st.fired {
		t.Fatal("the stream handler did not run between the refused unarchive and its retry: the test shows nothing")
	}
	m, err := ib.Get(ctx, ann, ids[0])
	if err != nil || !m.IsRead() || m.IsArchived() {
		t.Errorf("Get of the unarchived message = read %v, archived %v, %v; want read, not archived", m.IsRead(), m.IsArchived(), err)
	}
}

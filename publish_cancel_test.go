package inbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// failingPeek fails ClaimHostID's peeks with err.
type failingPeek struct {
	inbox.Store
	err error
}

func (s failingPeek) ClaimHostID(ctx context.Context, c driver.HostClaim) (driver.HostClaim, error) {
	if c.Peek {
		return driver.HostClaim{}, s.err
	}
	return s.Store.ClaimHostID(ctx, c)
}

// TestScheduledRetryStoreFailure: the retry of a scheduled publish that
// is due by now reads its claim; a store that fails that read (a
// cancelled or expired ctx, throttling) is that failure, not bad input,
// so that a caller that retries on such errors does not give up the
// message as refused.
func TestScheduledRetryStoreFailure(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := memstore.New(memstore.WithClock(clock))
	d := inbox.Draft{Title: "later", DeliverAt: now.Add(time.Hour), HostSystemID: "sched-1"}
	if _, err := inbox.New(mem, inbox.WithClock(clock)).Publish(ctx, scope, []string{"ann"}, d); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour) // the retry comes once it is due
	if _, err := inbox.New(mem, inbox.WithClock(clock)).Publish(ctx, scope, []string{"ann"}, d); err != nil {
		t.Fatalf("retry: %v", err)
	}
	for _, fail := range []error{context.DeadlineExceeded, context.Canceled, driver.ErrThrottled} {
		ib := inbox.New(failingPeek{Store: mem, err: fail}, inbox.WithClock(clock))
		_, err := ib.Publish(ctx, scope, []string{"ann"}, d)
		if !errors.Is(err, fail) || errors.Is(err, inbox.ErrInvalidInput) {
			t.Errorf("retry with the claim's read failing with %v: %v, want that error, not ErrInvalidInput", fail, err)
		}
		_, err = ib.Broadcast(ctx, scope, inbox.Draft{Title: "b", DeliverAt: now.Add(-time.Minute), HostSystemID: "sched-b"})
		if !errors.Is(err, fail) || errors.Is(err, inbox.ErrInvalidInput) {
			t.Errorf("broadcast with the claim's read failing with %v: %v, want that error, not ErrInvalidInput", fail, err)
		}
	}
}

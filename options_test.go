package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// TestNilOptionsKeepDefaults: WithClock(nil) and WithEntropy(nil) leave the
// defaults, rather than panicking on first use.
func TestNilOptionsKeepDefaults(t *testing.T) {
	ib := inbox.New(memstore.New(), inbox.WithClock(nil), inbox.WithEntropy(nil))
	res, err := ib.Publish(context.Background(), scope, []string{"ann"}, inbox.Draft{Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(res.Message.DeliveredAt); d < 0 || d > time.Minute {
		t.Errorf("delivered at %v, not by the real clock", res.Message.DeliveredAt)
	}
}

// TestEmptyPublishError: an empty PublishError says so, rather than
// panicking.
func TestEmptyPublishError(t *testing.T) {
	if got := (&inbox.PublishError{}).Error(); got != "inbox: publish failed" {
		t.Errorf("Error() = %q", got)
	}
}

// TestTTLRoundsUpToSeconds: a message TTL with a fraction of a second is
// rounded up, since expiries are stored in whole seconds.
func TestTTLRoundsUpToSeconds(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ib := inbox.New(memstore.New(), inbox.WithClock(func() time.Time { return now }))
	for ttl, want := range map[time.Duration]time.Duration{
		1500 * time.Millisecond: 2 * time.Second,
		time.Nanosecond:         time.Second,
		3 * time.Second:         3 * time.Second,
	} {
		res, err := ib.Publish(context.Background(), scope, []string{"ann"}, inbox.Draft{Title: "x", TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Message.ExpiresAt.Sub(now); got != want {
			t.Errorf("TTL %v: expires after %v, want %v", ttl, got, want)
		}
	}
}

// countingStore counts Config reads.
type countingStore struct {
	inbox.Store
	configs int
}

func (s *countingStore) Config(ctx context.Context, sc inbox.Scope) (inbox.Config, error) {
	s.configs++
	return s.Store.Config(ctx, sc)
}

// TestConfigCacheIsBounded: the config cache keeps at most a bounded
// number of scopes, dropping the ones it holds longest when full; a scope
// it keeps is read once.
func TestConfigCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &countingStore{Store: memstore.New()}
	ib := inbox.New(st, inbox.WithClock(func() time.Time { return now }))
	config := func(i int) {
		t.Helper()
		if _, err := ib.Config(ctx, inbox.Scope{Tenant: "t", Inbox: fmt.Sprint("i", i)}); err != nil {
			t.Fatal(err)
		}
	}
	const scopes = 5000
	for i := range scopes {
		now = now.Add(time.Millisecond) // each entry expires later than the last
		config(i)
	}
	before := st.configs
	config(scopes - 1) // the newest is cached
	if st.configs != before {
		t.Errorf("the newest scope was read again")
	}
	config(0) // the oldest was dropped
	if st.configs != before+1 {
		t.Errorf("the oldest of %d scopes was still cached: the cache is not bounded", scopes)
	}
}

// refusingStore refuses every PutMessage with err, as DynamoDB refuses a
// request it finds invalid.
type refusingStore struct {
	inbox.Store
	err func(user string) error
}

func (s refusingStore) PutMessage(ctx context.Context, rec driver.Record, deltas []driver.Counter, receipts ...driver.Mark) error {
	if err := s.err(rec.Partition.User); err != nil {
		return err
	}
	return s.Store.PutMessage(ctx, rec, deltas, receipts...)
}

// TestPublishReturnsCommonBadInput: when every recipient fails for the
// same reason of bad input, Publish returns that error; otherwise a
// *PublishError naming each.
func TestPublishReturnsCommonBadInput(t *testing.T) {
	ctx := context.Background()
	tooLarge := fmt.Errorf("store: %w", inbox.ErrTooLarge)
	all := inbox.New(refusingStore{memstore.New(), func(string) error { return tooLarge }})
	_, err := all.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{Title: "x"})
	var pe *inbox.PublishError
	if !errors.Is(err, inbox.ErrTooLarge) || errors.As(err, &pe) {
		t.Errorf("every recipient too large: %v (%T), want ErrTooLarge, not a *PublishError", err, err)
	}
	some := inbox.New(refusingStore{memstore.New(), func(u string) error {
		if u == "ann" {
			return tooLarge
		}
		return nil
	}})
	res, err := some.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{Title: "x"})
	if !errors.As(err, &pe) || len(res.Delivered) != 1 {
		t.Errorf("one recipient too large: %v, delivered %v; want a *PublishError and bob delivered", err, res.Delivered)
	}
}

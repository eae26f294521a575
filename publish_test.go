package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// putFailStore fails PutMessage for one user's partition.
type putFailStore struct {
	inbox.Store
	user string
}

func (f putFailStore) PutMessage(ctx context.Context, rec driver.Record, deltas []driver.Counter, receipts ...driver.Mark) error {
	if rec.Partition.User == f.user {
		return errOutage
	}
	return f.Store.PutMessage(ctx, rec, deltas, receipts...)
}

func TestPublishPartialFailure(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	ib := inbox.New(putFailStore{Store: st, user: "bob"})
	res, err := ib.Publish(ctx, scope, []string{"ann", "bob", "cid", "ann"}, inbox.Draft{Title: "x", HostSystemID: "h1"})
	var pe *inbox.PublishError
	if !errors.As(err, &pe) || !errors.Is(err, errOutage) {
		t.Fatalf("err = %v, want a *PublishError wrapping the outage", err)
	}
	if diff := cmp.Diff([]string{"ann", "cid"}, res.Delivered); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	// An outage that does not say whether the write applied leaves bob's
	// outcome unknown.
	if _, ok := res.Unknown["bob"]; !ok || len(res.Unknown) != 1 || len(res.Failed) != 0 {
		t.Errorf("unknown = %v, failed = %v, want bob unknown only", res.Unknown, res.Failed)
	}
	// Retrying everyone once the store recovers reaches bob only.
	again, err := inbox.New(st).Publish(ctx, scope, []string{"ann", "bob", "cid"}, inbox.Draft{Title: "x", HostSystemID: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"bob"}, again.Delivered); diff != "" {
		t.Errorf("retry delivered (-want +got):\n%s", diff)
	}
	if again.Message.ID != res.Message.ID {
		t.Errorf("retry ID %s, first %s", again.Message.ID, res.Message.ID)
	}
}

// faultyPuts wraps a Store: PutMessage in the partition of a user in
// applied writes the record and then reports applied's error, as a store
// whose call was cancelled after DynamoDB applied the transaction does (if
// cancel is set, it cancels the call's context first and reports its
// error); in refused's, it writes nothing and reports refused's error.
type faultyPuts struct {
	inbox.Store
	applied map[string]error
	refused map[string]error
	cancel  context.CancelFunc
}

func (f faultyPuts) PutMessage(ctx context.Context, rec driver.Record, deltas []driver.Counter, receipts ...driver.Mark) error {
	who := rec.Partition.User
	if who == "" {
		who = rec.Partition.Group
	}
	if err, ok := f.refused[who]; ok {
		return err
	}
	err, ok := f.applied[who]
	if !ok {
		return f.Store.PutMessage(ctx, rec, deltas, receipts...)
	}
	if err := f.Store.PutMessage(ctx, rec, deltas, receipts...); err != nil {
		return err
	}
	if f.cancel != nil {
		f.cancel()
		return fmt.Errorf("store: put message: %w", ctx.Err())
	}
	return err
}

// holdsOne checks that each of users sees exactly message id, once, and
// that Counts agrees.
func holdsOne(t *testing.T, ib *inbox.Inbox, id string, users ...string) {
	t.Helper()
	ctx := context.Background()
	for _, u := range users {
		page, err := ib.List(ctx, scope.User(u), inbox.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Messages) != 1 || page.Messages[0].ID != id {
			t.Errorf("%s holds %d message(s), want 1 with ID %s: %+v", u, len(page.Messages), id, page.Messages)
		}
		c, err := ib.Counts(ctx, scope.User(u))
		if err != nil {
			t.Fatal(err)
		}
		if c.Total != 1 || c.Unread != 1 {
			t.Errorf("%s: Counts = %+v, want total 1, unread 1", u, c.Tally)
		}
	}
}

// TestPublishUnknownOutcome: a copy the store wrote before it reported a
// deadline or an outage is Unknown, not Failed; a copy it refused is
// Failed. A retry with the same HostSystemID then gives every user exactly
// one copy.
func TestPublishUnknownOutcome(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	throttled := fmt.Errorf("store: %w", inbox.ErrThrottled)
	ib := inbox.New(faultyPuts{Store: st,
		applied: map[string]error{"ann": fmt.Errorf("store: %w", context.DeadlineExceeded), "cid": errors.New("connection reset")},
		refused: map[string]error{"bob": throttled},
	})
	d := inbox.Draft{Title: "x", Category: "ops", HostSystemID: "job-7"}
	users := []string{"ann", "bob", "cid", "dan", "eve"}
	res, err := ib.Publish(ctx, scope, users, d)
	var pe *inbox.PublishError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *PublishError", err)
	}
	for _, want := range []error{inbox.ErrOutcomeUnknown, context.DeadlineExceeded, inbox.ErrThrottled} {
		if !errors.Is(err, want) {
			t.Errorf("err = %v, does not match %v", err, want)
		}
	}
	if diff := cmp.Diff([]string{"dan", "eve"}, res.Delivered); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	if got := slices.Sorted(maps.Keys(res.Failed)); !slices.Equal(got, []string{"bob"}) || res.Failed["bob"] != throttled {
		t.Errorf("failed = %v, want bob: %v", res.Failed, throttled)
	}
	if got := slices.Sorted(maps.Keys(res.Unknown)); !slices.Equal(got, []string{"ann", "cid"}) {
		t.Errorf("unknown = %v, want ann and cid", res.Unknown)
	}
	if len(pe.Failed) != 1 || len(pe.Unknown) != 2 {
		t.Errorf("PublishError = %+v, want bob failed, ann and cid unknown", pe)
	}

	// The store recovers: retrying everyone with the same HostSystemID
	// reaches bob alone, and nobody holds two copies.
	plain := inbox.New(st)
	again, err := plain.Publish(ctx, scope, users, d)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"bob"}, again.Delivered); diff != "" {
		t.Errorf("retry delivered (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ann", "cid", "dan", "eve"}, again.Duplicates); diff != "" {
		t.Errorf("retry duplicates (-want +got):\n%s", diff)
	}
	holdsOne(t, plain, res.Message.ID, users...)

	// A refusal alone is no unknown outcome.
	_, err = inbox.New(faultyPuts{Store: memstore.New(), refused: map[string]error{"bob": throttled}}).Publish(ctx, scope, users, d)
	if !errors.Is(err, inbox.ErrThrottled) || errors.Is(err, inbox.ErrOutcomeUnknown) {
		t.Errorf("one copy refused: %v, want ErrThrottled and no ErrOutcomeUnknown", err)
	}
}

// TestPublishCancelledMidway cancels a Publish while one copy's write is in
// flight, after the store applied it: that user is Unknown, the users
// whose writes had not begun are Failed and hold nothing, and a retry with
// the same HostSystemID gives each user one copy.
func TestPublishCancelledMidway(t *testing.T) {
	st := memstore.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// One write at a time, in order: ann, bob, then cid and dan.
	ib := inbox.New(faultyPuts{Store: st, applied: map[string]error{"bob": nil}, cancel: cancel}, inbox.WithConcurrency(1))
	d := inbox.Draft{Title: "x", HostSystemID: "job-8"}
	users := []string{"ann", "bob", "cid", "dan"}
	res, err := ib.Publish(ctx, scope, users, d)
	if !errors.Is(err, inbox.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrOutcomeUnknown and context.Canceled", err)
	}
	if diff := cmp.Diff([]string{"ann"}, res.Delivered); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	if got := slices.Sorted(maps.Keys(res.Unknown)); !slices.Equal(got, []string{"bob"}) {
		t.Errorf("unknown = %v, want bob", res.Unknown)
	}
	if got := slices.Sorted(maps.Keys(res.Failed)); !slices.Equal(got, []string{"cid", "dan"}) || !errors.Is(res.Failed["cid"], context.Canceled) {
		t.Errorf("failed = %v, want cid and dan, cancelled", res.Failed)
	}
	plain := inbox.New(st)
	holdsOne(t, plain, res.Message.ID, "ann", "bob")
	for _, u := range []string{"cid", "dan"} {
		if c, err := plain.Counts(context.Background(), scope.User(u)); err != nil || c.Total != 0 {
			t.Errorf("%s, never written to: Counts = %+v, %v; want total 0", u, c.Tally, err)
		}
	}

	again, err := plain.Publish(context.Background(), scope, users, d)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"cid", "dan"}, again.Delivered); diff != "" {
		t.Errorf("retry delivered (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ann", "bob"}, again.Duplicates); diff != "" {
		t.Errorf("retry duplicates (-want +got):\n%s", diff)
	}
	holdsOne(t, plain, res.Message.ID, users...)
}

// lateWrite wraps a Store: ann's PutMessage reports a cancellation and
// keeps the write, as one still in flight at DynamoDB, for the test to
// apply later.
type lateWrite struct {
	inbox.Store
	held *func() error
}

func (l lateWrite) PutMessage(ctx context.Context, rec driver.Record, deltas []driver.Counter, receipts ...driver.Mark) error {
	if rec.Partition.User != "ann" {
		return l.Store.PutMessage(ctx, rec, deltas, receipts...)
	}
	*l.held = func() error { return l.Store.PutMessage(context.Background(), rec, deltas, receipts...) }
	return context.Canceled
}

// TestPublishLateWriteAfterRetry: a copy whose write lands after the retry
// with the same HostSystemID wrote it is refused, so the user holds one.
func TestPublishLateWriteAfterRetry(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	var held func() error
	d := inbox.Draft{Title: "x", HostSystemID: "job-late"}
	res, err := inbox.New(lateWrite{Store: st, held: &held}).Publish(ctx, scope, []string{"ann", "bob"}, d)
	if _, ok := res.Unknown["ann"]; !ok || !errors.Is(err, inbox.ErrOutcomeUnknown) {
		t.Fatalf("unknown = %v, err = %v; want ann unknown", res.Unknown, err)
	}
	plain := inbox.New(st)
	again, err := plain.Publish(ctx, scope, []string{"ann", "bob"}, d)
	if err != nil || !slices.Equal(again.Delivered, []string{"ann"}) {
		t.Fatalf("retry delivered %v, %v; want ann", again.Delivered, err)
	}
	if err := held(); !errors.Is(err, driver.ErrExists) {
		t.Errorf("the late write: %v, want ErrExists", err)
	}
	holdsOne(t, plain, res.Message.ID, "ann", "bob")
}

// TestBroadcastUnknownOutcome: a broadcast the store wrote before it
// reported the cancellation matches ErrOutcomeUnknown, one it refused does
// not; a retry with the same HostSystemID stores it once.
func TestBroadcastUnknownOutcome(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	d := inbox.Draft{Title: "all", HostSystemID: "b-7"}
	_, err := inbox.New(faultyPuts{Store: st, applied: map[string]error{inbox.PublicGroup: fmt.Errorf("store: %w", context.Canceled)}}).Broadcast(ctx, scope, d)
	if !errors.Is(err, inbox.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrOutcomeUnknown and context.Canceled", err)
	}
	plain := inbox.New(st)
	m, err := plain.Broadcast(ctx, scope, d)
	if err != nil {
		t.Fatal(err)
	}
	holdsOne(t, plain, m.ID, "ann", "bob")

	g := inbox.Draft{Title: "ops", HostSystemID: "g-7"}
	_, err = inbox.New(faultyPuts{Store: st, refused: map[string]error{"ops": fmt.Errorf("store: %w", inbox.ErrThrottled)}}).BroadcastGroup(ctx, scope, "ops", g)
	if !errors.Is(err, inbox.ErrThrottled) || errors.Is(err, inbox.ErrOutcomeUnknown) {
		t.Errorf("refused group message: %v, want ErrThrottled and no ErrOutcomeUnknown", err)
	}
}

func TestRetryReturnsStoredMessage(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ib := inbox.New(memstore.New(memstore.WithClock(clock)), inbox.WithClock(clock))

	first, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "v1", HostSystemID: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	again, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "v1", HostSystemID: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("broadcast retry (-first +retry):\n%s", diff)
	}
	if _, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "v2", HostSystemID: "b1"}); !errors.Is(err, inbox.ErrConflict) {
		t.Errorf("broadcast with the host ID and other content: %v, want ErrConflict", err)
	}

	p1, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "v1", HostSystemID: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	p2, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "v1", HostSystemID: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p1.Message, p2.Message); diff != "" {
		t.Errorf("publish retry (-first +retry):\n%s", diff)
	}
	if len(p2.Delivered) != 0 || len(p2.Duplicates) != 1 {
		t.Errorf("retry: delivered %v duplicates %v", p2.Delivered, p2.Duplicates)
	}
}

func TestGet(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ib := inbox.New(memstore.New(memstore.WithClock(clock)), inbox.WithClock(clock))
	ann, bob := scope.User("ann"), scope.User("bob")
	d, _ := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "direct"})
	b, _ := ib.Broadcast(ctx, scope, inbox.Draft{Title: "broadcast", TTL: time.Hour})
	if _, err := ib.MarkRead(ctx, ann, b.ID); err != nil {
		t.Fatal(err)
	}

	got, err := ib.Get(ctx, ann, d.Message.ID)
	if err != nil || got.Title != "direct" || got.IsRead() {
		t.Errorf("Get(direct) = %+v, %v", got, err)
	}
	got, err = ib.Get(ctx, ann, b.ID)
	if err != nil || !got.IsRead() || !got.IsBroadcast() {
		t.Errorf("Get(read broadcast) = %+v, %v", got, err)
	}
	got, err = ib.Get(ctx, bob, b.ID)
	if err != nil || got.IsRead() {
		t.Errorf("bob's Get(broadcast) = %+v, %v", got, err)
	}
	if _, err := ib.Get(ctx, bob, d.Message.ID); !errors.Is(err, inbox.ErrNotFound) {
		t.Errorf("bob reads ann's message: %v, want ErrNotFound", err)
	}
	if _, err := ib.Get(ctx, ann, "not-an-id"); !errors.Is(err, inbox.ErrInvalidKey) {
		t.Errorf("bad id: %v", err)
	}
	now = now.Add(time.Hour)
	if _, err := ib.Get(ctx, bob, b.ID); !errors.Is(err, inbox.ErrNotFound) {
		t.Errorf("expired broadcast: %v, want ErrNotFound", err)
	}
}

// TestHostIDOfPublishAndBroadcast: a broadcast may not reuse a publish's
// host system ID, even with the same content: another audience is
// ErrConflict, so a broadcast never shares an ID with users' copies.
func TestHostIDOfPublishAndBroadcast(t *testing.T) {
	ctx := context.Background()
	ib := inbox.New(memstore.New())
	d := inbox.Draft{Title: "same", HostSystemID: "x"}
	if _, err := ib.Publish(ctx, scope, []string{"ann"}, d); err != nil {
		t.Fatal(err)
	}
	if _, err := ib.Broadcast(ctx, scope, d); !errors.Is(err, inbox.ErrConflict) {
		t.Fatalf("broadcast with a publish's host ID: %v, want ErrConflict", err)
	}
	page, _ := ib.List(ctx, scope.User("ann"), inbox.ListOptions{})
	if len(page.Messages) != 1 {
		t.Errorf("ann sees %d messages, want 1", len(page.Messages))
	}
}

func TestDraftLimits(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	ib := inbox.New(st)
	ones := make([]any, 150_000) // ~300 KB of JSON, over 400 KB as DynamoDB counts it
	for i := range ones {
		ones[i] = 1
	}
	tests := []struct {
		name string
		d    inbox.Draft
		want error
	}{
		{"list body over the item limit", inbox.Draft{Body: ones}, inbox.ErrTooLarge},
		{"title over the item limit", inbox.Draft{Title: string(make([]byte, inbox.MaxItemSize))}, inbox.ErrTooLarge},
		{"line separator in host id", inbox.Draft{HostSystemID: "a\u2028b"}, inbox.ErrInvalidKey},
		{"C1 control in host id", inbox.Draft{HostSystemID: "a\u0085b"}, inbox.ErrInvalidKey},
		{"host id too long", inbox.Draft{HostSystemID: string(make([]byte, inbox.MaxHostSystemIDLen+1))}, inbox.ErrInvalidKey},
		{"body not JSON", inbox.Draft{Body: make(chan int)}, inbox.ErrInvalidInput},
		{"negative TTL", inbox.Draft{TTL: -time.Second}, inbox.ErrInvalidTTL},
		{"category with #", inbox.Draft{Category: "a#b"}, inbox.ErrInvalidKey},
	}
	for _, tt := range tests {
		if _, err := ib.Publish(ctx, scope, []string{"ann"}, tt.d); !errors.Is(err, tt.want) {
			t.Errorf("%s: Publish = %v, want %v", tt.name, err, tt.want)
		}
		if _, err := ib.Broadcast(ctx, scope, tt.d); !errors.Is(err, tt.want) {
			t.Errorf("%s: Broadcast = %v, want %v", tt.name, err, tt.want)
		}
	}
	c, _ := ib.Counts(ctx, scope.User("ann"))
	if c.Total != 0 {
		t.Errorf("rejected drafts wrote %d messages", c.Total)
	}
	ok := make([]any, 20_000)
	for i := range ok {
		ok[i] = 1
	}
	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Body: ok}); err != nil {
		t.Errorf("a 20,000-number body: %v", err)
	}
}

package inbox_test

import (
	"context"
	"errors"
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

func (f putFailStore) PutMessage(ctx context.Context, rec driver.Record, deltas []driver.Counter) error {
	if rec.Partition.User == f.user {
		return errOutage
	}
	return f.Store.PutMessage(ctx, rec, deltas)
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
	if _, ok := res.Failed["bob"]; !ok || len(res.Failed) != 1 {
		t.Errorf("failed = %v, want bob only", res.Failed)
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

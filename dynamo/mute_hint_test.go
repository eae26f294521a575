package dynamo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// TestMuteHintStale: a Store that remembers a chat muted (it muted it)
// writes the chat's messages right after another process unmuted it, and
// after it muted it again: the hint is checked by each write's condition,
// and a stale one costs an attempt, never a wrong count or an error.
func TestMuteHintStale(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	ctx := context.Background()
	store, c, table := newLocalStore(t)
	a, b := inbox.New(store), inbox.New(dynamo.New(c, table))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	publish := func(ib *inbox.Inbox) {
		t.Helper()
		if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "hi", Thread: "bob", Category: "chat"}); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	mute := func(ib *inbox.Inbox, threads ...string) {
		t.Helper()
		if _, err := ib.SetPreferences(ctx, ann, inbox.Preferences{MutedThreads: threads}); err != nil {
			t.Fatalf("SetPreferences(%v): %v", threads, err)
		}
	}
	want := func(unread, muted int64) {
		t.Helper()
		for _, ib := range []*inbox.Inbox{a, b} {
			c, err := ib.Counts(ctx, ann)
			if err != nil || c.Unread != unread || c.Muted != muted {
				t.Fatalf("Counts = %+v, %v; want %d unread, %d muted", c.Tally, err, unread, muted)
			}
		}
	}
	publish(a)
	mute(a, "bob") // a's Store takes bob as muted from now on
	publish(a)
	want(0, 2)
	mute(b) // unmuted behind a's back
	publish(a)
	want(3, 0)
	mute(b, "bob") // and muted again
	publish(a)
	want(0, 4)
	if _, err := a.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "bob"}); err != nil {
		t.Fatalf("MarkAllRead: %v", err)
	}
	mute(b)
	want(0, 0)
	publish(a)
	want(1, 0)
}

// TestMutedHostile: another program's mt# attributes on a user's c#* (the
// prefix of a muted thread's counters) that are not such counters: a
// string, a map under a name that is no thread's encoding, a map with a
// key of no tally, a tally that is not a number, or not an integer. Each
// makes her Counts ErrInvalidInput, with no panic, as other attributes
// of c#* that are not what the library writes do.
func TestMutedHostile(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	ctx := context.Background()
	store, c, table := newLocalStore(t)
	ib := inbox.New(store)
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "hi", Thread: "bob", Category: "chat"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ib.SetPreferences(ctx, ann, inbox.Preferences{MutedThreads: []string{"bob"}}); err != nil {
		t.Fatal(err)
	}
	good := "mt#Ym9i" // base64url("bob")
	m := func(kv map[string]types.AttributeValue) types.AttributeValue {
		return &types.AttributeValueMemberM{Value: kv}
	}
	for _, h := range []struct {
		name string
		v    types.AttributeValue
	}{
		{good, &types.AttributeValueMemberS{Value: "1"}},
		{"mt#!!", m(map[string]types.AttributeValue{"u": num(1)})},
		{"mt#Ym9i=", m(map[string]types.AttributeValue{"u": num(1)})},
		{good, m(map[string]types.AttributeValue{"x": num(1)})},
		{good, m(map[string]types.AttributeValue{"u!!": num(1)})},
		{good, m(map[string]types.AttributeValue{"u": &types.AttributeValueMemberS{Value: "1"}})},
		{good, m(map[string]types.AttributeValue{"u": &types.AttributeValueMemberN{Value: "1.5"}})},
		{"mt#" + "Iw", m(map[string]types.AttributeValue{"u": num(1)})}, // base64url("#"): no key
	} {
		setNamed(t, c, table, ann.Partition(), driver.CounterSK("", ""), h.name, h.v)
		if _, err := ib.Counts(ctx, ann); !errors.Is(err, driver.ErrInvalidInput) {
			t.Errorf("Counts with %s = %v: %v, want ErrInvalidInput", h.name, h.v, err)
		}
		setNamed(t, c, table, ann.Partition(), driver.CounterSK("", ""), h.name, nil)
	}
	setNamed(t, c, table, ann.Partition(), driver.CounterSK("", ""), good, m(map[string]types.AttributeValue{"u": num(1), "a": num(0)}))
	if got, err := ib.Counts(ctx, ann); err != nil || got.Muted != 1 || got.Unread != 0 {
		t.Errorf("Counts with the map restored = %+v, %v; want 1 muted", got.Tally, err)
	}
}

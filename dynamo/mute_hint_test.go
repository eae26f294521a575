package dynamo_test

import (
	"context"
	"testing"

	"github.com/stak/inbox"
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

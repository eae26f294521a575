package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// TestUnreadPageAsInProduction: one unread message under 3,000 read ones
// comes on the first unread-only page, with no cursor, as the dynamo
// Store's unread index serves it: memstore evaluates only what the index
// holds, so that a unit test sees the pages production shows.
func TestUnreadPageAsInProduction(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	ib := inbox.New(memstore.New(memstore.WithClock(clock.Now)), inbox.WithClock(clock.Now))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "unread"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3000 {
		clock.Advance(time.Millisecond)
		r, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "read"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ib.MarkRead(ctx, ann, r.Message.ID); err != nil {
			t.Fatal(err)
		}
	}
	page, err := ib.List(ctx, ann, inbox.ListOptions{UnreadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 1 || page.Messages[0].ID != res.Message.ID || page.Cursor != "" {
		t.Errorf("first unread page: %d messages, cursor %q; want the unread one and no cursor", len(page.Messages), page.Cursor)
	}
}

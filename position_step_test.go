package inbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stak/inbox"
)

// TestRVUnarchiveBelowEarlierStep: a message archived unread below the
// first move of a read position moved twice, unarchived, is read at the
// time of the move whose step it lies in (the first), not the latest
// move's: as MarkAllRead's documentation says, and as the position read
// it before it was archived. No other test tells the steps apart.
func TestRVUnarchiveBelowEarlierStep(t *testing.T) {
	ctx := context.Background()
	c := newLagChats(t)
	clock, ib, ann := c.clock, c.ib, c.ann
	publish := func() string { return c.publish("chat", 0) }
	markAll := func() time.Time {
		t.Helper()
		at := clock.Now()
		if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n == 0 {
			t.Fatalf("MarkAllRead = %d, %v", n, err)
		}
		clock.Advance(time.Minute)
		return at
	}
	arch := publish()
	publish()
	if ok, err := ib.Archive(ctx, ann, arch); err != nil || !ok {
		t.Fatalf("Archive = %v, %v", ok, err)
	}
	first := markAll() // covers arch's ID: archived, it keeps no read
	publish()
	second := markAll()
	if ok, err := ib.Unarchive(ctx, ann, arch); err != nil || !ok {
		t.Fatalf("Unarchive = %v, %v", ok, err)
	}
	m, err := ib.Get(ctx, ann, arch)
	if err != nil || !m.ReadAt.Equal(first) {
		t.Errorf("Get of a message unarchived below the first of two moves = read at %v, %v; want %v, the first move's (the second's was %v)", m.ReadAt, err, first, second)
	}
	countsAgree(t, ib, ann, "unarchived")
}

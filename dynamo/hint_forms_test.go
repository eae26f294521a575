package dynamo_test

import (
	"context"
	"testing"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// TestReceiptHintForms: a change of a receipts' hint is made in one
// transaction where the Store has met the hint before: a receipt written
// below Latest (the read of an older message of a group chat whose
// newest the user read; the pages of a MarkAllRead after the first) in
// the form that leaves the hint, the removal of the receipt at Latest
// (an unarchive of the newest message) in the one that clears it; a
// second process, which has met neither, makes them in two, then in one.
func TestReceiptHintForms(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	cp := &capture{Client: c}
	ib, other := inbox.New(dynamo.New(cp, table)), inbox.New(dynamo.New(cp, table))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann").InGroups("g")
	send := func(thread string) string {
		t.Helper()
		m, err := ib.BroadcastGroup(ctx, scope, "g", inbox.Draft{Title: "hi", Thread: thread, Category: "chat"})
		if err != nil {
			t.Fatalf("BroadcastGroup: %v", err)
		}
		return m.ID
	}
	transactions := func(what string, want int, f func() (bool, error)) {
		t.Helper()
		cp.mu.Lock()
		before := len(cp.txs)
		cp.mu.Unlock()
		if changed, err := f(); err != nil || !changed {
			t.Fatalf("%s = %v, %v; want a change", what, changed, err)
		}
		cp.mu.Lock()
		n := len(cp.txs) - before
		cp.mu.Unlock()
		if n != want {
			t.Errorf("%s: %d transactions, want %d", what, n, want)
		}
	}
	var team []string
	for range 4 {
		team = append(team, send("team"))
	}
	transactions("MarkRead of the newest", 1, func() (bool, error) { return ib.MarkRead(ctx, ann, team[3]) })
	transactions("MarkRead of an older one", 1, func() (bool, error) { return ib.MarkRead(ctx, ann, team[0]) })
	transactions("MarkRead of an older one by another process", 2, func() (bool, error) { return other.MarkRead(ctx, ann, team[1]) })
	transactions("MarkRead of an older one by it again", 1, func() (bool, error) { return other.MarkRead(ctx, ann, team[2]) })

	ops := send("ops")
	transactions("Archive of the newest", 1, func() (bool, error) { return ib.Archive(ctx, ann, ops) })
	transactions("Unarchive of the newest", 1, func() (bool, error) { return ib.Unarchive(ctx, ann, ops) })
	transactions("Archive of the newest again", 1, func() (bool, error) { return other.Archive(ctx, ann, ops) })
	// The hints are right: ListThreads previews team's newest read (ops,
	// archived, is not in the view).
	page, err := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
	if err != nil || len(page.Threads) != 1 {
		t.Fatalf("ListThreads = %+v, %v; want 1 thread", page, err)
	}
	if th := page.Threads[0]; th.Thread != "team" || th.Latest.ID != team[3] || th.Latest.ReadAt.IsZero() || th.Read != 4 {
		t.Errorf("ListThreads = %+v; want team, its newest message read, 4 read", th)
	}
}

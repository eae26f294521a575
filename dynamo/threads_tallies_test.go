package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// TestThreadTalliesInIndex: a table CreateTable makes holds the threads'
// tallies in its unread index, so that a Query of threads with
// ActivityOnly returns them (Tallied) with no fetch from the table; a
// table whose index does not (an earlier version's) returns the threads'
// activity alone. ListThreads lists the same threads with the
// same counts on both.
func TestThreadTalliesInIndex(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	ctx := context.Background()
	scope := inbox.Scope{Tenant: "acme", Inbox: "chat"}
	ann := scope.User("ann").InGroups("crew")
	lists := map[bool][]inbox.Thread{}
	for _, tallied := range []bool{true, false} {
		var opts []dynamo.Option
		if !tallied {
			opts = append(opts, dynamo.WithUntalliedIndex())
		}
		c := ddblocal.Client(t)
		table, _ := ddblocal.NewTable(t, c, opts...)
		store := dynamo.New(c, table)
		ib := inbox.New(store)
		var first string
		for i, th := range []string{"dm-bob", "dm-carol", "dm-bob", "dm-dave"} {
			res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "hi", Thread: th})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = res.Message.ID
			}
			time.Sleep(2 * time.Millisecond)
		}
		if _, err := ib.BroadcastGroup(ctx, scope, "crew", inbox.Draft{Title: "all", Thread: "crew-chat"}); err != nil {
			t.Fatal(err)
		}
		if _, err := ib.MarkRead(ctx, ann, first); err != nil {
			t.Fatal(err)
		}
		p := ann.Partition()
		full, err := store.Query(ctx, driver.Query{Partition: p, Threads: true, Limit: 10})
		if err != nil || !full.Tallied || len(full.Threads) != 3 {
			t.Fatalf("tallied %v: Query of the threads = %+v, %v; want 3, Tallied", tallied, full, err)
		}
		keys, err := store.Query(ctx, driver.Query{Partition: p, Threads: true, ActivityOnly: true, Limit: 10})
		if err != nil || keys.Tallied != tallied {
			t.Fatalf("tallied %v: Query with ActivityOnly = %+v, %v; want Tallied %v", tallied, keys, err, tallied)
		}
		want := full.Threads
		if !tallied {
			want = nil
			for _, c := range full.Threads {
				want = append(want, driver.Counter{Partition: c.Partition, Thread: c.Thread, Latest: c.Latest})
			}
		}
		if diff := cmp.Diff(want, keys.Threads); diff != "" {
			t.Errorf("tallied %v: Query with ActivityOnly (-want +got):\n%s", tallied, diff)
		}
		page, err := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lists[tallied] = page.Threads
	}
	shape := func(ts []inbox.Thread) []inbox.Thread {
		var out []inbox.Thread
		for _, t := range ts {
			out = append(out, inbox.Thread{Thread: t.Thread, Group: t.Group, Tally: t.Tally})
		}
		return out
	}
	if diff := cmp.Diff(shape(lists[false]), shape(lists[true])); diff != "" || len(lists[true]) != 4 {
		t.Errorf("ListThreads with the tallies in the index lists %d threads, other ones than without (-without +with):\n%s", len(lists[true]), diff)
	}
}

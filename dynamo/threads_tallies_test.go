package dynamo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
// activity alone; a table without the index reads the counters from the
// table, tallies and Rev. ListThreads lists the same threads with the
// same counts on each.
func TestThreadTalliesInIndex(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	ctx := context.Background()
	scope := inbox.Scope{Tenant: "acme", Inbox: "chat"}
	ann := scope.User("ann").InGroups("crew")
	lists := map[string][]inbox.Thread{}
	for _, c := range []struct {
		table   string
		opts    []dynamo.Option
		tallied bool
	}{
		{"index", nil, true},
		{"untallied index", []dynamo.Option{dynamo.WithUntalliedIndex()}, false},
		{"no index", []dynamo.Option{dynamo.WithUnreadIndex("")}, true},
	} {
		raw := ddblocal.Client(t)
		table, _ := ddblocal.NewTable(t, raw, c.opts...)
		store := dynamo.New(raw, table, c.opts...)
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
			t.Fatalf("%s: Query of the threads = %+v, %v; want 3, Tallied", c.table, full, err)
		}
		keys, err := store.Query(ctx, driver.Query{Partition: p, Threads: true, ActivityOnly: true, Limit: 10})
		if err != nil || keys.Tallied != c.tallied {
			t.Fatalf("%s: Query with ActivityOnly = %+v, %v; want Tallied %v", c.table, keys, err, c.tallied)
		}
		want := full.Threads
		if !c.tallied {
			want = nil
			for _, c := range full.Threads {
				want = append(want, driver.Counter{Partition: c.Partition, Thread: c.Thread, Latest: c.Latest})
			}
		}
		if diff := cmp.Diff(want, keys.Threads); diff != "" {
			t.Errorf("%s: Query with ActivityOnly (-want +got):\n%s", c.table, diff)
		}
		for _, th := range full.Threads {
			if th.Rev == 0 {
				t.Errorf("%s: thread %s without a Rev", c.table, th.Thread)
			}
		}
		if c.table == "index" {
			// c#*, in the index too, has no attribute its entry projects
			// but its keys: a write of it writes no entry.
			out, err := raw.Query(ctx, &dynamodb.QueryInput{
				TableName: aws.String(table), IndexName: aws.String(dynamo.DefaultUnreadIndex),
				KeyConditionExpression:    aws.String("pk = :pk AND unread = :c"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: p.PK()}, ":c": &types.AttributeValueMemberS{Value: "~"}},
			})
			if err != nil || len(out.Items) != 1 {
				t.Fatalf("c#*'s entry in the unread index: %v, %v", out, err)
			}
			for name := range out.Items[0] {
				if name != "pk" && name != "sk" && name != "unread" {
					t.Errorf("c#*'s entry in the unread index holds %s", name)
				}
			}
		}
		page, err := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lists[c.table] = page.Threads
	}
	shape := func(ts []inbox.Thread) []inbox.Thread {
		var out []inbox.Thread
		for _, t := range ts {
			out = append(out, inbox.Thread{Thread: t.Thread, Group: t.Group, Tally: t.Tally})
		}
		return out
	}
	if len(lists["index"]) != 4 {
		t.Errorf("ListThreads lists %d threads, want 4", len(lists["index"]))
	}
	for _, other := range []string{"untallied index", "no index"} {
		if diff := cmp.Diff(shape(lists["index"]), shape(lists[other])); diff != "" {
			t.Errorf("ListThreads with the tallies in the index lists other threads than with %s (-index +%s):\n%s", other, other, diff)
		}
	}
}

// threadFixture is a table with ann's one-to-one thread "dm", for the
// tests of a thread counter's index entry.
type threadFixture struct {
	store *dynamo.Store
	raw   *dynamodb.Client
	table string
	ib    *inbox.Inbox
	scope inbox.Scope
	ann   inbox.User
}

// newThreadFixture returns a fixture on a fresh table, the cache off.
func newThreadFixture(t *testing.T) *threadFixture {
	store, raw, table := newLocalStore(t)
	scope := inbox.Scope{Tenant: "acme", Inbox: "chat"}
	return &threadFixture{store, raw, table, inbox.New(store, inbox.WithSharedCache(0)), scope, scope.User("ann")}
}

// publish publishes a message of thread dm to ann.
func (f *threadFixture) publish(t *testing.T) {
	t.Helper()
	if _, err := f.ib.Publish(context.Background(), f.scope, []string{"ann"}, inbox.Draft{Title: "hi", Thread: "dm"}); err != nil {
		t.Fatal(err)
	}
}

// set sets attribute name of thread dm's counter to v (nil removes it).
func (f *threadFixture) set(t *testing.T, name string, v types.AttributeValue) {
	t.Helper()
	setNamed(t, f.raw, f.table, f.ann.Partition(), driver.ThreadCounterSK("dm", ""), name, v)
}

// TestThreadCopyHealed: a thread counter without the copy of its tallies
// and its rev (as an earlier version wrote it, or a copy of such a table)
// is listed by key until the library writes it, which sets the copy from
// its tallies as they stand: ListThreads counts the thread as Counts does
// before and after.
func TestThreadCopyHealed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newThreadFixture(t)
	check := func(what string, tallied bool, total int64) {
		t.Helper()
		res, err := f.store.Query(ctx, driver.Query{Partition: f.ann.Partition(), Threads: true, ActivityOnly: true, Limit: 10})
		if err != nil || res.Tallied != tallied || len(res.Threads) != 1 {
			t.Fatalf("%s: Query with ActivityOnly = %+v, %v; want one thread, Tallied %v", what, res, err, tallied)
		}
		page, err := f.ib.ListThreads(ctx, f.ann, inbox.ThreadOptions{})
		if err != nil || len(page.Threads) != 1 || page.Threads[0].Total != total || page.Threads[0].Unread != total {
			t.Errorf("%s: ListThreads = %+v, %v; want the thread with %d unread", what, page, err, total)
		}
		if c, err := f.ib.Counts(ctx, f.ann); err != nil || c.Total != total {
			t.Errorf("%s: Counts = %+v, %v; want %d", what, c, err, total)
		}
	}
	for range 3 {
		f.publish(t)
	}
	// The counter as an earlier version left it: no copy, no rev.
	for _, name := range []string{"tp", "tr", "ta", "tar", "th", "rev"} {
		f.set(t, name, nil)
	}
	check("a counter without its copy", false, 3)
	f.publish(t)
	check("once written again", true, 4)
}

// TestThreadEntryHostile: a thread counter whose rev or copied tallies
// another program set to something else than a number is refused with
// ErrInvalidInput by a Query of the threads (and so ListThreads), not
// read as zero.
func TestThreadEntryHostile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newThreadFixture(t)
	f.publish(t)
	for _, attr := range []string{"rev", "tp"} {
		f.set(t, attr, &types.AttributeValueMemberS{Value: "x"})
		_, err := f.store.Query(ctx, driver.Query{Partition: f.ann.Partition(), Threads: true, ActivityOnly: true, Limit: 10})
		if !errors.Is(err, driver.ErrInvalidInput) {
			t.Errorf("Query of the threads with %s a string: %v, want ErrInvalidInput", attr, err)
		}
		if _, err := f.ib.ListThreads(ctx, f.ann, inbox.ThreadOptions{}); !errors.Is(err, inbox.ErrInvalidInput) {
			t.Errorf("ListThreads with %s a string: %v, want ErrInvalidInput", attr, err)
		}
		f.set(t, attr, num(1))
	}
}

// TestThreadEntryCopyMissing: a thread counter whose copy of its tallies
// another program set to NULL, or removed while leaving the rev, is not
// read as zero: NULL, as any other value that is no number, is
// ErrInvalidInput; a copy missing (a rev without it) is read by key, and
// ListThreads counts the thread as Counts does.
func TestThreadEntryCopyMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newThreadFixture(t)
	for range 2 {
		f.publish(t)
	}
	for _, attr := range []string{"tp", "tr", "th"} {
		f.set(t, attr, &types.AttributeValueMemberNULL{Value: true})
		if _, err := f.ib.ListThreads(ctx, f.ann, inbox.ThreadOptions{}); !errors.Is(err, inbox.ErrInvalidInput) {
			t.Errorf("ListThreads with %s NULL: %v, want ErrInvalidInput", attr, err)
		}
		f.set(t, attr, num(0))
	}
	f.set(t, "tp", num(2))
	f.set(t, "tp", nil) // the copy without its published, the rev kept
	page, err := f.ib.ListThreads(ctx, f.ann, inbox.ThreadOptions{})
	if err != nil || len(page.Threads) != 1 || page.Threads[0].Total != 2 {
		t.Errorf("ListThreads with the copy's tp missing = %+v, %v; want the thread with 2, as Counts", page, err)
	}
}

// TestThreadCounterHostile: a thread counter's tally that another program
// set to what is no int64 (a string, 1e30) is ErrInvalidInput whether
// ListThreads reads the thread's counts from the index's copy or, the
// copy missing, the counter by key.
func TestThreadCounterHostile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newThreadFixture(t)
	f.publish(t)
	for _, v := range []types.AttributeValue{&types.AttributeValueMemberS{Value: "x"}, &types.AttributeValueMemberN{Value: "1e30"}} {
		for _, byKey := range []bool{false, true} {
			attr := "tp"
			if byKey {
				attr = "published"
				f.set(t, "rev", nil) // as an earlier version left it: read by key
			}
			f.set(t, attr, v)
			if _, err := f.ib.ListThreads(ctx, f.ann, inbox.ThreadOptions{}); !errors.Is(err, inbox.ErrInvalidInput) {
				t.Errorf("ListThreads with %s %v (by key %v): %v, want ErrInvalidInput", attr, v, byKey, err)
			}
			f.set(t, attr, num(1))
			f.set(t, "rev", num(1))
		}
	}
}

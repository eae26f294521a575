package dynamo_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
	"github.com/stak/inbox/storetest"
)

// splitClient is a dynamo.Client that counts the requests of each
// operation and, once armed, makes a write land inside the first read by
// key of two items of partition key pk, c#* and the item at sort key sk,
// as DynamoDB may: a BatchGetItem of both is answered with every item
// but the one at sk, returned unprocessed, and between runs before the
// Store requests it again; a TransactGetItems of both, which DynamoDB
// reads as of one instant, has between run before it. between runs after
// a Query of pk (the stats) returned since the client was armed.
type splitClient struct {
	dynamo.Client
	table, pk, sk string
	between       func() error

	mu      sync.Mutex
	ops     map[string]int
	armed   bool
	fired   bool
	err     error       // between's
	queried atomic.Bool // a Query of pk on the table returned since armed
}

// arm starts watching for the read to split, with counts from zero.
func (c *splitClient) arm(pk, sk string, between func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pk, c.sk, c.between = pk, sk, between
	c.armed, c.fired, c.err, c.ops = true, false, nil, map[string]int{}
	c.queried.Store(false)
}

// count returns how many requests of op were made since arm.
func (c *splitClient) count(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops[op]
}

// fire reports whether keys hold both items of the split, and, the
// first time they do once armed, notes it and counts op.
func (c *splitClient) fire(op string, keys []map[string]types.AttributeValue) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ops == nil {
		c.ops = map[string]int{}
	}
	c.ops[op]++
	if !c.armed || c.fired {
		return false
	}
	total, item := false, false
	for _, k := range keys {
		if s(k["pk"]) == c.pk {
			total = total || s(k["sk"]) == driver.CounterSK("", "")
			item = item || s(k["sk"]) == c.sk
		}
	}
	c.fired = total && item
	return c.fired
}

// runBetween runs between, once the stats of pk were read.
func (c *splitClient) runBetween() {
	for deadline := time.Now().Add(10 * time.Second); !c.queried.Load() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	err := c.between()
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
}

// s returns the string av holds, "" if none.
func s(av types.AttributeValue) string {
	if v, ok := av.(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func (c *splitClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	ka := in.RequestItems[c.table]
	if !c.fire("BatchGetItem", ka.Keys) {
		return c.Client.BatchGetItem(ctx, in, optFns...)
	}
	var rest, held []map[string]types.AttributeValue
	for _, k := range ka.Keys {
		if s(k["pk"]) == c.pk && s(k["sk"]) == c.sk {
			held = append(held, k)
		} else {
			rest = append(rest, k)
		}
	}
	first := *in
	first.RequestItems = map[string]types.KeysAndAttributes{c.table: {Keys: rest, ConsistentRead: ka.ConsistentRead}}
	out, err := c.Client.BatchGetItem(ctx, &first, optFns...)
	if err != nil {
		return out, err
	}
	c.runBetween()
	out.UnprocessedKeys = map[string]types.KeysAndAttributes{c.table: {Keys: held, ConsistentRead: ka.ConsistentRead}}
	return out, nil
}

func (c *splitClient) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	var keys []map[string]types.AttributeValue
	for _, it := range in.TransactItems {
		keys = append(keys, it.Get.Key)
	}
	if c.fire("TransactGetItems", keys) {
		c.runBetween()
	}
	return c.Client.TransactGetItems(ctx, in, optFns...)
}

func (c *splitClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.Client.Query(ctx, in, optFns...)
	c.mu.Lock()
	pk := c.pk
	c.mu.Unlock()
	if in.IndexName == nil && pk != "" {
		for _, v := range in.ExpressionAttributeValues {
			if s(v) == pk {
				c.queried.Store(true)
			}
		}
	}
	return out, err
}

// TestThreadCountsReadIsolated: ListThreads of a thread reads the
// thread's counters with a BatchGetItem while nothing is taken out of
// them, and with a TransactGetItems while the partition's stats hold an
// expired message of the thread, whose removal would otherwise be taken
// out twice when it lands between the BatchGetItem's reads of c#* and of
// the thread's counter (here by DynamoDB returning that counter
// unprocessed): the thread vanished from ListThreads. MarkAllRead of the
// thread marks her direct messages by a read position, whose write is
// conditional on her counter version as read with the expired entries:
// the removal landing in its read fails it, and it reads again, with no
// isolated read. The counts are exact either way. The table is an
// earlier version's, whose unread index holds no tallies: ListThreads
// reads a user's threads' counters by key only there (on a table of this
// version it reads them from the index, and the storetest suite's
// ListThreadsTornCounters tears those reads).
func TestThreadCountsReadIsolated(t *testing.T) {
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c, dynamo.WithUntalliedIndex())
	split := &splitClient{Client: c, table: table}
	plain := dynamo.New(c, table)
	clock := storetest.NewClock(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
	ib := inbox.New(dynamo.New(split, table), inbox.WithClock(clock.Now), inbox.WithSharedCache(0))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	annP := driver.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	chat := driver.ThreadCounterSK("chat", "")

	// expiring publishes a message of the thread that expires within the
	// hour and one that stays, lets the hour pass, and returns a removal
	// of the first as the stream handler applies it.
	expiring := func() func() error {
		t.Helper()
		gone, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "expires", Thread: "chat", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
		if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "stays", Thread: "chat"}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Hour)
		return func() error {
			recs, err := plain.GetRecords(ctx, []driver.Key{{Partition: annP, ID: gone.Message.ID}})
			if err != nil || len(recs) != 1 {
				t.Errorf("read the expired message back: %d records, %v", len(recs), err)
				return err
			}
			_, err = plain.ApplyRemoval(ctx, driver.RemovalFor(recs[0], "remove-"+gone.Message.ID, clock.Now()))
			return err
		}
	}
	// unread returns the thread's unread count as ListThreads shows it (0
	// if it is not listed).
	unread := func() int64 {
		t.Helper()
		page, err := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range page.Threads {
			if th.Thread == "chat" {
				return th.Unread
			}
		}
		return 0
	}
	// reads checks the operations the last call used to read the
	// thread's counters.
	reads := func(what string, isolated bool) {
		t.Helper()
		if got := split.count("TransactGetItems") > 0; got != isolated {
			t.Errorf("%s: %d TransactGetItems, %d BatchGetItem; want TransactGetItems %v", what, split.count("TransactGetItems"), split.count("BatchGetItem"), isolated)
		}
		split.mu.Lock()
		defer split.mu.Unlock()
		if split.err != nil {
			t.Errorf("%s: the removal: %v", what, split.err)
		}
	}

	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "first", Thread: "chat"}); err != nil {
		t.Fatal(err)
	}
	split.arm(annP.PK(), chat, func() error { return nil })
	if n := unread(); n != 1 {
		t.Errorf("ListThreads with nothing expired: chat has %d unread, want 1", n)
	}
	reads("ListThreads with nothing expired", false)

	remove := expiring()
	split.arm(annP.PK(), chat, remove)
	if n := unread(); n != 2 {
		t.Errorf("ListThreads with an expired message's removal landing in its read: chat has %d unread, want 2", n)
	}
	reads("ListThreads with an expired message pending", true)
	split.arm(annP.PK(), chat, func() error { return nil })
	if n := unread(); n != 2 {
		t.Errorf("ListThreads once the removal is accounted: chat has %d unread, want 2", n)
	}
	reads("ListThreads once the removal is accounted", false)

	if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n != 2 {
		t.Errorf("MarkAllRead(chat) = %d, %v; want 2", n, err)
	}
	remove = expiring()
	split.arm(annP.PK(), chat, remove)
	if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n != 1 {
		t.Errorf("MarkAllRead(chat) with an expired message's removal landing in its read = %d, %v; want 1", n, err)
	}
	// By a read position: no isolated read is needed (see above).
	split.mu.Lock()
	if split.err != nil {
		t.Errorf("MarkAllRead(chat) with an expired message pending: the removal: %v", split.err)
	}
	split.mu.Unlock()
	split.mu.Lock()
	fired := split.fired
	split.mu.Unlock()
	if !fired {
		t.Error("the removal never landed in a read")
	}
	page, err := ib.List(ctx, ann, inbox.ListOptions{Thread: "chat", UnreadOnly: true})
	if err != nil || len(page.Messages) != 0 {
		t.Errorf("List(chat, unread) after MarkAllRead = %d messages, %v; want none", len(page.Messages), err)
	}
	if n := unread(); n != 0 {
		t.Errorf("ListThreads after MarkAllRead: chat has %d unread, want 0", n)
	}
}

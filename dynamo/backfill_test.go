package dynamo_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// stripScheduledKeys removes spk and ssk from the item at k, as an
// earlier version of the library wrote it.
func stripScheduledKeys(t *testing.T, c *dynamodb.Client, table string, k driver.Key) {
	t.Helper()
	_, err := c.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: k.Partition.PK()},
			"sk": &types.AttributeValueMemberS{Value: driver.MessageSK(k.ID)},
		},
		UpdateExpression:    aws.String("REMOVE spk, ssk"),
		ConditionExpression: aws.String("attribute_exists(spk)"),
	})
	if err != nil {
		t.Fatalf("strip the scheduled keys of %s in %s: %v", k.ID, k.Partition.PK(), err)
	}
}

// TestBackfillScheduled: scheduled records without the scheduled index's
// keys, as earlier versions wrote them (scheduled copies before the index
// existed, scheduled broadcasts and group messages before it held them),
// are not in Scheduled; BackfillScheduled gives each of its partition's
// records not yet due its keys, once, and leaves alone a record that has
// them, one already due, and a message not scheduled; Scheduled then lists
// them all. A bad partition is ErrInvalidKey.
func TestBackfillScheduled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	store := dynamo.New(c, table)
	var mu sync.Mutex
	now := time.Now().UTC().Truncate(time.Second)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ib := inbox.New(store, inbox.WithClock(clock))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	part := func(user string) driver.Partition { return scope.User(user).Partition() }

	copies, err := ib.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{Title: "copies", DeliverAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	all, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "everyone", DeliverAt: now.Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	group, err := ib.BroadcastGroup(ctx, scope, "ops", inbox.Draft{Title: "ops", DeliverAt: now.Add(3 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	soon, err := ib.Publish(ctx, scope, []string{"dan"}, inbox.Draft{Title: "soon", DeliverAt: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := ib.Publish(ctx, scope, []string{"cy"}, inbox.Draft{Title: "indexed", DeliverAt: now.Add(4 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "now"})
	if err != nil {
		t.Fatal(err)
	}
	stripped := []driver.Key{
		{Partition: part("ann"), ID: copies.Message.ID},
		{Partition: part("bob"), ID: copies.Message.ID},
		{Partition: scope.Public(), ID: all.ID},
		{Partition: scope.Group("ops"), ID: group.ID},
		{Partition: part("dan"), ID: soon.Message.ID},
	}
	for _, k := range stripped {
		stripScheduledKeys(t, c, table, k)
	}
	// Two minutes later dan's copy is due: it stays as it is.
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()

	// scheduled waits until Scheduled lists want messages (the index is
	// eventually consistent) and returns their IDs, in order.
	scheduled := func(want int) []string {
		t.Helper()
		var ids []string
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			page, err := ib.Scheduled(ctx, scope, inbox.ScheduledOptions{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			ids = ids[:0]
			for _, d := range page.Deliveries {
				ids = append(ids, d.Partition.Group+d.Partition.User+" "+d.Message.ID)
			}
			if len(ids) == want || time.Now().After(deadline) {
				return ids
			}
		}
	}
	if got := scheduled(1); len(got) != 1 || got[0] != "cy "+kept.Message.ID {
		t.Fatalf("before the backfill, Scheduled lists %v; want cy's copy alone", got)
	}

	for _, run := range []struct {
		name string
		want map[string]int
	}{
		{"first", map[string]int{"ann": 1, "bob": 1, "cy": 0, "dan": 0, inbox.PublicGroup: 1, "ops": 1}},
		{"second", map[string]int{"ann": 0, "bob": 0, "cy": 0, "dan": 0, inbox.PublicGroup: 0, "ops": 0}},
	} {
		for name, want := range run.want {
			p := part(name)
			if name == inbox.PublicGroup || name == "ops" {
				p = scope.Group(name)
			}
			n, err := store.BackfillScheduled(ctx, p, clock())
			if err != nil || n != want {
				t.Errorf("%s backfill of %s: %d, %v; want %d", run.name, p.PK(), n, err, want)
			}
		}
	}
	for _, k := range stripped[:4] {
		item := getRaw(t, c, table, k.Partition.PK(), driver.MessageSK(k.ID))
		if attrS(t, item["spk"]) != driver.ScheduledPK(scope) || attrS(t, item["ssk"]) != driver.ScheduledKey(k.ID, k.Partition) {
			t.Errorf("after the backfill, %s in %s carries spk %v, ssk %v", k.ID, k.Partition.PK(), item["spk"], item["ssk"])
		}
	}
	for _, k := range []driver.Key{{Partition: part("dan"), ID: soon.Message.ID}, {Partition: part("ann"), ID: plain.Message.ID}} {
		if item := getRaw(t, c, table, k.Partition.PK(), driver.MessageSK(k.ID)); item["spk"] != nil || item["ssk"] != nil {
			t.Errorf("the backfill gave %s in %s (due, or not scheduled) the keys %v, %v", k.ID, k.Partition.PK(), item["spk"], item["ssk"])
		}
	}
	want := []string{"ann " + copies.Message.ID, "bob " + copies.Message.ID, inbox.PublicGroup + " " + all.ID, "ops " + group.ID, "cy " + kept.Message.ID}
	if got := scheduled(len(want)); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] || got[4] != want[4] {
		t.Errorf("after the backfill, Scheduled lists %v; want %v", got, want)
	}

	if _, err := store.BackfillScheduled(ctx, driver.Partition{Tenant: "acme", Inbox: "alerts", User: "a#b"}, clock()); !errors.Is(err, driver.ErrInvalidKey) {
		t.Errorf("backfill of a bad partition: %v, want ErrInvalidKey", err)
	}
}

package dynamo_test

import (
	"context"
	"errors"
	"os"
	"strings"
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

// TestScheduledIndex: CreateTable makes the scheduled index, a global
// secondary index; only scheduled messages carry its keys (a user's copy,
// and a broadcast once, in its shared partition). On a table made
// without it, Scheduled and Due fail with ErrUnsupported (not bad input),
// whether the Store knows (WithScheduledIndex("")) or not, and scheduled
// messages still carry the keys: the index added afterwards with
// UpdateTable lists them.
func TestScheduledIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddblocal.Client(t)
	now := time.Now().UTC().Truncate(time.Second)
	clock := func() time.Time { return now }
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}

	table, _ := ddblocal.NewTable(t, c)
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if g := d.Table.GlobalSecondaryIndexes; len(g) != 1 || aws.ToString(g[0].IndexName) != dynamo.DefaultScheduledIndex {
		t.Fatalf("global secondary indexes %+v, want %q", g, dynamo.DefaultScheduledIndex)
	}
	ib := inbox.New(dynamo.New(c, table), inbox.WithClock(clock))
	plain, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "now"})
	if err != nil {
		t.Fatal(err)
	}
	if item := getRaw(t, c, table, scope.User("ann").Partition().PK(), driver.MessageSK(plain.Message.ID)); item["spk"] != nil || item["ssk"] != nil {
		t.Errorf("a message delivered at once carries the scheduled index's keys: %v, %v", item["spk"], item["ssk"])
	}
	plainB, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "now"})
	if err != nil {
		t.Fatal(err)
	}
	if item := getRaw(t, c, table, scope.Public().PK(), driver.MessageSK(plainB.ID)); item["spk"] != nil || item["ssk"] != nil {
		t.Errorf("a broadcast delivered at once carries the scheduled index's keys: %v, %v", item["spk"], item["ssk"])
	}

	bare, _ := ddblocal.NewTable(t, c, dynamo.WithScheduledIndex(""))
	d, err = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(bare)})
	if err != nil || len(d.Table.GlobalSecondaryIndexes) != 0 {
		t.Fatalf("a table made WithScheduledIndex(\"\") has global indexes %+v, %v", d.Table.GlobalSecondaryIndexes, err)
	}
	for name, store := range map[string]*dynamo.Store{
		"a Store that knows":         dynamo.New(c, bare, dynamo.WithScheduledIndex("")),
		"a Store that does not know": dynamo.New(c, bare),
	} {
		ib := inbox.New(store, inbox.WithClock(clock))
		if _, err := ib.Scheduled(ctx, scope, inbox.ScheduledOptions{}); !errors.Is(err, inbox.ErrUnsupported) || errors.Is(err, inbox.ErrInvalidInput) {
			t.Errorf("%s: Scheduled on a table without the index: %v, want ErrUnsupported", name, err)
		}
		if _, err := ib.Due(ctx, scope, now.Add(-time.Hour), now, inbox.ScheduledOptions{}); !errors.Is(err, inbox.ErrUnsupported) {
			t.Errorf("%s: Due on a table without the index: %v, want ErrUnsupported", name, err)
		}
	}
	old := inbox.New(dynamo.New(c, bare, dynamo.WithScheduledIndex("")), inbox.WithClock(clock))
	res, err := old.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{Title: "later", DeliverAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatalf("a scheduled Publish on a table without the index: %v", err)
	}
	item := getRaw(t, c, bare, scope.User("bob").Partition().PK(), driver.MessageSK(res.Message.ID))
	if attrS(t, item["spk"]) != driver.ScheduledPK(scope) || attrS(t, item["ssk"]) != res.Message.ID+"#bob" {
		t.Errorf("a scheduled copy carries spk %v, ssk %v", item["spk"], item["ssk"])
	}
	b, err := old.Broadcast(ctx, scope, inbox.Draft{Title: "later to everyone", DeliverAt: now.Add(2 * time.Hour)})
	if err != nil {
		t.Fatalf("a scheduled Broadcast on a table without the index: %v", err)
	}
	item = getRaw(t, c, bare, scope.Public().PK(), driver.MessageSK(b.ID))
	if attrS(t, item["spk"]) != driver.ScheduledPK(scope) || attrS(t, item["ssk"]) != b.ID+"##"+inbox.PublicGroup {
		t.Errorf("a scheduled broadcast carries spk %v, ssk %v", item["spk"], item["ssk"])
	}

	// The index added to the table: it lists the copies written before.
	_, err = c.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName: aws.String(bare),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("spk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("ssk"), AttributeType: types.ScalarAttributeTypeS},
		},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String(dynamo.DefaultScheduledIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("spk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("ssk"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude,
				NonKeyAttributes: dynamo.ScheduledProjection(driver.TTLAttribute)},
		}}},
	})
	if err != nil {
		t.Fatalf("UpdateTable: add the scheduled index: %v", err)
	}
	ib = inbox.New(dynamo.New(c, bare), inbox.WithClock(clock))
	var page inbox.DeliveryPage
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if page, err = ib.Scheduled(ctx, scope, inbox.ScheduledOptions{}); err == nil && len(page.Deliveries) == 3 || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || len(page.Deliveries) != 3 || page.Deliveries[0].Partition.User != "ann" || page.Deliveries[1].Message.Title != "later" ||
		!page.Deliveries[2].Partition.IsPublic() || page.Deliveries[2].Message.ID != b.ID {
		t.Errorf("Scheduled once the index was added: %+v, %v; want ann's and bob's copies, then the broadcast", page, err)
	}
}

// TestTemplateHasTheLocalIndexes: the SAM template's table has the local
// indexes CreateTable gives it, unread and thread, with their keys,
// projections (the unread index's holds the threads' tallies) and key
// attributes.
func TestTemplateHasTheLocalIndexes(t *testing.T) {
	raw, err := os.ReadFile("../examples/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, ix := range [][2]string{{dynamo.DefaultUnreadIndex, "unread"}, {dynamo.DefaultThreadIndex, "tsk"}} {
		if !strings.Contains(string(raw), "- AttributeName: "+ix[1]+"\n          AttributeType: S") {
			t.Errorf("examples/template.yaml: no definition of the attribute %s", ix[1])
		}
		_, index, ok := strings.Cut(string(raw), "- IndexName: "+ix[0]+"\n")
		index, _, _ = strings.Cut(index, "- IndexName: ")
		for _, w := range []string{
			"- AttributeName: pk\n              KeyType: HASH",
			"- AttributeName: " + ix[1] + "\n              KeyType: RANGE",
			"ProjectionType: INCLUDE",
			"NonKeyAttributes: [" + strings.Join(dynamo.IndexProjections()[ix[0]], ", ") + "]",
		} {
			if !ok || !strings.Contains(index, w) {
				t.Errorf("examples/template.yaml: the %s index lacks %q", ix[0], w)
			}
		}
	}
}

// TestTemplateHasTheScheduledIndex: the SAM template's scheduled index
// has the keys and projection CreateTable gives it.
func TestTemplateHasTheScheduledIndex(t *testing.T) {
	raw, err := os.ReadFile("../examples/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, index, ok := strings.Cut(string(raw), "- IndexName: "+dynamo.DefaultScheduledIndex+"\n")
	want := []string{
		"- AttributeName: spk\n              KeyType: HASH",
		"- AttributeName: ssk\n              KeyType: RANGE",
		"ProjectionType: INCLUDE",
		"NonKeyAttributes: [" + strings.Join(dynamo.ScheduledProjection(driver.TTLAttribute), ", ") + "]",
	}
	for _, w := range want {
		if !ok || !strings.Contains(index, w) {
			t.Errorf("examples/template.yaml: the scheduled index lacks %q", w)
		}
	}
}

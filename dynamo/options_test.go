package dynamo_test

import (
	"context"
	"errors"
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

// TestNewPanicsOnBadAttributeNames: names that are empty, repeated or
// taken by the items are programming errors.
func TestNewPanicsOnBadAttributeNames(t *testing.T) {
	for _, opts := range [][]dynamo.Option{
		{dynamo.WithKeyAttributes("", "sk")},
		{dynamo.WithKeyAttributes("pk", "pk")},
		{dynamo.WithTTLAttribute("pk")},
		{dynamo.WithTTLAttribute("ttl")},
		{dynamo.WithKeyAttributes("kind", "sk")},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New with %d option(s) did not panic", len(opts))
				}
			}()
			dynamo.New(nil, "t", opts...)
		}()
	}
	dynamo.New(nil, "t", dynamo.WithKeyAttributes("PK", "SK"), dynamo.WithTTLAttribute("exp"))
}

// TestCustomAttributeNames runs the main paths on a table whose key and
// TTL attributes have other names, with dots in them (which expressions
// must not read as paths).
func TestCustomAttributeNames(t *testing.T) {
	ctx := context.Background()
	raw := ddblocal.Client(t)
	table := ddblocal.TableName(t)
	opts := []dynamo.Option{dynamo.WithKeyAttributes("p.k", "s.k"), dynamo.WithTTLAttribute("exp.at")}
	if _, err := dynamo.CreateTable(ctx, raw, table, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dynamo.DeleteTable(context.Background(), raw, table); err != nil {
			t.Error(err)
		}
	})
	ttl, err := raw.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(ttl.TimeToLiveDescription.AttributeName); got != "exp.at" {
		t.Errorf("TTL attribute %q, want exp.at", got)
	}
	now := time.Now().UTC().Truncate(time.Second)
	ib := inbox.New(dynamo.New(raw, table, opts...), inbox.WithClock(func() time.Time { return now }))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	pub, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "direct", Category: "ops", HostSystemID: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "direct", Category: "ops", HostSystemID: "h1"})
	if err != nil || again.Message.ID != pub.Message.ID || len(again.Duplicates) != 1 {
		t.Fatalf("retried Publish = %+v, %v; want a duplicate of %s", again, err, pub.Message.ID)
	}
	bc, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "broadcast"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{pub.Message.ID, bc.ID} {
		if ok, err := ib.MarkRead(ctx, ann, id); err != nil || !ok {
			t.Fatalf("MarkRead(%s) = %v, %v", id, ok, err)
		}
		if ok, err := ib.MarkRead(ctx, ann, id); err != nil || ok {
			t.Fatalf("second MarkRead(%s) = %v, %v; want false", id, ok, err)
		}
	}
	page, err := ib.List(ctx, ann, inbox.ListOptions{Limit: 1})
	if err != nil || len(page.Messages) != 1 || page.Cursor == "" {
		t.Fatalf("List page 1 = %+v, %v", page, err)
	}
	page, err = ib.List(ctx, ann, inbox.ListOptions{Limit: 1, Cursor: page.Cursor})
	if err != nil || len(page.Messages) != 1 || page.Messages[0].ID != pub.Message.ID {
		t.Fatalf("List page 2 = %+v, %v", page, err)
	}
	counts, err := ib.Recount(ctx, ann)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Total != 2 || counts.Read != 2 || counts.Categories["ops"] != (inbox.Tally{Total: 1, Read: 1}) {
		t.Errorf("Recount = %+v", counts)
	}
	out, err := raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"p.k": &types.AttributeValueMemberS{Value: "t#acmeU#ann#alerts"},
		"s.k": &types.AttributeValueMemberS{Value: "m#" + pub.Message.ID},
	}})
	if err != nil || out.Item == nil {
		t.Fatalf("GetItem = %v, %v", out, err)
	}
	if _, ok := out.Item["exp.at"].(*types.AttributeValueMemberN); !ok {
		t.Errorf("message item has no exp.at number: %v", out.Item)
	}
	for _, name := range []string{"pk", "sk", "expiredat"} {
		if _, ok := out.Item[name]; ok {
			t.Errorf("message item has attribute %q", name)
		}
	}
}

// TestItemTooLarge: DynamoDB's refusal of an item over 400 KB matches
// driver.ErrTooLarge, and nothing is written.
func TestItemTooLarge(t *testing.T) {
	ctx := context.Background()
	store, raw, table := newLocalStore(t)
	p := driver.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	now := time.Now().UTC().Truncate(time.Second)
	rec := driver.Record{Partition: p, Message: driver.Message{
		ID: "01HZZZZZZZZZZZZZZZZZZZZZZZ", Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{"ann"}},
		Body: strings.Repeat("x", 410*1024), DeliveredAt: now, ExpiresAt: now.Add(time.Hour),
	}}
	rec.Entry = driver.LedgerSK(rec.Message.ExpiresAt, rec.Message.ID, "big")
	err := store.PutMessage(ctx, rec, []driver.Counter{{Partition: p, Published: 1}})
	if !errors.Is(err, driver.ErrTooLarge) {
		t.Fatalf("PutMessage of a 410 KB body: %v, want ErrTooLarge", err)
	}
	t.Logf("DynamoDB said: %v", err)
	if items := rawQuery(t, raw, table, p.PK(), ""); len(items) != 0 {
		t.Errorf("%d items written", len(items))
	}
}

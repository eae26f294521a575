package dynamo_test

import (
	"context"
	"strconv"
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

func listedTally(t *testing.T, ib *inbox.Inbox, u inbox.User, o inbox.ListOptions) (tl inbox.Tally, n int) {
	t.Helper()
	o.Limit = inbox.MaxPageSize
	for {
		p, err := ib.List(context.Background(), u, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Messages {
			n++
			tl.Total++
			if m.IsRead() {
				tl.Read++
			} else {
				tl.Unread++
			}
		}
		if p.Cursor == "" {
			return tl, n
		}
		o.Cursor = p.Cursor
	}
}

func wantAgree(t *testing.T, ib *inbox.Inbox, u inbox.User, what string) {
	t.Helper()
	c, err := ib.Counts(context.Background(), u)
	if err != nil {
		t.Fatalf("%s: Counts: %v", what, err)
	}
	feed, _ := listedTally(t, ib, u, inbox.ListOptions{})
	_, arch := listedTally(t, ib, u, inbox.ListOptions{Archived: true})
	_, sn := listedTally(t, ib, u, inbox.ListOptions{Snoozed: true})
	feed.Archived = int64(arch)
	feed.Unseen = c.Unseen // List does not tell unseen: the storetest suite checks it
	if c.Tally != feed || c.Snoozed != int64(sn) {
		t.Errorf("%s: Counts %+v Snoozed %d; List shows %+v, snoozed view %d", what, c.Tally, c.Snoozed, feed, sn)
	} else {
		t.Logf("%s: agree %+v Snoozed %d", what, c.Tally, c.Snoozed)
	}
}

func attrString(v types.AttributeValue) string {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return "NULL"
}

// TestForeignSnoozeAttr: another program's direct message carrying a
// snoozeduntil attribute (a number, or NULL as the seeds write an unset
// time) is not snoozed: it is listed and counted, and can be marked and
// recounted.
func TestForeignSnoozeAttr(t *testing.T) {
	ddblocal.Endpoint(t)
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	store := dynamo.New(c, table)
	ib := inbox.New(store, inbox.WithSharedCache(0))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	for _, v := range []types.AttributeValue{
		&types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)},
		&types.AttributeValueMemberNULL{Value: true},
	} {
		u := scope.User("u" + strconv.Itoa(int(time.Now().UnixNano()%100000)))
		p := u.Partition()
		id := inbox.IDAt(time.Now().Add(-time.Minute))
		s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
		n := func(t time.Time) types.AttributeValue {
			return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix(), 10)}
		}
		now := time.Now()
		item := map[string]types.AttributeValue{
			"pk": s(p.PK()), "sk": s(driver.MessageSK(id)), "kind": s("UM"), "expiredat": n(now.Add(24 * time.Hour)),
			"tenant_key": s(p.Tenant), "inbox_key": s(p.Inbox), "uid": s(p.User),
			"readat":       &types.AttributeValueMemberNULL{Value: true},
			"snoozeduntil": v,
			"headers": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"id": s(id), "host_system_id": &types.AttributeValueMemberNULL{Value: true}, "sender": s("other"),
				"audiences": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"kind": s("user"), "label": s("x")}},
				"received":  n(now), "delivered": n(now),
			}},
			"message": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"title": s("foreign"), "body": s("b")}},
		}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(table),
			Key:                       map[string]types.AttributeValue{"pk": s(p.PK()), "sk": s(driver.CounterSK("", ""))},
			UpdateExpression:          aws.String("ADD published :p SET kind = :k"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberN{Value: "1"}, ":k": s("US")},
		}); err != nil {
			t.Fatal(err)
		}
		wantAgree(t, ib, u, "foreign item with snoozeduntil "+attrString(v))
		if _, err := ib.MarkRead(ctx, u, id); err != nil {
			t.Errorf("snoozeduntil %s: MarkRead: %v", attrString(v), err)
		}
		if _, err := ib.Recount(ctx, u); err != nil {
			t.Errorf("snoozeduntil %s: Recount: %v", attrString(v), err)
		}
		wantAgree(t, ib, u, "after MarkRead and Recount "+attrString(v))
	}
}

// TestStreamSeesForeignRead: another program marks read (SET readat, and
// read +1 in c#*) a snoozed message and a message of a thread that the
// library wrote; the table's stream, read by a StreamReader into the
// StreamHandler, brings the MODIFY records, whose images note the marks
// the items' ledger entries count: the handler rewrites the entries, so
// that Counts, the snoozed view and ListThreads agree with List.
func TestStreamSeesForeignRead(t *testing.T) {
	ddblocal.Endpoint(t)
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	ib := inbox.New(dynamo.New(c, table), inbox.WithSharedCache(0))
	u := inbox.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	p := u.Partition()
	snoozed, err := ib.Publish(ctx, u.Scope, []string{u.ID}, inbox.Draft{Title: "later"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib.Snooze(ctx, u, snoozed.Message.ID, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	threaded, err := ib.Publish(ctx, u.Scope, []string{u.ID}, inbox.Draft{Title: "chat", Thread: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{snoozed.Message.ID, threaded.Message.ID} {
		foreignRead(t, c, table, driver.Key{Partition: p, ID: id})
	}
	if _, err := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn).Poll(ctx, ib.StreamHandler); err != nil {
		t.Fatalf("Poll: %v", err)
	}
	wantAgree(t, ib, u, "after the stream brought another program's reads")
	threads, err := ib.ListThreads(ctx, u, inbox.ThreadOptions{})
	if err != nil || len(threads.Threads) != 1 || threads.Threads[0].Unread != 0 {
		t.Errorf("ListThreads = %+v, %v; want thread chat, read", threads, err)
	}
}

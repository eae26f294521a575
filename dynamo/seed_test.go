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
	"github.com/oklog/ulid/v2"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// TestItemsOfAnotherWriter: messages that another service following the
// seeds wrote, with readat null and, in seed 000's layout, with their
// headers at the top level (and its counter increments, no ledger entry),
// are listed as unread messages, marked read once, counted exactly, and
// their removal is accounted as a message's.
func TestItemsOfAnotherWriter(t *testing.T) {
	ctx := context.Background()
	raw := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, raw)
	ib := inbox.New(dynamo.New(raw, table))
	ann := driver.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	annPK := "t#acmeU#ann#alerts"
	now := time.Now().UTC().Truncate(time.Second)
	exp := now.Add(time.Hour).Unix()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int64) types.AttributeValue { return &types.AttributeValueMemberN{Value: itoa(v)} }
	m := func(kv map[string]types.AttributeValue) types.AttributeValue {
		return &types.AttributeValueMemberM{Value: kv}
	}
	null := &types.AttributeValueMemberNULL{Value: true}
	nested := ulid.Make().String()
	flat := ulid.Make().String()
	items := []map[string]types.AttributeValue{
		{ // seed 001: headers nested, readat null
			"pk": s(annPK), "sk": s("m#" + nested), "kind": s("UM"),
			"headers": m(map[string]types.AttributeValue{
				"id": s(nested), "host_system_id": null, "sender": s("legacy"),
				"audiences": m(map[string]types.AttributeValue{"kind": s("users"), "label": s(""), "uids": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("ann")}}}),
				"received":  n(now.Unix()), "delivered": n(now.Unix()),
			}),
			"message":  m(map[string]types.AttributeValue{"title": s("nested"), "body": s("b"), "cta_uri": null}),
			"taxonomy": m(map[string]types.AttributeValue{"category": s("ops")}),
			"readat":   null, "expiredat": n(exp), "tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s("ann"),
		},
		{ // seed 000: headers flat at the top level, readat null
			"pk": s(annPK), "sk": s("m#" + flat), "kind": s("UM"),
			"id": s(flat), "host_system_id": s("legacy-7"), "sender": s("legacy"),
			"audiences": m(map[string]types.AttributeValue{"kind": s("users"), "label": s("ops"), "uids": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("ann")}}}),
			"received":  n(now.Unix()), "delivered": n(now.Unix()), "readat": null,
			"taxonomy":  m(map[string]types.AttributeValue{"category": s("ops")}),
			"message":   m(map[string]types.AttributeValue{"title": s("flat"), "body": s("b")}),
			"expiredat": n(exp), "tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s("ann"),
		},
	}
	for _, it := range items {
		if _, err := raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	// The other service counted them, as the seed says.
	for _, sk := range []string{"c#*", "c#ops"} {
		_, err := raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(table),
			Key:                       map[string]types.AttributeValue{"pk": s(annPK), "sk": s(sk)},
			UpdateExpression:          aws.String("ADD published :two, #r :zero SET kind = :us"),
			ExpressionAttributeNames:  map[string]string{"#r": "read"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":two": n(2), ":zero": n(0), ":us": s("US")},
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	titles := func(o inbox.ListOptions) []string {
		t.Helper()
		page, err := ib.List(ctx, ann, o)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, msg := range page.Messages {
			state := "unread"
			if msg.IsRead() {
				state = "read"
			}
			out = append(out, msg.Title+" "+state)
		}
		return out
	}
	if diff := cmp.Diff([]string{"flat unread", "nested unread"}, titles(inbox.ListOptions{})); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	// They lack the unread index's attribute: an unread-only List misses
	// them until the stream handler adopts them (see the package docs).
	if got := titles(inbox.ListOptions{UnreadOnly: true}); len(got) != 0 {
		t.Errorf("List(UnreadOnly) before adoption = %v, want none (not in the unread index)", got)
	}
	pump(t, dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn), ib.StreamHandler)
	if diff := cmp.Diff([]string{"flat unread", "nested unread"}, titles(inbox.ListOptions{UnreadOnly: true})); diff != "" {
		t.Errorf("List(UnreadOnly) after the stream handler adopted them (-want +got):\n%s", diff)
	}
	got, err := ib.Get(ctx, ann, flat)
	if err != nil || got.HostSystemID != "legacy-7" || got.Sender != "legacy" || got.Audience.Label != "ops" || !got.DeliveredAt.Equal(now) {
		t.Errorf("Get(flat) = %+v, %v", got, err)
	}
	wantCounts(t, ib, raw, table, ann, counts(2, 0, map[string][2]int64{"ops": {2, 0}}))
	for _, id := range []string{nested, flat} {
		for i, want := range []bool{true, false} {
			if changed, err := ib.MarkRead(ctx, ann, id); err != nil || changed != want {
				t.Errorf("MarkRead(%s) #%d = %v, %v; want %v", id, i+1, changed, err, want)
			}
		}
	}
	if diff := cmp.Diff([]string{"flat read", "nested read"}, titles(inbox.ListOptions{})); diff != "" {
		t.Errorf("List after MarkRead (-want +got):\n%s", diff)
	}
	wantCounts(t, ib, raw, table, ann, counts(2, 2, map[string][2]int64{"ops": {2, 2}}))

	// Marked, they were adopted; deleted, each is accounted as a read
	// message, once.
	for _, id := range []string{nested, flat} {
		if _, err := raw.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s(annPK), "sk": s("m#" + id)}}); err != nil {
			t.Fatal(err)
		}
	}
	pump(t, dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn), ib.StreamHandler)
	wantCounts(t, ib, raw, table, ann, counts(0, 0, nil))
	if diff := cmp.Diff(map[string]rawTally{}, nonZero(rawCounters(t, raw, table, annPK)), cmp.AllowUnexported(rawTally{})); diff != "" {
		t.Errorf("ann's stats after the removals (-want +got):\n%s", diff)
	}
}

// rawS, rawN and rawM are attribute values of another program's items:
// a string, a number and a map.
func rawS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func rawN(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func rawM(kv map[string]types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: kv}
}

// eventsTable returns a fresh table of DynamoDB Local (its client, name
// and stream's ARN) and an Inbox on it whose events got keeps, by
// message ID.
func eventsTable(t *testing.T) (raw *dynamodb.Client, table, arn string, ib *inbox.Inbox, got map[string]inbox.Event) {
	raw = ddblocal.Client(t)
	table, arn = ddblocal.NewTable(t, raw)
	got = map[string]inbox.Event{}
	ib = inbox.New(dynamo.New(raw, table), inbox.WithEvents(func(_ context.Context, e inbox.Event) error {
		got[e.Message.ID] = e
		return nil
	}))
	return raw, table, arn, ib, got
}

// TestItemsReadAsTheStoreReads: another program's items that the stream
// handler could read otherwise are read alike in Get and in the stream's
// events: a title, sender and category holding numbers read as their
// decimals; seed 000's layout with NULL audiences is a message of no
// audience.
func TestItemsReadAsTheStoreReads(t *testing.T) {
	ctx := context.Background()
	raw, table, arn, ib, got := eventsTable(t)
	ann := driver.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	s, n, m := rawS, rawN, rawM
	exp := n(itoa(time.Now().Add(time.Hour).Unix()))
	numbers, flat := ulid.Make().String(), ulid.Make().String()
	want := map[string][3]string{numbers: {"12.50", "42", "7"}, flat: {"flat", "legacy", "ops"}}
	for _, item := range []map[string]types.AttributeValue{{
		"pk": s("t#acmeU#ann#alerts"), "sk": s("m#" + numbers), "kind": s("UM"),
		"headers": m(map[string]types.AttributeValue{
			"id": s(numbers), "sender": n("42"),
			"audiences": m(map[string]types.AttributeValue{"kind": s("users"), "label": s(""), "uids": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("ann")}}}),
		}),
		"message":   m(map[string]types.AttributeValue{"title": n("12.50"), "body": s("b")}),
		"taxonomy":  m(map[string]types.AttributeValue{"category": n("7")}),
		"expiredat": exp, "tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s("ann"),
	}, {
		"pk": s("t#acmeU#ann#alerts"), "sk": s("m#" + flat), "kind": s("UM"),
		"id": s(flat), "sender": s("legacy"), "audiences": &types.AttributeValueMemberNULL{Value: true},
		"message":   m(map[string]types.AttributeValue{"title": s("flat"), "body": s("b")}),
		"taxonomy":  m(map[string]types.AttributeValue{"category": s("ops")}),
		"expiredat": exp, "tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s("ann"),
	}} {
		if _, err := raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	pump(t, dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn), ib.StreamHandler)
	for id, w := range want {
		listed, err := ib.Get(ctx, ann, id)
		if err != nil {
			t.Fatal(err)
		}
		e, ok := got[id]
		if !ok || e.Kind != inbox.EventCreated {
			t.Errorf("%s: event %+v, want created", w[0], e)
		}
		for _, msg := range []inbox.Message{listed, e.Message} {
			if msg.Title != w[0] || msg.Sender != w[1] || msg.Category != w[2] {
				t.Errorf("message has title %q, sender %q, category %q; want %q", msg.Title, msg.Sender, msg.Category, w)
			}
		}
	}
}

// TestItemOfAnotherKindAtMessageKey: another program's item at a
// message's key whose kind is not UM is no record, as the stream handler
// reads none: it is not listed and a mark does not adopt it, so its
// removal, which the handler does not account, leaves Counts equal to
// List. A message of the library's whose kind another program changes
// has a ledger entry, and stays listed as it is counted.
func TestItemOfAnotherKindAtMessageKey(t *testing.T) {
	ctx := context.Background()
	raw := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, raw)
	ib := inbox.New(dynamo.New(raw, table))
	ann := driver.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	annPK := "t#acmeU#ann#alerts"
	s, m := rawS, rawM
	reader := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn)
	if _, err := ib.Publish(ctx, ann.Scope, []string{"ann"}, inbox.Draft{Title: "real"}); err != nil {
		t.Fatal(err)
	}
	id := ulid.Make().String()
	item := map[string]types.AttributeValue{
		"pk": s(annPK), "sk": s("m#" + id), "kind": s("XX"),
		"headers": m(map[string]types.AttributeValue{
			"id": s(id), "sender": s("legacy"),
			"audiences": m(map[string]types.AttributeValue{"kind": s("users"), "label": s(""), "uids": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("ann")}}}),
		}),
		"message":    m(map[string]types.AttributeValue{"title": s("odd"), "body": s("b")}),
		"expiredat":  &types.AttributeValueMemberN{Value: itoa(time.Now().Add(time.Hour).Unix())},
		"tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s("ann"),
	}
	if _, err := raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
	pump(t, reader, ib.StreamHandler)
	check := func(when string) {
		t.Helper()
		page, err := ib.List(ctx, ann, inbox.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Messages) != 1 || page.Messages[0].Title != "real" {
			t.Errorf("%s: List shows %+v, want the one message", when, page.Messages)
		}
		c, err := ib.Counts(ctx, ann)
		if err != nil || c.Tally != tally(1, 0) {
			t.Errorf("%s: Counts = %+v, %v; want the one message, unread", when, c.Tally, err)
		}
	}
	check("before the mark")
	if _, err := ib.Get(ctx, ann, id); !errors.Is(err, inbox.ErrNotFound) {
		t.Errorf("Get of the item of kind XX: %v, want ErrNotFound", err)
	}
	if changed, err := ib.MarkRead(ctx, ann, id); changed || !errors.Is(err, inbox.ErrNotFound) {
		t.Errorf("MarkRead of the item of kind XX = %v, %v; want ErrNotFound", changed, err)
	}
	if _, err := raw.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s(annPK), "sk": s("m#" + id)}}); err != nil {
		t.Fatal(err)
	}
	pump(t, reader, ib.StreamHandler)
	check("after its deletion")

	// The library's own message, whose kind another program changes
	// after: it has a ledger entry, and stays a record, listed as
	// counted.
	res, err := ib.Publish(ctx, ann.Scope, []string{"ann"}, inbox.Draft{Title: "second"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": s(annPK), "sk": s("m#" + res.Message.ID)},
		UpdateExpression: aws.String("SET kind = :x"), ExpressionAttributeValues: map[string]types.AttributeValue{":x": s("XX")},
	}); err != nil {
		t.Fatal(err)
	}
	page, err := ib.List(ctx, ann, inbox.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ib.Counts(ctx, ann)
	if err != nil || len(page.Messages) != 2 || c.Tally != tally(2, 0) {
		t.Errorf("after another program changed the kind of a message of the library's: List shows %d, Counts = %+v, %v; want 2 unread", len(page.Messages), c.Tally, err)
	}
}

// TestUIDsReadAsTheStoreReads: an audience's uids that hold a number
// and a NULL read, on DynamoDB Local, in Get and in the stream's event
// alike: as attributevalue decodes them into a []string.
func TestUIDsReadAsTheStoreReads(t *testing.T) {
	ctx := context.Background()
	raw, table, arn, ib, got := eventsTable(t)
	ann := driver.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	s, m := rawS, rawM
	id := ulid.Make().String()
	item := map[string]types.AttributeValue{
		"pk": s("t#acmeU#ann#alerts"), "sk": s("m#" + id), "kind": s("UM"),
		"headers": m(map[string]types.AttributeValue{
			"id": s(id), "sender": s("legacy"),
			"audiences": m(map[string]types.AttributeValue{"kind": s("users"), "label": s(""), "uids": &types.AttributeValueMemberL{Value: []types.AttributeValue{
				s("ann"), &types.AttributeValueMemberN{Value: "42"}, &types.AttributeValueMemberNULL{Value: true},
			}}}),
		}),
		"message":    m(map[string]types.AttributeValue{"title": s("t"), "body": s("b")}),
		"expiredat":  &types.AttributeValueMemberN{Value: itoa(time.Now().Add(time.Hour).Unix())},
		"tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s("ann"),
	}
	if _, err := raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
	pump(t, dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn), ib.StreamHandler)
	listed, err := ib.Get(ctx, ann, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ann", "42", ""}
	if diff := cmp.Diff(want, listed.Audience.UIDs); diff != "" {
		t.Errorf("Get's uids (-want +got):\n%s", diff)
	}
	e, ok := got[id]
	if !ok || e.Kind != inbox.EventCreated {
		t.Fatalf("event %+v, want created", e)
	}
	if diff := cmp.Diff(want, e.Message.Audience.UIDs); diff != "" {
		t.Errorf("the event's uids (-want +got):\n%s", diff)
	}
}

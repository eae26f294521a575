package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

func TestNewInboxNeedsATable(t *testing.T) {
	if _, err := newInbox(context.Background(), func(string) string { return "" }, nil); err == nil {
		t.Fatal("newInbox without TABLE_NAME succeeded")
	}
}

// TestFunctionAccountsARemoval runs the function's handler as the Lambda
// runtime does, on JSON, with the Inbox built from the environment: a read
// message is deleted, the stream's records are encoded as Lambda's event,
// the counts fall, and the function logs an event per change.
func TestFunctionAccountsARemoval(t *testing.T) {
	raw := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, raw)
	// What the Lambda environment provides, for config.LoadDefaultConfig.
	t.Setenv("AWS_REGION", ddblocal.Region)
	t.Setenv("AWS_ACCESS_KEY_ID", ddblocal.AccessKey(t)) // raw's database
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	env := map[string]string{"TABLE_NAME": table, "DYNAMODB_ENDPOINT": ddblocal.Endpoint(t)}
	ctx := context.Background()
	var logged bytes.Buffer
	ib, err := newInbox(ctx, func(k string) string { return env[k] }, logEvents(&logged))
	if err != nil {
		t.Fatalf("newInbox: %v", err)
	}

	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "Disk full", Category: "ops"})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if ok, err := ib.MarkRead(ctx, ann, res.Message.ID); err != nil || !ok {
		t.Fatalf("MarkRead = %v, %v", ok, err)
	}
	wantCounts(t, ib, ann, inbox.Tally{Total: 1, Read: 1})

	_, err = raw.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}.PK()},
		"sk": &types.AttributeValueMemberS{Value: driver.MessageSK(res.Message.ID)},
	}})
	if err != nil {
		t.Fatalf("delete the message: %v", err)
	}

	fn := lambda.NewHandler(ib.StreamHandler)
	filter := templateFilter(t)
	var invoked []events.DynamoDBEventRecord
	invoke := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		// As the event source mapping does: drop what the filter rejects.
		ev.Records = slices.DeleteFunc(ev.Records, func(r events.DynamoDBEventRecord) bool { return !filter.matches(t, r) })
		if len(ev.Records) == 0 {
			return events.DynamoDBEventResponse{}, nil
		}
		invoked = append(invoked, ev.Records...)
		payload, err := json.Marshal(ev)
		if err != nil {
			return events.DynamoDBEventResponse{}, err
		}
		out, err := fn.Invoke(ctx, payload)
		if err != nil {
			return events.DynamoDBEventResponse{}, err
		}
		var resp events.DynamoDBEventResponse
		err = json.Unmarshal(out, &resp)
		if len(resp.BatchItemFailures) > 0 {
			t.Errorf("the function reported failures: %+v", resp.BatchItemFailures)
		}
		return resp, err
	}
	r := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn)
	// Every write so far is on the stream: the message and its counters,
	// the mark read, the delete.
	if n, err := r.Poll(ctx, invoke); err != nil || n < 7 {
		t.Fatalf("Poll = %d, %v; want at least 7 records, nil", n, err)
	}
	wantCounts(t, ib, ann, inbox.Tally{})
	// Of the stream's records, the template's filter let through only the
	// message's: its insert, its mark read and its delete (not the
	// counters', the ledger entry's, or the entry's deletion by the
	// accounting).
	var names []string
	for _, r := range invoked {
		names = append(names, r.EventName)
	}
	if diff := cmp.Diff([]string{"INSERT", "MODIFY", "REMOVE"}, names); diff != "" {
		t.Errorf("records the function was invoked with (-want +got):\n%s", diff)
	}
	// One JSON line per change.
	var kinds []inbox.EventKind
	for dec := json.NewDecoder(&logged); dec.More(); {
		var e inbox.Event
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("logged event: %v", err)
		}
		if e.Message.ID != res.Message.ID || e.Partition.User != "ann" {
			t.Errorf("logged event %+v is not of ann's message", e)
		}
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]inbox.EventKind{inbox.EventCreated, inbox.EventRead, inbox.EventDeleted}, kinds); diff != "" {
		t.Errorf("logged events (-want +got):\n%s", diff)
	}

	// A removal without an old image (a stream configured without old
	// images) passes the filter and fails, for the on-failure destination.
	bare := events.DynamoDBEventRecord{EventID: "bare", EventName: "REMOVE", Change: events.DynamoDBStreamRecord{
		SequenceNumber: "bare-1", Keys: map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("t#acmeU#ann#alerts"), "sk": events.NewStringAttribute("m#" + res.Message.ID)},
	}}
	if !filter.matches(t, bare) {
		t.Fatal("the template's filter drops a REMOVE without an old image")
	}
	payload, _ := json.Marshal(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{bare}})
	out, err := fn.Invoke(ctx, payload)
	var resp events.DynamoDBEventResponse
	if err != nil || json.Unmarshal(out, &resp) != nil || len(resp.BatchItemFailures) != 1 {
		t.Errorf("a REMOVE without an old image: %s, %v; want it reported as failed", out, err)
	}
}

// filterPattern is the event source mapping's filter criteria: patterns,
// any of which passes a record, of exact-match lists of allowed values or
// {"exists": bool} at the leaves of nested objects, the part of Lambda's
// filter syntax the template uses.
type filterPattern []map[string]any

// templateFilter reads the filter patterns from ../template.yaml.
func templateFilter(t *testing.T) filterPattern {
	t.Helper()
	src, err := os.ReadFile("../template.yaml")
	if err != nil {
		t.Fatalf("read the template: %v", err)
	}
	m := regexp.MustCompile(`(?m)^\s*- Pattern: '(.*)'$`).FindAllSubmatch(src, -1)
	if len(m) == 0 {
		t.Fatal("the template has no filter patterns")
	}
	var out filterPattern
	for _, raw := range m {
		var p map[string]any
		if err := json.Unmarshal(raw[1], &p); err != nil {
			t.Fatalf("filter pattern %s: %v", raw[1], err)
		}
		out = append(out, p)
	}
	return out
}

// matches reports whether Lambda would pass r, encoded as Lambda sends it,
// through the filter: whether any pattern matches it.
func (f filterPattern) matches(t *testing.T, r events.DynamoDBEventRecord) bool {
	t.Helper()
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("encode record: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("decode record: %v", err)
	}
	// match walks pattern over doc, which is nil where the record has no
	// object at that path (only {"exists": false} matches there).
	var match func(pattern, doc map[string]any) bool
	match = func(pattern, doc map[string]any) bool {
		for k, want := range pattern {
			switch want := want.(type) {
			case []any:
				v, present := doc[k]
				ok := false
				for _, w := range want {
					if op, isOp := w.(map[string]any); isOp {
						exists, _ := op["exists"].(bool)
						_, object := v.(map[string]any)
						ok = ok || exists == (present && !object)
						continue
					}
					ok = ok || present && w == v
				}
				if !ok {
					return false
				}
			case map[string]any:
				sub, _ := doc[k].(map[string]any)
				if !match(want, sub) {
					return false
				}
			default:
				t.Fatalf("filter pattern value %v of %q is neither a list nor an object", want, k)
			}
		}
		return true
	}
	for _, p := range f {
		if match(p, doc) {
			return true
		}
	}
	return false
}

func wantCounts(t *testing.T, ib *inbox.Inbox, u inbox.User, want inbox.Tally) {
	t.Helper()
	c, err := ib.Counts(context.Background(), u)
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	if c.Tally != want || c.Categories["ops"] != want {
		t.Fatalf("Counts = %+v (ops %+v), want %+v for both", c.Tally, c.Categories["ops"], want)
	}
}

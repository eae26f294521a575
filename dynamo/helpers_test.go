package dynamo_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// newLocalStore returns a Store on a fresh table of DynamoDB Local, the plain
// client and the table name.
func newLocalStore(t testing.TB, opts ...dynamo.Option) (*dynamo.Store, *dynamodb.Client, string) {
	t.Helper()
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	return dynamo.New(c, table, opts...), c, table
}

// rawQuery returns every item of partition key pk whose sort key begins
// with prefix ("" for all), read with the plain SDK.
func rawQuery(t testing.TB, c *dynamodb.Client, table, pk, prefix string) []map[string]types.AttributeValue {
	t.Helper()
	cond := expression.Key("pk").Equal(expression.Value(pk))
	if prefix != "" {
		cond = cond.And(expression.Key("sk").BeginsWith(prefix))
	}
	expr, err := expression.NewBuilder().WithKeyCondition(cond).Build()
	if err != nil {
		t.Fatal(err)
	}
	pages := dynamodb.NewQueryPaginator(c, &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	var out []map[string]types.AttributeValue
	for pages.HasMorePages() {
		p, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatalf("query %s %s: %v", pk, prefix, err)
		}
		out = append(out, p.Items...)
	}
	return out
}

// rawTally is a counter's two numbers.
type rawTally struct{ published, read int64 }

// rawCounters returns partition pk's stats items by sort key, read raw.
func rawCounters(t testing.TB, c *dynamodb.Client, table, pk string) map[string]rawTally {
	t.Helper()
	out := map[string]rawTally{}
	for _, it := range rawQuery(t, c, table, pk, driver.CounterPrefix) {
		out[attrS(t, it["sk"])] = rawTally{attrN(t, it["published"]), attrN(t, it["read"])}
	}
	return out
}

// rawRecount tallies partition pk's counters from its raw message items, as
// the design defines them: a message (see rawKind) counts published, and
// any read item in a user partition counts read, in c#* and in
// c#<category>; a receipt of a group's message (attribute group) counts
// its read in c#*#<group> and c#<category>#<group> too. Counters whose
// tallies are zero are left out.
func rawRecount(t testing.TB, c *dynamodb.Client, table, pk string) map[string]rawTally {
	t.Helper()
	out := map[string]rawTally{}
	add := func(sk string, p, r int64) {
		v := out[sk]
		v.published += p
		v.read += r
		out[sk] = v
	}
	part, err := driver.ParsePartitionKey(pk)
	if err != nil {
		t.Fatal(err)
	}
	public := part.IsShared()
	for _, it := range rawQuery(t, c, table, pk, driver.MessagePrefix) {
		var p, r int64
		isMsg, isRead := rawKind(it)
		if isMsg {
			p = 1
		}
		if isRead && !public {
			r = 1
		}
		cats := []string{"*"}
		if tax, ok := it["taxonomy"].(*types.AttributeValueMemberM); ok {
			cats = append(cats, attrS(t, tax.Value["category"]))
		}
		for _, cat := range cats {
			add("c#"+cat, p, r)
			if g, ok := it["group"].(*types.AttributeValueMemberS); ok && !isMsg {
				add("c#"+cat+"#"+g.Value, 0, r)
			}
		}
	}
	return out
}

// rawKind tells, as the seeds define it, whether a message item is a
// message (headers, nested as in seed 001 or at the top level as in seed
// 000) rather than a receipt, and whether it is read (readat a number; null
// is unread).
func rawKind(item map[string]types.AttributeValue) (isMsg, isRead bool) {
	_, headers := item["headers"]
	_, flat := item["audiences"]
	_, read := item["readat"].(*types.AttributeValueMemberN)
	return headers || flat, read
}

// nonZero drops counters whose tallies are both zero.
func nonZero(m map[string]rawTally) map[string]rawTally {
	out := map[string]rawTally{}
	for k, v := range m {
		if v != (rawTally{}) {
			out[k] = v
		}
	}
	return out
}

// str returns a string attribute's value.
func attrS(t testing.TB, av types.AttributeValue) string {
	t.Helper()
	s, ok := av.(*types.AttributeValueMemberS)
	if !ok {
		t.Fatalf("attribute %#v is not a string", av)
	}
	return s.Value
}

// num returns a number attribute's value; 0 when absent.
func attrN(t testing.TB, av types.AttributeValue) int64 {
	t.Helper()
	if av == nil {
		return 0
	}
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("attribute %#v is not a number", av)
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// capacityClient is a dynamo.Client that records whether every request
// asked for the total consumed capacity, and sums the capacity units.
type capacityClient struct {
	dynamo.Client
	mu      sync.Mutex
	ops     map[string]int
	missing []string
	units   float64
}

func (c *capacityClient) note(op string, rc types.ReturnConsumedCapacity, cc ...types.ConsumedCapacity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ops == nil {
		c.ops = map[string]int{}
	}
	c.ops[op]++
	if rc != types.ReturnConsumedCapacityTotal {
		c.missing = append(c.missing, op)
	}
	for _, x := range cc {
		c.units += aws.ToFloat64(x.CapacityUnits)
	}
}

func (c *capacityClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := c.Client.BatchGetItem(ctx, in, o...)
	if err == nil {
		c.note("BatchGetItem", in.ReturnConsumedCapacity, out.ConsumedCapacity...)
	}
	return out, err
}

func (c *capacityClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := c.Client.PutItem(ctx, in, o...)
	if err == nil && out.ConsumedCapacity != nil {
		c.note("PutItem", in.ReturnConsumedCapacity, *out.ConsumedCapacity)
	} else {
		c.note("PutItem", in.ReturnConsumedCapacity)
	}
	return out, err
}

func (c *capacityClient) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.Client.Query(ctx, in, o...)
	if err == nil && out.ConsumedCapacity != nil {
		c.note("Query", in.ReturnConsumedCapacity, *out.ConsumedCapacity)
	} else {
		c.note("Query", in.ReturnConsumedCapacity)
	}
	return out, err
}

func (c *capacityClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.Client.UpdateItem(ctx, in, o...)
	if err == nil && out.ConsumedCapacity != nil {
		c.note("UpdateItem", in.ReturnConsumedCapacity, *out.ConsumedCapacity)
	} else {
		c.note("UpdateItem", in.ReturnConsumedCapacity)
	}
	return out, err
}

func (c *capacityClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := c.Client.TransactWriteItems(ctx, in, o...)
	if err == nil {
		c.note("TransactWriteItems", in.ReturnConsumedCapacity, out.ConsumedCapacity...)
	} else {
		c.note("TransactWriteItems", in.ReturnConsumedCapacity)
	}
	return out, err
}

// countsVsList returns an error if Counts or a List of u fails, or if
// Counts differs from what the feed, the archive and the snoozed view
// show.
func countsVsList(ctx context.Context, ib *inbox.Inbox, u inbox.User) error {
	c, err := ib.Counts(ctx, u)
	if err != nil {
		return fmt.Errorf("Counts: %w", err)
	}
	list := func(o inbox.ListOptions) (tl inbox.Tally, n int, err error) {
		o.Limit = inbox.MaxPageSize
		for {
			p, err := ib.List(ctx, u, o)
			if err != nil {
				return tl, n, fmt.Errorf("List(%+v): %w", o, err)
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
				return tl, n, nil
			}
			o.Cursor = p.Cursor
		}
	}
	feed, _, err := list(inbox.ListOptions{})
	if err != nil {
		return err
	}
	_, archived, err := list(inbox.ListOptions{Archived: true})
	if err != nil {
		return err
	}
	_, snoozed, err := list(inbox.ListOptions{Snoozed: true})
	if err != nil {
		return err
	}
	feed.Archived = int64(archived)
	feed.Unseen = c.Unseen // List does not tell unseen: the storetest suite checks it
	if c.Tally != feed || c.Snoozed != int64(snoozed) {
		return fmt.Errorf("Counts %+v, snoozed %d; List shows %+v, snoozed view %d", c.Tally, c.Snoozed, feed, snoozed)
	}
	return nil
}

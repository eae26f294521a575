package dynamo_test

import (
	"context"
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

// smallPages is a Client whose queries of a partition's stats range (from
// driver.CounterPrefix) return two items a page, as DynamoDB returns 1 MB
// a page, and that runs between, once, before the second page of such a
// query, a write of another process.
type smallPages struct {
	dynamo.Client
	mu      sync.Mutex
	between func()
	pages   int
}

func (c *smallPages) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	stats := false
	for _, v := range in.ExpressionAttributeValues {
		if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == driver.CounterPrefix {
			stats = true
		}
	}
	if stats && in.IndexName == nil {
		in.Limit = aws.Int32(2)
		c.mu.Lock()
		c.pages++
		var f func()
		if in.ExclusiveStartKey != nil {
			f, c.between = c.between, nil
		}
		c.mu.Unlock()
		if f != nil {
			f()
		}
	}
	return c.Client.Query(ctx, in, optFns...)
}

// TestStatsOneViewAcrossPages: a Stats read that takes several pages (a
// partition's stats past 1 MB) is one view of the partition, although a
// removal lands between its pages: the counters never count a record
// whose ledger entry the same read no longer holds (a torn read would
// take an expired message out twice, and Counts would say 0 of 1).
func TestStatsOneViewAcrossPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	now := time.Unix(4102444800, 0).UTC()
	clock := func() time.Time { return now }
	other := dynamo.New(c, table)
	ib := inbox.New(other, inbox.WithClock(clock))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	var recs []driver.Record
	for i := range 5 {
		res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "soon gone", Category: "ops", TTL: time.Minute * time.Duration(1+i)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := other.GetRecords(ctx, []driver.Key{{Partition: scope.User("ann").Partition(), ID: res.Message.ID}})
		if err != nil || len(got) != 1 {
			t.Fatalf("GetRecords = %v, %v", got, err)
		}
		recs = append(recs, got[0])
	}
	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "stays", Category: "ops"}); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour) // the five have expired, their removals not yet accounted
	p := scope.User("ann").Partition()

	paged := &smallPages{Client: c}
	store := dynamo.New(paged, table)
	// The newest of the five is removed (TTL, then the stream's
	// accounting) between the first and the second page.
	gone := recs[4]
	paged.between = func() {
		if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: p.PK()}, "sk": &types.AttributeValueMemberS{Value: driver.MessageSK(gone.Message.ID)},
		}}); err != nil {
			t.Error(err)
		}
		if ok, err := other.ApplyRemoval(ctx, driver.Removal{Record: gone, EventID: "ttl-1", Deltas: driver.RemovalDeltasOf(gone), Now: later}); err != nil || !ok {
			t.Errorf("ApplyRemoval = %v, %v", ok, err)
		}
	}
	st, err := store.Stats(ctx, driver.StatsQuery{Partition: p, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if paged.between != nil || paged.pages < 3 {
		t.Fatalf("the read took %d pages and the removal ran: %v; want it between two pages", paged.pages, paged.between == nil)
	}
	var published int64
	for _, c := range st.Counters {
		if c.Category == "" && c.Group == "" && c.Thread == "" {
			published = c.Published
		}
	}
	if published-int64(len(st.Expired)) != 1 {
		t.Errorf("Stats: c#* counts %d published, %d expired entries; want the one that stays counted (one view: 6 and 5, or 5 and 4)", published, len(st.Expired))
	}
	c2, err := inbox.New(store, inbox.WithClock(func() time.Time { return later })).Counts(ctx, scope.User("ann"))
	if err != nil || c2.Total != 1 {
		t.Errorf("Counts after = %+v, %v; want total 1", c2, err)
	}
}

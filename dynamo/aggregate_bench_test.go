package dynamo_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// like is the i-th like of a post, an aggregated message of key "post-1"
// from one of 20 senders.
func like(i int) inbox.Draft {
	d := draft(i)
	d.Aggregate, d.Sender, d.Category = "post-1", "fan"+strconv.Itoa(i%driver.MaxAggregateSenders), "likes"
	return d
}

// BenchmarkAggregate measures a message to one user that joins her item
// of its key (Draft.Aggregate) side by side with what a team would do
// instead:
//
//   - publish/separate: Publish of a message of its own, the feed growing
//     by one (the baseline);
//   - publish/aggregated/item=N: Publish of a like that joins ann's item
//     of N likes (N = 1, 20, 200): the same cost whatever N, since an
//     item keeps at most MaxAggregateSenders senders and
//     MaxAggregateMembers IDs;
//   - naive/rewrite-row: the naive design's write, a per-recipient
//     aggregate row rewritten per message with the SDK (one UpdateItem:
//     the message's content, the count, the senders' set), which keeps
//     no unread counts and no order in her feed (a lower bound);
//   - list/aggregated and list/separate: a page of 20 of ann's items,
//     each of 10 likes, and a page of 20 messages: the same round trips.
func BenchmarkAggregate(b *testing.B) {
	ctx := context.Background()
	setup := func(b *testing.B) (*inbox.Inbox, *meter, driver.Scope, string) { return benchInboxTable(b) }
	b.Run("publish/separate", func(b *testing.B) {
		ib, m, scope, _ := setup(b)
		m.measure()
		b.ResetTimer()
		for i := range b.N {
			if _, err := ib.Publish(ctx, scope, []string{"ann"}, draft(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		m.report(b)
	})
	for _, n := range []int{1, 20, 200} {
		b.Run(fmt.Sprintf("publish/aggregated/item=%d", n), func(b *testing.B) {
			ib, m, scope, _ := setup(b)
			for i := range n {
				if _, err := ib.Publish(ctx, scope, []string{"ann"}, like(i)); err != nil {
					b.Fatal(err)
				}
			}
			m.measure()
			b.ResetTimer()
			for i := range b.N {
				res, err := ib.Publish(ctx, scope, []string{"ann"}, like(n+i))
				if err != nil || res.Message.Count != n+i+1 {
					b.Fatalf("Publish: count %d, %v; want %d", res.Message.Count, err, n+i+1)
				}
			}
			b.StopTimer()
			m.report(b)
		})
	}
	b.Run("naive/rewrite-row", func(b *testing.B) {
		_, m, scope, table := setup(b)
		pk := scope.User("ann").Partition().PK()
		m.measure()
		b.ResetTimer()
		for i := range b.N {
			d := like(i)
			_, err := m.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:        aws.String(table),
				Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "agg#post-1"}},
				UpdateExpression: aws.String("SET title = :t, body = :b, cta = :c, latest = :l ADD n :one, senders :s"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":t":   &types.AttributeValueMemberS{Value: d.Title},
					":b":   &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"host": &types.AttributeValueMemberS{Value: "db"}, "used": &types.AttributeValueMemberN{Value: "0.93"}}},
					":c":   &types.AttributeValueMemberS{Value: d.CTAURI},
					":l":   &types.AttributeValueMemberS{Value: strconv.Itoa(i)},
					":one": &types.AttributeValueMemberN{Value: "1"},
					":s":   &types.AttributeValueMemberSS{Value: []string{d.Sender}},
				},
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		m.report(b)
	})
	for _, aggregated := range []bool{true, false} {
		name := "list/separate"
		if aggregated {
			name = "list/aggregated"
		}
		b.Run(name, func(b *testing.B) {
			ib, m, scope, _ := setup(b)
			for k := range 25 {
				for i := range 10 {
					d := draft(i)
					if aggregated {
						d = like(i)
						d.Aggregate = "post-" + strconv.Itoa(k)
					}
					if _, err := ib.Publish(ctx, scope, []string{"ann"}, d); err != nil {
						b.Fatal(err)
					}
					if !aggregated {
						break
					}
				}
			}
			m.measure()
			b.ResetTimer()
			for range b.N {
				page, err := ib.List(ctx, scope.User("ann"), inbox.ListOptions{Limit: 20})
				if err != nil || len(page.Messages) != 20 {
					b.Fatalf("List: %d, %v", len(page.Messages), err)
				}
				if aggregated && page.Messages[0].Count != 10 {
					b.Fatalf("List: an item of %d likes, want 10", page.Messages[0].Count)
				}
			}
			b.StopTimer()
			m.report(b)
		})
	}
}

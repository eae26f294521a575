package dynamo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
	"github.com/stak/inbox/storetest"
)

// readSizes are the history sizes of the read-cost benchmarks on
// DynamoDB Local; the largest only for the cases the figures are quoted
// at (Local writes some 25 messages a second to one user's partition).
var readSizes = []int{10, 100, 1_000, 10_000}

// BenchmarkReads runs the read-cost benchmarks (storetest.BenchCases) on
// DynamoDB Local, with the units AWS bills: every case at 10, 100 and
// 1,000 messages of history, and the unseen badge and the chat list at
// 10,000.
// BenchmarkReadsNaive is what a team's own design pays for the same
// reads, side by side.
func BenchmarkReads(b *testing.B) {
	newStore := func(t testing.TB, _ func() time.Time) driver.Store {
		c := ddblocal.Client(t)
		table, _ := ddblocal.NewTable(t, c)
		return dynamo.New(c, table)
	}
	for _, c := range storetest.BenchCases {
		for _, n := range readSizes {
			if n < 10_000 || c == "Counts/unseen" || c == "ListThreads/threads" {
				storetest.BenchmarkCase(b, newStore, c, n)
			}
		}
	}
}

// BenchmarkReadsNaive measures the reads a team would write for the same
// cases, with the plain SDK, at the same sizes:
//
//   - Counts/unseen=n: an unseen badge as a Query of the user's messages
//     above the watermark, unread ones counted (Select COUNT with a
//     filter), page after page: the design without counters, whose cost
//     grows with what it counts (BenchmarkReads' Counts/unseen does not);
//   - ListThreads/threads=n: the chat seed's chat list, one Query of the
//     user's 20 newest UserChatMapping items, each with its unread count:
//     the floor, which a chat list that stores group messages once
//     cannot reach (the seed writes each message once per member, see
//     BenchmarkChat).
func BenchmarkReadsNaive(b *testing.B) {
	ctx := context.Background()
	for _, n := range readSizes {
		b.Run("Counts/unseen="+strconv.Itoa(n), func(b *testing.B) {
			c := ddblocal.Client(b)
			table, _ := ddblocal.NewTable(b, c)
			m := &meter{c: c}
			ib := inbox.New(dynamo.New(c, table))
			scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
			ann := scope.User("ann")
			if _, err := ib.MarkSeen(ctx, ann); err != nil {
				b.Fatal(err)
			}
			seen := driver.MessageSK(inbox.SeenAt(time.Now()))
			time.Sleep(time.Second) // what follows is above the watermark
			var g errgroup.Group
			g.SetLimit(16)
			for i := range n {
				g.Go(func() error { _, err := ib.Publish(ctx, scope, []string{"ann"}, draft(i)); return err })
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
			s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
			m.measure()
			b.ResetTimer() // ns/op without the setup's writes
			for range b.N {
				var count int32
				in := &dynamodb.QueryInput{
					TableName: aws.String(table), ConsistentRead: aws.Bool(true), Select: types.SelectCount,
					KeyConditionExpression:    aws.String("pk = :pk AND sk BETWEEN :seen AND :end"),
					FilterExpression:          aws.String("attribute_not_exists(readat) OR readat = :null"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(ann.Partition().PK()), ":seen": s(seen), ":end": s(driver.MessagePrefix + "\xff"), ":null": &types.AttributeValueMemberNULL{Value: true}},
					ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
				}
				for {
					out, err := m.Query(ctx, in)
					if err != nil {
						b.Fatal(err)
					}
					count += out.Count
					if len(out.LastEvaluatedKey) == 0 {
						break
					}
					in.ExclusiveStartKey = out.LastEvaluatedKey
				}
				if count != int32(n) {
					b.Fatalf("counted %d unseen, want %d", count, n)
				}
			}
			m.report(b)
		})
	}
	for _, n := range readSizes {
		b.Run("ListThreads/threads="+strconv.Itoa(n), func(b *testing.B) {
			c := ddblocal.Client(b)
			table, _ := ddblocal.NewTable(b, c)
			m := &meter{c: c}
			s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
			var reqs []types.WriteRequest
			for i := range n {
				item := seedKey("user0", "chat#dm-"+strconv.Itoa(i))
				item["lastMessageAt"], item["lastMessagePreview"] = s(strconv.Itoa(1_000_000+i)), s("Hello!")
				item["unreadCount"] = &types.AttributeValueMemberN{Value: "1"}
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
			}
			for len(reqs) > 0 {
				k := min(len(reqs), 25)
				if _, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs[:k]}}); err != nil {
					b.Fatal(err)
				}
				reqs = reqs[k:]
			}
			m.measure()
			b.ResetTimer() // ns/op without the setup's writes
			for range b.N {
				out, err := m.Query(ctx, &dynamodb.QueryInput{
					TableName: &table, KeyConditionExpression: aws.String("pk = :u"), ScanIndexForward: aws.Bool(false), Limit: aws.Int32(20),
					ExpressionAttributeValues: map[string]types.AttributeValue{":u": s("user0")}, ConsistentRead: aws.Bool(true),
					ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
				})
				if err != nil || len(out.Items) != min(n, 20) {
					b.Fatalf("Query = %d items, %v", len(out.Items), err)
				}
			}
			m.report(b)
		})
	}
}

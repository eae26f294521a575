package dynamo_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
	"github.com/stak/inbox/storetest"
)

// localHarness is a Store on a fresh table of DynamoDB Local that is also
// a storetest.Harness: Delete deletes an item with the plain SDK, as TTL or
// an operator would, and Deliver reads the table's real stream through a
// StreamReader into the StreamHandler of an Inbox of its own (on the
// suite's clock), as the Lambda would; Redeliver reads the whole stream
// again from its trim horizon.
type localHarness struct {
	*dynamo.Store
	raw       *dynamodb.Client
	table     string
	streams   *dynamodbstreams.Client
	streamARN string
	ib        *inbox.Inbox

	mu      sync.Mutex
	reader  *dynamo.StreamReader
	pending int
}

var _ storetest.Harness = (*localHarness)(nil)

// newConformanceStore returns a localHarness on a fresh table. Records
// expire by DynamoDB's TTL in real time, which the suite's far-future clock
// never reaches, so expired records stay until the suite deletes them.
func newConformanceStore(t testing.TB, now func() time.Time) inbox.Store {
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	store := dynamo.New(c, table)
	streams := ddblocal.StreamsClient(t)
	return &localHarness{
		Store: store, raw: c, table: table, streams: streams, streamARN: arn,
		ib:     inbox.New(store, inbox.WithClock(now)),
		reader: dynamo.NewStreamReader(streams, arn),
	}
}

// Delete deletes the item at k and reports whether it was there.
func (h *localHarness) Delete(ctx context.Context, k inbox.Key) (bool, error) {
	out, err := h.raw.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(h.table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: k.Partition.PK()},
			"sk": &types.AttributeValueMemberS{Value: inbox.MessageSK(k.ID)},
		},
		ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil || len(out.Attributes) == 0 {
		return false, err
	}
	h.mu.Lock()
	h.pending++
	h.mu.Unlock()
	return true, nil
}

// Deliver hands the stream's new records to the Inbox's StreamHandler.
func (h *localHarness) Deliver(ctx context.Context) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, err := h.reader.Poll(ctx, h.ib.StreamHandler)
	if err == nil {
		h.pending = 0
	}
	return n, err
}

// Redeliver hands every record of the stream to the StreamHandler again.
func (h *localHarness) Redeliver(ctx context.Context) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return dynamo.NewStreamReader(h.streams, h.streamARN).Poll(ctx, h.ib.StreamHandler)
}

// Pending reports how many deletions have not been delivered.
func (h *localHarness) Pending() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pending
}

// TestConformance runs the conformance suite every Store must pass.
func TestConformance(t *testing.T) {
	ddblocal.Endpoint(t)
	storetest.Run(t, newConformanceStore)
}

// TestConformanceProperty runs random operation sequences against the
// suite's model, with removals delivered late, twice and during Recount
// through the table's real stream.
func TestConformanceProperty(t *testing.T) {
	ddblocal.Endpoint(t)
	storetest.RunProperty(t, newConformanceStore, 300)
}

// TestConformancePropertyCached is TestConformanceProperty with the
// Inbox's shared-partition cache on.
func TestConformancePropertyCached(t *testing.T) {
	ddblocal.Endpoint(t)
	storetest.RunPropertyCached(t, newConformanceStore, 300)
}

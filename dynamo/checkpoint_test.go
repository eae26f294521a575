package dynamo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// TestTableCheckpoints: checkpoints saved in the table load back per
// stream and consumer, never move back, refuse bad input writing nothing,
// and a malformed item is reported while the others load.
func TestTableCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	store := dynamo.New(c, table)
	if _, err := store.Checkpoints("a#b"); !errors.Is(err, driver.ErrInvalidKey) {
		t.Errorf("consumer a#b: %v, want ErrInvalidKey", err)
	}
	cp, err := store.Checkpoints("worker")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := store.Checkpoints("other")
	for _, s := range []struct {
		cp              *dynamo.TableCheckpoints
		arn, shard, seq string
	}{
		{cp, "arn1", "shard-1", "900"},
		{cp, "arn1", "shard-1", "1000"}, // forward: 4 digits after 3
		{cp, "arn1", "shard-1", "999"},  // back: kept at 1000
		{cp, "arn1", "shard-2", "5"},
		{cp, "arn2", "shard-1", "7"},
		{other, "arn1", "shard-1", "1"},
	} {
		if err := s.cp.Save(ctx, s.arn, s.shard, s.seq); err != nil {
			t.Fatalf("Save %+v: %v", s, err)
		}
	}
	for _, bad := range []string{"", "12a", "-1", "12345678901234567890123456789012345678901"} {
		if err := cp.Save(ctx, "arn1", "shard-3", bad); !errors.Is(err, driver.ErrInvalidInput) {
			t.Errorf("Save of sequence %q: %v, want ErrInvalidInput", bad, err)
		}
	}
	got, err := cp.Load(ctx, "arn1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"shard-1": "1000", "shard-2": "5"}, got); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}

	// Someone edits a checkpoint into nonsense: the others still load.
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: dynamo.CheckpointPK}, "sk": &types.AttributeValueMemberS{Value: dynamo.CheckpointPrefix + "worker#arn1#shard-2"}},
		UpdateExpression:          aws.String("SET seq = :x"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":x": &types.AttributeValueMemberS{Value: "oops"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err = cp.Load(ctx, "arn1")
	if !errors.Is(err, driver.ErrInvalidInput) || !cmp.Equal(map[string]string{"shard-1": "1000"}, got) {
		t.Errorf("Load with a malformed item = %v, %v; want shard-1 and ErrInvalidInput", got, err)
	}
}

// TestStreamHandlerIgnoresCheckpointRecords: a checkpoint item's records
// (a Lambda function on a stream that a worker also checkpoints into sees
// them) change nothing and make no event.
func TestStreamHandlerIgnoresCheckpointRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	store := dynamo.New(c, table)
	cp, _ := store.Checkpoints("worker")
	if err := cp.Save(ctx, arn, "shard-1", "1"); err != nil {
		t.Fatal(err)
	}
	if err := cp.Save(ctx, arn, "shard-1", "2"); err != nil {
		t.Fatal(err)
	}
	var evs []inbox.Event
	ib := inbox.New(store, inbox.WithEvents(func(_ context.Context, e inbox.Event) error { evs = append(evs, e); return nil }))
	var recs []events.DynamoDBEventRecord
	if _, err := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn).Poll(ctx, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		recs = append(recs, ev.Records...)
		return events.DynamoDBEventResponse{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 0 {
		t.Errorf("the reader handed %d checkpoint records to its handler", len(recs))
	}
	// What a Lambda function would be handed: read the records raw.
	raw := rawStream(t, arn)
	if len(raw) != 2 {
		t.Fatalf("%d raw records, want 2 (INSERT, MODIFY)", len(raw))
	}
	resp, err := ib.StreamHandler(ctx, events.DynamoDBEvent{Records: raw})
	if err != nil || len(resp.BatchItemFailures) != 0 || len(evs) != 0 {
		t.Errorf("StreamHandler of checkpoint records = %+v, %v, events %v; want nothing", resp, err, evs)
	}
}

// rawStream reads every record of the stream arn on DynamoDB Local with
// the Streams API itself, nothing skipped, as Lambda records.
func rawStream(t *testing.T, arn string) []events.DynamoDBEventRecord {
	t.Helper()
	ctx := context.Background()
	s := ddblocal.StreamsClient(t)
	d, err := s.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	var out []events.DynamoDBEventRecord
	for _, sh := range d.StreamDescription.Shards {
		it, err := s.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for range 5 {
			page, err := s.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Records {
				er, err := dynamo.EventRecord(r, arn)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, er)
			}
			if iter = page.NextShardIterator; iter == nil {
				break
			}
		}
	}
	return out
}

package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stak/inbox/driver"
)

// Checkpoints keeps a StreamReader's position in each shard of a stream:
// the sequence number of the last record its handler accepted. Its methods
// are called from one goroutine at a time.
type Checkpoints interface {
	// Load returns the checkpoints held for the shards of streamARN, by
	// shard ID. An error with some checkpoints means those were read and
	// the others could not be (the reader reads those shards from their
	// start).
	Load(ctx context.Context, streamARN string) (map[string]string, error)
	// Save records seq as shardID's checkpoint, unless a later one is
	// held: a checkpoint never moves back.
	Save(ctx context.Context, streamARN, shardID, seq string) error
}

// Checkpoint records, in the table itself (see the package documentation):
// one item per consumer and shard, under one partition key that no tenant
// can reach (every tenant's keys start with "t#"), with kind CP, so that
// the inbox's StreamHandler and its event filters ignore it, and an expiry
// (checkpointTTL after its last save) that drops the checkpoints of
// shards long gone.
const (
	CheckpointPK     = "s#stream"
	CheckpointPrefix = "cp#" // cp#<consumer>#<stream ARN>#<shard ID>
	kindCheckpoint   = "CP"
	// checkpointTTL outlives the stream's 24 hours: a shard whose
	// checkpoint has expired holds no record from before it.
	checkpointTTL = 48 * time.Hour
	// seqDigits is the most digits a stream sequence number has; pos holds
	// it zero-padded to that width, so that positions compare as strings.
	seqDigits = 40
)

// TableCheckpoints keeps a StreamReader's checkpoints in the Store's
// table, as one small item per shard (about 0.3 KB: one write unit per
// save). It is safe for concurrent use.
type TableCheckpoints struct {
	store    *Store
	consumer string
}

// Checkpoints returns the checkpoints of the stream consumer named
// consumer (one name per worker pool: "inbox-stream" for the inbox
// command), kept in the Store's table. The name follows the rules of a key
// (printable, no '#', at most 128 bytes); a bad one is ErrInvalidKey.
func (s *Store) Checkpoints(consumer string) (*TableCheckpoints, error) {
	if err := driver.ValidateKey("stream consumer", consumer); err != nil {
		return nil, err
	}
	return &TableCheckpoints{store: s, consumer: consumer}, nil
}

// prefix is the sort-key prefix of the consumer's checkpoints of streamARN.
func (c *TableCheckpoints) prefix(streamARN string) string {
	return CheckpointPrefix + c.consumer + "#" + streamARN + "#"
}

// Load reads the consumer's checkpoints of streamARN: one Query, about one
// read unit per 4 KB of checkpoints (a few dozen shards). An item that is
// not a well-formed checkpoint is left out, and reported in an error
// wrapping ErrInvalidInput alongside the others.
func (c *TableCheckpoints) Load(ctx context.Context, streamARN string) (map[string]string, error) {
	prefix := c.prefix(streamARN)
	in := &dynamodb.QueryInput{
		TableName:              aws.String(c.store.table),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :prefix)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":     &types.AttributeValueMemberS{Value: CheckpointPK},
			":prefix": &types.AttributeValueMemberS{Value: prefix},
		},
		ConsistentRead: aws.Bool(true),
	}
	out := map[string]string{}
	var bad []string
	for {
		res, err := c.store.client.Query(ctx, in)
		if err != nil {
			return out, fmt.Errorf("dynamo: load checkpoints: %w", err)
		}
		for _, item := range res.Items {
			sk, _ := item["sk"].(*types.AttributeValueMemberS)
			seq, _ := item["seq"].(*types.AttributeValueMemberS)
			if sk == nil || seq == nil || validSequence(seq.Value) != nil {
				if sk != nil {
					bad = append(bad, sk.Value)
				}
				continue
			}
			out[strings.TrimPrefix(sk.Value, prefix)] = seq.Value
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("%w: checkpoint items without a valid sequence number: %s", driver.ErrInvalidInput, strings.Join(bad, ", "))
	}
	return out, nil
}

// Save writes shardID's checkpoint (one PutItem, one write unit), unless
// the table holds a later one for it (another reader of the same consumer
// got further): then it changes nothing and returns nil. A seq that is not
// a sequence number is ErrInvalidInput, and nothing is written.
func (c *TableCheckpoints) Save(ctx context.Context, streamARN, shardID, seq string) error {
	if err := validSequence(seq); err != nil {
		return err
	}
	if shardID == "" {
		return fmt.Errorf("%w: checkpoint without a shard ID", driver.ErrInvalidInput)
	}
	pos := strings.Repeat("0", seqDigits-len(seq)) + seq
	now := time.Now()
	_, err := c.store.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(c.store.table),
		Item: map[string]types.AttributeValue{
			"pk":                &types.AttributeValueMemberS{Value: CheckpointPK},
			"sk":                &types.AttributeValueMemberS{Value: c.prefix(streamARN) + shardID},
			"kind":              &types.AttributeValueMemberS{Value: kindCheckpoint},
			"seq":               &types.AttributeValueMemberS{Value: seq},
			"pos":               &types.AttributeValueMemberS{Value: pos},
			"saved":             &types.AttributeValueMemberS{Value: now.UTC().Format(time.RFC3339Nano)},
			driver.TTLAttribute: &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(checkpointTTL).Unix(), 10)},
		},
		// A checkpoint moves forward only. NOT (pos >= :pos) also holds
		// when pos is missing or not a string.
		ConditionExpression:       aws.String("NOT (pos >= :pos)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pos": &types.AttributeValueMemberS{Value: pos}},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dynamo: put checkpoint item: %w", err) // the reader names the shard
	}
	return nil
}

// validSequence checks that seq is a stream sequence number: 1 to 40
// decimal digits.
func validSequence(seq string) error {
	if seq == "" || len(seq) > seqDigits || strings.Trim(seq, "0123456789") != "" {
		return fmt.Errorf("%w: stream sequence number %q", driver.ErrInvalidInput, seq)
	}
	return nil
}

// isCheckpointRecord reports whether a stream record's keys are those of a
// checkpoint item: a reader skips them rather than hand them to its
// handler, so that saving a checkpoint does not feed the stream it reads.
func isCheckpointRecord(keys map[string]streamtypes.AttributeValue) bool {
	pk, ok := keys["pk"].(*streamtypes.AttributeValueMemberS)
	return ok && pk.Value == CheckpointPK
}

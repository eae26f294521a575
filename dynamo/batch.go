package dynamo

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxBatchGet is DynamoDB's limit on the keys of one BatchGetItem.
const maxBatchGet = 100

// maxIdleRounds is how many times in a row a batch may come back with
// unprocessed items and no progress before the Store gives up.
const maxIdleRounds = 8

// errUnprocessed reports a batch whose unprocessed items never went
// through.
var errUnprocessed = errors.New("dynamo: batch items left unprocessed after repeated attempts")

// batchGet reads the items at keys (at most maxBatchGet, no duplicates)
// with BatchGetItem, requesting unprocessed keys again after a backoff.
func (s *Store) batchGet(ctx context.Context, keys []map[string]types.AttributeValue, consistent bool) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	req := map[string]types.KeysAndAttributes{s.table: {Keys: keys, ConsistentRead: aws.Bool(consistent)}}
	for idle := 0; len(req) > 0 && len(req[s.table].Keys) > 0; {
		res, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems:           req,
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		if err != nil {
			return nil, err
		}
		got := res.Responses[s.table]
		out = append(out, got...)
		req = res.UnprocessedKeys
		if len(req) == 0 {
			break
		}
		if idle, err = s.pause(ctx, idle, len(got) > 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pause waits before a batch's unprocessed keys are sent again: longer
// with each round in a row that made no progress. It returns the new count
// of such rounds, or an error when there were too many or ctx ended.
func (s *Store) pause(ctx context.Context, idle int, progressed bool) (int, error) {
	if progressed {
		idle = 0
	} else {
		idle++
	}
	if idle > maxIdleRounds {
		return idle, errUnprocessed
	}
	t := time.NewTimer(min(50*time.Millisecond<<idle, 2*time.Second))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return idle, ctx.Err()
	case <-t.C:
		return idle, nil
	}
}

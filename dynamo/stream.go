package dynamo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stak/inbox"
)

// StreamsClient is the part of the DynamoDB Streams API a StreamReader
// uses; *dynamodbstreams.Client satisfies it. A StreamReader calls it from
// one goroutine at a time.
type StreamsClient interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// StreamHandler handles a batch of stream records the way a Lambda function
// on a DynamoDB event source mapping does: (*inbox.Inbox).StreamHandler is
// one. A StreamReader calls it for one batch at a time.
type StreamHandler func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// streamBatchSize is the most records handed to the handler at once: the
// default batch size of a Lambda event source mapping on a DynamoDB stream.
const streamBatchSize = 100

// StreamReader reads a table's DynamoDB stream through the Streams API and
// hands its records to a StreamHandler, as Lambda would: in batches, in
// order within each shard, with the same event shape, and honouring partial
// batch failures. It stands in for the event source mapping where there is
// no Lambda, e.g. in tests against DynamoDB Local or in a long-running
// worker.
//
// It keeps a checkpoint per shard in memory: the sequence number of the
// last record the handler accepted. A new StreamReader starts every shard
// at TRIM_HORIZON, the oldest record the stream keeps (24 hours on AWS), so
// it delivers again what an earlier reader delivered; the handler must be
// idempotent, as inbox's is.
//
// A StreamReader is safe for concurrent use; its Polls run one at a time,
// and the handler is called for one batch at a time.
type StreamReader struct {
	client    StreamsClient
	streamARN string

	mu     sync.Mutex // serialises Poll and guards shards
	shards map[string]*shardState
}

// shardState is what a StreamReader knows of one shard.
type shardState struct {
	id     string
	parent string
	// closed is set once DescribeStream reports an ending sequence number:
	// the shard takes no new records.
	closed bool
	// checkpoint is the sequence number of the last record accepted; ""
	// reads from TRIM_HORIZON.
	checkpoint string
	// iter is the shard iterator the last page read returned, where the
	// next Poll resumes; nil gets a new one from the checkpoint.
	iter *string
	// done is set when a closed shard has been read to its end.
	done bool
}

// maxEmptyPages is how many empty pages in a row one Poll follows in an
// open shard before it ends the pass over it: GetRecords may return empty
// pages while records follow further in the shard.
const maxEmptyPages = 5

// NewStreamReader returns a reader of the stream streamARN (as returned by
// CreateTable, or a table's LatestStreamArn) that starts every shard at
// TRIM_HORIZON.
func NewStreamReader(c StreamsClient, streamARN string) *StreamReader {
	return &StreamReader{client: c, streamARN: streamARN, shards: map[string]*shardState{}}
}

// Poll makes one pass over every shard of the stream: it reads each from
// where the last Poll stopped to its current end, at most 100 records
// (Lambda's default batch size) per call of h, and returns how many
// records h accepted. The Streams API may return empty pages before
// records: Poll follows the iterators across a few of them in a row and
// keeps each shard's iterator for the next Poll, so a stretch of empty
// pages delays records but never stalls them. A parent shard is read to its
// end before its children, so the records of one item stay in order.
//
// If h reports batch item failures (by sequence number), the checkpoint
// advances past the records before the first failed one, and that record
// and everything after it in its shard are delivered again on the next
// Poll; the other shards go on. If h returns an error, or reports an item
// identifier that is not in the batch, the batch is not accepted (its
// checkpoint is unchanged) and Poll stops and returns the error.
//
// A shard whose checkpoint the stream has trimmed (records older than 24
// hours) resumes at its trim horizon, as Lambda does: those records are
// gone. DynamoDB Local's TTL deletions, whose eventName is not a known
// operation, are delivered as the REMOVE records AWS sends for them.
func (r *StreamReader) Poll(ctx context.Context, h StreamHandler) (delivered int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	order, err := r.refreshShards(ctx)
	if err != nil {
		return 0, err
	}
	visited := make(map[string]bool, len(order))
	for _, id := range order {
		n, err := r.readLineage(ctx, h, r.shards[id], visited)
		delivered += n
		if err != nil {
			return delivered, err
		}
	}
	return delivered, nil
}

// Run calls Poll at once and then every interval until ctx is done, when it
// returns ctx.Err(). It returns Poll's error if a Poll fails otherwise.
func (r *StreamReader) Run(ctx context.Context, h StreamHandler, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("%w: stream poll interval %v is not positive", inbox.ErrInvalidInput, every)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := r.Poll(ctx, h); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// refreshShards lists every shard of the stream (all pages of
// DescribeStream, children included), records new ones, forgets those the
// stream no longer lists (trimmed), and returns the shard IDs in listing
// order. r.mu must be held.
func (r *StreamReader) refreshShards(ctx context.Context) ([]string, error) {
	var order []string
	listed := map[string]bool{}
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(r.streamARN)}
	for {
		out, err := r.client.DescribeStream(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("dynamo: describe stream: %w", err)
		}
		if out.StreamDescription == nil {
			return nil, errors.New("dynamo: describe stream: no stream description")
		}
		for _, sh := range out.StreamDescription.Shards {
			id := aws.ToString(sh.ShardId)
			if id == "" || listed[id] {
				continue
			}
			listed[id] = true
			order = append(order, id)
			s := r.shards[id]
			if s == nil {
				s = &shardState{id: id, parent: aws.ToString(sh.ParentShardId)}
				r.shards[id] = s
			}
			if sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil {
				s.closed = true
			}
		}
		last := out.StreamDescription.LastEvaluatedShardId
		if last == nil || *last == "" {
			break
		}
		in.ExclusiveStartShardId = last
	}
	for id := range r.shards {
		if !listed[id] {
			delete(r.shards, id)
		}
	}
	return order, nil
}

// readLineage reads s after its parent, if the stream still lists the
// parent: s is read only once the parent is done. r.mu must be held.
func (r *StreamReader) readLineage(ctx context.Context, h StreamHandler, s *shardState, visited map[string]bool) (int, error) {
	if visited[s.id] {
		return 0, nil
	}
	visited[s.id] = true
	delivered := 0
	if p := r.shards[s.parent]; p != nil && s.parent != s.id {
		n, err := r.readLineage(ctx, h, p, visited)
		delivered += n
		if err != nil || !p.done {
			return delivered, err
		}
	}
	n, err := r.readShard(ctx, h, s)
	return delivered + n, err
}

// readShard delivers s's records from where the last Poll stopped until it
// has caught up (an open shard returned maxEmptyPages empty pages in a
// row), reached its end (a closed shard has no next iterator), or a batch
// was not wholly accepted. It resumes with the iterator the last page
// returned, or, when there is none or it has expired (iterators live 15
// minutes) or points at trimmed records, with a new one after the
// checkpoint. r.mu must be held.
func (r *StreamReader) readShard(ctx context.Context, h StreamHandler, s *shardState) (int, error) {
	if s.done {
		return 0, nil
	}
	iter, kept := s.iter, s.iter != nil
	if !kept {
		var err error
		if iter, err = r.iterator(ctx, s); err != nil {
			return 0, err
		}
	}
	delivered, empties := 0, 0
	for iter != nil {
		out, err := r.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(streamBatchSize)})
		var expired *types.ExpiredIteratorException
		var trimmed *types.TrimmedDataAccessException
		if kept && (errors.As(err, &expired) || errors.As(err, &trimmed)) {
			s.iter, kept = nil, false
			if iter, err = r.iterator(ctx, s); err != nil {
				return delivered, err
			}
			continue
		}
		kept = false
		if err != nil {
			return delivered, fmt.Errorf("dynamo: records of shard %s: %w", s.id, err)
		}
		if len(out.Records) > 0 {
			n, complete, err := r.deliver(ctx, h, s, out.Records)
			delivered += n
			if err != nil || !complete {
				s.iter = nil // deliver again from the checkpoint
				return delivered, err
			}
			empties = 0
		} else {
			empties++
		}
		s.iter = out.NextShardIterator
		if out.NextShardIterator == nil {
			s.done = true
			return delivered, nil
		}
		if len(out.Records) == 0 && !s.closed && empties >= maxEmptyPages {
			return delivered, nil
		}
		iter = out.NextShardIterator
	}
	return delivered, nil
}

// iterator returns a new iterator of s after its checkpoint, or at its
// trim horizon when it has none or the stream has trimmed it.
func (r *StreamReader) iterator(ctx context.Context, s *shardState) (*string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{
		StreamArn:         aws.String(r.streamARN),
		ShardId:           aws.String(s.id),
		ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
	}
	if s.checkpoint != "" {
		in.ShardIteratorType = types.ShardIteratorTypeAfterSequenceNumber
		in.SequenceNumber = aws.String(s.checkpoint)
	}
	it, err := r.client.GetShardIterator(ctx, in)
	var trimmed *types.TrimmedDataAccessException
	if errors.As(err, &trimmed) && s.checkpoint != "" {
		in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeTrimHorizon, nil
		it, err = r.client.GetShardIterator(ctx, in)
	}
	if err != nil {
		return nil, fmt.Errorf("dynamo: shard iterator of %s: %w", s.id, err)
	}
	return it.ShardIterator, nil
}

// deliver hands one batch of s's records to h and advances s's checkpoint
// past the records h accepted. It returns how many it accepted and whether
// that was all of them.
func (r *StreamReader) deliver(ctx context.Context, h StreamHandler, s *shardState, recs []types.Record) (int, bool, error) {
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, len(recs))}
	for i, rec := range recs {
		er, err := eventRecord(rec, r.streamARN)
		if err != nil {
			return 0, false, fmt.Errorf("dynamo: shard %s: %w", s.id, err)
		}
		ev.Records[i] = er
	}
	resp, err := h(ctx, ev)
	if err != nil {
		return 0, false, fmt.Errorf("dynamo: stream handler: %w", err)
	}
	accepted := len(recs)
	if len(resp.BatchItemFailures) > 0 {
		index := make(map[string]int, len(recs))
		for i, er := range ev.Records {
			index[er.Change.SequenceNumber] = i
		}
		for _, f := range resp.BatchItemFailures {
			i, ok := index[f.ItemIdentifier]
			if !ok {
				return 0, false, fmt.Errorf("%w: stream handler reported failed item %q, which is not in the batch", inbox.ErrInvalidInput, f.ItemIdentifier)
			}
			accepted = min(accepted, i)
		}
	}
	if accepted > 0 {
		s.checkpoint = ev.Records[accepted-1].Change.SequenceNumber
	}
	return accepted, accepted == len(recs), nil
}

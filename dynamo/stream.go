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
	"github.com/stak/inbox/driver"
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

// A shard started at its latest record is probed (see startProbe) with
// pages of probeBatchSize records, the most GetRecords returns, at most
// probePages of them a pass.
const (
	probeBatchSize = 1000
	probePages     = 10
)

// maxEmptyPages is how many empty pages in a row a pass follows in a shard
// it has just opened an iterator on, before it leaves the shard until the
// next pass: GetRecords may return empty pages while records follow
// further in the shard. An iterator kept from the last pass sits at the
// shard's end, and one empty page of it means the shard is idle.
const maxEmptyPages = 5

// StreamReader reads a table's DynamoDB stream through the Streams API and
// hands its records to a StreamHandler, as a Lambda event source mapping
// would: in batches of at most 100, in order within each shard (a parent
// shard before its children), with the same event shape, honouring
// partial batch failures. It is the worker for a service that does not
// run the handler in Lambda, and what tests against DynamoDB Local read
// the stream with.
//
// It never stops on an error. A failed Streams API call is retried (after
// the SDK's own retries) with exponential backoff and jitter; an expired or
// trimmed iterator is renewed from the checkpoint; each error goes to
// ReaderHooks.OnError. A record the handler fails is tried again, with
// backoff, a bounded number of times (WithRetries: by default 5 more,
// about half a minute), then handed to ReaderHooks.OnFailure and passed,
// so that one poison record cannot block its shard; the records before it
// in the batch are accepted, those after it come again.
//
// It keeps a checkpoint per shard, the sequence number of the last record
// accepted: in memory, and with WithCheckpoints in a Checkpoints (such as
// a record in the table itself, Store.Checkpoints), so that a new reader
// resumes where the last one stopped rather than at the stream's start.
// A reader stopped (its context done) still saves the checkpoint of what
// the handler had accepted, waiting at most 5 s for the save; a record the
// handler failed as the reader stopped is no try, and is never passed for
// it. Delivery is at least once: a record accepted but not checkpointed
// (its save failed, or the process died) comes again, and the handler
// must be idempotent, as inbox's is.
//
// One reader per stream and consumer name is the supported setup; scale
// out with Lambda's event source mapping, which shares shards among
// invocations. Two readers of one consumer each read every shard: every
// record reaches the handler at least once (most twice), the inbox's
// accounting stays exact (it applies each removal once), events are
// duplicated, and the checkpoint is the furthest either reached.
//
// A StreamReader is safe for concurrent use; its passes run one at a
// time, and the handler is called for one batch at a time.
type StreamReader struct {
	client    StreamsClient
	streamARN string
	cfg       readerConfig

	mu sync.Mutex // serialises passes and guards what follows
	// loaded is set once the checkpoints have been loaded (or there are
	// none to load); loadErrs counts failed loads, loadAt is when to try
	// again.
	loaded   bool
	loadErrs int
	loadAt   time.Time
	saved    map[string]string // checkpoints loaded, by shard, until used
	// described is set after the first listing of the shards; describeAt
	// is when Run lists them again, describeErrs counts failed listings.
	described    bool
	describeAt   time.Time
	describeErrs int
	shards       map[string]*shardState
	order        []string // shard IDs in listing order
	// pending records the requests of the pass under way since its last
	// batch: the next batch's reads (see Poll).
	pending *driver.RequestLog
	// saveErrs are the failed saves of the pass under way, reported
	// already, for it to return.
	saveErrs []error
}

// shardState is what a StreamReader knows of one shard.
type shardState struct {
	id     string
	parent string
	// closed is set once DescribeStream reports an ending sequence number:
	// the shard takes no new records.
	closed bool
	// start is the iterator type used when there is no checkpoint:
	// TRIM_HORIZON, or LATEST for a shard open when a FromLatest reader
	// started, until probe has found where it stood then.
	start types.ShardIteratorType
	// checkpoint is the sequence number of the last record accepted (or
	// skipped); "" reads from at, else from start.
	checkpoint string
	// at is the first record read from a shard started at LATEST, while it
	// has no checkpoint: a new iterator starts at it.
	at string
	// probe, for a shard started at LATEST, finds the last record written
	// before the reader started, until a first record comes.
	probe *startProbe
	// stored is the last checkpoint saved to Checkpoints.
	stored string
	// iter is the shard iterator the last page read returned, where the
	// next pass resumes; nil gets a new one from the checkpoint.
	iter *string
	// done is set when a closed shard has been read to its end.
	done bool
	// active is when the shard last returned records (or was found).
	active time.Time
	// notBefore is when Run next reads the shard: after a failure's
	// backoff, or the idle interval.
	notBefore time.Time
	// errs counts failed calls in a row.
	errs int
	// failing is the sequence number of the record the handler failed,
	// failures how many times in a row.
	failing  string
	failures int
}

// startProbe reads a shard started at LATEST from its trim horizon, handing
// nothing to the handler, to its end: the records it has read by then
// were written before the reader started, unless the shard's own iterator
// returns records after that (see readShard). Until it is done, nothing
// but that iterator marks the shard's start position: a failed read keeps
// it, and a renewed one starts at LATEST again.
type startProbe struct {
	iter    *string // where the next read goes on; nil starts a new one
	last    string  // sequence number of the last record read
	read    bool    // iter has returned records
	empties int     // empty pages in a row
	done    bool    // the shard's end was reached
}

// NewStreamReader returns a reader of the stream streamARN (as returned by
// CreateTable, or a table's LatestStreamArn). Without options it keeps its
// checkpoints in memory and starts every shard at its trim horizon.
func NewStreamReader(c StreamsClient, streamARN string, opts ...ReaderOption) *StreamReader {
	return &StreamReader{
		client: streamsReporting{StreamsClient: c, table: streamTable(streamARN)}, streamARN: streamARN,
		cfg: newReaderConfig(opts), shards: map[string]*shardState{},
	}
}

// requests returns ctx for a request of the reader's: the pass's pending
// requests record it. r.mu must be held.
func (r *StreamReader) requests(ctx context.Context) context.Context {
	return driver.WithRequestLog(ctx, r.pending)
}

// Poll makes one pass over every shard of the stream, at once: it lists
// the shards, reads each from where the last pass stopped to its current
// end, at most 100 records per call of h, and returns how many records h
// accepted. The Streams API may return empty pages before records: a pass
// follows a fresh iterator across a few of them in a row and keeps each
// shard's iterator for the next pass, so a stretch of empty pages delays
// records but never stalls them. A parent shard is read to its end before
// its children, so the records of one item stay in order.
//
// If h reports batch item failures (by sequence number), the checkpoint
// advances past the records before the first failed one, and that record
// and everything after it in its shard are delivered again on the next
// pass (after the retry backoff in Run; at once in Poll), until the record
// has failed on every try (see WithRetries) and is passed. If h returns an
// error, or reports an item identifier that is not in the batch, the
// whole batch has failed.
//
// The handler's context carries the requests the reader made to fetch
// each batch (driver.WithBatchRequests): since its previous batch in the
// pass, its DescribeStream, GetShardIterator and GetRecords calls and its
// checkpoints' loads and saves, each reported as a driver.Request (the
// Inbox's StreamHandler reports them to its hooks with the batch's
// operation: inbox.OperationReport.StreamReads). Requests after a pass's
// last batch (an idle shard's empty pages) are reported with none.
//
// Errors do not end the pass: each goes to ReaderHooks.OnError, the
// other shards go on, and Poll returns them all (errors.Join). A shard
// whose checkpoint the stream has trimmed (records older than 24 hours)
// resumes at its trim horizon, as Lambda does: those records are gone.
// DynamoDB Local's TTL deletions, whose eventName is not a known
// operation, are delivered as the REMOVE records AWS sends for them.
// Checkpoint records (see Checkpoints) are skipped.
func (r *StreamReader) Poll(ctx context.Context, h StreamHandler) (delivered int, err error) {
	return r.pass(ctx, h, false)
}

// Run passes over the stream as Poll does, at once and then every
// interval, until ctx is done, when it returns ctx.Err(). It stops for
// nothing else: errors are reported to ReaderHooks.OnError and retried.
//
// Unlike Poll it keeps to a schedule per shard: a shard waits out the
// backoff of a failed call or a failed record, and a shard that has
// returned no records for 3 seconds is read at most every 500 ms (about
// two requests a second), back to every interval as soon as it returns
// records. It lists the stream's shards once a minute, and at once when a
// shard ends. An idle reader with the default one open shard thus makes
// about two requests a second, whatever the interval.
func (r *StreamReader) Run(ctx context.Context, h StreamHandler, interval time.Duration) error {
	if interval <= 0 {
		return fmt.Errorf("%w: stream poll interval %v is not positive", driver.ErrInvalidInput, interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_, _ = r.pass(ctx, h, true)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// pass is one pass over the stream: Poll's (every shard, at once) or, with
// scheduled, Run's (what is due).
func (r *StreamReader) pass(ctx context.Context, h StreamHandler, scheduled bool) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending, r.saveErrs = driver.NewRequestLog(nil), nil
	var errs []error
	defer func() { r.saveErrs = nil }()
	fail := func(err error) {
		if err != nil && ctx.Err() == nil {
			r.cfg.reportError(ctx, err)
			errs = append(errs, err)
		}
	}
	now := time.Now()
	if !r.loaded && (!scheduled || !now.Before(r.loadAt)) {
		fail(r.loadCheckpoints(ctx, now))
	}
	if !r.loaded {
		return 0, errors.Join(errs...)
	}
	if !scheduled || !r.described || !now.Before(r.describeAt) {
		if err := r.refreshShards(ctx); err != nil {
			r.describeErrs++
			r.describeAt = now.Add(delay(r.cfg.errBackoff, r.describeErrs, err))
			fail(err)
		} else {
			r.describeErrs = 0
			r.describeAt = now.Add(describeEvery)
		}
	}
	visited := make(map[string]bool, len(r.order))
	delivered := 0
	for _, id := range r.order {
		if ctx.Err() != nil {
			break
		}
		delivered += r.readLineage(ctx, h, r.shards[id], visited, scheduled, fail)
	}
	// Even once ctx is done: the records of a save cut short come again.
	errs = append(errs, r.saveErrs...)
	return delivered, errors.Join(errs...)
}

// loadCheckpoints reads the saved checkpoints, once, if the reader starts
// from them. r.mu must be held.
func (r *StreamReader) loadCheckpoints(ctx context.Context, now time.Time) error {
	if r.cfg.checkpoints == nil || r.cfg.start != FromCheckpoint {
		r.loaded = true
		return nil
	}
	start := time.Now()
	saved, err := r.cfg.checkpoints.Load(r.requests(ctx), r.streamARN)
	r.cfg.call(ctx, "LoadCheckpoints", "", 0, start, err)
	if err != nil && !errors.Is(err, driver.ErrInvalidInput) {
		// Not read: try again later, reading nothing meanwhile.
		r.loadErrs++
		r.loadAt = now.Add(delay(r.cfg.errBackoff, r.loadErrs, err))
		return err
	}
	// Read, perhaps with malformed items left out: their shards start at
	// their trim horizon.
	r.loaded, r.saved = true, saved
	return err
}

// refreshShards lists every shard of the stream (all pages of
// DescribeStream, children included), records new ones, forgets those the
// stream no longer lists (trimmed), and keeps the shard IDs in listing
// order. r.mu must be held.
func (r *StreamReader) refreshShards(ctx context.Context) error {
	var order []string
	listed := map[string]bool{}
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(r.streamARN)}
	now := time.Now()
	for {
		start := time.Now()
		out, err := r.client.DescribeStream(r.requests(ctx), in)
		r.cfg.call(ctx, "DescribeStream", "", 0, start, err)
		if err != nil {
			return fmt.Errorf("dynamo: describe stream: %w", err)
		}
		if out.StreamDescription == nil {
			return errors.New("dynamo: describe stream: no stream description")
		}
		for _, sh := range out.StreamDescription.Shards {
			id := aws.ToString(sh.ShardId)
			if id == "" || listed[id] {
				continue
			}
			listed[id] = true
			order = append(order, id)
			s := r.shards[id]
			closed := sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil
			if s == nil {
				s = r.newShard(id, aws.ToString(sh.ParentShardId), closed, now)
				r.shards[id] = s
			}
			s.closed = s.closed || closed
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
	r.order, r.described, r.saved = order, true, nil
	return nil
}

// newShard returns the state of a shard found by a listing: resuming
// after its saved checkpoint; else, at the first listing of a FromLatest
// reader, at its latest record, probed (a closed shard is done); else at
// its trim horizon.
func (r *StreamReader) newShard(id, parent string, closed bool, now time.Time) *shardState {
	s := &shardState{id: id, parent: parent, start: types.ShardIteratorTypeTrimHorizon, active: now}
	if seq, ok := r.saved[id]; ok {
		s.checkpoint, s.stored = seq, seq
	}
	if !r.described && r.cfg.start == FromLatest {
		s.start, s.done = types.ShardIteratorTypeLatest, closed
		if !closed {
			s.probe = &startProbe{}
		}
	}
	return s
}

// settle ends s's probe, once done: a new iterator starts after the
// records it read (at the trim horizon if it read none), written before
// the reader started if s's own iterator has returned an empty page since
// (readShard). If that iterator is renewed before, those written after the
// start that the probe read first are passed too.
func (s *shardState) settle() {
	if s.checkpoint == "" && s.at == "" {
		s.checkpoint = s.probe.last
	}
	s.start, s.probe = types.ShardIteratorTypeTrimHorizon, nil
}

// readLineage reads s after its parent, if the stream still lists the
// parent: s is read only once the parent is done. r.mu must be held.
func (r *StreamReader) readLineage(ctx context.Context, h StreamHandler, s *shardState, visited map[string]bool, scheduled bool, fail func(error)) int {
	if visited[s.id] {
		return 0
	}
	visited[s.id] = true
	delivered := 0
	if p := r.shards[s.parent]; p != nil && s.parent != s.id {
		delivered += r.readLineage(ctx, h, p, visited, scheduled, fail)
		if !p.done {
			return delivered
		}
	}
	now := time.Now()
	if s.done || scheduled && now.Before(s.notBefore) {
		return delivered
	}
	n, err := r.readShard(ctx, h, s)
	if errors.As(err, new(recordError)) {
		// The handler's failure, not the stream's: failed() has
		// scheduled the next try.
		fail(err)
		return delivered + n
	}
	if err != nil {
		s.errs++
		s.notBefore = now.Add(delay(r.cfg.errBackoff, s.errs, err))
		fail(err)
		return delivered + n
	}
	s.errs = 0
	if s.failures == 0 && time.Since(s.active) >= idleAfter {
		s.notBefore = now.Add(idleEvery)
	}
	return delivered + n
}

// readShard delivers s's records from where the last pass stopped until it
// has caught up (an empty page), reached its end (a closed shard has no
// next iterator), or a batch was not wholly accepted. It resumes with the
// iterator the last page returned, or, when there is none or it has
// expired (iterators live 15 minutes) or points at trimmed records, with a
// new one after the checkpoint. A shard started at LATEST is probed first,
// until a first record comes; an error of the probe is returned with the
// others. r.mu must be held.
func (r *StreamReader) readShard(ctx context.Context, h StreamHandler, s *shardState) (delivered int, err error) {
	// passed joins the errors of records passed within pages done with.
	var passed error
	defer func() { err = errors.Join(err, passed) }()
	iter, fresh, renewed := s.iter, false, false
	if iter == nil {
		if iter, err = r.iterator(ctx, s); err != nil {
			return 0, err
		}
		fresh = true
	}
	if s.probe != nil {
		// Before iter's reads: an empty page read after the probe has
		// reached the shard's end shows that it read nothing written
		// after the start.
		if perr := r.probeShard(ctx, s); perr != nil {
			defer func() { err = errors.Join(perr, err) }()
		}
	}
	empties := 0
	for iter != nil {
		out, err := r.getRecords(ctx, s, iter, streamBatchSize)
		if !renewed && lostIterator(err) {
			// Renew once from the checkpoint (at the trim horizon if
			// that is trimmed too).
			s.iter, renewed, fresh = nil, true, true
			if iter, err = r.iterator(ctx, s); err != nil {
				return delivered, err
			}
			continue
		}
		if err != nil {
			s.iter = nil
			if s.probe != nil {
				// The only mark of the start yet: keep it (it lives 15
				// minutes).
				s.iter = iter
			}
			return delivered, fmt.Errorf("dynamo: records of shard %s: %w", s.id, err)
		}
		if len(out.Records) > 0 && s.probe != nil {
			// The first records written after the start.
			if s.checkpoint == "" {
				s.at = sequenceOf(out.Records[0])
			}
			s.start, s.probe = types.ShardIteratorTypeTrimHorizon, nil
		}
		if len(out.Records) > 0 {
			s.active = time.Now()
			n, complete, err := r.deliver(ctx, h, s, out.Records)
			delivered += n
			if !complete {
				s.iter = nil // deliver again from the checkpoint
				return delivered, err
			}
			// Records passed within the page, which is done with: go on
			// after them.
			passed = errors.Join(passed, err)
			empties, fresh = 0, false
		} else {
			empties++
			if s.probe != nil && s.probe.done {
				s.settle()
			}
		}
		s.iter = out.NextShardIterator
		if out.NextShardIterator == nil {
			s.done, s.probe = true, nil
			// Its children may be new: list the shards at the next pass.
			r.describeAt = time.Time{}
			return delivered, nil
		}
		if len(out.Records) == 0 && !s.closed && (!fresh || empties >= maxEmptyPages) {
			return delivered, nil
		}
		iter = out.NextShardIterator
	}
	return delivered, nil
}

// iterator returns a new iterator of s after its checkpoint, else at the
// first record read of a shard started at LATEST, or at its start when it
// has neither or the stream has trimmed it. A shard whose probe is done
// settles first.
func (r *StreamReader) iterator(ctx context.Context, s *shardState) (*string, error) {
	if s.probe != nil && s.probe.done {
		s.settle()
	}
	switch {
	case s.checkpoint != "":
		return r.newIterator(ctx, s.id, types.ShardIteratorTypeAfterSequenceNumber, s.checkpoint)
	case s.at != "":
		return r.newIterator(ctx, s.id, types.ShardIteratorTypeAtSequenceNumber, s.at)
	}
	return r.newIterator(ctx, s.id, s.start, "")
}

// newIterator returns a new iterator of type typ of shard id, at or after
// seq (if not ""), or at its trim horizon if the stream has trimmed seq.
func (r *StreamReader) newIterator(ctx context.Context, id string, typ types.ShardIteratorType, seq string) (*string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{
		StreamArn:         aws.String(r.streamARN),
		ShardId:           aws.String(id),
		ShardIteratorType: typ,
	}
	if seq != "" {
		in.SequenceNumber = aws.String(seq)
	}
	start := time.Now()
	it, err := r.client.GetShardIterator(r.requests(ctx), in)
	r.cfg.call(ctx, "GetShardIterator", id, 0, start, err)
	var trimmed *types.TrimmedDataAccessException
	if errors.As(err, &trimmed) && seq != "" {
		in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeTrimHorizon, nil
		start = time.Now()
		it, err = r.client.GetShardIterator(r.requests(ctx), in)
		r.cfg.call(ctx, "GetShardIterator", id, 0, start, err)
	}
	if err != nil {
		return nil, fmt.Errorf("dynamo: shard iterator of %s: %w", id, err)
	}
	return it.ShardIterator, nil
}

// probeShard reads on through s's records for its probe, handing none to
// the handler, for at most probePages pages, until it reaches the shard's
// end: an empty page after a record, or maxEmptyPages in a row at the trim
// horizon. An expired or trimmed iterator is renewed after the last record
// read, once. r.mu must be held.
func (r *StreamReader) probeShard(ctx context.Context, s *shardState) error {
	p, renewed := s.probe, false
	for pages := 0; !p.done && pages < probePages; pages++ {
		if p.iter == nil {
			typ := types.ShardIteratorTypeTrimHorizon
			if p.last != "" {
				typ = types.ShardIteratorTypeAfterSequenceNumber
			}
			it, err := r.newIterator(ctx, s.id, typ, p.last)
			if err != nil {
				return err
			}
			p.iter, p.read, p.empties = it, false, 0
		}
		out, err := r.getRecords(ctx, s, p.iter, probeBatchSize)
		if !renewed && lostIterator(err) {
			p.iter, renewed = nil, true
			continue
		}
		if err != nil {
			return fmt.Errorf("dynamo: records of shard %s: %w", s.id, err)
		}
		if n := len(out.Records); n > 0 {
			p.last, p.read, p.empties = sequenceOf(out.Records[n-1]), true, 0
		} else {
			p.empties++
		}
		p.iter = out.NextShardIterator
		p.done = p.iter == nil || len(out.Records) == 0 && (p.read || p.empties >= maxEmptyPages)
	}
	return nil
}

// deliver hands one page of s's records to h (checkpoint records left
// out), advances s's checkpoint past the records h accepted, saves it, and
// deals with a failed record: it is tried again later, or, once it has
// failed every try, handed to OnFailure and passed. It returns how many
// records h accepted and whether the whole page is done with.
func (r *StreamReader) deliver(ctx context.Context, h StreamHandler, s *shardState, recs []types.Record) (int, bool, error) {
	ev := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, 0, len(recs))}
	end := len(recs)
	var passed error
	for i, rec := range recs {
		if rec.Dynamodb != nil && isCheckpointRecord(rec.Dynamodb.Keys) {
			continue
		}
		er, err := eventRecord(rec, r.streamARN)
		if err != nil {
			bad := events.DynamoDBEventRecord{EventID: aws.ToString(rec.EventID), Change: events.DynamoDBStreamRecord{SequenceNumber: sequenceOf(rec)}}
			if validSequence(sequenceOf(rec)) != nil {
				// No checkpoint can name it, nor a new iterator start
				// after it: pass it here, in the page, as a poison
				// record, and go on with the records after it.
				r.cfg.reportFailure(ctx, Failure{ShardID: s.id, Record: bad, Attempts: 1, Err: err})
				passed = errors.Join(passed, recordError{fmt.Errorf("dynamo: shard %s: record passed: %w", s.id, err)})
				continue
			}
			if len(ev.Records) > 0 {
				// Hand over the records before it; it comes first in the
				// next page.
				end = i
				break
			}
			// Not a record the handler could be given: hand it to
			// OnFailure at once and pass it, as a poison record.
			n, complete, err := r.failed(ctx, s, nil, bad, err, true)
			return n, complete, errors.Join(passed, err)
		}
		ev.Records = append(ev.Records, er)
	}
	// The last record of the page handed over or passed that a checkpoint
	// can name.
	last := ""
	for _, rec := range recs[:end] {
		if seq := sequenceOf(rec); validSequence(seq) == nil {
			last = seq
		}
	}
	if len(ev.Records) == 0 {
		// Only checkpoint records and records passed: pass them, saving
		// nothing.
		if last != "" {
			s.checkpoint = last
		}
		return 0, end == len(recs), passed
	}
	reads := r.pending.Requests()
	r.pending = driver.NewRequestLog(nil)
	start := time.Now()
	resp, herr := h(driver.WithBatchRequests(ctx, reads), ev)
	accepted := len(ev.Records)
	if herr != nil {
		accepted = 0
	} else if len(resp.BatchItemFailures) > 0 {
		index := make(map[string]int, len(ev.Records))
		for i, er := range ev.Records {
			index[er.Change.SequenceNumber] = i
		}
		for _, f := range resp.BatchItemFailures {
			i, ok := index[f.ItemIdentifier]
			if !ok {
				herr = fmt.Errorf("%w: stream handler reported failed item %q, which is not in the batch", driver.ErrInvalidInput, f.ItemIdentifier)
				accepted = 0
				break
			}
			accepted = min(accepted, i)
		}
	}
	if r.cfg.hooks.OnBatch != nil {
		newest := ev.Records[len(ev.Records)-1].Change.ApproximateCreationDateTime.Time
		age := time.Duration(0)
		if !newest.IsZero() {
			age = max(time.Since(newest), 0)
		}
		r.cfg.hooks.OnBatch(ctx, Batch{ShardID: s.id, Records: len(ev.Records), Accepted: accepted, Age: age, Took: time.Since(start), Err: herr})
	}
	if accepted == len(ev.Records) {
		s.failing, s.failures = "", 0
		s.checkpoint = last
		r.save(ctx, s)
		return accepted, end == len(recs), passed
	}
	if herr != nil {
		herr = recordError{fmt.Errorf("dynamo: stream handler: %w", herr)}
	}
	n, complete, err := r.failed(ctx, s, ev.Records[:accepted], ev.Records[accepted], herr, false)
	if herr != nil && err == nil {
		err = herr
	}
	return n, complete, errors.Join(passed, err)
}

// failed deals with rec, the first record of s's page that failed, after
// the accepted ones: they are checkpointed; rec is tried again later, or,
// once it has failed every try (at once with poison), handed to OnFailure
// and passed. A failure once ctx is done (the reader stopping) is no try.
// It returns len(accepted), false (the page is to be read again from the
// checkpoint), and err if rec could not be handed over.
func (r *StreamReader) failed(ctx context.Context, s *shardState, accepted []events.DynamoDBEventRecord, rec events.DynamoDBEventRecord, err error, poison bool) (int, bool, error) {
	if len(accepted) > 0 {
		s.checkpoint = accepted[len(accepted)-1].Change.SequenceNumber
	}
	if !poison && ctx.Err() != nil {
		// The reader is being stopped: the handler failed for that, not
		// for the record. It is no try; the record comes again, here or
		// to the next reader.
		r.save(ctx, s)
		return len(accepted), false, err
	}
	seq := rec.Change.SequenceNumber
	if seq != s.failing {
		s.failing, s.failures = seq, 0
	}
	s.failures++
	if poison || r.cfg.retries >= 0 && s.failures > r.cfg.retries {
		r.cfg.reportFailure(ctx, Failure{ShardID: s.id, Record: rec, Attempts: s.failures, Err: err})
		s.failing, s.failures = "", 0
		if seq != "" {
			s.checkpoint = seq
		}
		s.notBefore = time.Time{}
	} else {
		s.notBefore = time.Now().Add(delay(r.cfg.backoff, s.failures, err))
	}
	r.save(ctx, s)
	if poison {
		err = recordError{fmt.Errorf("dynamo: shard %s: record passed: %w", s.id, err)}
	}
	return len(accepted), false, err
}

// saveTimeout bounds a checkpoint's save once the reader's context is done.
const saveTimeout = 5 * time.Second

// save saves s's checkpoint to the Checkpoints, if it moved since the last
// save; a failure is reported, and the next save tries again. The save
// outlives ctx (by at most saveTimeout, once ctx is done): records the
// handler accepted just as the reader was stopped are checkpointed, not
// handed to the next reader again.
func (r *StreamReader) save(ctx context.Context, s *shardState) {
	cp := r.cfg.checkpoints
	if cp == nil || s.checkpoint == "" || s.checkpoint == s.stored {
		return
	}
	ctx, cancel := outlive(ctx, r.cfg.saveTimeout)
	defer cancel()
	start := time.Now()
	err := cp.Save(r.requests(ctx), r.streamARN, s.id, s.checkpoint)
	r.cfg.call(ctx, "SaveCheckpoint", s.id, 0, start, err)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
		}
		err = fmt.Errorf("dynamo: save checkpoint of shard %s: %w", s.id, err)
		r.cfg.reportError(ctx, err)
		r.saveErrs = append(r.saveErrs, err)
		return
	}
	s.stored = s.checkpoint
}

// outlive returns a context with ctx's values that is not cancelled with
// ctx, but grace after ctx is done, and a function that cancels it.
func outlive(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(grace, func() { cancel(fmt.Errorf("cut %v after the reader stopped", grace)) })
		context.AfterFunc(out, func() { t.Stop() })
	})
	return out, func() { stop(); cancel(nil) }
}

// sequenceOf returns rec's sequence number, or "".
func sequenceOf(rec types.Record) string {
	if rec.Dynamodb == nil {
		return ""
	}
	return aws.ToString(rec.Dynamodb.SequenceNumber)
}

// recordError is an error of the handler or of a record, not of the
// Streams API: it does not back the shard off as a failed call does.
type recordError struct{ error }

func (e recordError) Unwrap() error { return e.error }

// getRecords reads up to limit records of shard s at iter, reporting the
// call to the reader's hooks.
func (r *StreamReader) getRecords(ctx context.Context, s *shardState, iter *string, limit int32) (*dynamodbstreams.GetRecordsOutput, error) {
	start := time.Now()
	out, err := r.client.GetRecords(r.requests(ctx), &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(limit)})
	n := 0
	if out != nil {
		n = len(out.Records)
	}
	r.cfg.call(ctx, "GetRecords", s.id, n, start, err)
	return out, err
}

// lostIterator reports whether err says a shard iterator expired, or its
// position was trimmed: the iterator is renewed.
func lostIterator(err error) bool {
	var expired *types.ExpiredIteratorException
	var trimmed *types.TrimmedDataAccessException
	return errors.As(err, &expired) || errors.As(err, &trimmed)
}

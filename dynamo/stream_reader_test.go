package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
)

// noBackoff retries at once.
var noBackoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })

// memCheckpoints is an in-memory dynamo.Checkpoints. It is safe for
// concurrent use.
type memCheckpoints struct {
	mu    sync.Mutex
	saved map[string]string // stream|shard -> seq
	saves int
}

func (m *memCheckpoints) Load(_ context.Context, arn string) (map[string]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for k, v := range m.saved {
		if a, shard, _ := strings.Cut(k, "|"); a == arn { // an ARN has no '|'
			out[shard] = v
		}
	}
	return out, nil
}

func (m *memCheckpoints) Save(ctx context.Context, arn, shard, seq string) error {
	if err := ctx.Err(); err != nil {
		return err // as a request with a done context fails
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.saved == nil {
		m.saved = map[string]string{}
	}
	m.saved[arn+"|"+shard] = seq
	m.saves++
	return nil
}

// failures collects what a reader hands to OnFailure and OnError.
type failures struct {
	mu     sync.Mutex
	failed []dynamo.Failure
	errs   []error
}

func (f *failures) hooks() dynamo.ReaderHooks {
	return dynamo.ReaderHooks{
		OnFailure: func(_ context.Context, x dynamo.Failure) { f.mu.Lock(); f.failed = append(f.failed, x); f.mu.Unlock() },
		OnError:   func(_ context.Context, err error) { f.mu.Lock(); f.errs = append(f.errs, err); f.mu.Unlock() },
	}
}

// TestStreamReaderPassesAPoisonRecord: a record the handler always fails
// is tried 1+retries times, handed to OnFailure once, and passed; the
// records after it come, and it never comes again.
func TestStreamReaderPassesAPoisonRecord(t *testing.T) {
	ctx := context.Background()
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1", "2", "3"}, emptyAt: -1}}}
	var f failures
	r := dynamo.NewStreamReader(s, "arn", dynamo.WithRetries(2, noBackoff), dynamo.WithHooks(f.hooks()))
	rec := &recorder{fail: func(e events.DynamoDBEventRecord) bool { return e.Change.SequenceNumber == "2" }}
	var got []string
	for range 5 {
		if _, err := r.Poll(ctx, rec.handle); err != nil {
			t.Fatal(err)
		}
		got = append(got, rec.seqs()...)
	}
	if want := []string{"1", "2", "3", "2", "3", "2", "3", "3"}; !slices.Equal(got, want) {
		t.Errorf("handed %v, want %v", got, want)
	}
	if len(f.failed) != 1 || f.failed[0].Record.Change.SequenceNumber != "2" || f.failed[0].Attempts != 3 || f.failed[0].ShardID != "open" || f.failed[0].Err != nil {
		t.Errorf("OnFailure got %+v, want record 2 once, after 3 attempts", f.failed)
	}

	// A handler error fails the whole batch: its first record is the one
	// tried, and passed in the end, with the error.
	s.add("open", "4", "5")
	boom := errors.New("boom")
	rec.fail, rec.err = nil, boom
	for i := range 3 {
		if _, err := r.Poll(ctx, rec.handle); !errors.Is(err, boom) {
			t.Fatalf("Poll %d = %v, want boom", i, err)
		}
	}
	rec.err = nil
	if _, err := r.Poll(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	if got := rec.seqs(); !slices.Equal(got, []string{"4", "5", "4", "5", "4", "5", "5"}) {
		t.Errorf("with a failing handler, handed %v", got)
	}
	if len(f.failed) != 2 || f.failed[1].Record.Change.SequenceNumber != "4" || !errors.Is(f.failed[1].Err, boom) {
		t.Errorf("OnFailure got %+v, want record 4 with boom", f.failed)
	}
}

// TestStreamReaderRunWaitsOutTheRetryBackoff: Run does not hand a failed
// record again before its backoff has passed.
func TestStreamReaderRunWaitsOutTheRetryBackoff(t *testing.T) {
	ctx := context.Background()
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1"}, emptyAt: -1}}}
	wait := retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Hour, nil })
	r := dynamo.NewStreamReader(s, "arn", dynamo.WithRetries(3, wait), dynamo.WithHooks(dynamo.ReaderHooks{OnError: func(context.Context, error) {}}))
	rec := &recorder{fail: func(events.DynamoDBEventRecord) bool { return true }}
	for range 3 {
		if _, err := dynamo.ScheduledPass(ctx, r, rec.handle); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.seqs(); !slices.Equal(got, []string{"1"}) {
		t.Errorf("three scheduled passes within the backoff handed %v, want [1] once", got)
	}
	// Poll does not wait.
	if _, err := r.Poll(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	if got := rec.seqs(); !slices.Equal(got, []string{"1"}) {
		t.Errorf("Poll handed %v, want [1]", got)
	}
}

// countingStream counts the calls made to a StreamsClient and fails the
// ones fail picks.
type countingStream struct {
	dynamo.StreamsClient
	mu    sync.Mutex
	calls map[string]int
	fail  func(op string) error
}

func (c *countingStream) count(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[op]++
	if c.fail != nil {
		return c.fail(op)
	}
	return nil
}

func (c *countingStream) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

func (c *countingStream) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	if err := c.count("DescribeStream"); err != nil {
		return nil, err
	}
	return c.StreamsClient.DescribeStream(ctx, in, o...)
}

func (c *countingStream) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	if err := c.count("GetShardIterator"); err != nil {
		return nil, err
	}
	return c.StreamsClient.GetShardIterator(ctx, in, o...)
}

func (c *countingStream) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	if err := c.count("GetRecords"); err != nil {
		return nil, err
	}
	return c.StreamsClient.GetRecords(ctx, in, o...)
}

// TestStreamReaderIdlesCheaply: Run's passes read an open shard that has
// returned nothing for a few seconds at most every 500 ms, list the shards
// once a minute, and read at full speed again once records come.
func TestStreamReaderIdlesCheaply(t *testing.T) {
	ctx := context.Background()
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1"}, emptyAt: -1}}}
	c := &countingStream{StreamsClient: s}
	r := dynamo.NewStreamReader(c, "arn")
	rec := &recorder{}
	if _, err := dynamo.ScheduledPass(ctx, r, rec.handle); err != nil {
		t.Fatal(err)
	}
	first := c.total() // DescribeStream, GetShardIterator, GetRecords (1), GetRecords (empty)
	// Still active: every pass reads the shard, one request.
	if _, err := dynamo.ScheduledPass(ctx, r, rec.handle); err != nil {
		t.Fatal(err)
	}
	if n := c.total() - first; n != 1 {
		t.Errorf("a pass over an active shard made %d requests, want 1 (GetRecords)", n)
	}
	// Idle: a pass reads it, then none does for 500 ms.
	dynamo.AgeShards(r, 4*time.Second)
	before := c.total()
	for range 20 {
		if _, err := dynamo.ScheduledPass(ctx, r, rec.handle); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.total() - before; n != 1 {
		t.Errorf("20 passes within 500 ms over an idle shard made %d requests, want 1", n)
	}
	// Poll is never throttled.
	if _, err := r.Poll(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	if n := c.total() - before; n != 3 {
		t.Errorf("Poll made %d requests, want 2 (DescribeStream, GetRecords)", n-1)
	}
	if got := rec.seqs(); !slices.Equal(got, []string{"1"}) {
		t.Errorf("handed %v, want [1]", got)
	}
}

// TestStreamReaderRunSurvivesEveryError: failed DescribeStream,
// GetShardIterator and GetRecords calls (throttles, 5xx, expired
// iterators) never end Run; each is reported; every record comes, in
// order.
func TestStreamReaderRunSurvivesEveryError(t *testing.T) {
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1", "2"}, emptyAt: -1}}}
	throttle := &types.LimitExceededException{Message: aws.String("slow down")}
	internal := &smithy.GenericAPIError{Code: "InternalServerError", Message: "boom", Fault: smithy.FaultServer}
	faults := map[string][]error{
		"DescribeStream":   {throttle, internal},
		"GetShardIterator": {internal},
		// A fresh iterator's first page may be a TrimmedDataAccessException
		// (DynamoDB Local answers so under load): the reader of before
		// ended on it, and the live page saw no event again.
		"GetRecords": {throttle, &types.ExpiredIteratorException{Message: aws.String("expired")}, internal,
			&types.TrimmedDataAccessException{Message: aws.String("trimmed")}},
	}
	var mu sync.Mutex
	c := &countingStream{StreamsClient: s, fail: func(op string) error {
		mu.Lock()
		defer mu.Unlock()
		if len(faults[op]) == 0 {
			return nil
		}
		err := faults[op][0]
		faults[op] = faults[op][1:]
		return err
	}}
	var f failures
	fast := retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
	r := dynamo.NewStreamReader(c, "arn", dynamo.WithHooks(f.hooks()), dynamo.WithErrorBackoff(fast))
	seen, h := sequences()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, h, time.Millisecond) }()
	var got []string
	for len(got) < 3 {
		if len(got) == 2 {
			s.add("open", "3")
		}
		select {
		case seq := <-seen:
			got = append(got, seq)
		case <-time.After(time.Minute):
			t.Fatalf("Run delivered %v, then nothing for a minute", got)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	if !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Errorf("delivered %v, want [1 2 3]", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// The expired and trimmed iterators are renewed without an error to
	// report.
	if len(f.errs) != 5 {
		t.Errorf("OnError got %d errors, want 5: %v", len(f.errs), f.errs)
	}
	for _, err := range f.errs {
		var api smithy.APIError
		if !errors.As(err, &api) {
			t.Errorf("reported %v, not the API's error", err)
		}
	}
}

// TestStreamReaderResumesFromItsCheckpoints: a reader with the checkpoints
// of one before it goes on after the last record that one's handler
// accepted; FromTrimHorizon starts again at the oldest record, and
// FromLatest reads only what comes after it started.
func TestStreamReaderResumesFromItsCheckpoints(t *testing.T) {
	ctx := context.Background()
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1", "2", "3"}, emptyAt: -1}}}
	cp := &memCheckpoints{}
	rec := &recorder{fail: func(e events.DynamoDBEventRecord) bool { return e.Change.SequenceNumber == "3" }}
	first := dynamo.NewStreamReader(s, "arn", dynamo.WithCheckpoints(cp), dynamo.WithRetries(-1, noBackoff))
	if n, _ := first.Poll(ctx, rec.handle); n != 2 {
		t.Fatalf("first reader accepted %d, want 2", n)
	}
	rec.seqs()
	if diff := cmp.Diff(map[string]string{"arn|open": "2"}, cp.saved); diff != "" {
		t.Fatalf("saved checkpoints (-want +got):\n%s", diff)
	}
	// The first reader stops; a second resumes after 2.
	rec.fail = nil
	s.add("open", "4")
	for _, c := range []struct {
		start dynamo.StartPosition
		want  []string
	}{
		{dynamo.FromCheckpoint, []string{"3", "4"}},
		{dynamo.FromTrimHorizon, []string{"1", "2", "3", "4"}},
		{dynamo.FromLatest, nil},
	} {
		r := dynamo.NewStreamReader(s, "arn", dynamo.WithCheckpoints(cp), dynamo.WithStart(c.start))
		if _, err := r.Poll(ctx, rec.handle); err != nil {
			t.Fatal(err)
		}
		if got := rec.seqs(); !slices.Equal(got, c.want) {
			t.Errorf("from %v: handed %v, want %v", c.start, got, c.want)
		}
		if c.start == dynamo.FromLatest {
			s.add("open", "5")
			if _, err := r.Poll(ctx, rec.handle); err != nil {
				t.Fatal(err)
			}
			if got := rec.seqs(); !slices.Equal(got, []string{"5"}) {
				t.Errorf("from latest, then 5 written: handed %v, want [5]", got)
			}
		}
	}
	if got := cp.saved["arn|open"]; got != "5" {
		t.Errorf("checkpoint %q, want 5", got)
	}
}

// TestStreamReaderSavesWhenStopped: records the handler accepted as the
// reader was being stopped (its context done before the checkpoint's save)
// are checkpointed all the same; the next reader does not hand them over
// again.
func TestStreamReaderSavesWhenStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1", "2"}, emptyAt: -1}}}
	cp := &memCheckpoints{}
	rec := &recorder{}
	stopping := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		cancel() // the reader is stopped while the handler runs; it still accepts
		return rec.handle(ctx, ev)
	}
	first := dynamo.NewStreamReader(s, "arn", dynamo.WithCheckpoints(cp))
	if n, _ := first.Poll(ctx, stopping); n != 2 {
		t.Fatalf("first reader accepted %d, want 2", n)
	}
	if diff := cmp.Diff(map[string]string{"arn|open": "2"}, cp.saved); diff != "" {
		t.Fatalf("saved checkpoints after a stop (-want +got):\n%s", diff)
	}
	rec.seqs()
	s.add("open", "3")
	next := dynamo.NewStreamReader(s, "arn", dynamo.WithCheckpoints(cp))
	if _, err := next.Poll(context.Background(), rec.handle); err != nil {
		t.Fatal(err)
	}
	if got := rec.seqs(); !slices.Equal(got, []string{"3"}) {
		t.Errorf("the next reader handed %v, want [3]", got)
	}
}

// TestStreamReaderStopIsNoTry: a handler that fails because the reader is
// being stopped (its context done) has not tried the record: with no
// retries left, the record is not passed, nor checkpointed, and the next
// reader hands it over; the records accepted before it are checkpointed.
func TestStreamReaderStopIsNoTry(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1", "2", "3"}, emptyAt: -1}}}
	cp := &memCheckpoints{}
	var f failures
	rec := &recorder{}
	stopping := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		cancel()
		rec.handle(ctx, ev)
		// Record 1 is done; 2 fails as the handler's work is cut short.
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: "2"}}}, nil
	}
	first := dynamo.NewStreamReader(s, "arn", dynamo.WithCheckpoints(cp), dynamo.WithRetries(0, noBackoff), dynamo.WithHooks(f.hooks()))
	if n, _ := first.Poll(ctx, stopping); n != 1 {
		t.Fatalf("first reader accepted %d, want 1", n)
	}
	if len(f.failed) != 0 {
		t.Errorf("a failure of a stopping reader went to OnFailure: %+v", f.failed)
	}
	if diff := cmp.Diff(map[string]string{"arn|open": "1"}, cp.saved); diff != "" {
		t.Fatalf("saved checkpoints after a stop (-want +got):\n%s", diff)
	}
	rec.seqs()
	next := dynamo.NewStreamReader(s, "arn", dynamo.WithCheckpoints(cp))
	if _, err := next.Poll(context.Background(), rec.handle); err != nil {
		t.Fatal(err)
	}
	if got := rec.seqs(); !slices.Equal(got, []string{"2", "3"}) {
		t.Errorf("the next reader handed %v, want [2 3]", got)
	}
}

// slowCheckpoints is a memCheckpoints whose saves take delay, or fail
// when their context is done first.
type slowCheckpoints struct {
	memCheckpoints
	delay time.Duration
}

func (c *slowCheckpoints) Save(ctx context.Context, arn, shard, seq string) error {
	select {
	case <-time.After(c.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	return c.memCheckpoints.Save(ctx, arn, shard, seq)
}

// TestStreamReaderSlowSave: the bound on a save after a stop does not cut
// the saves of a running reader, which take as long as they take; a save
// under way when the reader is stopped goes on within the bound.
func TestStreamReaderSlowSave(t *testing.T) {
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1"}, emptyAt: -1}}}
	cp := &slowCheckpoints{delay: 200 * time.Millisecond}
	var f failures
	r := dynamo.NewStreamReader(s, "arn", dynamo.WithCheckpoints(cp), dynamo.WithHooks(f.hooks()), dynamo.WithSaveTimeout(20*time.Millisecond))
	rec := &recorder{}
	if _, err := r.Poll(context.Background(), rec.handle); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"arn|open": "1"}, cp.saved); diff != "" {
		t.Errorf("saved checkpoints after a slow save (-want +got):\n%s", diff)
	}
	if len(f.errs) != 0 {
		t.Errorf("OnError got %v", f.errs)
	}

	ctx, cancel := context.WithCancel(context.Background())
	s.add("open", "2")
	r = dynamo.NewStreamReader(s, "arn", dynamo.WithCheckpoints(cp), dynamo.WithHooks(f.hooks()), dynamo.WithSaveTimeout(time.Minute))
	stopping := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		time.AfterFunc(50*time.Millisecond, cancel) // during the save
		return rec.handle(ctx, ev)
	}
	if n, _ := r.Poll(ctx, stopping); n != 1 || ctx.Err() == nil {
		t.Fatalf("accepted %d (context %v), want 1 and a stop during the save", n, ctx.Err())
	}
	if diff := cmp.Diff(map[string]string{"arn|open": "2"}, cp.saved); diff != "" {
		t.Errorf("saved checkpoints after a stop during the save (-want +got):\n%s", diff)
	}
	if len(f.errs) != 0 {
		t.Errorf("OnError got %v", f.errs)
	}
}

// TestStreamReaderStoppedSaveIsBounded: once the reader is stopped, a save
// that does not end is cut after the save timeout, and reported: the
// records it covered will come again.
func TestStreamReaderStoppedSaveIsBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1"}, emptyAt: -1}}}
	cp := &slowCheckpoints{delay: time.Hour}
	var f failures
	r := dynamo.NewStreamReader(s, "arn", dynamo.WithCheckpoints(cp), dynamo.WithHooks(f.hooks()), dynamo.WithSaveTimeout(50*time.Millisecond))
	rec := &recorder{}
	stopping := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		cancel()
		return rec.handle(ctx, ev)
	}
	start := time.Now()
	if n, _ := r.Poll(ctx, stopping); n != 1 {
		t.Fatalf("accepted %d, want 1", n)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a stopped reader's save held Poll %v", took)
	}
	if len(cp.saved) != 0 {
		t.Errorf("saved %v through a save that never ends", cp.saved)
	}
	if len(f.errs) != 1 || !errors.Is(f.errs[0], context.Canceled) || !strings.Contains(f.errs[0].Error(), "after the reader stopped") {
		t.Errorf("OnError got %v, want the save's failure once, cut after the stop", f.errs)
	}
}

// TestStreamReaderSkipsCheckpointRecords: the records of checkpoint items
// never reach the handler, and a page of nothing else saves no checkpoint
// (which would feed the stream a record of its own, forever).
func TestStreamReaderSkipsCheckpointRecords(t *testing.T) {
	ctx := context.Background()
	s := &checkpointStream{splitStream: splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1", "2", "3"}, emptyAt: -1}}}, own: map[string]bool{"2": true, "4": true}}
	cp := &memCheckpoints{}
	r := dynamo.NewStreamReader(s, "arn", dynamo.WithCheckpoints(cp))
	rec := &recorder{}
	if n, err := r.Poll(ctx, rec.handle); err != nil || n != 2 {
		t.Fatalf("Poll = %d, %v; want 2", n, err)
	}
	if got := rec.seqs(); !slices.Equal(got, []string{"1", "3"}) {
		t.Errorf("handed %v, want [1 3]", got)
	}
	saves := cp.saves
	s.add("open", "4")
	if _, err := r.Poll(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	if got := rec.seqs(); len(got) != 0 || cp.saves != saves {
		t.Errorf("a page of a checkpoint record: handed %v, %d saves; want none", got, cp.saves-saves)
	}
}

// checkpointStream is a splitStream whose records in own are of checkpoint
// items.
type checkpointStream struct {
	splitStream
	own map[string]bool
}

func (c *checkpointStream) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	out, err := c.splitStream.GetRecords(ctx, in, o...)
	if err != nil {
		return nil, err
	}
	for _, r := range out.Records {
		if c.own[aws.ToString(r.Dynamodb.SequenceNumber)] {
			r.Dynamodb.Keys["pk"] = &types.AttributeValueMemberS{Value: dynamo.CheckpointPK}
		}
	}
	return out, nil
}

// TestStreamReaderPassesAMalformedRecord: a record the reader cannot turn
// into an event is handed to OnFailure at once and passed.
func TestStreamReaderPassesAMalformedRecord(t *testing.T) {
	ctx := context.Background()
	s := &malformedStream{splitStream: splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1", "2", "3"}, emptyAt: -1}}}, bad: "2"}
	var f failures
	r := dynamo.NewStreamReader(s, "arn", dynamo.WithHooks(f.hooks()))
	rec := &recorder{}
	var got []string
	for range 3 {
		_, err := r.Poll(ctx, rec.handle)
		if err != nil && !errors.Is(err, driver.ErrInvalidInput) {
			t.Fatal(err)
		}
		got = append(got, rec.seqs()...)
	}
	if !slices.Equal(got, []string{"1", "3"}) {
		t.Errorf("handed %v, want [1 3]", got)
	}
	if len(f.failed) != 1 || f.failed[0].Record.Change.SequenceNumber != "2" || !errors.Is(f.failed[0].Err, driver.ErrInvalidInput) {
		t.Errorf("OnFailure got %+v, want record 2, invalid", f.failed)
	}
}

// TestStreamReaderPassesARecordWithoutSequenceNumber: a record with no
// sequence number, or one that is no sequence number, which no checkpoint
// can name, is handed to OnFailure and passed all the same; the records
// after it come, once, and the shard is not read again from its start,
// even once its iterator has expired.
func TestStreamReaderPassesARecordWithoutSequenceNumber(t *testing.T) {
	ctx := context.Background()
	for _, seq := range []string{"", "x"} {
		for _, bad := range []string{"1", "2", "3"} {
			s := &malformedStream{splitStream: splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1", "2", "3"}, emptyAt: -1}}}, bad: bad, seq: &seq}
			var f failures
			r := dynamo.NewStreamReader(s, "arn", dynamo.WithHooks(f.hooks()))
			rec := &recorder{}
			var got []string
			poll := func() {
				for range 3 {
					_, err := r.Poll(ctx, rec.handle)
					if err != nil && !errors.Is(err, driver.ErrInvalidInput) {
						t.Fatal(err)
					}
					got = append(got, rec.seqs()...)
				}
			}
			poll()
			s.expire()
			s.add("open", "4")
			poll()
			want := slices.DeleteFunc([]string{"1", "2", "3", "4"}, func(seq string) bool { return seq == bad })
			if !slices.Equal(got, want) {
				t.Errorf("record %s with sequence number %q: handed %v, want %v", bad, seq, got, want)
			}
			if len(f.failed) == 0 || !errors.Is(f.failed[0].Err, driver.ErrInvalidInput) {
				t.Errorf("record %s with sequence number %q: OnFailure got %+v, want it, invalid", bad, seq, f.failed)
			}
		}
	}
}

// malformedStream is a splitStream whose record bad carries an attribute
// value of no known type, or with seq another sequence number.
type malformedStream struct {
	splitStream
	bad string
	seq *string // the bad record's sequence number instead, if not nil
}

func (m *malformedStream) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, o ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	out, err := m.splitStream.GetRecords(ctx, in, o...)
	if err != nil {
		return nil, err
	}
	for _, r := range out.Records {
		if aws.ToString(r.Dynamodb.SequenceNumber) == m.bad {
			if m.seq != nil {
				r.Dynamodb.SequenceNumber = aws.String(*m.seq)
				continue
			}
			r.Dynamodb.Keys["x"] = &types.UnknownUnionMember{Tag: "Z"}
		}
	}
	return out, nil
}

// TestStreamReaderFromLatestProbesALongShard: a FromLatest reader finds
// where it started in a shard of 25,000 records over three passes (10,000
// records a pass); an iterator that expires before that starts again at
// the shard's latest record, and one that expires after starts after the
// last record written before the start: never at the trim horizon.
func TestStreamReaderFromLatestProbesALongShard(t *testing.T) {
	ctx := context.Background()
	seqs := make([]string, 25000)
	for i := range seqs {
		seqs[i] = strconv.Itoa(i + 1)
	}
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: seqs, emptyAt: -1}}}
	c := &countingStream{StreamsClient: s}
	r := dynamo.NewStreamReader(c, "arn", dynamo.WithStart(dynamo.FromLatest))
	rec := &recorder{}
	if _, err := r.Poll(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	// The first pass: DescribeStream, two iterators (LATEST and the
	// probe's), 10 probe pages of 1,000 records and 5 empty pages of the
	// shard's own new iterator.
	if got := c.total(); got != 18 {
		t.Errorf("first pass made %d requests, want 18", got)
	}
	// Expired before the probe is done: the shard starts again at its
	// latest record, and the probe goes on.
	s.expire()
	if _, err := r.Poll(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	s.add("open", "25001")
	if _, err := r.Poll(ctx, rec.handle); err != nil {
		t.Fatal(err)
	}
	if got := rec.seqs(); !slices.Equal(got, []string{"25001"}) {
		t.Fatalf("handed %d records (the first: %v), want [25001]", len(got), got[:min(len(got), 5)])
	}

	// Done, and settled: an expired iterator starts after the last record
	// the handler accepted.
	r2 := dynamo.NewStreamReader(s, "arn", dynamo.WithStart(dynamo.FromLatest))
	for range 3 {
		if _, err := r2.Poll(ctx, rec.handle); err != nil {
			t.Fatal(err)
		}
	}
	s.expire()
	s.add("open", "25002")
	for range 2 {
		if _, err := r2.Poll(ctx, rec.handle); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.seqs(); !slices.Equal(got, []string{"25002"}) {
		t.Fatalf("second reader handed %d records (the first: %v), want [25002]", len(got), got[:min(len(got), 5)])
	}
}

// failingCheckpoints is a memCheckpoints whose saves fail with err.
type failingCheckpoints struct {
	memCheckpoints
	err error
}

func (c *failingCheckpoints) Save(context.Context, string, string, string) error { return c.err }

// TestStreamReaderPollReturnsAFailedSave: a checkpoint that could not be
// saved is an error Poll returns, as it goes to OnError, also when the
// save was cut short by a stop: the records it covered will come again.
func TestStreamReaderPollReturnsAFailedSave(t *testing.T) {
	boom := errors.New("boom")
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1"}, emptyAt: -1}}}
	var f failures
	r := dynamo.NewStreamReader(s, "arn", dynamo.WithCheckpoints(&failingCheckpoints{err: boom}), dynamo.WithHooks(f.hooks()))
	rec := &recorder{}
	if n, err := r.Poll(context.Background(), rec.handle); n != 1 || !errors.Is(err, boom) {
		t.Errorf("Poll with a failing save = %d, %v; want 1, boom", n, err)
	}
	if len(f.errs) != 1 || !errors.Is(f.errs[0], boom) {
		t.Errorf("OnError got %v, want boom once", f.errs)
	}

	ctx, cancel := context.WithCancel(context.Background())
	s.add("open", "2")
	stopping := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		cancel()
		return rec.handle(ctx, ev)
	}
	r = dynamo.NewStreamReader(s, "arn", dynamo.WithCheckpoints(&slowCheckpoints{delay: time.Hour}), dynamo.WithSaveTimeout(10*time.Millisecond), dynamo.WithHooks(f.hooks()))
	if _, err := r.Poll(ctx, stopping); !errors.Is(err, context.Canceled) || !strings.Contains(fmt.Sprint(err), "save checkpoint") {
		t.Errorf("Poll whose save was cut short by a stop returned %v, want the save's failure", err)
	}
}

package dynamo

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// StartPosition is where a StreamReader starts reading the shards it
// finds when it starts.
type StartPosition int

const (
	// FromCheckpoint resumes each shard after its checkpoint (see
	// WithCheckpoints) and reads a shard without one from its trim
	// horizon: nothing the stream still holds is missed. It is the
	// default; without Checkpoints it is FromTrimHorizon.
	FromCheckpoint StartPosition = iota
	// FromTrimHorizon reads every shard from the oldest record the stream
	// keeps (24 hours on AWS), ignoring checkpoints saved before.
	FromTrimHorizon
	// FromLatest reads only what is written after the reader starts: the
	// shards open at its first pass from their latest record, closed ones
	// not at all, ignoring checkpoints saved before. No renewal hands over
	// an older record. Until a shard's first record comes, a failed read
	// keeps its iterator, and the reader reads the shard once from its
	// trim horizon, handing nothing over (one GetRecords per 1,000
	// records the shard holds), to find where it started: an iterator
	// that expires (after 15 minutes without a read) is renewed there.
	// One that expires before that reading is done (it takes the first
	// pass for a shard of fewer than 10,000 records) is renewed at the
	// shard's latest record, passing what was written in between.
	FromLatest
)

// String returns the position's name, as `inbox stream --from` takes it.
func (p StartPosition) String() string {
	switch p {
	case FromCheckpoint:
		return "checkpoint"
	case FromTrimHorizon:
		return "trim-horizon"
	case FromLatest:
		return "latest"
	}
	return "unknown"
}

// Default retry policy of a StreamReader: a record the handler fails is
// tried 1+defaultRetries times, waiting with exponential backoff and full
// jitter (1 s, 2 s, 4 s, 8 s, then 20 s at most, before jitter) between
// tries: about half a minute in all on average, 50 s at most.
const (
	defaultRetries    = 5
	defaultMaxBackoff = 20 * time.Second
	// errorMaxBackoff caps the wait after failed Streams API calls.
	errorMaxBackoff = 30 * time.Second
)

// Idle polling: a shard that has returned no records for idleAfter is read
// at most once every idleEvery by Run, whatever its interval.
const (
	idleAfter = 3 * time.Second
	idleEvery = 500 * time.Millisecond
	// describeEvery is how often Run lists the stream's shards when no
	// shard has ended (an ended shard lists them at once, for its
	// children).
	describeEvery = time.Minute
)

// ReaderOption configures a StreamReader.
type ReaderOption func(*readerConfig)

// readerConfig is what the options set.
type readerConfig struct {
	checkpoints Checkpoints
	start       StartPosition
	retries     int
	backoff     retry.BackoffDelayer
	errBackoff  retry.BackoffDelayer
	hooks       ReaderHooks
	// saveTimeout bounds a checkpoint's save once the reader's context
	// is done (the constant saveTimeout; tests shorten it).
	saveTimeout time.Duration
}

func newReaderConfig(opts []ReaderOption) readerConfig {
	c := readerConfig{
		retries:     defaultRetries,
		backoff:     retry.NewExponentialJitterBackoff(defaultMaxBackoff),
		errBackoff:  retry.NewExponentialJitterBackoff(errorMaxBackoff),
		saveTimeout: saveTimeout,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithCheckpoints keeps the reader's checkpoints in cp (for instance
// Store.Checkpoints, a record in the table itself), so that a new reader
// resumes where the last one stopped: after the last record its handler
// accepted in each shard. Without it, checkpoints live in memory only.
func WithCheckpoints(cp Checkpoints) ReaderOption {
	return func(c *readerConfig) { c.checkpoints = cp }
}

// WithStart sets where the reader starts (FromCheckpoint by default).
// Shards that appear after its first pass (children of split or rotated
// shards) are always read from their first record.
func WithStart(p StartPosition) ReaderOption {
	return func(c *readerConfig) { c.start = p }
}

// WithRetries sets how many times a record the handler fails is tried
// again before it is handed to ReaderHooks.OnFailure and passed (negative:
// forever, blocking its shard), and the backoff between tries (nil: the
// default, exponential with full jitter up to 20 s). Run waits for the
// backoff; Poll tries again at its next call.
func WithRetries(n int, backoff retry.BackoffDelayer) ReaderOption {
	return func(c *readerConfig) {
		c.retries = n
		if backoff != nil {
			c.backoff = backoff
		}
	}
}

// WithErrorBackoff sets the backoff after failed Streams API calls (nil:
// the default, exponential with full jitter up to 30 s). The SDK client's
// own retryer runs first, within each call.
func WithErrorBackoff(b retry.BackoffDelayer) ReaderOption {
	return func(c *readerConfig) {
		if b != nil {
			c.errBackoff = b
		}
	}
}

// WithHooks sets the functions a reader reports to.
func WithHooks(h ReaderHooks) ReaderOption {
	return func(c *readerConfig) { c.hooks = h }
}

// ReaderHooks are the functions a StreamReader reports to. Each may be
// nil. They are called from the goroutine that runs Poll or Run, one at a
// time, and must not call the reader.
type ReaderHooks struct {
	// OnError is called with each error the reader recovers from by
	// itself: a Streams API call that failed (after the SDK's own
	// retries), a handler that returned an error, a checkpoint that could
	// not be loaded or saved. The reader goes on: Run backs off and tries
	// again. A save that fails as the reader stops is reported too: its
	// records come again. Nil logs the error with slog.Default at level
	// Warn.
	OnError func(ctx context.Context, err error)
	// OnFailure is called with a record the handler failed on every try
	// (see WithRetries), just before the reader passes it, as a Lambda
	// event source mapping hands such a batch to its on-failure
	// destination. Nil logs it with slog.Default at level Error.
	OnFailure func(ctx context.Context, f Failure)
	// OnBatch is called after each batch handed to the handler.
	OnBatch func(ctx context.Context, b Batch)
	// OnCall is called after each call the reader makes to the Streams
	// API or to its Checkpoints: a trace of what it does.
	OnCall func(ctx context.Context, c Call)
}

// Failure is a record the handler failed on every try.
type Failure struct {
	ShardID string
	Record  events.DynamoDBEventRecord
	// Attempts is how many times the handler was given the record.
	Attempts int
	// Err is the handler's error at the last try, if it returned one (it
	// fails the whole batch); nil if it reported the record as a batch
	// item failure.
	Err error
}

// Batch describes one batch handed to the handler.
type Batch struct {
	ShardID string
	// Records is how many records the batch held; Accepted how many of
	// them, from its start, the handler accepted.
	Records, Accepted int
	// Age is how old the batch's newest record was when the handler
	// returned (from its ApproximateCreationDateTime): the reader's lag, as
	// Lambda's IteratorAge metric.
	Age time.Duration
	// Took is how long the handler took.
	Took time.Duration
	// Err is the error the handler returned, if any.
	Err error
}

// Call describes one call of a StreamReader to the Streams API
// (DescribeStream, GetShardIterator, GetRecords) or to its Checkpoints
// (LoadCheckpoints, SaveCheckpoint).
type Call struct {
	Op      string
	ShardID string // "" for DescribeStream and LoadCheckpoints
	// Records is how many records GetRecords returned.
	Records int
	Took    time.Duration
	Err     error
}

// reportError hands err to the OnError hook, or logs it.
func (c *readerConfig) reportError(ctx context.Context, err error) {
	if c.hooks.OnError != nil {
		c.hooks.OnError(ctx, err)
		return
	}
	slog.Default().WarnContext(ctx, "dynamo: stream reader", "err", err)
}

// reportFailure hands f to the OnFailure hook, or logs it.
func (c *readerConfig) reportFailure(ctx context.Context, f Failure) {
	if c.hooks.OnFailure != nil {
		c.hooks.OnFailure(ctx, f)
		return
	}
	slog.Default().ErrorContext(ctx, "dynamo: stream reader: record passed after failing every try",
		"shard", f.ShardID, "sequence", f.Record.Change.SequenceNumber, "event", f.Record.EventID, "attempts", f.Attempts, "err", f.Err)
}

// call reports one call to the OnCall hook.
func (c *readerConfig) call(ctx context.Context, op, shard string, records int, start time.Time, err error) {
	if c.hooks.OnCall != nil {
		c.hooks.OnCall(ctx, Call{Op: op, ShardID: shard, Records: records, Took: time.Since(start), Err: err})
	}
}

// delay returns the backoff before try attempt+1 (attempt counts from 1).
func delay(b retry.BackoffDelayer, attempt int, err error) time.Duration {
	d, derr := b.BackoffDelay(attempt, err)
	if derr != nil || d < 0 {
		return 0
	}
	return d
}

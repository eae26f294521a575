package dynamo_test

import (
	"context"
	"hash/fnv"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// arrivals is a handler that notes when each item (by sk) reached it.
type arrivals struct {
	mu   sync.Mutex
	at   map[string]time.Time
	fail func(events.DynamoDBEventRecord) bool
	n    int
}

func (a *arrivals) handle(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var resp events.DynamoDBEventResponse
	for _, r := range ev.Records {
		if a.fail != nil && a.fail(r) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
			return resp, nil
		}
		sk := r.Change.Keys["sk"].String()
		if _, ok := a.at[sk]; !ok {
			a.at[sk] = time.Now()
			a.n++
		}
	}
	return resp, nil
}

func (a *arrivals) wait(b *testing.B, sk string) time.Time {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		a.mu.Lock()
		at, ok := a.at[sk]
		a.mu.Unlock()
		if ok {
			return at
		}
	}
	b.Fatalf("%s never reached the handler", sk)
	return time.Time{}
}

// runReader runs a reader of arn with h until the benchmark ends, counting
// its requests.
func runReader(b *testing.B, c *countingStream, arn string, h dynamo.StreamHandler, interval time.Duration, opts ...dynamo.ReaderOption) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r := dynamo.NewStreamReader(c, arn, append(opts, dynamo.WithHooks(dynamo.ReaderHooks{OnError: func(context.Context, error) {}, OnFailure: func(context.Context, dynamo.Failure) {}}))...)
	go func() { _ = r.Run(ctx, h, interval); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
}

// BenchmarkStreamReader measures the stream worker on DynamoDB Local:
//
//   - latency: from a PutItem's return to the record reaching the handler,
//     with records flowing (busy: one write after another) and after the
//     shard has idled (idle: 4 s between writes); ms/event is the mean,
//     p50 and max the median and the worst;
//   - idle: the Streams API requests a second of a reader with nothing to
//     read, against the naive worker a team would write (GetRecords every
//     interval, DescribeStream at each poll), both at a 100 ms interval;
//   - fail-1-in-100: 1,000 records, the handler failing one in a hundred
//     on every try (2 retries, 10 ms apart): how long delivery takes, how
//     many records reached OnFailure (want 10), and the checkpoint writes
//     (one write unit each) per 100 records.
func BenchmarkStreamReader(b *testing.B) {
	c := ddblocal.Client(b)
	for _, mode := range []string{"busy", "idle"} {
		b.Run("latency/"+mode, func(b *testing.B) {
			table, arn := ddblocal.NewTable(b, c)
			a := &arrivals{at: map[string]time.Time{}}
			runReader(b, &countingStream{StreamsClient: ddblocal.StreamsClient(b)}, arn, a.handle, 100*time.Millisecond)
			var lat []time.Duration
			b.ResetTimer()
			for i := range b.N {
				if mode == "idle" {
					time.Sleep(4 * time.Second)
				}
				sk := "k" + strconv.Itoa(i)
				rawTable{b, c, table}.put(sk, nil)
				written := time.Now()
				lat = append(lat, a.wait(b, sk).Sub(written))
			}
			b.StopTimer()
			reportLatency(b, lat)
		})
	}
	b.Run("idle/reader", func(b *testing.B) {
		_, arn := ddblocal.NewTable(b, c)
		cs := &countingStream{StreamsClient: ddblocal.StreamsClient(b)}
		runReader(b, cs, arn, (&arrivals{at: map[string]time.Time{}}).handle, 100*time.Millisecond)
		time.Sleep(4 * time.Second) // past idleAfter
		before := cs.total()
		b.ResetTimer()
		for range b.N {
			time.Sleep(time.Second)
		}
		b.ReportMetric(float64(cs.total()-before)/float64(b.N), "requests/s")
	})
	b.Run("idle/naive", func(b *testing.B) {
		_, arn := ddblocal.NewTable(b, c)
		cs := &countingStream{StreamsClient: ddblocal.StreamsClient(b)}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go naivePoll(ctx, cs, arn, 100*time.Millisecond)
		time.Sleep(time.Second)
		before := cs.total()
		b.ResetTimer()
		for range b.N {
			time.Sleep(time.Second)
		}
		b.ReportMetric(float64(cs.total()-before)/float64(b.N), "requests/s")
	})
	b.Run("fail-1-in-100", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			table, arn := ddblocal.NewTable(b, c)
			for i := range 1000 {
				rawTable{b, c, table}.put("k"+strconv.Itoa(i), nil)
			}
			poison := func(r events.DynamoDBEventRecord) bool {
				h := fnv.New32a()
				h.Write([]byte(r.Change.Keys["sk"].String()))
				return h.Sum32()%100 == 0
			}
			var want int
			for i := range 1000 {
				h := fnv.New32a()
				h.Write([]byte("k" + strconv.Itoa(i)))
				if h.Sum32()%100 == 0 {
					want++
				}
			}
			a := &arrivals{at: map[string]time.Time{}, fail: poison}
			var mu sync.Mutex
			var passed int
			cp := &memCheckpoints{}
			store := dynamo.New(c, table)
			tcp, _ := store.Checkpoints("bench")
			saves := &countingCheckpoints{Checkpoints: tcp, counted: cp}
			fast := retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 10 * time.Millisecond, nil })
			ctx, cancel := context.WithCancel(context.Background())
			r := dynamo.NewStreamReader(ddblocal.StreamsClient(b), arn, dynamo.WithRetries(2, fast), dynamo.WithCheckpoints(saves),
				dynamo.WithHooks(dynamo.ReaderHooks{OnFailure: func(context.Context, dynamo.Failure) { mu.Lock(); passed++; mu.Unlock() }}))
			b.StartTimer()
			start := time.Now()
			done := make(chan struct{})
			go func() { _ = r.Run(ctx, a.handle, 10*time.Millisecond); close(done) }()
			for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
				a.mu.Lock()
				n := a.n
				a.mu.Unlock()
				if n == 1000-want || time.Now().After(deadline) {
					break
				}
			}
			took := time.Since(start)
			b.StopTimer()
			cancel()
			<-done
			mu.Lock()
			b.ReportMetric(float64(passed), "passed")
			mu.Unlock()
			b.ReportMetric(float64(want), "poison")
			b.ReportMetric(float64(took.Milliseconds()), "ms/1000-records")
			b.ReportMetric(float64(cp.saves)/10, "checkpoint-writes/100-records")
		}
	})
}

// countingCheckpoints counts the saves it passes to Checkpoints in
// counted's saves.
type countingCheckpoints struct {
	dynamo.Checkpoints
	counted *memCheckpoints
}

func (c *countingCheckpoints) Save(ctx context.Context, arn, shard, seq string) error {
	c.counted.mu.Lock()
	c.counted.saves++
	c.counted.mu.Unlock()
	return c.Checkpoints.Save(ctx, arn, shard, seq)
}

// naivePoll is the worker a team would write first: every interval, list
// the shards and read each from the iterator it kept.
func naivePoll(ctx context.Context, c dynamo.StreamsClient, arn string, interval time.Duration) {
	iters := map[string]*string{}
	for ctx.Err() == nil {
		d, err := c.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
		if err == nil {
			for _, sh := range d.StreamDescription.Shards {
				id := aws.ToString(sh.ShardId)
				if iters[id] == nil {
					it, err := c.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeLatest})
					if err != nil {
						continue
					}
					iters[id] = it.ShardIterator
				}
				if out, err := c.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iters[id]}); err == nil {
					iters[id] = out.NextShardIterator
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
}

// reportLatency reports the mean, median and worst of lat.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(sum.Microseconds())/float64(len(lat))/1000, "ms/event")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(0, "ns/op")
}

package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// recorder is a StreamHandler that keeps every batch it is handed and fails
// the records fail picks. It is safe for concurrent use.
type recorder struct {
	mu      sync.Mutex
	batches [][]events.DynamoDBEventRecord
	fail    func(events.DynamoDBEventRecord) bool
	err     error // returned instead of a response when set
}

func (r *recorder) handle(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, ev.Records)
	if r.err != nil {
		return events.DynamoDBEventResponse{}, r.err
	}
	var resp events.DynamoDBEventResponse
	for _, rec := range ev.Records {
		if r.fail != nil && r.fail(rec) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: rec.Change.SequenceNumber})
		}
	}
	return resp, nil
}

// take returns the records handed over since the last take, in order, as
// "EVENT sk" strings.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, b := range r.batches {
		for _, rec := range b {
			out = append(out, rec.EventName+" "+rec.Change.Keys["sk"].String())
		}
	}
	r.batches = nil
	return out
}

// rawTable writes items straight to a fresh table, without a Store.
type rawTable struct {
	t     testing.TB
	c     *dynamodb.Client
	table string
}

func (rt rawTable) put(sk string, attrs map[string]types.AttributeValue) {
	rt.t.Helper()
	item := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "p"},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}
	for k, v := range attrs {
		item[k] = v
	}
	if _, err := rt.c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(rt.table), Item: item}); err != nil {
		rt.t.Fatalf("put %s: %v", sk, err)
	}
}

func (rt rawTable) delete(sk string) {
	rt.t.Helper()
	_, err := rt.c.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(rt.table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "p"},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}})
	if err != nil {
		rt.t.Fatalf("delete %s: %v", sk, err)
	}
}

// poll runs one Poll and checks how many records were accepted.
func poll(t *testing.T, r *dynamo.StreamReader, h dynamo.StreamHandler, want int) {
	t.Helper()
	got, err := r.Poll(context.Background(), h)
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	if got != want {
		t.Fatalf("Poll delivered %d records, want %d", got, want)
	}
}

func TestStreamReaderDeliversEveryChangeInOrderOnce(t *testing.T) {
	t.Parallel()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	rt := rawTable{t, c, table}
	for i := range 5 {
		rt.put("k"+strconv.Itoa(i), nil)
	}
	rt.put("k1", map[string]types.AttributeValue{"v": &types.AttributeValueMemberN{Value: "1"}})
	rt.delete("k3")
	rt.delete("k0")

	rec := &recorder{}
	r := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn)
	poll(t, r, rec.handle, 8)
	want := []string{"INSERT k0", "INSERT k1", "INSERT k2", "INSERT k3", "INSERT k4", "MODIFY k1", "REMOVE k3", "REMOVE k0"}
	if diff := cmp.Diff(want, rec.take()); diff != "" {
		t.Fatalf("delivered records (-want +got):\n%s", diff)
	}

	// Caught up: nothing more, and the handler is not called.
	poll(t, r, rec.handle, 0)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("second Poll delivered %v", got)
	}

	// New changes come next, and only they.
	rt.put("k5", nil)
	poll(t, r, rec.handle, 1)
	if diff := cmp.Diff([]string{"INSERT k5"}, rec.take()); diff != "" {
		t.Fatalf("after a new write (-want +got):\n%s", diff)
	}

	// A fresh reader starts at TRIM_HORIZON and sees everything again.
	again := &recorder{}
	poll(t, dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn), again.handle, 9)
	if diff := cmp.Diff(append(want, "INSERT k5"), again.take()); diff != "" {
		t.Fatalf("fresh reader (-want +got):\n%s", diff)
	}
}

func TestStreamReaderRecordsHaveLambdasShape(t *testing.T) {
	t.Parallel()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	rt := rawTable{t, c, table}
	rt.put("a", map[string]types.AttributeValue{
		"kind": &types.AttributeValueMemberS{Value: "UM"},
		"tags": &types.AttributeValueMemberSS{Value: []string{"x", "y"}},
	})
	rt.delete("a")
	var got []events.DynamoDBEventRecord
	h := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		got = append(got, ev.Records...)
		return events.DynamoDBEventResponse{}, nil
	}
	poll(t, dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn), h, 2)
	for _, r := range got {
		if r.EventSource != "aws:dynamodb" || r.EventSourceArn != arn || r.EventID == "" || r.EventVersion == "" {
			t.Errorf("record %s: source %q arn %q id %q version %q", r.EventName, r.EventSource, r.EventSourceArn, r.EventID, r.EventVersion)
		}
		if r.Change.StreamViewType != "NEW_AND_OLD_IMAGES" || r.Change.SequenceNumber == "" || r.Change.SizeBytes <= 0 {
			t.Errorf("record %s: view %q seq %q size %d", r.EventName, r.Change.StreamViewType, r.Change.SequenceNumber, r.Change.SizeBytes)
		}
		if r.Change.ApproximateCreationDateTime.IsZero() {
			t.Errorf("record %s: no ApproximateCreationDateTime", r.EventName)
		}
		if r.Change.Keys["pk"].String() != "p" || r.Change.Keys["sk"].String() != "a" {
			t.Errorf("record %s: keys %v", r.EventName, r.Change.Keys)
		}
	}
	if len(got) != 2 {
		t.Fatalf("got %d records", len(got))
	}
	// NEW_AND_OLD_IMAGES: an insert has its new image, a delete its old
	// image, and a user's delete carries no userIdentity.
	if got[0].Change.OldImage != nil || got[0].Change.NewImage["kind"].String() != "UM" {
		t.Errorf("INSERT images: old %v new %v", got[0].Change.OldImage, got[0].Change.NewImage)
	}
	old := got[1].Change.OldImage
	if got[1].EventName != "REMOVE" || got[1].UserIdentity != nil || old["kind"].String() != "UM" ||
		!cmp.Equal(old["tags"].StringSet(), []string{"x", "y"}) {
		t.Errorf("REMOVE record: name %q identity %v old image %v", got[1].EventName, got[1].UserIdentity, old)
	}
}

func TestStreamReaderRedeliversFromTheFirstFailedRecord(t *testing.T) {
	t.Parallel()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	rt := rawTable{t, c, table}
	for _, sk := range []string{"a", "b", "c", "d"} {
		rt.put(sk, nil)
	}
	r := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn)
	failing := map[string]bool{}
	rec := &recorder{fail: func(e events.DynamoDBEventRecord) bool { return failing[e.Change.Keys["sk"].String()] }}
	step := func(name string, fail []string, accepted int, want ...string) {
		t.Helper()
		clear(failing)
		for _, sk := range fail {
			failing[sk] = true
		}
		poll(t, r, rec.handle, accepted)
		if diff := cmp.Diff(want, rec.take()); diff != "" {
			t.Fatalf("%s: delivered (-want +got):\n%s", name, diff)
		}
	}
	// b and d fail: a is accepted, and b with everything after it comes
	// again, however many of them failed.
	step("b and d fail", []string{"b", "d"}, 1, "INSERT a", "INSERT b", "INSERT c", "INSERT d")
	step("d fails", []string{"d"}, 2, "INSERT b", "INSERT c", "INSERT d")
	step("all pass", nil, 1, "INSERT d")
	step("caught up", nil, 0)

	// The first record fails: nothing is accepted, the same comes again.
	rt.put("e", nil)
	step("first fails", []string{"e"}, 0, "INSERT e")
	step("first passes", nil, 1, "INSERT e")
}

func TestStreamReaderHandlerErrorFailsTheWholeBatch(t *testing.T) {
	t.Parallel()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	rt := rawTable{t, c, table}
	rt.put("a", nil)
	rt.put("b", nil)
	r := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn)

	boom := errors.New("boom")
	rec := &recorder{err: boom}
	n, err := r.Poll(context.Background(), rec.handle)
	if !errors.Is(err, boom) || n != 0 {
		t.Fatalf("Poll with a failing handler = %d, %v; want 0, boom", n, err)
	}
	rec.take()

	// An item identifier that is not in the batch fails it too, as on Lambda.
	bad := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: "not-a-sequence-number"}}}, nil
	}
	if n, err := r.Poll(context.Background(), bad); !errors.Is(err, driver.ErrInvalidInput) || n != 0 {
		t.Fatalf("Poll with an unknown item identifier = %d, %v; want 0, ErrInvalidInput", n, err)
	}

	rec.err = nil
	poll(t, r, rec.handle, 2)
	if diff := cmp.Diff([]string{"INSERT a", "INSERT b"}, rec.take()); diff != "" {
		t.Fatalf("after the errors (-want +got):\n%s", diff)
	}
}

// TestStreamReaderRunPollsUntilCancelled: Run polls until its context is
// cancelled, then returns ctx.Err(). It runs on an in-memory stream and
// waits on what the handler saw, not on time, so that a loaded machine
// cannot fail it (the timeouts are failsafes).
func TestStreamReaderRunPollsUntilCancelled(t *testing.T) {
	t.Parallel()
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", emptyAt: -1}}}
	r := dynamo.NewStreamReader(s, "arn")
	if err := r.Run(context.Background(), (&recorder{}).handle, 0); !errors.Is(err, driver.ErrInvalidInput) {
		t.Fatalf("Run with interval 0 = %v, want ErrInvalidInput", err)
	}
	seen, h := sequences()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, h, time.Millisecond) }()
	for i := range 3 {
		seq := fmt.Sprint(i + 1)
		s.add("open", seq)
		select {
		case got := <-seen:
			if got != seq {
				t.Fatalf("Run delivered %q, want %q", got, seq)
			}
		case <-time.After(time.Minute):
			t.Fatalf("Run did not deliver %s", seq)
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after cancel")
	}
	if len(seen) != 0 {
		t.Fatalf("Run delivered more than was written: %d extra", len(seen))
	}
}

// sequences returns a handler that accepts every record and sends its
// sequence number to the channel (buffered for 10).
func sequences() (chan string, dynamo.StreamHandler) {
	seen := make(chan string, 10)
	return seen, func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			seen <- r.Change.SequenceNumber
		}
		return events.DynamoDBEventResponse{}, nil
	}
}

// TestStreamReaderReportsItsRequests checks that the handler's context
// carries the requests the reader made to fetch each batch
// (driver.BatchRequests): for the first batch, the checkpoints' load, the
// stream's description, a shard iterator and the page of records; for the
// next, what it took to fetch that one. Each
// names its table and its service, and calls nothing else.
func TestStreamReaderReportsItsRequests(t *testing.T) {
	t.Parallel()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	st := dynamo.New(c, table)
	cp, err := st.Checkpoints("test")
	if err != nil {
		t.Fatal(err)
	}
	rt := rawTable{t, c, table}
	rt.put("k0", nil)
	var batches [][]driver.Request
	h := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		batches = append(batches, driver.BatchRequests(ctx))
		if l := driver.RequestLogFrom(ctx); l != nil {
			t.Error("the handler's context holds the reader's request log")
		}
		return events.DynamoDBEventResponse{}, nil
	}
	r := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn, dynamo.WithCheckpoints(cp))
	poll(t, r, h, 1)
	rt.put("k1", nil)
	poll(t, r, h, 1)
	if len(batches) != 2 {
		t.Fatalf("%d batches, want 2", len(batches))
	}
	ops := func(reqs []driver.Request) []string {
		var out []string
		for _, r := range reqs {
			out = append(out, r.Service+" "+r.Op)
			if r.Table != table || r.Err != nil || r.Start.IsZero() || r.ReadUnits != 0 && r.Service != "DynamoDB" {
				t.Errorf("request %+v: want table %s, no error, a start, no capacity for the Streams API", r, table)
			}
		}
		return out
	}
	// Each Poll lists the shards; the second goes on with the iterator the
	// first kept. The first batch's checkpoint save and the empty page
	// after it came after the first pass's last batch: no batch has them.
	want := [][]string{
		{"DynamoDB Query", "DynamoDB Streams DescribeStream", "DynamoDB Streams GetShardIterator", "DynamoDB Streams GetRecords"},
		{"DynamoDB Streams DescribeStream", "DynamoDB Streams GetRecords"},
	}
	for i, b := range batches {
		if diff := cmp.Diff(want[i], ops(b)); diff != "" {
			t.Errorf("batch %d's requests (-want +got):\n%s", i, diff)
		}
	}
}

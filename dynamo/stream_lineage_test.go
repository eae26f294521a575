package dynamo_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox/dynamo"
)

// splitStream is an in-memory stream whose shards have split, which
// DynamoDB Local does not do within a test's time: it serves the three
// Streams calls the way AWS documents them, so that the reader's handling
// of shard lineage, DescribeStream pages and empty pages of a closed shard
// can be tested. It is safe for concurrent use.
type splitStream struct {
	mu       sync.Mutex
	shards   []*fakeShard // in listing order
	pageSize int          // shards per DescribeStream page
	opened   []string     // shard IDs of each GetShardIterator call
	// gen is the generation of the iterators handed out: an iterator of an
	// earlier generation has expired.
	gen int
}

type fakeShard struct {
	id, parent string
	closed     bool
	seqs       []string
	// emptyAt is a position at which GetRecords first returns emptyRun (at
	// least one) empty pages with a next iterator, as AWS may mid-shard;
	// -1 for none.
	emptyAt, emptyRun int
}

func (s *splitStream) DescribeStream(_ context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := 0
	if in.ExclusiveStartShardId != nil {
		start = slices.IndexFunc(s.shards, func(f *fakeShard) bool { return f.id == *in.ExclusiveStartShardId }) + 1
	}
	end := min(start+s.pageSize, len(s.shards))
	desc := &types.StreamDescription{StreamArn: in.StreamArn}
	for _, f := range s.shards[start:end] {
		sh := types.Shard{ShardId: aws.String(f.id), SequenceNumberRange: &types.SequenceNumberRange{StartingSequenceNumber: aws.String("1")}}
		if f.parent != "" {
			sh.ParentShardId = aws.String(f.parent)
		}
		if f.closed {
			sh.SequenceNumberRange.EndingSequenceNumber = aws.String(f.seqs[len(f.seqs)-1])
		}
		desc.Shards = append(desc.Shards, sh)
	}
	if end < len(s.shards) {
		desc.LastEvaluatedShardId = aws.String(s.shards[end-1].id)
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: desc}, nil
}

func (s *splitStream) shard(id string) *fakeShard {
	i := slices.IndexFunc(s.shards, func(f *fakeShard) bool { return f.id == id })
	return s.shards[i]
}

func (s *splitStream) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.shard(*in.ShardId)
	s.opened = append(s.opened, f.id)
	pos := 0
	switch in.ShardIteratorType {
	case types.ShardIteratorTypeTrimHorizon:
	case types.ShardIteratorTypeLatest:
		pos = len(f.seqs)
	case types.ShardIteratorTypeAfterSequenceNumber:
		pos = slices.Index(f.seqs, aws.ToString(in.SequenceNumber)) + 1
		if pos == 0 {
			return nil, &types.TrimmedDataAccessException{Message: aws.String("sequence number " + aws.ToString(in.SequenceNumber) + " trimmed from shard " + f.id)}
		}
	default:
		return nil, fmt.Errorf("iterator type %s not served", in.ShardIteratorType)
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(s.iterator(f, pos))}, nil
}

// iterator returns an iterator of f at pos, of the current generation.
func (s *splitStream) iterator(f *fakeShard, pos int) string {
	return f.id + "|" + strconv.Itoa(pos) + "|" + strconv.Itoa(s.gen)
}

// expire makes every iterator handed out so far expire.
func (s *splitStream) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
}

// add appends records to shard id.
func (s *splitStream) add(id string, seqs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.shard(id)
	f.seqs = append(f.seqs, seqs...)
}

// openedCount returns how many iterators were asked for.
func (s *splitStream) openedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.opened)
}

func (s *splitStream) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := strings.Split(*in.ShardIterator, "|")
	f := s.shard(parts[0])
	pos, _ := strconv.Atoi(parts[1])
	if gen, _ := strconv.Atoi(parts[2]); gen < s.gen {
		return nil, &types.ExpiredIteratorException{Message: aws.String("iterator expired")}
	}
	end := min(pos+int(aws.ToInt32(in.Limit)), len(f.seqs))
	if pos == f.emptyAt {
		if f.emptyRun--; f.emptyRun <= 0 {
			f.emptyAt = -1
		}
		end = pos
	}
	out := &dynamodbstreams.GetRecordsOutput{}
	for _, seq := range f.seqs[pos:end] {
		out.Records = append(out.Records, types.Record{
			EventID:   aws.String("ev" + seq),
			EventName: types.OperationTypeInsert,
			Dynamodb: &types.StreamRecord{
				Keys:           map[string]types.AttributeValue{"sk": &types.AttributeValueMemberS{Value: seq}},
				SequenceNumber: aws.String(seq),
			},
		})
	}
	if !(f.closed && end == len(f.seqs)) {
		out.NextShardIterator = aws.String(s.iterator(f, end))
	}
	return out, nil
}

// newSplitStream lists the child before its parent, one shard per
// DescribeStream page; the parent is closed with an empty page inside it,
// and "orphan"'s parent has been trimmed from the stream.
func newSplitStream() *splitStream {
	return &splitStream{
		pageSize: 1,
		shards: []*fakeShard{
			{id: "child", parent: "parent", seqs: []string{"4", "5"}, emptyAt: -1},
			{id: "parent", closed: true, seqs: []string{"1", "2", "3"}, emptyAt: 0},
			{id: "orphan", parent: "trimmed", seqs: []string{"6"}, emptyAt: -1},
		},
	}
}

// seqs returns the sequence numbers the recorder was handed, in order.
func (r *recorder) seqs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, b := range r.batches {
		for _, rec := range b {
			out = append(out, rec.Change.SequenceNumber)
		}
	}
	r.batches = nil
	return out
}

func TestStreamReaderReadsParentShardsBeforeChildren(t *testing.T) {
	s := newSplitStream()
	r := dynamo.NewStreamReader(s, "arn:stream")
	rec := &recorder{}
	ctx := context.Background()

	if n, err := r.Poll(ctx, rec.handle); err != nil || n != 6 {
		t.Fatalf("Poll = %d, %v; want 6, nil", n, err)
	}
	if diff := cmp.Diff([]string{"1", "2", "3", "4", "5", "6"}, rec.seqs()); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}

	// The parent is done: it is not opened again. New child records come.
	s.mu.Lock()
	s.opened = nil
	s.shards[0].seqs = append(s.shards[0].seqs, "7")
	s.mu.Unlock()
	if n, err := r.Poll(ctx, rec.handle); err != nil || n != 1 {
		t.Fatalf("second Poll = %d, %v; want 1, nil", n, err)
	}
	if diff := cmp.Diff([]string{"7"}, rec.seqs()); diff != "" {
		t.Fatalf("second Poll (-want +got):\n%s", diff)
	}
	if slices.Contains(s.opened, "parent") {
		t.Errorf("the finished parent shard was read again: %v", s.opened)
	}
}

func TestStreamReaderHoldsChildrenWhileTheParentFails(t *testing.T) {
	s := newSplitStream()
	r := dynamo.NewStreamReader(s, "arn:stream")
	failing := true
	rec := &recorder{fail: func(e events.DynamoDBEventRecord) bool { return failing && e.Change.SequenceNumber == "2" }}
	ctx := context.Background()

	// 2 fails: of the batch 1-3 only 1 is accepted, the child waits, and
	// the unrelated orphan goes on.
	if n, err := r.Poll(ctx, rec.handle); err != nil || n != 2 {
		t.Fatalf("Poll = %d, %v; want 2, nil", n, err)
	}
	if diff := cmp.Diff([]string{"1", "2", "3", "6"}, rec.seqs()); diff != "" {
		t.Fatalf("with a failure (-want +got):\n%s", diff)
	}
	failing = false
	if n, err := r.Poll(ctx, rec.handle); err != nil || n != 4 {
		t.Fatalf("Poll = %d, %v; want 4, nil", n, err)
	}
	if diff := cmp.Diff([]string{"2", "3", "4", "5"}, rec.seqs()); diff != "" {
		t.Fatalf("after the failure (-want +got):\n%s", diff)
	}
}

func TestStreamReaderResumesATrimmedShardAtItsTrimHorizon(t *testing.T) {
	s := newSplitStream()
	r := dynamo.NewStreamReader(s, "arn:stream")
	rec := &recorder{}
	ctx := context.Background()
	if n, err := r.Poll(ctx, rec.handle); err != nil || n != 6 {
		t.Fatalf("Poll = %d, %v; want 6, nil", n, err)
	}
	rec.seqs()
	// A day later the child's records up to its checkpoint (5) and the
	// next one (7) have been trimmed; 8 and 9 are new. The iterators of a
	// day ago have long expired (they live 15 minutes).
	s.mu.Lock()
	s.shards[0].seqs = []string{"8", "9"}
	s.mu.Unlock()
	s.expire()
	if n, err := r.Poll(ctx, rec.handle); err != nil || n != 2 {
		t.Fatalf("Poll after trimming = %d, %v; want 2, nil", n, err)
	}
	if diff := cmp.Diff([]string{"8", "9"}, rec.seqs()); diff != "" {
		t.Fatalf("after trimming (-want +got):\n%s", diff)
	}
}

// TestStreamReaderFollowsEmptyPages: records behind a few empty pages of an
// open shard come in one Poll; behind many, in later Polls that go on from
// the iterator where the last one stopped, never from the start again: the
// first Poll follows 5 empty pages of its fresh iterator, each later one a
// single page of the kept iterator (an idle shard costs one request).
func TestStreamReaderFollowsEmptyPages(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		empties, polls int
	}{{3, 1}, {12, 9}} {
		s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1", "2"}, emptyAt: 0, emptyRun: c.empties}}}
		r := dynamo.NewStreamReader(s, "arn")
		rec := &recorder{}
		for poll := 1; poll <= c.polls; poll++ {
			if _, err := r.Poll(ctx, rec.handle); err != nil {
				t.Fatal(err)
			}
			got := rec.seqs()
			if poll < c.polls && len(got) != 0 || poll == c.polls && !slices.Equal(got, []string{"1", "2"}) {
				t.Fatalf("%d empty pages, Poll %d delivered %v; want [1 2] at Poll %d", c.empties, poll, got, c.polls)
			}
		}
		if n := s.openedCount(); n != 1 {
			t.Errorf("%d empty pages: %d shard iterators asked for, want 1 (the others kept)", c.empties, n)
		}
	}
}

// TestStreamReaderKeepsAndRenewsIterators: a Poll goes on with the
// iterator the last one stopped at; when it has expired, it asks for a new
// one after the checkpoint, losing and repeating nothing.
func TestStreamReaderKeepsAndRenewsIterators(t *testing.T) {
	ctx := context.Background()
	s := &splitStream{pageSize: 10, shards: []*fakeShard{{id: "open", seqs: []string{"1"}, emptyAt: -1}}}
	r := dynamo.NewStreamReader(s, "arn")
	rec := &recorder{}
	poll := func(want ...string) {
		t.Helper()
		if _, err := r.Poll(ctx, rec.handle); err != nil {
			t.Fatal(err)
		}
		if got := rec.seqs(); !slices.Equal(got, want) {
			t.Fatalf("Poll delivered %v, want %v", got, want)
		}
	}
	poll("1")
	s.add("open", "2", "3")
	poll("2", "3")
	if n := s.openedCount(); n != 1 {
		t.Errorf("%d shard iterators asked for in two Polls, want 1", n)
	}
	s.expire()
	s.add("open", "4")
	poll("4")
	poll()
	if n := s.openedCount(); n != 2 {
		t.Errorf("%d shard iterators asked for, want 2 (one after the expiry)", n)
	}
}

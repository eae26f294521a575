package dynamo_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// streamFaults is an http.RoundTripper in front of DynamoDB Local's
// Streams API that fails a share of the calls the ways the service does:
// a throttle (LimitExceededException), a 500, and, for GetRecords, an
// expired iterator or one past the trim horizon. It is safe for concurrent use.
type streamFaults struct {
	base http.RoundTripper
	mu   sync.Mutex
	rng  *rand.Rand
	rate float64
	hits map[string]int
}

func (f *streamFaults) RoundTrip(req *http.Request) (*http.Response, error) {
	op := req.Header.Get("X-Amz-Target")
	op = op[strings.LastIndex(op, ".")+1:]
	f.mu.Lock()
	var body string
	status := 400
	if f.rng.Float64() < f.rate {
		switch k := f.rng.IntN(3); {
		case k == 0:
			body = `{"__type":"com.amazonaws.dynamodb.v20120810#LimitExceededException","message":"injected throttle"}`
		case k == 1:
			body, status = `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected"}`, 500
		case op == "GetRecords" && f.rng.IntN(2) == 0:
			body = `{"__type":"com.amazonaws.dynamodb.v20120810#ExpiredIteratorException","message":"injected expiry"}`
		case op == "GetRecords":
			body = `{"__type":"com.amazonaws.dynamodb.v20120810#TrimmedDataAccessException","message":"injected trim"}`
		}
	}
	if body != "" {
		f.hits[op]++
	}
	f.mu.Unlock()
	if body == "" {
		return f.base.RoundTrip(req)
	}
	req.Body.Close()
	return jsonResponse(req, status, body), nil
}

// delivery records what a faulty handler accepted, per item key, in order.
type delivery struct {
	mu   sync.Mutex
	seqs map[string][]string // item key -> sequence numbers, as accepted
}

// recordKey is a record's pk and sk.
func recordKey(r events.DynamoDBEventRecord) string {
	return r.Change.Keys["pk"].String() + "|" + r.Change.Keys["sk"].String()
}

// lessSeq orders two sequence numbers.
func lessSeq(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
}

// TestStreamReaderUnderFaults runs the inbox's StreamHandler through a
// StreamReader whose Streams calls fail at random (throttles, 500s, expired
// iterators) and whose handler fails records at random (some before
// applying them, some after), restarting the reader mid-stream from its
// checkpoints in the table, then running two workers at once, while users publish, read and delete, and
// another program deletes messages behind the library's back. Every record
// reaches the handler at least once, in order per item, and the counts
// stay exact: Counts equals what List shows, and what was written.
func TestStreamReaderUnderFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	store := dynamo.New(c, table)
	var evMu sync.Mutex
	var evs []inbox.Event
	ib := inbox.New(store, inbox.WithEvents(func(_ context.Context, e inbox.Event) error {
		evMu.Lock()
		defer evMu.Unlock()
		evs = append(evs, e)
		return nil
	}))
	rng := rand.New(rand.NewPCG(7, 15))

	faults := &streamFaults{base: http.DefaultTransport, rng: rand.New(rand.NewPCG(1, 2)), rate: 0.3, hits: map[string]int{}}
	cfg := ddblocal.Config(t)
	cfg.HTTPClient = &http.Client{Transport: faults}
	// No SDK retries: every injected fault reaches the reader.
	streams := dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) { o.RetryMaxAttempts = 1 })
	cp, err := store.Checkpoints("faults")
	if err != nil {
		t.Fatal(err)
	}
	got := &delivery{seqs: map[string][]string{}}
	var hmu sync.Mutex
	hrng := rand.New(rand.NewPCG(3, 4))
	handler := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		hmu.Lock()
		roll, k := hrng.IntN(10), hrng.IntN(len(ev.Records))
		hmu.Unlock()
		recs := ev.Records
		switch roll {
		case 0, 1: // fails record k before applying it
			recs = recs[:k]
		}
		resp, err := ib.StreamHandler(ctx, events.DynamoDBEvent{Records: recs})
		if err != nil {
			return resp, err
		}
		if roll < 2 {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: ev.Records[k].Change.SequenceNumber})
		} else if roll == 2 && len(resp.BatchItemFailures) == 0 { // applies all, fails k
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: ev.Records[k].Change.SequenceNumber})
		}
		first := len(ev.Records)
		for _, f := range resp.BatchItemFailures {
			first = min(first, slices.IndexFunc(ev.Records, func(r events.DynamoDBEventRecord) bool { return r.Change.SequenceNumber == f.ItemIdentifier }))
		}
		got.mu.Lock()
		for _, r := range ev.Records[:first] {
			got.seqs[recordKey(r)] = append(got.seqs[recordKey(r)], r.Change.SequenceNumber)
		}
		got.mu.Unlock()
		return resp, nil
	}
	var hookMu sync.Mutex
	var reported int
	var passed []dynamo.Failure
	hooks := dynamo.ReaderHooks{
		OnError:   func(context.Context, error) { hookMu.Lock(); reported++; hookMu.Unlock() },
		OnFailure: func(_ context.Context, f dynamo.Failure) { hookMu.Lock(); passed = append(passed, f); hookMu.Unlock() },
	}
	fast := retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
		return time.Duration(attempt) * 5 * time.Millisecond, nil
	})
	run := func() (stop func()) {
		r := dynamo.NewStreamReader(streams, arn, dynamo.WithCheckpoints(cp), dynamo.WithHooks(hooks),
			dynamo.WithRetries(-1, fast), dynamo.WithErrorBackoff(fast))
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- r.Run(rctx, handler, 20*time.Millisecond) }()
		return func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Run returned %v, want context.Canceled", err)
			}
		}
	}

	scope := driver.Scope{Tenant: "acme", Inbox: "main"}
	users := []string{"ann", "bob", "cy"}
	live := map[string][]string{} // user -> message IDs standing
	step := func(i int) {
		u := users[rng.IntN(len(users))]
		switch r := rng.IntN(10); {
		case r < 5 || len(live[u]) == 0:
			res, err := ib.Publish(ctx, scope, []string{u}, inbox.Draft{Title: fmt.Sprint("m", i), Category: "c"})
			if err != nil {
				t.Fatal(err)
			}
			live[u] = append(live[u], res.Message.ID)
		case r < 7:
			id := live[u][rng.IntN(len(live[u]))]
			if _, err := ib.MarkRead(ctx, scope.User(u), id); err != nil {
				t.Fatal(err)
			}
		case r < 8:
			j := rng.IntN(len(live[u]))
			if _, err := ib.Delete(ctx, scope.User(u), live[u][j]); err != nil {
				t.Fatal(err)
			}
			live[u] = slices.Delete(live[u], j, j+1)
		default: // another program deletes the item: only the stream accounts it
			j := rng.IntN(len(live[u]))
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: driver.Partition{Tenant: scope.Tenant, Inbox: scope.Inbox, User: u}.PK()},
				"sk": &types.AttributeValueMemberS{Value: driver.MessageSK(live[u][j])},
			}})
			if err != nil {
				t.Fatal(err)
			}
			live[u] = slices.Delete(live[u], j, j+1)
		}
	}
	stop := run()
	for i := range 40 {
		step(i)
	}
	stop() // a restart mid-stream, from the checkpoints in the table
	// Two workers of one consumer (not the supported setup): each reads
	// every record; the accounting stays exact all the same.
	stop, stop2 := run(), run()
	for i := 40; i < 80; i++ {
		step(i)
	}

	// Every record of the stream, read without faults.
	all := map[string][]string{}
	clean := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn)
	if _, err := clean.Poll(ctx, func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			all[recordKey(r)] = append(all[recordKey(r)], r.Change.SequenceNumber)
		}
		return events.DynamoDBEventResponse{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	missing := func() []string {
		got.mu.Lock()
		defer got.mu.Unlock()
		var out []string
		for k, seqs := range all {
			for _, s := range seqs {
				if !slices.Contains(got.seqs[k], s) {
					out = append(out, k+" "+s)
				}
			}
		}
		return out
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	stop2()
	if m := missing(); len(m) > 0 {
		t.Fatalf("%d records never reached the handler: %v", len(m), m)
	}
	// The checkpoint is the furthest record reached, never moved back
	var last string
	for _, seqs := range all {
		for _, s := range seqs {
			if lessSeq(s, last) > 0 {
				last = s
			}
		}
	}
	saved, err := cp.Load(ctx, arn)
	if err != nil {
		t.Fatal(err)
	}
	var furthest string
	for _, s := range saved {
		if lessSeq(s, furthest) > 0 {
			furthest = s
		}
	}
	// (It may be past it: at a checkpoint item's own record.)
	if lessSeq(furthest, last) < 0 {
		t.Errorf("checkpoints %v, want the furthest at or after the stream's last record %s", saved, last)
	}
	got.mu.Lock()
	for k, seqs := range got.seqs {
		// In order per item: each record first comes after the item's
		// earlier ones (a redelivery repeats a suffix).
		var firsts []string
		for _, s := range seqs {
			if !slices.Contains(firsts, s) {
				firsts = append(firsts, s)
			}
		}
		if !slices.IsSortedFunc(firsts, lessSeq) {
			t.Errorf("item %s: records first accepted in the order %v", k, firsts)
		}
	}
	got.mu.Unlock()
	if len(passed) != 0 {
		t.Errorf("with retries forever, %d records were passed", len(passed))
	}
	t.Logf("faults injected: %v; errors reported: %d", faults.hits, reported)
	if reported == 0 || len(faults.hits) == 0 {
		t.Errorf("no fault was injected or reported (injected %v, reported %d)", faults.hits, reported)
	}

	for _, u := range users {
		cs, err := ib.Counts(ctx, scope.User(u))
		if err != nil {
			t.Fatal(err)
		}
		var listed []driver.Message
		for o := (inbox.ListOptions{Limit: 100}); ; {
			p, err := ib.List(ctx, scope.User(u), o)
			if err != nil {
				t.Fatal(err)
			}
			listed = append(listed, p.Messages...)
			if o.Cursor = p.Cursor; o.Cursor == "" {
				break
			}
		}
		var read int64
		for _, m := range listed {
			if !m.ReadAt.IsZero() {
				read++
			}
		}
		want := inbox.Tally{Total: int64(len(live[u])), Read: read, Unread: int64(len(live[u])) - read, Unseen: int64(len(live[u])) - read} // nothing marked seen
		if cs.Tally != want || len(listed) != len(live[u]) {
			t.Errorf("%s: Counts %+v, List shows %d (%d read), %d written and standing", u, cs.Tally, len(listed), read, len(live[u]))
		}
	}
	evMu.Lock()
	defer evMu.Unlock()
	if len(evs) == 0 {
		t.Error("no events")
	}
}

// TestStreamReaderFromLatestNeverReplays: a reader started FromLatest on
// DynamoDB Local, whose Streams calls fail before a first record has come
// (an expired iterator, a failed read, the handler failing the first
// record), hands its handler every record written after it started, in
// order, and none written before. The one exception: records written
// after the start while no read has succeeded yet, when the iterator then
// expires, cannot be told from older ones, and may be passed.
func TestStreamReaderFromLatestNeverReplays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	rt := rawTable{t, c, table}
	expired := &streamtypes.ExpiredIteratorException{Message: aws.String("injected expiry")}
	internal := &smithy.GenericAPIError{Code: "InternalServerError", Message: "injected", Fault: smithy.FaultServer}
	// A step writes items, then polls once: it writes the items during
	// before the poll's first GetRecords (the reader has taken its
	// iterators: a first poll has started), every GetRecords of the poll
	// fails with fail, and the handler fails the record refuse. With
	// unsure, the items during may be passed.
	type step struct {
		write, during []string
		fail          error
		refuse        string
		unsure        bool
	}
	for i, tc := range []struct {
		name  string
		steps []step
	}{
		{"expired iterator after an empty read", []step{{}, {write: []string{"b1"}, fail: expired}, {write: []string{"b2"}}}},
		{"failed read after an empty read", []step{{}, {write: []string{"b1"}, fail: internal}, {write: []string{"b2"}}}},
		{"every read of the first pass fails", []step{{fail: internal}, {write: []string{"b1"}}, {write: []string{"b2"}}}},
		{"every read of the first pass expires", []step{{fail: expired}, {write: []string{"b1"}}, {write: []string{"b2"}}}},
		{"written before the first pass's expired read", []step{{during: []string{"b1"}, fail: expired, unsure: true}, {write: []string{"b2"}}}},
		{"written before the first pass's failed read", []step{{during: []string{"b1"}, fail: internal}, {write: []string{"b2"}}}},
		{"written during a clean first pass, then expired", []step{{during: []string{"b1"}}, {write: []string{"b2"}, fail: expired}, {}}},
		{"the handler fails the first record", []step{{}, {write: []string{"b1", "b2"}, refuse: "b1"}, {}, {write: []string{"b3"}}}},
	} {
		// Everything in the table, this case's "pre" too, was written
		// before the reader started.
		prefix := fmt.Sprintf("c%d-", i)
		rt.put(prefix+"pre", nil)
		var mu sync.Mutex
		var fail error
		var during []string
		cs := &countingStream{StreamsClient: ddblocal.StreamsClient(t), fail: func(op string) error {
			mu.Lock()
			defer mu.Unlock()
			if op != "GetRecords" {
				return nil
			}
			for _, k := range during {
				rt.put(k, nil)
			}
			during = nil
			return fail
		}}
		var refuse string
		rec := &recorder{fail: func(e events.DynamoDBEventRecord) bool { return e.Change.Keys["sk"].String() == refuse }}
		r := dynamo.NewStreamReader(cs, arn, dynamo.WithStart(dynamo.FromLatest), dynamo.WithRetries(-1, nil),
			dynamo.WithHooks(dynamo.ReaderHooks{OnError: func(context.Context, error) {}}))
		var written, unsure, handed []string
		for _, st := range tc.steps {
			for _, k := range st.write {
				rt.put(prefix+k, nil)
				written = append(written, "INSERT "+prefix+k)
			}
			mu.Lock()
			fail = st.fail
			for _, k := range st.during {
				during = append(during, prefix+k)
				if st.unsure {
					unsure = append(unsure, "INSERT "+prefix+k)
				} else {
					written = append(written, "INSERT "+prefix+k)
				}
			}
			mu.Unlock()
			refuse = prefix + st.refuse
			_, err := r.Poll(ctx, rec.handle)
			if st.fail == nil && err != nil {
				t.Fatalf("%s: Poll: %v", tc.name, err)
			}
			handed = append(handed, rec.take()...)
		}
		// A last clean poll: whatever is still owed comes now.
		mu.Lock()
		fail = nil
		mu.Unlock()
		refuse = ""
		if _, err := r.Poll(ctx, rec.handle); err != nil {
			t.Fatalf("%s: last Poll: %v", tc.name, err)
		}
		handed = append(handed, rec.take()...)
		var firsts []string
		for _, h := range handed {
			switch {
			case slices.Contains(unsure, h):
			case !slices.Contains(written, h):
				t.Errorf("%s: handed %s, written before the reader started", tc.name, h)
			case !slices.Contains(firsts, h):
				firsts = append(firsts, h)
			}
		}
		if !slices.Equal(firsts, written) {
			t.Errorf("%s: handed %v first in the order %v, want every record written after the start: %v", tc.name, handed, firsts, written)
		}
	}
}

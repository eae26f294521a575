package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// fault is what faultTransport does to one request.
type fault int

const (
	pass      fault = iota // forward the request, return the response
	throttle               // answer 400 ProvisionedThroughputExceeded without forwarding
	failed                 // answer 500 without forwarding
	lost                   // forward, discard the real response, answer 500
	conflict               // answer a TransactionCanceledException for a TransactionConflict (transactions only)
	throttled              // answer a TransactionCanceledException for throttling, as DynamoDB does within transactions
)

var faultNames = [...]string{"pass", "throttle", "failed", "lost", "conflict", "throttled"}

// faultTransport is an http.RoundTripper in front of DynamoDB Local that
// makes some calls fail the ways DynamoDB and networks do. choose picks
// the fault of each call from its operation (the X-Amz-Target action). It
// counts what it did per fault and operation. It is safe for concurrent
// use.
type faultTransport struct {
	base   http.RoundTripper
	choose func(op string) fault

	mu     sync.Mutex
	counts map[string]int // "<fault> <op>"
}

func (f *faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	op := req.Header.Get("X-Amz-Target")
	op = op[strings.LastIndex(op, ".")+1:]
	ft := f.choose(op)
	f.mu.Lock()
	f.counts[faultNames[ft]+" "+op]++
	f.mu.Unlock()
	switch ft {
	case throttle:
		req.Body.Close()
		return jsonResponse(req, 400, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"x"}`), nil
	case failed:
		req.Body.Close()
		return jsonResponse(req, 500, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected"}`), nil
	case conflict:
		req.Body.Close()
		return jsonResponse(req, 400, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",`+
			`"message":"Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]",`+
			`"CancellationReasons":[{"Code":"TransactionConflict","Message":"Transaction is ongoing for the item"}]}`), nil
	case throttled:
		req.Body.Close()
		return jsonResponse(req, 400, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",`+
			`"message":"Transaction cancelled, please refer cancellation reasons for specific reasons [None, ThrottlingError, None]",`+
			`"CancellationReasons":[{"Code":"None"},{"Code":"ThrottlingError","Message":"Throughput exceeds the current capacity for one or more global secondary indexes."},{"Code":"None"}]}`), nil
	case lost:
		resp, err := f.base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return jsonResponse(req, 500, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"response lost"}`), nil
	}
	return f.base.RoundTrip(req)
}

// count returns how often fault ft was applied to op ("" for any op).
func (f *faultTransport) count(ft fault, op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for k, v := range f.counts {
		name, o, _ := strings.Cut(k, " ")
		if name == faultNames[ft] && (op == "" || o == op) {
			n += v
		}
	}
	return n
}

// jsonResponse is a DynamoDB-style JSON response.
func jsonResponse(req *http.Request, status int, body string) *http.Response {
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// faultyStore returns a Store on a fresh table whose client goes through
// a faultTransport using choose, the plain client and the table.
func faultyStore(t *testing.T, choose func(op string) fault) (*dynamo.Store, *faultTransport, string) {
	t.Helper()
	raw := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, raw)
	ft := &faultTransport{base: http.DefaultTransport, choose: choose, counts: map[string]int{}}
	cfg := ddblocal.Config(t)
	cfg.HTTPClient = &http.Client{Transport: ft}
	return dynamo.New(ddblocal.ClientFromConfig(cfg), table), ft, table
}

// TestTransactionConflictIsRetried answers the first transactions with a
// TransactionConflict cancellation, which the SDK alone does not retry: the
// Store's writes still succeed, once each.
func TestTransactionConflictIsRetried(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	left := 3
	store, ft, _ := faultyStore(t, func(op string) fault {
		mu.Lock()
		defer mu.Unlock()
		if op == "TransactWriteItems" && left > 0 {
			left--
			return conflict
		}
		return pass
	})
	ib := inbox.New(store)
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "hi"})
	if err != nil {
		t.Fatalf("Publish through conflicts: %v", err)
	}
	left = 2
	if ok, err := ib.MarkRead(ctx, scope.User("ann"), res.Message.ID); err != nil || !ok {
		t.Fatalf("MarkRead through conflicts = %v, %v", ok, err)
	}
	if n := ft.count(conflict, ""); n != 5 {
		t.Errorf("%d conflicts injected, want 5", n)
	}
	c, err := ib.Counts(ctx, scope.User("ann"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != 1 || c.Read != 1 {
		t.Errorf("Counts = %+v, want total 1, read 1", c.Tally)
	}
}

// TestIsolatedReadConflictIsRetried answers the first TransactGetItems of
// an isolated read of counters with a TransactionConflict cancellation (a
// transaction was writing one of its items), which the SDK alone does not
// retry: the read is retried and returns the counters.
func TestIsolatedReadConflictIsRetried(t *testing.T) {
	ctx := context.Background()
	var left atomic.Int32
	left.Store(2)
	store, ft, _ := faultyStore(t, func(op string) fault {
		if op == "TransactGetItems" && left.Add(-1) >= 0 {
			return conflict
		}
		return pass
	})
	p := driver.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	now := time.Now().UTC().Truncate(time.Second)
	rec := driver.Record{Partition: p, Message: driver.Message{
		ID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{"ann"}},
		Category: "billing", Title: "hi", ReceivedAt: now, DeliveredAt: now, ExpiresAt: now.Add(time.Hour),
	}}
	rec.Entry = driver.NewLedgerSK(rec.Message.ExpiresAt, rec.Message.ID)
	if err := store.PutMessage(ctx, rec, driver.RecordCounters(rec)); err != nil {
		t.Fatal(err)
	}
	st, err := store.Stats(ctx, driver.StatsQuery{Partition: p, Keys: []driver.Counter{{Category: "billing"}}, Isolated: true})
	if err != nil || len(st.Counters) != 1 || st.Counters[0].Published != 1 || st.Version == 0 {
		t.Fatalf("Stats(Isolated) after two conflicts = %+v, %v; want billing's counter and a version", st, err)
	}
	if n := ft.count(conflict, "TransactGetItems"); n != 2 {
		t.Errorf("%d TransactGetItems answered with a conflict, want 2", n)
	}
}

// TestThrottledTransactionIsRetried answers transactions with a
// cancellation for throttling, DynamoDB's way of throttling a transaction,
// which the SDK alone does not retry: every write still succeeds, once.
func TestThrottledTransactionIsRetried(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	left := 0
	store, ft, _ := faultyStore(t, func(op string) fault {
		mu.Lock()
		defer mu.Unlock()
		if op == "TransactWriteItems" && left > 0 {
			left--
			return throttled
		}
		return pass
	})
	set := func(n int) { mu.Lock(); left = n; mu.Unlock() }
	ib := inbox.New(store)
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	set(2)
	res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "hi", Category: "ops"})
	if err != nil {
		t.Fatalf("Publish through throttling: %v", err)
	}
	set(2)
	b, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "all"})
	if err != nil {
		t.Fatalf("Broadcast through throttling: %v", err)
	}
	for _, id := range []string{res.Message.ID, b.ID} {
		set(1)
		if ok, err := ib.MarkRead(ctx, scope.User("ann"), id); err != nil || !ok {
			t.Fatalf("MarkRead through throttling = %v, %v", ok, err)
		}
	}
	if n := ft.count(throttled, ""); n != 6 {
		t.Errorf("%d throttled cancellations injected, want 6", n)
	}
	c, err := ib.Counts(ctx, scope.User("ann"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != 2 || c.Read != 2 || c.Categories["ops"] != (inbox.Tally{Total: 1, Read: 1}) {
		t.Errorf("Counts = %+v, want total 2, read 2, ops 1/1", c)
	}
}

// TestFaultsKeepCountersExact runs a few hundred mixed operations through
// an Inbox whose DynamoDB calls are throttled, fail, conflict or lose their
// responses after being applied, and checks that every counter equals a
// recount of the items it summarises, computed from raw Query results.
func TestFaultsKeepCountersExact(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a few hundred operations against DynamoDB Local")
	}
	ctx := context.Background()
	var rmu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	store, ft, table := faultyStore(t, func(op string) fault {
		rmu.Lock()
		defer rmu.Unlock()
		switch r := rng.Float64(); {
		case r < 0.06:
			return throttle
		case r < 0.10:
			return failed
		case r < 0.20:
			return lost
		case r < 0.25 && op == "TransactWriteItems":
			return conflict
		case r < 0.29 && op == "TransactWriteItems":
			return throttled
		}
		return pass
	})
	ib := inbox.New(store, inbox.WithConcurrency(4))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	users := []string{"u0", "u1", "u2", "u3", "u4"}
	cats := []string{"", "a", "b"}

	var (
		mu   sync.Mutex
		ids  = map[string][]string{} // message IDs each user can see
		errs []string
	)
	fail := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, fmt.Sprintf("%s: %v", what, err))
	}
	const workers, steps = 4, 75
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 99))
			for range steps {
				u := users[r.IntN(len(users))]
				d := inbox.Draft{Title: "t", Category: cats[r.IntN(len(cats))]}
				switch op := r.IntN(100); {
				case op < 25:
					to := []string{u, users[r.IntN(len(users))]}
					if r.IntN(3) == 0 {
						// A host ID stands for one message: its content
						// follows from it.
						k := r.IntN(10)
						d.HostSystemID, d.Category = fmt.Sprintf("p%d", k), cats[k%len(cats)]
					}
					res, err := ib.Publish(ctx, scope, to, d)
					if err != nil {
						fail("publish", err)
						continue
					}
					mu.Lock()
					for _, x := range append(res.Delivered, res.Duplicates...) {
						ids[x] = append(ids[x], res.Message.ID)
					}
					mu.Unlock()
				case op < 35:
					if r.IntN(3) == 0 {
						k := r.IntN(5)
						d.HostSystemID, d.Category = fmt.Sprintf("b%d", k), cats[k%len(cats)]
					}
					m, err := ib.Broadcast(ctx, scope, d)
					if err != nil {
						fail("broadcast", err)
						continue
					}
					mu.Lock()
					for _, x := range users {
						ids[x] = append(ids[x], m.ID)
					}
					mu.Unlock()
				case op < 70:
					mu.Lock()
					seen := ids[u]
					id := ""
					if len(seen) > 0 {
						id = seen[r.IntN(len(seen))]
					}
					mu.Unlock()
					if id == "" {
						continue
					}
					if _, err := ib.MarkRead(ctx, scope.User(u), id); err != nil {
						fail("mark read", err)
					}
				case op < 75:
					if _, err := ib.MarkAllRead(ctx, scope.User(u), inbox.ListOptions{}); err != nil {
						fail("mark all read", err)
					}
				case op < 90:
					if _, err := ib.List(ctx, scope.User(u), inbox.ListOptions{UnreadOnly: r.IntN(2) == 0}); err != nil {
						fail("list", err)
					}
				default:
					if _, err := ib.Counts(ctx, scope.User(u)); err != nil {
						fail("counts", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Errorf("%d operations failed (the client retries 10 times), first: %s", len(errs), errs[0])
	}

	raw := ddblocal.Client(t)
	opt := cmp.AllowUnexported(rawTally{})
	parts := []driver.Partition{{Tenant: "acme", Inbox: "alerts", Group: driver.PublicGroup}}
	for _, u := range users {
		parts = append(parts, driver.Partition{Tenant: "acme", Inbox: "alerts", User: u})
	}
	published, read := int64(0), int64(0)
	for _, p := range parts {
		counters := nonZero(rawCounters(t, raw, table, p.PK()))
		recounted := nonZero(rawRecount(t, raw, table, p.PK()))
		if diff := cmp.Diff(recounted, counters, opt); diff != "" {
			t.Errorf("%s: counters differ from a recount of the items (-recount +counters):\n%s", p.PK(), diff)
		}
		published += recounted["c#*"].published
		read += recounted["c#*"].read
	}
	if published < 50 || read < 20 {
		t.Errorf("only %d messages published and %d read: the test exercised little", published, read)
	}
	for _, c := range []struct {
		ft fault
		op string
	}{{throttle, ""}, {failed, ""}, {lost, "TransactWriteItems"}, {lost, "PutItem"}, {conflict, "TransactWriteItems"}} {
		if ft.count(c.ft, c.op) == 0 {
			t.Errorf("no %s fault injected on %q", faultNames[c.ft], c.op)
		}
	}
	t.Logf("published %d, read %d; faults: %v", published, read, ft.counts)
}

// cancellingTransport is an http.RoundTripper in front of DynamoDB Local
// for TransactWriteItems calls that write a user's partition: it answers
// those of a user in refuse with a cancellation for throttling, without
// forwarding them, and forwards those of a user in apply, reads
// DynamoDB's answer, then calls cancel and fails the request with its
// context's error, as a call cancelled after DynamoDB applied it does.
type cancellingTransport struct {
	base          http.RoundTripper
	refuse, apply string
	cancel        context.CancelFunc
}

func (c *cancellingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".TransactWriteItems") {
		return c.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(strings.NewReader(string(body)))
	switch {
	case strings.Contains(string(body), "U#"+c.refuse+"#"):
		return jsonResponse(req, 400, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",`+
			`"message":"Transaction cancelled, please refer cancellation reasons for specific reasons [ThrottlingError]",`+
			`"CancellationReasons":[{"Code":"ThrottlingError","Message":"Throughput exceeds the current capacity of your table or index."}]}`), nil
	case strings.Contains(string(body), "U#"+c.apply+"#"):
		resp, err := c.base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.cancel()
		return nil, req.Context().Err()
	}
	return c.base.RoundTrip(req)
}

// TestPublishCancelledInFlight cancels a Publish while a copy's
// TransactWriteItems is in flight, after DynamoDB applied it: that user is
// Unknown; a user whose transaction DynamoDB refused (throttling, after the
// client's retries) is Failed, as is one whose write had not begun. A
// retry with the same HostSystemID gives every user exactly one copy, and
// the counters equal a recount of the items.
func TestPublishCancelledInFlight(t *testing.T) {
	t.Parallel()
	raw := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, raw)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := ddblocal.Config(t)
	cfg.HTTPClient = &http.Client{Transport: &cancellingTransport{base: http.DefaultTransport, refuse: "bob", apply: "cid", cancel: cancel}}
	// One write at a time, in order: ann, bob, cid, then dan.
	ib := inbox.New(dynamo.New(ddblocal.ClientFromConfig(cfg), table), inbox.WithConcurrency(1))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	users := []string{"ann", "bob", "cid", "dan"}
	d := inbox.Draft{Title: "hi", Category: "ops", HostSystemID: "job-9"}

	res, err := ib.Publish(ctx, scope, users, d)
	if !errors.Is(err, inbox.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) || !errors.Is(err, inbox.ErrThrottled) {
		t.Fatalf("err = %v, want ErrOutcomeUnknown, context.Canceled and ErrThrottled", err)
	}
	if diff := cmp.Diff([]string{"ann"}, res.Delivered); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	if got := slices.Sorted(maps.Keys(res.Unknown)); !slices.Equal(got, []string{"cid"}) {
		t.Errorf("unknown = %v, want cid", res.Unknown)
	}
	if got := slices.Sorted(maps.Keys(res.Failed)); !slices.Equal(got, []string{"bob", "dan"}) ||
		!errors.Is(res.Failed["bob"], inbox.ErrThrottled) || !errors.Is(res.Failed["dan"], context.Canceled) {
		t.Errorf("failed = %v, want bob throttled and dan cancelled", res.Failed)
	}
	copies := func(u string) int {
		return len(rawQuery(t, raw, table, scope.User(u).Partition().PK(), driver.MessagePrefix))
	}
	for u, want := range map[string]int{"ann": 1, "bob": 0, "cid": 1, "dan": 0} {
		if n := copies(u); n != want {
			t.Errorf("after the cancelled publish %s holds %d copies, want %d", u, n, want)
		}
	}

	plain := inbox.New(dynamo.New(raw, table))
	again, err := plain.Publish(context.Background(), scope, users, d)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"bob", "dan"}, again.Delivered); diff != "" {
		t.Errorf("retry delivered (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ann", "cid"}, again.Duplicates); diff != "" {
		t.Errorf("retry duplicates (-want +got):\n%s", diff)
	}
	opt := cmp.AllowUnexported(rawTally{})
	for _, u := range users {
		pk := scope.User(u).Partition().PK()
		if n := copies(u); n != 1 {
			t.Errorf("%s holds %d copies, want 1", u, n)
		}
		if diff := cmp.Diff(nonZero(rawRecount(t, raw, table, pk)), nonZero(rawCounters(t, raw, table, pk)), opt); diff != "" {
			t.Errorf("%s: counters differ from a recount (-recount +counters):\n%s", u, diff)
		}
		c, err := plain.Counts(context.Background(), scope.User(u))
		if err != nil {
			t.Fatal(err)
		}
		if c.Total != 1 || c.Unread != 1 || c.Categories["ops"].Total != 1 {
			t.Errorf("%s: Counts = %+v, want one unread message in ops", u, c)
		}
	}
}

package inbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// recorder keeps what Hooks report. It is safe for concurrent use.
type recorder struct {
	mu    sync.Mutex
	began []inbox.Operation
	ops   []inbox.OperationReport
	calls []inbox.StoreCallReport
	cache []inbox.CacheEvent
}

// opKey marks the contexts the recorder's Operation hook returns.
type opKey struct{}

func (r *recorder) hooks() inbox.Hooks {
	return inbox.Hooks{
		Operation: func(ctx context.Context, op inbox.Operation) (context.Context, func(inbox.OperationReport)) {
			r.mu.Lock()
			r.began = append(r.began, op)
			r.mu.Unlock()
			return context.WithValue(ctx, opKey{}, op.Name), func(rep inbox.OperationReport) {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.ops = append(r.ops, rep)
			}
		},
		StoreCall: func(ctx context.Context, c inbox.StoreCall) (context.Context, func(inbox.StoreCallReport)) {
			parent, _ := ctx.Value(opKey{}).(string)
			return ctx, func(rep inbox.StoreCallReport) {
				r.mu.Lock()
				defer r.mu.Unlock()
				if parent != c.Operation {
					rep.Name += " (outside its operation's context: " + parent + ")"
				}
				r.calls = append(r.calls, rep)
			}
		},
		SharedCache: func(_ context.Context, e inbox.CacheEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.cache = append(r.cache, e)
		},
	}
}

// take returns what was reported since the last take, and forgets it.
func (r *recorder) take() ([]inbox.OperationReport, []inbox.StoreCallReport, []inbox.CacheEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops, calls, cache := r.ops, r.calls, r.cache
	r.ops, r.calls, r.cache, r.began = nil, nil, nil, nil
	return ops, calls, cache
}

// callNames returns the names of calls, sorted.
func callNames(calls []inbox.StoreCallReport) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

// only returns the one report of ops, failing t if there is not exactly one
// or it is not of operation name.
func only(t *testing.T, ops []inbox.OperationReport, name string) inbox.OperationReport {
	t.Helper()
	if len(ops) != 1 || ops[0].Name != name {
		var names []string
		for _, o := range ops {
			names = append(names, o.Name)
		}
		t.Fatalf("operations reported %v, want one %s", names, name)
	}
	return ops[0]
}

// TestHooksReportOperations checks what an Inbox on memstore reports of a
// publish to three users, a List (twice: the shared cache misses, then
// hits), a MarkRead, a bad call and a not-found one.
func TestHooksReportOperations(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var rec recorder
	ib := inbox.New(memstore.New(memstore.WithClock(clock)), inbox.WithClock(clock), inbox.WithHooks(rec.hooks()))
	s := inbox.Scope{Tenant: "acme", Inbox: "alerts"}

	res, err := ib.Publish(ctx, s, []string{"ann", "bob", "cy"}, inbox.Draft{Title: "Disk full", HostSystemID: "alert-1"})
	if err != nil {
		t.Fatal(err)
	}
	ops, calls, _ := rec.take()
	op := only(t, ops, "Publish")
	if op.Scope != s || op.User != "" || op.Outcome != inbox.OutcomeOK || op.Err != nil || op.Duration <= 0 {
		t.Errorf("Publish report %+v", op)
	}
	if want := []string{"ClaimHostID", "Config", "PutMessage", "PutMessage", "PutMessage"}; !slices.Equal(callNames(calls), want) {
		t.Errorf("Publish's store calls %v, want %v", callNames(calls), want)
	}
	if op.StoreCalls != len(calls) || op.Totals != (inbox.RequestTotals{}) {
		t.Errorf("Publish report: %d store calls, totals %+v; want %d, and no requests (memstore makes none)", op.StoreCalls, op.Totals, len(calls))
	}
	for _, c := range calls {
		if c.Operation != "Publish" || c.Scope != s || c.Shared || c.Outcome != inbox.OutcomeOK || len(c.Requests) != 0 {
			t.Errorf("store call %+v", c)
		}
	}

	// A broadcast, so that List reads the public partition through the
	// shared cache: a miss and a refresh, then a hit.
	if _, err := ib.Broadcast(ctx, s, inbox.Draft{Title: "Maintenance"}); err != nil {
		t.Fatal(err)
	}
	rec.take()
	ann := s.User("ann")
	for i := range 2 {
		if _, err := ib.List(ctx, ann, inbox.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		ops, calls, cache := rec.take()
		op := only(t, ops, "List")
		if op.User != "ann" || op.Scope != s || op.StoreCalls != len(calls) {
			t.Errorf("List %d report %+v, with %d store calls", i, op, len(calls))
		}
		var kinds []string
		for _, e := range cache {
			kinds = append(kinds, e.Kind.String())
			if e.Operation != "List" || e.Partition != s.Public() {
				t.Errorf("List %d cache event %+v", i, e)
			}
		}
		want := []string{"miss", "refresh"}
		if i == 1 {
			want = []string{"hit"}
		}
		if !slices.Equal(kinds, want) {
			t.Errorf("List %d cache events %v, want %v", i, kinds, want)
		}
		for _, c := range calls {
			if c.Operation != "List" {
				t.Errorf("List %d store call %+v", i, c)
			}
		}
	}

	if _, err := ib.MarkRead(ctx, ann, res.Message.ID); err != nil {
		t.Fatal(err)
	}
	ops, calls, _ = rec.take()
	op = only(t, ops, "MarkRead")
	if op.Outcome != inbox.OutcomeOK || !slices.Contains(callNames(calls), "Mark") {
		t.Errorf("MarkRead report %+v, store calls %v", op, callNames(calls))
	}

	_, err = ib.MarkRead(ctx, ann, "01ARZ3NDEKTSV4RRFFQ69G5FAV")
	ops, _, _ = rec.take()
	if op := only(t, ops, "MarkRead"); op.Outcome != inbox.OutcomeNotFound || !errors.Is(op.Err, inbox.ErrNotFound) || !errors.Is(err, inbox.ErrNotFound) {
		t.Errorf("MarkRead of no message: %v, reported %v (%v)", err, op.Err, op.Outcome)
	}
	_, err = ib.List(ctx, s.User("a#b"), inbox.ListOptions{})
	ops, calls, _ = rec.take()
	if op := only(t, ops, "List"); op.Outcome != inbox.OutcomeBadInput || op.Err != err || op.StoreCalls != 0 || len(calls) != 0 {
		t.Errorf("List of a bad user: %v, reported %+v with %d store calls", err, op, len(calls))
	}
}

// TestHooksReportStreamBatches checks the report of a StreamHandler batch
// (its records, failures and lag) and of a HandleChange.
func TestHooksReportStreamBatches(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var rec recorder
	mem := memstore.New(memstore.WithClock(clock), memstore.WithChanges())
	ib := inbox.New(mem, inbox.WithClock(clock), inbox.WithHooks(rec.hooks()))

	good := record("ev-1", "REMOVE", messageImage("ann", "users", "", false))
	good.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: now.Add(-7 * time.Second)}
	older := record("ev-2", "REMOVE", messageImage("bob", "users", "", false))
	older.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: now.Add(-9 * time.Second)}
	bad := record("ev-3", "REMOVE", nil) // no image: fails
	if failed := handle(t, ib, older, good, bad); !slices.Equal(failed, []string{"seq-ev-3"}) {
		t.Fatalf("failed %v", failed)
	}
	ops, calls, _ := rec.take()
	op := only(t, ops, "StreamHandler")
	want := inbox.StreamBatch{Records: 3, Failed: 1, Newest: now.Add(-7 * time.Second), Age: 7 * time.Second}
	if op.Stream != want || op.Scope != (inbox.Scope{}) || op.Err != nil {
		t.Errorf("StreamHandler report: stream %+v, scope %+v, err %v; want %+v", op.Stream, op.Scope, op.Err, want)
	}
	// Each removal of another program's item (no ledger entry), then the
	// check of its partition's recount time (the records run in parallel).
	if got := callNames(calls); !slices.Equal(sorted(got), []string{"ApplyRemoval", "ApplyRemoval", "Stats", "Stats"}) {
		t.Errorf("store calls %v", got)
	}
	if op.StreamReads != nil {
		t.Errorf("a batch without a reader's requests reports %+v", op.StreamReads)
	}

	// A batch a stream reader fetched (dynamo.StreamReader puts its
	// requests in the handler's context): its report holds them, apart
	// from its own.
	reads := []driver.Request{{Op: "GetShardIterator", Service: "DynamoDB Streams", Table: "t"}, {Op: "GetRecords", Service: "DynamoDB Streams", Table: "t"}}
	again := record("ev-4", "REMOVE", messageImage("cy", "users", "", false))
	if _, err := ib.StreamHandler(driver.WithBatchRequests(ctx, reads), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{again}}); err != nil {
		t.Fatal(err)
	}
	ops, _, _ = rec.take()
	if op := only(t, ops, "StreamHandler"); !slices.EqualFunc(op.StreamReads, reads, func(a, b driver.Request) bool { return a.Op == b.Op }) || op.Totals.Requests != 0 {
		t.Errorf("StreamHandler report: stream reads %+v, totals %+v; want the reader's two, none of them in the totals", op.StreamReads, op.Totals)
	}

	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "hi"}); err != nil {
		t.Fatal(err)
	}
	rec.take()
	if n, err := mem.DeliverChanges(ctx, ib.HandleChange); err != nil || n != 1 {
		t.Fatalf("DeliverChanges = %d, %v", n, err)
	}
	ops, _, _ = rec.take()
	op = only(t, ops, "HandleChange")
	if op.Stream != (inbox.StreamBatch{Records: 1, Newest: now}) || op.Scope != scope {
		t.Errorf("HandleChange report %+v", op)
	}
}

// TestHooksReportRecountDrift checks that a Recount reports the counters
// it replaced, once for the whole call (not for the RecountPartition and
// Counts calls it makes), and none when the counts were right.
func TestHooksReportRecountDrift(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var rec recorder
	mem := memstore.New(memstore.WithClock(clock))
	ib := inbox.New(mem, inbox.WithClock(clock), inbox.WithHooks(rec.hooks()))
	ann := scope.User("ann")
	// Another program's message that updated no counter: c#* and
	// c#billing are one short.
	foreign := driver.Record{Partition: ann.Partition(), Message: driver.Message{
		ID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{"ann"}},
		Category: "billing", Title: "Invoice", ReceivedAt: now, DeliveredAt: now, ExpiresAt: now.Add(time.Hour),
	}}
	if err := mem.PutForeign(ctx, foreign, nil); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{2, 0} {
		if _, err := ib.Recount(ctx, ann); err != nil {
			t.Fatal(err)
		}
		ops, calls, _ := rec.take()
		op := only(t, ops, "Recount")
		if op.Repaired != want || op.User != "ann" || op.StoreCalls != len(calls) {
			t.Errorf("Recount %d: repaired %d, user %q, %d store calls of %d; want %d repaired", i, op.Repaired, op.User, op.StoreCalls, len(calls), want)
		}
	}
}

// TestHooksEventHandlerOperations checks that an EventHandler's calls to
// the Inbox are operations of their own, not part of the stream's.
func TestHooksEventHandlerOperations(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	mem := memstore.New(memstore.WithChanges())
	var ib *inbox.Inbox
	ib = inbox.New(mem, inbox.WithHooks(rec.hooks()), inbox.WithEvents(func(ctx context.Context, e inbox.Event) error {
		_, err := ib.Counts(ctx, scope.User("ann"))
		return err
	}))
	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "hi"}); err != nil {
		t.Fatal(err)
	}
	rec.take()
	if _, err := mem.DeliverChanges(ctx, ib.HandleChange); err != nil {
		t.Fatal(err)
	}
	ops, _, _ := rec.take()
	var names []string
	for _, o := range ops {
		names = append(names, o.Name)
	}
	if !slices.Equal(names, []string{"Counts", "HandleChange"}) {
		t.Errorf("operations %v, want Counts (the handler's, ended first) and HandleChange", names)
	}
}

// TestOutcomeOf checks the classes of the package's errors, wrapped as
// callers get them.
func TestOutcomeOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want inbox.Outcome
	}{
		{nil, inbox.OutcomeOK},
		{fmt.Errorf("x: %w", inbox.ErrInvalidKey), inbox.OutcomeBadInput},
		{inbox.ErrInvalidTTL, inbox.OutcomeBadInput},
		{inbox.ErrInvalidCursor, inbox.OutcomeBadInput},
		{inbox.ErrInvalidInput, inbox.OutcomeBadInput},
		{inbox.ErrTooLarge, inbox.OutcomeBadInput},
		{fmt.Errorf("x: %w", inbox.ErrNotFound), inbox.OutcomeNotFound},
		{inbox.ErrConflict, inbox.OutcomeConflict},
		{driver.ErrExists, inbox.OutcomeConflict},
		{driver.ErrStateChanged, inbox.OutcomeConflict},
		{fmt.Errorf("dynamo: query: %w: %w", inbox.ErrThrottled, errors.New("ThrottlingException")), inbox.OutcomeThrottled},
		{&inbox.PublishError{Failed: map[string]error{"ann": inbox.ErrTooLarge, "bob": inbox.ErrThrottled}}, inbox.OutcomeThrottled},
		{context.DeadlineExceeded, inbox.OutcomeOther},
		{errors.New("connection reset"), inbox.OutcomeOther},
	} {
		if got := inbox.OutcomeOf(c.err); got != c.want {
			t.Errorf("OutcomeOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	var names []string
	for o := inbox.OutcomeOK; o <= inbox.OutcomeOther; o++ {
		names = append(names, o.String())
	}
	if want := []string{"ok", "bad_input", "not_found", "conflict", "throttled", "other"}; !slices.Equal(names, want) {
		t.Errorf("outcome names %v, want %v", names, want)
	}
}

// TestLogHooks checks that LogHooks logs each operation, with its figures,
// and neither user IDs nor message content, nor the error's text.
func TestLogHooks(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ib := inbox.New(memstore.New(), inbox.WithHooks(inbox.LogHooks(l)))
	res, err := ib.Publish(ctx, scope, []string{"user-7f3a", "user-9c1b"}, inbox.Draft{Title: "title-secret", Body: map[string]any{"k": "body-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib.Recount(ctx, scope.User("user-7f3a")); err != nil {
		t.Fatal(err)
	}
	if _, err := ib.List(ctx, scope.User("user-7f3a"), inbox.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ib.Get(ctx, scope.User("user-9c1b"), res.Message.ID+"X"); err == nil {
		t.Fatal("Get of a bad ID succeeded")
	}
	out := buf.String()
	for _, want := range []string{`"msg":"inbox: operation","op":"Publish","tenant":"acme","inbox":"alerts"`, `"outcome":"ok","store_calls":3`,
		`"op":"Recount"`, `"repaired":0`, `"msg":"inbox: store call","call":"PutMessage","op":"Publish"`,
		`"msg":"inbox: shared cache","event":"hit","op":"List"`, `"op":"Get"`, `"outcome":"bad_input"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	for _, secret := range []string{"user-7f3a", "user-9c1b", "title-secret", "body-secret", res.Message.ID + "X"} {
		if strings.Contains(out, secret) {
			t.Errorf("log holds %q:\n%s", secret, out)
		}
	}
}

// TestHooksSharedBackend checks that an Inbox with hooks keeps its Store's
// namespace in the SharedBackend's keys (its Store is wrapped), so that it
// shares snapshots with an Inbox without hooks, and reports the snapshot
// it loads from the backend.
func TestHooksSharedBackend(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	backend := newMemBackend()
	if _, err := inbox.New(mem).Broadcast(ctx, scope, inbox.Draft{Title: "Maintenance"}); err != nil {
		t.Fatal(err)
	}
	if _, err := inbox.New(mem, inbox.WithSharedBackend(backend), inbox.WithSharedCache(time.Minute)).List(ctx, scope.User("ann"), inbox.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	var rec recorder
	ib := inbox.New(mem, inbox.WithSharedBackend(backend), inbox.WithSharedCache(time.Minute), inbox.WithHooks(rec.hooks()))
	if _, err := ib.List(ctx, scope.User("ann"), inbox.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, cache := rec.take()
	var kinds []string
	for _, e := range cache {
		kinds = append(kinds, e.Kind.String())
	}
	if !slices.Equal(kinds, []string{"miss", "load"}) {
		t.Errorf("cache events %v, want a miss and a load from the backend the other Inbox saved to", kinds)
	}
}

// sorted returns a sorted copy of s.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

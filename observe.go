package inbox

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stak/inbox/driver"
)

// Hooks are the functions an Inbox reports its work to (WithHooks): each
// operation (a call of an exported method), each call it makes to its
// Store, and each lookup of its shared-partition cache. Each may be nil.
// They are how a service sees what the inbox costs and whether it is
// healthy; package github.com/stak/inbox/otelinbox, a module of its own,
// turns them into OpenTelemetry spans and metrics, and LogHooks into log
// records, so this module depends on no telemetry library.
//
// Hooks run on the goroutine of the call they report, and must be safe
// for concurrent use: an Inbox is. What they are given names the tenant
// and inbox of each call; Operation.User names the user, and no report
// holds a message's content. A hook that exports reports should leave the
// user out unless the service decides otherwise (a user ID is personal
// data).
type Hooks struct {
	// Operation is called when an operation begins, with the context the
	// operation was called with; the operation runs with the context it
	// returns (its Store calls get it, and so the spans they start are the
	// operation's children), and calls the function it returns once, when
	// it ends. An operation that another one calls (Recount calls Counts)
	// is not reported apart: its work is the caller's.
	Operation func(ctx context.Context, op Operation) (context.Context, func(OperationReport))
	// StoreCall is called when a Store call begins, with the operation's
	// context; the call runs with the context it returns, and calls the
	// function it returns once, when it ends. Reads that the shared cache
	// serves make no Store call.
	StoreCall func(ctx context.Context, c StoreCall) (context.Context, func(StoreCallReport))
	// SharedCache is called at each event of the shared-partition cache
	// (see CacheEventKind).
	SharedCache func(ctx context.Context, e CacheEvent)
}

// WithHooks sets the functions the Inbox reports its operations, Store
// calls and shared-cache events to (see Hooks). Without hooks, an Inbox
// reports nothing and pays nothing for it.
//
// The Store's calls are reported by a wrapper the Inbox puts around it;
// the round trips and capacity units come from the requests the Store
// reports (driver.StartRequest: the dynamo Store reports each DynamoDB API
// call). The memstore Store makes none, so its calls show no round trips.
func WithHooks(h Hooks) Option { return func(ib *Inbox) { ib.hooks = h } }

// Request is one request a Store made to its backend: a DynamoDB API call
// (see driver.Request).
type Request = driver.Request

// RequestTotals sums the requests of an operation or a Store call: their
// number, their round trips (sequential stages: parallel requests share
// one) and the read and write capacity units AWS bills for them (see
// driver.RequestTotals): what DynamoDB reports, which the dynamo Store
// corrects where DynamoDB Local under-reports (transactions, reads that
// find nothing).
type RequestTotals = driver.RequestTotals

// Operation names an operation an Inbox reports to Hooks.Operation.
type Operation struct {
	// Name is the method's name: "List", "MarkRead", "Publish",
	// "StreamHandler", "RecountPartition"...
	Name string
	// Scope is the tenant and inbox the call is for: only the Tenant for
	// PutTenantSettings; for HandleChange the change's; empty for a
	// StreamHandler batch (its records may be of any inbox).
	Scope Scope
	// User is the ID of the user the call is for ("" for none). It is
	// personal data: leave it out of what the hook exports unless the
	// service decides otherwise.
	User string
}

// OperationReport is what an operation did, reported when it ends.
type OperationReport struct {
	Operation
	// Duration is how long it took, by the real clock.
	Duration time.Duration
	// Err is its error; Outcome its class (OutcomeOf).
	Err     error
	Outcome Outcome
	// StoreCalls is how many calls it made to the Store; Totals sums their
	// requests to the backend.
	StoreCalls int
	Totals     RequestTotals
	// Stream describes the batch of a StreamHandler call, or the one
	// change of a HandleChange call; zero for other operations.
	Stream StreamBatch
	// Repaired is how many counters a Recount or RecountPartition replaced
	// because they had drifted from what the records hold: 0 while
	// counts are exact.
	Repaired int
	// StreamReads are, for a StreamHandler batch that a reader of the
	// stream fetched (a dynamo.StreamReader), the requests it made to
	// fetch it, before the operation began: its DescribeStream,
	// GetShardIterator and GetRecords calls and its checkpoints' reads and
	// writes since its previous batch (driver.BatchRequests). They are the
	// reader's, not counted in Totals; none for a batch Lambda delivers.
	StreamReads []Request
}

// StreamBatch describes a batch of stream records (or changes) handled.
type StreamBatch struct {
	// Records is how many records the batch held; Failed how many of them
	// failed (a StreamHandler's batch item failures, a HandleChange that
	// returned an error).
	Records, Failed int
	// Newest is the time its newest record was written (the records'
	// ApproximateCreationDateTime, a change's At), zero if none says;
	// Age is how old that was when the handling ended, by the Inbox's
	// clock: the handler's lag, as Lambda's IteratorAge metric.
	Newest time.Time
	Age    time.Duration
}

// StoreCall names a call of the Inbox to its Store, reported to
// Hooks.StoreCall.
type StoreCall struct {
	// Name is the Store method's name: "Query", "PutMessage", "Mark"...
	Name string
	// Scope is the tenant and inbox of the partition the call addresses
	// (of its first key, for a call of several).
	Scope Scope
	// Shared is set when that partition is a shared one (everyone's or a
	// group's), not a user's.
	Shared bool
	// Operation is the name of the operation that made the call, "" for
	// a call made outside one (through Inbox.Store).
	Operation string
}

// StoreCallReport is what a Store call did, reported when it ends.
type StoreCallReport struct {
	StoreCall
	// Duration is how long it took, by the real clock.
	Duration time.Duration
	// Err is its error; Outcome its class (OutcomeOf). Some errors are
	// answers the Inbox expects (driver.ErrExists for a retried publish,
	// driver.ErrStateChanged for a race it retries): they are conflicts.
	Err     error
	Outcome Outcome
	// Requests are the requests the Store made to its backend for the
	// call, in the order they ended; Totals sums them.
	Requests []Request
	Totals   RequestTotals
}

// CacheEventKind is what happened in the shared-partition cache (see
// WithSharedCache).
type CacheEventKind int

const (
	// CacheHit is a read of a shared partition served from a snapshot in
	// this process's memory.
	CacheHit CacheEventKind = iota + 1
	// CacheMiss is a read that found no fresh snapshot: it waits for a
	// refresh (its own, or one another caller started), or reads the
	// store if the partition keeps changing.
	CacheMiss
	// CacheRefresh is a read of a shared partition from the store for a
	// new snapshot (its newest records and stats, twice or more).
	CacheRefresh
	// CacheLoad is a snapshot taken from the SharedBackend instead of the
	// store (WithSharedBackend).
	CacheLoad
)

// String returns the kind's name: "hit", "miss", "refresh" or "load".
func (k CacheEventKind) String() string {
	switch k {
	case CacheHit:
		return "hit"
	case CacheMiss:
		return "miss"
	case CacheRefresh:
		return "refresh"
	case CacheLoad:
		return "load"
	}
	return "unknown"
}

// CacheEvent is an event of the shared-partition cache.
type CacheEvent struct {
	Kind CacheEventKind
	// Partition is the shared partition (everyone's or a group's).
	Partition Partition
	// Operation is the name of the operation that caused it.
	Operation string
}

// Outcome classes the error of an operation or a Store call, for
// dashboards and alerts (OutcomeOf).
type Outcome int

const (
	// OutcomeOK is no error.
	OutcomeOK Outcome = iota
	// OutcomeBadInput is ErrInvalidKey, ErrInvalidTTL, ErrInvalidCursor,
	// ErrInvalidInput or ErrTooLarge: the caller's mistake.
	OutcomeBadInput
	// OutcomeNotFound is ErrNotFound.
	OutcomeNotFound
	// OutcomeConflict is ErrConflict, or a Store's driver.ErrExists or
	// driver.ErrStateChanged.
	OutcomeConflict
	// OutcomeThrottled is ErrThrottled: DynamoDB refused for lack of
	// capacity, after the client's retries.
	OutcomeThrottled
	// OutcomeOther is any other error: a timeout, a cancelled context, a
	// network or service failure.
	OutcomeOther
)

// String returns the outcome's name: "ok", "bad_input", "not_found",
// "conflict", "throttled" or "other" (OpenTelemetry's error.type takes
// them).
func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeBadInput:
		return "bad_input"
	case OutcomeNotFound:
		return "not_found"
	case OutcomeConflict:
		return "conflict"
	case OutcomeThrottled:
		return "throttled"
	}
	return "other"
}

// OutcomeOf returns the class of err, by the sentinel errors it wraps
// (errors.Is): throttling first, since an error that wraps several (a
// *PublishError) is an operator's concern if any is.
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, ErrThrottled):
		return OutcomeThrottled
	case errors.Is(err, ErrInvalidKey), errors.Is(err, ErrInvalidTTL), errors.Is(err, ErrInvalidCursor),
		errors.Is(err, ErrInvalidInput), errors.Is(err, ErrTooLarge):
		return OutcomeBadInput
	case errors.Is(err, ErrNotFound):
		return OutcomeNotFound
	case errors.Is(err, ErrConflict), errors.Is(err, driver.ErrExists), errors.Is(err, driver.ErrStateChanged):
		return OutcomeConflict
	}
	return OutcomeOther
}

// observing reports whether the Inbox has hooks for operations or Store
// calls.
func (h Hooks) observing() bool { return h.Operation != nil || h.StoreCall != nil }

// instrument returns store wrapped to report its calls, if the Inbox has
// hooks, and makes the EventHandler's calls operations of their own.
func (ib *Inbox) instrument(store Store) Store {
	if !ib.hooks.observing() {
		return store
	}
	if ib.events != nil {
		ib.events = outsideOperations(ib.events)
	}
	if store == nil {
		return nil
	}
	return observedStore{Store: store, hooks: ib.hooks}
}

// observationKey is the context key of the operation being observed.
type observationKey struct{}

// observation is one operation being reported. It is safe for concurrent
// use (an operation's Store calls run in parallel).
type observation struct {
	ib    *Inbox
	op    Operation
	start time.Time
	log   *driver.RequestLog
	done  func(OperationReport)

	mu         sync.Mutex
	storeCalls int
	stream     StreamBatch
	reads      []Request
	repaired   int
}

// observe begins the report of operation name, for scope s and user, if
// the Inbox has hooks, and replaces *ctx by the operation's context. Each
// exported method starts with
//
//	defer ib.observe(&ctx, "Name", scope, user).end(&err)
//
// (err its named error result), so that the report is sent when it
// returns. It returns nil, and changes nothing, without hooks or within
// another operation of ib (whose report covers this one's work).
func (ib *Inbox) observe(ctx *context.Context, name string, s Scope, user string) *observation {
	if !ib.hooks.observing() {
		return nil
	}
	if outer, _ := (*ctx).Value(observationKey{}).(*observation); outer != nil && outer.ib == ib {
		return nil
	}
	o := &observation{ib: ib, op: Operation{Name: name, Scope: s, User: user}, log: driver.NewRequestLog(nil)}
	c := context.WithValue(*ctx, observationKey{}, o)
	if ib.hooks.Operation != nil {
		c, o.done = ib.hooks.Operation(c, o.op)
	}
	*ctx = driver.WithRequestLog(c, o.log)
	o.start = time.Now()
	return o
}

// batch records that o handles records stream records, the newest
// written at newest (zero if unknown), read with the requests reads, and
// returns o.
func (o *observation) batch(records int, newest time.Time, reads []Request) *observation {
	if o != nil {
		o.stream, o.reads = StreamBatch{Records: records, Newest: newest}, reads
	}
	return o
}

// end sends o's report, with *err the operation's error. It does nothing
// on a nil o.
func (o *observation) end(err *error) {
	if o == nil || o.done == nil {
		return
	}
	r := OperationReport{Operation: o.op, Duration: time.Since(o.start), Err: *err, Outcome: OutcomeOf(*err), Totals: o.log.Totals()}
	o.mu.Lock()
	r.StoreCalls, r.Stream, r.StreamReads, r.Repaired = o.storeCalls, o.stream, o.reads, o.repaired
	o.mu.Unlock()
	if r.Stream.Records > 0 {
		if r.Err != nil && r.Stream.Failed == 0 {
			r.Stream.Failed = r.Stream.Records
		}
		if !r.Stream.Newest.IsZero() {
			r.Stream.Age = max(o.ib.clock().Sub(r.Stream.Newest), 0)
		}
	}
	o.done(r)
}

// observed returns the operation ctx reports, nil if none.
func observed(ctx context.Context) *observation {
	o, _ := ctx.Value(observationKey{}).(*observation)
	return o
}

// noteFailed records that n records of the stream batch of ctx's
// operation failed.
func noteFailed(ctx context.Context, n int) {
	if o := observed(ctx); o != nil {
		o.mu.Lock()
		o.stream.Failed = n
		o.mu.Unlock()
	}
}

// noteRepaired records that a recount replaced n counters of ctx's
// operation's partitions.
func noteRepaired(ctx context.Context, n int) {
	if o := observed(ctx); o != nil {
		o.mu.Lock()
		o.repaired += n
		o.mu.Unlock()
	}
}

// newestRecord returns the latest ApproximateCreationDateTime of ev's
// records, zero if none has one.
func newestRecord(ev events.DynamoDBEvent) time.Time {
	var t time.Time
	for _, r := range ev.Records {
		if at := r.Change.ApproximateCreationDateTime.Time; at.After(t) {
			t = at
		}
	}
	return t
}

// changeScope returns the scope of change c's partition.
func changeScope(c driver.Change) Scope {
	switch {
	case c.New != nil:
		return c.New.Partition.Scope()
	case c.Old != nil:
		return c.Old.Partition.Scope()
	case c.Preferences != nil:
		return c.PreferencesOf.Scope()
	}
	return c.SeenOf.Scope()
}

// driftOf returns how many counters a reset from old to recounted
// changes: those whose tallies differ, or that one side lacks.
func driftOf(old, recounted []driver.Counter) int {
	tallies := func(cs []driver.Counter) map[string]driver.Counter {
		out := make(map[string]driver.Counter, len(cs))
		for _, c := range cs {
			if !c.IsZero() {
				out[c.SK()] = c.Tallies()
			}
		}
		return out
	}
	a, b := tallies(old), tallies(recounted)
	n := 0
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			n++
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			n++
		}
	}
	return n
}

// outsideOperations returns h, calling it with a context that no longer
// names the operation that called it: an EventHandler that calls the
// Inbox (Counts, for a badge) makes operations of its own.
func outsideOperations(h EventHandler) EventHandler {
	return func(ctx context.Context, e Event) error {
		return h(context.WithValue(ctx, observationKey{}, (*observation)(nil)), e)
	}
}

// observedStore is the Store an Inbox with hooks calls (under its shared
// cache): it reports each call to Hooks.StoreCall, with the requests the
// Store reported for it, and counts it in its operation's report. It is
// safe for concurrent use if the Store it wraps is.
type observedStore struct {
	Store
	hooks Hooks
}

var _ driver.Namespacer = observedStore{}

// Namespace returns the wrapped Store's namespace ("" if it names none).
func (s observedStore) Namespace() string {
	if n, ok := s.Store.(driver.Namespacer); ok {
		return n.Namespace()
	}
	return ""
}

// begin starts reporting Store call name of partition p, and returns the
// call's context and the function to call with its error when it ends.
func (s observedStore) begin(ctx context.Context, name string, p Partition) (context.Context, func(error)) {
	op := observed(ctx)
	c := StoreCall{Name: name, Scope: p.Scope(), Shared: p.IsShared()}
	var parent *driver.RequestLog
	if op != nil {
		c.Operation, parent = op.op.Name, op.log
		op.mu.Lock()
		op.storeCalls++
		op.mu.Unlock()
	}
	if s.hooks.StoreCall == nil {
		return ctx, func(error) {}
	}
	log := driver.NewRequestLog(parent)
	ctx, done := s.hooks.StoreCall(ctx, c)
	ctx = driver.WithRequestLog(ctx, log)
	start := time.Now()
	return ctx, func(err error) {
		done(StoreCallReport{StoreCall: c, Duration: time.Since(start), Err: err, Outcome: OutcomeOf(err),
			Requests: log.Requests(), Totals: log.Totals()})
	}
}

// firstPartition returns the partition of the first key, zero if none.
func firstPartition(keys []driver.Key) Partition {
	if len(keys) == 0 {
		return Partition{}
	}
	return keys[0].Partition
}

// PutMessage reports the Store's PutMessage.
func (s observedStore) PutMessage(ctx context.Context, rec driver.Record, deltas []driver.Counter, receipts ...driver.Mark) (err error) {
	ctx, end := s.begin(ctx, "PutMessage", rec.Partition)
	defer func() { end(err) }()
	return s.Store.PutMessage(ctx, rec, deltas, receipts...)
}

// GetRecords reports the Store's GetRecords.
func (s observedStore) GetRecords(ctx context.Context, keys []driver.Key) (_ []driver.Record, err error) {
	ctx, end := s.begin(ctx, "GetRecords", firstPartition(keys))
	defer func() { end(err) }()
	return s.Store.GetRecords(ctx, keys)
}

// Query reports the Store's Query.
func (s observedStore) Query(ctx context.Context, q driver.Query) (_ driver.QueryResult, err error) {
	ctx, end := s.begin(ctx, "Query", q.Partition)
	defer func() { end(err) }()
	return s.Store.Query(ctx, q)
}

// Mark reports the Store's Mark.
func (s observedStore) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) (err error) {
	var p Partition
	if len(marks) > 0 {
		p = marks[0].Key.Partition
	}
	ctx, end := s.begin(ctx, "Mark", p)
	defer func() { end(err) }()
	return s.Store.Mark(ctx, marks, deltas)
}

// Stats reports the Store's Stats.
func (s observedStore) Stats(ctx context.Context, q driver.StatsQuery) (_ driver.Stats, err error) {
	ctx, end := s.begin(ctx, "Stats", q.Partition)
	defer func() { end(err) }()
	return s.Store.Stats(ctx, q)
}

// ApplyRemoval reports the Store's ApplyRemoval.
func (s observedStore) ApplyRemoval(ctx context.Context, r driver.Removal) (_ bool, err error) {
	ctx, end := s.begin(ctx, "ApplyRemoval", r.Record.Partition)
	defer func() { end(err) }()
	return s.Store.ApplyRemoval(ctx, r)
}

// Repair reports the Store's Repair.
func (s observedStore) Repair(ctx context.Context, p Partition, r driver.Repair) (err error) {
	ctx, end := s.begin(ctx, "Repair", p)
	defer func() { end(err) }()
	return s.Store.Repair(ctx, p, r)
}

// ClaimHostID reports the Store's ClaimHostID.
func (s observedStore) ClaimHostID(ctx context.Context, c driver.HostClaim) (_ driver.HostClaim, err error) {
	ctx, end := s.begin(ctx, "ClaimHostID", Partition{Tenant: c.Scope.Tenant, Inbox: c.Scope.Inbox, Group: c.Group})
	defer func() { end(err) }()
	return s.Store.ClaimHostID(ctx, c)
}

// Config reports the Store's Config.
func (s observedStore) Config(ctx context.Context, sc Scope) (_ driver.Config, err error) {
	ctx, end := s.begin(ctx, "Config", Partition{Tenant: sc.Tenant, Inbox: sc.Inbox})
	defer func() { end(err) }()
	return s.Store.Config(ctx, sc)
}

// PutTenantSettings reports the Store's PutTenantSettings.
func (s observedStore) PutTenantSettings(ctx context.Context, tenant string, ts driver.TenantSettings) (err error) {
	ctx, end := s.begin(ctx, "PutTenantSettings", Partition{Tenant: tenant})
	defer func() { end(err) }()
	return s.Store.PutTenantSettings(ctx, tenant, ts)
}

// PutInboxConfig reports the Store's PutInboxConfig.
func (s observedStore) PutInboxConfig(ctx context.Context, sc Scope, ic driver.InboxConfig) (err error) {
	ctx, end := s.begin(ctx, "PutInboxConfig", Partition{Tenant: sc.Tenant, Inbox: sc.Inbox})
	defer func() { end(err) }()
	return s.Store.PutInboxConfig(ctx, sc, ic)
}

// cacheEvent reports a shared-cache event of kind k on p to the hook, if
// any.
func (c *sharedCache) cacheEvent(ctx context.Context, k CacheEventKind, p Partition) {
	if c.hook == nil {
		return
	}
	e := CacheEvent{Kind: k, Partition: p}
	if o := observed(ctx); o != nil {
		e.Operation = o.op.Name
	}
	c.hook(ctx, e)
}

package otelinbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/stak/inbox"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/stak/inbox/otelinbox"

// Attribute keys of the inbox's own attributes (the others are the
// semantic conventions').
const (
	// OperationKey is the inbox operation: "List", "Publish"... On
	// operation spans and every inbox.* metric.
	OperationKey = attribute.Key("inbox.operation")
	// TenantKey and InboxKey are the tenant and inbox of a call, on spans
	// (and on metrics with WithScopeMetrics).
	TenantKey = attribute.Key("inbox.tenant")
	InboxKey  = attribute.Key("inbox.inbox")
	// OutcomeKey is the outcome class of a call (inbox.OutcomeOf): "ok",
	// "bad_input", "not_found", "conflict", "throttled" or "other".
	OutcomeKey = attribute.Key("inbox.outcome")
	// StoreCallKey is the Store method of a Store call span: "Query"...
	StoreCallKey = attribute.Key("inbox.store.call")
	// SharedKey says whether a Store call addresses a shared partition.
	SharedKey = attribute.Key("inbox.partition.shared")
	// StoreCallsKey is the number of Store calls of an operation.
	StoreCallsKey = attribute.Key("inbox.store_calls")
	// RequestsKey and RoundTripsKey are the DynamoDB requests of an
	// operation or Store call, and their sequential stages.
	RequestsKey   = attribute.Key("inbox.requests")
	RoundTripsKey = attribute.Key("inbox.round_trips")
	// ReadUnitsKey and WriteUnitsKey are the capacity units AWS bills for
	// an operation's or a Store call's requests (inbox.RequestTotals).
	ReadUnitsKey  = attribute.Key("inbox.capacity.read")
	WriteUnitsKey = attribute.Key("inbox.capacity.write")
	// StreamRecordsKey, StreamFailedKey and StreamLagKey are a stream
	// batch's records, its failed records, and the age in seconds of its
	// newest record when its handling ended.
	StreamRecordsKey = attribute.Key("inbox.stream.records")
	StreamFailedKey  = attribute.Key("inbox.stream.failed")
	StreamLagKey     = attribute.Key("inbox.stream.lag")
	// RecountRepairsKey is the number of counters a recount replaced.
	RecountRepairsKey = attribute.Key("inbox.recount.repaired")
	// UserIDKey is the semantic conventions' user.id, on operation spans
	// with WithUserIDs only.
	UserIDKey = attribute.Key("user.id")
)

// Option configures Hooks.
type Option func(*config)

// config is what the options set.
type config struct {
	tp           trace.TracerProvider
	mp           metric.MeterProvider
	userIDs      bool
	scopeMetrics bool
}

// WithTracerProvider sets the provider of the tracer (default: the global
// one, otel.GetTracerProvider, when Hooks is called).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets the provider of the meter (default: the global
// one, otel.GetMeterProvider, when Hooks is called).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithUserIDs records the user's ID on operation spans (user.id), and the
// error's text in the status of failed spans (an error may name a user or
// a key). Both are personal data, left out by default; no metric ever
// holds them.
func WithUserIDs() Option { return func(c *config) { c.userIDs = true } }

// WithScopeMetrics adds the tenant and inbox (inbox.tenant, inbox.inbox)
// to the attributes of the operation, capacity, cache, stream and recount
// metrics, for a service whose tenants are few enough to be a metric's
// dimension. Spans always hold them.
func WithScopeMetrics() Option { return func(c *config) { c.scopeMetrics = true } }

// Hooks returns inbox.Hooks that record spans and metrics (see the package
// documentation). It fails only if an instrument cannot be created. The
// hooks are safe for concurrent use, and may serve several Inboxes.
func Hooks(opts ...Option) (inbox.Hooks, error) {
	cfg := config{}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	if cfg.mp == nil {
		cfg.mp = otel.GetMeterProvider()
	}
	r := &recorder{cfg: cfg, tracer: cfg.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))}
	if err := r.instruments(cfg.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))); err != nil {
		return inbox.Hooks{}, fmt.Errorf("otelinbox: %w", err)
	}
	return inbox.Hooks{Operation: r.operation, StoreCall: r.storeCall, SharedCache: r.sharedCache}, nil
}

// durationBuckets are the bucket boundaries of the duration histograms, in
// seconds: the semantic conventions' advice for db.client.operation.duration.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// recorder makes the spans and metrics. It holds no mutable state.
type recorder struct {
	cfg    config
	tracer trace.Tracer

	opDuration    metric.Float64Histogram
	opErrors      metric.Int64Counter
	opRoundTrips  metric.Int64Histogram
	readUnits     metric.Float64Counter
	writeUnits    metric.Float64Counter
	cacheHits     metric.Int64Counter
	cacheMisses   metric.Int64Counter
	cacheRefresh  metric.Int64Counter
	cacheLoads    metric.Int64Counter
	streamLag     metric.Float64Gauge
	streamRecords metric.Int64Counter
	streamFailed  metric.Int64Counter
	repaired      metric.Int64Counter
	dbDuration    metric.Float64Histogram
}

// instruments creates r's instruments with m.
func (r *recorder) instruments(m metric.Meter) error {
	var errs []error
	f64c := func(name, unit, desc string) metric.Float64Counter {
		c, err := m.Float64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	i64c := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	var err error
	r.opDuration, err = m.Float64Histogram("inbox.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of inbox operations."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	errs = append(errs, err)
	r.opErrors = i64c("inbox.operation.errors", "{error}", "Inbox operations that failed, by error class.")
	r.opRoundTrips, err = m.Int64Histogram("inbox.operation.round_trips", metric.WithUnit("{round_trip}"),
		metric.WithDescription("Sequential stages of DynamoDB requests an inbox operation took."),
		metric.WithExplicitBucketBoundaries(0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 50))
	errs = append(errs, err)
	r.readUnits = f64c("inbox.capacity.read", "{capacity_unit}", "Read capacity units AWS bills, by inbox operation.")
	r.writeUnits = f64c("inbox.capacity.write", "{capacity_unit}", "Write capacity units AWS bills, by inbox operation.")
	r.cacheHits = i64c("inbox.shared_cache.hits", "{read}", "Reads of shared partitions served from a snapshot in memory.")
	r.cacheMisses = i64c("inbox.shared_cache.misses", "{read}", "Reads of shared partitions that found no fresh snapshot.")
	r.cacheRefresh = i64c("inbox.shared_cache.refreshes", "{refresh}", "Reads of shared partitions from the store for a new snapshot.")
	r.cacheLoads = i64c("inbox.shared_cache.loads", "{load}", "Snapshots of shared partitions loaded from the shared backend.")
	r.streamLag, err = m.Float64Gauge("inbox.stream.lag", metric.WithUnit("s"),
		metric.WithDescription("Age of the newest stream record of the last batch handled, when its handling ended."))
	errs = append(errs, err)
	r.streamRecords = i64c("inbox.stream.records", "{record}", "Stream records handled.")
	r.streamFailed = i64c("inbox.stream.records.failed", "{record}", "Stream records that failed (batch item failures).")
	r.repaired = i64c("inbox.recount.repaired", "{counter}", "Counters a recount replaced because they had drifted from the records.")
	r.dbDuration, err = m.Float64Histogram("db.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of database client operations."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	errs = append(errs, err)
	return errors.Join(errs...)
}

// scope returns the attributes of scope s (those it has).
func scope(s inbox.Scope) []attribute.KeyValue {
	var out []attribute.KeyValue
	if s.Tenant != "" {
		out = append(out, TenantKey.String(s.Tenant))
	}
	if s.Inbox != "" {
		out = append(out, InboxKey.String(s.Inbox))
	}
	return out
}

// metricAttrs returns the attributes of a metric of operation op in scope
// s: the operation, and the scope with WithScopeMetrics.
func (r *recorder) metricAttrs(op string, s inbox.Scope, more ...attribute.KeyValue) metric.MeasurementOption {
	attrs := append([]attribute.KeyValue{OperationKey.String(op)}, more...)
	if r.cfg.scopeMetrics {
		attrs = append(attrs, scope(s)...)
	}
	return metric.WithAttributes(attrs...)
}

// fail sets span's status to Error for err, of class o: the text only
// with WithUserIDs.
func (r *recorder) fail(span trace.Span, err error, o inbox.Outcome) {
	if err == nil {
		return
	}
	desc := o.String()
	if r.cfg.userIDs {
		desc = err.Error()
	}
	span.SetStatus(codes.Error, desc)
}

// totals returns the attributes of request totals t.
func totals(t inbox.RequestTotals) []attribute.KeyValue {
	return []attribute.KeyValue{
		RequestsKey.Int(t.Requests), RoundTripsKey.Int(t.RoundTrips),
		ReadUnitsKey.Float64(t.ReadUnits), WriteUnitsKey.Float64(t.WriteUnits),
	}
}

// outcome returns the attributes of outcome o: inbox.outcome, and
// error.type if it is a failure.
func outcome(o inbox.Outcome) []attribute.KeyValue {
	out := []attribute.KeyValue{OutcomeKey.String(o.String())}
	if o != inbox.OutcomeOK {
		out = append(out, semconv.ErrorTypeKey.String(o.String()))
	}
	return out
}

// operation is Hooks.Operation: it starts the operation's span, and
// records the span's end and the metrics when the operation ends, with a
// client span under it for each request that fetched a stream batch.
func (r *recorder) operation(ctx context.Context, op inbox.Operation) (context.Context, func(inbox.OperationReport)) {
	attrs := append([]attribute.KeyValue{OperationKey.String(op.Name)}, scope(op.Scope)...)
	if r.cfg.userIDs && op.User != "" {
		attrs = append(attrs, UserIDKey.String(op.User))
	}
	ctx, span := r.tracer.Start(ctx, "inbox."+op.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, func(rep inbox.OperationReport) {
		attrs := append(outcome(rep.Outcome), StoreCallsKey.Int(rep.StoreCalls))
		attrs = append(attrs, totals(rep.Totals)...)
		if s := rep.Stream; s.Records > 0 {
			attrs = append(attrs, StreamRecordsKey.Int(s.Records), StreamFailedKey.Int(s.Failed))
			if !s.Newest.IsZero() {
				attrs = append(attrs, StreamLagKey.Float64(s.Age.Seconds()))
			}
		}
		recount := rep.Name == "Recount" || rep.Name == "RecountPartition"
		if recount {
			attrs = append(attrs, RecountRepairsKey.Int(rep.Repaired))
		}
		for _, req := range rep.StreamReads {
			r.request(ctx, req)
		}
		span.SetAttributes(attrs...)
		r.fail(span, rep.Err, rep.Outcome)
		span.End()

		var failed []attribute.KeyValue
		if rep.Outcome != inbox.OutcomeOK {
			failed = []attribute.KeyValue{semconv.ErrorTypeKey.String(rep.Outcome.String())}
		}
		r.opDuration.Record(ctx, rep.Duration.Seconds(), r.metricAttrs(rep.Name, rep.Scope, failed...))
		if rep.Outcome != inbox.OutcomeOK {
			r.opErrors.Add(ctx, 1, r.metricAttrs(rep.Name, rep.Scope, failed...))
		}
		at := r.metricAttrs(rep.Name, rep.Scope)
		if rep.Totals.Requests > 0 {
			r.opRoundTrips.Record(ctx, int64(rep.Totals.RoundTrips), at)
		}
		if rep.Totals.ReadUnits > 0 {
			r.readUnits.Add(ctx, rep.Totals.ReadUnits, at)
		}
		if rep.Totals.WriteUnits > 0 {
			r.writeUnits.Add(ctx, rep.Totals.WriteUnits, at)
		}
		if s := rep.Stream; s.Records > 0 {
			r.streamRecords.Add(ctx, int64(s.Records), at)
			if s.Failed > 0 {
				r.streamFailed.Add(ctx, int64(s.Failed), at)
			}
			if !s.Newest.IsZero() {
				r.streamLag.Record(ctx, s.Age.Seconds(), at)
			}
		}
		if recount {
			r.repaired.Add(ctx, int64(rep.Repaired), at)
		}
	}
}

// storeCall is Hooks.StoreCall: it starts the call's span and, when the
// call ends, makes a client span for each of its DynamoDB requests.
func (r *recorder) storeCall(ctx context.Context, c inbox.StoreCall) (context.Context, func(inbox.StoreCallReport)) {
	attrs := append([]attribute.KeyValue{StoreCallKey.String(c.Name), SharedKey.Bool(c.Shared)}, scope(c.Scope)...)
	ctx, span := r.tracer.Start(ctx, "inbox.store."+c.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, func(rep inbox.StoreCallReport) {
		for _, req := range rep.Requests {
			r.request(ctx, req)
		}
		span.SetAttributes(append(outcome(rep.Outcome), totals(rep.Totals)...)...)
		r.fail(span, rep.Err, rep.Outcome)
		span.End()
	}
}

// consumedCapacity is a ConsumedCapacity as DynamoDB returns it, for
// aws.dynamodb.consumed_capacity.
type consumedCapacity struct {
	TableName          string  `json:"TableName"`
	CapacityUnits      float64 `json:"CapacityUnits"`
	ReadCapacityUnits  float64 `json:"ReadCapacityUnits,omitempty"`
	WriteCapacityUnits float64 `json:"WriteCapacityUnits,omitempty"`
}

// request makes the client span of req, a child of ctx's span, with the
// request's own times, and records its duration. A request of the
// DynamoDB Streams API (a stream reader's) has no consumed capacity.
func (r *recorder) request(ctx context.Context, req inbox.Request) {
	metricAttrs := []attribute.KeyValue{semconv.DBSystemNameAWSDynamoDB, semconv.DBOperationName(req.Op)}
	if req.Table != "" {
		metricAttrs = append(metricAttrs, semconv.DBCollectionName(req.Table))
	}
	attrs := slices.Clone(metricAttrs)
	if req.Table != "" {
		attrs = append(attrs, semconv.AWSDynamoDBTableNames(req.Table))
	}
	switch {
	case req.Err != nil:
		code := "_OTHER"
		var api smithy.APIError
		if errors.As(req.Err, &api) {
			code = api.ErrorCode()
		}
		attrs = append(attrs, semconv.ErrorTypeKey.String(code))
		metricAttrs = append(metricAttrs, semconv.ErrorTypeKey.String(code))
	case req.Service == "DynamoDB Streams":
		// The Streams API consumes no capacity units.
	default:
		cc, err := json.Marshal(consumedCapacity{TableName: req.Table, CapacityUnits: req.ConsumedReadUnits + req.ConsumedWriteUnits,
			ReadCapacityUnits: req.ConsumedReadUnits, WriteCapacityUnits: req.ConsumedWriteUnits})
		if err == nil {
			attrs = append(attrs, semconv.AWSDynamoDBConsumedCapacity(string(cc)))
		}
	}
	name := req.Op
	if req.Table != "" {
		name += " " + req.Table
	}
	_, span := r.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(req.Start), trace.WithAttributes(attrs...))
	if req.Err != nil {
		desc := ""
		if r.cfg.userIDs {
			desc = req.Err.Error()
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End(trace.WithTimestamp(req.Start.Add(req.Duration)))
	r.dbDuration.Record(ctx, req.Duration.Seconds(), metric.WithAttributes(metricAttrs...))
}

// sharedCache is Hooks.SharedCache: it counts the event.
func (r *recorder) sharedCache(ctx context.Context, e inbox.CacheEvent) {
	at := r.metricAttrs(e.Operation, e.Partition.Scope())
	switch e.Kind {
	case inbox.CacheHit:
		r.cacheHits.Add(ctx, 1, at)
	case inbox.CacheMiss:
		r.cacheMisses.Add(ctx, 1, at)
	case inbox.CacheRefresh:
		r.cacheRefresh.Add(ctx, 1, at)
	case inbox.CacheLoad:
		r.cacheLoads.Add(ctx, 1, at)
	}
}

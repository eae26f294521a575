package otelinbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/otelinbox"
)

// The IDs and content of the scenario: none may appear in any span or
// metric by default.
const (
	userAnn     = "user-ann-5f2c"
	userBob     = "user-bob-81d0"
	userCy      = "user-cy-c3a9"
	userDan     = "user-dan-7e44" // another program's, in the stream batch
	secretTitle = "title-3b7e-salary-review"
	secretBody  = "body-a91f-account-4417"
	foreignID   = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	foreignID2  = "01ARZ3NDEKTSV4RRFFQ69G5FAW"
)

var scope = inbox.Scope{Tenant: "acme", Inbox: "alerts"}

// secrets are what no attribute may hold by default.
var secrets = []string{userAnn, userBob, userCy, userDan, secretTitle, secretBody}

// telemetry is an OpenTelemetry SDK with in-memory exporters, and the
// hooks that report to it.
type telemetry struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	hooks  inbox.Hooks
}

func newTelemetry(t *testing.T, opts ...otelinbox.Option) *telemetry {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	hooks, err := otelinbox.Hooks(append(opts, otelinbox.WithTracerProvider(tp), otelinbox.WithMeterProvider(mp))...)
	if err != nil {
		t.Fatal(err)
	}
	return &telemetry{spans: exp, reader: reader, hooks: hooks}
}

// metrics collects the metrics recorded so far.
func (tm *telemetry) metrics(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tm.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// point is one data point of a metric: its attributes, and its value (a
// sum's or gauge's) or count (a histogram's).
type point struct {
	attrs attribute.Set
	value float64
	count uint64
}

// points returns the data points of metric name.
func points(rm metricdata.ResourceMetrics, name string) []point {
	var out []point
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out = append(out, point{attrs: p.Attributes, value: float64(p.Value)})
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					out = append(out, point{attrs: p.Attributes, value: p.Value})
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out = append(out, point{attrs: p.Attributes, value: p.Value})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out = append(out, point{attrs: p.Attributes, value: p.Sum, count: p.Count})
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					out = append(out, point{attrs: p.Attributes, value: float64(p.Sum), count: p.Count})
				}
			}
		}
	}
	return out
}

// pointOf returns the data point of metric name whose attributes are
// exactly attrs, and whether there is one.
func pointOf(rm metricdata.ResourceMetrics, name string, attrs ...attribute.KeyValue) (point, bool) {
	want := attribute.NewSet(attrs...)
	for _, p := range points(rm, name) {
		if p.attrs.Equals(&want) {
			return p, true
		}
	}
	return point{}, false
}

// op is the attribute of an operation's metrics.
func op(name string) attribute.KeyValue { return otelinbox.OperationKey.String(name) }

// attr returns span s's attribute k.
func attr(s tracetest.SpanStub, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// named returns the spans named name, in the order they ended.
func named(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// children returns the spans whose parent is p.
func children(spans tracetest.SpanStubs, p tracetest.SpanStub) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Parent.SpanID() == p.SpanContext.SpanID() && s.Parent.TraceID() == p.SpanContext.TraceID() {
			out = append(out, s)
		}
	}
	return out
}

// names returns the names of spans, sorted.
func names(spans []tracetest.SpanStub) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}

// checkAttrs checks that span s has the attributes want, with these values.
func checkAttrs(t *testing.T, s tracetest.SpanStub, want ...attribute.KeyValue) {
	t.Helper()
	for _, kv := range want {
		if v, ok := attr(s, kv.Key); !ok || v != kv.Value {
			t.Errorf("span %s: %s = %v (set: %v), want %v", s.Name, kv.Key, v.Emit(), ok, kv.Value.Emit())
		}
	}
}

// intAttr returns span s's int attribute k, failing t if it has none.
func intAttr(t *testing.T, s tracetest.SpanStub, k attribute.Key) int64 {
	t.Helper()
	v, ok := attr(s, k)
	if !ok || v.Type() != attribute.INT64 {
		t.Errorf("span %s: no int attribute %s", s.Name, k)
	}
	return v.AsInt64()
}

// floatAttr returns span s's float attribute k, failing t if it has none.
func floatAttr(t *testing.T, s tracetest.SpanStub, k attribute.Key) float64 {
	t.Helper()
	v, ok := attr(s, k)
	if !ok || v.Type() != attribute.FLOAT64 {
		t.Errorf("span %s: no float attribute %s", s.Name, k)
	}
	return v.AsFloat64()
}

// checkNoSecrets checks that no span (name, attributes, status, events)
// and no metric data point holds any of secrets.
func checkNoSecrets(t *testing.T, spans tracetest.SpanStubs, rm metricdata.ResourceMetrics, secrets []string) {
	t.Helper()
	check := func(where, text string) {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds %q: %s", where, s, text)
			}
		}
	}
	kvs := func(where string, attrs []attribute.KeyValue) {
		for _, kv := range attrs {
			check(where+" attribute "+string(kv.Key), kv.Value.Emit())
		}
	}
	for _, s := range spans {
		check("span name", s.Name)
		kvs("span "+s.Name, s.Attributes)
		check("span "+s.Name+" status", s.Status.Description)
		for _, e := range s.Events {
			check("span "+s.Name+" event", e.Name)
			kvs("span "+s.Name+" event "+e.Name, e.Attributes)
		}
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, p := range points(rm, m.Name) {
				kvs("metric "+m.Name, p.attrs.ToSlice())
			}
		}
	}
}

// foreignRemove returns a REMOVE record, created ago before now, of a
// message that another program wrote (no ledger entry) in user's
// partition, as Lambda delivers it.
func foreignRemove(id, user string, now time.Time, ago time.Duration) events.DynamoDBEventRecord {
	s := events.NewStringAttribute
	n := events.NewNumberAttribute
	m := events.NewMapAttribute
	pk := inbox.Partition{Tenant: scope.Tenant, Inbox: scope.Inbox, User: user}.PK()
	old := map[string]events.DynamoDBAttributeValue{
		"pk": s(pk), "sk": s("m#" + id), "kind": s("UM"),
		"headers": m(map[string]events.DynamoDBAttributeValue{
			"id": s(id), "host_system_id": events.NewNullAttribute(), "sender": s("ops"),
			"audiences": m(map[string]events.DynamoDBAttributeValue{"kind": s("users"), "label": s("")}),
			"received":  n(fmt.Sprint(now.Add(-time.Hour).Unix())), "delivered": n(fmt.Sprint(now.Add(-time.Hour).Unix())),
		}),
		"message":    m(map[string]events.DynamoDBAttributeValue{"title": s(secretTitle), "body": s(secretBody), "cta_uri": events.NewNullAttribute()}),
		"expiredat":  n(fmt.Sprint(now.Add(time.Hour).Unix())),
		"tenant_key": s(scope.Tenant), "inbox_key": s(scope.Inbox), "uid": s(user),
	}
	return events.DynamoDBEventRecord{
		EventID: "ev-" + id, EventName: "REMOVE",
		Change: events.DynamoDBStreamRecord{
			Keys: map[string]events.DynamoDBAttributeValue{"pk": s(pk), "sk": s("m#" + id)}, OldImage: old,
			SequenceNumber: "seq-" + id, StreamViewType: "NEW_AND_OLD_IMAGES",
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: now.Add(-ago)},
		},
		UserIdentity: &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"},
	}
}

// scenario is what an on-call engineer's telemetry is tested on: a
// Publish to three users, a List, a MarkRead, a stream batch (two
// removals of another program's messages, and a record without an image,
// which fails, written 7 s before now, the newest), and a List of a bad
// user ID.
func scenario(t *testing.T, ib *inbox.Inbox, now time.Time) {
	t.Helper()
	ctx := context.Background()
	res, err := ib.Publish(ctx, scope, []string{userAnn, userBob, userCy}, inbox.Draft{
		Title: secretTitle, Body: map[string]any{"note": secretBody}, Category: "billing",
	})
	if err != nil {
		t.Fatal(err)
	}
	ann := scope.User(userAnn)
	if _, err := ib.List(ctx, ann, inbox.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if ok, err := ib.MarkRead(ctx, ann, res.Message.ID); err != nil || !ok {
		t.Fatalf("MarkRead = %v, %v", ok, err)
	}
	bad := foreignRemove(foreignID2, userDan, now, 7*time.Second)
	bad.EventID, bad.Change.SequenceNumber, bad.Change.OldImage = "ev-bad", "seq-bad", nil
	resp, err := ib.StreamHandler(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		foreignRemove(foreignID, userDan, now, 10*time.Second), foreignRemove(foreignID2, userDan, now, 8*time.Second), bad,
	}})
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("StreamHandler = %+v, %v; want one failure", resp, err)
	}
	if _, err := ib.List(ctx, scope.User("user#"+userAnn), inbox.ListOptions{}); err == nil {
		t.Fatal("List of a bad user ID succeeded")
	}
}

// checkScenario checks the spans and metrics of scenario. With table set
// (DynamoDB Local) every Store call has client spans of its DynamoDB
// requests, and the capacity metrics have values; without (memstore)
// there are none.
func checkScenario(t *testing.T, tm *telemetry, table string) {
	spans := tm.spans.GetSpans()
	rm := tm.metrics(t)
	local := table != ""
	checkNoSecrets(t, spans, rm, secrets)

	// Every client span is a DynamoDB request under a Store call.
	var clients []tracetest.SpanStub
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindClient {
			clients = append(clients, s)
		}
	}
	if !local && len(clients) > 0 {
		t.Errorf("memstore: %d client spans, want none", len(clients))
	}
	if local && len(clients) == 0 {
		t.Error("DynamoDB Local: no client spans")
	}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	for _, c := range clients {
		parent, ok := byID[c.Parent.SpanID()]
		if !ok || !strings.HasPrefix(parent.Name, "inbox.store.") {
			t.Errorf("client span %s under %q, want a Store call's span", c.Name, parent.Name)
			continue
		}
		dbOp, _ := attr(c, "db.operation.name")
		if c.Name != dbOp.AsString()+" "+table {
			t.Errorf("client span %q, want %q", c.Name, dbOp.AsString()+" "+table)
		}
		checkAttrs(t, c, attribute.String("db.system.name", "aws.dynamodb"), attribute.String("db.collection.name", table),
			attribute.StringSlice("aws.dynamodb.table_names", []string{table}))
		if cc, ok := attr(c, "aws.dynamodb.consumed_capacity"); !ok || len(cc.AsStringSlice()) != 1 || !strings.Contains(cc.AsStringSlice()[0], `"CapacityUnits"`) {
			t.Errorf("client span %s: consumed capacity %v", c.Name, cc.Emit())
		}
		if c.StartTime.Before(parent.StartTime) || c.EndTime.After(parent.EndTime) || !c.StartTime.Before(c.EndTime) {
			t.Errorf("client span %s [%v, %v] outside its Store call's [%v, %v]", c.Name, c.StartTime, c.EndTime, parent.StartTime, parent.EndTime)
		}
	}
	// clientOps returns the DynamoDB operations under Store call span s.
	clientOps := func(s tracetest.SpanStub) []string {
		var out []string
		for _, c := range children(spans, s) {
			v, _ := attr(c, "db.operation.name")
			out = append(out, v.AsString())
		}
		sort.Strings(out)
		return out
	}
	requests := func(s tracetest.SpanStub) int64 { return intAttr(t, s, otelinbox.RequestsKey) }

	// Publish: one span, its Store calls under it.
	pubs := named(spans, "inbox.Publish")
	if len(pubs) != 1 {
		t.Fatalf("%d inbox.Publish spans, want 1", len(pubs))
	}
	pub := pubs[0]
	if pub.SpanKind != trace.SpanKindInternal || pub.Status.Code != codes.Unset {
		t.Errorf("Publish span kind %v, status %v", pub.SpanKind, pub.Status)
	}
	checkAttrs(t, pub, op("Publish"), otelinbox.TenantKey.String("acme"), otelinbox.InboxKey.String("alerts"),
		otelinbox.OutcomeKey.String("ok"), otelinbox.StoreCallsKey.Int(4))
	if _, ok := attr(pub, "error.type"); ok {
		t.Error("Publish span has error.type")
	}
	calls := children(spans, pub)
	if got, want := names(calls), []string{"inbox.store.Config", "inbox.store.PutMessage", "inbox.store.PutMessage", "inbox.store.PutMessage"}; !slices.Equal(got, want) {
		t.Errorf("Publish's children %v, want %v", got, want)
	}
	for _, c := range calls {
		checkAttrs(t, c, otelinbox.TenantKey.String("acme"), otelinbox.InboxKey.String("alerts"), otelinbox.SharedKey.Bool(false), otelinbox.OutcomeKey.String("ok"))
		if c.Name == "inbox.store.PutMessage" && local && !slices.Equal(clientOps(c), []string{"TransactWriteItems"}) {
			t.Errorf("PutMessage's requests %v, want one TransactWriteItems", clientOps(c))
		}
	}
	if local {
		if n := requests(pub); n != 4 {
			t.Errorf("Publish: %d requests, want 4 (a config read, three transactions)", n)
		}
		if rt := intAttr(t, pub, otelinbox.RoundTripsKey); rt < 2 || rt > 4 {
			t.Errorf("Publish: %d round trips, want 2 to 4", rt)
		}
		// Each transaction is billed 2 write units per KB of each item (a
		// small message, its ledger entry, a counter or more: 1 KB each),
		// and 1 for the message's unread index entry, where Local reports
		// less; its client span keeps Local's figure.
		for _, c := range calls {
			if c.Name != "inbox.store.PutMessage" {
				continue
			}
			wcu := floatAttr(t, c, otelinbox.WriteUnitsKey)
			consumed := 0.0
			for _, req := range children(spans, c) {
				var cc struct{ CapacityUnits float64 }
				v, _ := attr(req, "aws.dynamodb.consumed_capacity")
				if len(v.AsStringSlice()) == 1 {
					_ = json.Unmarshal([]byte(v.AsStringSlice()[0]), &cc)
				}
				consumed += cc.CapacityUnits
			}
			if wcu < 2*3+1 || wcu <= consumed {
				t.Errorf("PutMessage: %v write units billed, Local reported %v; want at least 7, more than Local's", wcu, consumed)
			}
		}
		if wcu := floatAttr(t, pub, otelinbox.WriteUnitsKey); wcu < 3*7 {
			t.Errorf("Publish: %v write units, want at least 21 (three transactions)", wcu)
		}
	} else if n := requests(pub); n != 0 {
		t.Errorf("memstore Publish: %d requests", n)
	}

	// List: the user's partition (its records, and its stats for the
	// receipts it recorded lately, in parallel), and the public one
	// through the shared cache (a miss, then a refresh: its head, its
	// threads and its stats, read until two reads agree). The second List
	// span is the bad call's.
	lists := named(spans, "inbox.List")
	if len(lists) != 2 {
		t.Fatalf("%d inbox.List spans, want 2", len(lists))
	}
	list := lists[0]
	checkAttrs(t, list, op("List"), otelinbox.OutcomeKey.String("ok"))
	if _, ok := attr(list, otelinbox.UserIDKey); ok {
		t.Error("List span has user.id by default")
	}
	var shared, own []string
	for _, c := range children(spans, list) {
		if v, _ := attr(c, otelinbox.SharedKey); v.AsBool() {
			shared = append(shared, c.Name)
		} else {
			own = append(own, c.Name)
		}
		if local && len(clientOps(c)) == 0 {
			t.Errorf("List's %s made no request", c.Name)
		}
	}
	sort.Strings(shared)
	sort.Strings(own)
	if !slices.Equal(own, []string{"inbox.store.Query", "inbox.store.Stats"}) || !slices.Equal(shared, []string{"inbox.store.Query", "inbox.store.Query", "inbox.store.Query", "inbox.store.Query", "inbox.store.Stats", "inbox.store.Stats"}) {
		t.Errorf("List's Store calls: own %v, shared %v", own, shared)
	}
	if local && floatAttr(t, list, otelinbox.ReadUnitsKey) <= 0 {
		t.Error("List: no read units")
	}
	failed := lists[1]
	checkAttrs(t, failed, otelinbox.OutcomeKey.String("bad_input"), attribute.String("error.type", "bad_input"), otelinbox.StoreCallsKey.Int(0))
	if failed.Status.Code != codes.Error || failed.Status.Description != "bad_input" {
		t.Errorf("failed List's status %+v, want Error with the class alone", failed.Status)
	}

	// MarkRead: a read of every place the message can be, then the mark.
	marks := named(spans, "inbox.MarkRead")
	if len(marks) != 1 {
		t.Fatalf("%d inbox.MarkRead spans, want 1", len(marks))
	}
	if got := names(children(spans, marks[0])); !slices.Contains(got, "inbox.store.GetRecords") || !slices.Contains(got, "inbox.store.Mark") {
		t.Errorf("MarkRead's Store calls %v", got)
	}
	if local {
		var ops []string
		for _, c := range children(spans, marks[0]) {
			ops = append(ops, clientOps(c)...)
		}
		if !slices.Contains(ops, "BatchGetItem") || !slices.Contains(ops, "TransactWriteItems") && !slices.Contains(ops, "UpdateItem") {
			t.Errorf("MarkRead's requests %v", ops)
		}
		if floatAttr(t, marks[0], otelinbox.WriteUnitsKey) <= 0 || floatAttr(t, marks[0], otelinbox.ReadUnitsKey) <= 0 {
			t.Error("MarkRead: no read or no write units")
		}
	}

	// The stream batch: its records, failures and lag (by the Inbox's
	// clock), and a removal applied per good record.
	batches := named(spans, "inbox.StreamHandler")
	if len(batches) == 0 {
		t.Fatal("no inbox.StreamHandler span")
	}
	batch := batches[0]
	checkAttrs(t, batch, op("StreamHandler"), otelinbox.StreamRecordsKey.Int(3), otelinbox.StreamFailedKey.Int(1),
		otelinbox.StreamLagKey.Float64(7), otelinbox.OutcomeKey.String("ok"))
	if _, ok := attr(batch, otelinbox.TenantKey); ok {
		t.Error("a stream batch span has a tenant (its records may be of any)")
	}
	// Each removal of another program's item (no ledger entry), and the
	// read of its partition's recount time that follows it.
	got := names(children(spans, batch))
	slices.Sort(got)
	if !slices.Equal(got, []string{"inbox.store.ApplyRemoval", "inbox.store.ApplyRemoval", "inbox.store.Stats", "inbox.store.Stats"}) {
		t.Errorf("the batch's Store calls %v", got)
	}

	// Metrics.
	for _, name := range []string{"Publish", "List", "MarkRead"} {
		if p, ok := pointOf(rm, "inbox.operation.duration", op(name)); !ok || p.count != 1 || p.value <= 0 {
			t.Errorf("inbox.operation.duration of %s: %+v (found: %v), want one, > 0", name, p, ok)
		}
	}
	if p, ok := pointOf(rm, "inbox.operation.duration", op("List"), attribute.String("error.type", "bad_input")); !ok || p.count != 1 {
		t.Errorf("inbox.operation.duration of the failed List: %+v (found: %v)", p, ok)
	}
	if got := points(rm, "inbox.operation.errors"); len(got) != 1 || got[0].value != 1 ||
		!got[0].attrs.Equals(ptr(attribute.NewSet(op("List"), attribute.String("error.type", "bad_input")))) {
		t.Errorf("inbox.operation.errors %+v, want the failed List's alone", got)
	}
	for name, want := range map[string]float64{"inbox.shared_cache.misses": 1, "inbox.shared_cache.refreshes": 1} {
		if p, ok := pointOf(rm, name, op("List")); !ok || p.value != want {
			t.Errorf("%s of List: %+v (found: %v), want %v", name, p, ok, want)
		}
	}
	if p, ok := pointOf(rm, "inbox.shared_cache.hits", op("List")); ok {
		t.Errorf("inbox.shared_cache.hits of List: %+v, want none", p)
	}
	for name, want := range map[string]float64{"inbox.stream.records": 3, "inbox.stream.records.failed": 1, "inbox.stream.lag": 7} {
		if p, ok := pointOf(rm, name, op("StreamHandler")); !ok || p.value != want {
			t.Errorf("%s: %+v (found: %v), want %v", name, p, ok, want)
		}
	}
	for _, c := range []struct {
		metric, op string
	}{{"inbox.capacity.write", "Publish"}, {"inbox.capacity.read", "List"}, {"inbox.capacity.read", "MarkRead"}, {"inbox.capacity.write", "MarkRead"}} {
		p, ok := pointOf(rm, c.metric, op(c.op))
		if local && (!ok || p.value <= 0) {
			t.Errorf("%s of %s: %+v (found: %v), want > 0", c.metric, c.op, p, ok)
		}
		if !local && ok {
			t.Errorf("memstore: %s of %s: %+v, want none", c.metric, c.op, p)
		}
	}
	if p, ok := pointOf(rm, "inbox.operation.round_trips", op("Publish")); local && (!ok || p.count != 1 || p.value < 2) {
		t.Errorf("inbox.operation.round_trips of Publish: %+v (found: %v)", p, ok)
	}
	dbTx, ok := pointOf(rm, "db.client.operation.duration", attribute.String("db.system.name", "aws.dynamodb"),
		attribute.String("db.operation.name", "TransactWriteItems"), attribute.String("db.collection.name", table))
	if local && (!ok || dbTx.count < 3) {
		t.Errorf("db.client.operation.duration of TransactWriteItems: %+v (found: %v), want at least the three publishes", dbTx, ok)
	}
	if got := points(rm, "db.client.operation.duration"); !local && len(got) > 0 {
		t.Errorf("memstore: db.client.operation.duration %+v, want none", got)
	}
}

func ptr[T any](v T) *T { return &v }

// TestMemstore checks the scenario's telemetry on the in-memory store.
func TestMemstore(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	clock := func() time.Time { return now }
	tm := newTelemetry(t)
	ib := inbox.New(memstore.New(memstore.WithClock(clock)), inbox.WithClock(clock), inbox.WithHooks(tm.hooks))
	scenario(t, ib, now)
	checkScenario(t, tm, "")
}

// TestDynamoDBLocal checks the scenario's telemetry on DynamoDB Local,
// and then a batch of the table's real stream, read with a
// dynamo.StreamReader into the Inbox's StreamHandler: the batches' spans
// and the client spans of the Streams API requests that fetched them.
func TestDynamoDBLocal(t *testing.T) {
	cfg := ddblocal.Config(t)
	c := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	table, streamARN := ddblocal.NewTable(t, c)
	now := time.Now().UTC().Truncate(time.Second)
	clock := func() time.Time { return now }
	tm := newTelemetry(t)
	ib := inbox.New(dynamo.New(c, table), inbox.WithClock(clock), inbox.WithHooks(tm.hooks))
	scenario(t, ib, now)
	checkScenario(t, tm, table)

	// The table's stream: the scenario's writes, handled in batches.
	tm.spans.Reset()
	reader := dynamo.NewStreamReader(dynamodbstreams.NewFromConfig(cfg), streamARN)
	n, err := reader.Poll(context.Background(), ib.StreamHandler)
	if err != nil || n == 0 {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	spans := tm.spans.GetSpans()
	records := int64(0)
	for _, b := range named(spans, "inbox.StreamHandler") {
		records += intAttr(t, b, otelinbox.StreamRecordsKey)
		checkAttrs(t, b, otelinbox.StreamFailedKey.Int(0))
		// The records are Local's, by the real clock; the Inbox's stopped
		// at the scenario's start, so their age is 0 or a few seconds.
		if lag := floatAttr(t, b, otelinbox.StreamLagKey); lag < 0 || lag > 60 {
			t.Errorf("stream batch lag %v s", lag)
		}
	}
	if records != int64(n) {
		t.Errorf("stream batch spans count %d records, the reader delivered %d", records, n)
	}
	// The reader's requests that fetched each batch are client spans under
	// its span, before it: the first batch's list the stream's shards and
	// open an iterator; every batch's read a page of records. They hold no
	// consumed capacity (the Streams API has none).
	for i, b := range named(spans, "inbox.StreamHandler") {
		var ops []string
		for _, c := range children(spans, b) {
			if c.SpanKind != trace.SpanKindClient {
				continue
			}
			dbOp, _ := attr(c, "db.operation.name")
			ops = append(ops, dbOp.AsString())
			if c.Name != dbOp.AsString()+" "+table || c.EndTime.After(b.StartTime) {
				t.Errorf("stream read span %q [%v, %v], want %q, before its batch's span at %v", c.Name, c.StartTime, c.EndTime, dbOp.AsString()+" "+table, b.StartTime)
			}
			checkAttrs(t, c, attribute.String("db.system.name", "aws.dynamodb"), attribute.String("db.collection.name", table))
			if _, ok := attr(c, "aws.dynamodb.consumed_capacity"); ok {
				t.Errorf("stream read span %s has a consumed capacity", c.Name)
			}
		}
		if !slices.Contains(ops, "GetRecords") || i == 0 && (!slices.Contains(ops, "DescribeStream") || !slices.Contains(ops, "GetShardIterator")) {
			t.Errorf("stream batch %d's reads %v; want GetRecords (and for the first DescribeStream and GetShardIterator)", i, ops)
		}
	}
	rm := tm.metrics(t)
	if p, ok := pointOf(rm, "db.client.operation.duration", attribute.String("db.system.name", "aws.dynamodb"),
		attribute.String("db.operation.name", "GetRecords"), attribute.String("db.collection.name", table)); !ok || p.count == 0 {
		t.Errorf("db.client.operation.duration of GetRecords: %+v (found: %v)", p, ok)
	}
	checkNoSecrets(t, spans, rm, secrets)
}

// TestRecountDrift checks the span and metric of a Recount that finds
// drift (another program's message that updated no counter: the total
// and its category's counter are one short) and of one that finds none.
func TestRecountDrift(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	clock := func() time.Time { return now }
	tm := newTelemetry(t)
	mem := memstore.New(memstore.WithClock(clock))
	ib := inbox.New(mem, inbox.WithClock(clock), inbox.WithHooks(tm.hooks))
	ann := scope.User(userAnn)
	foreign := driver.Record{Partition: ann.Partition(), Message: driver.Message{
		ID: foreignID, Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{userAnn}},
		Category: "billing", Title: secretTitle, Body: secretBody, ReceivedAt: now, DeliveredAt: now, ExpiresAt: now.Add(time.Hour),
	}}
	if err := mem.PutForeign(ctx, foreign, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := ib.Recount(ctx, ann); err != nil {
			t.Fatal(err)
		}
	}
	spans := tm.spans.GetSpans()
	recounts := named(spans, "inbox.Recount")
	if len(recounts) != 2 {
		t.Fatalf("%d inbox.Recount spans, want 2 (and no span of the RecountPartition and Counts calls it makes): %v", len(recounts), names(spans))
	}
	checkAttrs(t, recounts[0], otelinbox.RecountRepairsKey.Int(2))
	checkAttrs(t, recounts[1], otelinbox.RecountRepairsKey.Int(0))
	rm := tm.metrics(t)
	if p, ok := pointOf(rm, "inbox.recount.repaired", op("Recount")); !ok || p.value != 2 {
		t.Errorf("inbox.recount.repaired %+v (found: %v), want 2", p, ok)
	}
	checkNoSecrets(t, spans, rm, secrets)
}

// TestOptions checks WithUserIDs (user.id on operation spans, the error's
// text in a failed span's status) and WithScopeMetrics (the tenant and
// inbox on metrics).
func TestOptions(t *testing.T) {
	ctx := context.Background()
	tm := newTelemetry(t, otelinbox.WithUserIDs(), otelinbox.WithScopeMetrics())
	ib := inbox.New(memstore.New(), inbox.WithHooks(tm.hooks))
	ann := scope.User(userAnn)
	if _, err := ib.List(ctx, ann, inbox.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := ib.MarkRead(ctx, ann, foreignID)
	if err == nil {
		t.Fatal("MarkRead of no message succeeded")
	}
	spans := tm.spans.GetSpans()
	checkAttrs(t, named(spans, "inbox.List")[0], otelinbox.UserIDKey.String(userAnn))
	mark := named(spans, "inbox.MarkRead")[0]
	checkAttrs(t, mark, attribute.String("error.type", "not_found"))
	if mark.Status.Code != codes.Error || mark.Status.Description != err.Error() {
		t.Errorf("MarkRead's status %+v, want Error with %q", mark.Status, err)
	}
	rm := tm.metrics(t)
	if _, ok := pointOf(rm, "inbox.operation.duration", op("List"), otelinbox.TenantKey.String("acme"), otelinbox.InboxKey.String("alerts")); !ok {
		t.Errorf("no inbox.operation.duration of List with the scope: %+v", points(rm, "inbox.operation.duration"))
	}
	checkNoSecrets(t, nil, rm, []string{userAnn})
}

package otelinbox_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"sort"

	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/otelinbox"
)

// Example wires an Inbox to OpenTelemetry with the stdout exporters, as a
// development setup: each span and, every ten seconds and at shutdown,
// the metrics go to stdout as JSON. In production, pass the service's own
// providers (an OTLP exporter, say).
func Example() {
	ctx := context.Background()
	traces, err := stdouttrace.New(stdouttrace.WithPrettyPrint())
	if err != nil {
		log.Fatal(err)
	}
	metrics, err := stdoutmetric.New()
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(traces))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)))
	defer func() { _ = tp.Shutdown(ctx); _ = mp.Shutdown(ctx) }()

	// The five lines that turn it on.
	hooks, err := otelinbox.Hooks(otelinbox.WithTracerProvider(tp), otelinbox.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	ib := inbox.New(memstore.New(), inbox.WithHooks(hooks))

	s := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	if _, err := ib.Publish(ctx, s, []string{"ann"}, inbox.Draft{Title: "Disk full"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

// Example_spans shows the spans of a Publish to two users and of a List,
// recorded in memory: an operation's span, with its Store calls' spans
// under it (over DynamoDB, each of those has a client span per request).
func Example_spans() {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	hooks, err := otelinbox.Hooks(otelinbox.WithTracerProvider(tp), otelinbox.WithMeterProvider(sdkmetric.NewMeterProvider()))
	if err != nil {
		log.Fatal(err)
	}
	ib := inbox.New(memstore.New(), inbox.WithHooks(hooks))
	s := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	if _, err := ib.Publish(ctx, s, []string{"ann", "bob"}, inbox.Draft{Title: "Disk full"}); err != nil {
		log.Fatal(err)
	}
	if _, err := ib.List(ctx, s.User("ann"), inbox.ListOptions{}); err != nil {
		log.Fatal(err)
	}
	if _, err := ib.MarkRead(ctx, s.User("ann"), "01ARZ3NDEKTSV4RRFFQ69G5FAV"); err != nil {
		fmt.Println("MarkRead:", err)
	}

	all := spans.GetSpans()
	for _, op := range all {
		if op.Parent.IsValid() {
			continue
		}
		var calls []string
		for _, c := range all {
			if c.Parent.SpanID() == op.SpanContext.SpanID() {
				calls = append(calls, c.Name)
			}
		}
		sort.Strings(calls)
		outcome := ""
		for _, kv := range op.Attributes {
			if kv.Key == otelinbox.OutcomeKey {
				outcome = kv.Value.AsString()
			}
		}
		fmt.Println(op.Name, outcome, calls)
	}
	// Output:
	// MarkRead: inbox: not found
	// inbox.Publish ok [inbox.store.Config inbox.store.PutMessage inbox.store.PutMessage]
	// inbox.List ok [inbox.store.Query inbox.store.Query inbox.store.Query inbox.store.Query inbox.store.Query inbox.store.Stats inbox.store.Stats inbox.store.Stats]
	// inbox.MarkRead not_found [inbox.store.GetRecords]
}

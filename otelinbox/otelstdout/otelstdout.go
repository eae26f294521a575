// Package otelstdout prints what an Inbox reports as OpenTelemetry spans
// and metrics, in JSON, to a writer: otelinbox's hooks over the
// OpenTelemetry SDK with its stdout exporters. It is the development
// setup that cmd/inbox's --otel and the httpapi example's -otel flags
// turn on; a service passes its own providers (an OTLP exporter, say) to
// otelinbox.Hooks instead.
//
//	tel, err := otelstdout.New(os.Stdout, "my-service", 0)
//	if err != nil {
//		return err
//	}
//	defer tel.Shutdown(context.Background())
//	ib := inbox.New(store, inbox.WithHooks(tel.Hooks))
package otelstdout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"

	"github.com/stak/inbox"
	"github.com/stak/inbox/otelinbox"
)

// Telemetry is the OpenTelemetry SDK set up to print an Inbox's spans and
// metrics. Its methods are safe for concurrent use.
type Telemetry struct {
	// Hooks report to the SDK: pass them to inbox.WithHooks. They may
	// serve several Inboxes.
	Hooks inbox.Hooks

	tp *sdktrace.TracerProvider
	mp *sdkmetric.MeterProvider
}

// New returns Telemetry that writes to w, one JSON object a line: each
// span when it ends, and the metrics every interval (the SDK's default, a
// minute, if interval is not positive) and at Shutdown. service is the
// resource's service.name ("" for the SDK's default, or
// OTEL_SERVICE_NAME). opts are otelinbox's (WithUserIDs...); its
// providers are New's. New's writes to w (from the goroutines of the
// operations and of the metric reader) are one Write call per object, one
// at a time.
func New(w io.Writer, service string, interval time.Duration, opts ...otelinbox.Option) (*Telemetry, error) {
	w = &lockedWriter{w: w}
	res := resource.Default()
	if service != "" {
		var err error
		if res, err = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName(service))); err != nil {
			return nil, fmt.Errorf("otelstdout: resource: %w", err)
		}
	}
	spans, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		return nil, fmt.Errorf("otelstdout: %w", err)
	}
	metrics, err := stdoutmetric.New(stdoutmetric.WithWriter(w))
	if err != nil {
		return nil, fmt.Errorf("otelstdout: %w", err)
	}
	var readerOpts []sdkmetric.PeriodicReaderOption
	if interval > 0 {
		readerOpts = append(readerOpts, sdkmetric.WithInterval(interval))
	}
	t := &Telemetry{
		tp: sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSyncer(spans)),
		mp: sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics, readerOpts...))),
	}
	t.Hooks, err = otelinbox.Hooks(append(opts, otelinbox.WithTracerProvider(t.tp), otelinbox.WithMeterProvider(t.mp))...)
	if err != nil {
		return nil, errors.Join(err, t.Shutdown(context.Background()))
	}
	return t, nil
}

// Shutdown writes the metrics a last time and stops the SDK: reports after
// it are dropped. Call it once, before the process exits.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	return errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx))
}

// lockedWriter serializes the writes of the span and metric exporters.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes p to the wrapped writer, alone.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

package inbox

import (
	"context"
	"log/slog"
)

// LogHooks returns Hooks that log to l: each operation's report as one
// record at level Info (Warn when it was throttled or failed for another
// reason than the caller's input, a missing message or a conflict), and
// each Store call and shared-cache event at level Debug. It is the
// telemetry of a process that has no OpenTelemetry (cmd/inbox's and
// examples/httpapi's -log-ops flag); package otelinbox makes spans and
// metrics of the same reports (their -otel flag).
//
// A record names the operation, the tenant and inbox, the duration, the
// outcome (OutcomeOf), the Store calls, their requests, round trips and
// capacity units, and for a stream batch its records, failures, age and the
// requests a stream reader made to fetch it, for a recount the counters it
// repaired. It holds neither the user's ID nor the
// error's text, which may name users: log the error where it is handled.
func LogHooks(l *slog.Logger) Hooks {
	return Hooks{
		Operation: func(ctx context.Context, op Operation) (context.Context, func(OperationReport)) {
			return ctx, func(r OperationReport) {
				level := slog.LevelInfo
				if r.Outcome == OutcomeThrottled || r.Outcome == OutcomeOther {
					level = slog.LevelWarn
				}
				attrs := []slog.Attr{
					slog.String("op", r.Name), slog.String("tenant", r.Scope.Tenant), slog.String("inbox", r.Scope.Inbox),
					slog.Duration("duration", r.Duration), slog.String("outcome", r.Outcome.String()),
					slog.Int("store_calls", r.StoreCalls), slog.Int("requests", r.Totals.Requests), slog.Int("round_trips", r.Totals.RoundTrips),
					slog.Float64("rcu", r.Totals.ReadUnits), slog.Float64("wcu", r.Totals.WriteUnits),
				}
				if s := r.Stream; s.Records > 0 {
					attrs = append(attrs, slog.Int("records", s.Records), slog.Int("failed", s.Failed), slog.Duration("age", s.Age),
						slog.Int("stream_requests", len(r.StreamReads)))
				}
				if r.Name == "Recount" || r.Name == "RecountPartition" {
					attrs = append(attrs, slog.Int("repaired", r.Repaired))
				}
				l.LogAttrs(ctx, level, "inbox: operation", attrs...)
			}
		},
		StoreCall: func(ctx context.Context, c StoreCall) (context.Context, func(StoreCallReport)) {
			if !l.Enabled(ctx, slog.LevelDebug) {
				return ctx, func(StoreCallReport) {}
			}
			return ctx, func(r StoreCallReport) {
				l.LogAttrs(ctx, slog.LevelDebug, "inbox: store call",
					slog.String("call", r.Name), slog.String("op", r.Operation), slog.String("tenant", r.Scope.Tenant), slog.String("inbox", r.Scope.Inbox),
					slog.Bool("shared", r.Shared), slog.Duration("duration", r.Duration), slog.String("outcome", r.Outcome.String()),
					slog.Int("requests", r.Totals.Requests), slog.Int("round_trips", r.Totals.RoundTrips),
					slog.Float64("rcu", r.Totals.ReadUnits), slog.Float64("wcu", r.Totals.WriteUnits))
			}
		},
		SharedCache: func(ctx context.Context, e CacheEvent) {
			l.LogAttrs(ctx, slog.LevelDebug, "inbox: shared cache", slog.String("event", e.Kind.String()),
				slog.String("op", e.Operation), slog.String("tenant", e.Partition.Tenant), slog.String("inbox", e.Partition.Inbox))
		},
	}
}

// Package otelinbox turns what an inbox.Inbox reports (inbox.Hooks) into
// OpenTelemetry traces and metrics: a span for each operation, a child span
// for each Store call, and under it a database client span for each
// DynamoDB request, with the metrics an on-call engineer alerts on.
//
// Turn it on with the providers the service already has:
//
//	hooks, err := otelinbox.Hooks(otelinbox.WithTracerProvider(tp), otelinbox.WithMeterProvider(mp))
//	if err != nil {
//		return err
//	}
//	ib := inbox.New(store, inbox.WithHooks(hooks))
//
// Without the options it uses the global providers (otel.GetTracerProvider,
// otel.GetMeterProvider), read when Hooks is called.
//
// # A module of its own
//
// This package is a Go module of its own (github.com/stak/inbox/otelinbox),
// as otelriver is River's: a service that does not use OpenTelemetry does
// not download or build it, and the inbox module's go.mod names no
// OpenTelemetry package. The inbox module reports through inbox.Hooks, a
// plain struct of functions. Package otelstdout, in this module, prints the
// spans and metrics as JSON with the SDK's stdout exporters: the inbox
// command (cmd/inbox --otel) and the httpapi example (-otel) use it, and
// are modules of their own so that they can (they require this one).
//
// # Spans
//
//   - inbox.<Operation> (internal): one per Inbox call, e.g. inbox.List,
//     inbox.Publish, inbox.StreamHandler, with inbox.operation,
//     inbox.tenant, inbox.inbox, inbox.outcome (OutcomeOf's class),
//     error.type (the class, on failure), inbox.store_calls,
//     inbox.requests, inbox.round_trips, inbox.capacity.read and
//     inbox.capacity.write (the units AWS bills), and for a stream
//     batch inbox.stream.records, inbox.stream.failed and
//     inbox.stream.lag (seconds), for a recount inbox.recount.repaired.
//   - inbox.store.<Call> (internal): one per Store call, e.g.
//     inbox.store.PutMessage, with inbox.store.call, inbox.tenant,
//     inbox.inbox, inbox.partition.shared and the same outcome, request
//     and capacity attributes for the call.
//   - <DynamoDB operation> <table> (client): one per DynamoDB request the
//     dynamo Store made for the call, following the database semantic
//     conventions: db.system.name "aws.dynamodb", db.operation.name as the
//     SDK names it ("Query", "TransactWriteItems", "BatchGetItem"...),
//     db.collection.name and aws.dynamodb.table_names (the table),
//     aws.dynamodb.consumed_capacity (as DynamoDB returned it), and
//     error.type (DynamoDB's error
//     code) on failure. They are made when the Store call ends, with the
//     requests' own start and end times. A Store call the shared cache
//     serves makes none; the memstore Store makes no requests.
//   - The same client spans, under an inbox.StreamHandler span, for the
//     requests a dynamo.StreamReader made to fetch its batch before
//     calling it (inbox.OperationReport.StreamReads): the Streams API's
//     DescribeStream, GetShardIterator and GetRecords (no consumed
//     capacity: the Streams API has none), and its checkpoints' reads and
//     writes. They start and end before the batch's span.
//
// A span's status is Error when its call failed. By default no span holds
// a user's ID, a message's content or an error's text (which may name a
// user or a key): the outcome class says what kind of failure it was.
// WithUserIDs adds user.id to operation spans and the error text to
// failed spans' statuses.
//
// # Metrics
//
// Each is named for the inbox operation it counts (attribute
// inbox.operation); WithScopeMetrics adds inbox.tenant and inbox.inbox,
// which may be many.
//
//   - inbox.operation.duration (histogram, s): each operation's latency,
//     with error.type (its outcome class) when it failed.
//   - inbox.operation.errors (counter): failed operations, by error.type
//     (bad_input, not_found, conflict, throttled, other).
//   - inbox.operation.round_trips (histogram): the sequential stages of
//     DynamoDB requests an operation took.
//   - inbox.capacity.read and inbox.capacity.write (counters, capacity
//     units): the units AWS bills, by operation. That is what DynamoDB
//     reports (ConsumedCapacity, which the dynamo Store asks for on every
//     request), unless AWS's billing rules give more for what the request
//     holds: DynamoDB Local under-reports transactions and reads that find
//     nothing, and the dynamo Store reports AWS's figure for those (see
//     the dynamo package's Capacity).
//   - inbox.shared_cache.hits, .misses, .refreshes and .loads (counters):
//     reads of shared partitions served from memory, not, read from the
//     store for a new snapshot, or loaded from the SharedBackend.
//   - inbox.stream.lag (gauge, s): the age of the newest record of the last
//     batch handled, when its handling ended (as Lambda's IteratorAge).
//   - inbox.stream.records and inbox.stream.records.failed (counters):
//     records handled, and those that failed (batch item failures).
//   - inbox.recount.repaired (counter): counters a Recount or
//     RecountPartition replaced because they had drifted from the records;
//     anything but zero says counts were not exact.
//   - db.client.operation.duration (histogram, s): each DynamoDB request's
//     latency, as the database semantic conventions define it.
package otelinbox

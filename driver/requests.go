package driver

import (
	"context"
	"sync"
	"time"
)

// Request is one request a Store made to its backend (one DynamoDB API
// call, say), as the Store reports it with StartRequest: what the Inbox's
// hooks (inbox.WithHooks) show as the round trips and the capacity units
// of each Store call and each operation.
type Request struct {
	// Op names the request as the backend's API does: "Query",
	// "TransactWriteItems", "BatchGetItem", "GetRecords".
	Op string
	// Service is the backend's API the request called, as its SDK names
	// the service: "DynamoDB", or "DynamoDB Streams" for a
	// dynamo.StreamReader's calls ("" if the Store does not say).
	Service string
	// Table is the table (or collection) the request addressed.
	Table string
	// Start is when it began, Duration how long it took. StartRequest's
	// function fills them in.
	Start    time.Time
	Duration time.Duration
	// ReadUnits and WriteUnits are the capacity units AWS bills for the
	// request (0 when the backend has none): what the backend reported,
	// unless the Store knows that to be short of the bill (the dynamo
	// Store: see dynamo.Store's doc on capacity).
	ReadUnits, WriteUnits float64
	// ConsumedReadUnits and ConsumedWriteUnits are the units the backend
	// reported the request consumed (DynamoDB's ConsumedCapacity), 0 when
	// it reports none. On AWS they are the units billed; DynamoDB Local
	// reports fewer for some requests.
	ConsumedReadUnits, ConsumedWriteUnits float64
	// Err is the request's error, as the backend's client returned it.
	Err error
}

// RequestTotals sums the requests of a RequestLog.
type RequestTotals struct {
	// Requests is how many requests were made.
	Requests int
	// RoundTrips is how many sequential stages they took: a request that
	// starts while another of the log is in flight shares its round trip;
	// one that starts while none is begins a new one. Parallel reads (a
	// List's queries) are one round trip.
	RoundTrips int
	// ReadUnits and WriteUnits are the capacity units AWS bills for them
	// (Request.ReadUnits and WriteUnits).
	ReadUnits, WriteUnits float64
}

// RequestLog records the requests a Store makes for the calls whose
// context holds it (WithRequestLog): the Inbox keeps one per operation and
// one per Store call, nested, when hooks are set. It is safe for
// concurrent use.
type RequestLog struct {
	parent *RequestLog

	mu       sync.Mutex
	inFlight int
	totals   RequestTotals
	requests []Request
}

// NewRequestLog returns an empty log. Requests recorded in it are added to
// parent's totals too (but not to its list), unless parent is nil.
func NewRequestLog(parent *RequestLog) *RequestLog { return &RequestLog{parent: parent} }

// requestLogKey is the context key of a RequestLog.
type requestLogKey struct{}

// WithRequestLog returns a copy of ctx in which requests are recorded in l
// (and its parents).
func WithRequestLog(ctx context.Context, l *RequestLog) context.Context {
	return context.WithValue(ctx, requestLogKey{}, l)
}

// RequestLogFrom returns the RequestLog of ctx, nil if it has none.
func RequestLogFrom(ctx context.Context) *RequestLog {
	l, _ := ctx.Value(requestLogKey{}).(*RequestLog)
	return l
}

// Totals returns the sums of the requests recorded so far.
func (l *RequestLog) Totals() RequestTotals {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.totals
}

// Requests returns the requests recorded in l itself (not in logs nested
// in it), in the order they ended.
func (l *RequestLog) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.requests...)
}

// noRequest is StartRequest's function when ctx holds no log.
func noRequest(Request) {}

// StartRequest tells the RequestLog of ctx, if any, that the Store begins
// a request to its backend, and returns the function the Store calls when
// the request has ended, with its Op, Table, units and Err (the function
// sets Start and Duration; call it once). It costs a context lookup when
// ctx holds no log. A Store that reports no requests still works: the hooks then show
// its calls without round trips or capacity.
func StartRequest(ctx context.Context) func(Request) {
	l := RequestLogFrom(ctx)
	if l == nil {
		return noRequest
	}
	start := time.Now()
	for p := l; p != nil; p = p.parent {
		p.mu.Lock()
		if p.inFlight == 0 {
			p.totals.RoundTrips++
		}
		p.inFlight++
		p.totals.Requests++
		p.mu.Unlock()
	}
	return func(r Request) {
		r.Start, r.Duration = start, time.Since(start)
		for p := l; p != nil; p = p.parent {
			p.mu.Lock()
			p.inFlight--
			p.totals.ReadUnits += r.ReadUnits
			p.totals.WriteUnits += r.WriteUnits
			if p == l {
				p.requests = append(p.requests, r)
			}
			p.mu.Unlock()
		}
	}
}

// batchRequestsKey is the context key of the requests that read a batch.
type batchRequestsKey struct{}

// WithBatchRequests returns a copy of ctx that carries reqs: the requests
// made to read the batch of records the call with ctx handles (a
// dynamo.StreamReader's calls to the DynamoDB Streams API before it calls
// its handler), for the handler to report with its own work: the Inbox's
// StreamHandler reports them in its operation's report
// (inbox.OperationReport.StreamReads).
func WithBatchRequests(ctx context.Context, reqs []Request) context.Context {
	return context.WithValue(ctx, batchRequestsKey{}, reqs)
}

// BatchRequests returns the requests WithBatchRequests put in ctx, nil if
// none.
func BatchRequests(ctx context.Context) []Request {
	reqs, _ := ctx.Value(batchRequestsKey{}).([]Request)
	return reqs
}

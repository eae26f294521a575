package dynamo

import (
	"context"
	"time"
)

// ScheduledPass makes one pass over r's stream as Run does: only what is
// due.
func ScheduledPass(ctx context.Context, r *StreamReader, h StreamHandler) (int, error) {
	return r.pass(ctx, h, true)
}

// AgeShards moves back by d the time every shard of r last returned
// records, as if d had passed.
func AgeShards(r *StreamReader, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.shards {
		s.active = s.active.Add(-d)
	}
}

// WithSaveTimeout sets how long a reader's checkpoint save may go on once
// its context is done (saveTimeout by default).
func WithSaveTimeout(d time.Duration) ReaderOption {
	return func(c *readerConfig) { c.saveTimeout = d }
}

// EventRecord is eventRecord, for tests that read a stream raw.
var EventRecord = eventRecord

// AWS's billing rules (billing.go), for the benchmarks' meter.
var (
	ItemSize         = itemSize
	WriteUnits       = writeUnits
	ReadUnit         = readUnit
	QueryLeast       = queryLeast
	BatchGetLeast    = batchGetLeast
	TransactGetLeast = transactGetLeast
)

// IndexEntryUnits is what a write of an unread or thread index entry
// bills.
const IndexEntryUnits = indexEntryUnits

// ScheduledProjection is scheduledProjection, for the tests that check
// the SAM template and the meter against it.
var ScheduledProjection = scheduledProjection

// WithUntalliedIndex has CreateTable make the unread index as an earlier
// version did, without the counters' tallies.
func WithUntalliedIndex() Option { return func(o *options) { o.untallied = true } }

// IndexProjections returns the attributes each local index CreateTable
// makes projects, by index name.
func IndexProjections() map[string][]string {
	o, _ := resolve(nil)
	out := map[string][]string{}
	for _, ix := range o.indexes() {
		out[*ix.IndexName] = ix.Projection.NonKeyAttributes
	}
	return out
}

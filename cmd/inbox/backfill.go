package main

import (
	"context"
	"flag"
	"sync"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
)

// backfillJSON is the summary backfill-scheduled prints.
type backfillJSON struct {
	Tenant string `json:"tenant"`
	Inbox  string `json:"inbox"`
	// Partitions is how many partitions of the inbox the Scan found.
	Partitions int `json:"partitions"`
	// Indexed is how many scheduled messages were given the scheduled
	// index's keys; Failed how many partitions could not be backfilled.
	Indexed int                  `json:"indexed"`
	Failed  int                  `json:"failed"`
	Errors  []partitionErrorJSON `json:"errors"`
}

// setupBackfillScheduled is backfill-scheduled: for every partition of an
// inbox (a Scan finds them, as recount --all's does),
// dynamo.Store.BackfillScheduled gives the scheduled messages not yet due
// that an earlier version of the library wrote without the scheduled
// index's keys their keys, so that scheduled and due list them.
func setupBackfillScheduled(fs *flag.FlagSet) func(context.Context, *env) error {
	var sf scopeFlags
	sf.register(fs)
	parallel := fs.Int("parallel", 4, "how many partitions to backfill at once: 1 to 64")
	return func(ctx context.Context, e *env) error {
		s, err := sf.scope()
		if err != nil {
			return err
		}
		if *parallel < 1 || *parallel > maxParallel {
			return usagef("--parallel %d: want 1 to %d", *parallel, maxParallel)
		}
		return e.backfillScheduled(ctx, s, *parallel)
	}
}

// backfillScheduled backfills every partition of s, parallel at a time,
// and prints a summary. A partition that fails does not stop the others;
// the command then fails.
func (e *env) backfillScheduled(ctx context.Context, s inbox.Scope, parallel int) error {
	cfg, err := e.awsConfig(ctx)
	if err != nil {
		return err
	}
	db := e.dynamoDB(cfg)
	store := dynamo.New(db, e.table, e.storeOptions()...)
	prog := &progress{w: e.stderr, every: progressEvery}
	parts, bad, err := findPartitions(ctx, db, e.table, s, func(pages, found int, done bool) {
		prog.report(done, "backfill-scheduled: scan: %d page(s) read, %d partitions of %s/%s found", pages, found, s.Tenant, s.Inbox)
	})
	if err != nil {
		return err
	}
	sum := backfillJSON{Tenant: s.Tenant, Inbox: s.Inbox, Partitions: len(parts) + len(bad), Errors: bad}
	var mu sync.Mutex // guards sum and done
	done := len(bad)
	now := time.Now()
	prog = &progress{w: e.stderr, every: progressEvery}
	prog.report(sum.Partitions == done, "backfill-scheduled: %d/%d partitions", done, sum.Partitions)
	_ = forEach(ctx, parts, parallel, func(p inbox.Partition) {
		n, err := store.BackfillScheduled(ctx, p, now)
		mu.Lock()
		defer mu.Unlock()
		done++
		sum.Indexed += n
		if err != nil {
			sum.Errors = append(sum.Errors, partitionErrorJSON{Partition: p.PK(), Error: err.Error()})
		}
		prog.report(done == sum.Partitions, "backfill-scheduled: %d/%d partitions", done, sum.Partitions)
	})
	sum.Failed = len(sum.Errors)
	if sum.Errors == nil {
		sum.Errors = []partitionErrorJSON{}
	}
	if err := e.writeSummary(sum, sum.Tenant, sum.Inbox, sum.Partitions, "INDEXED", sum.Indexed, sum.Failed, sum.Errors); err != nil {
		return err
	}
	return partitionsErr(ctx, done, sum.Partitions, sum.Failed)
}

package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
)

// maxParallel bounds recount --all's --parallel.
const maxParallel = 64

// progressEvery is how often recount --all reports its progress at most
// (the first and the last report are always made).
const progressEvery = time.Second

// setupRecount is recount: Inbox.Recount for one user, or, with --all,
// Inbox.RecountPartition for every partition of an inbox.
func setupRecount(fs *flag.FlagSet) func(context.Context, *env) error {
	var uf userFlags
	uf.register(fs)
	all := fs.Bool("all", false, "recount every partition of the inbox, shared and users' (instead of --user)")
	parallel := fs.Int("parallel", 4, "with --all, how many partitions to recount at once: 1 to 64")
	return func(ctx context.Context, e *env) error {
		parallelSet := false
		fs.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "parallel" })
		if !*all {
			if parallelSet {
				return usagef("--parallel goes with --all")
			}
			return e.userCounts(ctx, uf, (*inbox.Inbox).Recount)
		}
		if uf.user != "" || len(uf.groups) > 0 {
			return usagef("--all recounts every user and group: leave out --user and --group")
		}
		if *parallel < 1 || *parallel > maxParallel {
			return usagef("--parallel %d: want 1 to %d", *parallel, maxParallel)
		}
		s, err := uf.scope()
		if err != nil {
			return err
		}
		return e.recountAll(ctx, s, *parallel)
	}
}

// recountJSON is the summary recount --all prints.
type recountJSON struct {
	Tenant string `json:"tenant"`
	Inbox  string `json:"inbox"`
	// Partitions is how many partitions of the inbox the Scan found.
	Partitions int `json:"partitions"`
	// Repaired is how many were recounted without error (most may have
	// needed no change); Failed how many were not.
	Repaired int                  `json:"repaired"`
	Failed   int                  `json:"failed"`
	Errors   []partitionErrorJSON `json:"errors"`
}

// partitionErrorJSON is a partition that failed, by partition key.
type partitionErrorJSON struct {
	Partition string `json:"partition"`
	Error     string `json:"error"`
}

// recountAll recounts every partition of s: it scans the table for them,
// recounts the shared ones (everyone's, then the groups'), then the users',
// parallel at a time, each once, and prints a summary. A partition that
// fails does not stop the others; the command then fails.
func (e *env) recountAll(ctx context.Context, s inbox.Scope, parallel int) error {
	ib, db, _, err := e.openInbox(ctx)
	if err != nil {
		return err
	}
	prog := &progress{w: e.stderr, every: progressEvery}
	parts, bad, err := findPartitions(ctx, db, e.table, s, func(pages, found int, done bool) {
		prog.report(done, "recount: scan: %d page(s) read, %d partitions of %s/%s found", pages, found, s.Tenant, s.Inbox)
	})
	if err != nil {
		return err
	}
	sum := recountJSON{Tenant: s.Tenant, Inbox: s.Inbox, Partitions: len(parts) + len(bad), Errors: bad}
	var mu sync.Mutex // guards sum
	done := len(bad)
	prog = &progress{w: e.stderr, every: progressEvery}
	prog.report(sum.Partitions == done, "recount: %d/%d partitions", done, sum.Partitions)
	recount := func(p inbox.Partition) {
		err := ib.RecountPartition(ctx, p)
		mu.Lock()
		defer mu.Unlock()
		done++
		if err != nil {
			sum.Errors = append(sum.Errors, partitionErrorJSON{Partition: p.PK(), Error: err.Error()})
		} else {
			sum.Repaired++
		}
		prog.report(done == sum.Partitions, "recount: %d/%d partitions", done, sum.Partitions)
	}
	// The shared partitions first, as Recount does, then the users'.
	i := slices.IndexFunc(parts, func(p inbox.Partition) bool { return !p.IsShared() })
	if i < 0 {
		i = len(parts)
	}
	for _, phase := range [][]inbox.Partition{parts[:i], parts[i:]} {
		if err := forEach(ctx, phase, parallel, recount); err != nil {
			break
		}
	}
	sum.Failed = len(sum.Errors)
	if sum.Errors == nil {
		sum.Errors = []partitionErrorJSON{}
	}
	if err := e.writeSummary(sum, sum.Tenant, sum.Inbox, sum.Partitions, "REPAIRED", sum.Repaired, sum.Failed, sum.Errors); err != nil {
		return err
	}
	return partitionsErr(ctx, sum.Repaired+sum.Failed, sum.Partitions, sum.Failed)
}

// writeSummary prints the summary sum of a command run on every
// partition of an inbox (recount --all, backfill-scheduled) in the format
// of e: sum as JSON, or a table of its figures, the partitions it
// completed in the column named done, then one of the partitions' errors.
func (e *env) writeSummary(sum any, tenant, inbox string, partitions int, done string, n, failed int, errs []partitionErrorJSON) error {
	if e.output == outputJSON {
		return writeJSON(e.stdout, sum)
	}
	err := writeTable(e.stdout, []string{"TENANT", "INBOX", "PARTITIONS", done, "FAILED"},
		[][]string{{tenant, inbox, fmt.Sprint(partitions), fmt.Sprint(n), fmt.Sprint(failed)}})
	if err != nil || len(errs) == 0 {
		return err
	}
	rows := make([][]string, len(errs))
	for i, pe := range errs {
		rows[i] = []string{pe.Partition, pe.Error}
	}
	fmt.Fprintln(e.stdout)
	return writeTable(e.stdout, []string{"PARTITION", "ERROR"}, rows)
}

// partitionsErr is the outcome of such a command that went through done
// of total partitions, failed of them failing: interrupted (ctx's error),
// failed, or nil.
func partitionsErr(ctx context.Context, done, total, failed int) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted after %d of %d partitions: %w", done, total, ctx.Err())
	case failed > 0:
		return fmt.Errorf("%d of %d partitions failed", failed, total)
	}
	return nil
}

// forEach calls f for each partition, at most n at a time, until ctx is
// done; it returns ctx's error if it stopped early.
func forEach(ctx context.Context, parts []inbox.Partition, n int, f func(inbox.Partition)) error {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, p := range parts {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(p)
		}()
	}
	return nil
}

// scanAPI is the part of the DynamoDB client findPartitions uses.
type scanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// findPartitions scans table for the partitions of scope s: the keys
// t#<tenant>U#<user>#<inbox> and t#<tenant>G#<group>#<inbox> (see
// inbox.Partition.PK; keys have no '#', so the prefixes match this tenant
// alone). It reads the whole table once (a Scan's filter does not lower
// its cost) and keeps only the partition keys. It returns the partitions
// sorted, everyone's first, then the groups', then the users', and the
// keys of s that do not parse (written by another program). progress is
// called after each page, with done after the last.
func findPartitions(ctx context.Context, db scanAPI, table string, s inbox.Scope, progress func(pages, found int, done bool)) ([]inbox.Partition, []partitionErrorJSON, error) {
	prefix := "t#" + s.Tenant
	in := &dynamodb.ScanInput{
		TableName:                aws.String(table),
		ProjectionExpression:     aws.String("#pk"),
		FilterExpression:         aws.String("begins_with(#pk, :user) OR begins_with(#pk, :group)"),
		ExpressionAttributeNames: map[string]string{"#pk": dynamo.DefaultPKAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":user":  &types.AttributeValueMemberS{Value: prefix + "U#"},
			":group": &types.AttributeValueMemberS{Value: prefix + "G#"},
		},
	}
	seen := map[string]bool{}
	var parts []inbox.Partition
	var bad []partitionErrorJSON
	pages := 0
	for pager := dynamodb.NewScanPaginator(db, in); pager.HasMorePages(); {
		out, err := pager.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("scan %s: %w", table, err)
		}
		pages++
		for _, item := range out.Items {
			pk, ok := item[dynamo.DefaultPKAttribute].(*types.AttributeValueMemberS)
			if !ok || seen[pk.Value] || !strings.HasSuffix(pk.Value, "#"+s.Inbox) {
				continue
			}
			seen[pk.Value] = true
			p, err := driver.ParsePartitionKey(pk.Value)
			switch {
			case err != nil:
				bad = append(bad, partitionErrorJSON{Partition: pk.Value, Error: err.Error()})
			case p.Scope() == s:
				parts = append(parts, p)
			}
		}
		progress(pages, len(parts)+len(bad), !pager.HasMorePages())
	}
	slices.SortFunc(parts, func(a, b inbox.Partition) int {
		rank := func(p inbox.Partition) int {
			switch {
			case p.IsPublic():
				return 0
			case p.IsShared():
				return 1
			}
			return 2
		}
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Group, b.Group), cmp.Compare(a.User, b.User))
	})
	return parts, bad, nil
}

// progress writes progress lines to w: the first, the last, and at most
// one per every in between. It is safe for concurrent use.
type progress struct {
	w     io.Writer
	every time.Duration

	mu   sync.Mutex
	last time.Time
}

// report writes a progress line if it is the first, final is set, or the
// last was every ago.
func (p *progress) report(final bool, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if !final && !p.last.IsZero() && now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	fmt.Fprintf(p.w, format+"\n", args...)
}

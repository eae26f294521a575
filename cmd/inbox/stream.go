package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
)

// defaultConsumer is the consumer name stream keeps its checkpoints under.
const defaultConsumer = "inbox-stream"

// setupStream is stream: a dynamo.StreamReader over the table's stream
// feeding Inbox.StreamHandler, as the Lambda function does in AWS, until
// ctx is done. It resumes from its checkpoints in the table (--from
// checkpoint, the default) or starts at the stream's oldest or latest
// record. Each change event goes to stdout (JSON: one compact object a
// line; table: a block of rows per batch); each batch, each error the
// reader recovers from and each record passed after failing every try are
// reported on stderr.
func setupStream(fs *flag.FlagSet) func(context.Context, *env) error {
	every := fs.Duration("interval", time.Second, "how often to poll the stream while records flow (idle shards: every 500ms at most)")
	from := fs.String("from", "checkpoint", "where to start: checkpoint (after the last record a stream command with this --consumer accepted; a shard without one from its oldest record), trim-horizon (the oldest record) or latest (only new records)")
	consumer := fs.String("consumer", defaultConsumer, "the name the checkpoints are kept under in the table")
	return func(ctx context.Context, e *env) error {
		if *every <= 0 {
			return usagef("--interval %v: want a positive duration", *every)
		}
		start := map[string]dynamo.StartPosition{"checkpoint": dynamo.FromCheckpoint, "trim-horizon": dynamo.FromTrimHorizon, "latest": dynamo.FromLatest}
		pos, ok := start[*from]
		if !ok {
			return usagef("--from %q: want checkpoint, trim-horizon or latest", *from)
		}
		if err := driver.ValidateKey("--consumer", *consumer); err != nil {
			return asUsage(err)
		}
		var mu sync.Mutex // guards batch
		var batch []inbox.Event
		ib, db, cfg, err := e.openInbox(ctx, inbox.WithEvents(func(_ context.Context, ev inbox.Event) error {
			mu.Lock()
			defer mu.Unlock()
			batch = append(batch, ev)
			return nil
		}))
		if err != nil {
			return err
		}
		d, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(e.table)})
		if err != nil {
			return fmt.Errorf("describe table %s: %w", e.table, err)
		}
		arn := aws.ToString(d.Table.LatestStreamArn)
		if arn == "" {
			return fmt.Errorf("table %s has no stream (create it with create-table, or enable a NEW_AND_OLD_IMAGES stream)", e.table)
		}
		cp, err := dynamo.New(db, e.table, e.storeOptions()...).Checkpoints(*consumer)
		if err != nil {
			return asUsage(err)
		}
		fmt.Fprintf(e.stderr, "stream: reading %s from %s (consumer %s), every %v; interrupt to stop\n", arn, pos, *consumer, *every)
		total := 0
		h := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			resp, err := ib.StreamHandler(ctx, ev)
			mu.Lock()
			evs := batch
			batch = nil
			mu.Unlock()
			if werr := e.writeEvents(evs); werr != nil && err == nil {
				err = werr
			}
			return resp, err
		}
		hooks := dynamo.ReaderHooks{
			OnBatch: func(_ context.Context, b dynamo.Batch) {
				total += b.Accepted
				fmt.Fprintf(e.stderr, "stream: batch: %d records handed to the handler, %d accepted, lag %v (%d accepted since start)\n",
					b.Records, b.Accepted, b.Age.Round(time.Millisecond), total)
			},
			OnError: func(_ context.Context, err error) {
				fmt.Fprintf(e.stderr, "stream: error, retrying: %v\n", err)
			},
			OnFailure: func(_ context.Context, f dynamo.Failure) {
				fmt.Fprintf(e.stderr, "stream: record %s (event %s) failed %d tries and is passed: %v\n",
					f.Record.Change.SequenceNumber, f.Record.EventID, f.Attempts, f.Err)
			},
		}
		r := dynamo.NewStreamReader(e.streams(cfg), arn, dynamo.WithCheckpoints(cp), dynamo.WithStart(pos), dynamo.WithHooks(hooks))
		_ = r.Run(ctx, h, *every) // returns ctx.Err() only
		fmt.Fprintf(e.stderr, "stream: stopped; %d records accepted\n", total)
		return nil
	}
}

// eventJSON is an inbox.Event as stream prints it.
type eventJSON struct {
	ID        string       `json:"id"`
	Kind      string       `json:"kind"`
	Partition string       `json:"partition"`
	Tenant    string       `json:"tenant"`
	Inbox     string       `json:"inbox"`
	User      string       `json:"user,omitempty"`
	Group     string       `json:"group,omitempty"`
	At        time.Time    `json:"at"`
	Seen      string       `json:"seen,omitempty"`
	Message   *messageJSON `json:"message,omitempty"`
}

// writeEvents writes evs in the format of e: JSON, one compact object a
// line; table, a block of rows.
func (e *env) writeEvents(evs []inbox.Event) error {
	if len(evs) == 0 {
		return nil
	}
	if e.output == outputJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		for _, ev := range evs {
			out := eventJSON{ID: ev.ID, Kind: string(ev.Kind), Partition: ev.Partition.PK(),
				Tenant: ev.Partition.Tenant, Inbox: ev.Partition.Inbox, User: ev.Partition.User, Group: ev.Partition.Group,
				At: ev.At, Seen: ev.Seen}
			if ev.Message.ID != "" {
				m := newMessageJSON(ev.Message)
				out.Message = &m
			}
			if err := enc.Encode(out); err != nil {
				return err
			}
		}
		return nil
	}
	rows := make([][]string, len(evs))
	for i, ev := range evs {
		id := ev.Message.ID
		if ev.Kind == inbox.EventSeen {
			id = ev.Seen
		}
		rows[i] = []string{timeCell(ev.At), string(ev.Kind), ev.Partition.PK(), id, ev.Message.Title}
	}
	return writeTable(e.stdout, []string{"AT", "KIND", "PARTITION", "MESSAGE", "TITLE"}, rows)
}

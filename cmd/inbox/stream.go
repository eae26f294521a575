package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
)

// setupStream is stream: a dynamo.StreamReader over the table's stream
// feeding Inbox.StreamHandler, as the Lambda function does in AWS, until
// ctx is done. Each change event goes to stdout (JSON: one compact object
// a line; table: a block of rows per batch); each poll that delivered
// something is reported on stderr.
func setupStream(fs *flag.FlagSet) func(context.Context, *env) error {
	every := fs.Duration("interval", time.Second, "how often to poll the stream")
	return func(ctx context.Context, e *env) error {
		if *every <= 0 {
			return usagef("--interval %v: want a positive duration", *every)
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
		fmt.Fprintf(e.stderr, "stream: reading %s from its oldest record, every %v; interrupt to stop\n", arn, *every)
		var handed, failed int
		var failures []string
		h := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			resp, err := ib.StreamHandler(ctx, ev)
			handed += len(ev.Records)
			failed += len(resp.BatchItemFailures)
			for _, f := range resp.BatchItemFailures {
				failures = append(failures, f.ItemIdentifier)
			}
			mu.Lock()
			evs := batch
			batch = nil
			mu.Unlock()
			if werr := e.writeEvents(evs); werr != nil && err == nil {
				err = werr
			}
			return resp, err
		}
		r := dynamo.NewStreamReader(e.streams(cfg), arn)
		t := time.NewTicker(*every)
		defer t.Stop()
		total := 0
		for {
			handed, failed, failures = 0, 0, nil
			n, err := r.Poll(ctx, h)
			total += n
			if handed > 0 {
				fmt.Fprintf(e.stderr, "stream: poll: %d records handed to the handler, %d accepted, %d failed (%d accepted since start)\n", handed, n, failed, total)
			}
			if len(failures) > 0 {
				fmt.Fprintf(e.stderr, "stream: failed records (sequence numbers), retried next poll: %s\n", strings.Join(failures, " "))
			}
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				return err
			}
			select {
			case <-ctx.Done():
			case <-t.C:
				continue
			}
			break
		}
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

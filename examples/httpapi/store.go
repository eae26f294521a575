package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/memstore"
)

// defaultTable is the table used with an endpoint and no table name.
const defaultTable = "inbox"

// backend is the store the API serves, and how its changes reach the
// Inbox's events.
type backend struct {
	store inbox.Store
	desc  string // for the log
	// stream feeds the store's changes to ib until ctx is done: the
	// table's stream into ib.StreamHandler, or the in-memory store's own
	// feed into ib.HandleChange; nil for a table whose stream this process
	// does not read.
	stream func(ctx context.Context, ib *inbox.Inbox) error
}

// changePoll is how often the in-memory store's changes are delivered.
const changePoll = 100 * time.Millisecond

// streamPoll is how often the stream reader polls the table's stream
// while records flow (an idle shard is read every 500 ms at most).
const streamPoll = 250 * time.Millisecond

// streamConsumer is the name the API's stream reader keeps its checkpoints
// under.
const streamConsumer = "httpapi"

// openStore returns the store to serve: the in-memory store when neither
// endpoint nor table is set, its changes fed to the Inbox as the table's
// stream would be, else the DynamoDB table (created if missing when
// endpoint is set). With endpoint, or with readStream, the backend reads
// the table's stream in this process, as the Lambda function does in AWS.
func openStore(ctx context.Context, endpoint, table string, readStream bool) (backend, error) {
	if endpoint == "" && table == "" {
		mem := memstore.New(memstore.WithChanges())
		return backend{store: mem, desc: "memory", stream: func(ctx context.Context, ib *inbox.Inbox) error {
			return feedChanges(ctx, mem, ib)
		}}, nil
	}
	table = cmp.Or(table, defaultTable)
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return backend{}, fmt.Errorf("aws config: %w", err)
	}
	if endpoint != "" {
		// DynamoDB Local takes any credentials and region.
		cfg.Credentials = credentials.NewStaticCredentialsProvider("local", "local", "")
		if cfg.Region == "" {
			cfg.Region = "us-east-1"
		}
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			// DynamoDB Local's error replies fail the SDK's response
			// checksum, which only logs a warning.
			o.DisableValidateResponseChecksum = true
		}
	})
	b := backend{store: dynamo.New(client, table), desc: "dynamodb table " + table}
	if endpoint != "" {
		if err := ensureTable(ctx, client, table); err != nil {
			return backend{}, err
		}
	}
	if endpoint == "" && !readStream {
		return b, nil
	}
	d, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return backend{}, err
	}
	arn := aws.ToString(d.Table.LatestStreamArn)
	if arn == "" {
		return backend{}, fmt.Errorf("table %s has no stream", table)
	}
	streams := dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	// The reader resumes after the last record it accepted before a
	// restart (its checkpoint in the table), so that the page's users do
	// not get a day of events again; it logs what it recovers from.
	cp, err := b.store.(*dynamo.Store).Checkpoints(streamConsumer)
	if err != nil {
		return backend{}, err
	}
	b.stream = func(ctx context.Context, ib *inbox.Inbox) error {
		return dynamo.NewStreamReader(streams, arn, dynamo.WithCheckpoints(cp)).Run(ctx, ib.StreamHandler, streamPoll)
	}
	return b, nil
}

// feedChanges delivers mem's changes to ib every changePoll until ctx is
// done. A change whose events fail is logged and delivered again.
func feedChanges(ctx context.Context, mem *memstore.Store, ib *inbox.Inbox) error {
	tick := time.NewTicker(changePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if _, err := mem.DeliverChanges(ctx, ib.HandleChange); err != nil && ctx.Err() == nil {
			slog.Warn("in-memory changes", "err", err)
		}
	}
}

// ensureTable creates table if it does not exist, and finishes it if it
// does (a creation cut short: see dynamo.FinishTable).
func ensureTable(ctx context.Context, c *dynamodb.Client, table string) error {
	_, err := dynamo.CreateTable(ctx, c, table)
	if inUse := new(types.ResourceInUseException); errors.As(err, &inUse) {
		_, err = dynamo.FinishTable(ctx, c, table)
	}
	return err
}

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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

// backend is the store the API serves, and how to read its stream.
type backend struct {
	store inbox.Store
	desc  string // for the log
	// stream reads the table's stream into h until ctx is done; nil for
	// the in-memory store, which has no stream.
	stream func(ctx context.Context, h dynamo.StreamHandler) error
}

// streamPoll is how often the stream reader polls the table's stream
// while records flow (an idle shard is read every 500 ms at most).
const streamPoll = 250 * time.Millisecond

// streamConsumer is the name the API's stream reader keeps its checkpoints
// under.
const streamConsumer = "httpapi"

// openStore returns the store to serve: the in-memory store when neither
// endpoint nor table is set, else the DynamoDB table (created if missing
// when endpoint is set). With endpoint, or with readStream, the backend
// reads the table's stream in this process, as the Lambda function does in
// AWS.
func openStore(ctx context.Context, endpoint, table string, readStream bool) (backend, error) {
	if endpoint == "" && table == "" {
		return backend{store: memstore.New(), desc: "memory"}, nil
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
	b.stream = func(ctx context.Context, h dynamo.StreamHandler) error {
		return dynamo.NewStreamReader(streams, arn, dynamo.WithCheckpoints(cp)).Run(ctx, h, streamPoll)
	}
	return b, nil
}

// ensureTable creates table if it does not exist.
func ensureTable(ctx context.Context, c *dynamodb.Client, table string) error {
	_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var missing *types.ResourceNotFoundException
	if !errors.As(err, &missing) {
		return err // nil: the table exists
	}
	_, err = dynamo.CreateTable(ctx, c, table)
	return err
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/dynamo"
)

// tableJSON is what create-table and delete-table print.
type tableJSON struct {
	Table     string `json:"table"`
	StreamARN string `json:"stream_arn,omitempty"`
	Deleted   bool   `json:"deleted,omitempty"`
}

// setupCreateTable is create-table: dynamo.CreateTable, which waits until
// the table is active with TTL on and its stream of new and old images.
// If the table exists (a create-table cut short, or run again), it
// finishes it instead, with finishTable.
func setupCreateTable(*flag.FlagSet) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		cfg, err := e.awsConfig(ctx)
		if err != nil {
			return err
		}
		db := e.dynamoDB(cfg)
		arn, err := dynamo.CreateTable(ctx, db, e.table, e.storeOptions()...)
		if inUse := new(types.ResourceInUseException); errors.As(err, &inUse) {
			fmt.Fprintf(e.stderr, "create-table: table %s exists: checking it and finishing what is left\n", e.table)
			arn, err = e.finishTable(ctx, db)
		}
		if err != nil {
			return err
		}
		if e.output == outputJSON {
			return writeJSON(e.stdout, tableJSON{Table: e.table, StreamARN: arn})
		}
		return writeTable(e.stdout, []string{"TABLE", "STREAM ARN"}, [][]string{{e.table, arn}})
	}
}

// finishTable checks that the existing table is one create-table makes
// (the key attributes, a stream of new and old images, the indexes the
// flags name) and finishes it as dynamo.CreateTable would have: it waits
// until the table is active and turns TTL on if it is off. It returns the
// stream ARN. A table that is not such a table is an error, and is left
// as it is.
func (e *env) finishTable(ctx context.Context, db *dynamodb.Client) (string, error) {
	in := &dynamodb.DescribeTableInput{TableName: aws.String(e.table)}
	d, err := db.DescribeTable(ctx, in)
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", e.table, err)
	}
	tab := d.Table
	keys := map[string]types.KeyType{}
	for _, k := range tab.KeySchema {
		keys[aws.ToString(k.AttributeName)] = k.KeyType
	}
	indexes := map[string]bool{}
	for _, ix := range tab.LocalSecondaryIndexes {
		indexes[aws.ToString(ix.IndexName)] = true
	}
	for _, ix := range tab.GlobalSecondaryIndexes {
		indexes[aws.ToString(ix.IndexName)] = true
	}
	switch ss := tab.StreamSpecification; {
	case tab.TableStatus == types.TableStatusDeleting:
		return "", fmt.Errorf("table %s exists and is being deleted", e.table)
	case len(keys) != 2 || keys[dynamo.DefaultPKAttribute] != types.KeyTypeHash || keys[dynamo.DefaultSKAttribute] != types.KeyTypeRange:
		return "", fmt.Errorf("table %s exists with other keys than %s and %s: not an inbox table", e.table, dynamo.DefaultPKAttribute, dynamo.DefaultSKAttribute)
	case ss == nil || !aws.ToBool(ss.StreamEnabled) || ss.StreamViewType != types.StreamViewTypeNewAndOldImages:
		return "", fmt.Errorf("table %s exists without a stream of new and old images", e.table)
	}
	for _, ix := range []string{e.unreadIndex, e.threadIndex, e.scheduled} {
		if ix != "" && !indexes[ix] {
			return "", fmt.Errorf("table %s exists without the index %s", e.table, ix)
		}
	}
	if tab.TableStatus != types.TableStatusActive {
		w := dynamodb.NewTableExistsWaiter(db, func(w *dynamodb.TableExistsWaiterOptions) {
			w.MinDelay, w.MaxDelay = time.Second, 10*time.Second
		})
		if _, err := w.WaitForOutput(ctx, in, 5*time.Minute); err != nil {
			return "", fmt.Errorf("wait for table %s: %w", e.table, err)
		}
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(e.table)})
	if err != nil {
		return "", fmt.Errorf("describe TTL of table %s: %w", e.table, err)
	}
	switch desc := ttl.TimeToLiveDescription; {
	case desc == nil || desc.TimeToLiveStatus == types.TimeToLiveStatusDisabled:
		_, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName:               aws.String(e.table),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(dynamo.DefaultTTLAttribute), Enabled: aws.Bool(true)},
		})
		if err != nil {
			return "", fmt.Errorf("enable TTL on table %s: %w", e.table, err)
		}
		fmt.Fprintf(e.stderr, "create-table: TTL on %s enabled\n", dynamo.DefaultTTLAttribute)
	case aws.ToString(desc.AttributeName) != dynamo.DefaultTTLAttribute:
		return "", fmt.Errorf("table %s has TTL on %s, not %s", e.table, aws.ToString(desc.AttributeName), dynamo.DefaultTTLAttribute)
	}
	return aws.ToString(tab.LatestStreamArn), nil
}

// setupDeleteTable is delete-table: dynamo.DeleteTable, which waits until
// the table is gone (a table that does not exist is not an error).
func setupDeleteTable(*flag.FlagSet) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		cfg, err := e.awsConfig(ctx)
		if err != nil {
			return err
		}
		if err := dynamo.DeleteTable(ctx, e.dynamoDB(cfg), e.table); err != nil {
			return err
		}
		if e.output == outputJSON {
			return writeJSON(e.stdout, tableJSON{Table: e.table, Deleted: true})
		}
		return writeTable(e.stdout, []string{"TABLE", "STATUS"}, [][]string{{e.table, "deleted"}})
	}
}

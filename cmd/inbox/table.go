package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

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
// finishes it instead, with dynamo.FinishTable.
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
			arn, err = dynamo.FinishTable(ctx, db, e.table, e.storeOptions()...)
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

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/memstore"
)

// defaultTable is the table used with an endpoint and no table name.
const defaultTable = "inbox"

// openStore returns the store to serve and a description of it for the
// log: the in-memory store when neither endpoint nor table is set, else
// the DynamoDB table (created if missing when endpoint is set).
func openStore(ctx context.Context, endpoint, table string) (inbox.Store, string, error) {
	if endpoint == "" && table == "" {
		return memstore.New(), "memory", nil
	}
	table = cmp.Or(table, defaultTable)
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("aws config: %w", err)
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
	if endpoint != "" {
		if err := ensureTable(ctx, client, table); err != nil {
			return nil, "", err
		}
	}
	return dynamo.New(client, table), "dynamodb table " + table, nil
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

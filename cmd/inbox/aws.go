package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/otelinbox/otelstdout"
)

// awsConfig loads the AWS config from the environment and the shared
// config files, with --region over theirs. No region at all is a usage
// error: every request needs one, DynamoDB Local's too.
func (e *env) awsConfig(ctx context.Context) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if e.region != "" {
		opts = append(opts, config.WithRegion(e.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("AWS config: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, usagef("no region: pass --region or set AWS_REGION")
	}
	return cfg, nil
}

// dynamoDB returns a DynamoDB client for cfg, at --endpoint-url if set.
func (e *env) dynamoDB(cfg aws.Config) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if e.endpoint != "" {
			o.BaseEndpoint = aws.String(e.endpoint)
			// DynamoDB Local's error replies fail the SDK's response
			// checksum, which then logs a warning on every call.
			o.DisableValidateResponseChecksum = true
		}
	})
}

// streams returns a DynamoDB Streams client for cfg, at --endpoint-url if
// set (DynamoDB Local serves both APIs at one URL).
func (e *env) streams(cfg aws.Config) *dynamodbstreams.Client {
	return dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
		if e.endpoint != "" {
			o.BaseEndpoint = aws.String(e.endpoint)
		}
	})
}

// openInbox returns an Inbox over the table, and the DynamoDB client it
// uses. The shared-partition cache is off: a command makes a few calls
// and shows what the table holds now.
func (e *env) openInbox(ctx context.Context, opts ...inbox.Option) (*inbox.Inbox, *dynamodb.Client, aws.Config, error) {
	cfg, err := e.awsConfig(ctx)
	if err != nil {
		return nil, nil, aws.Config{}, err
	}
	db := e.dynamoDB(cfg)
	opts = append([]inbox.Option{inbox.WithSharedCache(0)}, opts...)
	switch {
	case e.logOps:
		opts = append(opts, inbox.WithHooks(inbox.LogHooks(slog.New(slog.NewJSONHandler(e.stderr, nil)))))
	case e.otel:
		if e.telemetry == nil {
			if e.telemetry, err = otelstdout.New(e.stderr, "inbox", time.Minute); err != nil {
				return nil, nil, aws.Config{}, err
			}
		}
		opts = append(opts, inbox.WithHooks(e.telemetry.Hooks))
	}
	return inbox.New(dynamo.New(db, e.table, e.storeOptions()...), opts...), db, cfg, nil
}

// Command lambda is the AWS Lambda function that keeps an inbox table's
// counters exact as DynamoDB removes items, and announces every change:
// examples/template.yaml deploys it on the table's stream, filtered to
// the records it needs (the writes and removals of messages and receipts,
// kind UM; the writes of seen watermarks, SN, and of preferences, UP; the
// removals of timers, TM), and it hands each batch to
// (*inbox.Inbox).StreamHandler, which reports failed records back to
// Lambda one by one.
//
// Each change event (inbox.Event) is written to standard output as one JSON
// line, which Lambda sends to CloudWatch Logs. That is where a host plugs
// in its push: replace logEvents with a handler that publishes to its
// pub/sub (API Gateway WebSocket connections, AppSync, SNS, mobile push).
// A handler error fails the event's record, which Lambda retries; the
// counters are never applied twice.
//
// Environment:
//
//	TABLE_NAME         the inbox table (required)
//	DYNAMODB_ENDPOINT  a DynamoDB endpoint URL to use instead of AWS's,
//	                   e.g. DynamoDB Local (optional)
//
// Credentials and region come from the Lambda environment, as for any AWS
// SDK client.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"os"
	"sync"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
)

func main() {
	ib, err := newInbox(context.Background(), os.Getenv, logEvents(os.Stdout))
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(ib.StreamHandler)
}

// logEvents returns an EventHandler that writes each event to w as one
// JSON line.
func logEvents(w io.Writer) inbox.EventHandler {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	return func(_ context.Context, e inbox.Event) error {
		mu.Lock()
		defer mu.Unlock()
		return enc.Encode(e)
	}
}

// newInbox builds the Inbox over the dynamo Store that the environment, read
// through getenv, describes, with events for push.
func newInbox(ctx context.Context, getenv func(string) string, push inbox.EventHandler) (*inbox.Inbox, error) {
	table := getenv("TABLE_NAME")
	if table == "" {
		return nil, errors.New("lambda: TABLE_NAME is not set")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if ep := getenv("DYNAMODB_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})
	return inbox.New(dynamo.New(client, table), inbox.WithEvents(push)), nil
}

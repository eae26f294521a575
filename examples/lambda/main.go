// Command lambda is the AWS Lambda function that keeps an inbox table's
// counters exact as DynamoDB removes items: examples/template.yaml deploys
// it on the table's stream, filtered to removals of messages and receipts,
// and it hands each batch to (*inbox.Inbox).StreamHandler, which reports
// failed records back to Lambda one by one.
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
	"errors"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
)

func main() {
	ib, err := newInbox(context.Background(), os.Getenv)
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(ib.StreamHandler)
}

// newInbox builds the Inbox over the dynamo Store that the environment, read
// through getenv, describes.
func newInbox(ctx context.Context, getenv func(string) string) (*inbox.Inbox, error) {
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
	return inbox.New(dynamo.New(client, table)), nil
}

package dynamo

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/stak/inbox/driver"
)

// reporting is the Client a Store calls: it passes each call to the
// Client it wraps and reports it to the driver.RequestLog of the call's
// context, if any (driver.StartRequest), with the capacity units DynamoDB
// returned for it and those AWS bills for it. This is how the Inbox's hooks
// (inbox.WithHooks) learn the round trips and the capacity of each Store
// call. It holds no mutable state.
//
// The units DynamoDB returns are its ConsumedCapacity (the Store asks for
// TOTAL on every request): on AWS, what AWS bills. DynamoDB Local
// under-reports: it sums only the distinct per-item amounts of a
// transaction (three small items report 2 units, where AWS bills 6), and
// reports 0 for a read that finds nothing (AWS bills it 1 unit, 0.5
// eventually consistent). So the units billed are the larger of
// DynamoDB's figure and the least AWS's rules (see billing) give for what
// the request holds: the sizes of the items it puts, 1 KB for each item it
// updates, deletes or checks, twice that in a transaction, and a read for
// each key or query, and 2 reads of each item a TransactGetItems returns,
// by its size (see transactGetLeast). On AWS that is DynamoDB's figure; on
// Local it is AWS's for transactions that put new items and update or
// delete items of 1 KB or less, as the Inbox's do (message bodies aside),
// and for every TransactGetItems. A request the
// SDK retried is one request, with the units of its last attempt.
type reporting struct {
	Client
	table string
	bill  billing
}

// BatchGetItem calls the wrapped client and reports the request.
func (c reporting) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	end := driver.StartRequest(ctx)
	out, err := c.Client.BatchGetItem(ctx, in, optFns...)
	var cc []types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	end(c.request("BatchGetItem", false, err, batchGetLeast(in, out), cc...))
	return out, err
}

// PutItem calls the wrapped client and reports the request.
func (c reporting) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	end := driver.StartRequest(ctx)
	out, err := c.Client.PutItem(ctx, in, optFns...)
	var cc []types.ConsumedCapacity
	if out != nil {
		cc = one(out.ConsumedCapacity)
	}
	end(c.request("PutItem", true, err, c.bill.putLeast(in.Item, in.ConditionExpression, in.ExpressionAttributeNames, false), cc...))
	return out, err
}

// Query calls the wrapped client and reports the request.
func (c reporting) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	end := driver.StartRequest(ctx)
	out, err := c.Client.Query(ctx, in, optFns...)
	var cc []types.ConsumedCapacity
	if out != nil {
		cc = one(out.ConsumedCapacity)
	}
	end(c.request("Query", false, err, queryLeast(in), cc...))
	return out, err
}

// UpdateItem calls the wrapped client and reports the request.
func (c reporting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	end := driver.StartRequest(ctx)
	out, err := c.Client.UpdateItem(ctx, in, optFns...)
	var cc []types.ConsumedCapacity
	if out != nil {
		cc = one(out.ConsumedCapacity)
	}
	end(c.request("UpdateItem", true, err, writeUnits(0, false), cc...))
	return out, err
}

// TransactWriteItems calls the wrapped client and reports the request.
func (c reporting) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	end := driver.StartRequest(ctx)
	out, err := c.Client.TransactWriteItems(ctx, in, optFns...)
	var cc []types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	end(c.request("TransactWriteItems", true, err, c.bill.transactLeast(in), cc...))
	return out, err
}

// TransactGetItems calls the wrapped client and reports the request.
func (c reporting) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	end := driver.StartRequest(ctx)
	out, err := c.Client.TransactGetItems(ctx, in, optFns...)
	var cc []types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	end(c.request("TransactGetItems", false, err, transactGetLeast(in, out), cc...))
	return out, err
}

// request describes a request op (a write if write) that returned err and
// consumed cc: the read and write units DynamoDB reported apart, if it
// did, else its total, as read or write units by the kind of op; and the
// units billed, at least least of the op's kind. A failed request returns
// no capacity and is reported as billing none, but for a single write that
// failed its condition: AWS bills it as a write of the item there (at
// least least).
func (c reporting) request(op string, write bool, err error, least float64, cc ...types.ConsumedCapacity) driver.Request {
	r := driver.Request{Op: op, Service: serviceDynamoDB, Table: c.table, Err: err}
	for _, u := range cc {
		switch {
		case u.ReadCapacityUnits != nil || u.WriteCapacityUnits != nil:
			r.ConsumedReadUnits += aws.ToFloat64(u.ReadCapacityUnits)
			r.ConsumedWriteUnits += aws.ToFloat64(u.WriteCapacityUnits)
		case write:
			r.ConsumedWriteUnits += aws.ToFloat64(u.CapacityUnits)
		default:
			r.ConsumedReadUnits += aws.ToFloat64(u.CapacityUnits)
		}
	}
	r.ReadUnits, r.WriteUnits = r.ConsumedReadUnits, r.ConsumedWriteUnits
	var failed *types.ConditionalCheckFailedException
	if err != nil && !(write && errors.As(err, &failed)) {
		return r
	}
	if write {
		r.WriteUnits = max(r.WriteUnits, least)
	} else {
		r.ReadUnits = max(r.ReadUnits, least)
	}
	return r
}

// The services a Store's requests call (driver.Request.Service), as the
// SDK names them.
const (
	serviceDynamoDB = "DynamoDB"
	serviceStreams  = "DynamoDB Streams"
)

// streamsReporting is the StreamsClient a StreamReader calls: it passes
// each call to the client it wraps and reports it to the
// driver.RequestLog of the call's context, if any, as a request of the
// DynamoDB Streams API on the stream's table (which bills no capacity
// units). It holds no mutable state.
type streamsReporting struct {
	StreamsClient
	table string
}

// DescribeStream calls the wrapped client and reports the request.
func (c streamsReporting) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	end := driver.StartRequest(ctx)
	out, err := c.StreamsClient.DescribeStream(ctx, in, optFns...)
	end(driver.Request{Op: "DescribeStream", Service: serviceStreams, Table: c.table, Err: err})
	return out, err
}

// GetShardIterator calls the wrapped client and reports the request.
func (c streamsReporting) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	end := driver.StartRequest(ctx)
	out, err := c.StreamsClient.GetShardIterator(ctx, in, optFns...)
	end(driver.Request{Op: "GetShardIterator", Service: serviceStreams, Table: c.table, Err: err})
	return out, err
}

// GetRecords calls the wrapped client and reports the request.
func (c streamsReporting) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	end := driver.StartRequest(ctx)
	out, err := c.StreamsClient.GetRecords(ctx, in, optFns...)
	end(driver.Request{Op: "GetRecords", Service: serviceStreams, Table: c.table, Err: err})
	return out, err
}

// streamTable returns the table of stream ARN arn
// (arn:aws:dynamodb:<region>:<account>:table/<table>/stream/<label>), ""
// if it is not one.
func streamTable(arn string) string {
	_, rest, ok := strings.Cut(arn, ":table/")
	if !ok {
		return ""
	}
	table, _, _ := strings.Cut(rest, "/")
	return table
}

// one returns c as a slice: empty if c is nil.
func one(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

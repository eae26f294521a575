package dynamo

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stak/inbox/driver"
)

// reporting is the Client a Store calls: it passes each call to the
// Client it wraps and reports it to the driver.RequestLog of the call's
// context, if any (driver.StartRequest), with the capacity units DynamoDB
// returned for it. This is how the Inbox's hooks (inbox.WithHooks) learn
// the round trips and the capacity of each Store call. It holds no mutable
// state.
//
// The units are DynamoDB's ConsumedCapacity (the Store asks for TOTAL on
// every request): on AWS, what AWS bills; DynamoDB Local under-reports
// transactions (it sums the distinct per-item amounts, where AWS bills 2
// units per KB for each item). A request the SDK retried is one request,
// with the units of its last attempt.
type reporting struct {
	Client
	table string
}

// BatchGetItem calls the wrapped client and reports the request.
func (c reporting) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	end := driver.StartRequest(ctx)
	out, err := c.Client.BatchGetItem(ctx, in, optFns...)
	var cc []types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	end(c.request("BatchGetItem", false, err, cc...))
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
	end(c.request("PutItem", true, err, cc...))
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
	end(c.request("Query", false, err, cc...))
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
	end(c.request("UpdateItem", true, err, cc...))
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
	end(c.request("TransactWriteItems", true, err, cc...))
	return out, err
}

// request describes a request op (a write if write) that returned err and
// consumed cc: the read and write units DynamoDB reported apart, if it
// did, else its total, as read or write units by the kind of op.
func (c reporting) request(op string, write bool, err error, cc ...types.ConsumedCapacity) driver.Request {
	r := driver.Request{Op: op, Table: c.table, Err: err}
	for _, u := range cc {
		switch {
		case u.ReadCapacityUnits != nil || u.WriteCapacityUnits != nil:
			r.ReadUnits += aws.ToFloat64(u.ReadCapacityUnits)
			r.WriteUnits += aws.ToFloat64(u.WriteCapacityUnits)
		case write:
			r.WriteUnits += aws.ToFloat64(u.CapacityUnits)
		default:
			r.ReadUnits += aws.ToFloat64(u.CapacityUnits)
		}
	}
	return r
}

// one returns c as a slice: empty if c is nil.
func one(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

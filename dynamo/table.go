package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableClient is the part of *dynamodb.Client the table helpers use.
type TableClient interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
}

// tableWait bounds how long the helpers wait for a table to become active
// or to disappear.
const tableWait = 5 * time.Minute

// CreateTable creates table for a Store, for tests and local use: on-demand
// billing, string key attributes (pk, sk or as set by WithKeyAttributes), a
// stream of new and old images (StreamHandler accounts removals from old
// images, and derives change events from both), TTL on the TTL attribute
// (expiredat or as set by WithTTLAttribute), and the unread and thread
// indexes (see WithUnreadIndex and WithThreadIndex), local secondary
// indexes: with them, each partition key's
// items (one user's, or one inbox's broadcasts) are limited to 10 GB;
// and the scheduled index, a global one (see WithScheduledIndex).
// It waits until the table is active and returns its stream ARN. Production
// tables are better managed by infrastructure code (see examples/). A
// table of that name that exists is the SDK's
// *types.ResourceInUseException: see FinishTable.
func CreateTable(ctx context.Context, c TableClient, table string, opts ...Option) (streamARN string, err error) {
	o, err := resolve(opts)
	if err != nil {
		return "", err
	}
	out, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(table),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: append([]types.AttributeDefinition{
			{AttributeName: aws.String(o.pk), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(o.sk), AttributeType: types.ScalarAttributeTypeS},
		}, o.indexAttributes()...),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(o.pk), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(o.sk), KeyType: types.KeyTypeRange},
		},
		LocalSecondaryIndexes:  o.indexes(),
		GlobalSecondaryIndexes: o.globalIndexes(),
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
	})
	if err != nil {
		return "", fmt.Errorf("dynamo: create table %s: %w", table, err)
	}
	return finish(ctx, c, table, o, out.TableDescription)
}

// FinishTable finishes table, one CreateTable made or began (it was cut
// short, say, between the table's creation and TTL's), after checking
// that it is such a table: the key attributes, a stream of new and old
// images, and the indexes opts name. It waits until the table is active,
// turns TTL on the TTL attribute if it is off, and returns the stream
// ARN. A table that is not such a table (or TTL on another attribute) is
// an error, and is left as it is.
func FinishTable(ctx context.Context, c TableClient, table string, opts ...Option) (streamARN string, err error) {
	o, err := resolve(opts)
	if err != nil {
		return "", err
	}
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("dynamo: describe table %s: %w", table, err)
	}
	desc := d.Table
	if desc == nil {
		return "", fmt.Errorf("dynamo: describe table %s: no description", table)
	}
	keys := map[string]types.KeyType{}
	for _, k := range desc.KeySchema {
		keys[aws.ToString(k.AttributeName)] = k.KeyType
	}
	indexes := map[string]bool{}
	for _, ix := range desc.LocalSecondaryIndexes {
		indexes[aws.ToString(ix.IndexName)] = true
	}
	for _, ix := range desc.GlobalSecondaryIndexes {
		indexes[aws.ToString(ix.IndexName)] = true
	}
	switch ss := desc.StreamSpecification; {
	case desc.TableStatus == types.TableStatusDeleting:
		return "", fmt.Errorf("dynamo: table %s exists and is being deleted", table)
	case len(keys) != 2 || keys[o.pk] != types.KeyTypeHash || keys[o.sk] != types.KeyTypeRange:
		return "", fmt.Errorf("dynamo: table %s exists with other keys than %s and %s: not an inbox table", table, o.pk, o.sk)
	case ss == nil || !aws.ToBool(ss.StreamEnabled) || ss.StreamViewType != types.StreamViewTypeNewAndOldImages:
		return "", fmt.Errorf("dynamo: table %s exists without a stream of new and old images", table)
	}
	for _, ix := range []string{o.unread, o.thread, o.scheduled} {
		if ix != "" && !indexes[ix] {
			return "", fmt.Errorf("dynamo: table %s exists without the index %s", table, ix)
		}
	}
	ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("dynamo: describe TTL of table %s: %w", table, err)
	}
	switch t := ttl.TimeToLiveDescription; {
	case t == nil || t.TimeToLiveStatus == types.TimeToLiveStatusDisabled:
	case t.TimeToLiveStatus == types.TimeToLiveStatusDisabling:
		return "", fmt.Errorf("dynamo: table %s has TTL being turned off: run it again once it is off", table)
	case aws.ToString(t.AttributeName) != o.ttl:
		return "", fmt.Errorf("dynamo: table %s has TTL on %s, not %s", table, aws.ToString(t.AttributeName), o.ttl)
	default:
		o.ttl = "" // on, or being turned on: finish leaves it
	}
	return finish(ctx, c, table, o, desc)
}

// finish waits until table, described by desc, is active, and turns TTL
// on o.ttl unless it is "", and returns its stream ARN.
func finish(ctx context.Context, c TableClient, table string, o options, desc *types.TableDescription) (string, error) {
	if desc == nil || desc.TableStatus != types.TableStatusActive {
		w := dynamodb.NewTableExistsWaiter(c, func(w *dynamodb.TableExistsWaiterOptions) {
			w.MinDelay, w.MaxDelay = time.Second, 10*time.Second
		})
		got, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, tableWait)
		if err != nil {
			return "", fmt.Errorf("dynamo: wait for table %s: %w", table, err)
		}
		desc = got.Table
	}
	if o.ttl != "" {
		_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName: aws.String(table),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{
				AttributeName: aws.String(o.ttl),
				Enabled:       aws.Bool(true),
			},
		})
		if err != nil {
			return "", fmt.Errorf("dynamo: enable TTL on table %s: %w", table, err)
		}
	}
	return aws.ToString(desc.LatestStreamArn), nil
}

// DeleteTable deletes table and waits until it is gone. A table that does
// not exist is not an error.
func DeleteTable(ctx context.Context, c TableClient, table string) error {
	_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	var missing *types.ResourceNotFoundException
	if errors.As(err, &missing) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dynamo: delete table %s: %w", table, err)
	}
	w := dynamodb.NewTableNotExistsWaiter(c, func(w *dynamodb.TableNotExistsWaiterOptions) {
		w.MinDelay, w.MaxDelay = time.Second, 10*time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, tableWait); err != nil {
		return fmt.Errorf("dynamo: wait for deletion of table %s: %w", table, err)
	}
	return nil
}

// indexes returns the table's local secondary indexes: the unread index
// and the thread index, unless turned off (see WithUnreadIndex and
// WithThreadIndex). Each projects the attributes its queries' filters read
// (category and expiry): the entries stay small, and DynamoDB fetches each
// item a query returns from the table. The unread index projects the
// counters' tallies too (tallyAttrs), which only counter items carry: a
// page of ListThreads reads its threads' counts from the index's entries,
// never from the table.
func (o options) indexes() []types.LocalSecondaryIndex {
	var out []types.LocalSecondaryIndex
	for _, ix := range [][2]string{{o.unread, attrUnread}, {o.thread, attrTSK}} {
		if ix[0] == "" {
			continue
		}
		projected := []string{"taxonomy", o.ttl}
		if ix[1] == attrUnread && !o.untallied {
			projected = append(projected, tallyAttrs...)
		}
		out = append(out, types.LocalSecondaryIndex{
			IndexName: aws.String(ix[0]),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(o.pk), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(ix[1]), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: projected},
		})
	}
	return out
}

// indexAttributes returns the definitions of the indexes' key attributes.
func (o options) indexAttributes() []types.AttributeDefinition {
	var out []types.AttributeDefinition
	for _, ix := range [][2]string{{o.unread, attrUnread}, {o.thread, attrTSK}} {
		if ix[0] != "" {
			out = append(out, types.AttributeDefinition{AttributeName: aws.String(ix[1]), AttributeType: types.ScalarAttributeTypeS})
		}
	}
	if o.scheduled != "" {
		for _, a := range []string{attrSPK, attrSSK} {
			out = append(out, types.AttributeDefinition{AttributeName: aws.String(a), AttributeType: types.ScalarAttributeTypeS})
		}
	}
	return out
}

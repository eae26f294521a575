package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/stak/inbox/driver"
)

// This file holds the scheduled index (see WithScheduledIndex): the keys
// a scheduled record carries, the index's definition, and the query of
// driver.Query.Scheduled.

// scheduledKeys returns the scheduled index's keys of rec: its inbox's
// driver.ScheduledPK and its position, driver.ScheduledKey, for a
// scheduled record (driver.InScheduledIndex: a user's copy, or a
// broadcast or group message in its shared partition); "", "" (not in
// the index) for every other record.
func scheduledKeys(rec driver.Record) (spk, ssk string) {
	if !driver.InScheduledIndex(rec) {
		return "", ""
	}
	return driver.ScheduledPK(rec.Partition.Scope()), driver.ScheduledKey(rec.Message.ID, rec.Partition)
}

// globalIndexes returns the table's global secondary indexes: the
// scheduled index, unless turned off. It projects what a message is and
// none of a user's marks (readat, archivedat, unread): a mark leaves the
// projected attributes as they were, which costs no write to the index.
func (o options) globalIndexes() []types.GlobalSecondaryIndex {
	if o.scheduled == "" {
		return nil
	}
	return []types.GlobalSecondaryIndex{{
		IndexName: aws.String(o.scheduled),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrSPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSSK), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: scheduledProjection(o.ttl)},
	}}
}

// scheduledProjection returns the non-key attributes the scheduled index
// projects, with ttl the table's TTL attribute.
func scheduledProjection(ttl string) []string {
	return []string{attrHeaders, "message", "taxonomy", "deliverat", driver.LedgerAttribute, ttl}
}

// scheduledQuery serves driver.Query.Scheduled from the scheduled index:
// one Query of q's inbox's index partition, ascending, between q's
// bounds, evaluating at most q.Limit entries, eventually consistent (a
// global index cannot be read otherwise). With Before the key condition
// is BETWEEN, inclusive, so an entry at Before itself is evaluated and
// dropped, as memstore does. Expired entries are dropped in Go: a filter
// would not lower the cost.
func (s *Store) scheduledQuery(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	if s.o.scheduled == "" {
		return driver.QueryResult{}, fmt.Errorf("dynamo: table %s has no scheduled index (WithScheduledIndex(\"\")): %w", s.table, driver.ErrUnsupported)
	}
	kc := expression.Key(attrSPK).Equal(expression.Value(driver.ScheduledPK(q.Partition.Scope())))
	switch {
	case q.Before != "":
		lo := "0" // below every ID (and position)
		if q.After != "" {
			lo = q.After + "\x00" // the least string above After
		}
		kc = kc.And(expression.Key(attrSSK).Between(expression.Value(lo), expression.Value(q.Before)))
	case q.After != "":
		kc = kc.And(expression.Key(attrSSK).GreaterThan(expression.Value(q.After)))
	}
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return driver.QueryResult{}, fmt.Errorf("dynamo: query expression: %w", err)
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(s.o.scheduled),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(true),
		Limit:                     aws.Int32(int32(min(q.Limit, 1<<30))),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	var api smithy.APIError
	if errors.As(err, &api) && strings.Contains(api.ErrorMessage(), "specified index") {
		return driver.QueryResult{}, fmt.Errorf("dynamo: table %s has no index %q: create it (UpdateTable adds a global index to a table), or pass WithScheduledIndex(\"\") to New: %w: %w", s.table, s.o.scheduled, driver.ErrUnsupported, err)
	}
	if err != nil {
		return driver.QueryResult{}, opError("query scheduled", err)
	}
	var res driver.QueryResult
	for _, av := range out.Items {
		if k, ok := av[attrSSK].(*types.AttributeValueMemberS); ok && k.Value == q.Before {
			continue // Before is exclusive; BETWEEN is not
		}
		pk, _, err := s.itemKey(av)
		if err != nil {
			return driver.QueryResult{}, err
		}
		p, err := driver.ParsePartitionKey(pk)
		if err != nil {
			return driver.QueryResult{}, fmt.Errorf("dynamo: scheduled index entry of %s: %w", pk, err)
		}
		rec, err := s.decodeRecord(p, av) // the index does not project kind
		if err != nil {
			return driver.QueryResult{}, err
		}
		if !q.Now.IsZero() && !q.Now.Before(rec.Message.ExpiresAt) {
			continue
		}
		res.Records = append(res.Records, rec)
	}
	if k, ok := out.LastEvaluatedKey[attrSSK].(*types.AttributeValueMemberS); ok {
		res.Next = k.Value
	}
	return res, nil
}

package dynamo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
)

// hasRead reports whether c's item carries a read tally: always in a user
// partition, and in the public one only if something (wrongly) changes it.
func hasRead(c inbox.Counter) bool { return !c.Partition.IsPublic() || c.Read != 0 }

// counterUpdate returns the transaction item that adds change d to its
// counter, creating the counter (kind, keys and zero tallies) if missing.
func (s *Store) counterUpdate(d inbox.Counter) (types.TransactWriteItem, error) {
	upd := expression.Add(expression.Name("published"), expression.Value(d.Published))
	if hasRead(d) {
		upd = upd.Add(expression.Name("read"), expression.Value(d.Read))
	}
	upd = upd.Set(expression.Name("kind"), expression.Value(kindCounter)).
		Set(expression.Name("tenant_key"), expression.Value(d.Partition.Tenant)).
		Set(expression.Name("inbox_key"), expression.Value(d.Partition.Inbox)).
		Set(expression.Name("uid"), expression.Value(d.Partition.User))
	expr, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("dynamo: counter update: %w", err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       s.key(d.Partition.PK(), inbox.CounterSK(d.Category)),
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}}, nil
}

// counterUpdates returns the transaction items adding deltas (one per
// counter, as the Store contract promises).
func (s *Store) counterUpdates(deltas []inbox.Counter) ([]types.TransactWriteItem, error) {
	var out []types.TransactWriteItem
	for _, d := range deltas {
		it, err := s.counterUpdate(d)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// Counters returns every stats record of p: one strongly consistent Query
// of the sort keys beginning c# (more pages only past 1 MB of stats).
func (s *Store) Counters(ctx context.Context, p inbox.Partition) ([]inbox.Counter, error) {
	items, err := s.queryAll(ctx, p, inbox.CounterPrefix, nil)
	if err != nil {
		return nil, opError("counters", err)
	}
	out := make([]inbox.Counter, 0, len(items))
	for _, av := range items {
		c, err := s.decodeCounter(p, av)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// decodeCounter returns the counter of a stats item of p.
func (s *Store) decodeCounter(p inbox.Partition, av map[string]types.AttributeValue) (inbox.Counter, error) {
	_, sk, err := s.itemKey(av)
	if err != nil {
		return inbox.Counter{}, err
	}
	var it counterItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return inbox.Counter{}, fmt.Errorf("dynamo: decode counter %s/%s: %w", p.PK(), sk, err)
	}
	cat := strings.TrimPrefix(sk, inbox.CounterPrefix)
	if cat == inbox.AllCategories {
		cat = ""
	}
	return inbox.Counter{Partition: p, Category: cat, Published: it.Published, Read: it.Read}, nil
}

// queryAll returns every item of p whose sort key begins with prefix,
// strongly consistent, paging to the end; projection limits the attributes
// when set.
func (s *Store) queryAll(ctx context.Context, p inbox.Partition, prefix string, projection *expression.ProjectionBuilder) ([]map[string]types.AttributeValue, error) {
	b := expression.NewBuilder().WithKeyCondition(
		expression.Key(s.o.pk).Equal(expression.Value(p.PK())).And(expression.Key(s.o.sk).BeginsWith(prefix)))
	if projection != nil {
		b = b.WithProjection(*projection)
	}
	expr, err := b.Build()
	if err != nil {
		return nil, err
	}
	pages := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    expr.KeyCondition(),
		ProjectionExpression:      expr.Projection(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	var out []map[string]types.AttributeValue
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
	}
	return out, nil
}

// ResetCounters replaces every stats record of p with counters: it reads
// the keys of p's stats records, then puts counters and deletes the others
// with BatchWriteItem (25 items a request, resending unprocessed items).
// It is not atomic. A counter of another partition, or two counters of one
// category, is ErrInvalidInput and writes nothing.
func (s *Store) ResetCounters(ctx context.Context, p inbox.Partition, counters []inbox.Counter) error {
	keep := make(map[string]bool, len(counters))
	var writes []types.WriteRequest
	for _, c := range counters {
		if c.Partition != p {
			return fmt.Errorf("%w: counter of %s reset in %s", inbox.ErrInvalidInput, c.Partition.PK(), p.PK())
		}
		sk := inbox.CounterSK(c.Category)
		if keep[sk] {
			return fmt.Errorf("%w: two counters for category %q", inbox.ErrInvalidInput, c.Category)
		}
		keep[sk] = true
		av, err := s.counterItem(c)
		if err != nil {
			return err
		}
		writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{Item: av}})
	}
	proj := expression.NamesList(expression.NameNoDotSplit(s.o.pk), expression.NameNoDotSplit(s.o.sk))
	existing, err := s.queryAll(ctx, p, inbox.CounterPrefix, &proj)
	if err != nil {
		return opError("reset counters", err)
	}
	for _, av := range existing {
		pk, sk, err := s.itemKey(av)
		if err != nil {
			return err
		}
		if !keep[sk] {
			writes = append(writes, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: s.key(pk, sk)}})
		}
	}
	if err := s.batchWrite(ctx, writes); err != nil {
		return opError("reset counters", err)
	}
	return nil
}

// counterItem returns the whole stats item of c.
func (s *Store) counterItem(c inbox.Counter) (map[string]types.AttributeValue, error) {
	av, err := s.item(c.Partition.PK(), inbox.CounterSK(c.Category), counterItem{
		Kind:      kindCounter,
		Published: c.Published,
		Read:      c.Read,
		TenantKey: c.Partition.Tenant,
		InboxKey:  c.Partition.Inbox,
		UID:       c.Partition.User,
	}, time.Time{})
	if err != nil {
		return nil, err
	}
	if !hasRead(c) {
		delete(av, "read")
	}
	return av, nil
}

package dynamo

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/driver"
)

// kindReader is the kind of a reader item (driver.Reader).
const kindReader = "RD"

// readerItem is a reader item without its key (r#<thread>#<id>#<user>,
// driver.ReaderSK) and TTL attribute (the message's expiry).
type readerItem struct {
	Kind   string `dynamodbav:"kind"`
	ReadAt int64  `dynamodbav:"readat"`
	Ledger string `dynamodbav:"ledger"` // the receipt's ledger entry
}

// readerKey returns the primary key of reader item r.
func (s *Store) readerKey(r driver.Reader) map[string]types.AttributeValue {
	return s.key(r.Partition.PK(), driver.ReaderSK(r.Thread, r.ID, r.User))
}

// readerWrite returns the transaction item of what a Mark does to a
// reader item (driver.Mark.ReaderChange): a Put of r, or a Delete of the
// item at its key if r.ReadAt is zero.
func (s *Store) readerWrite(r driver.Reader) (types.TransactWriteItem, error) {
	if r.ReadAt.IsZero() {
		return types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: s.readerKey(r)}}, nil
	}
	item, err := s.item(r.Partition.PK(), driver.ReaderSK(r.Thread, r.ID, r.User), readerItem{Kind: kindReader, ReadAt: r.ReadAt.Unix(), Ledger: r.Entry}, r.ExpiresAt)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: item}}, nil
}

// readerRemoval returns the Delete of reader item r on condition that it
// is gone or stands for r.Entry (driver.Removal.ReaderRemoval).
func (s *Store) readerRemoval(r driver.Reader) (types.TransactWriteItem, error) {
	cond := expression.Or(s.notExists(), expression.Name(driver.LedgerAttribute).Equal(expression.Value(r.Entry)))
	del, err := s.conditionalDelete(s.readerKey(r), cond)
	return types.TransactWriteItem{Delete: del}, err
}

// readersQuery reads the reader items q selects (driver.Query.Readers):
// one Query of the sort keys from r#<thread>#<After> to
// r#<thread>#<Before>, ascending, evaluating at most q.Limit, strongly
// consistent; those expired at q.Now are dropped. Next is the position
// of DynamoDB's LastEvaluatedKey.
func (s *Store) readersQuery(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	pk := q.Partition.PK()
	prefix := driver.ReaderPrefix + q.Thread + "#"
	lo, hi := prefix, driver.ReaderPrefix+q.Thread+"$"
	position := strings.Contains(q.After, "#")
	switch {
	case position:
		lo = prefix + q.After // the start key, excluded
	case q.After != "":
		lo = prefix + q.After + "$" // above every item of message After
	}
	if q.Before != "" {
		hi = prefix + q.Before // below every item of message Before
	}
	kc := expression.Key(s.o.pk).Equal(expression.Value(pk)).And(expression.Key(s.o.sk).Between(expression.Value(lo), expression.Value(hi)))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return driver.QueryResult{}, fmt.Errorf("dynamo: readers query expression: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(true),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(min(q.Limit, 1<<30))),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	if position {
		in.ExclusiveStartKey = s.key(pk, lo)
	}
	out, err := s.client.Query(ctx, in)
	if err != nil {
		return driver.QueryResult{}, opError("query", err)
	}
	var res driver.QueryResult
	for _, av := range out.Items {
		r, err := s.decodeReader(q.Partition, av)
		if err != nil {
			return driver.QueryResult{}, err
		}
		if !q.Now.IsZero() && !q.Now.Before(r.ExpiresAt) {
			continue // expired, not yet deleted by TTL
		}
		res.Readers = append(res.Readers, r)
	}
	if out.LastEvaluatedKey != nil {
		_, sk, err := s.itemKey(out.LastEvaluatedKey)
		if err != nil {
			return driver.QueryResult{}, err
		}
		res.Next = strings.TrimPrefix(sk, prefix)
	}
	return res, nil
}

// decodeReader returns reader item av of partition p.
func (s *Store) decodeReader(p driver.Partition, av map[string]types.AttributeValue) (driver.Reader, error) {
	_, sk, err := s.itemKey(av)
	if err != nil {
		return driver.Reader{}, err
	}
	thread, id, user, err := driver.ParseReaderSK(sk)
	if err != nil {
		return driver.Reader{}, fmt.Errorf("dynamo: reader item %s/%s: %w", p.PK(), sk, err)
	}
	var it readerItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil || it.Kind != kindReader {
		return driver.Reader{}, fmt.Errorf("dynamo: decode reader item %s/%s: kind %q, %v", p.PK(), sk, it.Kind, err)
	}
	return driver.Reader{Partition: p, Thread: thread, ID: id, User: user, ReadAt: fromEpoch(it.ReadAt), ExpiresAt: s.expiry(av), Entry: it.Ledger}, nil
}

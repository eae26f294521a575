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

// readerPositionItem is a member's position item in a group's partition
// (driver.ReaderPositionSK; kind RD, no TTL): her read position in the
// thread (driver.Reader.Position), as on her c#*#<group> (At in epoch
// seconds, Earlier its earlier steps, Done in epoch seconds, 0 for none).
type readerPositionItem struct {
	Kind    string `dynamodbav:"kind"`
	Thread  string `dynamodbav:"thread"`
	User    string `dynamodbav:"user"`
	Bound   string `dynamodbav:"bound"`
	At      int64  `dynamodbav:"at"`
	Earlier string `dynamodbav:"earlier,omitempty"`
	Done    int64  `dynamodbav:"done,omitempty"`
}

// readerPositionWrite returns the transaction item of what a cover mark
// of a group's thread does to the member's position item r (see
// driver.CoverChange): a Put of it, or the Delete of the item at its key
// if r.Position is zero; unconditional (the mark's condition is on her
// counters).
func (s *Store) readerPositionWrite(r driver.Reader) (types.TransactWriteItem, error) {
	sk := driver.ReaderPositionSK(r.Thread, r.User)
	if r.Position.IsZero() {
		return types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: s.key(r.Partition.PK(), sk)}}, nil
	}
	item, err := s.item(r.Partition.PK(), sk, readerPositionItem{Kind: kindReader, Thread: r.Thread, User: r.User, Bound: r.Position.Bound, At: r.Position.At.Unix(), Earlier: r.Position.Earlier, Done: doneUnix(r.Position)}, time.Time{})
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: item}}, nil
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
// r#<thread>#<Before> (r#<thread>#~, below the members' position items,
// without Before), ascending, evaluating at most q.Limit, strongly
// consistent; those expired at q.Now are dropped. Next is the position
// of DynamoDB's LastEvaluatedKey. With q.Positions it reads the thread's
// position items instead (see positionsQuery).
func (s *Store) readersQuery(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	if q.Positions {
		return s.positionsQuery(ctx, q)
	}
	pk := q.Partition.PK()
	prefix := driver.ReaderPrefix + q.Thread + "#"
	lo, hi := prefix, prefix+"~" // below the position items (r#<thread>#~#<user>)
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

// positionsQuery reads the position items of q.Thread's members in q's
// group partition (driver.Query.Positions): the sort keys beginning
// r#<thread>#~#, all of them (q.Limit ignored), by user, strongly
// consistent, page after page.
func (s *Store) positionsQuery(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	p := q.Partition
	prefix := driver.ReaderPositionSK(q.Thread, "")
	kc := expression.Key(s.o.pk).Equal(expression.Value(p.PK())).And(expression.Key(s.o.sk).BeginsWith(prefix))
	items, err := s.queryAll(ctx, kc, nil)
	if err != nil {
		return driver.QueryResult{}, opError("query", err)
	}
	var res driver.QueryResult
	for _, av := range items {
		r, err := s.decodeReaderPosition(p, prefix, av)
		if err != nil {
			return driver.QueryResult{}, err
		}
		res.Readers = append(res.Readers, r)
	}
	return res, nil
}

// decodeReaderPosition returns position item av of group partition p,
// whose sort key begins prefix (r#<thread>#~#). What names another thread
// or user than its key, or holds no position a Store can keep, is
// ErrInvalidInput.
func (s *Store) decodeReaderPosition(p driver.Partition, prefix string, av map[string]types.AttributeValue) (driver.Reader, error) {
	_, sk, err := s.itemKey(av)
	if err != nil {
		return driver.Reader{}, err
	}
	var it readerPositionItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil || it.Kind != kindReader {
		return driver.Reader{}, fmt.Errorf("dynamo: decode position item %s/%s: %w: kind %q, %v", p.PK(), sk, driver.ErrInvalidInput, it.Kind, err)
	}
	user := strings.TrimPrefix(sk, prefix)
	pos := driver.Position{Bound: it.Bound, At: fromEpoch(it.At), Earlier: it.Earlier}
	if it.Done != 0 {
		pos.Done = fromEpoch(it.Done)
	}
	up := driver.Partition{Tenant: p.Tenant, Inbox: p.Inbox, User: user}
	if it.User != user || driver.ReaderPositionSK(it.Thread, user) != sk || driver.ValidateUserID(user) != nil || pos.IsZero() ||
		driver.ValidateCounter(driver.Counter{Partition: up, Group: p.Group, Thread: it.Thread, Covered: true, Position: pos}) != nil {
		return driver.Reader{}, fmt.Errorf("dynamo: position item %s/%s: %w: thread %q, user %q, position %+v", p.PK(), sk, driver.ErrInvalidInput, it.Thread, it.User, pos)
	}
	return driver.Reader{Partition: p, Thread: it.Thread, User: user, Position: pos}, nil
}

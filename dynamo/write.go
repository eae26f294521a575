package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
)

// maxTransactItems is DynamoDB's limit on the items of one transaction.
const maxTransactItems = 100

// transact runs items as one TransactWriteItems with a fresh
// ClientRequestToken, retrying transaction conflicts through the client's
// retryer; meanings[i] says what a failed condition on items[i] means.
func (s *Store) transact(ctx context.Context, op string, items []types.TransactWriteItem, meanings []onFail) error {
	if len(items) > maxTransactItems {
		return fmt.Errorf("%w: %s needs %d transaction items, at most %d", inbox.ErrInvalidInput, op, len(items), maxTransactItems)
	}
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems:          items,
		ClientRequestToken:     aws.String(requestToken()),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}, retryConflicts)
	if err != nil {
		return txError(op, err, meanings)
	}
	return nil
}

// notExists is the condition that no item exists at the written key.
func (s *Store) notExists() expression.ConditionBuilder {
	return expression.NameNoDotSplit(s.o.pk).AttributeNotExists()
}

// expiresAfter is the condition that the item expires after now.
func (s *Store) expiresAfter(now time.Time) expression.ConditionBuilder {
	return expression.NameNoDotSplit(s.o.ttl).GreaterThan(expression.Value(now.Unix()))
}

// conditionalPut returns a Put of item with condition cond.
func (s *Store) conditionalPut(item map[string]types.AttributeValue, cond expression.ConditionBuilder) (*types.Put, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("dynamo: condition: %w", err)
	}
	return &types.Put{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}, nil
}

// PutMessage writes rec and its counter changes in one transaction: a Put
// conditional on no item at rec's key, and an Update per counter (ADD
// published and read). A record already there is ErrExists; a receipt is
// ErrInvalidInput.
func (s *Store) PutMessage(ctx context.Context, rec inbox.Record, deltas []inbox.Counter) error {
	if rec.Receipt {
		return fmt.Errorf("%w: PutMessage of a receipt", inbox.ErrInvalidInput)
	}
	item, err := s.recordItem(rec)
	if err != nil {
		return err
	}
	put, err := s.conditionalPut(item, s.notExists())
	if err != nil {
		return err
	}
	counters, err := s.counterUpdates(deltas)
	if err != nil {
		return err
	}
	items := append([]types.TransactWriteItem{{Put: put}}, counters...)
	exists := func(map[string]types.AttributeValue) error {
		return fmt.Errorf("%w: message %s in %s", inbox.ErrExists, rec.Message.ID, rec.Partition.PK())
	}
	return s.transact(ctx, "put message", items, []onFail{exists})
}

// MarkRead applies marks and deltas in one transaction. A direct mark is an
// Update setting readat, on condition that the item has headers (it is a
// message, not a receipt), no readat and expires after the mark's Now; it
// asks for the old item on failure, which tells ErrAlreadyRead (it has
// readat) from ErrNotFound. A receipt mark is a Put of the receipt on
// condition that no item is at its key (else ErrAlreadyRead) with a
// ConditionCheck that the broadcast exists and expires after Now (else
// ErrNotFound). Each counter gets one Update.
//
// More than inbox.MaxMarkBatch marks, or a mark in a public partition, is
// ErrInvalidInput. Two marks of one key are ErrAlreadyRead (the second
// would find the first's mark), and nothing is written.
func (s *Store) MarkRead(ctx context.Context, marks []inbox.Mark, deltas []inbox.Counter) error {
	if len(marks) > inbox.MaxMarkBatch {
		return fmt.Errorf("%w: %d marks, at most %d", inbox.ErrInvalidInput, len(marks), inbox.MaxMarkBatch)
	}
	var (
		items    []types.TransactWriteItem
		meanings []onFail
		marked   = make(map[inbox.Key]bool, len(marks))
		checked  = make(map[inbox.Key]bool, len(marks))
	)
	for _, mk := range marks {
		if mk.Key.Partition.IsPublic() {
			return fmt.Errorf("%w: mark of %s in the public partition", inbox.ErrInvalidInput, mk.Key.ID)
		}
		if marked[mk.Key] {
			return fmt.Errorf("%w: message %s in %s marked twice", inbox.ErrAlreadyRead, mk.Key.ID, mk.Key.Partition.PK())
		}
		marked[mk.Key] = true
		if mk.Receipt == nil {
			upd, err := s.markDirect(mk)
			if err != nil {
				return err
			}
			items = append(items, types.TransactWriteItem{Update: upd})
			meanings = append(meanings, s.directMarkFailed(mk))
			continue
		}
		receipt, err := s.receiptItem(mk)
		if err != nil {
			return err
		}
		put, err := s.conditionalPut(receipt, s.notExists())
		if err != nil {
			return err
		}
		items = append(items, types.TransactWriteItem{Put: put})
		meanings = append(meanings, func(map[string]types.AttributeValue) error {
			return fmt.Errorf("%w: receipt %s in %s", inbox.ErrAlreadyRead, mk.Key.ID, mk.Key.Partition.PK())
		})
		public := inbox.Key{Partition: inbox.Partition{Tenant: mk.Key.Partition.Tenant, Inbox: mk.Key.Partition.Inbox, User: inbox.PublicUser}, ID: mk.Key.ID}
		if checked[public] {
			continue // one check per broadcast: an item may appear once
		}
		checked[public] = true
		check, err := s.broadcastCheck(public, mk.Now)
		if err != nil {
			return err
		}
		items = append(items, types.TransactWriteItem{ConditionCheck: check})
		meanings = append(meanings, func(map[string]types.AttributeValue) error {
			return fmt.Errorf("%w: broadcast %s in %s", inbox.ErrNotFound, public.ID, public.Partition.PK())
		})
	}
	counters, err := s.counterUpdates(deltas)
	if err != nil {
		return err
	}
	items = append(items, counters...)
	if len(items) == 0 {
		return nil
	}
	return s.transact(ctx, "mark read", items, meanings)
}

// markDirect returns the Update that marks direct message mk.Key read.
func (s *Store) markDirect(mk inbox.Mark) (*types.Update, error) {
	cond := expression.And(
		expression.Name(attrHeaders).AttributeExists(),
		expression.Name(attrReadAt).AttributeNotExists(),
		s.expiresAfter(mk.Now))
	upd := expression.Set(expression.Name(attrReadAt), expression.Value(mk.ReadAt.Unix()))
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return nil, fmt.Errorf("dynamo: mark expression: %w", err)
	}
	return &types.Update{
		TableName:                           aws.String(s.table),
		Key:                                 s.messageKey(mk.Key),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, nil
}

// directMarkFailed tells why direct mark mk failed from the old item: gone
// or expired is ErrNotFound, else read is ErrAlreadyRead, else (a receipt
// has readat, so only an item that is neither message nor receipt is left)
// ErrNotFound.
func (s *Store) directMarkFailed(mk inbox.Mark) onFail {
	return func(old map[string]types.AttributeValue) error {
		notFound := fmt.Errorf("%w: message %s in %s", inbox.ErrNotFound, mk.Key.ID, mk.Key.Partition.PK())
		if old == nil {
			return notFound
		}
		if exp, err := s.expiry(old); err != nil || !mk.Now.Before(exp) {
			return notFound
		}
		if _, read := old[attrReadAt]; read {
			return fmt.Errorf("%w: message %s in %s", inbox.ErrAlreadyRead, mk.Key.ID, mk.Key.Partition.PK())
		}
		return notFound
	}
}

// broadcastCheck returns the ConditionCheck that broadcast k exists and
// expires after now.
func (s *Store) broadcastCheck(k inbox.Key, now time.Time) (*types.ConditionCheck, error) {
	cond := expression.And(expression.NameNoDotSplit(s.o.pk).AttributeExists(), s.expiresAfter(now))
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("dynamo: broadcast check: %w", err)
	}
	return &types.ConditionCheck{
		TableName:                 aws.String(s.table),
		Key:                       s.messageKey(k),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}, nil
}

// errRecorded marks an ApplyRemoval whose marker already exists.
var errRecorded = errors.New("dynamo: removal already recorded")

// ApplyRemoval writes a marker (sort key x#<r.ID> in r.Partition, kind RX,
// expiring at r.ExpiresAt) on condition that none exists, and r.Deltas, in
// one transaction. An existing marker means the removal was applied
// before: it returns false and writes nothing.
func (s *Store) ApplyRemoval(ctx context.Context, r inbox.Removal) (bool, error) {
	item, err := s.item(r.Partition.PK(), inbox.RemovalPrefix+r.ID, removalItem{Kind: kindRemoval}, r.ExpiresAt)
	if err != nil {
		return false, err
	}
	put, err := s.conditionalPut(item, s.notExists())
	if err != nil {
		return false, err
	}
	counters, err := s.counterUpdates(r.Deltas)
	if err != nil {
		return false, err
	}
	items := append([]types.TransactWriteItem{{Put: put}}, counters...)
	recorded := func(map[string]types.AttributeValue) error { return errRecorded }
	err = s.transact(ctx, "apply removal", items, []onFail{recorded})
	switch {
	case errors.Is(err, errRecorded):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

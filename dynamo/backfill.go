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
	"github.com/oklog/ulid/v2"

	"github.com/stak/inbox/driver"
)

// This file holds the backfill of the scheduled index's keys on records
// written by earlier versions of the library.

// BackfillScheduled gives the scheduled messages of partition p that are
// not due at now and lack the scheduled index's keys (spk and ssk) their
// keys, so that Scheduled and Due list them, and returns how many it gave
// keys. Earlier versions of the library wrote such records: scheduled
// copies before the index existed, scheduled broadcasts and group
// messages before it held them (see docs/operations.md, "Upgrades and migrations").
//
// A scheduled message's ID is minted at its delivery time, so it reads
// only p's messages with IDs from now's millisecond on, those not yet
// due: one Query (paged), consistent, whatever else p holds. It writes one
// UpdateItem per record without the keys, on the condition that the
// record still lacks them and is still scheduled for the same second: a
// record redacted, changed or given its keys meanwhile is left alone. A
// MODIFY of the keys alone makes no event and changes no count. It is
// safe while the inbox is in use, and to run again. A partition that is
// not valid is ErrInvalidKey, and nothing is read.
func (s *Store) BackfillScheduled(ctx context.Context, p driver.Partition, now time.Time) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	var lo ulid.ULID
	if err := lo.SetTime(ulid.Timestamp(now)); err != nil {
		return 0, fmt.Errorf("%w: backfill time %v: %w", driver.ErrInvalidInput, now, err)
	}
	// Between the least ID of now's millisecond and above every ID.
	kc := expression.Key(s.o.pk).Equal(expression.Value(p.PK())).
		And(expression.Key(s.o.sk).Between(expression.Value(driver.MessageSK(lo.String())), expression.Value(driver.MessagePrefix+"~")))
	filter := expression.AttributeNotExists(expression.Name(attrSPK)).And(expression.AttributeExists(expression.Name("deliverat")))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).WithFilter(filter).Build()
	if err != nil {
		return 0, fmt.Errorf("dynamo: query expression: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    expr.KeyCondition(),
		FilterExpression:          expr.Filter(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	n := 0
	for {
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return n, opError("query scheduled records to backfill", err)
		}
		for _, av := range out.Items {
			if !isRecordItem(av) {
				continue
			}
			rec, err := s.decodeRecord(p, av)
			if err != nil {
				return n, err
			}
			if !driver.InScheduledIndex(rec) {
				continue // a receipt, or another program's item
			}
			ok, err := s.setScheduledKeys(ctx, rec)
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return n, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// setScheduledKeys writes rec's scheduled index keys on its item, if it
// still lacks them and is still scheduled at rec.Message.DeliverAt; it
// reports whether it wrote them.
func (s *Store) setScheduledKeys(ctx context.Context, rec driver.Record) (bool, error) {
	spk, ssk := scheduledKeys(rec)
	upd := expression.Set(expression.Name(attrSPK), expression.Value(spk)).Set(expression.Name(attrSSK), expression.Value(ssk))
	cond := expression.AttributeNotExists(expression.Name(attrSPK)).
		And(timeIs(attrDeliverAt, rec.Message.DeliverAt))
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return false, fmt.Errorf("dynamo: update expression: %w", err)
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       s.messageKey(rec.Key()),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return false, nil
	}
	if err != nil {
		return false, opError("backfill scheduled keys of "+rec.Message.ID, err)
	}
	return true, nil
}

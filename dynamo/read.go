package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/stak/inbox/driver"
)

// GetRecords reads the records at keys with one strongly consistent
// BatchGetItem (requesting unprocessed keys again, if DynamoDB leaves
// some). Repeated keys are read once; an item that is no record
// (isRecordItem) is left out, as missing. More than 100 distinct keys is
// ErrInvalidInput.
func (s *Store) GetRecords(ctx context.Context, keys []driver.Key) ([]driver.Record, error) {
	partitions := make(map[string]driver.Partition, 2)
	seen := make(map[driver.Key]bool, len(keys))
	var req []map[string]types.AttributeValue
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		partitions[k.Partition.PK()] = k.Partition
		req = append(req, s.messageKey(k))
	}
	if len(req) > maxBatchGet {
		return nil, fmt.Errorf("%w: %d distinct keys, at most %d", driver.ErrInvalidInput, len(req), maxBatchGet)
	}
	if len(req) == 0 {
		return nil, nil
	}
	items, err := s.batchGet(ctx, req, true)
	if err != nil {
		return nil, opError("get records", err)
	}
	out := make([]driver.Record, 0, len(items))
	for _, av := range items {
		pk, _, err := s.itemKey(av)
		if err != nil {
			return nil, err
		}
		if !isRecordItem(av) {
			continue
		}
		rec, err := s.decodeRecord(partitions[pk], av)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// Query reads one page of q.Partition's messages, broadcasts and receipts,
// newest first: one Query of the sort keys beginning m#, starting below
// m#<q.Before>, evaluating at most q.Limit items, with a filter for the
// category, unread-only (readat absent, not a receipt), archive mark and
// expiry, with After as a lower bound of the key condition. An
// unread-only query of the feed (NotArchived) of a user's partition reads
// the unread index instead (see WithUnreadIndex), which holds the
// partition's unread, unarchived direct messages, so it evaluates no read
// message (it passes the receipts of the broadcasts between them, and
// drops them). A query with Unseen reads the same index from the top above
// After: the unread messages, the receipts and the user's c#* (its
// version, in the same consistent read: QueryResult.Version). It reads
// strongly consistent, so that List and Counts agree with what every
// writer wrote before. Next is the ID of DynamoDB's LastEvaluatedKey.
// Items under m# that are not message items (another program's) fail the
// decoding with an error rather than being skipped silently.
// A Limit below 1 is ErrInvalidInput. A Scheduled query reads the
// scheduled index instead (see WithScheduledIndex).
func (s *Store) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	if q.Limit < 1 {
		return driver.QueryResult{}, fmt.Errorf("%w: query limit %d, want at least 1", driver.ErrInvalidInput, q.Limit)
	}
	if err := driver.ValidateQuery(q); err != nil {
		return driver.QueryResult{}, err
	}
	if q.Readers {
		return s.readersQuery(ctx, q)
	}
	if q.Scheduled {
		return s.scheduledQuery(ctx, q)
	}
	if q.Snoozed {
		return s.snoozeQuery(ctx, q)
	}
	if q.Threads {
		return s.threadsQuery(ctx, q)
	}
	pk := q.Partition.PK()
	threaded := q.Thread != "" && s.o.thread != ""                        // a thread's page: the thread index's records
	user := !q.Partition.IsShared() && s.o.unread != "" && q.Thread == "" // the unread index serves it
	feed := q.UnreadOnly && q.Archived == driver.NotArchived && user      // an unread page: the index's messages
	unseen := q.Unseen && user                                            // the index's messages, receipts and c#*
	index := feed || unseen
	kc := expression.Key(s.o.pk).Equal(expression.Value(pk))
	switch {
	case threaded && q.After != "":
		// Above After and within the thread: t#<After> < tsk < t$.
		kc = kc.And(expression.Key(attrTSK).Between(expression.Value(driver.ThreadIndexKey(q.Thread, q.After)+"\x00"), expression.Value(q.Thread+"$")))
	case threaded:
		kc = kc.And(expression.Key(attrTSK).BeginsWith(driver.ThreadIndexKey(q.Thread, "")))
	case unseen && q.After != "":
		// Above After, up to c#* (counterMark): not the threads' counters
		// (activityMark) or the snooze entries (snoozeMark) above it.
		kc = kc.And(expression.Key(attrUnread).Between(expression.Value(q.After+"\x00"), expression.Value(counterMark)))
	case unseen: // the whole index up to c#*, c#* first
		kc = kc.And(expression.Key(attrUnread).LessThanEqual(expression.Value(counterMark)))
	case feed && q.After != "":
		kc = kc.And(expression.Key(attrUnread).Between(expression.Value(q.After+"\x00"), expression.Value(feedBound)))
	case feed:
		kc = kc.And(expression.Key(attrUnread).LessThan(expression.Value(feedBound)))
	case q.After != "":
		// Above After and within m#: m#<After> < sk < m$ ('$' follows '#').
		kc = kc.And(expression.Key(s.o.sk).Between(expression.Value(driver.MessageSK(q.After)+"\x00"), expression.Value("m$")))
	default:
		kc = kc.And(expression.Key(s.o.sk).BeginsWith(driver.MessagePrefix))
	}
	b := expression.NewBuilder().WithKeyCondition(kc)
	fq := q
	if threaded {
		// The index holds the thread's records alone, and projects only
		// the category and expiry: a filter may name no other attribute,
		// so the marks are filtered below, once the items are fetched
		// (a filter would not lower the cost).
		fq.Thread, fq.UnreadOnly, fq.Archived = "", false, driver.AnyArchived
	}
	if index {
		// The index holds only unread, unarchived messages (and receipts,
		// and c#*), and projects only the attributes of the category and
		// expiry filters.
		fq.UnreadOnly, fq.Archived = false, driver.AnyArchived
	}
	if unseen {
		fq.Now = time.Time{} // c#* has no expiry: filtered below
	}
	f, ok := s.queryFilter(fq)
	if q.Unseen && !user {
		// Without the index: receipts, and unread, unarchived messages,
		// of the library's own (as the index would hold them).
		held := expression.And(expression.Name(driver.LedgerAttribute).AttributeExists(),
			expression.Or(expression.Not(isMessage()), expression.And(unread(), has(attrArchived, false))))
		if ok {
			f = f.And(held)
		} else {
			f, ok = held, true
		}
	}
	if ok {
		b = b.WithFilter(f)
	}
	expr, err := b.Build()
	if err != nil {
		return driver.QueryResult{}, fmt.Errorf("dynamo: query expression: %w", err)
	}
	limit := min(q.Limit, 1<<30)
	if unseen && q.Before == "" {
		limit++ // c#*, above every record
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    expr.KeyCondition(),
		FilterExpression:          expr.Filter(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(limit)),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	if q.Before != "" {
		in.ExclusiveStartKey = s.key(pk, driver.MessageSK(q.Before))
	}
	if index {
		// The index holds keys only: DynamoDB fetches each item from the
		// table, in the same request.
		in.IndexName, in.Select = aws.String(s.o.unread), types.SelectAllAttributes
		if q.Before != "" {
			in.ExclusiveStartKey[attrUnread] = &types.AttributeValueMemberS{Value: q.Before}
		}
	}
	if threaded {
		in.IndexName, in.Select = aws.String(s.o.thread), types.SelectAllAttributes
		if q.Before != "" {
			in.ExclusiveStartKey[attrTSK] = &types.AttributeValueMemberS{Value: driver.ThreadIndexKey(q.Thread, q.Before)}
		}
	}
	out, err := s.client.Query(ctx, in)
	var api smithy.APIError
	if (index || threaded) && errors.As(err, &api) && strings.Contains(api.ErrorMessage(), "specified index") {
		// The deployment's fault, not the caller's input.
		name, opt := s.o.unread, "WithUnreadIndex"
		if threaded {
			name, opt = s.o.thread, "WithThreadIndex"
		}
		return driver.QueryResult{}, fmt.Errorf("dynamo: table %s has no index %q: create the table with CreateTable, or pass %s(\"\") to New: %w", s.table, name, opt, err)
	}
	if err != nil {
		return driver.QueryResult{}, opError("query", err)
	}
	var res driver.QueryResult
	evaluated, last := 0, ""
	for _, av := range out.Items {
		if _, sk, err := s.itemKey(av); err == nil && unseen && sk == driver.CounterSK("", "") {
			_, ver, _, err := s.decodeCounter(q.Partition, av)
			if err != nil {
				return driver.QueryResult{}, err
			}
			res.Version, res.Versioned = ver, true
			continue
		}
		evaluated++
		if evaluated > q.Limit {
			// A c#* not in the index yet (written before it was): one
			// record more than asked for.
			res.Next = last
			return res, nil
		}
		if !isRecordItem(av) {
			if _, sk, err := s.itemKey(av); err == nil {
				last = strings.TrimPrefix(sk, driver.MessagePrefix)
			}
			continue // no record, though evaluated
		}
		rec, err := s.decodeRecord(q.Partition, av)
		if err != nil {
			return driver.QueryResult{}, err
		}
		last = rec.Message.ID
		if unseen && !q.Now.IsZero() && !q.Now.Before(rec.Message.ExpiresAt) || feed && rec.Receipt || threaded && !q.Keeps(rec) {
			continue // expired (c#* has no expiry to filter by); a receipt, in the index beside the messages; marks a thread's page drops
		}
		if !q.Now.IsZero() && !rec.Message.Due(q.Now) {
			continue // scheduled, not due: the indexes do not project its time
		}
		res.Records = append(res.Records, rec)
	}
	if out.LastEvaluatedKey != nil {
		_, sk, err := s.itemKey(out.LastEvaluatedKey)
		if err != nil {
			return driver.QueryResult{}, err
		}
		res.Next = strings.TrimPrefix(sk, driver.MessagePrefix)
	}
	return res, nil
}

// queryFilter returns the filter of q's category, unread-only, archive and
// expiry conditions; ok is false when q has none.
func (s *Store) queryFilter(q driver.Query) (f expression.ConditionBuilder, ok bool) {
	var conds []expression.ConditionBuilder
	if q.Category != "" {
		conds = append(conds, expression.Name(attrCategory).Equal(expression.Value(q.Category)))
	}
	if q.Thread != "" {
		conds = append(conds, expression.Name(attrThread).Equal(expression.Value(q.Thread)))
	}
	if q.UnreadOnly {
		// A message (not a receipt), unread (readat absent or NULL).
		conds = append(conds, expression.And(unread(), isMessage()))
	}
	if !q.Now.IsZero() {
		conds = append(conds, expression.NameNoDotSplit(s.o.ttl).GreaterThan(expression.Value(q.Now.Unix())))
	}
	switch q.Archived {
	case driver.NotArchived:
		// Not archived, or a receipt (not a message).
		conds = append(conds, expression.Or(has(attrArchived, false), expression.Not(isMessage())))
	case driver.OnlyArchived:
		conds = append(conds, has(attrArchived, true))
	}
	switch len(conds) {
	case 0:
		return f, false
	case 1:
		return conds[0], true
	}
	return expression.And(conds[0], conds[1], conds[2:]...), true
}

// markedQuery is one Query of partition pk's keys under mark in the
// unread index (mark, then an ID or an activity key), newest first, at or
// below mark+before if before is set, evaluating at most limit items,
// fetching them from the table.
func (s *Store) markedQuery(ctx context.Context, pk, mark, before string, limit int, sel types.Select) (*dynamodb.QueryOutput, error) {
	kc := expression.Key(s.o.pk).Equal(expression.Value(pk)).And(expression.Key(attrUnread).BeginsWith(mark))
	if before != "" {
		kc = expression.Key(s.o.pk).Equal(expression.Value(pk)).And(expression.Key(attrUnread).Between(expression.Value(mark), expression.Value(mark+before)))
	}
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, fmt.Errorf("dynamo: query expression: %w", err)
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(s.o.unread),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
		Select:                    sel,
		Limit:                     aws.Int32(int32(min(limit, 1<<30))),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return nil, opError("query", err)
	}
	return out, nil
}

// snoozeQuery serves a Query with Snoozed: the user partition's snooze
// entries, from the unread index, where each is under snoozeMark and its
// record's ID, newest first, below q.Before, at most q.Limit (one Query,
// fetching the entries from the table). A table without the unread index
// reads them from the table's own keys, all of them (the snoozed view is
// rare), in the same order.
func (s *Store) snoozeQuery(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	pk := q.Partition.PK()
	var items []map[string]types.AttributeValue
	if s.o.unread == "" {
		kc := expression.Key(s.o.pk).Equal(expression.Value(pk)).And(expression.Key(s.o.sk).BeginsWith(driver.LedgerPrefix))
		all, err := s.queryAll(ctx, kc, nil)
		if err != nil {
			return driver.QueryResult{}, opError("query", err)
		}
		for _, av := range all {
			if _, sk, err := s.itemKey(av); err == nil && driver.IsTimedKey(sk) && strings.HasSuffix(sk, "#z") {
				items = append(items, av)
			}
		}
		var recs []driver.Record
		for _, av := range items {
			e, err := s.decodeTimed(q.Partition, av)
			if err != nil {
				return driver.QueryResult{}, err
			}
			if q.Before == "" || e.Message.ID < q.Before {
				recs = append(recs, e)
			}
		}
		slices.SortFunc(recs, func(a, b driver.Record) int { return strings.Compare(b.Message.ID, a.Message.ID) })
		var res driver.QueryResult
		for i, e := range recs {
			if i == q.Limit {
				res.Next = recs[i-1].Message.ID
				break
			}
			res.Records = append(res.Records, e)
		}
		return res, nil
	}
	out, err := s.markedQuery(ctx, pk, snoozeMark, q.Before, q.Limit+1, types.SelectAllAttributes)
	if err != nil {
		return driver.QueryResult{}, err
	}
	var res driver.QueryResult
	for _, av := range out.Items {
		e, err := s.decodeTimed(q.Partition, av)
		if err != nil {
			return driver.QueryResult{}, err
		}
		if q.Before != "" && e.Message.ID >= q.Before {
			continue // BETWEEN keeps its bound
		}
		if len(res.Records) == q.Limit {
			res.Next = res.Records[len(res.Records)-1].Message.ID
			break
		}
		res.Records = append(res.Records, e)
	}
	if res.Next == "" && out.LastEvaluatedKey != nil && len(res.Records) > 0 {
		res.Next = res.Records[len(res.Records)-1].Message.ID
	}
	return res, nil
}

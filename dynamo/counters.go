package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/driver"
)

// hasRead reports whether c's item carries a read tally: always in a user
// partition, and in a shared one only if something (wrongly) changes it.
func hasRead(c driver.Counter) bool { return !c.Partition.IsShared() || c.Read != 0 }

// counterWrite is what a counter update does besides adding its change.
type counterWrite struct {
	// bump adds 1 to the partition's version (kept on c#*).
	bump bool
	// recent changes the recent receipts of a user's c#*.
	recent *recentChange
	// cond is a condition of the update (ANDed with Latest's).
	cond *expression.ConditionBuilder
	// recounted, if set, is recorded as the recount time (c#* only).
	recounted time.Time
}

// counterUpdate returns the transaction item that adds change d to its
// counter, creating the counter (kind, keys and zero tallies) if missing,
// and does what w asks besides.
func (s *Store) counterUpdate(d driver.Counter, w counterWrite) (types.TransactWriteItem, error) {
	bump, recent, cond := w.bump, w.recent, w.cond
	upd := expression.Add(expression.Name("published"), expression.Value(d.Published))
	if recent != nil {
		upd = upd.Add(expression.Name(recentAttr(recent.add)), expression.Value(stringSet(recent.values))).
			Remove(expression.Name(recentAttr(recent.clear)))
	}
	if hasRead(d) {
		upd = upd.Add(expression.Name("read"), expression.Value(d.Read))
	}
	for _, t := range []struct {
		name string
		v    int64
	}{{"archived", d.Archived}, {"archivedread", d.ArchivedRead}, {"hidden", d.Hidden}} {
		if t.v != 0 {
			upd = upd.Add(expression.Name(t.name), expression.Value(t.v))
		}
	}
	if bump {
		upd = upd.Add(expression.Name(attrVersion), expression.Value(1))
	}
	if d.Latest != "" {
		// A thread's Latest only rises: the update is conditional on it
		// (PutMessage writes again without it if the condition fails).
		upd = upd.Set(expression.Name(attrLatest), expression.Value(d.Latest))
		c := expression.Or(expression.Name(attrLatest).AttributeNotExists(), expression.Name(attrLatest).LessThan(expression.Value(d.Latest)))
		if cond != nil {
			c = expression.And(*cond, c)
		}
		cond = &c
	}
	if !w.recounted.IsZero() {
		upd = upd.Set(expression.Name(attrRecounted), expression.Value(w.recounted.Unix()))
	}
	upd = upd.Set(expression.Name("kind"), expression.Value(kindCounter)).
		Set(expression.Name("tenant_key"), expression.Value(d.Partition.Tenant)).
		Set(expression.Name("inbox_key"), expression.Value(d.Partition.Inbox)).
		Set(expression.Name("uid"), expression.Value(d.Partition.User+d.Partition.Group))
	if bump && !d.Partition.IsShared() {
		// A user's c#* is in the unread index, so that an unseen read
		// gets the counter version with the records.
		upd = upd.Set(expression.Name(attrUnread), expression.Value(counterMark))
	}
	b := expression.NewBuilder().WithUpdate(upd)
	if cond != nil {
		b = b.WithCondition(*cond)
	}
	expr, err := b.Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("dynamo: counter update: %w", err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       s.key(d.Partition.PK(), d.SK()),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}}, nil
}

// recentChange is what a Mark changes in a user's recent receipts: the
// values added to slot add, and slot clear emptied.
type recentChange struct {
	add, clear int
	values     []string
}

// recentChanges returns the recent receipts marks create, by partition.
func recentChanges(marks []driver.Mark) map[driver.Partition]*recentChange {
	out := map[driver.Partition]*recentChange{}
	for _, mk := range marks {
		if !mk.RecordsRecent() {
			continue
		}
		p := mk.Key.Partition
		c := out[p]
		if c == nil {
			c = &recentChange{}
			c.add, c.clear = driver.RecentSlots(mk.Now)
			out[p] = c
		}
		c.values = append(c.values, recentValue(driver.Key{Partition: mk.Shared, ID: mk.Key.ID}))
	}
	return out
}

// counterUpdates returns the transaction items adding deltas (one per
// counter, as the Store contract promises), each partition's c#* moving
// its version (and, for a partition in recent, its recent receipts): a
// partition whose total deltas leave out gets a change of zero to its
// total. Two changes to one counter are ErrInvalidInput.
func (s *Store) counterUpdates(deltas []driver.Counter, recent map[driver.Partition]*recentChange) ([]types.TransactWriteItem, error) {
	return s.guardedCounterUpdates(deltas, recent, nil)
}

// guardedCounterUpdates is counterUpdates with guard[p] a condition of
// the update of partition p's c#*.
func (s *Store) guardedCounterUpdates(deltas []driver.Counter, recent map[driver.Partition]*recentChange, guard map[driver.Partition]*expression.ConditionBuilder) ([]types.TransactWriteItem, error) {
	if err := driver.ValidateDeltas(deltas); err != nil {
		return nil, err
	}
	total := map[driver.Partition]bool{} // partitions whose c#* deltas change
	for _, d := range deltas {
		if d.Category == "" && d.Group == "" && d.Thread == "" {
			total[d.Partition] = true
		}
	}
	for _, d := range deltas {
		if !total[d.Partition] {
			total[d.Partition] = true
			deltas = append(deltas, driver.Counter{Partition: d.Partition})
		}
	}
	for p := range recent {
		if !total[p] {
			total[p] = true
			deltas = append(deltas, driver.Counter{Partition: p})
		}
	}
	var out []types.TransactWriteItem
	for _, d := range deltas {
		isTotal := d.Category == "" && d.Group == "" && d.Thread == ""
		var rc *recentChange
		var cond *expression.ConditionBuilder
		if isTotal {
			rc, cond = recent[d.Partition], guard[d.Partition]
		}
		it, err := s.counterUpdate(d, counterWrite{bump: isTotal, recent: rc, cond: cond})
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// Stats reads a partition's stats records, seen watermark, tombstones and
// the ledger entries expiring at or before q.Now with one strongly
// consistent Query of the sort keys from c# (b#, the threads' counters,
// with q.Threads) to e#<now> (more pages only past 1 MB): c#* and
// c#<category>, cs#seen, d#<id>, dq#<deliver at>#<id>#<tag>, dz#<until>#<id>#<tag>,
// then e#<expiry>#<id> up to now.
func (s *Store) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	p, now := q.Partition, q.Now
	from := driver.CounterPrefix
	if q.Threads {
		from = driver.ThreadStatsPrefix
	}
	kc := expression.Key(s.o.pk).Equal(expression.Value(p.PK())).
		And(expression.Key(s.o.sk).Between(expression.Value(from), expression.Value(driver.LedgerBound(now))))
	items, err := s.queryAll(ctx, kc, nil)
	if err != nil {
		return driver.Stats{}, opError("stats", err)
	}
	var st driver.Stats
	for _, av := range items {
		_, sk, err := s.itemKey(av)
		if err != nil {
			return driver.Stats{}, err
		}
		switch {
		case strings.HasPrefix(sk, driver.CounterPrefix), strings.HasPrefix(sk, driver.ThreadStatsPrefix):
			c, ver, recent, err := s.decodeCounter(p, av)
			if err != nil {
				return driver.Stats{}, err
			}
			st.Counters = append(st.Counters, c)
			if c.Category == "" && c.Group == "" && c.Thread == "" {
				st.Version = ver
				if n, ok := av[attrRecounted].(*types.AttributeValueMemberN); ok {
					r, err := strconv.ParseInt(n.Value, 10, 64)
					if err != nil {
						return driver.Stats{}, fmt.Errorf("dynamo: counter %s/%s: recounted %q: %w", p.PK(), sk, n.Value, err)
					}
					st.Recounted = time.Unix(r, 0).UTC()
				}
				if !p.IsShared() {
					st.Recent = recent
				}
			}
		case sk == driver.SeenSK:
			var it seenItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return driver.Stats{}, fmt.Errorf("dynamo: decode seen watermark of %s: %w", p.PK(), err)
			}
			st.Seen = it.Seen
		case strings.HasPrefix(sk, driver.TombstonePrefix):
			t, err := s.decodeTombstone(p, av)
			if err != nil {
				return driver.Stats{}, err
			}
			st.Tombstones = append(st.Tombstones, t)
		case strings.HasPrefix(sk, driver.SnoozePrefix):
			e, err := s.decodeTimed(p, av)
			if err != nil {
				return driver.Stats{}, err
			}
			st.Snoozed = append(st.Snoozed, e)
		case strings.HasPrefix(sk, driver.PendingPrefix):
			e, err := s.decodeTimed(p, av)
			if err != nil {
				return driver.Stats{}, err
			}
			st.Pending = append(st.Pending, e)
		case strings.HasPrefix(sk, driver.LedgerPrefix):
			e, err := s.decodeEntry(p, av)
			if err != nil {
				return driver.Stats{}, err
			}
			st.Expired = append(st.Expired, e)
		}
	}
	return st, nil
}

// decodeCounter returns the counter of a stats item of p, its version
// and its recent receipts.
func (s *Store) decodeCounter(p driver.Partition, av map[string]types.AttributeValue) (driver.Counter, int64, []driver.Key, error) {
	_, sk, err := s.itemKey(av)
	if err != nil {
		return driver.Counter{}, 0, nil, err
	}
	var it counterItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return driver.Counter{}, 0, nil, fmt.Errorf("dynamo: decode counter %s/%s: %w", p.PK(), sk, err)
	}
	c, err := driver.ParseCounterSK(sk)
	if err == nil && it.Latest != "" {
		err = driver.ValidateMessageID(it.Latest)
	}
	if err != nil {
		return driver.Counter{}, 0, nil, fmt.Errorf("dynamo: counter %s/%s: %w", p.PK(), sk, err)
	}
	c.Partition, c.Latest = p, it.Latest
	if err := driver.ValidateCounter(c); err != nil {
		return driver.Counter{}, 0, nil, fmt.Errorf("dynamo: counter %s/%s: %w", p.PK(), sk, err)
	}
	c.Published, c.Read, c.Archived, c.ArchivedRead, c.Hidden = it.Published, it.Read, it.Archived, it.ArchivedRead, it.Hidden
	return c, it.Ver, it.recentKeys(p), nil
}

// queryAll returns every item matching key condition kc, strongly
// consistent, paging to the end; projection limits the attributes when
// set.
func (s *Store) queryAll(ctx context.Context, kc expression.KeyConditionBuilder, projection *expression.ProjectionBuilder) ([]map[string]types.AttributeValue, error) {
	b := expression.NewBuilder().WithKeyCondition(kc)
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

// Repair adopts r.Adopt's records, each with one transaction (an Update
// setting the ledger attribute on condition that the item exists with the
// read state given, and a Put of its entry; a failed condition skips it).
// With r.Reset it then replaces p's counters: it reads the keys of p's
// stats records and writes the new ones and deletes the others in one
// transaction, whose Put of c#* (with the next version) is conditional on
// the version being r.Version, and each write and delete on the counter's
// tallies being r.Before's (else ErrConflict). A partition with more
// than 99 categories takes several transactions, each checking the
// version, the c#* Put last; then a concurrent write can leave some
// categories reset and others not until the next Recount.
func (s *Store) Repair(ctx context.Context, p driver.Partition, r driver.Repair) error {
	// keep holds the sort keys of the counters written (true once listed);
	// the total is always written, listed or not.
	keep := map[string]bool{driver.CounterSK("", ""): false}
	var total *driver.Counter
	var writes []types.TransactWriteItem
	before := make(map[string]driver.Counter, len(r.Before))
	for _, c := range r.Before {
		before[c.SK()] = c
	}
	for _, c := range r.Counters {
		if c.Partition != p {
			return fmt.Errorf("%w: counter of %s reset in %s", driver.ErrInvalidInput, c.Partition.PK(), p.PK())
		}
		if err := driver.ValidateCounter(c); err != nil {
			return err
		}
		sk := c.SK()
		if keep[sk] {
			return fmt.Errorf("%w: two counters %s", driver.ErrInvalidInput, sk)
		}
		keep[sk] = true
		if c.Category == "" && c.Group == "" && c.Thread == "" {
			total = &c
			continue
		}
		av, err := s.counterItem(c, 0)
		if err != nil {
			return err
		}
		put, err := s.conditionalPut(av, s.talliesAsRead(before, sk))
		if err != nil {
			return err
		}
		writes = append(writes, types.TransactWriteItem{Put: put})
	}
	if len(r.AdoptAs) != len(r.Adopt) {
		return fmt.Errorf("%w: %d records to adopt, %d entries", driver.ErrInvalidInput, len(r.Adopt), len(r.AdoptAs))
	}
	adopted := make([]driver.Record, len(r.Adopt))
	for i, rec := range r.Adopt {
		if rec.Partition != p {
			return fmt.Errorf("%w: record of %s adopted in %s", driver.ErrInvalidInput, rec.Partition.PK(), p.PK())
		}
		adopted[i] = rec
		adopted[i].Entry = r.AdoptAs[i]
		if _, err := s.ledgerEntry(adopted[i]); err != nil {
			return err
		}
	}
	for i, rec := range r.Adopt {
		if err := s.adopt(ctx, rec, adopted[i]); err != nil {
			return err
		}
	}
	if !r.Reset && !r.Stamp {
		return nil
	}
	var versionCond expression.ConditionBuilder
	if r.Version == 0 {
		versionCond = expression.Name(attrVersion).AttributeNotExists()
	} else {
		versionCond = expression.Name(attrVersion).Equal(expression.Value(r.Version))
	}
	conflict := func(map[string]types.AttributeValue) error {
		return fmt.Errorf("%w: counters of %s changed since version %d", driver.ErrConflict, p.PK(), r.Version)
	}
	if !r.Reset {
		return s.stamp(ctx, p, r.Recounted, versionCond, conflict)
	}
	if total == nil {
		total = &driver.Counter{Partition: p}
	}
	proj := expression.NamesList(expression.NameNoDotSplit(s.o.pk), expression.NameNoDotSplit(s.o.sk))
	var existing []map[string]types.AttributeValue
	for _, prefix := range []string{driver.ThreadStatsPrefix, driver.CounterPrefix} {
		kc := expression.Key(s.o.pk).Equal(expression.Value(p.PK())).And(expression.Key(s.o.sk).BeginsWith(prefix))
		items, err := s.queryAll(ctx, kc, &proj)
		if err != nil {
			return opError("repair", err)
		}
		existing = append(existing, items...)
	}
	for _, av := range existing {
		pk, sk, err := s.itemKey(av)
		if err != nil {
			return err
		}
		if _, kept := keep[sk]; !kept {
			del, err := s.conditionalDelete(s.key(pk, sk), s.talliesAsRead(before, sk))
			if err != nil {
				return err
			}
			writes = append(writes, types.TransactWriteItem{Delete: del})
		}
	}
	totalItem, err := s.counterItem(*total, r.Version+1)
	if err != nil {
		return err
	}
	if !p.IsShared() {
		totalItem[attrUnread] = &types.AttributeValueMemberS{Value: counterMark}
	}
	if !r.Recounted.IsZero() {
		totalItem[attrRecounted] = &types.AttributeValueMemberN{Value: strconv.FormatInt(r.Recounted.Unix(), 10)}
	}
	if len(r.Recent) > 0 {
		// The reset keeps the recent receipts (read with r.Version), in
		// the slot of its time.
		add, _ := driver.RecentSlots(r.Now)
		values := make(stringSet, len(r.Recent))
		for i, k := range r.Recent {
			values[i] = recentValue(k)
		}
		totalItem[recentAttr(add)] = &types.AttributeValueMemberSS{Value: values}
	}
	putTotal, err := s.conditionalPut(totalItem, versionCond.And(s.talliesAsRead(before, driver.CounterSK("", ""))))
	if err != nil {
		return err
	}
	check, err := s.versionCheck(p, versionCond)
	if err != nil {
		return err
	}
	for {
		n := min(len(writes), maxTransactItems-1)
		items := append([]types.TransactWriteItem(nil), writes[:n]...)
		writes = writes[n:]
		last := len(writes) == 0
		if last {
			items = append([]types.TransactWriteItem{{Put: putTotal}}, items...)
		} else {
			items = append([]types.TransactWriteItem{{ConditionCheck: check}}, items...)
		}
		meanings := make([]onFail, len(items)) // any failed condition: a write came between
		for i := range meanings {
			meanings[i] = conflict
		}
		if err := s.transact(ctx, "repair", items, meanings); err != nil {
			return err
		}
		if last {
			return nil
		}
	}
}

// talliesAsRead returns the condition that the counter item at sort key
// sk holds the tallies of before[sk] (an absent attribute reading as
// zero), or, if before has none, that there is no item: a reset's
// condition on each counter it writes or deletes, so that it fails, as
// conflicting, if another program (which moves no version) changed one
// since it was read.
func (s *Store) talliesAsRead(before map[string]driver.Counter, sk string) expression.ConditionBuilder {
	c, ok := before[sk]
	if !ok {
		return s.notExists()
	}
	cond := expression.NameNoDotSplit(s.o.pk).AttributeExists()
	for _, t := range []struct {
		name string
		v    int64
	}{{"published", c.Published}, {"read", c.Read}, {"archived", c.Archived}, {"archivedread", c.ArchivedRead}, {"hidden", c.Hidden}} {
		eq := expression.Name(t.name).Equal(expression.Value(t.v))
		if t.v == 0 {
			eq = expression.Or(expression.Name(t.name).AttributeNotExists(), eq)
		}
		cond = cond.And(eq)
	}
	return cond
}

// stamp records recounted as p's recount time, and adds 1 to its
// version, with one conditional update of c#* (failing as conflict).
func (s *Store) stamp(ctx context.Context, p driver.Partition, recounted time.Time, cond expression.ConditionBuilder, conflict onFail) error {
	it, err := s.counterUpdate(driver.Counter{Partition: p}, counterWrite{bump: true, cond: &cond, recounted: recounted})
	if err != nil {
		return err
	}
	return s.transact(ctx, "repair", []types.TransactWriteItem{it}, []onFail{conflict})
}

// adopt gives rec, if it still exists with the marks and entry given, the
// entry of as (rec with its new Entry).
func (s *Store) adopt(ctx context.Context, rec, as driver.Record) error {
	ledger := expression.Name(driver.LedgerAttribute)
	own := ledger.AttributeNotExists()
	if rec.Ledgered() {
		own = ledger.Equal(expression.Value(rec.Entry))
	}
	cond := expression.And(expression.NameNoDotSplit(s.o.pk).AttributeExists(), own)
	if !rec.Partition.IsShared() { // a broadcast has no marks, whatever attributes it carries
		cond = expression.And(cond, marksAre(rec.State(), rec.Ledgered(), rec.Receipt))
	}
	upd := expression.Set(ledger, expression.Value(as.Entry))
	if !rec.Ledgered() {
		upd = upd.Remove(expression.Name(attrSnoozed)) // only a mark snoozes
	}
	if c := driver.AdoptedCounted(rec); c != 0 {
		upd = upd.Set(expression.Name(driver.CountedAttribute), expression.Value(uint8(c)))
	}
	switch {
	case rec.Partition.IsShared():
	case rec.Receipt:
		// A receipt another program wrote joins the unread index.
		upd = upd.Set(expression.Name(attrUnread), expression.Value(rec.Message.ID+receiptMark))
	default:
		// A message another program wrote joins the unread index.
		upd = setUnread(upd, rec.Partition, rec.Message.ID, rec.State())
	}
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return fmt.Errorf("dynamo: adopt expression: %w", err)
	}
	entry, err := s.ledgerEntry(as)
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                 aws.String(s.table),
			Key:                       s.messageKey(rec.Key()),
			UpdateExpression:          expr.Update(),
			ConditionExpression:       expr.Condition(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
		}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: entry}},
	}
	err = s.transact(ctx, "adopt", items, []onFail{func(map[string]types.AttributeValue) error { return errRecorded }})
	if errors.Is(err, errRecorded) {
		return nil // gone or changed: skipped
	}
	return err
}

// versionCheck returns a ConditionCheck of cond on p's c#* item.
func (s *Store) versionCheck(p driver.Partition, cond expression.ConditionBuilder) (*types.ConditionCheck, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("dynamo: version check: %w", err)
	}
	return &types.ConditionCheck{
		TableName:                 aws.String(s.table),
		Key:                       s.key(p.PK(), driver.CounterSK("", "")),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}, nil
}

// counterItem returns the whole stats item of c, with version ver if set.
func (s *Store) counterItem(c driver.Counter, ver int64) (map[string]types.AttributeValue, error) {
	av, err := s.item(c.Partition.PK(), c.SK(), counterItem{
		Kind:         kindCounter,
		Published:    c.Published,
		Read:         c.Read,
		Archived:     c.Archived,
		ArchivedRead: c.ArchivedRead,
		Hidden:       c.Hidden,
		Ver:          ver,
		Latest:       c.Latest,
		TenantKey:    c.Partition.Tenant,
		InboxKey:     c.Partition.Inbox,
		UID:          c.Partition.User + c.Partition.Group,
	}, time.Time{})
	if err != nil {
		return nil, err
	}
	if !hasRead(c) {
		delete(av, "read")
	}
	return av, nil
}

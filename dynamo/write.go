package dynamo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/driver"
)

// maxTransactItems is DynamoDB's limit on the items of one transaction.
const maxTransactItems = driver.MaxTransactItems

// transact runs items as one TransactWriteItems with a fresh
// ClientRequestToken, retrying cancellations by throttling or conflicts
// through the client's retryer; meanings[i] says what a failed condition
// on items[i] means.
func (s *Store) transact(ctx context.Context, op string, items []types.TransactWriteItem, meanings []onFail) error {
	if len(items) > maxTransactItems {
		return fmt.Errorf("%w: %s needs %d transaction items, at most %d", driver.ErrInvalidInput, op, len(items), maxTransactItems)
	}
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems:          items,
		ClientRequestToken:     aws.String(requestToken()),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}, retryCancellations)
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

// PutMessage writes rec, its ledger entry and its counter changes in one
// transaction (after driver.ValidateRecord, as every Store): a Put of the
// item conditional on no item at rec's key, a Put of the entry
// conditional on none at its key, for a scheduled record a Put of its
// pending entry and one of its timer, for a shared partition's record the
// updates of its time buckets, for each of receipts a Put of the receipt
// and one of its ledger entry, each conditional on no item at its key,
// and an Update per counter (ADD of the tallies, and the version; a user
// partition's c#* also records the receipts of recent broadcasts). The
// deltas' Above of a user's partition apply on condition that its Fence
// is below rec's ID (else the transaction is made again without them); a
// shared partition's total is marked Bucketed on condition that it is new
// or was already (else without). A user's copy of a message of a category
// is conditional on her c#*'s preferences, a string, not holding the
// category's opt-out (driver.OptOutToken; else ErrOptedOut), and a
// direct message of a thread that a read position could cover
// (driver.Coverable) on its thread's position not covering it (its c#*
// map's bound not above rec's ID, see coveredAttr; else ErrStateChanged).
// The changes of covered counters (driver.Counter.Covered) apply as
// guardedCounterUpdates says. A record or
// receipt already there is ErrExists; a receipt as rec, receipts
// driver.ValidatePutReceipts refuses, or a transaction of more than
// driver.MaxTransactItems items (driver.PutItems; made again without the
// Above of a partition whose Fence is not below rec's ID, it may hold
// more) is ErrInvalidInput.
func (s *Store) PutMessage(ctx context.Context, rec driver.Record, deltas []driver.Counter, receipts ...driver.Mark) error {
	if rec.Receipt {
		return fmt.Errorf("%w: PutMessage of a receipt", driver.ErrInvalidInput)
	}
	if err := driver.ValidateRecord(rec); err != nil {
		return err
	}
	if err := driver.ValidatePutReceipts(rec, receipts); err != nil {
		return err
	}
	if err := driver.ValidateAggregatedPut(rec, deltas); err != nil {
		return err
	}
	if err := driver.ValidatePutItems(rec, deltas, receipts); err != nil {
		return err
	}
	rec.Timed = ""
	var timed []types.TransactWriteItem
	if at := rec.Message.DeliverAt; !at.IsZero() {
		e := rec
		e.Message = driver.Message{ID: rec.Message.ID, Category: rec.Message.Category, Thread: rec.Message.Thread, ExpiresAt: rec.Message.ExpiresAt, DeliverAt: at}
		rec.Timed = driver.TimedKeyOf(e)
		entry, timer, err := s.timedItemOf(e)
		if err != nil {
			return err
		}
		timed = append(timed, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: entry}},
			types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: timer}})
	}
	entry, err := s.ledgerEntry(rec)
	if err != nil {
		return err
	}
	item, err := s.recordItem(rec)
	if err != nil {
		return err
	}
	put, err := s.conditionalPut(item, s.notExists())
	if err != nil {
		return err
	}
	putEntry, err := s.conditionalPut(entry, s.notExists())
	if err != nil {
		return err
	}
	if rec.Partition.IsShared() {
		buckets, err := s.bucketUpdates(rec.Partition, rec, 1)
		if err != nil {
			return err
		}
		timed = append(timed, buckets...)
	}
	exists := func(map[string]types.AttributeValue) error {
		return fmt.Errorf("%w: message %s in %s", driver.ErrExists, rec.Message.ID, rec.Partition.PK())
	}
	var made []types.TransactWriteItem
	var madeMeanings []onFail
	// An aggregated message's marks: the fence of its partition's
	// watermark, and the deletion of the message it takes in (see
	// driver.Store.PutMessage).
	var fence *driver.Mark
	if rec.Message.Count > 0 {
		for _, mk := range receipts {
			if mk.Fence {
				fence = &mk
				continue
			}
			if err := s.markItems(mk, func(it types.TransactWriteItem, m onFail) {
				made, madeMeanings = append(made, it), append(madeMeanings, m)
			}); err != nil {
				return err
			}
		}
		receipts = nil
	}
	for _, mk := range receipts {
		// A Put on condition that no item is there: not Mark's, which
		// also takes a receipt without marks (the seeds' unread one) for
		// a receipt with From zero, and would adopt it.
		item, err := s.receiptItem(mk)
		if err != nil {
			return err
		}
		putReceipt, err := s.conditionalPut(item, s.notExists())
		if err != nil {
			return err
		}
		entry, err := s.ledgerEntry(mk.EntryRecord())
		if err != nil {
			return err
		}
		putEntry, err := s.conditionalPut(entry, s.notExists())
		if err != nil {
			return err
		}
		there := func(map[string]types.AttributeValue) error {
			return fmt.Errorf("%w: receipt %s in %s", driver.ErrExists, mk.Key.ID, mk.Key.Partition.PK())
		}
		made = append(made, types.TransactWriteItem{Put: putReceipt}, types.TransactWriteItem{Put: putEntry})
		madeMeanings = append(madeMeanings, there, there)
	}
	p := rec.Partition
	totals := map[driver.Partition]counterWrite{}
	if p.IsShared() {
		c := expression.Or(expression.NameNoDotSplit(s.o.pk).AttributeNotExists(), expression.Name(attrBucketed).AttributeExists())
		totals[p] = counterWrite{cond: &c, bucketed: true}
	}
	for _, d := range deltas {
		if d.Above != 0 && !d.Partition.IsShared() {
			c := seenBelow(rec.Message.ID)
			totals[d.Partition] = counterWrite{cond: &c}
		}
	}
	if fence != nil {
		// The Above as the fence's watermark has it, on condition that
		// it stands; the thread's next message follows this one.
		c := seenIs(fence.Seen)
		follows := rec.Follows
		totals[p] = counterWrite{cond: &c, returnOld: true, follow: &follow{thread: rec.Message.Thread, latest: follows}}
	} else if rec.Message.Count > 0 {
		w := totals[p] // its Above's condition, if any, stays
		w.follow = &follow{thread: rec.Message.Thread, latest: rec.Follows}
		totals[p] = w
	}
	optOut := ""
	var optedIn expression.ConditionBuilder
	if !p.IsShared() && rec.Message.Category != "" {
		// The copy is written only if its user has not opted out of its
		// category: a condition on her c#*, which the write updates
		// anyway, so it costs nothing more.
		optOut = driver.OptOutToken(rec.Message.Category)
		optedIn = notOptedOut(optOut, rec.OptOutDefault)
		w := totals[p]
		c := optedIn
		if w.cond != nil {
			c = expression.And(c, *w.cond)
		}
		w.cond, w.returnOld = &c, true
		totals[p] = w
	}
	recent := recentChanges(receipts)
	mutes := s.hints.take(deltas) // as remembered, then as the last failure showed them
	// The positions that cover the thread's records likewise; but rec is
	// always taken as not covered, on condition that it is not: a read
	// position would cover it, and it is refused (ErrStateChanged).
	bounds := s.covers.take(deltas)
	coverable := driver.Coverable(rec)
	// The forms of the receipts' hints' changes likewise (see hintForms).
	skips, flips := s.forms.skips(deltas), 0
	for {
		attempt := totals
		if coverable {
			if t := (driver.GroupThread{Thread: rec.Message.Thread}); bounds[p][t] > rec.Message.ID {
				// Known to cover rec, which the write takes as not
				// covered: forget it. A known bound below rec stays, for
				// the changes of the message an aggregated rec takes in,
				// which it may cover.
				delete(bounds[p], t)
			}
			attempt = maps.Clone(totals)
			w := attempt[p]
			c := expression.Not(expression.Name(coveredPath(rec.Message.Thread, posBound)).GreaterThan(expression.Value(rec.Message.ID)))
			if w.cond != nil {
				c = expression.And(*w.cond, c)
			}
			w.cond, w.returnOld = &c, true
			attempt[p] = w
		}
		_, tookCov := coveredWrites(deltas, nil, bounds)
		counters, err := s.guardedCounterUpdates(deltas, recent, attempt, mutes, bounds, skips)
		if err != nil {
			return err
		}
		items := append([]types.TransactWriteItem{{Put: put}, {Put: putEntry}}, timed...)
		meanings := []onFail{exists, exists}
		for range timed {
			meanings = append(meanings, nil)
		}
		items = append(items, made...)
		meanings = append(meanings, madeMeanings...)
		items = append(items, counters...)
		for _, it := range counters {
			var m onFail
			hint, isHint := s.hintMeaning(it)
			switch {
			case it.Update.ConditionExpression == nil:
			case isHint:
				m = hint
			case isTotal(it.Update.Key, s):
				pk := it.Update.Key[s.o.pk].(*types.AttributeValueMemberS).Value
				total, _ := driver.ParsePartitionKey(pk)
				m = func(old map[string]types.AttributeValue) error {
					if err := mutedFailure(total, old, mutedTook(deltas, mutes)); err != nil {
						return err
					}
					if optOut != "" && total == p && optsOut(old, optOut, rec.OptOutDefault) {
						return fmt.Errorf("%w: %s opted out of category %q", driver.ErrOptedOut, p.PK(), rec.Message.Category)
					}
					if w := fenceOf(old); fence != nil && total == p && w != fence.Seen {
						return &driver.SeenError{Partition: p, Seen: w}
					}
					if b := boundIn(old, rec.Message.Thread); coverable && total == p && rec.Message.ID < b {
						return &driver.CoveredError{Partition: p, Thread: rec.Message.Thread, ID: rec.Message.ID}
					}
					if err := coveredFailure(total, "", old, tookCov); err != nil {
						return err
					}
					return &totalRefused{p: total}
				}
			case s.groupCover(it, tookCov, driver.ErrConflict) != nil:
				// A receipt's covered changes, on her counter of the group.
				m = s.groupCover(it, tookCov, driver.ErrConflict)
			default:
				m = func(map[string]types.AttributeValue) error { return errLatestAhead } // a thread's Latest rises
			}
			meanings = append(meanings, m)
		}
		err = s.transact(ctx, "put message", items, meanings)
		var refused *totalRefused
		var muted *mutesChanged
		var covered *coversChanged
		var hint *hintFailed
		switch {
		case err == nil:
			s.forms.wrote(deltas, skips)
			return nil
		case errors.As(err, &hint):
			if err := s.flipHints(hint, skips, &flips, driver.ErrConflict); err != nil {
				return err
			}
		case errors.As(err, &muted):
			mutes[muted.p] = muted.mutes
			s.hints.learn(muted.p, muted.mutes)
		case errors.As(err, &covered):
			covered.merge(bounds, s.covers)
		case errors.Is(err, errLatestAhead) && rec.Message.Count > 0:
			// An aggregated message's thread has another Latest than it
			// follows: another message of its key came first.
			return fmt.Errorf("%w: thread %q of %s: another message came first", driver.ErrStateChanged, rec.Message.Thread, p.PK())
		case errors.Is(err, errLatestAhead):
			// A thread's counter already has a later message (this
			// one's publish was slower): count it without moving Latest.
			// A receipts' hint (a user's counter of her receipts of a
			// shared thread) is no thread's Latest: its change stays,
			// under its own condition (see hintUpdate).
			deltas = slices.Clone(deltas)
			for i := range deltas {
				if deltas[i].Group == "" {
					deltas[i].Latest = ""
				}
			}
		case errors.As(err, &refused) && refused.p.IsShared():
			totals[refused.p] = counterWrite{} // a partition of an earlier version: not Bucketed until recounted
		case errors.As(err, &refused):
			// The watermark is at or above rec's ID (it only rises): rec,
			// or its receipt, counts in no Above of that partition.
			deltas = withoutAboveOf(deltas, refused.p)
			w := totals[refused.p]
			switch {
			case refused.p == p && optOut != "":
				w.cond = &optedIn // the opt-out's condition stays, alone
			case refused.p == p && w.follow != nil:
				w.cond = nil // an aggregated message's follow stays, alone
			default:
				delete(totals, refused.p)
				continue
			}
			totals[refused.p] = w
		default:
			return err
		}
	}
}

// markItems adds, with add, the items of mark mk of a record: the
// record's write or delete (on mk's conditions, see Mark), its ledger
// entry's, and those of the timed entries mk writes or deletes (with the
// timer of each one written at a new key).
func (s *Store) markItems(mk driver.Mark, add func(types.TransactWriteItem, onFail)) error {
	record, err := s.markRecord(mk)
	if err != nil {
		return err
	}
	add(record, s.markFailed(mk))
	if mk.Delete || mk.Receipt && mk.To.IsZero() {
		add(types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: s.key(mk.Key.Partition.PK(), mk.Entry)}}, nil)
	} else {
		entry, err := s.ledgerEntry(mk.EntryRecord())
		if err != nil {
			return err
		}
		add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: entry}}, nil)
	}
	puts, dels := mk.TimedWrites()
	for _, del := range dels {
		add(types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: s.key(mk.Key.Partition.PK(), del)}}, nil)
	}
	for _, e := range puts {
		entry, timer, err := s.timedItemOf(e)
		if err != nil {
			return err
		}
		add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: entry}}, nil)
		if mk.Timed != driver.TimedKeyOf(e) {
			// A new entry: its timer (one written again keeps its own).
			add(types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: timer}}, nil)
		}
	}
	return nil
}

// totalRefused reports that the condition of partition p's total (c#*)
// failed in a PutMessage: p's watermark is not below the record's ID, or
// a shared p is not new and not Bucketed. It matches errTotalRefused.
type totalRefused struct{ p driver.Partition }

// Error names the partition.
func (e *totalRefused) Error() string { return errTotalRefused.Error() + ": " + e.p.PK() }

// Is reports whether target is errTotalRefused.
func (e *totalRefused) Is(target error) bool { return target == errTotalRefused }

// errLatestAhead reports that a thread counter's Latest is at or above the
// one a PutMessage raises it to.
var errLatestAhead = errors.New("dynamo: the thread's latest message is later")

// errTotalRefused reports that the condition of a partition's total
// (c#*) failed: its watermark is not below a record's ID, or a shared
// partition is not new and not Bucketed.
var errTotalRefused = errors.New("dynamo: the condition of the partition's total failed")

// isTotal reports whether key is the key of a partition's total (c#*).
func isTotal(key map[string]types.AttributeValue, s *Store) bool {
	sk, ok := key[s.o.sk].(*types.AttributeValueMemberS)
	return ok && sk.Value == driver.CounterSK("", "")
}

// Mark applies marks, their ledger entries and deltas in one transaction:
//
//   - A direct mark is an Update setting (or removing) readat and
//     archivedat as the mark's To says, the ledger attribute, counted (To's
//     counted marks) and timed (the timed entry it writes, see
//     driver.Mark.TimedWrites), on condition that the item is a message (it
//     has headers, or seed 000's flat audiences), expires after the mark's
//     Now, has the mark's expiry and category (and due time, if the mark
//     names one), has the mark's ledger entry or none, has exactly the
//     marks of From (readat NULL counts as none), the timed entry
//     Mark.Timed (or none) and, unless the mark's Counted is zero, that
//     counted; with Delete it is a Delete on the same condition. It asks
//     for the old item on failure, which tells ErrStateChanged (the message
//     stands, with other marks) from ErrNotFound. The fold of a shared
//     partition's scheduled broadcast is an Update of its ledger and timed
//     attributes on the same condition, without marks.
//   - A receipt mark is a Put of the receipt (on condition that no item is
//     at its key if From is zero, else that the receipt there has From's
//     marks, the mark's entry or none, its timed entry and the mark's
//     Counted unless it is zero), or a Delete of it on that condition if
//     To is zero, with a ConditionCheck that the broadcast exists, expires
//     after Now and has the mark's expiry and category (else ErrNotFound,
//     when the receipt's own condition held: the transaction reports its
//     first failed item).
//   - Each of those puts its ledger entry, or deletes it with the record,
//     and puts (with its timer) or deletes the timed entries
//     driver.Mark.TimedWrites names; a receipt mark of a thread's message
//     puts or deletes its reader item (kind RD, in the broadcast's
//     partition) as driver.Mark.ReaderChange says, unconditionally.
//   - A watermark mark is a Put of the user's cs#seen item (kind SN) on
//     condition that it is missing or below the mark's Seen (else
//     ErrStateChanged), and sets the Fence on c#* (with Versioned, on
//     condition that c#*'s version is Version, and writes the maps of
//     the muted threads of its driver.MutedReset whole, on condition
//     that each is muted); with Fence, a condition on c#* that its Fence
//     is Seen (else a *driver.SeenError).
//   - A preferences mark, alone, is an Update of the user's c#* that
//     replaces its muted attribute (driver.Preferences.Encode: "" for her
//     own that set nothing; removed when she has none of her own) on
//     condition that it holds From's (and, with Versioned, that the
//     version is Version; else ErrStateChanged), writes the maps of its
//     driver.MutedReset whole, removes those of the threads no longer
//     muted, and moves its version, with a Put of the user's preferences
//     item (kind UP, see driver.PreferencesSK), for the stream.
//   - A cover mark (driver.Mark.Cover) is an Update of the user's c#*
//     that moves the thread's position on its map (cv#<thread>, see
//     coveredAttr: written whole for a first position, its fields for a
//     move, with the call's changes of its counters; removed when the
//     position is dropped, on condition that its tallies are zero) on
//     condition that the position is From and the version Version (else
//     ErrStateChanged), and moves the version; with a Put of the user's
//     position item (kind RP, driver.PositionSK), or its Delete when the
//     position is dropped, for the stream. A cover mark of a thread of a
//     group's messages (driver.CoverChange.Group) moves its map likewise
//     on her counter of the group (cv#<thread> on c#*#<group>), on
//     condition there that the position is From, with the c#* update
//     (its version's condition and move) and a Put of her position item
//     in the group's partition (driver.ReaderPositionSK) instead.
//
// Each counter gets one Update. More than driver.MaxMarkBatch marks of
// records, a mark in a shared partition but a fold, marks that contradict
// themselves, a receipt of a broadcast the call folds, a transaction of
// more than driver.MaxTransactItems items (driver.MarkItems), or Above
// deltas of a partition without a watermark mark, is ErrInvalidInput. Two marks of one key are ErrStateChanged (the second
// would find the first's marks), and nothing is written. A direct mark
// that leaves its message unread below its thread's read position (an
// unarchive), or that changes the marks of one the position covers
// without its read (driver.Mark.UnreadOverCover: an archive that read
// the message before the position moved over it) or made by a writer
// that read it uncovered (driver.Mark.MadeUncovered: a MarkRead that
// read it before the position moved over it), is a
// *driver.CoveredError: the c#* update's condition that the position
// does not cover it (see coveredAttr) failed; so is a receipt mark of a
// group's message that changes its marks, writes no read and finds her
// receipt missing or leaving it unread (driver.Mark.UnreadOverCover),
// when her position in the group's thread covers it: the condition of
// the update of her counter of the group (c#*#<group>), which the
// error names.
func (s *Store) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	var (
		items    []types.TransactWriteItem
		meanings []onFail
		marked   = make(map[driver.Key]bool, len(marks))
		checked  = make(map[driver.Key]bool, len(marks))
		totals   = map[driver.Partition]counterWrite{}
		records  int
	)
	add := func(it types.TransactWriteItem, meaning onFail) {
		items = append(items, it)
		meanings = append(meanings, meaning)
	}
	if err := driver.ValidateMarks(marks, deltas); err != nil {
		return err
	}
	if len(marks) == 1 && marks[0].Preferences != nil {
		return s.setPreferences(ctx, marks[0])
	}
	for _, mk := range marks {
		if mk.Key.ID != "" {
			records++
		}
	}
	if records > driver.MaxMarkBatch {
		return fmt.Errorf("%w: %d marks, at most %d", driver.ErrInvalidInput, records, driver.MaxMarkBatch)
	}
	// The conditions of the partitions' totals: fences, versions.
	fences := map[driver.Partition]string{}
	for _, mk := range marks {
		if mk.Key.ID != "" {
			continue
		}
		p := mk.Key.Partition
		w := totals[p]
		var c expression.ConditionBuilder
		if mk.Cover != nil {
			// The move of a read position, on condition that the
			// version is the mark's (and the position its From: see
			// coverWrite).
			c = versionIs(mk.Version)
			if w.cond != nil {
				c = expression.And(*w.cond, c)
			}
			moves := maps.Clone(w.moves)
			if moves == nil {
				moves = map[driver.GroupThread]driver.CoverChange{}
			}
			moves[driver.GroupThread{Group: mk.Cover.Group, Thread: mk.Cover.Thread}] = *mk.Cover
			w.cond, w.returnOld, w.moves = &c, true, moves
			totals[p] = w
			continue
		}
		switch {
		case mk.Fence:
			c, fences[p] = seenIs(mk.Seen), mk.Seen
		case mk.Versioned:
			w.seen, c = mk.Seen, versionIs(mk.Version)
		default:
			w.seen = mk.Seen
			totals[p] = w
			continue
		}
		if r := mk.Muted; r != nil {
			// The muted threads' maps written whole (see mutedAttr), on
			// condition that each thread is muted.
			w.mutedSet = mutedMaps(r)
			for _, t := range r.Threads {
				c = expression.And(c, mutedCond(t, true))
			}
		}
		if w.cond != nil {
			c = expression.And(*w.cond, c)
		}
		w.cond, w.returnOld = &c, true
		totals[p] = w
	}
	for _, d := range deltas {
		if _, ok := totals[d.Partition]; d.Above != 0 && !ok {
			return fmt.Errorf("%w: an above change of %s without a fence of its watermark", driver.ErrInvalidInput, d.Partition.PK())
		}
	}
	// A mark that leaves its record unread below its thread's read
	// position, or changes the marks of one the position covers without
	// its read (driver.Mark.UnreadOverCover) or made reading it uncovered
	// (driver.Mark.MadeUncovered), is refused: on condition that the
	// position does not cover it (see coveredAttr); a receipt mark of a
	// group's message (driver.Mark.UnreadOverCover), on condition that
	// her position in the group's thread does not, on her counter of the
	// group.
	// It covers none of a thread's if it covers not the least of them.
	refused := map[driver.Partition][]driver.Key{}
	least := map[driver.Partition]map[driver.GroupThread]string{}
	threads := map[driver.Key]driver.GroupThread{}
	for _, mk := range marks {
		t := driver.GroupThread{Thread: mk.Thread}
		if mk.Receipt {
			t.Group = mk.Shared.Group
		}
		threads[mk.Key] = t
	}
	for _, mk := range marks {
		if !leavesCoverable(mk) && !mk.UnreadOverCover() && !mk.MadeUncovered() {
			continue
		}
		p, t := mk.Key.Partition, threads[mk.Key]
		refused[p] = append(refused[p], driver.Key{Partition: p, ID: mk.Key.ID})
		if least[p] == nil {
			least[p] = map[driver.GroupThread]string{}
		}
		if l, ok := least[p][t]; !ok || mk.Key.ID < l {
			least[p][t] = mk.Key.ID
		}
	}
	for p, ts := range least {
		w := totals[p]
		for _, t := range slices.SortedFunc(maps.Keys(ts), compareThreads) {
			c := expression.Not(expression.Name(coveredPath(t.Thread, posBound)).GreaterThan(expression.Value(ts[t])))
			if t.Group != "" {
				// On her counter of the group.
				if g, ok := w.groupConds[t.Group]; ok {
					c = expression.And(g, c)
				}
				conds := maps.Clone(w.groupConds)
				if conds == nil {
					conds = map[string]expression.ConditionBuilder{}
				}
				conds[t.Group] = c
				w.groupConds = conds
				continue
			}
			if w.cond != nil {
				c = expression.And(*w.cond, c)
			}
			w.cond, w.returnOld = &c, true
		}
		totals[p] = w
	}
	for _, mk := range marks {
		if mk.Cover != nil {
			// Two cover marks of one thread are ErrInvalidInput (see
			// driver.ValidateMarks).
			it, err := s.positionWrite(mk.Key.Partition, *mk.Cover)
			if err != nil {
				return err
			}
			add(it, nil)
			continue
		}
		if marked[mk.Key] {
			return fmt.Errorf("%w: %s in %s marked twice", driver.ErrStateChanged, mk.Key.ID, mk.Key.Partition.PK())
		}
		marked[mk.Key] = true
		if mk.Key.ID == "" {
			if mk.Fence {
				continue
			}
			put, err := s.seenPut(mk)
			if err != nil {
				return err
			}
			add(types.TransactWriteItem{Put: put}, func(map[string]types.AttributeValue) error {
				return fmt.Errorf("%w: seen watermark of %s is not below %q", driver.ErrStateChanged, mk.Key.Partition.PK(), mk.Seen)
			})
			continue
		}
		if err := s.markItems(mk, add); err != nil {
			return err
		}
		if r, ok := mk.ReaderChange(); ok {
			w, err := s.readerWrite(r)
			if err != nil {
				return err
			}
			add(w, nil)
		}
		if !mk.Receipt {
			continue
		}
		shared := driver.Key{Partition: mk.Shared, ID: mk.Key.ID}
		if checked[shared] {
			continue // one check per broadcast: an item may appear once
		}
		checked[shared] = true
		check, err := s.broadcastCheck(shared, mk)
		if err != nil {
			return err
		}
		add(types.TransactWriteItem{ConditionCheck: check}, func(map[string]types.AttributeValue) error {
			return fmt.Errorf("%w: broadcast %s in %s", driver.ErrNotFound, shared.ID, shared.Partition.PK())
		})
	}
	base, baseMeanings := items, meanings
	mutes := s.hints.take(deltas) // as remembered, then as the last failure showed them
	bounds := s.covers.take(deltas)
	// The forms of the receipts' hints' changes likewise (see hintForms).
	skips, flips := s.forms.skips(deltas), 0
	for {
		counters, err := s.guardedCounterUpdates(deltas, recentChanges(marks), totals, mutes, bounds, skips)
		if err != nil {
			return err
		}
		items, meanings = append(slices.Clone(base), counters...), slices.Clone(baseMeanings)
		took := mutedTook(deltas, mutes)
		_, tookCov := coveredWrites(deltas, movesOf(totals), bounds)
		for _, it := range counters {
			m, isHint := s.hintMeaning(it)
			p, group, covers := s.coverItem(it)
			switch {
			case isHint || it.Update.ConditionExpression == nil || !covers:
			case group != "":
				// Her counter of a group: her positions in its threads.
				m = func(old map[string]types.AttributeValue) error {
					for _, k := range refused[p] {
						if t := threads[k]; t.Group == group && k.ID < boundIn(old, t.Thread) {
							return &driver.CoveredError{Partition: p, Thread: t.Thread, Group: group, ID: k.ID}
						}
					}
					if err := coveredFailure(p, group, old, tookCov); err != nil {
						return err
					}
					return fmt.Errorf("%w: read positions of %s in threads of group %q moved", driver.ErrStateChanged, p.PK(), group)
				}
			default:
				pk := p.PK()
				m = func(old map[string]types.AttributeValue) error {
					if err := mutedFailure(p, old, took); err != nil {
						return err
					}
					for _, k := range refused[p] {
						if t := threads[k]; t.Group == "" && k.ID < boundIn(old, t.Thread) {
							return &driver.CoveredError{Partition: p, Thread: t.Thread, ID: k.ID}
						}
					}
					if err := coveredFailure(p, "", old, tookCov); err != nil {
						return err
					}
					if w, fenced := fences[p]; fenced && fenceOf(old) != w {
						return &driver.SeenError{Partition: p, Seen: fenceOf(old)}
					}
					return fmt.Errorf("%w: counters of %s changed", driver.ErrStateChanged, pk)
				}
			}
			meanings = append(meanings, m)
		}
		if len(items) == 0 {
			return nil
		}
		err = s.transact(ctx, "mark", items, meanings)
		var muted *mutesChanged
		var covered *coversChanged
		var hint *hintFailed
		switch {
		case err == nil:
			s.forms.wrote(deltas, skips)
			for p, ms := range movesOf(totals) {
				moved := map[driver.GroupThread]string{}
				for t, m := range ms {
					moved[t] = m.To.Bound
				}
				s.covers.learn(p, moved, nil)
			}
			return nil
		case errors.As(err, &hint):
			if err := s.flipHints(hint, skips, &flips, driver.ErrStateChanged); err != nil {
				return err
			}
		case errors.As(err, &muted):
			mutes[muted.p] = muted.mutes
			s.hints.learn(muted.p, muted.mutes)
		case errors.As(err, &covered):
			covered.merge(bounds, s.covers)
		default:
			return err
		}
	}
}

// seenPut returns the Put of watermark mark mk's cs#seen item.
func (s *Store) seenPut(mk driver.Mark) (*types.Put, error) {
	p := mk.Key.Partition
	item, err := s.item(p.PK(), driver.SeenSK, seenItem{Kind: kindSeen, Seen: mk.Seen, TenantKey: p.Tenant, InboxKey: p.Inbox, UID: p.User}, time.Time{})
	if err != nil {
		return nil, err
	}
	return s.conditionalPut(item, expression.Or(s.notExists(), expression.Name("seen").LessThan(expression.Value(mk.Seen))))
}

// isMessage is the condition that the item is a message or broadcast, in
// either of the seeds' layouts, not a receipt.
func isMessage() expression.ConditionBuilder {
	return expression.Or(expression.Name(attrHeaders).AttributeExists(), expression.Name(attrAudiences).AttributeExists())
}

// has is the condition that attribute attr holds a time, or none (missing,
// NULL as the seeds write an unread readat, or whatever else holds no
// time), as decodeRecord reads it (driver.ParseTimeAttr): a number at
// least 0 and below driver.MaxEpoch+1. A comparison with an
// attribute that is missing or not a number is false.
func has(attr string, set bool) expression.ConditionBuilder {
	name := expression.Name(attr)
	c := expression.And(name.GreaterThanEqual(expression.Value(0)), name.LessThan(expression.Value(driver.MaxEpoch+1)))
	if set {
		return c
	}
	return expression.Not(c)
}

// timeIs is the condition that attribute attr holds time t (a whole
// second), as decodeRecord reads it: a number from t to below the next
// second.
func timeIs(attr string, t time.Time) expression.ConditionBuilder {
	name := expression.Name(attr)
	return expression.And(name.GreaterThanEqual(expression.Value(t.Unix())), name.LessThan(expression.Value(t.Unix()+1)))
}

// expiryIs is the condition that the TTL attribute holds expiry t, as
// Store.expiry reads it (driver.ParseExpiryAttr): a number above the
// second before t and at most t, or beyond the bound t is clamped to.
func (s *Store) expiryIs(t time.Time) expression.ConditionBuilder {
	name, sec := expression.NameNoDotSplit(s.o.ttl), t.Unix()
	above, upTo := name.GreaterThan(expression.Value(sec-1)), name.LessThanEqual(expression.Value(sec))
	switch {
	case sec >= driver.MaxExpiryEpoch:
		return above
	case sec <= 0:
		return expression.Not(name.GreaterThan(expression.Value(0))) // none, or a number at most 0
	}
	return expression.And(above, upTo)
}

// marksAre is the condition that the item has exactly st's marks (a
// receipt's deletedat too: on a direct message it is no mark, see
// decodeRecord), and, if it is ledgered (the library's), st's snooze:
// another program's item is not snoozed, whatever a snoozeduntil
// attribute of it says.
func marksAre(st driver.State, ledgered, receipt bool) expression.ConditionBuilder {
	c := expression.And(has(attrReadAt, !st.ReadAt.IsZero()), has(attrArchived, !st.ArchivedAt.IsZero()), has(attrInteract, !st.InteractedAt.IsZero()))
	if receipt {
		c = expression.And(c, has(attrDeleted, !st.DeletedAt.IsZero()))
	}
	if !ledgered {
		return c
	}
	snooze := has(attrSnoozed, false)
	if !st.SnoozedUntil.IsZero() {
		// Or none: the record reads its snooze entry's time, which the
		// mark's condition on its timed entry checks (see decodeRecord).
		snooze = expression.Or(timeIs(attrSnoozed, st.SnoozedUntil), snooze)
	}
	return expression.And(c, snooze)
}

// countedIs adds to cond the condition that the item records counted as
// its counted marks (driver.Record.Counted), unless counted is zero.
func countedIs(cond expression.ConditionBuilder, counted driver.MarkSet) expression.ConditionBuilder {
	if counted == 0 {
		return cond
	}
	return expression.And(cond, expression.Name(driver.CountedAttribute).Equal(expression.Value(uint8(counted))))
}

// ownEntry is the condition that the item notes ledger entry entry, or
// none (see noEntry).
func ownEntry(entry string) expression.ConditionBuilder {
	return expression.Or(noEntry(), expression.Name(driver.LedgerAttribute).Equal(expression.Value(entry)))
}

// noEntry is the condition that the item notes no ledger entry, as
// decodeRecord reads it: no ledger attribute, or NULL.
func noEntry() expression.ConditionBuilder {
	ledger := expression.Name(driver.LedgerAttribute)
	return expression.Or(ledger.AttributeNotExists(), ledger.AttributeType(expression.Null))
}

// sameMessage is the condition that the item has mark mk's expiry and
// category: the ledger entry the mark writes records them.
func (s *Store) sameMessage(mk driver.Mark) expression.ConditionBuilder {
	cat := expression.Name(attrCategory).Equal(expression.Value(mk.Category))
	if mk.Category == "" {
		cat = expression.Or(expression.Name(attrCategory).AttributeNotExists(), cat)
	}
	cond := expression.And(s.expiryIs(mk.ExpiresAt), cat)
	if !mk.DeliverAt.IsZero() {
		// Or none: the message reads its pending entry's time (see
		// decodeRecord).
		cond = expression.And(cond, expression.Or(timeIs(attrDeliverAt, mk.DeliverAt), has(attrDeliverAt, false)))
	}
	return cond
}

// timedIs is the condition that the item notes timed entry sk ("" for
// none: no attribute).
func timedIs(sk string) expression.ConditionBuilder {
	if sk == "" {
		return expression.Name(attrTimed).AttributeNotExists()
	}
	return expression.Name(attrTimed).Equal(expression.Value(sk))
}

// setTimed adds to upd the record's timed entry sk ("" removes it).
func setTimed(upd expression.UpdateBuilder, sk string) expression.UpdateBuilder {
	if sk == "" {
		return upd.Remove(expression.Name(attrTimed))
	}
	return upd.Set(expression.Name(attrTimed), expression.Value(sk))
}

// markRecord returns the transaction item that changes the record of mark
// mk (not a watermark mark): the Update or Delete of a direct message, the
// Put or Delete of a receipt, the Update of a shared partition's
// broadcast whose pending entry it folds or writes again.
func (s *Store) markRecord(mk driver.Mark) (types.TransactWriteItem, error) {
	key := s.messageKey(mk.Key)
	if mk.Receipt {
		// The receipt as read: with From's marks, or, for none, a
		// receipt without marks or none at all.
		cond := countedIs(expression.And(expression.NameNoDotSplit(s.o.pk).AttributeExists(), expression.Not(isMessage()), marksAre(mk.From, !mk.Adopts && !mk.From.IsZero(), true), ownEntry(mk.Entry), timedIs(mk.Timed)), mk.Counted)
		if mk.From.IsZero() {
			cond = expression.Or(s.notExists(), cond)
		}
		if mk.To.IsZero() {
			del, err := s.conditionalDelete(key, cond)
			return types.TransactWriteItem{Delete: del}, err
		}
		item, err := s.receiptItem(mk)
		if err != nil {
			return types.TransactWriteItem{}, err
		}
		put, err := s.conditionalPut(item, cond)
		return types.TransactWriteItem{Put: put}, err
	}
	cond := expression.And(isMessage(), s.expiresAfter(mk.Now), s.sameMessage(mk), ownEntry(mk.Entry), timedIs(mk.Timed))
	if mk.Key.Partition.IsShared() {
		// A broadcast has no marks: only its entries change.
		upd := setTimed(expression.Set(expression.Name(driver.LedgerAttribute), expression.Value(mk.Entry)), timedAfter(mk))
		return s.update(key, cond, upd)
	}
	cond = countedIs(expression.And(cond, marksAre(mk.From, !mk.Adopts, false)), mk.Counted)
	if mk.Delete {
		del, err := s.conditionalDelete(key, cond)
		if err != nil {
			return types.TransactWriteItem{}, err
		}
		del.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
		return types.TransactWriteItem{Delete: del}, nil
	}
	upd := setUnread(expression.Set(expression.Name(driver.LedgerAttribute), expression.Value(mk.Entry)), mk.Key.Partition, mk.Key.ID, mk.To).
		Set(expression.Name(driver.CountedAttribute), expression.Value(uint8(mk.To.Counted())))
	upd = setTimed(upd, timedAfter(mk))
	for _, m := range []struct {
		attr string
		t    time.Time
	}{{attrReadAt, mk.To.ReadAt}, {attrArchived, mk.To.ArchivedAt}, {attrSnoozed, mk.To.SnoozedUntil}, {attrInteract, mk.To.InteractedAt}} {
		if m.t.IsZero() {
			upd = upd.Remove(expression.Name(m.attr))
		} else {
			upd = upd.Set(expression.Name(m.attr), expression.Value(m.t.Unix()))
		}
	}
	return s.update(key, cond, upd)
}

// update returns the transaction item that updates the item at key with
// upd on condition cond, asking for the old item when it fails.
func (s *Store) update(key map[string]types.AttributeValue, cond expression.ConditionBuilder, upd expression.UpdateBuilder) (types.TransactWriteItem, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("dynamo: mark expression: %w", err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                           aws.String(s.table),
		Key:                                 key,
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}, nil
}

// markFailed tells why the record of mark mk failed its condition. For a
// receipt: its existence, marks or counted marks changed
// (ErrStateChanged). For a direct message, from the old item: gone,
// expired, another message (category, expiry, or due time if the mark
// names one) or a receipt is ErrNotFound; a message that stands with other
// marks, other counted marks (driver.Mark.Counted), or another ledger
// entry (adopted meanwhile, by Recount or the stream handler), is
// ErrStateChanged, so the caller reads it again.
func (s *Store) markFailed(mk driver.Mark) onFail {
	return func(old map[string]types.AttributeValue) error {
		changed := fmt.Errorf("%w: %s in %s", driver.ErrStateChanged, mk.Key.ID, mk.Key.Partition.PK())
		if mk.Receipt {
			return changed
		}
		notFound := fmt.Errorf("%w: message %s in %s", driver.ErrNotFound, mk.Key.ID, mk.Key.Partition.PK())
		if old == nil {
			return notFound
		}
		if exp := s.expiry(old); !mk.Now.Before(exp) || !exp.Equal(mk.ExpiresAt) {
			return notFound
		}
		_, headers := old[attrHeaders]
		_, flat := old[attrAudiences]
		if !headers && !flat {
			return notFound
		}
		var cat struct {
			Taxonomy *taxonomyAttr `dynamodbav:"taxonomy"`
		}
		if err := attributevalue.UnmarshalMap(old, &cat); err != nil || cat.Taxonomy != nil && cat.Taxonomy.Category != mk.Category || cat.Taxonomy == nil && mk.Category != "" {
			return notFound
		}
		if at, ok := driver.ParseTimeAttr(number(old[attrDeliverAt])); !mk.DeliverAt.IsZero() && ok && !at.Equal(mk.DeliverAt) {
			return notFound // due at another time: none reads as its pending entry's
		}
		return changed // other marks, other counted marks, or another entry (adopted meanwhile)
	}
}

// unread is the condition that the item's readat holds no time (missing,
// NULL, or no time at all: see has).
func unread() expression.ConditionBuilder { return has(attrReadAt, false) }

// broadcastCheck returns the ConditionCheck that broadcast k exists,
// expires after mk.Now and has mk's expiry and category.
func (s *Store) broadcastCheck(k driver.Key, mk driver.Mark) (*types.ConditionCheck, error) {
	cond := expression.And(expression.NameNoDotSplit(s.o.pk).AttributeExists(), s.expiresAfter(mk.Now), s.sameMessage(mk))
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

// timedEntries returns the sort keys of the timed entries of rec, a
// ledgered record: the one it notes, or, if it notes none, those an
// earlier version may have kept of it (none for one without an entry).
func timedEntries(rec driver.Record) []string {
	if !rec.Ledgered() {
		return nil
	}
	if rec.Timed != "" {
		return []string{rec.Timed}
	}
	var out []string
	if u := rec.Message.SnoozedUntil; !u.IsZero() {
		out = append(out, driver.SnoozeSK(u, rec.Entry))
	}
	if at := rec.Message.DeliverAt; !at.IsZero() {
		out = append(out, driver.PendingSK(at, rec.Entry))
	}
	return out
}

// errRecorded marks an ApplyRemoval that was applied before.
var errRecorded = errors.New("dynamo: removal already applied")

// errReaderMoved marks an ApplyRemoval whose receipt's reader item stands
// for another receipt (a later one at the same key).
var errReaderMoved = errors.New("dynamo: the reader item is a later receipt's")

// errRecounted marks an ApplyRemoval of a record without an entry that a
// recount counted out already.
var errRecounted = errors.New("dynamo: removal recounted")

// ApplyRemoval accounts r in one transaction. For a record with a ledger
// entry: a Delete of the entry on condition that it exists, of its timed
// entries, r.Deltas, for a shared partition's record its time buckets,
// with r.Tombstone a Put of the tombstone, with r.Delete a Delete of the
// record on condition that it is gone or still notes that entry, for a
// read receipt of a thread's message a Delete of its reader item on
// condition that it is gone or notes that entry (else the transaction is
// made again without it: a later receipt's item stays). For a
// record without an entry: a Put of a marker (sort key x#<event id> in the
// record's partition, kind RX, expiring RemovalMarkerTTL after r.Now) on
// condition that none exists, r.Deltas and the tombstone, the update of
// the record partition's c#* on condition that its recount time is before
// the record left the table (r.LeftAt; else the marker and the tombstone
// alone are written). The deltas' Above apply on condition that the
// partition's Fence is below the record's ID (else the transaction is
// made again without them). A failed condition of the marker or entry
// means the removal was applied before: it returns false and writes
// nothing. A transaction of more than driver.MaxTransactItems items
// (driver.RemovalItems; made again without the Above, it may hold more)
// is ErrInvalidInput.
func (s *Store) ApplyRemoval(ctx context.Context, r driver.Removal) (bool, error) {
	rec := r.Record
	var first types.TransactWriteItem
	if err := driver.ValidateEntry(rec); err != nil {
		return false, err
	}
	if err := driver.ValidateDeltas(r.Deltas); err != nil {
		return false, err
	}
	if r.Delete && !rec.Ledgered() {
		return false, fmt.Errorf("%w: deleting record %s, which has no ledger entry", driver.ErrInvalidInput, rec.Message.ID)
	}
	if err := driver.ValidateRemovalItems(r); err != nil {
		return false, err
	}
	if rec.Ledgered() {
		del, err := s.conditionalDelete(s.key(rec.Partition.PK(), rec.Entry), expression.NameNoDotSplit(s.o.pk).AttributeExists())
		if err != nil {
			return false, err
		}
		first = types.TransactWriteItem{Delete: del}
	} else {
		item, err := s.item(rec.Partition.PK(), driver.RemovalPrefix+r.EventID, removalItem{Kind: kindRemoval}, r.Now.Add(driver.RemovalMarkerTTL))
		if err != nil {
			return false, err
		}
		put, err := s.conditionalPut(item, s.notExists())
		if err != nil {
			return false, err
		}
		first = types.TransactWriteItem{Put: put}
	}
	items := []types.TransactWriteItem{first}
	meanings := []onFail{func(map[string]types.AttributeValue) error { return errRecorded }}
	for _, sk := range timedEntries(rec) {
		// A snoozed or scheduled record leaves with its entries.
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: s.key(rec.Partition.PK(), sk)}})
		meanings = append(meanings, nil)
	}
	if rec.Ledgered() && rec.Partition.IsShared() {
		buckets, err := s.bucketUpdates(rec.Partition, rec, -1)
		if err != nil {
			return false, err
		}
		items = append(items, buckets...)
		for range buckets {
			meanings = append(meanings, nil)
		}
	}
	reader := -1 // the index of the reader item's Delete, if any
	if rd, ok := r.ReaderRemoval(); ok {
		del, err := s.readerRemoval(rd)
		if err != nil {
			return false, err
		}
		reader = len(items)
		items = append(items, del)
		meanings = append(meanings, func(map[string]types.AttributeValue) error { return errReaderMoved })
	}
	if r.Tombstone {
		t, err := s.tombstone(rec)
		if err != nil {
			return false, err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: t}})
		meanings = append(meanings, nil)
	}
	if r.Delete {
		cond := expression.Or(expression.NameNoDotSplit(s.o.pk).AttributeNotExists(), expression.Name(driver.LedgerAttribute).Equal(expression.Value(rec.Entry)))
		del, err := s.conditionalDelete(s.messageKey(rec.Key()), cond)
		if err != nil {
			return false, err
		}
		items = append(items, types.TransactWriteItem{Delete: del})
		meanings = append(meanings, meanings[0]) // another record stands there now
	}
	base, baseMeanings := items, meanings
	deltas, recounted := r.Deltas, !rec.Ledgered()
	mutes := s.hints.take(deltas) // as remembered, then as the last failure showed them
	bounds := s.covers.take(deltas)
	// The forms of the receipts' hints' changes likewise (see hintForms).
	skips, flips := s.forms.skips(deltas), 0
	for {
		totals := map[driver.Partition]counterWrite{}
		var c *expression.ConditionBuilder
		if recounted {
			// Not counted out again if a recount made when it had left
			// the table counted it out: see driver.Store.ApplyRemoval.
			g := expression.Or(expression.Name(attrRecounted).AttributeNotExists(), expression.Name(attrRecounted).LessThan(expression.Value(r.LeftAt().Unix())))
			c = &g
		}
		if hasAbove(deltas) {
			g := seenBelow(rec.Message.ID)
			if c != nil {
				g = expression.And(*c, g)
			}
			c = &g
		}
		if c != nil {
			totals[rec.Partition] = counterWrite{cond: c, returnOld: true}
		}
		counters, err := s.guardedCounterUpdates(deltas, nil, totals, mutes, bounds, skips)
		if err != nil {
			return false, err
		}
		items, meanings = append(slices.Clone(base), counters...), slices.Clone(baseMeanings)
		took := mutedTook(deltas, mutes)
		_, tookCov := coveredWrites(deltas, nil, bounds)
		for _, it := range counters {
			if m, ok := s.hintMeaning(it); ok {
				meanings = append(meanings, m)
				continue
			}
			if m := s.groupCover(it, tookCov, driver.ErrConflict); m != nil {
				meanings = append(meanings, m) // a receipt's covered changes
				continue
			}
			meanings = append(meanings, func(old map[string]types.AttributeValue) error {
				if err := mutedFailure(rec.Partition, old, took); err != nil {
					return err
				}
				if err := coveredFailure(rec.Partition, "", old, tookCov); err != nil {
					return err
				}
				if hasAbove(deltas) && fenceOf(old) >= rec.Message.ID {
					return errTotalRefused
				}
				return errRecounted
			})
		}
		err = s.transact(ctx, "apply removal", items, meanings)
		var muted *mutesChanged
		var covered *coversChanged
		var hint *hintFailed
		switch {
		case errors.As(err, &covered):
			covered.merge(bounds, s.covers)
			continue
		case errors.As(err, &hint):
			if err := s.flipHints(hint, skips, &flips, driver.ErrConflict); err != nil {
				return false, err
			}
			continue
		case errors.As(err, &muted):
			mutes[muted.p] = muted.mutes
			s.hints.learn(muted.p, muted.mutes)
			continue
		case errors.Is(err, errReaderMoved):
			// A later receipt's reader item stands: it stays.
			base, baseMeanings = slices.Delete(base, reader, reader+1), slices.Delete(baseMeanings, reader, reader+1)
			reader = -1
			continue
		case errors.Is(err, errTotalRefused):
			deltas = withoutAbove(deltas) // the watermark is at or above it: in no Above
			continue
		case errors.Is(err, errRecounted):
			// The marker, the entries and the tombstone (the readers'
			// receipts stop counting): the counters left the record out
			// already.
			err = s.transact(ctx, "apply removal", base, baseMeanings)
			if errors.Is(err, errRecorded) {
				return false, nil
			}
			return err == nil, err
		case errors.Is(err, errRecorded):
			return false, nil
		case err != nil:
			return false, err
		}
		s.forms.wrote(deltas, skips)
		return true, nil
	}
}

// conditionalDelete returns a Delete of key with condition cond.
func (s *Store) conditionalDelete(key map[string]types.AttributeValue, cond expression.ConditionBuilder) (*types.Delete, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("dynamo: condition: %w", err)
	}
	return &types.Delete{
		TableName:                 aws.String(s.table),
		Key:                       key,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}, nil
}

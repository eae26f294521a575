package dynamo_test

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// chatTo publishes n direct messages of thread to u, and returns their
// IDs, oldest first.
func chatTo(t *testing.T, ib *inbox.Inbox, u inbox.User, thread string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		res, err := ib.Publish(context.Background(), u.Scope, []string{u.ID}, inbox.Draft{Title: "hi", Thread: thread, Category: "chat"})
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		ids = append(ids, res.Message.ID)
	}
	return ids
}

// covered returns the covered counter of all categories of thread in p,
// as s's Stats reads it, and whether there is one.
func covered(t *testing.T, s driver.Store, p driver.Partition, thread string) (driver.Counter, bool) {
	t.Helper()
	st, err := s.Stats(context.Background(), driver.StatsQuery{Partition: p, Now: time.Now()})
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	for _, c := range st.Counters {
		if c.Covered && c.Thread == thread && c.Category == "" {
			return c, true
		}
	}
	return driver.Counter{}, false
}

// wantUnread fails the test unless ib's Counts of u are total messages,
// unread of them unread.
func wantUnread(t *testing.T, ib *inbox.Inbox, u inbox.User, total, unread int64) {
	t.Helper()
	c, err := ib.Counts(context.Background(), u)
	if err != nil || c.Total != total || c.Unread != unread {
		t.Fatalf("Counts = %+v, %v; want %d unread of %d", c.Tally, err, unread, total)
	}
}

// transactions returns how many TransactWriteItems c made.
func transactions(c *capacityClient) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops["TransactWriteItems"]
}

// TestCoverForms: a Store applies the covered counters' change of a
// record's write in the form its condition finds right, whatever it
// guessed: a Store that saw no position takes the record as not covered,
// fails, and writes again covered (two transactions), then, having
// learnt the position, takes the next one right (one); a Store that saw
// a position that another process dropped since (the stream handler,
// writing it out) takes a record as covered, fails, and writes again
// without (two). The counters equal a recount throughout.
func TestCoverForms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	a := dynamo.New(c, table)
	ia := inbox.New(a)
	ann := inbox.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	p := ann.Partition()
	ids := chatTo(t, ia, ann, "bob", 4)
	if n, err := ia.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "bob"}); err != nil || n != 4 {
		t.Fatalf("MarkAllRead(bob) = %d, %v; want 4", n, err)
	}
	if cv, ok := covered(t, a, p, "bob"); !ok || cv.Unread != 4 || cv.Above != 4 || cv.Position.Bound <= ids[3] {
		t.Fatalf("covered counter of bob = %+v, %v; want 4 unread, 4 above, a position above %s", cv, ok, ids[3])
	}
	wantUnread(t, ia, ann, 4, 0)

	// remove removes the message with ID id, as TTL and the stream
	// handler would, through store s, and returns the transactions it
	// took.
	remove := func(s *dynamo.Store, cc *capacityClient, id string) int {
		t.Helper()
		recs, err := s.GetRecords(ctx, []driver.Key{{Partition: p, ID: id}})
		if err != nil || len(recs) != 1 {
			t.Fatalf("GetRecords(%s) = %d, %v", id, len(recs), err)
		}
		if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: p.PK()}, "sk": &types.AttributeValueMemberS{Value: driver.MessageSK(id)},
		}}); err != nil {
			t.Fatal(err)
		}
		before := transactions(cc)
		if ok, err := s.ApplyRemoval(ctx, driver.RemovalFor(recs[0], "ev-"+id, time.Now())); err != nil || !ok {
			t.Fatalf("ApplyRemoval(%s) = %v, %v", id, ok, err)
		}
		return transactions(cc) - before
	}
	bc := &capacityClient{Client: c}
	b := dynamo.New(bc, table) // has seen no position
	if n := remove(b, bc, ids[0]); n != 2 {
		t.Errorf("a removal of a covered message by a Store that saw no position took %d transactions, want 2 (the guess, then the other form)", n)
	}
	if n := remove(b, bc, ids[1]); n != 1 {
		t.Errorf("a removal of a covered message by a Store that learnt the position took %d transactions, want 1", n)
	}
	if cv, ok := covered(t, a, p, "bob"); !ok || cv.Unread != 2 || cv.Above != 2 {
		t.Fatalf("covered counter of bob after two removals = %+v, %v; want 2 unread, 2 above", cv, ok)
	}
	wantUnread(t, ia, ann, 2, 0)
	if got, want := nonZero(rawCounters(t, c, table, p.PK())), nonZero(rawRecount(t, c, table, p.PK())); !sameTallies(got, want) {
		t.Errorf("counters %v, recount %v", got, want)
	}

	// Another process writes the position out (the stream handler), and
	// then drops it (as the Inbox does once it is done and aged). A
	// message below its bound comes after (a retry of an earlier
	// publish), unread.
	var kept []events.DynamoDBEvent
	pump(t, dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn), keeping(t, inbox.New(dynamo.New(c, table)).StreamHandler, &kept))
	cv, ok := covered(t, a, p, "bob")
	if !ok || cv.Position.Done.IsZero() || !cv.Tallies().IsZero() {
		t.Fatalf("covered counter of bob after the position was written out: %+v, %v; want it done, counting nothing", cv, ok)
	}
	st, err := a.Stats(ctx, driver.StatsQuery{Partition: p, Keys: []driver.Counter{{}}})
	if err != nil {
		t.Fatal(err)
	}
	drop := driver.Mark{Key: driver.Key{Partition: p}, Now: time.Now(), Versioned: true, Version: st.Version, Cover: &driver.CoverChange{Thread: "bob", From: cv.Position}}
	if err := dynamo.New(c, table).Mark(ctx, []driver.Mark{drop}, nil); err != nil {
		t.Fatalf("dropping the done position: %v", err)
	}
	if cv, ok := covered(t, a, p, "bob"); ok {
		t.Fatalf("covered counter of bob after the position was dropped: %+v", cv)
	}
	wantUnread(t, ia, ann, 2, 0)
	recs, err := a.GetRecords(ctx, []driver.Key{{Partition: p, ID: ids[2]}})
	if err != nil || len(recs) != 1 {
		t.Fatalf("GetRecords = %d, %v", len(recs), err)
	}
	late := recs[0]
	late.Message.ID = ulid.MustNew(ulid.Timestamp(ulid.Time(ulid.MustParse(ids[0]).Time()).Add(-time.Second)), rand.Reader).String()
	late.Message.ReadAt, late.Counted = time.Time{}, 0
	late.Entry = driver.NewLedgerSK(late.Message.ExpiresAt, late.Message.ID)
	if err := a.PutMessage(ctx, late, driver.PutDeltas(late)); err != nil {
		t.Fatalf("PutMessage below the dropped position: %v", err)
	}
	wantUnread(t, ia, ann, 3, 1)
	// b still takes it as covered.
	if n := remove(b, bc, late.Message.ID); n != 2 {
		t.Errorf("a removal by a Store whose position is stale took %d transactions, want 2", n)
	}
	wantUnread(t, ia, ann, 2, 0)
	if got, want := nonZero(rawCounters(t, c, table, p.PK())), nonZero(rawRecount(t, c, table, p.PK())); !sameTallies(got, want) {
		t.Errorf("counters %v, recount %v", got, want)
	}
}

// sameTallies reports whether a and b hold the same tallies.
func sameTallies(a, b map[string]rawTally) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestPutMessageBelowPosition: PutMessage of a direct message of a thread
// below the user's read position there is a *driver.CoveredError and writes
// nothing, on a Store that saw the position and on one that did not; one
// above it, or of another thread, is written, and no position covers it.
func TestPutMessageBelowPosition(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	ctx := context.Background()
	a, c, table := newLocalStore(t)
	ia := inbox.New(a)
	ann := inbox.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	p := ann.Partition()
	ids := chatTo(t, ia, ann, "bob", 2)
	if n, err := ia.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "bob"}); err != nil || n != 2 {
		t.Fatalf("MarkAllRead(bob) = %d, %v; want 2", n, err)
	}
	recs, err := a.GetRecords(ctx, []driver.Key{{Partition: p, ID: ids[0]}})
	if err != nil || len(recs) != 1 {
		t.Fatalf("GetRecords = %d, %v", len(recs), err)
	}
	at := ulid.Time(ulid.MustParse(ids[0]).Time())
	copyAt := func(id, thread string) driver.Record {
		rec := recs[0]
		rec.Message.ID, rec.Message.Thread = id, thread
		rec.Entry = driver.NewLedgerSK(rec.Message.ExpiresAt, id)
		return rec
	}
	below := ulid.MustNew(ulid.Timestamp(at.Add(-time.Second)), rand.Reader).String()
	for _, s := range []*dynamo.Store{a, dynamo.New(c, table)} {
		rec := copyAt(below, "bob")
		var covered *driver.CoveredError
		if err := s.PutMessage(ctx, rec, driver.PutDeltas(rec)); !errors.As(err, &covered) || covered.ID != below || covered.Thread != "bob" || covered.Partition != p {
			t.Errorf("PutMessage below the position = %v, want a CoveredError of %s", err, below)
		}
		if got, err := s.GetRecords(ctx, []driver.Key{rec.Key()}); err != nil || len(got) != 0 {
			t.Errorf("GetRecords after the refused PutMessage = %d, %v; want none", len(got), err)
		}
	}
	wantUnread(t, ia, ann, 2, 0)
	other := copyAt(below, "carol")
	if err := a.PutMessage(ctx, other, driver.PutDeltas(other)); err != nil {
		t.Fatalf("PutMessage of another thread: %v", err)
	}
	wantUnread(t, ia, ann, 3, 1)
	if got, want := nonZero(rawCounters(t, c, table, p.PK())), nonZero(rawRecount(t, c, table, p.PK())); !sameTallies(got, want) {
		t.Errorf("counters %v, recount %v", got, want)
	}
}

// TestPositionItemAndStream: a MarkAllRead of a thread writes the
// position on c#* and an item rp#<thread> (kind RP) for the stream; the
// stream handler reads it, emits EventThreadRead and writes the position
// out (each message read, at the position's time), which removes both;
// Counts stay the same throughout and equal a recount.
func TestPositionItemAndStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	var evs []inbox.Event
	ib := inbox.New(dynamo.New(c, table), inbox.WithEvents(func(_ context.Context, e inbox.Event) error {
		evs = append(evs, e)
		return nil
	}))
	ann := inbox.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	p := ann.Partition()
	ids := chatTo(t, ib, ann, "bob", 3)
	if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "bob"}); err != nil || n != 3 {
		t.Fatalf("MarkAllRead(bob) = %d, %v; want 3", n, err)
	}
	items := rawQuery(t, c, table, p.PK(), driver.PositionSK("bob"))
	if len(items) != 1 {
		t.Fatalf("%d read position items of bob, want 1", len(items))
	}
	it := items[0]
	bound := attrS(t, it["bound"])
	if attrS(t, it["kind"]) != "RP" || attrS(t, it["thread"]) != "bob" || bound <= ids[2] || attrN(t, it["at"]) <= 0 {
		t.Errorf("read position item = %v; want kind RP, thread bob, a bound above %s, a time", it, ids[2])
	}
	wantUnread(t, ib, ann, 3, 0)
	var kept []events.DynamoDBEvent
	pump(t, dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn), keeping(t, ib.StreamHandler, &kept))
	var read []inbox.Event
	reads := 0
	for _, e := range evs {
		switch e.Kind {
		case inbox.EventThreadRead:
			read = append(read, e)
		case inbox.EventRead:
			reads++
		}
	}
	if len(read) != 1 || read[0].Partition != p || read[0].Thread != "bob" || read[0].ReadUpTo != bound {
		t.Errorf("thread-read events = %+v; want one of ann's thread bob up to %s", read, bound)
	}
	if reads != 3 {
		t.Errorf("%d read events, want 3 (the position written out)", reads)
	}
	if items := rawQuery(t, c, table, p.PK(), driver.PositionPrefix); len(items) != 1 || items[0]["done"] == nil {
		t.Errorf("read position items after the stream: %v, want the one, done", items)
	}
	if cv, ok := covered(t, dynamo.New(c, table), p, "bob"); !ok || cv.Position.Done.IsZero() || !cv.Tallies().IsZero() {
		t.Errorf("covered counter of bob after the stream: %+v, %v; want it done, counting nothing", cv, ok)
	}
	for _, m := range messageItems(t, c, table, p) {
		if _, ok := m["readat"]; !ok {
			t.Errorf("message %v not read after the position was written out", m["sk"])
		}
	}
	wantUnread(t, ib, ann, 3, 0)
	if got, want := nonZero(rawCounters(t, c, table, p.PK())), nonZero(rawRecount(t, c, table, p.PK())); !sameTallies(got, want) {
		t.Errorf("counters %v, recount %v", got, want)
	}
}

// TestCoverFormsPage: one Mark of a page of a thread's messages, some
// below the read position and some above it, by a Store that saw no
// position: each record's change of the covered counters applies, or
// not, by its own ID, in the transaction made again once; a Recount then
// keeps the position and the counters it covers. A mark that would make
// a message unread below the position (an unarchive), or that archives
// one the position covers without writing its read (made by a writer
// that did not see the position: driver.Mark.UnreadOverCover), is
// refused with a *driver.CoveredError, by a Store that saw the position
// and by one that did not, and one above it is not.
func TestCoverFormsPage(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	ctx := context.Background()
	a, c, table := newLocalStore(t)
	ia := inbox.New(a)
	ann := inbox.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	p := ann.Partition()
	ids := chatTo(t, ia, ann, "bob", 5)
	// ids[1] archived unread before the position moves over it.
	if ok, err := ia.Archive(ctx, ann, ids[1]); err != nil || !ok {
		t.Fatalf("Archive(%s) = %v, %v", ids[1], ok, err)
	}
	if n, err := ia.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "bob", UpTo: ids[2]}); err != nil || n != 2 {
		t.Fatalf("MarkAllRead(bob, up to %s) = %d, %v; want 2", ids[2], n, err)
	}
	cv, ok := covered(t, a, p, "bob")
	if !ok || cv.Unread != 2 || cv.Position.Bound <= ids[2] || cv.Position.Bound > ids[3] {
		t.Fatalf("covered counter of bob = %+v, %v; want 2 unread, a bound above %s, at most %s", cv, ok, ids[2], ids[3])
	}
	pos := cv.Position
	wantUnread(t, ia, ann, 4, 2)
	// marks returns a page of marks of the messages with ids, as a bulk
	// action makes them (the messages as they are, the position aside;
	// their Above fenced by her watermark, none), each with the marks
	// set returns, and their deltas.
	now := time.Now().UTC().Truncate(time.Second)
	marks := func(s *dynamo.Store, set func(string, driver.State) driver.State, ids ...string) ([]driver.Mark, []driver.Counter) {
		t.Helper()
		keys := make([]driver.Key, len(ids))
		for i, id := range ids {
			keys[i] = driver.Key{Partition: p, ID: id}
		}
		recs, err := s.GetRecords(ctx, keys)
		if err != nil || len(recs) != len(ids) {
			t.Fatalf("GetRecords = %d, %v", len(recs), err)
		}
		out := []driver.Mark{{Key: driver.Key{Partition: p}, Now: now, Fence: true}}
		var deltas []driver.Counter
		for _, r := range recs {
			mk := driver.Mark{Key: r.Key(), Now: now, Category: r.Message.Category, Thread: r.Message.Thread, ExpiresAt: r.Message.ExpiresAt, Entry: r.Entry, From: r.State(), To: set(r.Message.ID, r.State()), Counted: r.Counted, Timed: r.Timed}
			out = append(out, mk)
			deltas = append(append(deltas, driver.MarkDeltas(mk)...), driver.AboveDeltas(mk, "")...)
		}
		return out, driver.MergeCounters(deltas)
	}
	blind := func(_ string, s driver.State) driver.State { s.ArchivedAt = now; return s }
	// archive archives as the Inbox does: a message the position covers
	// is read at its time.
	archive := func(id string, s driver.State) driver.State {
		s.ArchivedAt = now
		if s.ReadAt.IsZero() && pos.Covers(id) {
			s.ReadAt = pos.ReadAt(id)
		}
		return s
	}
	unarchive := func(_ string, s driver.State) driver.State { s.ArchivedAt = time.Time{}; return s }
	page := []string{ids[0], ids[2], ids[3], ids[4]}
	for _, s := range []*dynamo.Store{a, dynamo.New(c, table)} {
		mks, deltas := marks(s, blind, page...)
		var covered *driver.CoveredError
		if err := s.Mark(ctx, mks, deltas); !errors.As(err, &covered) || covered.ID != ids[0] && covered.ID != ids[2] || covered.Thread != "bob" {
			t.Errorf("Mark archiving messages below the position without their read = %v, want a CoveredError of %s or %s", err, ids[0], ids[2])
		}
	}
	bc := &capacityClient{Client: c}
	b := dynamo.New(bc, table)
	mks, deltas := marks(b, archive, page...)
	if err := b.Mark(ctx, mks, deltas); err != nil {
		t.Fatalf("Mark of the page: %v", err)
	}
	if n := transactions(bc); n != 2 {
		t.Errorf("the page took %d transactions, want 2 (the guess, then each record in its form)", n)
	}
	if cv, ok := covered(t, a, p, "bob"); !ok || !cv.IsZero() {
		t.Fatalf("covered counter of bob after the page = %+v, %v; want one at zero", cv, ok)
	}
	wantUnread(t, ia, ann, 0, 0)
	if got, want := nonZero(rawCounters(t, c, table, p.PK())), nonZero(rawRecount(t, c, table, p.PK())); !sameTallies(got, want) {
		t.Errorf("counters %v, recount %v", got, want)
	}
	for _, s := range []*dynamo.Store{a, dynamo.New(c, table)} {
		mks, deltas := marks(s, unarchive, ids[3], ids[1])
		var covered *driver.CoveredError
		if err := s.Mark(ctx, mks, deltas); !errors.As(err, &covered) || covered.ID != ids[1] || covered.Thread != "bob" {
			t.Errorf("Mark unarchiving a message below the position = %v, want a CoveredError of %s", err, ids[1])
		}
	}
	mks, deltas = marks(b, unarchive, ids[3])
	if err := b.Mark(ctx, mks, deltas); err != nil {
		t.Fatalf("Mark unarchiving a message above the position: %v", err)
	}
	wantUnread(t, ia, ann, 1, 1)
	before, _ := covered(t, a, p, "bob")
	if _, err := ia.Recount(ctx, ann); err != nil {
		t.Fatalf("Recount: %v", err)
	}
	if after, ok := covered(t, a, p, "bob"); !ok || after.Unread != before.Unread || after.Above != before.Above || !after.Position.Equal(before.Position) {
		t.Errorf("covered counter of bob after Recount = %+v, %v; want %+v", after, ok, before)
	}
	wantUnread(t, ia, ann, 1, 1)
}

// TestCoveredHostile: another program's cv# attributes on a user's c#*
// (the prefix of a covered thread's counters) that are not such
// counters: a string, a map under a name that is no thread's encoding, a
// map without a position, with a bound that is no ID, a time that is
// not a number, a key of no tally, a tally that is not an integer. Each
// makes her Counts ErrInvalidInput, with no panic.
func TestCoveredHostile(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	ctx := context.Background()
	store, c, table := newLocalStore(t)
	ib := inbox.New(store)
	ann := inbox.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	ids := chatTo(t, ib, ann, "bob", 1)
	m := func(kv map[string]types.AttributeValue) types.AttributeValue {
		return &types.AttributeValueMemberM{Value: kv}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	good := "cv#Ym9i" // base64url("bob")
	bound := s(ulid.MustNew(ulid.Timestamp(ulid.Time(ulid.MustParse(ids[0]).Time()).Add(time.Second)), rand.Reader).String())
	for _, h := range []struct {
		name string
		v    types.AttributeValue
	}{
		{good, s("1")},
		{"cv#!!", m(map[string]types.AttributeValue{"b": bound, "t": num(1)})},
		{good, m(map[string]types.AttributeValue{"u": num(1)})},
		{good, m(map[string]types.AttributeValue{"b": s("x"), "t": num(1)})},
		{good, m(map[string]types.AttributeValue{"b": bound, "t": s("1")})},
		{good, m(map[string]types.AttributeValue{"b": bound, "t": num(1), "x": num(1)})},
		{good, m(map[string]types.AttributeValue{"b": bound, "t": num(1), "u": &types.AttributeValueMemberN{Value: "1.5"}})},
		{good, m(map[string]types.AttributeValue{"b": bound, "t": num(1), "e": s("nonsense")})},
	} {
		setNamed(t, c, table, ann.Partition(), driver.CounterSK("", ""), h.name, h.v)
		if _, err := ib.Counts(ctx, ann); !errors.Is(err, driver.ErrInvalidInput) {
			t.Errorf("Counts with %s = %v: %v, want ErrInvalidInput", h.name, h.v, err)
		}
		setNamed(t, c, table, ann.Partition(), driver.CounterSK("", ""), h.name, nil)
	}
	setNamed(t, c, table, ann.Partition(), driver.CounterSK("", ""), good, m(map[string]types.AttributeValue{"b": bound, "t": num(1), "u": num(1), "a": num(1)}))
	if got, err := ib.Counts(ctx, ann); err != nil || got.Unread != 0 || got.Total != 1 {
		t.Errorf("Counts with a position covering her message = %+v, %v; want it read", got.Tally, err)
	}
}

// TestPositionGoesAfterAnotherProgramsUnread: another program following
// the seeds marks a message below a read position unread once the stream
// handler wrote the position out. The message still reads as read
// (counted covered), and the position, once aged, still goes: the next
// mark of another chat marks the message read again, at the position's
// time (no reader sees a change), and drops it. Counts stay exact
// throughout, and the counters equal a recount once no position covers a
// message stored unread.
func TestPositionGoesAfterAnotherProgramsUnread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	clock := time.Now().Truncate(time.Second)
	ib := inbox.New(dynamo.New(c, table), inbox.WithClock(func() time.Time { return clock }))
	ann := inbox.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	p := ann.Partition()
	reader := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn)
	// deliver hands the stream to the handler until until holds, for up
	// to 5 s (Local's stream may hold records back a while).
	deliver := func(what string, until func() bool) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); ; {
			pump(t, reader, ib.StreamHandler)
			if until() {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("%s: not after 5 s of the stream", what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	positions := func() map[string]driver.Position {
		st, err := dynamo.New(c, table).Stats(ctx, driver.StatsQuery{Partition: p})
		if err != nil {
			t.Fatal(err)
		}
		return driver.Positions(st.Counters)
	}
	recounted := func(what string) {
		t.Helper()
		if got, want := nonZero(rawCounters(t, c, table, p.PK())), nonZero(rawRecount(t, c, table, p.PK())); !sameTallies(got, want) {
			t.Errorf("%s: counters %v, recount %v", what, got, want)
		}
	}
	ids := chatTo(t, ib, ann, "bob", 2)
	if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "bob"}); err != nil || n != 2 {
		t.Fatalf("MarkAllRead(bob) = %d, %v; want 2", n, err)
	}
	readAt := positions()["bob"].ReadAt(ids[0])
	deliver("bob's position written out", func() bool { return !positions()["bob"].Done.IsZero() })

	// Another program following the seeds marks the first message
	// unread: its read mark off, and the counters' read down.
	if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: p.PK()}, "sk": &types.AttributeValueMemberS{Value: driver.MessageSK(ids[0])},
		},
		UpdateExpression: aws.String("REMOVE readat"),
	}); err != nil {
		t.Fatalf("another program's unread: %v", err)
	}
	h := &localHarness{raw: c, table: table, Store: dynamo.New(c, table)}
	if err := h.addForeign(ctx, []driver.Counter{{Partition: p, Read: -1}, {Partition: p, Category: "chat", Read: -1}}); err != nil {
		t.Fatalf("another program's counters: %v", err)
	}
	deliver("the unread counted covered", func() bool {
		cv, ok := covered(t, dynamo.New(c, table), p, "bob")
		return ok && !cv.Tallies().IsZero()
	})
	wantUnread(t, ib, ann, 2, 0)

	clock = clock.Add(16 * time.Minute)
	chatTo(t, ib, ann, "carl", 1)
	if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "carl"}); err != nil || n != 1 {
		t.Fatalf("MarkAllRead(carl) = %d, %v; want 1", n, err)
	}
	wantUnread(t, ib, ann, 3, 0)
	if pos, ok := positions()["bob"]; ok {
		t.Errorf("bob's aged position stands after a mark of another chat: %+v", pos)
	}
	if m, err := ib.Get(ctx, ann, ids[0]); err != nil || !m.ReadAt.Equal(readAt) {
		t.Errorf("Get(%s) = read at %v, %v; want read at the position's time %v", ids[0], m.ReadAt, err, readAt)
	}
	deliver("carl's position written out", func() bool { return !positions()["carl"].Done.IsZero() })
	wantUnread(t, ib, ann, 3, 0)
	recounted("all written out")
}

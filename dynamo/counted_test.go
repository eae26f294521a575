package dynamo_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// setAttr runs UpdateItem with expression expr (":v" bound to v, if not
// nil) on the item at p and sk, as another program, or an earlier
// version of the library, would.
// deleteItem deletes the item at p and sk, as another program would.
func deleteItem(t *testing.T, c *dynamodb.Client, table string, p driver.Partition, sk string) {
	t.Helper()
	if _, err := c.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: p.PK()}, "sk": &types.AttributeValueMemberS{Value: sk},
	}}); err != nil {
		t.Fatalf("DeleteItem %s: %v", sk, err)
	}
}

// handleStream hands the table's stream, from its start, to the
// StreamHandler of an Inbox over store with events on, fails t for each
// record it fails, and returns that Inbox.
func handleStream(t *testing.T, store *dynamo.Store, arn string) *inbox.Inbox {
	t.Helper()
	failed := 0
	ib := inbox.New(store, inbox.WithSharedCache(0), inbox.WithEvents(func(context.Context, inbox.Event) error { return nil }))
	handler := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		resp, err := ib.StreamHandler(ctx, ev)
		failed += len(resp.BatchItemFailures)
		return resp, err
	}
	if _, err := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn).Poll(context.Background(), handler); err != nil {
		t.Errorf("Poll: %v", err)
	}
	if failed != 0 {
		t.Errorf("the stream handler failed %d records", failed)
	}
	return ib
}

func setAttr(t *testing.T, c *dynamodb.Client, table string, p driver.Partition, sk, expr string, v types.AttributeValue) {
	t.Helper()
	in := &dynamodb.UpdateItemInput{
		TableName:        aws.String(table),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: p.PK()}, "sk": &types.AttributeValueMemberS{Value: sk}},
		UpdateExpression: aws.String(expr),
	}
	if v != nil {
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": v}
	}
	if _, err := c.UpdateItem(context.Background(), in); err != nil {
		t.Fatalf("UpdateItem %s %s: %v", sk, expr, err)
	}
}

// setNamed sets attribute name of item (p, sk) to v, or removes it if v
// is nil, behind the Store's back: name is passed as it is, whatever it
// holds.
func setNamed(t *testing.T, c *dynamodb.Client, table string, p driver.Partition, sk, name string, v types.AttributeValue) {
	t.Helper()
	in := &dynamodb.UpdateItemInput{
		TableName:                aws.String(table),
		Key:                      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: p.PK()}, "sk": &types.AttributeValueMemberS{Value: sk}},
		UpdateExpression:         aws.String("REMOVE #n"),
		ExpressionAttributeNames: map[string]string{"#n": name},
	}
	if v != nil {
		in.UpdateExpression = aws.String("SET #n = :v")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": v}
	}
	if _, err := c.UpdateItem(context.Background(), in); err != nil {
		t.Fatalf("UpdateItem %s %s: %v", sk, name, err)
	}
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// TestRecountNotesCountedMarks: items written by a version of the library
// that did not note the marks their ledger entries count (no counted
// attribute), and one that such a version marked read after this one
// wrote it (counted says unread, the entry and the counters read), are
// noted by Recount as their entries count them, changing no counter.
// From then on another program's read of them is recounted by the stream
// handler, and Counts agrees with List.
func TestRecountNotesCountedMarks(t *testing.T) {
	ddblocal.Endpoint(t)
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	store := dynamo.New(c, table)
	ib := inbox.New(store, inbox.WithSharedCache(0))
	u := inbox.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	p := u.Partition()
	var ids []string
	for i, title := range []string{"legacy unread", "legacy read", "marked by an earlier version"} {
		d := inbox.Draft{Title: title, Thread: "chat"}
		if i == 2 {
			d.Thread = "" // so that the handler's miscount of it (it sees the earlier version's mark as another program's) moves no thread
		}
		r, err := ib.Publish(ctx, u.Scope, []string{u.ID}, d)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Message.ID)
	}
	for _, id := range ids[1:] {
		if _, err := ib.MarkRead(ctx, u, id); err != nil {
			t.Fatal(err)
		}
	}
	setAttr(t, c, table, p, driver.MessageSK(ids[0]), "REMOVE counted", nil)
	setAttr(t, c, table, p, driver.MessageSK(ids[1]), "REMOVE counted", nil)
	setAttr(t, c, table, p, driver.MessageSK(ids[2]), "SET counted = :v", num(int64(driver.MarksKnown)))
	before, err := ib.Counts(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	after, err := ib.Recount(ctx, u)
	if err != nil {
		t.Fatalf("Recount: %v", err)
	}
	if after.Tally != before.Tally || after.Read != 2 {
		t.Errorf("Recount changed the counts: %+v, before %+v (2 read)", after.Tally, before.Tally)
	}
	recs, err := store.GetRecords(ctx, []driver.Key{{Partition: p, ID: ids[0]}, {Partition: p, ID: ids[1]}, {Partition: p, ID: ids[2]}})
	if err != nil || len(recs) != 3 {
		t.Fatalf("GetRecords: %d, %v", len(recs), err)
	}
	for _, r := range recs {
		if r.Counted != r.State().Counted() {
			t.Errorf("%s after Recount: counted %04b, want its marks %04b", r.Message.Title, r.Counted, r.State().Counted())
		}
	}
	// Another program reads the legacy unread one: the stream handler
	// moves the thread's counter with it.
	foreignRead(t, c, table, driver.Key{Partition: p, ID: ids[0]})
	if _, err := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn).Poll(ctx, ib.StreamHandler); err != nil {
		t.Fatalf("Poll: %v", err)
	}
	wantAgree(t, ib, u, "another program's read of a noted legacy item")
	threads, err := ib.ListThreads(ctx, u, inbox.ThreadOptions{})
	if err != nil || len(threads.Threads) != 1 || threads.Threads[0].Tally != (inbox.Tally{Total: 2, Read: 2}) {
		t.Errorf("ListThreads = %+v, %v; want thread chat, its 2 messages read", threads, err)
	}
}

// TestDecodeCountedAndStrayMarks: a counted attribute that is no set of
// marks a record can have reads as unknown (another program may write
// anything there: see TestHostileCounted); deletedat on a direct message,
// and readat on a broadcast, are no marks: the message can be marked and
// recounted, and Counts agrees with List.
func TestDecodeCountedAndStrayMarks(t *testing.T) {
	ddblocal.Endpoint(t)
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	store := dynamo.New(c, table)
	ib := inbox.New(store, inbox.WithSharedCache(0))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	u := scope.User("ann")
	p := u.Partition()
	d, err := ib.Publish(ctx, scope, []string{u.ID}, inbox.Draft{Title: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "everyone"})
	if err != nil {
		t.Fatal(err)
	}
	dk, bk := driver.Key{Partition: p, ID: d.Message.ID}, driver.Key{Partition: scope.Public(), ID: b.ID}
	for _, v := range []int64{9, 16, 0x21} { // deleted, on a message; no marks known; a bit of no mark
		setAttr(t, c, table, p, driver.MessageSK(d.Message.ID), "SET counted = :v", num(v))
		if recs, err := store.GetRecords(ctx, []driver.Key{dk}); err != nil || len(recs) != 1 || recs[0].Counted != 0 {
			t.Errorf("counted %d: GetRecords = %+v, %v; want the message, counted unknown", v, recs, err)
		}
	}
	setAttr(t, c, table, p, driver.MessageSK(d.Message.ID), "SET counted = :v", num(0))
	setAttr(t, c, table, p, driver.MessageSK(d.Message.ID), "SET deletedat = :v", num(time.Now().Unix()))
	setAttr(t, c, table, scope.Public(), driver.MessageSK(b.ID), "SET readat = :v", num(time.Now().Unix()))
	recs, err := store.GetRecords(ctx, []driver.Key{dk, bk})
	if err != nil || len(recs) != 2 {
		t.Fatalf("GetRecords: %d, %v", len(recs), err)
	}
	for _, r := range recs {
		if !r.DeletedAt.IsZero() || !r.Message.ReadAt.IsZero() || r.Counted != 0 {
			t.Errorf("%s: deleted %v, read %v, counted %d; want no marks, counted unknown", r.Message.Title, r.DeletedAt, r.Message.ReadAt, r.Counted)
		}
	}
	if _, err := ib.Recount(ctx, u); err != nil {
		t.Errorf("Recount: %v", err)
	}
	for _, id := range []string{d.Message.ID, b.ID} {
		if ok, err := ib.MarkRead(ctx, u, id); err != nil || !ok {
			t.Errorf("MarkRead(%s) = %v, %v", id, ok, err)
		}
	}
	if _, err := ib.Recount(ctx, u); err != nil {
		t.Errorf("Recount after the marks: %v", err)
	}
	wantAgree(t, ib, u, "stray marks")
}

// foreignRead marks the uncategorized item at k read as another program
// following the seeds does, with the plain SDK (see localHarness's
// ReadForeign, which the conformance suite uses).
func foreignRead(t *testing.T, c *dynamodb.Client, table string, k driver.Key) {
	t.Helper()
	h := &localHarness{raw: c, table: table, Store: dynamo.New(c, table)}
	if _, ok, err := h.ReadForeign(context.Background(), k, time.Now(), []driver.Counter{{Partition: k.Partition, Read: 1}}); err != nil || !ok {
		t.Fatalf("ReadForeign(%s): %v, %v", k.ID, ok, err)
	}
}

// TestRecountRewritesStaleTimedEntries: a snooze entry and a pending
// entry as an earlier version of the library kept them (under SnoozeSK
// and PendingSK, with a TTL, not tallied on the counters, and their
// records noting none), holding other marks than their records (left so
// by a version that rewrote only ledger entries), take their messages out
// of Counts with those marks; Recount writes them as this version keeps
// them (tallied, noted on their records) as the records stand, so that
// Counts agrees with List, and the earlier ones go.
func TestRecountRewritesStaleTimedEntries(t *testing.T) {
	ddblocal.Endpoint(t)
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	store := dynamo.New(c, table)
	ib := inbox.New(store, inbox.WithSharedCache(0))
	u := inbox.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	p := u.Partition()
	now := time.Now()
	until := now.Add(time.Hour).Truncate(time.Second)
	snoozed, err := ib.Publish(ctx, u.Scope, []string{u.ID}, inbox.Draft{Title: "snoozed"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib.Snooze(ctx, u, snoozed.Message.ID, until); err != nil {
		t.Fatal(err)
	}
	later, err := ib.Publish(ctx, u.Scope, []string{u.ID}, inbox.Draft{Title: "later", DeliverAt: until})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // read, so that the stale entries' reads show (Counts shows no negative count)
		r, err := ib.Publish(ctx, u.Scope, []string{u.ID}, inbox.Draft{Title: "now"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ib.MarkRead(ctx, u, r.Message.ID); err != nil {
			t.Fatal(err)
		}
	}
	wantAgree(t, ib, u, "as this version keeps them")
	recs, err := store.GetRecords(ctx, []driver.Key{{Partition: p, ID: snoozed.Message.ID}, {Partition: p, ID: later.Message.ID}})
	if err != nil || len(recs) != 2 {
		t.Fatalf("GetRecords: %d, %v", len(recs), err)
	}
	// Back to the earlier version's layout: the record notes no entry,
	// the counters tally none, the entry is under the earlier key, with a
	// TTL and a read mark its record does not have.
	for _, r := range recs {
		e, ok := r.TimedEntry()
		if !ok {
			t.Fatalf("record %s notes no timed entry", r.Message.ID)
		}
		sk, kind := driver.SnoozeSK(until, r.Entry), "SZ"
		if r.Message.ID == later.Message.ID {
			sk, kind = driver.PendingSK(until, r.Entry), "SQ"
		}
		raw := func(in *dynamodb.TransactWriteItemsInput) {
			t.Helper()
			if _, err := c.TransactWriteItems(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		key := func(sk string) map[string]types.AttributeValue {
			return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: p.PK()}, "sk": &types.AttributeValueMemberS{Value: sk}}
		}
		legacy := map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: p.PK()}, "sk": &types.AttributeValueMemberS{Value: sk}, "kind": &types.AttributeValueMemberS{Value: kind},
			"expires": num(r.Message.ExpiresAt.Unix()), "expiredat": num(until.Unix()), "readat": num(now.Unix()),
		}
		prefix := "z"
		if kind == "SQ" {
			prefix = "q"
		}
		items := []types.TransactWriteItem{
			{Update: &types.Update{TableName: aws.String(table), Key: key(driver.MessageSK(r.Message.ID)), UpdateExpression: aws.String("REMOVE timed")}},
			{Delete: &types.Delete{TableName: aws.String(table), Key: key(r.Timed)}},
			{Delete: &types.Delete{TableName: aws.String(table), Key: key(driver.TimerSK(r.Timed))}},
			{Put: &types.Put{TableName: aws.String(table), Item: legacy}},
		}
		for _, ctr := range driver.TimedCounters(e) {
			items = append(items, types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table), Key: key(ctr.SK()),
				UpdateExpression:          aws.String("ADD " + prefix + "p :m"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":m": num(-1)}}})
		}
		raw(&dynamodb.TransactWriteItemsInput{TransactItems: items})
	}
	if got, err := ib.Counts(ctx, u); err != nil || got.Read != 0 || got.Snoozed != 1 {
		t.Fatalf("Counts with stale entries of the earlier layout: %+v, snoozed %d, %v; want their reads taken out of the 2, one snoozed (else the fixture is wrong)", got.Tally, got.Snoozed, err)
	}
	if _, err := ib.Recount(ctx, u); err != nil {
		t.Fatalf("Recount: %v", err)
	}
	wantAgree(t, ib, u, "after Recount")
	st, err := store.Stats(ctx, driver.StatsQuery{Partition: p, Now: now.Add(1000 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Snoozed)+len(st.Pending) != 0 || len(st.Due) != 2 {
		t.Errorf("after Recount: %d and %d entries of the earlier layout, %d of this one; want 0, 0, 2", len(st.Snoozed), len(st.Pending), len(st.Due))
	}
	for _, e := range st.Due {
		if e.Message.IsRead() {
			t.Errorf("after Recount: entry %+v is read, its record is not", e)
		}
	}
}

// TestHostileCounted: a counted attribute that holds no set of marks (past
// a byte, negative, a string, 1e30, a byte of no marks, deleted on a
// message) fails no read, on another program's direct message and read
// receipt or on the library's own message: List and Get show them, and
// Counts agrees with List. Another program's counted is ignored; the
// library's reads as unknown, and the next mark writes it anew. The
// table's stream, handed to the handler with events on, fails no record
// (the images of those items, and the removal of a library message that
// another program deleted while its counted was such), and Counts still
// agrees with List after it.
func TestHostileCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, arn := newForeignHarness(t)
	c, table, store := h.raw, h.table, h.Store
	ib := inbox.New(store, inbox.WithSharedCache(0))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	b, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "everyone"})
	if err != nil {
		t.Fatal(err)
	}
	values := []types.AttributeValue{
		&types.AttributeValueMemberN{Value: "256"},
		&types.AttributeValueMemberN{Value: "-1"},
		&types.AttributeValueMemberS{Value: "x"},
		&types.AttributeValueMemberN{Value: "1e30"},
		&types.AttributeValueMemberN{Value: "255"},
		&types.AttributeValueMemberN{Value: "9"},
	}
	var users []inbox.User
	for i, v := range values {
		what := "counted " + attrString(v)
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			what = fmt.Sprintf("counted %q", s.Value)
		}
		u := scope.User(fmt.Sprintf("u%d", i))
		users = append(users, u)
		p := u.Partition()
		own, err := ib.Publish(ctx, scope, []string{u.ID}, inbox.Draft{Title: "own", Category: "billing"})
		if err != nil {
			t.Fatal(err)
		}
		doomed, err := ib.Publish(ctx, scope, []string{u.ID}, inbox.Draft{Title: "doomed"})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC().Truncate(time.Second)
		foreign := driver.Record{Partition: p, Message: driver.Message{ID: inbox.IDAt(now.Add(-time.Minute)), Title: "foreign", Body: "b", Sender: "other",
			Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{u.ID}}, ReceivedAt: now, DeliveredAt: now, ExpiresAt: now.Add(24 * time.Hour)}}
		receipt := driver.Record{Partition: p, Receipt: true, Message: driver.Message{ID: b.ID, ReadAt: now, ExpiresAt: b.ExpiresAt}}
		if err := h.PutForeign(ctx, foreign, []driver.Counter{{Partition: p, Published: 1}}); err != nil {
			t.Fatal(err)
		}
		if err := h.PutForeign(ctx, receipt, []driver.Counter{{Partition: p, Read: 1}}); err != nil {
			t.Fatal(err)
		}
		ids := []string{own.Message.ID, foreign.Message.ID, b.ID, doomed.Message.ID}
		for _, id := range ids {
			setAttr(t, c, table, p, driver.MessageSK(id), "SET counted = :v", v)
		}
		for _, id := range ids {
			if _, err := ib.Get(ctx, u, id); err != nil {
				t.Errorf("%s: Get(%s): %v", what, id, err)
			}
		}
		wantAgree(t, ib, u, what)
		recs, err := store.GetRecords(ctx, []driver.Key{{Partition: p, ID: own.Message.ID}, {Partition: p, ID: foreign.Message.ID}, {Partition: p, ID: b.ID}})
		if err != nil || len(recs) != 3 {
			t.Fatalf("%s: GetRecords: %d, %v", what, len(recs), err)
		}
		for _, r := range recs {
			if r.Counted != 0 {
				t.Errorf("%s: %s read with Counted %04b, want 0 (unknown, or ignored)", what, r.Message.Title, r.Counted)
			}
		}
		for _, id := range ids[:2] {
			if ok, err := ib.MarkRead(ctx, u, id); err != nil || !ok {
				t.Errorf("%s: MarkRead(%s) = %v, %v; want true, nil", what, id, ok, err)
			}
		}
		recs, err = store.GetRecords(ctx, []driver.Key{{Partition: p, ID: own.Message.ID}})
		if err != nil || len(recs) != 1 || recs[0].Counted != driver.MarksKnown|driver.MarkedRead {
			t.Errorf("%s: the library's message after MarkRead: %+v, %v; want counted read", what, recs, err)
		}
		wantAgree(t, ib, u, what+", after the marks")
		if _, err := ib.Recount(ctx, u); err != nil {
			t.Errorf("%s: Recount: %v", what, err)
		}
		wantAgree(t, ib, u, what+", after Recount")
		// Another program sets counted again (Recount rewrote it), then
		// deletes a message of the library's: the stream's REMOVE
		// accounts it.
		setAttr(t, c, table, p, driver.MessageSK(doomed.Message.ID), "SET counted = :v", v)
		deleteItem(t, c, table, p, driver.MessageSK(doomed.Message.ID))
	}
	ib = handleStream(t, store, arn)
	for _, u := range users {
		wantAgree(t, ib, u, u.ID+" after the stream")
	}
}

package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// shortTTL is the TTL of the messages that expire during the test: long
// enough to mark them read first, on a loaded machine too (make test
// beside other tests took over 6 s for it), short enough for DynamoDB
// Local's TTL sweep (about every 10 s) to delete them soon after.
const shortTTL = 12 * time.Second

// expiryWait bounds the wait for DynamoDB Local's TTL deletions, which
// took about 30 s after the expiry in runs loaded and not.
const expiryWait = 90 * time.Second

// messageItems returns the message, broadcast and receipt items of
// partition p, read straight from the table.
func messageItems(t *testing.T, c *dynamodb.Client, table string, p driver.Partition) []map[string]types.AttributeValue {
	t.Helper()
	kc := expression.Key("pk").Equal(expression.Value(p.PK())).And(expression.Key("sk").BeginsWith(driver.MessagePrefix))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		t.Fatalf("build query: %v", err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
	}
	var items []map[string]types.AttributeValue
	for {
		out, err := c.Query(context.Background(), in)
		if err != nil {
			t.Fatalf("query %s: %v", p.PK(), err)
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// rawCounts recounts u's counts from the raw items of u's, the public and
// u's groups' partitions that have not expired, without the Inbox's code: an item with
// headers is a message (published), an item with readat in u's partition
// is read, and taxonomy.category is its category.
func rawCounts(t *testing.T, c *dynamodb.Client, table string, u driver.User) inbox.Counts {
	t.Helper()
	type pr struct{ published, read int64 }
	sum := map[string]*pr{"": {}}
	now := time.Now().Unix()
	add := func(item map[string]types.AttributeValue, withRead bool) {
		if exp, ok := item["expiredat"].(*types.AttributeValueMemberN); ok {
			if sec, _ := strconv.ParseInt(exp.Value, 10, 64); sec <= now {
				return // expired: List and Counts leave it out
			}
		}
		cats := []string{""}
		if tax, ok := item["taxonomy"].(*types.AttributeValueMemberM); ok {
			if cat, ok := tax.Value["category"].(*types.AttributeValueMemberS); ok && cat.Value != "" {
				cats = append(cats, cat.Value)
			}
		}
		isMsg, isRead := rawKind(item)
		for _, cat := range cats {
			if sum[cat] == nil {
				sum[cat] = &pr{}
			}
			if isMsg {
				sum[cat].published++
			}
			if isRead && withRead {
				sum[cat].read++
			}
		}
	}
	user := driver.Partition{Tenant: u.Scope.Tenant, Inbox: u.Scope.Inbox, User: u.ID}
	public := driver.Partition{Tenant: u.Scope.Tenant, Inbox: u.Scope.Inbox, Group: driver.PublicGroup}
	for _, item := range messageItems(t, c, table, user) {
		add(item, true)
	}
	for _, item := range messageItems(t, c, table, public) {
		add(item, false)
	}
	for _, g := range u.Groups {
		for _, item := range messageItems(t, c, table, driver.Partition{Tenant: u.Scope.Tenant, Inbox: u.Scope.Inbox, Group: g}) {
			add(item, false)
		}
	}
	out := inbox.Counts{Categories: map[string]inbox.Tally{}}
	for cat, p := range sum {
		tl := tally(p.published, p.read)
		if cat == "" {
			out.Tally = tl
		} else {
			out.Categories[cat] = tl
		}
	}
	return out
}

// tally returns the Tally of total messages, read of them read, of a user
// with no seen watermark: every unread one unseen.
func tally(total, read int64) inbox.Tally {
	return inbox.Tally{Total: total, Read: read, Unread: max(total-read, 0), Unseen: max(total-read, 0)}
}

// sameCounts compares counts, a category missing on one side counting as
// zero (a stats record stays at zero after its messages are gone).
func sameCounts(a, b inbox.Counts) string {
	norm := func(c inbox.Counts) map[string]inbox.Tally {
		m := map[string]inbox.Tally{"*": c.Tally}
		for k, v := range c.Categories {
			if v != (inbox.Tally{}) {
				m[k] = v
			}
		}
		return m
	}
	return cmp.Diff(norm(a), norm(b))
}

// wantCounts checks u's Counts against want and against a raw recount of
// the items that have not expired.
func wantCounts(t *testing.T, ib *inbox.Inbox, c *dynamodb.Client, table string, u driver.User, want inbox.Counts) {
	t.Helper()
	for _, d := range countsDiffs(t, ib, c, table, u, want) {
		t.Error(d)
	}
}

// countsDiffs returns how u's Counts differ from want and from a raw
// recount of the items that have not expired.
func countsDiffs(t *testing.T, ib *inbox.Inbox, c *dynamodb.Client, table string, u driver.User, want inbox.Counts) []string {
	t.Helper()
	got, err := ib.Counts(context.Background(), u)
	if err != nil {
		t.Fatalf("Counts(%s): %v", u.ID, err)
	}
	var diffs []string
	if diff := sameCounts(want, got); diff != "" {
		diffs = append(diffs, fmt.Sprintf("Counts(%s) (-want +got):\n%s", u.ID, diff))
	}
	if diff := sameCounts(rawCounts(t, c, table, u), got); diff != "" {
		diffs = append(diffs, fmt.Sprintf("Counts(%s) against a recount of the items (-recount +counts):\n%s", u.ID, diff))
	}
	return diffs
}

func counts(total, read int64, cats map[string][2]int64) inbox.Counts {
	c := inbox.Counts{Tally: tally(total, read), Categories: map[string]inbox.Tally{}}
	for k, v := range cats {
		c.Categories[k] = tally(v[0], v[1])
	}
	return c
}

// pump polls r into h until a Poll delivers nothing (the handler's own
// writes reach the stream too, so the first Poll is rarely the last).
func pump(t *testing.T, r *dynamo.StreamReader, h dynamo.StreamHandler) {
	t.Helper()
	for range 10 {
		n, err := r.Poll(context.Background(), h)
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("the stream did not settle in 10 Polls")
}

// keeping wraps h, keeping every batch it was handed and failing the test
// on any batch item failure.
func keeping(t *testing.T, h dynamo.StreamHandler, kept *[]events.DynamoDBEvent) dynamo.StreamHandler {
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		*kept = append(*kept, ev)
		resp, err := h(ctx, ev)
		if len(resp.BatchItemFailures) > 0 {
			t.Errorf("handler reported failures: %+v", resp.BatchItemFailures)
		}
		return resp, err
	}
}

// eventKey is what TestExpiryTTLDeletionsBringCountsDownExactlyOnce
// compares of an event.
type eventKey struct {
	Kind      inbox.EventKind
	Partition string
	ID        string
}

// TestExpiryTTLDeletionsBringCountsDownExactlyOnce: direct, broadcast and
// group messages, some read, expire; Counts leave them out at once, before
// DynamoDB Local's TTL deletes them and before the stream is read; the
// stream then brings the stats records down exactly once, however often it
// is delivered, and every change made one event per delivery.
func TestExpiryTTLDeletionsBringCountsDownExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddblocal.Client(t)
	// DynamoDB Local's TTL deletes nothing in a table with a secondary
	// index, local or global, so this table has none of the indexes.
	noIndex := []dynamo.Option{dynamo.WithUnreadIndex(""), dynamo.WithThreadIndex(""), dynamo.WithScheduledIndex("")}
	table, arn := ddblocal.NewTable(t, c, noIndex...)
	var mu sync.Mutex
	var evs []inbox.Event
	collect := func(_ context.Context, e inbox.Event) error {
		mu.Lock()
		defer mu.Unlock()
		evs = append(evs, e)
		return nil
	}
	// The real clock: DynamoDB Local's TTL runs on it.
	ib := inbox.New(dynamo.New(c, table, noIndex...), inbox.WithEvents(collect))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	ann, bob := scope.User("ann").InGroups("eu"), scope.User("bob").InGroups("eu")

	publish := func(users []string, cat string, ttl time.Duration) string {
		t.Helper()
		res, err := ib.Publish(ctx, scope, users, inbox.Draft{Title: "direct", Category: cat, TTL: ttl})
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		return res.Message.ID
	}
	broadcast := func(group, cat string, ttl time.Duration) string {
		t.Helper()
		m, err := ib.BroadcastGroup(ctx, scope, group, inbox.Draft{Title: "broadcast", Category: cat, TTL: ttl, Body: map[string]any{"n": 1.5, "tags": []any{"a", true, nil}}})
		if err != nil {
			t.Fatalf("Broadcast: %v", err)
		}
		return m.ID
	}
	read := func(u driver.User, id string) {
		t.Helper()
		if ok, err := ib.MarkRead(ctx, u, id); err != nil || !ok {
			t.Fatalf("MarkRead(%s, %s) = %v, %v", u.ID, id, ok, err)
		}
	}
	// d: direct, b: broadcast, g: to group eu; short ones expire during
	// the test.
	published := time.Now()
	dShortOps := publish([]string{"ann", "bob"}, "ops", shortTTL)
	publish([]string{"ann"}, "", shortTTL)
	dLongOps := publish([]string{"ann", "bob"}, "ops", 0)
	dLongBilling := publish([]string{"bob"}, "billing", 0)
	bShortOps := broadcast(driver.PublicGroup, "ops", shortTTL)
	bShortPlain := broadcast(driver.PublicGroup, "", shortTTL)
	bLongBilling := broadcast(driver.PublicGroup, "billing", 0)
	gShortOps := broadcast("eu", "ops", shortTTL)
	gLongBilling := broadcast("eu", "billing", 0)
	lastPublished := time.Now()
	read(ann, dShortOps)    // direct, expires
	read(ann, bShortOps)    // receipt, expires with its broadcast
	read(ann, dLongOps)     // direct, stays
	read(ann, bLongBilling) // receipt, stays
	read(ann, gShortOps)    // receipt, expires with its group message
	read(bob, bShortPlain)  // receipt, expires
	read(bob, dLongBilling) // direct, stays
	read(bob, gLongBilling) // receipt, stays

	// The counts before the expiry, if they were read before it: the
	// short-lived ones expire shortTTL after the second of their
	// publish, so no sooner than shortTTL-1s after published. A loaded
	// machine (make test, beside other tests) may read them later: then
	// they are not checked, the counts after the expiry are.
	before := slices.Concat(
		countsDiffs(t, ib, c, table, ann, counts(8, 5, map[string][2]int64{"ops": {4, 4}, "billing": {2, 1}})),
		countsDiffs(t, ib, c, table, bob, counts(8, 3, map[string][2]int64{"ops": {4, 0}, "billing": {3, 2}})))
	if took := time.Since(published); took < shortTTL-time.Second {
		for _, d := range before {
			t.Error(d)
		}
	} else {
		t.Logf("publishing, marking and reading the counts took %v, past the first expiry (a short TTL of %v): the counts before the expiry are not checked", took, shortTTL)
	}

	afterAnn := counts(3, 2, map[string][2]int64{"ops": {1, 1}, "billing": {2, 1}})
	afterBob := counts(4, 2, map[string][2]int64{"ops": {1, 0}, "billing": {3, 2}})
	parts := []driver.Partition{
		{Tenant: "acme", Inbox: "alerts", User: "ann"},
		{Tenant: "acme", Inbox: "alerts", User: "bob"},
		{Tenant: "acme", Inbox: "alerts", Group: driver.PublicGroup},
		{Tenant: "acme", Inbox: "alerts", Group: "eu"},
	}
	seedCounters := map[string]map[string]rawTally{}
	for _, p := range parts {
		seedCounters[p.PK()] = rawCounters(t, c, table, p.PK())
	}

	// The moment the short-lived items expire, Counts leave them out:
	// before DynamoDB deletes them, and before the stream is accounted.
	time.Sleep(time.Until(lastPublished.Add(shortTTL + time.Second)))
	left := func() int {
		n := 0
		for _, p := range parts {
			n += len(messageItems(t, c, table, p))
		}
		return n
	}
	if n := left(); n == 16 {
		t.Logf("all 16 message items stand after their expiry")
	} else {
		t.Logf("%d of 16 message items stand after their expiry (DynamoDB Local's TTL was quick)", n)
	}
	wantCounts(t, ib, c, table, ann, afterAnn)
	wantCounts(t, ib, c, table, bob, afterBob)

	// Wait for DynamoDB Local's TTL to delete the 9 short-lived items: 2+1
	// direct copies, 2 broadcasts, 1 group message, 3 receipts. 7 stay.
	start := time.Now()
	for n := left(); n != 7; n = left() {
		if time.Since(start) > expiryWait {
			t.Fatalf("after %v, %d message items are left, want 7", expiryWait, n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("DynamoDB Local's TTL deleted the items %v after they were published with a TTL of %v",
		time.Since(published).Round(time.Second), shortTTL)

	// The items are gone, their removal not yet accounted: the stats
	// records are as they were, and Counts are still exact.
	for _, p := range parts {
		if diff := cmp.Diff(seedCounters[p.PK()], rawCounters(t, c, table, p.PK()), cmp.AllowUnexported(rawTally{})); diff != "" {
			t.Errorf("stats of %s changed before the stream was read (-before +now):\n%s", p.PK(), diff)
		}
	}
	wantCounts(t, ib, c, table, ann, afterAnn)
	wantCounts(t, ib, c, table, bob, afterBob)

	var kept []events.DynamoDBEvent
	pump(t, dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn), keeping(t, ib.StreamHandler, &kept))

	wantCounts(t, ib, c, table, ann, afterAnn)
	wantCounts(t, ib, c, table, bob, afterBob)
	// Now the stats records are what the seed says: a recount of the items.
	for _, p := range parts {
		if diff := cmp.Diff(nonZero(rawRecount(t, c, table, p.PK())), nonZero(rawCounters(t, c, table, p.PK())), cmp.AllowUnexported(rawTally{})); diff != "" {
			t.Errorf("stats of %s after the stream differ from a recount (-recount +stats):\n%s", p.PK(), diff)
		}
	}

	// The TTL deletions reached the handler as AWS sends them.
	var ttlRemovals []string
	for _, ev := range kept {
		for _, r := range ev.Records {
			if r.EventName != "REMOVE" {
				continue
			}
			// The accounting deletes ledger entries itself (kind LE).
			if r.Change.OldImage["kind"].String() != "UM" {
				continue
			}
			ttlRemovals = append(ttlRemovals, r.Change.Keys["pk"].String()+" "+r.Change.Keys["sk"].String())
			if r.UserIdentity == nil || r.UserIdentity.Type != "Service" || r.UserIdentity.PrincipalID != "dynamodb.amazonaws.com" {
				t.Errorf("TTL removal %v has userIdentity %+v", r.Change.Keys, r.UserIdentity)
			}
		}
	}
	sort.Strings(ttlRemovals)
	if len(ttlRemovals) != 9 {
		t.Errorf("%d TTL removals of kind UM reached the handler, want 9: %v", len(ttlRemovals), ttlRemovals)
	}

	// Every change made one event: a created per direct copy and per
	// broadcast or group message, a read per read, an expired per message
	// (none per receipt).
	annP, bobP, pub, eu := parts[0].PK(), parts[1].PK(), parts[2].PK(), parts[3].PK()
	want := []eventKey{
		{inbox.EventCreated, annP, dShortOps}, {inbox.EventCreated, bobP, dShortOps},
		{inbox.EventCreated, annP, dLongOps}, {inbox.EventCreated, bobP, dLongOps},
		{inbox.EventCreated, bobP, dLongBilling},
		{inbox.EventCreated, pub, bShortOps}, {inbox.EventCreated, pub, bShortPlain}, {inbox.EventCreated, pub, bLongBilling},
		{inbox.EventCreated, eu, gShortOps}, {inbox.EventCreated, eu, gLongBilling},
		{inbox.EventRead, annP, dShortOps}, {inbox.EventRead, annP, bShortOps}, {inbox.EventRead, annP, dLongOps},
		{inbox.EventRead, annP, bLongBilling}, {inbox.EventRead, annP, gShortOps},
		{inbox.EventRead, bobP, bShortPlain}, {inbox.EventRead, bobP, dLongBilling}, {inbox.EventRead, bobP, gLongBilling},
		{inbox.EventExpired, annP, dShortOps}, {inbox.EventExpired, bobP, dShortOps},
		{inbox.EventExpired, pub, bShortOps}, {inbox.EventExpired, pub, bShortPlain}, {inbox.EventExpired, eu, gShortOps},
	}
	var plain string // the ID of ann's uncategorised short message
	for _, e := range evs {
		if e.Kind == inbox.EventCreated && e.Partition.PK() == annP && e.Message.Category == "" {
			plain = e.Message.ID
		}
	}
	want = append(want, eventKey{inbox.EventCreated, annP, plain}, eventKey{inbox.EventExpired, annP, plain})
	first := wantEvents(t, "the first delivery", evs, want)

	// An event's message is what the stores read: Get of a message that
	// stands returns what its created event carried.
	for _, e := range evs {
		if e.Kind != inbox.EventCreated {
			continue
		}
		u := ann
		if e.Partition.User == "bob" {
			u = bob
		}
		got, err := ib.Get(ctx, u, e.Message.ID)
		if errors.Is(err, driver.ErrNotFound) {
			continue // expired
		}
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		got.ReadAt = time.Time{}
		if diff := cmp.Diff(got, e.Message); diff != "" {
			t.Errorf("created event of %s differs from Get (-get +event):\n%s", e.Message.ID, diff)
		}
	}

	// Delivered again, the same records change nothing: as the kept events,
	// and as a new reader replays them from TRIM_HORIZON. Their events
	// come again, with the same IDs.
	evs = nil
	for _, ev := range kept {
		resp, err := ib.StreamHandler(ctx, ev)
		if err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("redelivery: %+v, %v", resp.BatchItemFailures, err)
		}
	}
	if again := wantEvents(t, "redelivery", evs, want); !cmp.Equal(first, again) {
		t.Errorf("redelivered events have other IDs:\n%s", cmp.Diff(first, again))
	}
	var again []events.DynamoDBEvent
	pump(t, dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn), keeping(t, ib.StreamHandler, &again))
	if len(again) == 0 {
		t.Fatal("a fresh reader delivered nothing")
	}
	wantCounts(t, ib, c, table, ann, afterAnn)
	wantCounts(t, ib, c, table, bob, afterBob)
}

// wantEvents checks that evs are want, each once, and returns their IDs
// by key.
func wantEvents(t *testing.T, what string, evs []inbox.Event, want []eventKey) map[eventKey]string {
	t.Helper()
	ids := map[eventKey]string{}
	var got []eventKey
	for _, e := range evs {
		k := eventKey{e.Kind, e.Partition.PK(), e.Message.ID}
		got = append(got, k)
		ids[k] = e.ID
	}
	less := func(a, b eventKey) bool { return fmt.Sprint(a) < fmt.Sprint(b) }
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("%s: events (-want +got):\n%s", what, diff)
	}
	return ids
}

func TestExpiryFailedRemovalIsRedeliveredAndAppliedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	ib := inbox.New(dynamo.New(c, table))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	annPart := driver.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}

	var ids []string
	for range 3 {
		res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "direct", Category: "ops"})
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		ids = append(ids, res.Message.ID)
	}
	if ok, err := ib.MarkRead(ctx, ann, ids[0]); err != nil || !ok {
		t.Fatalf("MarkRead = %v, %v", ok, err)
	}
	// A kind UM item whose sort key is no message ID: the handler cannot
	// account its removal and reports it, every time.
	bad := map[string]types.AttributeValue{
		"pk":   &types.AttributeValueMemberS{Value: annPart.PK()},
		"sk":   &types.AttributeValueMemberS{Value: driver.MessageSK("bad")},
		"kind": &types.AttributeValueMemberS{Value: "UM"},
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: bad}); err != nil {
		t.Fatalf("put: %v", err)
	}
	del := func(sk string) {
		t.Helper()
		_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: annPart.PK()},
			"sk": &types.AttributeValueMemberS{Value: sk},
		}})
		if err != nil {
			t.Fatalf("delete %s: %v", sk, err)
		}
	}
	// Deleted by a user, in this order: the read message, the bad item,
	// an unread message.
	del(driver.MessageSK(ids[0]))
	del(driver.MessageSK("bad"))
	del(driver.MessageSK(ids[1]))

	r := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn)
	var failed []string
	h := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		resp, err := ib.StreamHandler(ctx, ev)
		for _, f := range resp.BatchItemFailures {
			for _, rec := range ev.Records {
				if rec.Change.SequenceNumber == f.ItemIdentifier {
					failed = append(failed, rec.Change.Keys["sk"].String())
				}
			}
		}
		return resp, err
	}
	for poll := 1; poll <= 3; poll++ {
		failed = nil
		if _, err := r.Poll(ctx, h); err != nil {
			t.Fatalf("Poll %d: %v", poll, err)
		}
		if diff := cmp.Diff([]string{driver.MessageSK("bad")}, failed); diff != "" {
			t.Fatalf("Poll %d: failed records (-want +got):\n%s", poll, diff)
		}
		// The read message's removal is applied, once; the unread one's
		// came after the failure in the same batch and was applied too,
		// and is applied again with each redelivery, to no effect.
		wantCounts(t, ib, c, table, ann, counts(1, 0, map[string][2]int64{"ops": {1, 0}}))
	}
}

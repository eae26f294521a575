package inbox_test

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
)

var scope = inbox.Scope{Tenant: "acme", Inbox: "alerts"}

// s, n and m build stream attribute values in the shape DynamoDB sends.
func s(v string) events.DynamoDBAttributeValue { return events.NewStringAttribute(v) }
func n(v string) events.DynamoDBAttributeValue { return events.NewNumberAttribute(v) }
func m(kv map[string]events.DynamoDBAttributeValue) events.DynamoDBAttributeValue {
	return events.NewMapAttribute(kv)
}

// messageImage is the old image of a message item as seeds 000/001 lay it out.
func messageImage(user, audience, category string, read bool) map[string]events.DynamoDBAttributeValue {
	img := map[string]events.DynamoDBAttributeValue{
		"pk":   s("t#acmeU#" + user + "#alerts"),
		"sk":   s("m#01ARZ3NDEKTSV4RRFFQ69G5FAV"),
		"kind": s("UM"),
		"headers": m(map[string]events.DynamoDBAttributeValue{
			"id":             s("01ARZ3NDEKTSV4RRFFQ69G5FAV"),
			"host_system_id": events.NewNullAttribute(),
			"sender":         s("ops"),
			"audiences":      m(map[string]events.DynamoDBAttributeValue{"kind": s(audience), "label": s("")}),
			"received":       n("1700000000"),
			"delivered":      n("1700000000"),
		}),
		"message":    m(map[string]events.DynamoDBAttributeValue{"title": s("hi"), "body": s("b"), "cta_uri": events.NewNullAttribute()}),
		"expiredat":  n("1700000100"),
		"tenant_key": s("acme"),
		"inbox_key":  s("alerts"),
		"uid":        s(user),
	}
	if category != "" {
		img["taxonomy"] = m(map[string]events.DynamoDBAttributeValue{"category": s(category)})
	}
	if read {
		img["readat"] = n("1700000050")
	}
	return img
}

// receiptImage is the old image of a read receipt: no headers.
func receiptImage(user, category string) map[string]events.DynamoDBAttributeValue {
	img := map[string]events.DynamoDBAttributeValue{
		"pk": s("t#acmeU#" + user + "#alerts"), "sk": s("m#01ARZ3NDEKTSV4RRFFQ69G5FAV"),
		"kind": s("UM"), "readat": n("1700000050"), "expiredat": n("1700000100"),
		"tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s(user),
	}
	if category != "" {
		img["taxonomy"] = m(map[string]events.DynamoDBAttributeValue{"category": s(category)})
	}
	return img
}

func record(id, name string, old map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{
		EventID:   id,
		EventName: name,
		Change: events.DynamoDBStreamRecord{
			OldImage:       old,
			SequenceNumber: "seq-" + id,
			StreamViewType: "OLD_IMAGE",
		},
		UserIdentity: &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"},
	}
}

// counters returns every counter of the user "ann" and the public partition.
func counters(t *testing.T, st inbox.Store) []inbox.Counter {
	t.Helper()
	var all []inbox.Counter
	for _, p := range []inbox.Partition{{Tenant: "acme", Inbox: "alerts", User: "ann"}, {Tenant: "acme", Inbox: "alerts", User: inbox.PublicUser}} {
		cs, err := st.Counters(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, cs...)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Partition != all[j].Partition {
			return all[i].Partition.User < all[j].Partition.User
		}
		return all[i].Category < all[j].Category
	})
	return all
}

func TestStreamHandlerAccounting(t *testing.T) {
	ann := inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	pub := inbox.Partition{Tenant: "acme", Inbox: "alerts", User: inbox.PublicUser}
	tests := []struct {
		name string
		rec  events.DynamoDBEventRecord
		want []inbox.Counter
	}{
		{"unread user message", record("e1", "REMOVE", messageImage("ann", "users", "billing", false)), []inbox.Counter{
			{Partition: ann, Published: -1}, {Partition: ann, Category: "billing", Published: -1}}},
		{"read user message", record("e2", "REMOVE", messageImage("ann", "users", "billing", true)), []inbox.Counter{
			{Partition: ann, Published: -1, Read: -1}, {Partition: ann, Category: "billing", Published: -1, Read: -1}}},
		{"uncategorised message", record("e3", "REMOVE", messageImage("ann", "users", "", true)), []inbox.Counter{
			{Partition: ann, Published: -1, Read: -1}}},
		{"receipt", record("e4", "REMOVE", receiptImage("ann", "news")), []inbox.Counter{
			{Partition: ann, Read: -1}, {Partition: ann, Category: "news", Read: -1}}},
		{"public message", record("e5", "REMOVE", messageImage(inbox.PublicUser, "everyone", "news", false)), []inbox.Counter{
			{Partition: pub, Published: -1}, {Partition: pub, Category: "news", Published: -1}}},
		{"stats item", record("e6", "REMOVE", map[string]events.DynamoDBAttributeValue{
			"kind": s("US"), "published": n("3"), "tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s("ann")}), nil},
		{"tenant settings", record("e7", "REMOVE", map[string]events.DynamoDBAttributeValue{"kind": s("TS"), "ttl": s("30d")}), nil},
		{"insert", record("e8", "INSERT", messageImage("ann", "users", "billing", true)), nil},
		{"modify", record("e9", "MODIFY", messageImage("ann", "users", "billing", true)), nil},
		{"manual delete, no user identity", func() events.DynamoDBEventRecord {
			r := record("e10", "REMOVE", messageImage("ann", "users", "", false))
			r.UserIdentity = nil
			return r
		}(), []inbox.Counter{{Partition: ann, Published: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memstore.New()
			ib := inbox.New(st)
			resp, err := ib.StreamHandler(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{tt.rec}})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("StreamHandler = %+v, %v", resp, err)
			}
			if diff := cmp.Diff(tt.want, counters(t, st)); diff != "" {
				t.Errorf("counters (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamHandlerRedelivery(t *testing.T) {
	st := memstore.New()
	ib := inbox.New(st)
	rec := record("once", "REMOVE", messageImage("ann", "users", "billing", true))
	for i := 0; i < 5; i++ {
		resp, err := ib.StreamHandler(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec, rec}})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("delivery %d: %+v, %v", i, resp, err)
		}
	}
	ann := inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	want := []inbox.Counter{{Partition: ann, Published: -1, Read: -1}, {Partition: ann, Category: "billing", Published: -1, Read: -1}}
	if diff := cmp.Diff(want, counters(t, st)); diff != "" {
		t.Errorf("after 10 deliveries (-want +got):\n%s", diff)
	}
}

// failingStore fails ApplyRemoval for one removal ID, as a store outage
// would for one record.
type failingStore struct {
	inbox.Store
	failID string
}

var errOutage = errors.New("store unavailable")

func (f failingStore) ApplyRemoval(ctx context.Context, r inbox.Removal) (bool, error) {
	if r.ID == f.failID {
		return false, errOutage
	}
	return f.Store.ApplyRemoval(ctx, r)
}

func TestStreamHandlerPartialFailure(t *testing.T) {
	st := memstore.New()
	ib := inbox.New(failingStore{Store: st, failID: "e3"}, inbox.WithConcurrency(3))
	broken := messageImage("ann", "users", "", false)
	delete(broken, "tenant_key")
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		record("e1", "REMOVE", broken),
		record("e2", "REMOVE", messageImage("ann", "users", "", false)),
		record("e3", "REMOVE", messageImage("ann", "users", "", false)),
	}}
	resp, err := ib.StreamHandler(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	want := []events.DynamoDBBatchItemFailure{{ItemIdentifier: "seq-e1"}, {ItemIdentifier: "seq-e3"}}
	if diff := cmp.Diff(want, resp.BatchItemFailures); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	ann := inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	if diff := cmp.Diff([]inbox.Counter{{Partition: ann, Published: -1}}, counters(t, st)); diff != "" {
		t.Errorf("only e2 applies (-want +got):\n%s", diff)
	}
}

// TestExpiryMatchesStream checks that the in-memory store's own expiry and
// the stream handler account a removal the same way.
func TestExpiryMatchesStream(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st := memstore.New(memstore.WithClock(clock))
	ib := inbox.New(st, inbox.WithClock(clock))
	ctx := context.Background()
	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "x", Category: "billing", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	page, err := ib.List(ctx, scope.User("ann"), inbox.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib.MarkRead(ctx, scope.User("ann"), page.Messages[0].ID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	c, err := ib.Counts(ctx, scope.User("ann"))
	if err != nil {
		t.Fatal(err)
	}
	want := inbox.Counts{Categories: map[string]inbox.Tally{"billing": {}}}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("counts after expiry (-want +got):\n%s", diff)
	}
}

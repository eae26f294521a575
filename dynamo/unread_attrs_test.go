package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
)

// TestUnreadAttributesOfAnyType: the attributes the Store writes for its
// indexes and never reads (unread, tsk, spk, ssk), and a message's group
// (a receipt's names its broadcast's group), may hold anything on a table
// without those indexes, where DynamoDB takes any type (with them it
// refuses all but a string): another program's boolean, map, list, set or
// binary there, on its own and the library's messages and receipts,
// fails no Get, List or Counts, and the records read as they did without
// it, as the stream handler reads them. The marks and Recount then
// write the library's items anew, and the table's stream, handed to the
// handler with events on, fails no record, after which Counts still
// agrees with List.
func TestUnreadAttributesOfAnyType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	noIndexes := []dynamo.Option{dynamo.WithUnreadIndex(""), dynamo.WithThreadIndex(""), dynamo.WithScheduledIndex("")}
	h, arn := newForeignHarness(t, noIndexes...)
	c, table, store := h.raw, h.table, h.Store
	ib := inbox.New(store, inbox.WithSharedCache(0))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	u := scope.User("ann")
	p := u.Partition()

	own, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "the library's", Category: "ops", Thread: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	read, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "read by the library", Category: "news", Thread: "t2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib.MarkRead(ctx, u, read.ID); err != nil {
		t.Fatal(err)
	}
	foreign, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "read by another program"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	expires := now.Add(24 * time.Hour)
	otherID := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	for _, r := range []struct {
		rec    driver.Record
		deltas []driver.Counter
	}{
		{driver.Record{Partition: p, Receipt: true, Message: driver.Message{ID: foreign.ID, ReadAt: now, ExpiresAt: foreign.ExpiresAt}}, []driver.Counter{{Partition: p, Read: 1}}},
		{driver.Record{Partition: p, Message: driver.Message{ID: otherID, Sender: "ops", Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{"ann"}}, Category: "ops", ExpiresAt: expires}},
			[]driver.Counter{{Partition: p, Published: 1}, {Partition: p, Category: "ops", Published: 1}}},
	} {
		if err := h.PutForeign(ctx, r.rec, r.deltas); err != nil {
			t.Fatal(err)
		}
	}
	messages := []string{own.Message.ID, otherID}
	receipts := []string{read.ID, foreign.ID}
	keys := []driver.Key{{Partition: p, ID: own.Message.ID}, {Partition: p, ID: otherID}, {Partition: p, ID: read.ID}, {Partition: p, ID: foreign.ID}}
	before, err := store.GetRecords(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}

	for _, v := range []struct {
		name string
		v    types.AttributeValue
	}{
		{"true", &types.AttributeValueMemberBOOL{Value: true}},
		{"a map", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": &types.AttributeValueMemberS{Value: "y"}}}},
		{"a list", &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "x"}}}},
		{"a string set", &types.AttributeValueMemberSS{Value: []string{"x"}}},
		{"a number set", &types.AttributeValueMemberNS{Value: []string{"7"}}},
		{"binary", &types.AttributeValueMemberB{Value: []byte("x")}},
	} {
		for _, id := range append(messages, receipts...) {
			for _, attr := range []string{"unread", "tsk", "spk", "ssk"} {
				setNamed(t, c, table, p, driver.MessageSK(id), attr, v.v)
			}
		}
		for _, id := range messages {
			setNamed(t, c, table, p, driver.MessageSK(id), "group", v.v)
		}
		got, err := store.GetRecords(ctx, keys)
		if err != nil {
			t.Errorf("%s there: GetRecords: %v", v.name, err)
			continue
		}
		if diff := cmp.Diff(before, got); diff != "" {
			t.Errorf("%s there: records (-without +with):\n%s", v.name, diff)
		}
		if err := countsVsList(ctx, ib, u); err != nil {
			t.Errorf("%s there: %v", v.name, err)
		}
	}
	for _, id := range append(messages, receipts...) {
		if _, err := ib.Archive(ctx, u, id); err != nil {
			t.Errorf("Archive(%s): %v", id, err)
		}
	}
	if _, err := ib.Recount(ctx, u); err != nil {
		t.Errorf("Recount: %v", err)
	}
	if err := countsVsList(ctx, ib, u); err != nil {
		t.Errorf("after the marks and Recount: %v", err)
	}
	ib = handleStream(t, store, arn)
	if err := countsVsList(ctx, ib, u); err != nil {
		t.Errorf("after the stream: %v", err)
	}
}

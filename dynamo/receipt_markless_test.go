package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// TestMarklessReceipt: a receipt without marks (the seeds' unread receipt,
// readat NULL), another program's or the library's whose read another
// program wrote so, is recounted and marked: Recount and MarkRead do not
// fail (they kept failing with ErrConflict), Counts agrees with List, and
// the table's stream fails no record.
func TestMarklessReceipt(t *testing.T) {
	ctx := context.Background()
	h, arn := newForeignHarness(t)
	c, table, store := h.raw, h.table, h.Store
	ib := inbox.New(store, inbox.WithSharedCache(0))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	u := scope.User("ann")
	p := u.Partition()
	own, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "read by the library", Category: "news"})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "read by another program"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib.MarkRead(ctx, u, own.ID); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	receipt := driver.Record{Partition: p, Receipt: true, Message: driver.Message{ID: foreign.ID, ReadAt: now, ExpiresAt: foreign.ExpiresAt}}
	if err := h.PutForeign(ctx, receipt, []driver.Counter{{Partition: p, Read: 1}}); err != nil {
		t.Fatal(err)
	}
	// Another program writes both unread as the seeds do, counting it.
	null := &types.AttributeValueMemberNULL{Value: true}
	for _, id := range []string{own.ID, foreign.ID} {
		setAttr(t, c, table, p, driver.MessageSK(id), "SET readat = :v", null)
	}
	if err := h.addForeign(ctx, []driver.Counter{{Partition: p, Read: -2}, {Partition: p, Category: "news", Read: -1}}); err != nil {
		t.Fatal(err)
	}
	if err := countsVsList(ctx, ib, u); err != nil {
		t.Errorf("unread by another program: %v", err)
	}
	if _, err := ib.Recount(ctx, u); err != nil {
		t.Errorf("Recount: %v", err)
	}
	if err := countsVsList(ctx, ib, u); err != nil {
		t.Errorf("after Recount: %v", err)
	}
	for _, id := range []string{own.ID, foreign.ID} {
		if ok, err := ib.MarkRead(ctx, u, id); err != nil || !ok {
			t.Errorf("MarkRead(%s) = %v, %v; want it marked", id, ok, err)
		}
	}
	if err := countsVsList(ctx, ib, u); err != nil {
		t.Errorf("after MarkRead: %v", err)
	}
	if c, err := ib.Counts(ctx, u); err != nil || c.Read != 2 {
		t.Errorf("Counts = %+v, %v; want both read", c, err)
	}
	// Another program writes it unread again: the stream handler takes
	// out what the seeds do not count (the category's read is theirs).
	setAttr(t, c, table, p, driver.MessageSK(own.ID), "SET readat = :v", null)
	if err := h.addForeign(ctx, []driver.Counter{{Partition: p, Read: -1}, {Partition: p, Category: "news", Read: -1}}); err != nil {
		t.Fatal(err)
	}
	ib = handleStream(t, store, arn)
	if err := countsVsList(ctx, ib, u); err != nil {
		t.Errorf("after the stream: %v", err)
	}
}

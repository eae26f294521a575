package inbox_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// TestStreamAdoptsForeignBroadcasts: another program's broadcast (no
// ledger entry, counted by that program's ADD to published) is adopted
// when its INSERT reaches the stream handler, with or without events, so
// that Counts counts it out the moment it expires, as List hides it,
// rather than when TTL deletes it and the stream accounts the deletion.
func TestStreamAdoptsForeignBroadcasts(t *testing.T) {
	for _, withEvents := range []bool{false, true} {
		t.Run("events="+strconv.FormatBool(withEvents), func(t *testing.T) {
			ctx := context.Background()
			clock := storetest.NewClock(time.Unix(1700000000, 0).UTC())
			st := memstore.New(memstore.WithClock(clock.Now), memstore.WithStreamLag())
			var opts []inbox.Option
			if withEvents {
				opts = append(opts, inbox.WithEvents(func(context.Context, inbox.Event) error { return nil }))
			}
			ib := inbox.New(st, append(opts, inbox.WithClock(clock.Now), inbox.WithSharedCache(0))...)
			pub := inbox.Partition{Tenant: scope.Tenant, Inbox: scope.Inbox, Group: inbox.PublicGroup}
			rec := driver.Record{Partition: pub, Message: inbox.Message{ID: imageID, Audience: inbox.Audience{Kind: inbox.AudienceEveryone},
				Title: "hi", Body: "b", Sender: "ops", ReceivedAt: clock.Now(), DeliveredAt: clock.Now(), ExpiresAt: time.Unix(1700000100, 0).UTC()}}
			if err := st.PutForeign(ctx, rec, []driver.Counter{{Partition: pub, Published: 1}}); err != nil {
				t.Fatal(err)
			}
			img := map[string]events.DynamoDBAttributeValue{
				"pk": s(pub.PK()), "sk": s("m#" + imageID), "kind": s("UM"),
				"headers": m(map[string]events.DynamoDBAttributeValue{
					"id": s(imageID), "sender": s("ops"), "received": n("1700000000"), "delivered": n("1700000000"),
					"audiences": m(map[string]events.DynamoDBAttributeValue{"kind": s("everyone"), "label": s("")}),
				}),
				"message":   m(map[string]events.DynamoDBAttributeValue{"title": s("hi"), "body": s("b")}),
				"expiredat": n("1700000100"), "tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s(inbox.PublicGroup),
			}
			if failed := handle(t, ib, change("ins", "INSERT", nil, img)); len(failed) != 0 {
				t.Fatalf("INSERT failed: %v", failed)
			}
			ann := scope.User("ann")
			if c := countsAgree(t, ib, ann, "before expiry"); c.Total != 1 {
				t.Errorf("Counts.Total %d before expiry, want 1", c.Total)
			}
			clock.Advance(2 * time.Minute) // expired; its removal waits in the stream
			if c := countsAgree(t, ib, ann, "after expiry, before the stream"); c.Total != 0 {
				t.Errorf("Counts.Total %d after expiry, want 0", c.Total)
			}
			if _, err := st.Deliver(ctx); err != nil {
				t.Fatal(err)
			}
			countsAgree(t, ib, ann, "after the stream")
		})
	}
}

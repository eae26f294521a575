package storetest

import (
	"fmt"
	"time"

	"github.com/stak/inbox"
)

// testHostSystemID: a publish retried with the same HostSystemID reuses the
// first message ID, writes nothing for users who have it (Duplicates) and
// delivers only to new users; a broadcast retried likewise is stored once.
func testHostSystemID(e *env) {
	ann, carol := e.user("ann"), e.user("carol")
	d := inbox.Draft{HostSystemID: "order#42", Title: "Order shipped", Category: "orders", TTL: 48 * time.Hour}
	first := e.publish(d, "ann", "bob")
	if fmt.Sprint(first.Delivered) != "[ann bob]" || first.Duplicates != nil {
		e.t.Fatalf("first publish: delivered %v, duplicates %v", first.Delivered, first.Duplicates)
	}
	id := first.Message.ID
	before := e.snapshot()
	annCounts := e.counts(ann)

	e.clock.Advance(time.Minute)
	again := e.publish(d, "bob", "ann")
	if again.Message.ID != id || again.Delivered != nil || fmt.Sprint(again.Duplicates) != "[bob ann]" {
		e.t.Errorf("retry: ID %s, delivered %v, duplicates %v; want ID %s, none delivered, duplicates [bob ann]", again.Message.ID, again.Delivered, again.Duplicates, id)
	}
	e.wantMessages("a retry's message (bob's copy from the first attempt)", []inbox.Message{copyFor(first.Message, "bob")}, []inbox.Message{again.Message})
	e.wantUnchanged("a retried publish", before)
	e.wantCounts(ann, annCounts)

	e.clock.Advance(time.Minute)
	wider := e.publish(d, "ann", "carol", "bob")
	if wider.Message.ID != id || fmt.Sprint(wider.Delivered) != "[carol]" || fmt.Sprint(wider.Duplicates) != "[ann bob]" {
		e.t.Errorf("retry to more users: ID %s, delivered %v, duplicates %v; want ID %s, delivered [carol], duplicates [ann bob]", wider.Message.ID, wider.Delivered, wider.Duplicates, id)
	}
	e.wantMessages("a wider retry's message (ann's copy from the first attempt)", []inbox.Message{copyFor(first.Message, "ann")}, []inbox.Message{wider.Message})
	for _, u := range []string{"ann", "bob"} {
		e.wantRecords(u+"'s records after a retry to more users", before.Records[e.part(u).PK()], e.records(e.part(u)))
	}
	carolMsgs := e.listAll(carol, inbox.ListOptions{})
	if len(carolMsgs) != 1 || carolMsgs[0].ID != id || !carolMsgs[0].ExpiresAt.Equal(e.clock.Now().Add(48*time.Hour)) {
		e.t.Errorf("carol's feed after the retry: %+v, want the message %s expiring 48h from now", carolMsgs, id)
	}
	e.wantCounts(ann, annCounts)
	e.wantCounts(carol, annCounts)

	// Another host ID is another message; the same host ID in another
	// inbox is independent.
	other := e.publish(inbox.Draft{HostSystemID: "order#43", Title: "Order shipped"}, "ann").Message
	if other.ID == id {
		e.t.Errorf("a publish with another host ID got the same message ID %s", id)
	}
	elsewhere := inbox.Scope{Tenant: e.scope.Tenant, Inbox: "other"}
	if m := e.publishIn(elsewhere, d, "ann").Message; m.ID == id {
		e.t.Errorf("the same host ID in another inbox got the same message ID %s", id)
	}

	// Broadcasts.
	b := e.broadcast(inbox.Draft{HostSystemID: "maintenance-7", Title: "Maintenance", Category: "ops"})
	e.clock.Advance(time.Minute)
	b2 := e.broadcast(inbox.Draft{HostSystemID: "maintenance-7", Title: "Maintenance", Category: "ops"})
	e.wantMessages("a retried broadcast (the first attempt's)", []inbox.Message{b}, []inbox.Message{b2})
	pub := e.records(e.pub())
	if len(pub) != 1 || pub[0].Message.ID != b.ID {
		e.t.Errorf("public partition after a retried broadcast: %d records, want the one broadcast %s", len(pub), b.ID)
	}
	e.wantCounts(carol, inbox.Counts{Tally: tallyOf(2, 0), Categories: map[string]inbox.Tally{"orders": tallyOf(1, 0), "ops": tallyOf(1, 0)}})
}

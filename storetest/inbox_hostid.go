package storetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
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
	e.wantMessages("a retry's message (bob's copy from the first attempt)", []driver.Message{copyFor(first.Message, "bob")}, []driver.Message{again.Message})
	e.wantUnchanged("a retried publish", before)
	e.wantCounts(ann, annCounts)

	e.clock.Advance(time.Minute)
	wider := e.publish(d, "ann", "carol", "bob")
	if wider.Message.ID != id || fmt.Sprint(wider.Delivered) != "[carol]" || fmt.Sprint(wider.Duplicates) != "[ann bob]" {
		e.t.Errorf("retry to more users: ID %s, delivered %v, duplicates %v; want ID %s, delivered [carol], duplicates [ann bob]", wider.Message.ID, wider.Delivered, wider.Duplicates, id)
	}
	e.wantMessages("a wider retry's message (ann's copy from the first attempt)", []driver.Message{copyFor(first.Message, "ann")}, []driver.Message{wider.Message})
	for _, u := range []string{"ann", "bob"} {
		e.wantRecords(u+"'s records after a retry to more users", before.Records[e.part(u).PK()], e.records(e.part(u)))
	}
	// Every copy made under one claim shares its expiry: carol's copy,
	// made two minutes later, expires with the others.
	carolMsgs := e.listAll(carol, inbox.ListOptions{})
	if len(carolMsgs) != 1 || carolMsgs[0].ID != id || !carolMsgs[0].ExpiresAt.Equal(first.Message.ExpiresAt) {
		e.t.Errorf("carol's feed after the retry: %+v, want the message %s expiring with the first copies at %v", carolMsgs, id, first.Message.ExpiresAt)
	}
	e.wantCounts(ann, annCounts)
	e.wantCounts(carol, annCounts)

	// Another host ID is another message; the same host ID in another
	// inbox is independent.
	other := e.publish(inbox.Draft{HostSystemID: "order#43", Title: "Order shipped"}, "ann").Message
	if other.ID == id {
		e.t.Errorf("a publish with another host ID got the same message ID %s", id)
	}
	elsewhere := driver.Scope{Tenant: e.scope.Tenant, Inbox: "other"}
	if m := e.publishIn(elsewhere, d, "ann").Message; m.ID == id {
		e.t.Errorf("the same host ID in another inbox got the same message ID %s", id)
	}

	// Broadcasts.
	b := e.broadcast(inbox.Draft{HostSystemID: "maintenance-7", Title: "Maintenance", Category: "ops"})
	e.clock.Advance(time.Minute)
	b2 := e.broadcast(inbox.Draft{HostSystemID: "maintenance-7", Title: "Maintenance", Category: "ops"})
	e.wantMessages("a retried broadcast (the first attempt's)", []driver.Message{b}, []driver.Message{b2})
	pub := e.records(e.pub())
	if len(pub) != 1 || pub[0].Message.ID != b.ID {
		e.t.Errorf("public partition after a retried broadcast: %d records, want the one broadcast %s", len(pub), b.ID)
	}
	e.wantCounts(carol, inbox.Counts{Tally: tallyOf(2, 0), Categories: map[string]inbox.Tally{"orders": tallyOf(1, 0), "ops": tallyOf(1, 0)}})

	// Once the claim and every copy under it have expired, a redelivery is
	// a new message; before that it only makes copies that expire with
	// the first.
	e.clock.Advance(first.Message.ExpiresAt.Sub(e.clock.Now()) - time.Second)
	late := e.publish(d, "dave")
	if late.Message.ID != id || !late.Message.ExpiresAt.Equal(first.Message.ExpiresAt) {
		e.t.Errorf("a retry a second before the claim expires: ID %s expiring %v; want %s expiring %v", late.Message.ID, late.Message.ExpiresAt, id, first.Message.ExpiresAt)
	}
	e.clock.Advance(time.Second)
	after := e.publish(d, "ann")
	if after.Message.ID == id || fmt.Sprint(after.Delivered) != "[ann]" {
		e.t.Errorf("a retry after the claim expired: ID %s, delivered %v; want a new message delivered to ann", after.Message.ID, after.Delivered)
	}
	e.wantCountsFromFeed(ann)
	e.wantCountsFromFeed(e.user("dave"))
}

// testHostSystemIDConflict: a host system ID reused for a message with
// other content or another audience is ErrConflict, and writes nothing;
// retries of the same message (to fewer or more users) are not.
func testHostSystemIDConflict(e *env) {
	d := inbox.Draft{HostSystemID: "order#42", Sender: "shop", Label: "buyers", Category: "orders", Title: "Order shipped", Body: map[string]any{"order": 42.0, "items": []any{"a", "b"}}, CTAURI: "https://example.com/o/42"}
	first := e.publish(d, "ann", "bob")
	e.broadcast(inbox.Draft{HostSystemID: "maintenance-7", Title: "Maintenance"})
	before := e.snapshot()
	changed := func(f func(*inbox.Draft)) inbox.Draft {
		c := d
		f(&c)
		return c
	}
	for name, op := range map[string]func() error{
		"other title": func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, changed(func(c *inbox.Draft) { c.Title = "Order lost" }))
			return err
		},
		"other body": func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, changed(func(c *inbox.Draft) { c.Body = map[string]any{"order": 43.0} }))
			return err
		},
		"other category": func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, changed(func(c *inbox.Draft) { c.Category = "refunds" }))
			return err
		},
		"other CTA": func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, changed(func(c *inbox.Draft) { c.CTAURI = "" }))
			return err
		},
		"other sender": func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, changed(func(c *inbox.Draft) { c.Sender = "other" }))
			return err
		},
		"other label": func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"carol"}, changed(func(c *inbox.Draft) { c.Label = "all" }))
			return err
		},
		"a broadcast": func() error { _, err := e.ib.Broadcast(e.ctx, e.scope, d); return err },
		"a publish of a broadcast's ID": func() error {
			_, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{HostSystemID: "maintenance-7", Title: "Maintenance"})
			return err
		},
		"a broadcast with other content": func() error {
			_, err := e.ib.Broadcast(e.ctx, e.scope, inbox.Draft{HostSystemID: "maintenance-7", Title: "Maintenance moved"})
			return err
		},
	} {
		if err := op(); !errors.Is(err, driver.ErrConflict) {
			e.t.Errorf("reusing a host system ID for %s: %v, want ErrConflict", name, err)
		}
		e.wantUnchanged("reusing a host system ID for "+name, before)
	}
	// The same content with an equal body built anew, and a TTL or
	// received time of its own, is a retry.
	retry := changed(func(c *inbox.Draft) {
		c.Body = map[string]any{"items": []any{"a", "b"}, "order": 42}
		c.TTL = time.Hour
		c.ReceivedAt = e.clock.Now().Add(-time.Hour)
	})
	again := e.publish(retry, "carol", "ann")
	if again.Message.ID != first.Message.ID || fmt.Sprint(again.Delivered) != "[carol]" {
		e.t.Errorf("retry with an equal body: ID %s, delivered %v; want %s delivered to carol", again.Message.ID, again.Delivered, first.Message.ID)
	}
}

package inbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stak/inbox"
)

// Redact removes a message for everyone: each named user's copy of a
// direct message, or a broadcast once, with every reader's counts.
func ExampleInbox_Redact() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann")
	ib.Publish(ctx, alerts, []string{"ann", "bob"}, inbox.Draft{HostSystemID: "inv-7", Title: "Invoice sent twice"})
	b, _ := ib.Broadcast(ctx, alerts, inbox.Draft{Title: "Wrong maintenance date"})
	ib.MarkRead(ctx, ann, b.ID)

	// By host system ID, naming the users (the inbox keeps no recipient list).
	n, err := ib.Redact(ctx, alerts, inbox.Redaction{HostSystemID: "inv-7", Users: []string{"ann", "bob"}})
	fmt.Println(n, err)
	n, err = ib.Redact(ctx, alerts, inbox.Redaction{ID: b.ID, Group: inbox.PublicGroup})
	fmt.Println(n, err)
	c, _ := ib.Counts(ctx, ann)
	fmt.Printf("total %d, read %d\n", c.Total, c.Read)
	// Output:
	// 2 <nil>
	// 1 <nil>
	// total 0, read 0
}

// Recount rebuilds a user's counters, and those of the shared partitions
// the user reads, from the records: an operator's repair, safe while the
// inbox is in use. It returns the user's counts.
func ExampleInbox_Recount() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := alerts.User("ann").InGroups("admins")
	ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "invoice"})
	ib.BroadcastGroup(ctx, alerts, "admins", inbox.Draft{Title: "deploy"})

	c, err := ib.Recount(ctx, ann)
	fmt.Printf("total %d, unread %d, %v\n", c.Total, c.Unread, err)
	// Output:
	// total 2, unread 2, <nil>
}

// RecountPartition rebuilds one partition's counters, a user's or a
// shared one, as `inbox recount --all` does for each partition of an
// inbox.
func ExampleInbox_RecountPartition() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ib.Broadcast(ctx, alerts, inbox.Draft{Title: "release"})

	everyone := inbox.Partition{Tenant: "acme", Inbox: "alerts", Group: inbox.PublicGroup}
	err := ib.RecountPartition(ctx, everyone)
	c, _ := ib.Counts(ctx, alerts.User("ann"))
	fmt.Println(err, c.Unread)
	// Output:
	// <nil> 1
}

// Tenant settings and inbox configs set the default TTLs: an inbox's
// category, then the inbox's default, then the tenant's.
func ExampleInbox_PutTenantSettings() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}

	if err := ib.PutTenantSettings(ctx, "acme", inbox.TenantSettings{Title: "Acme", TTL: "90d"}); err != nil {
		panic(err)
	}
	res, _ := ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "invoice"})
	fmt.Println("expires", res.Message.ExpiresAt.Format(time.DateOnly))
	// Output:
	// expires 2027-02-19
}

func ExampleInbox_PutInboxConfig() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}

	err := ib.PutInboxConfig(ctx, alerts, inbox.InboxConfig{Title: "Alerts", TTL: map[string]string{"default": "7d", "incident": "2d"}})
	if err != nil {
		panic(err)
	}
	for _, cat := range []string{"billing", "incident"} {
		res, _ := ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: cat, Category: cat})
		fmt.Println(cat, "expires", res.Message.ExpiresAt.Format(time.DateOnly))
	}
	// A TTL of the draft's own wins.
	res, _ := ib.Publish(ctx, alerts, []string{"ann"}, inbox.Draft{Title: "short", Category: "incident", TTL: time.Hour})
	fmt.Println("own TTL expires", res.Message.ExpiresAt.Format(time.DateTime))
	// Output:
	// billing expires 2026-11-28
	// incident expires 2026-11-23
	// own TTL expires 2026-11-21 10:00:00
}

// Config reads a scope's tenant settings and inbox config, through the
// Inbox's cache; each is nil when not set.
func ExampleInbox_Config() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ib.PutInboxConfig(ctx, alerts, inbox.InboxConfig{Title: "Alerts", TTL: map[string]string{"default": "7d"}})

	cfg, err := ib.Config(ctx, alerts)
	fmt.Println(cfg.Tenant == nil, cfg.Inbox.Title, cfg.Inbox.TTL, err)
	// Output:
	// true Alerts map[default:7d] <nil>
}

// Store returns the Inbox's Store, for a tool that calls the driver.Store
// contract directly: here its Config, which reads the records as stored,
// without the Inbox's cache.
func ExampleInbox_Store() {
	ctx := context.Background()
	ib := newExampleInbox()
	alerts := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ib.PutTenantSettings(ctx, "acme", inbox.TenantSettings{Title: "Acme", TTL: "90d"})

	cfg, err := ib.Store().Config(ctx, alerts)
	fmt.Println(cfg.Tenant.Title, cfg.Tenant.TTL, cfg.Inbox == nil, err)
	// Output:
	// Acme 90d true <nil>
}

// StreamHandler takes a batch of the table's stream as Lambda delivers it
// and reports the records it failed one by one, for the event source
// mapping's ReportBatchItemFailures: here a removal without its old
// image, which a stream without old images sends and which cannot be
// accounted.
func ExampleInbox_StreamHandler() {
	ib := newExampleInbox()
	str := events.NewStringAttribute
	item := map[string]events.DynamoDBAttributeValue{
		"pk": str("t#acmeU#ann#alerts"), "sk": str("m#01JP9Y3FM0V63QXKKD6T5AR6KF"), "kind": str("UM"),
		"message": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"title": str("Disk full")}),
	}
	keys := map[string]events.DynamoDBAttributeValue{"pk": item["pk"], "sk": item["sk"]}
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		{EventID: "100", EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: "100", Keys: keys, NewImage: item}},
		{EventID: "101", EventName: "REMOVE", Change: events.DynamoDBStreamRecord{SequenceNumber: "101", Keys: keys}},
	}}
	resp, err := ib.StreamHandler(context.Background(), batch)
	fmt.Printf("%+v %v\n", resp.BatchItemFailures, err)
	// Output:
	// [{ItemIdentifier:101}] <nil>
}

package dynamo_test

import (
	"cmp"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/oklog/ulid/v2"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// TestItemSizeIsExact: for bodies of every kind, the item the Store
// writes, padded so that driver.ItemSize says it is exactly 400 KB, is
// accepted by DynamoDB, and one byte more is refused: the size the library
// checks before writing is the size DynamoDB counts.
func TestItemSizeIsExact(t *testing.T) {
	ctx := context.Background()
	store, raw, table := newLocalStore(t)
	p := driver.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	negatives := make([]any, 5000)
	for i := range negatives {
		negatives[i] = -float64(i*7919%100000) - 0.5
	}
	bodies := map[string]any{
		"string":    "plain",
		"negatives": negatives,
		"mixed": map[string]any{
			"ünïcødé key": []any{true, nil, 0.0, 1e125, -1e-130, 123.456, -7.0, "é"},
			"nested":      map[string]any{"a": map[string]any{"b": []any{map[string]any{}}}},
			"big":         math.Nextafter(1e126, 0), "small": 1e-130,
		},
		"none":      nil,
		"scheduled": "a scheduled copy: deliverat and the scheduled index's keys",
		// Stored once in a shared partition, with the index's keys too.
		"scheduled group message": "to the group",
		"scheduled broadcast":     "to everyone",
	}
	shared := map[string]driver.Audience{
		"scheduled group message": {Kind: driver.AudienceGroup, Label: "l", Group: "operations"},
		"scheduled broadcast":     {Kind: driver.AudienceEveryone, Label: "l"},
	}
	now := time.Now().UTC().Truncate(time.Second)
	for name, body := range bodies {
		rec := driver.Record{Partition: p, Message: driver.Message{
			ID: ulid.Make().String(), HostSystemID: "h-" + name, Sender: "s", Category: "billing",
			Audience: driver.Audience{Kind: driver.AudienceUsers, Label: "l", UIDs: []string{"ann"}},
			Title:    "t", Body: body, ReceivedAt: now, DeliveredAt: now, ExpiresAt: now.Add(time.Hour),
		}}
		if strings.HasPrefix(name, "scheduled") {
			rec.Message.DeliverAt = now
		}
		if aud, ok := shared[name]; ok {
			rec.Partition = p.Scope().Group(cmp.Or(aud.Group, driver.PublicGroup))
			rec.Message.Audience = aud
		}
		rec.Entry = driver.LedgerSK(rec.Message.ExpiresAt, rec.Message.ID, "size")
		if err := store.PutMessage(ctx, rec, nil); err != nil {
			t.Fatalf("%s: PutMessage: %v", name, err)
		}
		item := getRaw(t, raw, table, rec.Partition.PK(), driver.MessageSK(rec.Message.ID))
		if _, ok := item["ssk"]; ok != !rec.Message.DeliverAt.IsZero() {
			t.Errorf("%s: the item carries ssk: %v, want %v", name, ok, !ok)
		}
		pad := driver.MaxItemSize - driver.ItemSize(rec)
		for _, extra := range []int{0, 1} {
			title := strings.Repeat("x", 1+pad+extra)
			item["message"].(*types.AttributeValueMemberM).Value["title"] = &types.AttributeValueMemberS{Value: title}
			_, err := raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
			var api smithy.APIError
			switch {
			case extra == 0 && err != nil:
				t.Errorf("%s: the item at exactly %d bytes by ItemSize was refused: %v", name, driver.MaxItemSize, err)
			case extra == 1 && (!errors.As(err, &api) || !strings.Contains(api.ErrorMessage(), "size")):
				t.Errorf("%s: the item a byte over %d by ItemSize: %v, want DynamoDB's item size error", name, driver.MaxItemSize, err)
			}
		}
	}
}

// TestLargestMessageCanBeRead: a message of the largest size Publish
// accepts can be marked read (its item keeps room for readat), and a byte
// more is ErrTooLarge, with nothing written.
func TestLargestMessageCanBeRead(t *testing.T) {
	ctx := context.Background()
	store, raw, table := newLocalStore(t)
	now := time.Now().UTC().Truncate(time.Second)
	clock := func() time.Time { return now }
	ib := inbox.New(store, inbox.WithClock(clock))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	user := strings.Repeat("u", driver.MaxKeyLen) // the longest key: the copy Publish checks
	negatives := make([]any, 1000)
	for i := range negatives {
		negatives[i] = -1.5
	}
	draft := func(n int) inbox.Draft { return inbox.Draft{Title: strings.Repeat("x", n), Body: negatives} }
	// The largest title that fits, found on the in-memory store, which
	// checks records alike.
	mem := inbox.New(memstore.New(memstore.WithClock(clock)), inbox.WithClock(clock))
	lo, hi := 0, driver.MaxItemSize
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if _, err := mem.Publish(ctx, scope, []string{user}, draft(mid)); err == nil {
			lo = mid
		} else if errors.Is(err, driver.ErrTooLarge) {
			hi = mid - 1
		} else {
			t.Fatal(err)
		}
	}
	res, err := ib.Publish(ctx, scope, []string{user}, draft(lo))
	if err != nil {
		t.Fatalf("Publish of the largest message (title %d bytes): %v", lo, err)
	}
	if ok, err := ib.MarkRead(ctx, scope.User(user), res.Message.ID); err != nil || !ok {
		t.Errorf("MarkRead of the largest message = %v, %v; want true", ok, err)
	}
	pk := driver.Partition{Tenant: "acme", Inbox: "alerts", User: user}.PK()
	before := len(rawQuery(t, raw, table, pk, ""))
	if _, err := ib.Publish(ctx, scope, []string{user}, draft(lo+1)); !errors.Is(err, driver.ErrTooLarge) {
		t.Errorf("Publish a byte larger: %v, want ErrTooLarge", err)
	}
	if after := len(rawQuery(t, raw, table, pk, "")); after != before {
		t.Errorf("a refused publish wrote %d items", after-before)
	}
	t.Logf("the largest title beside 1000 negative numbers is %d bytes", lo)
}

package dynamo_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// shape describes an attribute value by its DynamoDB types: "S", "N",
// "NULL" or "BOOL" for a scalar (with the value for S, N and BOOL when
// withValues), a []any for a list and a map[string]any for a map.
func shape(av types.AttributeValue, withValues bool) any {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		if withValues {
			return "S:" + v.Value
		}
		return "S"
	case *types.AttributeValueMemberN:
		if withValues {
			return "N:" + v.Value
		}
		return "N"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberBOOL:
		if withValues && v.Value {
			return "BOOL:true"
		} else if withValues {
			return "BOOL:false"
		}
		return "BOOL"
	case *types.AttributeValueMemberL:
		out := make([]any, len(v.Value))
		for i, e := range v.Value {
			out[i] = shape(e, withValues)
		}
		return out
	case *types.AttributeValueMemberM:
		return shapeMap(v.Value, withValues)
	case *types.AttributeValueMemberSS:
		if !withValues {
			return "SS"
		}
		vals := slices.Clone(v.Value)
		slices.Sort(vals)
		return "SS:" + strings.Join(vals, ",")
	}
	return "?"
}

// shapeMap is shape for an item.
func shapeMap(item map[string]types.AttributeValue, withValues bool) map[string]any {
	out := make(map[string]any, len(item))
	for k, e := range item {
		out[k] = shape(e, withValues)
	}
	return out
}

// getRaw reads one item with the plain SDK; nil if absent.
func getRaw(t *testing.T, c *dynamodb.Client, table, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem %s %s: %v", pk, sk, err)
	}
	if out.Item == nil {
		t.Fatalf("no item at %s %s", pk, sk)
	}
	return out.Item
}

// TestWireFormat writes through the library and reads the raw items back
// with the plain SDK: exact keys, attribute names, DynamoDB types and
// values, as the seeds and the design lay them out. It also checks that
// every request asked for the consumed capacity.
func TestWireFormat(t *testing.T) {
	ctx := context.Background()
	raw := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, raw)
	cc := &capacityClient{Client: raw}
	now := time.Now().UTC().Truncate(time.Second)
	ib := inbox.New(dynamo.New(cc, table), inbox.WithClock(func() time.Time { return now }))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")

	if err := ib.PutTenantSettings(ctx, "acme", driver.TenantSettings{Title: "Acme", TTL: "30d", UpdatedBy: "ops"}); err != nil {
		t.Fatal(err)
	}
	if err := ib.PutInboxConfig(ctx, scope, driver.InboxConfig{Title: "Alerts", Description: "Ops alerts", TTL: map[string]string{"default": "7d", "billing": "1d"}}); err != nil {
		t.Fatal(err)
	}
	pub, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{
		HostSystemID: "host-1",
		Sender:       "admin",
		Label:        "on-call",
		Category:     "billing",
		Title:        "Invoice",
		Body:         map[string]any{"amount": 12.5, "lines": []any{true, "x"}, "none": nil},
		ReceivedAt:   now.Add(-time.Minute),
	})
	if err != nil {
		t.Fatal(err)
	}
	direct := pub.Message.ID
	bc, err := ib.Broadcast(ctx, scope, inbox.Draft{Sender: "admin", Title: "Maintenance", Body: "at 22:00", CTAURI: "https://example.com/m"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{direct, bc.ID} {
		if ok, err := ib.MarkRead(ctx, ann, id); err != nil || !ok {
			t.Fatalf("MarkRead(%s) = %v, %v", id, ok, err)
		}
	}

	annPK := "t#acmeU#ann#alerts"
	pubPK := "t#acmeG#$public#alerts"
	epoch := func(d time.Duration) string { return "N:" + itoa(now.Add(d).Unix()) }
	day, week := now.Add(24*time.Hour), now.Add(7*24*time.Hour)
	// Ledger entries are named e#<expiry>#<id>#<random tag>: the items'
	// ledger attributes and the entries' sort keys are matched by prefix,
	// and must name the same entries.
	entries := map[string]string{}
	ledgerOf := func(pk string, exp time.Time, id string) string {
		t.Helper()
		prefix := driver.LedgerSK(exp, id, "")
		for _, it := range rawQuery(t, raw, table, pk, prefix) {
			return attrS(t, it["sk"])
		}
		t.Fatalf("no ledger entry %s* in %s", prefix, pk)
		return ""
	}
	entries["direct"] = ledgerOf(annPK, day, direct)
	entries["receipt"] = ledgerOf(annPK, week, bc.ID)
	entries["broadcast"] = ledgerOf(pubPK, week, bc.ID)
	claimPK := "t#acmeH#4a1796ac#alerts" // the first 8 hex digits of SHA-256("host-1")
	const recentSlot = "rs?"             // rs0 to rs3, by the time of the mark: the receipt just made, among ann's recent ones
	claim := getRaw(t, raw, table, claimPK, "h#host-1")
	digest := attrS(t, claim["digest"])
	tests := []struct {
		name   string
		pk, sk string
		want   map[string]any
	}{
		{"tenant settings", "t#acme", "st#tenant_settings", map[string]any{
			"pk": "S:t#acme", "sk": "S:st#tenant_settings", "kind": "S:TS",
			"title": "S:Acme", "ttl": "S:30d", "tenant_key": "S:acme", "uid": "S:ops",
		}},
		{"inbox config", "t#acme", "si#alerts", map[string]any{
			"pk": "S:t#acme", "sk": "S:si#alerts", "kind": "S:IC",
			"title": "S:Alerts", "description": "S:Ops alerts",
			"ttl":        map[string]any{"default": "S:7d", "billing": "S:1d"},
			"tenant_key": "S:acme", "inbox_key": "S:alerts", "uid": "S:",
		}},
		{"host id claim", claimPK, "h#host-1", map[string]any{
			"pk": "S:" + claimPK, "sk": "S:h#host-1", "kind": "S:HC", "id": "S:" + direct, "digest": "S:" + digest,
			"expiredat": epoch(24 * time.Hour), "tenant_key": "S:acme", "inbox_key": "S:alerts",
		}},
		{"user message, read", annPK, "m#" + direct, map[string]any{
			"pk": "S:" + annPK, "sk": "S:m#" + direct, "kind": "S:UM",
			"headers": map[string]any{
				"id": "S:" + direct, "host_system_id": "S:host-1", "sender": "S:admin",
				"audiences": map[string]any{"kind": "S:users", "label": "S:on-call", "uids": []any{"S:ann"}},
				"received":  epoch(-time.Minute), "delivered": epoch(0),
			},
			"message": map[string]any{
				"title":   "S:Invoice",
				"body":    map[string]any{"amount": "N:12.5", "lines": []any{"BOOL:true", "S:x"}, "none": "NULL"},
				"cta_uri": "NULL",
			},
			"taxonomy":   map[string]any{"category": "S:billing"},
			"readat":     epoch(0),
			"expiredat":  epoch(24 * time.Hour),
			"ledger":     "S:" + entries["direct"],
			"counted":    "N:3", // the marks its ledger entry counts: driver.MarksKnown|driver.MarkedRead
			"tenant_key": "S:acme", "inbox_key": "S:alerts", "uid": "S:ann",
		}},
		{"its ledger entry", annPK, entries["direct"], map[string]any{
			"pk": "S:" + annPK, "sk": "S:" + entries["direct"], "kind": "S:LE",
			"taxonomy": map[string]any{"category": "S:billing"}, "readat": epoch(0),
		}},
		{"broadcast", pubPK, "m#" + bc.ID, map[string]any{
			"pk": "S:" + pubPK, "sk": "S:m#" + bc.ID, "kind": "S:UM",
			"headers": map[string]any{
				"id": "S:" + bc.ID, "host_system_id": "NULL", "sender": "S:admin",
				"audiences": map[string]any{"kind": "S:everyone", "label": "S:"},
				"received":  epoch(0), "delivered": epoch(0),
			},
			"message":    map[string]any{"title": "S:Maintenance", "body": "S:at 22:00", "cta_uri": "S:https://example.com/m"},
			"expiredat":  epoch(7 * 24 * time.Hour),
			"ledger":     "S:" + entries["broadcast"],
			"tenant_key": "S:acme", "inbox_key": "S:alerts", "uid": "S:$public",
		}},
		{"its ledger entry", pubPK, entries["broadcast"], map[string]any{
			"pk": "S:" + pubPK, "sk": "S:" + entries["broadcast"], "kind": "S:LE",
		}},
		{"read receipt", annPK, "m#" + bc.ID, map[string]any{
			"pk": "S:" + annPK, "sk": "S:m#" + bc.ID, "kind": "S:UM",
			"readat": epoch(0), "expiredat": epoch(7 * 24 * time.Hour), "ledger": "S:" + entries["receipt"], "counted": "N:3",
			"tenant_key": "S:acme", "inbox_key": "S:alerts", "uid": "S:ann",
			"unread": "S:" + bc.ID + "r", // in the unread index, beside the messages
		}},
		{"its ledger entry", annPK, entries["receipt"], map[string]any{
			"pk": "S:" + annPK, "sk": "S:" + entries["receipt"], "kind": "S:LE", "receipt": "BOOL:true", "readat": epoch(0),
		}},
		{"user stats", annPK, "c#*", map[string]any{
			"pk": "S:" + annPK, "sk": "S:c#*", "kind": "S:US", "published": "N:1", "read": "N:2", "ver": "N:3",
			"tenant_key": "S:acme", "inbox_key": "S:alerts", "uid": "S:ann",
			"unread":   "S:~", // in the unread index, above every message
			recentSlot: "SS:$public#" + bc.ID,
			"above":    "N:-1", // no watermark: every record is above it; the read receipt takes its broadcast out
			// billing's above, on c#* (base64url-named): its message, read, adds nothing
			"a#YmlsbGluZw": "N:0",
		}},
		{"user category stats", annPK, "c#billing", map[string]any{
			"pk": "S:" + annPK, "sk": "S:c#billing", "kind": "S:US", "published": "N:1", "read": "N:1",
			"tenant_key": "S:acme", "inbox_key": "S:alerts", "uid": "S:ann",
		}},
		{"public stats", pubPK, "c#*", map[string]any{
			"pk": "S:" + pubPK, "sk": "S:c#*", "kind": "S:US", "published": "N:1", "ver": "N:1",
			"tenant_key": "S:acme", "inbox_key": "S:alerts", "uid": "S:$public",
			"bkh": "BOOL:true", // its time buckets count every broadcast, by category and thread too
		}},
	}
	for _, tc := range tests {
		got := shapeMap(getRaw(t, raw, table, tc.pk, tc.sk), true)
		for k, v := range got {
			if len(k) == 3 && strings.HasPrefix(k, "rs") && k[2] >= '0' && k[2] <= '3' {
				delete(got, k)
				got[recentSlot] = v
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s item (-want +got):\n%s", tc.name, diff)
		}
	}
	// Nothing else was written: two partitions of messages, their ledger
	// entries and stats, the tenant's configs, the claim.
	if n := len(rawQuery(t, raw, table, annPK, "")); n != 6 {
		t.Errorf("ann's partition holds %d items, want 6", n)
	}
	if n := len(rawQuery(t, raw, table, pubPK, "")); n != 5 {
		t.Errorf("public partition holds %d items, want 5 (the broadcast, its entry, its stats, its day and hour buckets)", n)
	}
	// The time buckets count the broadcast by the second of its ID.
	bt, err := driver.BucketTime(bc.ID)
	if err != nil {
		t.Fatal(err)
	}
	dayItem := shapeMap(getRaw(t, raw, table, pubPK, driver.DayBucketSK(bt)), true)
	hour := shapeMap(getRaw(t, raw, table, pubPK, driver.HourBucketSK(bt)), true)
	hh, ss := fmt.Sprintf("h%02d", bt.Hour()), fmt.Sprintf("s%04d", bt.Minute()*60+bt.Second())
	if dayItem["kind"] != "S:UB" || dayItem[hh] != "N:1" || dayItem[fmt.Sprintf("v%02d", bt.Hour())] != hour["v"] || len(dayItem) != 8 {
		t.Errorf("day bucket %v: want kind UB, %s 1 and the hour bucket's version, and the keys", dayItem, hh)
	}
	if hour["kind"] != "S:UB" || hour[ss] != "N:1" || len(hour) != 8 {
		t.Errorf("hour bucket %v: want kind UB, %s 1, a version, and the keys", hour, ss)
	}
	if n := len(rawQuery(t, raw, table, claimPK, "")); n != 1 {
		t.Errorf("the claim's partition holds %d items, want 1", n)
	}

	// And it reads back.
	page, err := ib.List(ctx, ann, inbox.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 2 || !page.Messages[0].IsRead() || !page.Messages[1].IsRead() {
		t.Errorf("List = %+v, want both messages, read", page.Messages)
	}

	// The removal of a record without a ledger entry (another program's)
	// is recorded once, by a marker in its partition, written with its
	// counter changes.
	annPart := driver.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	foreign := driver.Record{Partition: annPart, Receipt: true, Message: driver.Message{ID: bc.ID, ReadAt: now}}
	rm := driver.Removal{Record: foreign, EventID: "event-1", Deltas: []driver.Counter{{Partition: annPart, Read: -1}}, Now: now}
	for i, want := range []bool{true, false} {
		if applied, err := ib.Store().ApplyRemoval(ctx, rm); err != nil || applied != want {
			t.Fatalf("ApplyRemoval #%d = %v, %v; want %v", i+1, applied, err, want)
		}
	}
	wantMarker := map[string]any{"pk": "S:" + annPK, "sk": "S:x#event-1", "kind": "S:RX", "expiredat": epoch(driver.RemovalMarkerTTL)}
	if diff := cmp.Diff(wantMarker, shapeMap(getRaw(t, raw, table, annPK, "x#event-1"), true)); diff != "" {
		t.Errorf("removal marker (-want +got):\n%s", diff)
	}
	if got := attrN(t, getRaw(t, raw, table, annPK, "c#*")["read"]); got != 1 {
		t.Errorf("read after the removal = %d, want 1", got)
	}
	// Recount puts the counters back from the records (both still there).
	counts, err := ib.Recount(ctx, ann)
	if err != nil {
		t.Fatal(err)
	}
	if counts.Total != 2 || counts.Read != 2 || counts.Categories["billing"] != (inbox.Tally{Total: 1, Read: 1}) {
		t.Errorf("Recount = %+v", counts)
	}
	if got := attrN(t, getRaw(t, raw, table, annPK, "c#*")["read"]); got != 2 {
		t.Errorf("read after Recount = %d, want 2", got)
	}

	// A broadcast removed before it expired leaves a tombstone, expiring
	// when the broadcast would have.
	broadcast := driver.Record{Partition: driver.Partition{Tenant: "acme", Inbox: "alerts", Group: driver.PublicGroup}, Entry: entries["broadcast"], Message: bc}
	if ok, err := ib.Store().ApplyRemoval(ctx, driver.RemovalFor(broadcast, "event-2", now)); err != nil || !ok {
		t.Fatalf("ApplyRemoval(broadcast) = %v, %v", ok, err)
	}
	wantTomb := map[string]any{"pk": "S:" + pubPK, "sk": "S:d#" + bc.ID, "kind": "S:TB", "expiredat": epoch(7 * 24 * time.Hour)}
	if diff := cmp.Diff(wantTomb, shapeMap(getRaw(t, raw, table, pubPK, "d#"+bc.ID), true)); diff != "" {
		t.Errorf("tombstone (-want +got):\n%s", diff)
	}

	cc.mu.Lock()
	defer cc.mu.Unlock()
	if len(cc.ops) != 4 || len(cc.missing) > 0 {
		t.Errorf("calls per operation %v (want all 4 of Client); without ReturnConsumedCapacity TOTAL: %v", cc.ops, cc.missing)
	}
	if cc.units <= 0 {
		t.Errorf("consumed capacity units %v, want some", cc.units)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

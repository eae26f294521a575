package dynamo_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// TestGroupPositionLayout: MarkAllRead of a group chat keeps the
// member's read position on her counter of the group, c#*#<group>, as
// cv#<thread> (her c#* holds none of it: it keeps her direct threads'
// alone), and puts her position item in the group's partition (kind RD,
// r#<thread>#~#<user>, no TTL); a Store that
// saw no position takes the removal of her receipt of a covered message
// as not covered, fails, and writes it again covered (two transactions),
// then, having learnt the position, takes the next one right (one); Stats
// by her group counter's key returns the covered counter.
func TestGroupPositionLayout(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	ctx := context.Background()
	a, c, table := newLocalStore(t)
	ia := inbox.New(a)
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann").InGroups("crew")
	var ids []string
	for range 4 {
		m, err := ia.BroadcastGroup(ctx, scope, "crew", inbox.Draft{Sender: "bob", Title: "hi", Thread: "chat", Category: "chat"})
		if err != nil {
			t.Fatalf("BroadcastGroup: %v", err)
		}
		ids = append(ids, m.ID)
	}
	for _, id := range ids[:3] {
		if ok, err := ia.MarkRead(ctx, ann, id); err != nil || !ok {
			t.Fatalf("MarkRead(%s) = %v, %v", id, ok, err)
		}
	}
	time.Sleep(1100 * time.Millisecond) // the bound ends the second of the newest
	if n, err := ia.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n != 1 {
		t.Fatalf("MarkAllRead(chat) = %d, %v; want 1", n, err)
	}
	p := ann.Partition()
	enc := base64.RawURLEncoding.EncodeToString
	counters := rawQuery(t, c, table, p.PK(), driver.CounterSK("", ""))
	groupSK := driver.CounterSK("", "crew")
	var cv *types.AttributeValueMemberM
	for _, it := range counters {
		sk := it["sk"].(*types.AttributeValueMemberS).Value
		for name := range it {
			if strings.HasPrefix(name, "cv#") && sk != groupSK {
				t.Errorf("%s holds %s: want the group's thread's map on %s alone", sk, name, groupSK)
			}
		}
		if sk == groupSK {
			cv, _ = it["cv#"+enc([]byte("chat"))].(*types.AttributeValueMemberM)
		}
	}
	if cv == nil {
		t.Fatalf("%s holds no map of the group's thread", groupSK)
	}
	bound, _ := cv.Value["b"].(*types.AttributeValueMemberS)
	if bound == nil || bound.Value <= ids[3] {
		t.Fatalf("the map's bound = %v, want one above %s", cv.Value["b"], ids[3])
	}
	g := driver.Partition{Tenant: "acme", Inbox: "alerts", Group: "crew"}
	items := rawQuery(t, c, table, g.PK(), driver.ReaderPositionSK("chat", ""))
	if len(items) != 1 {
		t.Fatalf("%d position items in the group's partition, want 1", len(items))
	}
	it := items[0]
	if sk := it["sk"].(*types.AttributeValueMemberS).Value; sk != driver.ReaderPositionSK("chat", "ann") {
		t.Errorf("position item at %s, want %s", sk, driver.ReaderPositionSK("chat", "ann"))
	}
	if k, _ := it["kind"].(*types.AttributeValueMemberS); k == nil || k.Value != "RD" {
		t.Errorf("position item kind %v, want RD", it["kind"])
	}
	if b, _ := it["bound"].(*types.AttributeValueMemberS); b == nil || b.Value != bound.Value {
		t.Errorf("position item bound %v, want %s", it["bound"], bound.Value)
	}
	if _, ok := it["expiredat"]; ok {
		t.Errorf("position item has a TTL")
	}

	// A Store that saw no position removes her receipts of covered
	// messages (below the receipts' hint's Latest, whose form it guesses
	// right).
	bc := &capacityClient{Client: c}
	b := dynamo.New(bc, table)
	for i, want := range []int{2, 1} {
		recs, err := b.GetRecords(ctx, []driver.Key{{Partition: p, ID: ids[i]}})
		if err != nil || len(recs) != 1 || !recs[0].Receipt {
			t.Fatalf("GetRecords(receipt %s) = %+v, %v", ids[i], recs, err)
		}
		before := transactions(bc)
		if ok, err := b.ApplyRemoval(ctx, driver.RemovalFor(recs[0], "ev-"+ids[i], time.Now())); err != nil || !ok {
			t.Fatalf("ApplyRemoval(receipt %s) = %v, %v", ids[i], ok, err)
		}
		if n := transactions(bc) - before; n != want {
			t.Errorf("removal %d of a covered message's receipt took %d transactions, want %d", i, n, want)
		}
	}
	st, err := a.Stats(ctx, driver.StatsQuery{Partition: p, Keys: []driver.Counter{{Group: "crew"}}})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, cnt := range st.Counters {
		if cnt.Covered && cnt.Group == "crew" && cnt.Thread == "chat" && cnt.Category == "" {
			found = true
			if cnt.Unread != -1 || cnt.Position.Bound != bound.Value {
				t.Errorf("covered counter after the removals = %+v, want -1 unread (the third's receipt) at bound %s", cnt, bound.Value)
			}
		}
	}
	if !found {
		t.Errorf("Stats by the group's key returns no covered counter of its thread: %+v", st.Counters)
	}
	// By the total's key, her direct threads' alone; without keys, all.
	for _, q := range []struct {
		keys []driver.Counter
		want bool
	}{{[]driver.Counter{{}}, false}, {nil, true}} {
		st, err := a.Stats(ctx, driver.StatsQuery{Partition: p, Keys: q.keys, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, cnt := range st.Counters {
			found = found || cnt.Covered && cnt.Group == "crew"
		}
		if found != q.want {
			t.Errorf("Stats with keys %+v returns the group's covered counters: %v, want %v", q.keys, found, q.want)
		}
	}
}

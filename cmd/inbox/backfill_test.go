package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// stripScheduledKeys removes the scheduled index's keys from the item at
// k, as an earlier version of the library wrote it.
func (f *fixture) stripScheduledKeys(t *testing.T, k driver.Key) {
	t.Helper()
	_, err := f.raw.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(f.table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: k.Partition.PK()},
			"sk": &types.AttributeValueMemberS{Value: driver.MessageSK(k.ID)},
		},
		UpdateExpression:    aws.String("REMOVE spk, ssk"),
		ConditionExpression: aws.String("attribute_exists(spk)"),
	})
	if err != nil {
		t.Fatalf("strip the scheduled keys of %s in %s: %v", k.ID, k.Partition.PK(), err)
	}
}

// TestBackfillScheduled: scheduled messages an earlier version wrote
// without the scheduled index's keys (a broadcast, a group message, the
// copies of a message to users) are not in scheduled's list;
// backfill-scheduled gives them their keys, in every partition of the
// inbox and no other inbox's, and prints a summary (JSON or a table),
// with its progress on stderr; scheduled then lists them; a second run
// finds nothing to do. Bad flags are usage errors.
func TestBackfillScheduled(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	scope := []string{"--tenant", "acme", "--inbox", "alerts"}
	now := time.Now().UTC()
	all, err := f.ib.Broadcast(ctx, f.scope, inbox.Draft{Title: "Drill", DeliverAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	group, err := f.ib.BroadcastGroup(ctx, f.scope, "ops", inbox.Draft{Title: "Deploy", DeliverAt: now.Add(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	copies := f.publish(t, f.scope, []string{"ann", "bob"}, inbox.Draft{Title: "Standup", DeliverAt: now.Add(3 * time.Hour)})
	f.publish(t, f.scope, []string{"carol"}, inbox.Draft{Title: "now"})
	other := inbox.Scope{Tenant: "acme", Inbox: "other"}
	elsewhere, err := f.ib.Broadcast(ctx, other, inbox.Draft{Title: "Elsewhere", DeliverAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []driver.Key{
		{Partition: f.scope.Public(), ID: all.ID},
		{Partition: f.scope.Group("ops"), ID: group.ID},
		{Partition: f.scope.User("ann").Partition(), ID: copies},
		{Partition: f.scope.User("bob").Partition(), ID: copies},
		{Partition: other.Public(), ID: elsewhere.ID},
	} {
		f.stripScheduledKeys(t, k)
	}
	// scheduled waits until scheduled lists n deliveries (the index is
	// eventually consistent) and returns them.
	scheduled := func(s []string, n int) []deliveryJSON {
		t.Helper()
		var page deliveriesJSON
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			page = deliveriesJSON{}
			cli(t, with(f.g, append([]string{"scheduled"}, s...)...)...).ok(t).decode(t, &page)
			if len(page.Deliveries) == n || time.Now().After(deadline) {
				return page.Deliveries
			}
		}
	}
	if got := scheduled(scope, 0); len(got) != 0 {
		t.Fatalf("before the backfill, scheduled printed %+v; want nothing", got)
	}

	r := cli(t, with(f.g, append([]string{"backfill-scheduled", "--parallel", "2"}, scope...)...)...).ok(t)
	var sum backfillJSON
	r.decode(t, &sum)
	// Everyone's, ops', ann's, bob's and carol's partitions.
	want := backfillJSON{Tenant: "acme", Inbox: "alerts", Partitions: 5, Indexed: 4, Errors: []partitionErrorJSON{}}
	if diff := cmp.Diff(want, sum); diff != "" {
		t.Errorf("backfill-scheduled summary (-want +got):\n%s", diff)
	}
	for _, line := range []string{"backfill-scheduled: scan: 1 page(s) read, 5 partitions of acme/alerts found\n", "backfill-scheduled: 5/5 partitions\n"} {
		if !strings.Contains(r.stderr, line) {
			t.Errorf("backfill-scheduled progress lacks %q:\n%s", line, r.stderr)
		}
	}
	got := scheduled(scope, 4)
	var ids []string
	for _, d := range got {
		ids = append(ids, d.Group+d.User+" "+d.Message.ID)
	}
	if wantIDs := []string{inbox.PublicGroup + " " + all.ID, "ops " + group.ID, "ann " + copies, "bob " + copies}; !cmp.Equal(ids, wantIDs) {
		t.Errorf("after the backfill, scheduled printed %v; want %v", ids, wantIDs)
	}
	// The other inbox was not touched.
	if got := scheduled([]string{"--tenant", "acme", "--inbox", "other"}, 0); len(got) != 0 {
		t.Errorf("backfill-scheduled of acme/alerts indexed acme/other's %+v", got)
	}

	// Again, in a table: nothing left to do.
	r = cli(t, with(f.g, append([]string{"-o", "table", "backfill-scheduled"}, scope...)...)...).ok(t)
	if !hasRow(r.stdout, "TENANT", "INBOX", "PARTITIONS", "INDEXED", "FAILED") || !hasRow(r.stdout, "acme", "alerts", "5", "0", "0") {
		t.Errorf("backfill-scheduled -o table, run again, printed:\n%s", r.stdout)
	}

	for name, args := range map[string][]string{
		"no --tenant":        {"backfill-scheduled", "--inbox", "alerts"},
		"a bad inbox":        {"backfill-scheduled", "--tenant", "acme", "--inbox", "a#b"},
		"--parallel 0":       append([]string{"backfill-scheduled", "--parallel", "0"}, scope...),
		"--parallel too big": append([]string{"backfill-scheduled", "--parallel", "65"}, scope...),
	} {
		if r := cli(t, with(f.g, args...)...); r.code != exitUsage {
			t.Errorf("%s: exit %d, stderr %q; want %d", name, r.code, r.stderr, exitUsage)
		}
	}
}

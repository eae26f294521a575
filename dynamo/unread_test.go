package dynamo_test

import (
	"context"
	"errors"
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

// TestUnreadIndex: CreateTable makes the unread index (small entries); a
// message joins it while unread and unarchived, and leaves it when read
// or archived, so the unread feed read through it equals the feed read
// without it at every step; a message another program wrote without the
// index's attribute joins it when Recount adopts it.
func TestUnreadIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, raw, table := newLocalStore(t)
	desc, err := raw.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	// The unread and thread indexes, each on its key, projecting taxonomy
	// and expiredat (the unread index the threads' tallies too).
	got := map[string]string{}
	for _, ix := range desc.Table.LocalSecondaryIndexes {
		want := []string{"taxonomy", "expiredat"}
		if aws.ToString(ix.IndexName) == dynamo.DefaultUnreadIndex {
			want = append(want, "tp", "tr", "ta", "tar", "th", "latest", "rev")
		}
		if ix.Projection.ProjectionType != types.ProjectionTypeInclude || !cmp.Equal(ix.Projection.NonKeyAttributes, want) || len(ix.KeySchema) != 2 {
			t.Errorf("index %s: projection %+v, key schema %+v; want %v on a two-part key", aws.ToString(ix.IndexName), ix.Projection, ix.KeySchema, want)
			continue
		}
		got[aws.ToString(ix.IndexName)] = aws.ToString(ix.KeySchema[1].AttributeName)
	}
	if want := map[string]string{dynamo.DefaultUnreadIndex: "unread", dynamo.DefaultThreadIndex: "tsk"}; !cmp.Equal(got, want) {
		t.Fatalf("the table's local secondary indexes by sort key: %v, want %v", got, want)
	}

	now := time.Now().UTC().Truncate(time.Second)
	clock := func() time.Time { return now }
	ib := inbox.New(store, inbox.WithClock(clock))
	scan := inbox.New(dynamo.New(raw, table, dynamo.WithUnreadIndex("")), inbox.WithClock(clock))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	var ids []string
	for i := range 6 {
		res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "m", Category: []string{"a", "b"}[i%2]})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Message.ID)
	}
	if _, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "everyone"}); err != nil {
		t.Fatal(err)
	}
	unread := func(ib *inbox.Inbox, o inbox.ListOptions) []string {
		t.Helper()
		var out []string
		for o.UnreadOnly = true; ; {
			page, err := ib.List(ctx, ann, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page.Messages {
				out = append(out, m.ID)
			}
			if o.Cursor = page.Cursor; o.Cursor == "" {
				return out
			}
		}
	}
	step := func(what string, want int) {
		t.Helper()
		for _, o := range []inbox.ListOptions{{Limit: 1}, {Limit: 2, Category: "a"}, {}} {
			got, all := unread(ib, o), unread(scan, o)
			if diff := cmp.Diff(all, got); diff != "" {
				t.Errorf("%s, %+v: the unread feed through the index differs from the partition's (-without +with):\n%s", what, o, diff)
			}
			if o == (inbox.ListOptions{}) && len(got) != want {
				t.Errorf("%s: %d unread, want %d", what, len(got), want)
			}
		}
		c, err := ib.Counts(ctx, ann)
		if err != nil || c.Unread != int64(want) {
			t.Errorf("%s: Counts unread %d, %v; want %d", what, c.Unread, err, want)
		}
	}
	step("published", 7)
	if _, err := ib.MarkRead(ctx, ann, ids[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := ib.Archive(ctx, ann, ids[2]); err != nil {
		t.Fatal(err)
	}
	step("one read, one archived", 5)
	if _, err := ib.Unarchive(ctx, ann, ids[2]); err != nil {
		t.Fatal(err)
	}
	step("unarchived", 6)
	if n, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Category: "a"}); err != nil || n != 3 {
		t.Fatalf("MarkAllRead(category a) = %d, %v; want 3", n, err)
	}
	step("category a marked read", 3)

	// Another program's message, without the attribute: the index misses
	// it until Recount adopts it.
	item := getRaw(t, raw, table, "t#acmeU#ann#alerts", "m#"+ids[5])
	if _, ok := item["unread"]; !ok {
		t.Fatalf("an unread message has no unread attribute: %v", item)
	}
	if _, err := raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
		"pk": item["pk"], "sk": item["sk"]}, UpdateExpression: aws.String("REMOVE unread, ledger")}); err != nil {
		t.Fatal(err)
	}
	if got := unread(ib, inbox.ListOptions{}); len(got) != 2 {
		t.Errorf("a message without the attribute: %d unread through the index, want 2 (it is missed)", len(got))
	}
	if _, err := ib.Recount(ctx, ann); err != nil {
		t.Fatal(err)
	}
	step("after Recount adopted it", 3)

	// A Store with the index over a table without it: a clear error,
	// not the caller's bad input.
	old, _ := ddblocal.NewTable(t, raw, dynamo.WithUnreadIndex(""))
	_, err = inbox.New(dynamo.New(raw, old)).List(ctx, ann, inbox.ListOptions{UnreadOnly: true})
	if err == nil || errors.Is(err, driver.ErrInvalidInput) || !strings.Contains(err.Error(), `WithUnreadIndex("")`) {
		t.Errorf("an unread List on a table without the index: %v, want an error naming WithUnreadIndex, not ErrInvalidInput", err)
	}
}

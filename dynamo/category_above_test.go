package dynamo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// TestHostileCategoryAbove: attributes of a user's c#* named like a
// category's Above (a#...) but not in the library's one form of valid
// keys are left alone, as another program's attributes are: Counts is
// unchanged. One in its form that holds no number makes Counts fail with
// ErrInvalidInput, and nothing panics.
func TestHostileCategoryAbove(t *testing.T) {
	ddblocal.Endpoint(t)
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	ib := inbox.New(dynamo.New(c, table))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	if _, err := ib.MarkSeen(ctx, ann); err != nil {
		t.Fatal(err)
	}
	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "invoice", Category: "billing"}); err != nil {
		t.Fatal(err)
	}
	before, err := ib.Counts(ctx, ann)
	if err != nil {
		t.Fatal(err)
	}
	set := func(name string, v types.AttributeValue) {
		t.Helper()
		setNamed(t, c, table, ann.Partition(), driver.CounterSK("", ""), name, v)
	}
	five := &types.AttributeValueMemberN{Value: "5"}
	// "", "!!", padded, a trailing '#', "#" (no key), "b" and "?" (a key
	// with '?'), "YmlsbGluZw" with a group of "" : none is the library's.
	for _, name := range []string{"a#", "a#!!", "a#YmlsbGluZw==", "a#YmlsbGluZw#", "a#Iw", "a#Pw", "a#YmlsbGluZw#Iw"} {
		set(name, five)
	}
	after, err := ib.Counts(ctx, ann)
	if err != nil {
		t.Fatalf("Counts with foreign a# attributes: %v", err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("Counts changed by attributes not the library's (-before +after):\n%s", diff)
	}
	set("a#YmlsbGluZw", &types.AttributeValueMemberS{Value: "x"}) // billing's Above, not a number
	if _, err := ib.Counts(ctx, ann); !errors.Is(err, inbox.ErrInvalidInput) {
		t.Errorf("Counts with billing's Above a string: %v, want ErrInvalidInput", err)
	}
}

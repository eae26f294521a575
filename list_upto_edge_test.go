package inbox_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
)

// TestListUpToGreatestULID: UpTo set to the greatest ULID keeps every
// message, and paging with it goes on below the cursor rather than
// starting again at the top.
func TestListUpToGreatestULID(t *testing.T) {
	ctx := context.Background()
	ib := inbox.New(memstore.New())
	for i := range 5 {
		if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	got := listAll(t, ib, scope.User("ann"), inbox.ListOptions{Limit: 2, UpTo: "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"})
	if len(got) != 5 {
		t.Fatalf("listed %d messages, want 5: %v", len(got), got)
	}
}

package inbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// failMarksOf fails, with ErrThrottled, the Mark calls on user's
// partition.
type failMarksOf struct {
	inbox.Store
	user string
}

func (s failMarksOf) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	if len(marks) > 0 && marks[len(marks)-1].Key.Partition.User == s.user {
		return driver.ErrThrottled
	}
	return s.Store.Mark(ctx, marks, deltas)
}

// TestRedactCountsEveryCopyRemoved: when one recipient's copy fails, the
// count Redact returns with the error is still every copy it removed.
func TestRedactCountsEveryCopyRemoved(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	users := []string{"ann", "bob", "cid"}
	res, err := inbox.New(mem).Publish(ctx, scope, users, inbox.Draft{Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	n, err := inbox.New(failMarksOf{Store: mem, user: "ann"}).Redact(ctx, scope, inbox.Redaction{ID: res.Message.ID, Users: users})
	if !errors.Is(err, inbox.ErrThrottled) {
		t.Fatalf("Redact: %v, want ErrThrottled", err)
	}
	left := 0
	for _, u := range users {
		p, err := inbox.New(mem).List(ctx, scope.User(u), inbox.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		left += len(p.Messages)
	}
	if removed := len(users) - left; n != removed {
		t.Errorf("Redact returned %d removed, with %v; %d copies were removed", n, err, removed)
	}
}

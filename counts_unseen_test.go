package inbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// markBetweenStore lets another process's MarkRead land right after the
// first read of ann's partition: if Counts made a second read of it, the
// two reads would see her partition before and after the mark.
type markBetweenStore struct {
	inbox.Store
	user  inbox.Partition
	once  sync.Once
	reads int
	mark  func()
}

func (s *markBetweenStore) after(p inbox.Partition) {
	if p == s.user {
		s.reads++
		s.once.Do(s.mark)
	}
}

func (s *markBetweenStore) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	res, err := s.Store.Query(ctx, q)
	s.after(q.Partition)
	return res, err
}

func (s *markBetweenStore) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	st, err := s.Store.Stats(ctx, q)
	s.after(q.Partition)
	return st, err
}

// TestUnseenIsOneViewWithTheStats: a read made while one Counts call is
// under way must not leave Unseen counting a message that Unread no
// longer counts. Counts takes both from one read of the user's partition
// (her counter's Above and its unread tally), so they agree whatever
// lands after it.
func TestUnseenIsOneViewWithTheStats(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now))
	other := inbox.New(mem, inbox.WithClock(clock.Now))
	ann := scope.User("ann")
	if _, err := other.MarkSeen(ctx, ann); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	res, err := other.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "new"})
	if err != nil {
		t.Fatal(err)
	}
	store := &markBetweenStore{Store: mem, user: partitionOf("ann"), mark: func() {
		if _, err := other.MarkRead(ctx, ann, res.Message.ID); err != nil {
			t.Error(err)
		}
	}}
	c, err := inbox.New(store, inbox.WithClock(clock.Now)).Counts(ctx, ann)
	if err != nil {
		t.Fatal(err)
	}
	if store.reads != 1 {
		t.Errorf("Counts read ann's partition %d times, want once", store.reads)
	}
	if c.Unseen != c.Unread || c.Unread != 1 {
		t.Errorf("Counts %+v: Unseen %d, Unread %d; want both 1 (the view before the mark)", c, c.Unseen, c.Unread)
	}
	if c, _ = other.Counts(ctx, ann); c.Unseen != 0 || c.Unread != 0 {
		t.Errorf("Counts after the mark %+v: want Unseen and Unread 0", c)
	}
}

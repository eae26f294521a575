package inbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// beforeThreadQuery runs f once, before the first read of a thread's
// messages (a Query with Thread, of records).
type beforeThreadQuery struct {
	inbox.Store
	once sync.Once
	f    func()
}

func (s *beforeThreadQuery) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	if q.Thread != "" && !q.Threads {
		s.once.Do(s.f)
	}
	return s.Store.Query(ctx, q)
}

// TestListThreadsPreviewOneView: a thread whose newest message u
// archived shows as its preview the newest message u sees, read after
// its counts; a mark landing between the two reads must not show the
// preview read beside counts that have it unread.
func TestListThreadsPreviewOneView(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := memstore.New(memstore.WithClock(clock))
	other := inbox.New(mem, inbox.WithClock(clock))
	ann := scope.User("ann")
	first, err := other.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "first", Thread: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	second, err := other.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "second", Thread: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Archive(ctx, ann, second.Message.ID); err != nil {
		t.Fatal(err)
	}
	st := &beforeThreadQuery{Store: mem, f: func() {
		if _, err := other.MarkRead(ctx, ann, first.Message.ID); err != nil {
			t.Error(err)
		}
	}}
	page, err := inbox.New(st, inbox.WithClock(clock)).ListThreads(ctx, ann, inbox.ThreadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Threads) != 1 {
		t.Fatalf("threads: %+v", page.Threads)
	}
	th := page.Threads[0]
	if th.Latest.ID != first.Message.ID {
		t.Fatalf("preview %q, want %q", th.Latest.Title, "first")
	}
	if th.Latest.IsRead() != (th.Unread == 0) {
		t.Errorf("preview read %v beside counts %+v: a torn read", th.Latest.IsRead(), th.Tally)
	}
}

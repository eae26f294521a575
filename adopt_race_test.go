package inbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// adoptingStore adopts another program's direct message (gives it a
// ledger entry, as Recount or the stream handler does) right before the
// first Mark that reaches it: after the Inbox read the message, before its
// mark is applied.
type adoptingStore struct {
	*memstore.Store
	once sync.Once
	rec  driver.Record
}

func (s *adoptingStore) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	s.once.Do(func() {
		as := driver.LedgerSK(s.rec.Message.ExpiresAt, s.rec.Message.ID, "adopted")
		if err := s.Store.Repair(ctx, s.rec.Partition, driver.Repair{Adopt: []driver.Record{s.rec}, AdoptAs: []string{as}}); err != nil {
			panic(err)
		}
	})
	return s.Store.Mark(ctx, marks, deltas)
}

// TestMarksRaceAnAdoption: MarkRead, Archive, Delete and Redact of another
// program's message that is adopted while they run read it again and do
// what they were asked, rather than report it missing.
func TestMarksRaceAnAdoption(t *testing.T) {
	ann := scope.User("ann")
	ops := map[string]func(context.Context, *inbox.Inbox, string) (bool, error){
		"MarkRead": func(ctx context.Context, ib *inbox.Inbox, id string) (bool, error) { return ib.MarkRead(ctx, ann, id) },
		"Archive":  func(ctx context.Context, ib *inbox.Inbox, id string) (bool, error) { return ib.Archive(ctx, ann, id) },
		"Delete":   func(ctx context.Context, ib *inbox.Inbox, id string) (bool, error) { return ib.Delete(ctx, ann, id) },
		"Redact": func(ctx context.Context, ib *inbox.Inbox, id string) (bool, error) {
			n, err := ib.Redact(ctx, scope, inbox.Redaction{ID: id, Users: []string{"ann"}})
			return n == 1, err
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			mem := memstore.New(memstore.WithClock(clock.Now))
			p := partitionOf("ann")
			rec := driver.Record{Partition: p, Message: inbox.Message{ID: imageID, Audience: inbox.Audience{Kind: inbox.AudienceUsers, UIDs: []string{"ann"}},
				Title: "from another program", ReceivedAt: clock.Now(), DeliveredAt: clock.Now(), ExpiresAt: clock.Now().Add(time.Hour)}}
			if err := mem.PutForeign(ctx, rec, []driver.Counter{{Partition: p, Published: 1}}); err != nil {
				t.Fatal(err)
			}
			ib := inbox.New(&adoptingStore{Store: mem, rec: rec}, inbox.WithClock(clock.Now))
			changed, err := op(ctx, ib, rec.Message.ID)
			if err != nil || !changed {
				t.Fatalf("%s during an adoption: changed %v, %v; want true, nil", name, changed, err)
			}
			if _, err := ib.Get(ctx, ann, rec.Message.ID); name == "Delete" || name == "Redact" {
				if !errors.Is(err, inbox.ErrNotFound) {
					t.Errorf("Get after %s: %v, want ErrNotFound", name, err)
				}
			} else if err != nil {
				t.Errorf("Get after %s: %v", name, err)
			}
			countsAgree(t, ib, ann, name)
		})
	}
}

// TestDeleteOfAForeignMessageCountsOnce: a user's Delete of another
// program's direct message (no ledger entry) is counted once, though the
// stream reports the deletion later: the message is adopted before it is
// deleted, so the report finds its entry gone with it.
func TestDeleteOfAForeignMessageCountsOnce(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	mem := memstore.New(memstore.WithClock(clock.Now), memstore.WithStreamLag())
	ib := inbox.New(mem, inbox.WithClock(clock.Now))
	ann := scope.User("ann")
	p := partitionOf("ann")
	rec := driver.Record{Partition: p, Message: inbox.Message{ID: imageID, Audience: inbox.Audience{Kind: inbox.AudienceUsers, UIDs: []string{"ann"}},
		Title: "from another program", ReceivedAt: clock.Now(), DeliveredAt: clock.Now(), ExpiresAt: clock.Now().Add(time.Hour)}}
	if err := mem.PutForeign(ctx, rec, []driver.Counter{{Partition: p, Published: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "own"}); err != nil {
		t.Fatal(err)
	}
	if deleted, err := ib.Delete(ctx, ann, rec.Message.ID); err != nil || !deleted {
		t.Fatalf("Delete: %v, %v", deleted, err)
	}
	countsAgree(t, ib, ann, "after the delete")
	if _, err := mem.Deliver(ctx); err != nil {
		t.Fatal(err)
	}
	if c := countsAgree(t, ib, ann, "after the stream reported it"); c.Total != 1 {
		t.Errorf("Counts.Total %d, want 1", c.Total)
	}
}

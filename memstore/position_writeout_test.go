package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/internal/racetest"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// writeOutStore is a memstore that feeds its changes and hands them to
// the stream handler of an Inbox of its own right after each cover mark,
// so that every read position is written out at once.
type writeOutStore struct {
	*memstore.Store
	ib    *inbox.Inbox
	moves int
}

func (s *writeOutStore) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	err := s.Store.Mark(ctx, marks, deltas)
	for _, mk := range marks {
		if err == nil && mk.Cover != nil && !mk.Cover.To.IsZero() {
			s.moves++
			if _, derr := s.DeliverChanges(ctx, s.ib.HandleChange); derr != nil {
				return derr
			}
			break
		}
	}
	return err
}

// TestPropertyPositionsWrittenOut is the property run with every read
// position written out by the stream handler as soon as it moves.
func TestPropertyPositionsWrittenOut(t *testing.T) {
	t.Parallel()
	racetest.SkipUnderRace(t, "memstore/conformance_test.go")
	var w *writeOutStore
	storetest.RunPropertyChats(t, func(_ testing.TB, now func() time.Time) driver.Store {
		st := memstore.New(memstore.WithClock(now), memstore.WithChanges())
		w = &writeOutStore{Store: st, ib: inbox.New(st, inbox.WithClock(now))}
		return w
	}, 1000)
	t.Logf("%d read positions moved and written out", w.moves)
}

// TestPropertyChats is the property run with chats marked read often,
// their read positions standing (no stream handler writes them out),
// with removals accounted late.
func TestPropertyChats(t *testing.T) {
	t.Parallel()
	racetest.SkipUnderRace(t, "memstore/conformance_test.go")
	storetest.RunPropertyChats(t, newLagStore, 1000)
}

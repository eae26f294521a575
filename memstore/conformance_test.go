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

// newStore returns a memstore on the suite's clock, so that records expire
// (and are accounted) as the suite advances it.
func newStore(_ testing.TB, now func() time.Time) driver.Store {
	return memstore.New(memstore.WithClock(now))
}

// TestConformance runs the suite on a Store that feeds its changes, so
// that the suite also checks the events they make.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(_ testing.TB, now func() time.Time) driver.Store {
		return feedStore{memstore.New(memstore.WithClock(now), memstore.WithChanges())}
	})
}

// propertySteps is the length of the long property runs: 3,000 steps,
// or 500 under the race detector, which makes them some six times
// slower. make test runs them whole without it too. Their steps follow
// one another: what the detector can find in them is in the Inbox's
// parallel reads within a step, which 500 steps make as 3,000 do, and
// which the conformance suite and the fleet test (several processes at
// once) run under it in full.
func propertySteps() int {
	if racetest.Enabled {
		return 500
	}
	return 3000
}

// Some tests skip under the race detector (racetest.SkipUnderRace): those whose point is
// the store's behaviour (removals accounted late, seeds of the fleet run
// that once failed) and which adds no concurrency to what this package's
// other tests run under the detector. Under it such a test costs some
// four times the CPU it does without, in make test, which runs it in its
// line without -race with the long property runs (see the Makefile).

func TestProperty(t *testing.T) {
	t.Parallel()
	storetest.RunProperty(t, newStore, propertySteps())
}

// newLagStore returns a memstore whose removals wait for the suite's
// delivery, as behind a lagging stream, and are then handed to the
// HandleChange of an Inbox of their own (on the suite's clock), as the
// table's stream to the StreamHandler.
func newLagStore(_ testing.TB, now func() time.Time) driver.Store {
	st := memstore.New(memstore.WithClock(now), memstore.WithStreamLag())
	st.HandleRemovalsWith(inbox.New(st, inbox.WithClock(now)).HandleChange)
	return st
}

// TestConformanceWithStreamLag runs the suite with removals held for
// delivery. Not under the race detector (racetest.SkipUnderRace): what it adds to
// TestConformance is the suite's removals accounted late, through the
// same code that TestPropertyWithStreamLag, TestPropertyCached and
// TestFleetProperty run under the detector.
func TestConformanceWithStreamLag(t *testing.T) {
	t.Parallel()
	racetest.SkipUnderRace(t, "memstore/conformance_test.go")
	storetest.Run(t, newLagStore)
}

func TestPropertyCached(t *testing.T) {
	t.Parallel()
	storetest.RunPropertyCached(t, newLagStore, propertySteps())
}

func TestPropertyWithStreamLag(t *testing.T) {
	t.Parallel()
	storetest.RunProperty(t, newLagStore, propertySteps())
}

// TestFleetPropertyReadBySeeds replays fleet runs that found reader
// items out of step with what the receipts' ledger entries count: seed 12,
// a receipt another program read, unarchived by its user before the stream
// handler saw that read, had no item (her mark kept the read, so it wrote
// none); seed 15, a receipt its user had deleted, read by another program
// and recounted by the stream handler, got one (ReadBy listed a user who
// deleted the message).
//
// Not under the race detector (racetest.SkipUnderRace): the fleet's steps follow
// one another, and TestFleetProperty runs them under it.
func TestFleetPropertyReadBySeeds(t *testing.T) {
	racetest.SkipUnderRace(t, "memstore/conformance_test.go")
	for _, c := range []struct {
		seed  string
		steps int
	}{{"12", 150}, {"15", 250}} {
		t.Run("seed"+c.seed, func(t *testing.T) {
			t.Setenv(storetest.PropertySeedEnv, c.seed)
			storetest.RunFleetProperty(t, newLagStore, c.steps)
		})
	}
}

func TestFleetProperty(t *testing.T) {
	t.Parallel()
	steps := 400
	if testing.Short() {
		steps = 100
	}
	storetest.RunFleetProperty(t, newLagStore, steps)
}

// feedStore is a memstore with its change feed on: a storetest.EventSource.
type feedStore struct{ *memstore.Store }

// DeliverEvents hands the Store's changes to ib.
func (f feedStore) DeliverEvents(ctx context.Context, ib *inbox.Inbox) (int, error) {
	return f.DeliverChanges(ctx, ib.HandleChange)
}

package memstore_test

import (
	"testing"
	"time"

	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// newStore returns a memstore on the suite's clock, so that records expire
// (and are accounted) as the suite advances it.
func newStore(_ testing.TB, now func() time.Time) driver.Store {
	return memstore.New(memstore.WithClock(now))
}

func TestConformance(t *testing.T) {
	storetest.Run(t, newStore)
}

func TestProperty(t *testing.T) {
	storetest.RunProperty(t, newStore, 3000)
}

// newLagStore returns a memstore whose removals wait for the suite's
// delivery, as behind a lagging stream.
func newLagStore(_ testing.TB, now func() time.Time) driver.Store {
	return memstore.New(memstore.WithClock(now), memstore.WithStreamLag())
}

func TestConformanceWithStreamLag(t *testing.T) {
	storetest.Run(t, newLagStore)
}

func TestPropertyCached(t *testing.T) {
	storetest.RunPropertyCached(t, newLagStore, 3000)
}

func TestPropertyWithStreamLag(t *testing.T) {
	storetest.RunProperty(t, newLagStore, 3000)
}

func TestFleetProperty(t *testing.T) {
	steps := 400
	if testing.Short() {
		steps = 100
	}
	storetest.RunFleetProperty(t, func(_ testing.TB, now func() time.Time) driver.Store {
		return memstore.New(memstore.WithClock(now), memstore.WithStreamLag())
	}, steps)
}

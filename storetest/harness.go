package storetest

import (
	"context"

	"github.com/stak/inbox/driver"
)

// A Harness is a store under test that can remove records the way
// DynamoDB's TTL or a DeleteItem does and may hold the stream's accounting
// of removals until the suite delivers it. NewStore may return one
// (memstore with WithStreamLag is one); Run and RunProperty then also test
// removals accounted late, twice, and while Recount runs.
type Harness interface {
	driver.Store
	// Delete deletes the record at k, if there is one, as a DeleteItem
	// would; its removal is accounted as the stream handler does, at once
	// or when Deliver is called. It reports whether a record was there.
	Delete(ctx context.Context, k driver.Key) (bool, error)
	// Deliver accounts every removal held since the last Deliver (made by
	// Delete, or by the store's own expiry), in order, as the stream
	// handler does, and reports how many it handled.
	Deliver(ctx context.Context) (int, error)
	// Redeliver accounts again every removal delivered so far, as a stream
	// that delivers records more than once.
	Redeliver(ctx context.Context) (int, error)
	// Pending reports how many removals wait for Deliver.
	Pending() int
}

// harness returns the env's store as a Harness, if it is one.
func (e *env) harness() (Harness, bool) {
	h, ok := e.store.(Harness)
	return h, ok
}

// needHarness returns the env's Harness, or skips the test.
func (e *env) needHarness() Harness {
	e.t.Helper()
	h, ok := e.harness()
	if !ok {
		e.t.Skip("the store is not a storetest.Harness: records cannot be removed")
	}
	return h
}

// remove deletes the record at k through the harness.
func (e *env) remove(h Harness, k driver.Key) {
	e.t.Helper()
	if _, err := h.Delete(e.ctx, k); err != nil {
		e.t.Fatalf("Delete(%s/%s): %v", k.Partition.PK(), k.ID, err)
	}
}

// deliver delivers the held removals.
func (e *env) deliver(h Harness) {
	e.t.Helper()
	if _, err := h.Deliver(e.ctx); err != nil {
		e.t.Fatalf("Deliver: %v", err)
	}
}

// redeliver delivers every removal again.
func (e *env) redeliver(h Harness) {
	e.t.Helper()
	if _, err := h.Redeliver(e.ctx); err != nil {
		e.t.Fatalf("Redeliver: %v", err)
	}
}

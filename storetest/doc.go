// Package storetest is the conformance suite every driver.Store must pass:
// the in-memory memstore, the DynamoDB store, and any Store of your own
// (a cached one, say). Passing it is what lets an inbox.Inbox run on a
// Store without its author reading the Inbox's code.
//
// # Running it against your Store
//
// Write one test file in your store's package that hands the suite a
// function returning a fresh, empty store for each test:
//
//	package mystore_test
//
//	import (
//		"testing"
//		"time"
//
//		"github.com/stak/inbox"
//		"github.com/stak/inbox/storetest"
//		"example.com/mystore"
//	)
//
//	func newStore(t testing.TB, now func() time.Time) driver.Store {
//		s := mystore.Open(t.TempDir()) // fresh and empty for every test
//		t.Cleanup(func() { s.Close() })
//		return s
//	}
//
//	func TestConformance(t *testing.T) { storetest.Run(t, newStore) }
//
//	func TestProperty(t *testing.T) { storetest.RunProperty(t, newStore, 1000) }
//
// and run it with the race detector: go test -race ./mystore/. Each
// subtest of Run is named for what it checks (go test -run
// 'TestConformance/Store/QueryPaging'); RunProperty logs its seed, and
// INBOX_PROPERTY_SEED=<seed> replays a failure.
//
// # Time and expiry
//
// Every test has its own Clock, starting at 2100-01-01T00:00:00Z, a whole
// second (stores keep one-second precision) far enough ahead that a store
// whose records expire by real time, as DynamoDB's TTL does, never deletes
// one during the suite. The suite passes the clock's Now to the Inbox and
// to newStore, and advances it to make messages expire. A store that
// decides expiry by a clock of its own should use now; one that expires
// records by real time may ignore it.
//
// The suite does not assume expired records are deleted, nor that they are
// kept. A store may keep them until much later (DynamoDB deletes hours or
// days late, and the Inbox hides them meanwhile) or delete them as soon as
// they expire, provided it then accounts each removal in the counters, as
// inbox.StreamHandler does for DynamoDB and memstore does by itself.
//
// # What is checked
//
// Run's subtests fall in four groups: Store calls each method of the
// driver.Store contract directly (conditions, errors, atomicity, Query's
// order, paging and filters, Stats, the ledger, removals and repairs);
// RoundTrip writes bodies, times, audiences and unicode keys and reads them
// back exactly; Inbox drives an inbox.Inbox over the store (publish,
// broadcast, list, pagination, filters, expiry, mark read, counts through
// expiry and removals, recount, host system IDs, TTL resolution, bad
// input); Concurrency races real goroutines on marks and publishes.
// RunProperty checks random operation sequences against a reference model.
//
// Query is held to what the Inbox relies on: a page holds exactly the
// records that match its filters among those from Before down to Next, at
// most Limit of them before filtering, newest first, and paging until Next
// is "" visits every record once. A store may return a non-empty Next
// when no record is left below it (DynamoDB sets LastEvaluatedKey whenever
// Limit stopped a query); the next page is then empty.
//
// After every subtest outside the Store group, and after every step of
// RunProperty, the invariant the design rests on must hold for every
// partition the test used: its counters equal a tally of its ledger
// entries, every record has the entry that records it, and an entry
// without a record is one whose removal is pending (a Harness says how
// many); with none pending, the counters equal a recount of the records,
// computed by the suite itself from Store.Query (expired records included:
// their removal has not been accounted while they exist). And Counts must
// equal what List shows.
//
// # Removals
//
// A store whose NewStore result is a Harness (memstore with
// WithStreamLag, or the DynamoDB store with its table's stream, as in the
// dynamo package's tests) lets the suite delete records as TTL or an
// operator would and deliver the stream's accounting late, twice, or after
// a Recount; RunProperty then interleaves those with its other operations.
//
// A store that returns errors for transient conditions (throttling,
// transaction conflicts under the concurrency tests) must retry them
// itself: the suite treats every unexpected error as a failure.
package storetest

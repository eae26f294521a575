package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/stak/inbox/driver"
)

// NewStore returns a fresh, empty store for one test. now is the suite's
// clock for that test: a store that decides expiry by a clock of its own
// (such as memstore) should use it; a store whose records expire by real
// time (DynamoDB's TTL) may ignore it. Register any cleanup with t.Cleanup.
type NewStore func(t testing.TB, now func() time.Time) driver.Store

// startUnix is when every test's clock starts, 2100-01-01T00:00:00Z: a
// whole second, so that a store's one-second precision loses nothing, and
// far in the future, so that a store whose records expire by real time
// (DynamoDB deletes items whose expiredat is in the past) never removes one
// during the suite. Only the suite's clock makes records expire.
const startUnix = 4102444800

// startTime returns the time every test's clock starts at.
func startTime() time.Time { return time.Unix(startUnix, 0).UTC() }

// Run runs the conformance suite against the stores newStore returns, one
// fresh store per subtest:
//
//   - Store: each method of the driver.Store contract, called directly;
//   - RoundTrip: message fields, bodies, times and keys as written are
//     read back exactly;
//   - Inbox: the behaviour of an inbox.Inbox over the store (publish,
//     broadcast, list, get, mark read, counts, recount, host system IDs,
//     TTLs, bad input);
//   - Concurrency: concurrent marks and publishes count exactly once.
//
// After every RoundTrip, Inbox and Concurrency subtest, each counter of
// every partition the test used must equal a recount of that partition's
// records, computed by the suite itself from Store.Query.
//
// The suite does not assume that expired records are deleted: it passes
// for stores that delete them as soon as they expire (and account the
// removal) and for stores that delete them late.
func Run(t *testing.T, newStore NewStore) {
	t.Run("Store", func(t *testing.T) {
		runAll(t, newStore, slices.Concat(contractTests(), stateTests(), preferencesTests(), mutedTests(), positionTests(), aggregateContractTests()), false)
	})
	t.Run("RoundTrip", func(t *testing.T) { runAll(t, newStore, roundTripTests(), true) })
	t.Run("Inbox", func(t *testing.T) { runAll(t, newStore, allInboxTests(), true) })
	RunConcurrency(t, newStore)
}

// RunConcurrency runs Run's Concurrency group alone: the suite's subtests
// that start goroutines of their own. A Store's tests may run it alone
// under the race detector, and Run whole without it, where the rest of
// the suite, whose steps follow one another, costs the detector's CPU
// for little it could find.
func RunConcurrency(t *testing.T, newStore NewStore) {
	t.Run("Concurrency", func(t *testing.T) { runAll(t, newStore, concurrencyTests(), true) })
}

// suiteTest is one named subtest of Run.
type suiteTest struct {
	name string
	run  func(e *env)
}

// runAll runs each test as a subtest on a fresh env, in parallel with
// the others (each has a store of its own: a remote one's round trips
// overlap); with invariant set, each test's counters are checked against
// a recount when it ends.
func runAll(t *testing.T, newStore NewStore, tests []suiteTest, invariant bool) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, newStore, 1)
			if invariant {
				e.checkInvariantAtEnd()
			}
			tc.run(e)
		})
	}
}

package storetest

import "testing"

// RunConcurrency runs Run's Concurrency group alone: the suite's subtests
// that start goroutines of their own. For this package's tests.
func RunConcurrency(t *testing.T, newStore NewStore) {
	t.Run("Concurrency", func(t *testing.T) { runAll(t, newStore, concurrencyTests(), true) })
}

package racetest

import "testing"

// SkipUnderRace skips t under the race detector: a test whose steps follow
// one another, which make test runs in its line without the detector (the
// Makefile's NORACE_RUN, which this package's test checks names it).
// where names the file that says why.
func SkipUnderRace(t testing.TB, where string) {
	t.Helper()
	if Enabled {
		t.Skip("not under -race: make test runs it without the race detector (see " + where + ")")
	}
}

// RunSuite runs whole, or, under the race detector, concurrency alone (a
// conformance suite's group whose goroutines race on the store): make
// test runs the test whole in its line without the detector. where names
// the file that says why.
func RunSuite(t *testing.T, whole, concurrency func(*testing.T), where string) {
	t.Helper()
	if Enabled {
		t.Log("under -race, the Concurrency group only: make test runs the whole suite without the race detector (see " + where + ")")
		concurrency(t)
		return
	}
	whole(t)
}

//go:build race

package racetest

// Enabled reports whether the tests were built with the race detector.
const Enabled = true

//go:build !race

// Package racetest tells a test whether it was built with the race
// detector, so that a long, sequential run can be shortened under it
// (where it runs some six times slower) and run whole without it.
package racetest

// Enabled reports whether the tests were built with the race detector.
const Enabled = false

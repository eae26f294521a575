package memstore_test

import (
	"testing"

	"github.com/stak/inbox/storetest"
)

// BenchmarkReads runs the read-cost benchmarks (storetest.Benchmarks) on
// memstore, from 1,000 to 100,000 messages of history: the store a
// service's unit tests run on has the cost shape of DynamoDB.
func BenchmarkReads(b *testing.B) {
	storetest.Benchmarks(b, newStore, 1_000, 10_000, 100_000)
}

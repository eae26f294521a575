package memstore_test

import (
	"testing"

	"github.com/stak/inbox/storetest"
)

// BenchmarkReads runs the read-cost benchmarks (storetest.Benchmarks) on
// memstore, from 1,000 to 100,000 messages of history: the store a
// service's unit tests run on has the cost shape of DynamoDB. Redacted
// broadcasts, whose tombstones Counts reads, stop at 10,000. MarkRead
// runs on a feed of 10 too: a large feed's costs what a small one's does;
// MarkAllRead of a chat, on chats of 10 and 1,000 unread.
func BenchmarkReads(b *testing.B) {
	for _, c := range storetest.BenchCases {
		for _, n := range []int{10, 1_000, 10_000, 100_000} {
			if n == 10 && c != "MarkRead/messages" && c != "MarkAllRead/chat" || n > 1_000 && c == "MarkAllRead/chat" {
				continue
			}
			if n < 100_000 || c != "Counts/redacted" {
				storetest.BenchmarkCase(b, newStore, c, n)
			}
		}
	}
}

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
// MarkAllRead of a chat, one-to-one or a group's, on chats of 10 and
// 1,000 unread; Counts of a group chat read by a position, up to 10,000.
func BenchmarkReads(b *testing.B) {
	for _, c := range storetest.BenchCases {
		for _, n := range []int{10, 1_000, 10_000, 100_000} {
			chat := c == "MarkAllRead/chat" || c == "MarkAllRead/group-chat"
			if n == 10 && c != "MarkRead/messages" && !chat || n > 1_000 && chat || n > 10_000 && c == "Counts/group-chat" {
				continue
			}
			if n < 100_000 || c != "Counts/redacted" {
				storetest.BenchmarkCase(b, newStore, c, n)
			}
		}
	}
}

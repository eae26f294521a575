package storetest

import (
	"time"

	"github.com/stak/inbox"
)

// rvPositionTests are review tests of read positions.
func rvPositionTests() []suiteTest {
	return []suiteTest{
		{"RVPositionConcurrent", testRVPositionConcurrent},
	}
}

// testRVPositionConcurrent: MarkAllRead of a chat, publishes into it,
// MarkRead, Archive and Unarchive of its messages, and the stream
// handler's write-outs, all at once: Counts, ListThreads and the
// counters equal List after, and again once every position is written
// out.
func testRVPositionConcurrent(e *env) {
	e.needPositions()
	ann := e.user("ann")
	ids := e.chatOf(12, 3)
	src, events := e.store.(EventSource)
	for round := range 3 {
		const n = 16
		published := make([]inbox.Message, n)
		e.concurrent(n, func(i int) (bool, error) {
			id := ids[(i*7+round)%len(ids)]
			switch i % 8 {
			case 0, 4:
				_, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm"})
				return false, err
			case 1:
				res, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Title: "more", Thread: "dm", Category: "billing"})
				published[i] = res.Message
				return false, err
			case 2:
				return e.ib.MarkRead(e.ctx, ann, id)
			case 3:
				return e.ib.Archive(e.ctx, ann, id)
			case 5:
				return e.ib.Unarchive(e.ctx, ann, id)
			case 6:
				if events {
					_, err := src.DeliverEvents(e.ctx, e.ib)
					return false, err
				}
				return false, nil
			default:
				_, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "dm", UpTo: id})
				return false, err
			}
		})
		for _, m := range published {
			if m.ID != "" {
				e.active(m, "", e.part("ann"))
			}
		}
		e.clock.Advance(time.Second)
		e.wantCountsFromFeed(ann)
		e.checkInvariant()
		if e.t.Failed() {
			e.t.Fatalf("after round %d", round)
		}
	}
	if events {
		if _, err := src.DeliverEvents(e.ctx, e.ib); err != nil {
			e.t.Fatal(err)
		}
		e.wantCountsFromFeed(ann)
	}
}

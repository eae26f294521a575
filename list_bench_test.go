package inbox_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// BenchmarkMemstoreList measures a first page of 20 on the in-memory
// store, the store users' own unit tests run on, against the feed's size:
// direct messages (a tenth read), with 10 broadcasts to everyone, the
// shared cache on as by default. Its time and allocations must not grow
// with the feed.
func BenchmarkMemstoreList(b *testing.B) {
	for _, size := range []int{100, 1000, 10000} {
		for _, unread := range []bool{false, true} {
			b.Run("messages="+strconv.Itoa(size)+"/unread="+strconv.FormatBool(unread), func(b *testing.B) {
				ctx := context.Background()
				clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
				ib := inbox.New(memstore.New(memstore.WithClock(clock.Now)), inbox.WithClock(clock.Now))
				ann := scope.User("ann")
				for i := range size {
					res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "m" + strconv.Itoa(i), Category: "ops", Body: map[string]any{"n": i}})
					if err != nil {
						b.Fatal(err)
					}
					if i%10 == 0 {
						if _, err := ib.MarkRead(ctx, ann, res.Message.ID); err != nil {
							b.Fatal(err)
						}
					}
					if i%(size/10) == 0 {
						if _, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "all"}); err != nil {
							b.Fatal(err)
						}
					}
				}
				o := inbox.ListOptions{Limit: 20, UnreadOnly: unread}
				if p, err := ib.List(ctx, ann, o); err != nil || len(p.Messages) != 20 {
					b.Fatalf("List = %d messages, %v", len(p.Messages), err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := ib.List(ctx, ann, o); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

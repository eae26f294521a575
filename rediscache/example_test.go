package rediscache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/rediscache"
)

// Every process of a fleet wires the same Redis into its Inbox; the first
// to miss a shared partition reads it from the store, and the others load
// its snapshot from Redis. (memstore stands in for dynamo.New here.) It
// needs a Redis server, so it is compiled but not run.
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{
		Addr: "127.0.0.1:6379",
		// Bound what a slow or absent Redis costs a List: on a failure the
		// Inbox reads the store instead.
		DialTimeout:   100 * time.Millisecond,
		ReadTimeout:   100 * time.Millisecond,
		DialerRetries: 1,
	})
	defer client.Close()

	store := memstore.New() // dynamo.New(dynamodb.NewFromConfig(cfg), "inbox") in production
	ib := inbox.New(store,
		inbox.WithSharedCache(time.Second), // the default; the same in every process
		inbox.WithSharedBackend(rediscache.New(client, rediscache.WithPrefix("myapp:"))))

	alerts := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	if _, err := ib.Broadcast(ctx, alerts, inbox.Draft{Title: "Maintenance Saturday 22:00"}); err != nil {
		fmt.Println(err)
		return
	}
	page, err := ib.List(ctx, alerts.User("ann"), inbox.ListOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(page.Messages[0].Title)
}

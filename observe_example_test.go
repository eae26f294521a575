package inbox_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
)

// ExampleWithHooks reports each operation of an Inbox to a function of
// the service's: here it prints the operation, its outcome class and its
// Store calls (over DynamoDB, its requests, round trips and capacity
// units are in r.Totals). Package otelinbox makes OpenTelemetry spans and
// metrics of the same reports, and LogHooks logs them.
func ExampleWithHooks() {
	ctx := context.Background()
	var mu sync.Mutex // hooks are called concurrently
	hooks := inbox.Hooks{
		Operation: func(ctx context.Context, op inbox.Operation) (context.Context, func(inbox.OperationReport)) {
			return ctx, func(r inbox.OperationReport) {
				mu.Lock()
				defer mu.Unlock()
				fmt.Printf("%s %s/%s: %v, %d store calls\n", r.Name, r.Scope.Tenant, r.Scope.Inbox, r.Outcome, r.StoreCalls)
			}
		},
	}
	ib := inbox.New(memstore.New(), inbox.WithHooks(hooks))
	s := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	if _, err := ib.Publish(ctx, s, []string{"ann", "bob", "cy"}, inbox.Draft{Title: "Disk full"}); err != nil {
		fmt.Println(err)
	}
	if _, err := ib.Counts(ctx, s.User("ann")); err != nil {
		fmt.Println(err)
	}
	if _, err := ib.MarkRead(ctx, s.User("ann"), "not-an-id"); err != nil {
		fmt.Println("MarkRead:", inbox.OutcomeOf(err))
	}
	// Output:
	// Publish acme/alerts: ok, 4 store calls
	// Counts acme/alerts: ok, 7 store calls
	// MarkRead acme/alerts: bad_input, 0 store calls
	// MarkRead: bad_input
}

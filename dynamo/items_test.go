package dynamo_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
)

// itemsClient is a Client that notes the number of items of each
// TransactWriteItems it passes on in the itemsProbe of the call's
// context, if it has one: the conformance suites' harness checks with it
// that driver.PutItems, driver.MarkItems and driver.RemovalItems count the
// transactions the Store makes, so that memstore refuses exactly the
// calls DynamoDB refuses for their size.
type itemsClient struct{ dynamo.Client }

// TransactWriteItems notes the request's items and passes it on.
func (c itemsClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if p, ok := ctx.Value(itemsProbeKey{}).(*itemsProbe); ok {
		p.mu.Lock()
		p.sizes = append(p.sizes, len(in.TransactItems))
		p.mu.Unlock()
	}
	return c.Client.TransactWriteItems(ctx, in, optFns...)
}

// itemsProbe holds the number of items of each transaction of one call.
type itemsProbe struct {
	mu    sync.Mutex
	sizes []int
}

type itemsProbeKey struct{}

// probed returns ctx with a new itemsProbe, and the probe.
func probed(ctx context.Context) (context.Context, *itemsProbe) {
	p := &itemsProbe{}
	return context.WithValue(ctx, itemsProbeKey{}, p), p
}

// check returns an error if the call's first transaction did not hold
// want items, or a later one (made again, without some Above changes)
// more than most.
func (p *itemsProbe) check(call string, want, most int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, n := range p.sizes {
		if i == 0 && n != want || n > most {
			return fmt.Errorf("%s made transactions of %v items, want the first of %d (driver's count) and none of more than %d", call, p.sizes, want, most)
		}
	}
	return nil
}

// PutMessage is the Store's, checking that its transactions hold as many
// items as driver.PutItems counts.
func (h *localHarness) PutMessage(ctx context.Context, rec driver.Record, deltas []driver.Counter, receipts ...driver.Mark) error {
	ctx, p := probed(ctx)
	err := h.Store.PutMessage(ctx, rec, deltas, receipts...)
	without := make([]driver.Counter, len(deltas))
	for i, d := range deltas {
		d.Above = 0
		without[i] = d
	}
	if err := p.check("PutMessage", driver.PutItems(rec, deltas, receipts), driver.PutItems(rec, without, receipts)); err != nil {
		return err
	}
	return err
}

// Mark is the Store's, checking that its transactions hold as many items
// as driver.MarkItems counts.
func (h *localHarness) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	ctx, p := probed(ctx)
	err := h.Store.Mark(ctx, marks, deltas)
	n := driver.MarkItems(marks, deltas)
	if err := p.check("Mark", n, n); err != nil {
		return err
	}
	return err
}

// ApplyRemoval is the Store's, checking that its transactions hold as
// many items as driver.RemovalItems counts.
func (h *localHarness) ApplyRemoval(ctx context.Context, r driver.Removal) (bool, error) {
	ctx, p := probed(ctx)
	applied, err := h.Store.ApplyRemoval(ctx, r)
	without := r
	without.Deltas = make([]driver.Counter, len(r.Deltas))
	for i, d := range r.Deltas {
		d.Above = 0
		without.Deltas[i] = d
	}
	if err := p.check("ApplyRemoval", driver.RemovalItems(r), driver.RemovalItems(without)); err != nil {
		return false, err
	}
	return applied, err
}

package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// eventKinds records the kinds of the events it is given, and fails the
// first event of kind failOn once.
type eventKinds struct {
	got    []inbox.EventKind
	failOn inbox.EventKind
}

var errHandler = errors.New("handler down")

func (k *eventKinds) handle(_ context.Context, e inbox.Event) error {
	k.got = append(k.got, e.Kind)
	if e.Kind == k.failOn {
		k.failOn = ""
		return errHandler
	}
	return nil
}

// TestChangesExpiryAndRetry: with WithChanges, a message that expires makes
// an expired event (a removal by TTL) when the feed is delivered; a change
// whose handler fails comes first on the next delivery, and its removal is
// accounted once.
func TestChangesExpiryAndRetry(t *testing.T) {
	clk := newClock()
	st := memstore.New(memstore.WithClock(clk.Now), memstore.WithChanges())
	kinds := &eventKinds{failOn: inbox.EventExpired}
	ib := inbox.New(st, inbox.WithClock(clk.Now), inbox.WithEvents(kinds.handle))
	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "short", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "long"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	n, err := st.DeliverChanges(ctx, ib.HandleChange)
	if n != 2 || !errors.Is(err, errHandler) {
		t.Fatalf("DeliverChanges = %d, %v; want 2 (the creations), the handler's error", n, err)
	}
	n, err = st.DeliverChanges(ctx, ib.HandleChange)
	if n != 1 || err != nil {
		t.Fatalf("DeliverChanges again = %d, %v; want 1 (the expiry), nil", n, err)
	}
	want := []inbox.EventKind{inbox.EventCreated, inbox.EventCreated, inbox.EventExpired, inbox.EventExpired}
	if diff := cmp.Diff(want, kinds.got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	c, err := ib.Counts(ctx, ann)
	if err != nil || c.Total != 1 || c.Unread != 1 {
		t.Errorf("Counts = %+v, %v; want the broadcast alone", c, err)
	}
	stats, err := st.Stats(ctx, driver.StatsQuery{Partition: annP, Now: clk.Now()})
	if err != nil || len(stats.Counters) != 1 || stats.Counters[0].Published != 0 {
		t.Errorf("ann's counters after the expiry = %+v, %v; want published 0 (counted out once)", stats.Counters, err)
	}
}

// TestChangesAdoptForeign: another program's direct message (no ledger
// entry) is adopted when its change is delivered, as the stream handler
// adopts it: an unread-only List then finds it.
func TestChangesAdoptForeign(t *testing.T) {
	clk := newClock()
	st := memstore.New(memstore.WithClock(clk.Now), memstore.WithChanges())
	ib := inbox.New(st, inbox.WithClock(clk.Now))
	now := clk.Now()
	rec := driver.Record{Partition: annP, Message: driver.Message{
		ID: inbox.IDAt(now), Title: "foreign", ReceivedAt: now, DeliveredAt: now, ExpiresAt: now.Add(time.Hour),
		Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{"ann"}},
	}}
	if err := st.PutForeign(ctx, rec, []driver.Counter{{Partition: annP, Published: 1}}); err != nil {
		t.Fatal(err)
	}
	if n, err := st.DeliverChanges(ctx, ib.HandleChange); n != 1 || err != nil {
		t.Fatalf("DeliverChanges = %d, %v; want 1, nil", n, err)
	}
	got, err := st.GetRecords(ctx, []driver.Key{rec.Key()})
	if err != nil || len(got) != 1 || !got[0].Ledgered() {
		t.Fatalf("the foreign record after its change = %+v, %v; want it adopted (a ledger entry)", got, err)
	}
	// The adoption is a change too, which makes no event and no adoption.
	if n, err := st.DeliverChanges(ctx, ib.HandleChange); n != 1 || err != nil {
		t.Fatalf("DeliverChanges of the adoption = %d, %v; want 1, nil", n, err)
	}
	page, err := ib.List(ctx, ann, inbox.ListOptions{UnreadOnly: true})
	if err != nil || len(page.Messages) != 1 {
		t.Errorf("unread List = %d messages, %v; want the foreign one", len(page.Messages), err)
	}
}

// TestChangesAreCopies: a change handed on is the Store's copy: changing
// it changes nothing stored. Without WithChanges nothing is held.
func TestChangesAreCopies(t *testing.T) {
	clk := newClock()
	st := memstore.New(memstore.WithClock(clk.Now), memstore.WithChanges())
	ib := inbox.New(st, inbox.WithClock(clk.Now))
	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "mine", Body: map[string]any{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DeliverChanges(ctx, func(_ context.Context, c driver.Change) error {
		if c.Op != driver.ChangeInsert || c.New == nil || c.Old != nil || c.ID == "" || !c.At.Equal(clk.Now()) {
			t.Errorf("change %+v: want an insert of the message now", c)
		}
		c.New.Message.Title = "changed"
		c.New.Message.Body.(map[string]any)["k"] = "changed"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	page, err := ib.List(ctx, ann, inbox.ListOptions{})
	if err != nil || len(page.Messages) != 1 || page.Messages[0].Title != "mine" || page.Messages[0].Body.(map[string]any)["k"] != "v" {
		t.Errorf("List after changing the change = %+v, %v; want the message as published", page.Messages, err)
	}

	plain := memstore.New(memstore.WithClock(clk.Now))
	if _, err := inbox.New(plain, inbox.WithClock(clk.Now)).Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "x"}); err != nil {
		t.Fatal(err)
	}
	if n, err := plain.DeliverChanges(ctx, func(context.Context, driver.Change) error { return nil }); n != 0 || err != nil {
		t.Errorf("DeliverChanges without WithChanges = %d, %v; want 0, nil", n, err)
	}
}

package storetest

import (
	"slices"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// checkScheduled compares Inbox.Scheduled, and Inbox.Due of a random
// window (reaching up to four minutes back, ending up to a minute ahead),
// each paged by a random limit, with the model's scheduled messages (the
// users' copies, and each broadcast and group message once, in its
// shared partition): the unexpired ones not due, and the unexpired ones
// due in the window, as positions, in order.
func (p *property) checkScheduled() {
	now := p.now()
	from := now.Add(-time.Duration(p.rng.IntN(240)) * time.Second)
	to := now.Add(time.Duration(1+p.rng.IntN(60)) * time.Second)
	var wantScheduled, wantDue []string
	add := func(id string, part driver.Partition, c *modelCopy) {
		switch {
		case c.deliverAt.IsZero() || !now.Before(c.expiresAt):
		case now.Before(c.deliverAt):
			wantScheduled = append(wantScheduled, driver.ScheduledKey(id, part))
		case !c.deliverAt.Before(from) && c.deliverAt.Before(to):
			wantDue = append(wantDue, driver.ScheduledKey(id, part))
		}
	}
	for _, u := range p.users {
		for id, c := range p.m.direct[u] {
			add(id, p.e.scope.User(u).Partition(), c)
		}
	}
	for id, c := range p.m.broadcasts {
		add(id, groupOf(p.e.scope, cmpOr(c.group, driver.PublicGroup)), c)
	}
	slices.Sort(wantScheduled)
	slices.Sort(wantDue)
	positions := func(ds []inbox.Delivery) []string {
		out := []string{}
		for _, d := range ds {
			out = append(out, deliveryPosition(d))
		}
		return out
	}
	gotScheduled := positions(p.e.deliveriesAll("Scheduled", 1+p.rng.IntN(5), func(o inbox.ScheduledOptions) (inbox.DeliveryPage, error) {
		return p.e.ib.Scheduled(p.e.ctx, p.e.scope, o)
	}))
	gotDue := positions(p.e.dueAll(from, to, 1+p.rng.IntN(5)))
	if !slices.Equal(wantScheduled, gotScheduled) {
		p.e.t.Errorf("step %d: Scheduled = %v, the model has %v", p.step, gotScheduled, wantScheduled)
	}
	if !slices.Equal(wantDue, gotDue) {
		p.e.t.Errorf("step %d: Due(%v, %v) = %v, the model has %v", p.step, from.Format(time.TimeOnly), to.Format(time.TimeOnly), gotDue, wantDue)
	}
}

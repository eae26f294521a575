package storetest

import (
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// testTTL: a message's expiry is now plus the first of its own TTL, the
// inbox config's ttl[category], its ttl.default, the tenant's ttl and 30
// days, capped at 730 days.
func testTTL(e *env) {
	const day = 24 * time.Hour
	type config struct {
		tenant string
		inbox  map[string]string
	}
	setups := []struct {
		name  string
		scope driver.Scope
		cfg   config
	}{
		{"none", driver.Scope{Tenant: "t-none", Inbox: "in"}, config{}},
		{"tenant", driver.Scope{Tenant: "t-tenant", Inbox: "in"}, config{tenant: "10d"}},
		{"inbox default", driver.Scope{Tenant: "t-tenant", Inbox: "default"}, config{inbox: map[string]string{driver.DefaultTTLKey: "5d"}}},
		{"inbox category", driver.Scope{Tenant: "t-tenant", Inbox: "category"}, config{inbox: map[string]string{driver.DefaultTTLKey: "5d", "billing": "2d"}}},
		{"category only", driver.Scope{Tenant: "t-tenant", Inbox: "category-only"}, config{inbox: map[string]string{"billing": "300m", "news": "6000s", "ops": "48h"}}},
		{"capped tenant", driver.Scope{Tenant: "t-capped", Inbox: "in"}, config{tenant: "9999d"}},
		{"capped inbox", driver.Scope{Tenant: "t-capped", Inbox: "capped"}, config{inbox: map[string]string{"billing": "9999d", driver.DefaultTTLKey: "731d"}}},
	}
	for _, s := range setups {
		if s.cfg.tenant != "" {
			if err := e.ib.PutTenantSettings(e.ctx, s.scope.Tenant, driver.TenantSettings{Title: s.name, TTL: s.cfg.tenant}); err != nil {
				e.t.Fatalf("PutTenantSettings(%s): %v", s.name, err)
			}
		}
		if s.cfg.inbox != nil {
			if err := e.ib.PutInboxConfig(e.ctx, s.scope, driver.InboxConfig{Title: s.name, TTL: s.cfg.inbox}); err != nil {
				e.t.Fatalf("PutInboxConfig(%s): %v", s.name, err)
			}
		}
	}
	scope := func(name string) driver.Scope {
		for _, s := range setups {
			if s.name == name {
				return s.scope
			}
		}
		panic("no setup " + name)
	}
	cases := []struct {
		setup    string
		category string
		msgTTL   time.Duration
		want     time.Duration
	}{
		{"none", "", 0, 30 * day},
		{"none", "billing", 0, 30 * day},
		{"none", "", 90 * time.Minute, 90 * time.Minute},
		{"tenant", "", 0, 10 * day},
		{"tenant", "billing", 0, 10 * day},
		{"tenant", "billing", time.Hour, time.Hour},
		{"inbox default", "", 0, 5 * day},
		{"inbox default", "billing", 0, 5 * day},
		{"inbox category", "billing", 0, 2 * day},
		{"inbox category", "news", 0, 5 * day},
		{"inbox category", "", 0, 5 * day},
		{"inbox category", "billing", 3 * day, 3 * day},
		{"category only", "billing", 0, 300 * time.Minute},
		{"category only", "news", 0, 6000 * time.Second},
		{"category only", "ops", 0, 48 * time.Hour},
		{"category only", "other", 0, 10 * day},
		{"category only", "", 0, 10 * day},
		{"capped tenant", "", 0, driver.MaxTTL},
		{"capped tenant", "", 9999 * day, driver.MaxTTL},
		{"capped inbox", "billing", 0, driver.MaxTTL},
		{"capped inbox", "news", 0, driver.MaxTTL},
		{"none", "", 731 * day, 730 * day},
	}
	for i, c := range cases {
		s := scope(c.setup)
		e.clock.Advance(time.Second)
		now := e.clock.Now()
		res := e.publishIn(s, inbox.Draft{Title: c.setup, Category: c.category, TTL: c.msgTTL}, "ann")
		if got := res.Message.ExpiresAt.Sub(now); got != c.want {
			e.t.Errorf("case %d: %s, category %q, message TTL %v: expires %v after publishing, want %v", i, c.setup, c.category, c.msgTTL, got, c.want)
		}
		recs := e.get(driver.Key{Partition: partitionOf(s.User("ann")), ID: res.Message.ID})
		if len(recs) != 1 || !recs[0].Message.ExpiresAt.Equal(now.Add(c.want)) {
			e.t.Errorf("case %d: stored copy %+v, want one expiring at %v", i, recs, now.Add(c.want))
		}
	}
	// Broadcasts resolve the TTL the same way.
	b, err := e.ib.Broadcast(e.ctx, scope("inbox category"), inbox.Draft{Title: "b", Category: "billing"})
	if err != nil {
		e.t.Fatalf("Broadcast: %v", err)
	}
	if got := b.ExpiresAt.Sub(e.clock.Now()); got != 2*day {
		e.t.Errorf("broadcast in %q, category billing: expires %v after publishing, want 48h", "inbox category", got)
	}
	e.userIn(scope("inbox category"), "ann")
}

package storetest

import (
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stak/inbox"
)

// testCounters: Counters returns every stats record of one partition, and
// only those.
func testCounters(e *env) {
	annP, bobP, pubP := e.part("ann"), e.part("bob"), e.pub()
	e.wantCounters(annP)
	for _, cat := range []string{"billing", "news", "", "billing", "ünï-cødé 🙂"} {
		e.put(e.message(annP, cat, time.Hour))
	}
	e.put(e.message(bobP, "billing", time.Hour))
	e.put(e.message(pubP, "news", time.Hour))
	e.wantCounters(annP, counter(annP, "", 5, 0), counter(annP, "billing", 2, 0), counter(annP, "news", 1, 0), counter(annP, "ünï-cødé 🙂", 1, 0))
	e.wantCounters(bobP, counter(bobP, "", 1, 0), counter(bobP, "billing", 1, 0))
	e.wantCounters(pubP, counter(pubP, "", 1, 0), counter(pubP, "news", 1, 0))
	other := inbox.Partition{Tenant: e.scope.Tenant, Inbox: "other", User: "ann"}
	e.wantCounters(other)
}

// testApplyRemoval: ApplyRemoval adds the deltas once per removal ID; a
// repeat returns false and changes nothing.
func testApplyRemoval(e *env) {
	annP, pubP := e.part("ann"), e.pub()
	for _, cat := range []string{"billing", "billing", ""} {
		d := e.message(annP, cat, time.Hour)
		e.put(d)
		e.markDirect(d)
	}
	e.put(e.message(pubP, "news", time.Hour))
	e.put(e.message(pubP, "news", time.Hour))
	exp := e.clock.Now().Add(inbox.RemovalMarkerTTL)
	r := inbox.Removal{ID: "9f7c1e0a4b2d4e6f8a0b1c2d3e4f5a6b", Partition: annP, Deltas: delta(annP, "billing", -1, -1), ExpiresAt: exp}
	apply := func(r inbox.Removal, want bool) {
		e.t.Helper()
		got, err := e.store.ApplyRemoval(e.ctx, r)
		if err != nil || got != want {
			e.t.Errorf("ApplyRemoval(%s): got %v, %v; want %v, nil", r.ID, got, err, want)
		}
	}
	apply(r, true)
	e.wantCounters(annP, counter(annP, "", 2, 2), counter(annP, "billing", 1, 1))
	apply(r, false)
	apply(r, false)
	e.wantCounters(annP, counter(annP, "", 2, 2), counter(annP, "billing", 1, 1))

	// Another removal ID applies; one touching a new counter creates it at
	// zero first.
	apply(inbox.Removal{ID: "shardId-000001:49590338271490256608559692538361571095921575989136588898", Partition: annP, Deltas: []inbox.Counter{counter(annP, "", 0, -1), counter(annP, "gone", -1, 0)}, ExpiresAt: exp}, true)
	e.wantCounters(annP, counter(annP, "", 2, 1), counter(annP, "billing", 1, 1), counter(annP, "gone", -1, 0))
	apply(inbox.Removal{ID: "pub-1", Partition: pubP, Deltas: delta(pubP, "news", -1, 0), ExpiresAt: exp}, true)
	apply(inbox.Removal{ID: "pub-1", Partition: pubP, Deltas: delta(pubP, "news", -1, 0), ExpiresAt: exp}, false)
	e.wantCounters(pubP, counter(pubP, "", 1, 0), counter(pubP, "news", 1, 0))
}

// testResetCounters: ResetCounters replaces a partition's stats records with
// those listed and deletes the others, leaving other partitions alone.
func testResetCounters(e *env) {
	annP, bobP, pubP := e.part("ann"), e.part("bob"), e.pub()
	for _, p := range []inbox.Partition{annP, bobP} {
		for _, cat := range []string{"a", "b", "c"} {
			e.put(e.message(p, cat, time.Hour))
		}
	}
	e.put(e.message(pubP, "a", time.Hour))
	if err := e.store.ResetCounters(e.ctx, annP, []inbox.Counter{counter(annP, "", 7, 2), counter(annP, "a", 5, 1), counter(annP, "d", 1, 0)}); err != nil {
		e.t.Fatalf("ResetCounters: %v", err)
	}
	e.wantCounters(annP, counter(annP, "", 7, 2), counter(annP, "a", 5, 1), counter(annP, "d", 1, 0))
	e.wantCounters(bobP, counter(bobP, "", 3, 0), counter(bobP, "a", 1, 0), counter(bobP, "b", 1, 0), counter(bobP, "c", 1, 0))
	e.wantCounters(pubP, counter(pubP, "", 1, 0), counter(pubP, "a", 1, 0))

	// Later deltas add to the reset values.
	e.put(e.message(annP, "a", time.Hour))
	e.wantCounters(annP, counter(annP, "", 8, 2), counter(annP, "a", 6, 1), counter(annP, "d", 1, 0))

	if err := e.store.ResetCounters(e.ctx, pubP, nil); err != nil {
		e.t.Fatalf("ResetCounters(nil): %v", err)
	}
	e.wantCounters(pubP)
	if err := e.store.ResetCounters(e.ctx, annP, []inbox.Counter{counter(annP, "", 0, 0)}); err != nil {
		e.t.Fatalf("ResetCounters: %v", err)
	}
	e.wantCounters(annP, counter(annP, "", 0, 0))
	if n := len(e.records(annP)); n != 4 {
		e.t.Errorf("ann has %d records after ResetCounters, want the 4 messages", n)
	}
}

// testClaimHostID: the first claim of a host system ID in a scope wins;
// later claims get its ID. Scopes and host IDs are independent.
func testClaimHostID(e *env) {
	exp := e.clock.Now().Add(inbox.MaxTTL)
	id1, id2, id3 := e.newID(), e.newID(), e.newID()
	other := inbox.Scope{Tenant: e.scope.Tenant, Inbox: "other"}
	otherTenant := inbox.Scope{Tenant: "globex", Inbox: e.scope.Inbox}
	cases := []struct {
		c    inbox.HostClaim
		want string
	}{
		{inbox.HostClaim{Scope: e.scope, HostSystemID: "order#42/ü", ID: id1, ExpiresAt: exp}, id1},
		{inbox.HostClaim{Scope: e.scope, HostSystemID: "order#42/ü", ID: id2, ExpiresAt: exp}, id1},
		{inbox.HostClaim{Scope: e.scope, HostSystemID: "order#42/ü", ID: id1, ExpiresAt: exp}, id1},
		{inbox.HostClaim{Scope: e.scope, HostSystemID: "order#43", ID: id2, ExpiresAt: exp}, id2},
		{inbox.HostClaim{Scope: other, HostSystemID: "order#42/ü", ID: id3, ExpiresAt: exp}, id3},
		{inbox.HostClaim{Scope: otherTenant, HostSystemID: "order#42/ü", ID: id2, ExpiresAt: exp}, id2},
		{inbox.HostClaim{Scope: e.scope, HostSystemID: "order#43", ID: id3, ExpiresAt: exp.Add(time.Hour)}, id2},
	}
	for _, c := range cases {
		got, err := e.store.ClaimHostID(e.ctx, c.c)
		if err != nil || got != c.want {
			e.t.Errorf("ClaimHostID(%s, %q, %s): got %q, %v; want %q", c.c.Scope, c.c.HostSystemID, c.c.ID, got, err, c.want)
		}
	}
	// A claim stands while it expires after the caller's Now, and is
	// replaced from its expiry on.
	id4, id5 := e.newID(), e.newID()
	for _, c := range []struct {
		now  time.Time
		id   string
		want string
	}{
		{exp.Add(-time.Second), id4, id1},
		{exp, id4, id4},
		{exp, id5, id4},
	} {
		hc := inbox.HostClaim{Scope: e.scope, HostSystemID: "order#42/ü", ID: c.id, ExpiresAt: exp.Add(time.Hour), Now: c.now}
		if got, err := e.store.ClaimHostID(e.ctx, hc); err != nil || got != c.want {
			e.t.Errorf("ClaimHostID(Now %s, %s): got %q, %v; want %q", c.now, c.id, got, err, c.want)
		}
	}
	e.wantRecords("Query($public) with claims", nil, e.records(e.pub()))
	e.wantCounters(e.pub())
}

// testConfig: Config returns nil for missing settings and configs, and
// round-trips what PutTenantSettings and PutInboxConfig wrote, replacing
// earlier values.
func testConfig(e *env) {
	want := func(s inbox.Scope, w inbox.Config) {
		e.t.Helper()
		got, err := e.store.Config(e.ctx, s)
		if err != nil {
			e.t.Fatalf("Config(%v): %v", s, err)
		}
		if diff := cmp.Diff(w, got); diff != "" {
			e.t.Errorf("Config(%v) (-want +got):\n%s", s, diff)
		}
	}
	other := inbox.Scope{Tenant: e.scope.Tenant, Inbox: "other"}
	globex := inbox.Scope{Tenant: "globex", Inbox: e.scope.Inbox}
	want(e.scope, inbox.Config{})

	ts := inbox.TenantSettings{Title: "Acme Corp — ünïcødé 🙂", TTL: "10d"}
	if err := e.store.PutTenantSettings(e.ctx, e.scope.Tenant, ts); err != nil {
		e.t.Fatalf("PutTenantSettings: %v", err)
	}
	want(e.scope, inbox.Config{Tenant: &ts})
	want(other, inbox.Config{Tenant: &ts})
	want(globex, inbox.Config{})

	ic := inbox.InboxConfig{Title: "Alerts", Description: "Pages and outages", TTL: map[string]string{inbox.DefaultTTLKey: "5d", "billing": "2d", "ünï": "300m"}}
	if err := e.store.PutInboxConfig(e.ctx, e.scope, ic); err != nil {
		e.t.Fatalf("PutInboxConfig: %v", err)
	}
	want(e.scope, inbox.Config{Tenant: &ts, Inbox: &ic})
	want(other, inbox.Config{Tenant: &ts})

	ts2 := inbox.TenantSettings{Title: "Acme"}
	ic2 := inbox.InboxConfig{Title: "Alerts 2", TTL: map[string]string{"news": "6000s"}}
	if err := e.store.PutTenantSettings(e.ctx, e.scope.Tenant, ts2); err != nil {
		e.t.Fatalf("PutTenantSettings: %v", err)
	}
	if err := e.store.PutInboxConfig(e.ctx, e.scope, ic2); err != nil {
		e.t.Fatalf("PutInboxConfig: %v", err)
	}
	want(e.scope, inbox.Config{Tenant: &ts2, Inbox: &ic2})
	if err := e.store.PutInboxConfig(e.ctx, globex, ic); err != nil {
		e.t.Fatalf("PutInboxConfig: %v", err)
	}
	want(globex, inbox.Config{Inbox: &ic})

	// The store keeps its own copy: changing the map passed in or returned
	// changes nothing stored.
	ic.TTL["billing"] = "1s"
	got, err := e.store.Config(e.ctx, globex)
	if err != nil {
		e.t.Fatalf("Config: %v", err)
	}
	if got.Inbox == nil || got.Inbox.TTL["billing"] != "2d" {
		e.t.Errorf("Config after changing the map passed to PutInboxConfig: %+v, want ttl[billing] 2d", got.Inbox)
	} else {
		got.Inbox.TTL["billing"] = "1s"
	}
	ic.TTL["billing"] = "2d"
	want(globex, inbox.Config{Inbox: &ic})
}

package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stak/inbox/driver"
)

// testStats: Stats returns every stats record of one partition, and only
// those, with a version that moves with every change.
func testStats(e *env) {
	annP, bobP, pubP := e.part("ann"), e.part("bob"), e.pub()
	e.wantCounters(annP)
	v0 := e.stats(annP, e.clock.Now()).Version
	for _, cat := range []string{"billing", "news", "", "billing", "ünï-cødé 🙂"} {
		e.put(e.message(annP, cat, time.Hour))
	}
	v1 := e.stats(annP, e.clock.Now()).Version
	if v1 == v0 {
		e.t.Errorf("Stats(ann).Version stayed %d through five writes", v0)
	}
	e.put(e.message(bobP, "billing", time.Hour))
	e.put(e.message(pubP, "news", time.Hour))
	if v := e.stats(annP, e.clock.Now()).Version; v != v1 {
		e.t.Errorf("Stats(ann).Version moved from %d to %d with writes to other partitions", v1, v)
	}
	e.wantCounters(annP, counter(annP, "", 5, 0), counter(annP, "billing", 2, 0), counter(annP, "news", 1, 0), counter(annP, "ünï-cødé 🙂", 1, 0))
	e.wantCounters(bobP, counter(bobP, "", 1, 0), counter(bobP, "billing", 1, 0))
	e.wantCounters(pubP, counter(pubP, "", 1, 0), counter(pubP, "news", 1, 0))
	other := driver.Partition{Tenant: e.scope.Tenant, Inbox: "other", User: "ann"}
	e.wantCounters(other)
}

// testStatsKeys: Stats with Keys returns the partition's counters with
// those keys (each once, the missing left out, the total only if named)
// and its version, whether or not Isolated asks for one isolated read;
// Isolated without Keys, a key that is not a counter's, and more than
// driver.MaxStatsKeys distinct keys besides the total are ErrInvalidInput
// on every store alike (DynamoDB reads 100 items at most, the total
// among them).
func testStatsKeys(e *env) {
	annP := e.part("ann")
	chat := e.message(annP, "billing", time.Hour)
	chat.Message.Thread = "chat"
	e.put(chat)
	e.put(e.message(annP, "news", time.Hour))
	all := e.stats(annP, e.clock.Now())
	byKey := map[string]driver.Counter{}
	for _, c := range all.Counters {
		byKey[c.SK()] = c
	}
	keys := []driver.Counter{{Category: "billing"}, {Thread: "chat"}, {Category: "none"}, {Thread: "chat"}, {Thread: "gone", Group: driver.PublicGroup}}
	for _, isolated := range []bool{false, true} {
		for _, withTotal := range []bool{false, true} {
			ks := keys
			want := []driver.Counter{byKey[driver.CounterSK("billing", "")], byKey[driver.ThreadCounterSK("chat", "")]}
			if withTotal {
				ks = append([]driver.Counter{{}}, keys...)
				want = append(want, byKey[driver.CounterSK("", "")])
			}
			st, err := e.store.Stats(e.ctx, driver.StatsQuery{Partition: annP, Keys: ks, Isolated: isolated})
			if err != nil {
				e.t.Fatalf("Stats(Keys, Isolated %v): %v", isolated, err)
			}
			sortCounters := func(cs []driver.Counter) {
				slices.SortFunc(cs, func(a, b driver.Counter) int { return strings.Compare(a.SK(), b.SK()) })
			}
			sortCounters(want)
			sortCounters(st.Counters)
			if diff := cmp.Diff(want, st.Counters); diff != "" || st.Version != all.Version {
				e.t.Errorf("Stats(Keys, Isolated %v, with the total %v): version %d (want %d), counters (-want +got):\n%s", isolated, withTotal, st.Version, all.Version, diff)
			}
			if st.Expired != nil || st.Tombstones != nil || st.Seen != "" || st.Recent != nil {
				e.t.Errorf("Stats(Keys, Isolated %v) read more than the counters: %+v", isolated, st)
			}
		}
	}

	many := func(n int) []driver.Counter {
		ks := []driver.Counter{{}} // the total, read anyway, counts in no limit
		for i := range n {
			ks = append(ks, driver.Counter{Thread: "t" + strconv.Itoa(i)}, driver.Counter{Thread: "t" + strconv.Itoa(i)})
		}
		return ks
	}
	for _, isolated := range []bool{false, true} {
		if _, err := e.store.Stats(e.ctx, driver.StatsQuery{Partition: annP, Keys: many(driver.MaxStatsKeys), Isolated: isolated}); err != nil {
			e.t.Errorf("Stats of %d distinct keys besides the total, each twice (Isolated %v): %v", driver.MaxStatsKeys, isolated, err)
		}
		for what, q := range map[string]driver.StatsQuery{
			"too many keys":      {Partition: annP, Keys: many(driver.MaxStatsKeys + 1), Isolated: isolated},
			"a key of no kind":   {Partition: annP, Keys: []driver.Counter{{Thread: "chat", Category: "billing"}}, Isolated: isolated},
			"a thread not a key": {Partition: annP, Keys: []driver.Counter{{Thread: "a#b"}}, Isolated: isolated},
		} {
			if _, err := e.store.Stats(e.ctx, q); !errors.Is(err, driver.ErrInvalidInput) {
				e.t.Errorf("Stats with %s (Isolated %v): %v, want ErrInvalidInput", what, isolated, err)
			}
		}
	}
	if _, err := e.store.Stats(e.ctx, driver.StatsQuery{Partition: annP, Now: e.clock.Now(), Isolated: true}); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("Stats with Isolated and no keys: %v, want ErrInvalidInput", err)
	}
}

// testStatsExpired: Stats returns the ledger entries of the records that
// expire at or before the time given, whether or not the records still
// exist, and only those of its partition.
func testStatsExpired(e *env) {
	annP, bobP, pubP := e.part("ann"), e.part("bob"), e.pub()
	t0 := e.clock.Now()
	d1 := e.message(annP, "billing", time.Hour)
	d2 := e.message(annP, "", 2*time.Hour)
	d3 := e.message(annP, "news", 3*time.Hour)
	b1 := e.message(pubP, "news", time.Hour)
	b2 := e.message(pubP, "", 3*time.Hour)
	for _, r := range []driver.Record{d1, d2, d3, b1, b2, e.message(bobP, "", time.Hour)} {
		e.put(r)
	}
	d2 = e.markDirect(d2)
	r1 := e.markReceipt(annP, b1)
	entry := func(r driver.Record) driver.Record {
		return driver.Record{Partition: r.Partition, Receipt: r.Receipt, Entry: r.Entry, Message: driver.Message{
			ID: r.Message.ID, Category: r.Message.Category, ReadAt: r.Message.ReadAt, ExpiresAt: r.Message.ExpiresAt}}
	}
	want := func(p driver.Partition, at time.Time, recs ...driver.Record) {
		e.t.Helper()
		var w []driver.Record
		for _, r := range recs {
			w = append(w, entry(r))
		}
		got := e.stats(p, at).Expired
		sortRecords(w)
		sortRecords(got)
		e.wantRecords("Stats("+p.User+", "+at.Sub(t0).String()+").Expired", w, got)
	}
	want(annP, t0)
	want(annP, t0.Add(time.Hour-time.Second))
	want(annP, t0.Add(time.Hour), d1, r1)
	want(annP, t0.Add(2*time.Hour+time.Second), d1, d2, r1)
	want(annP, farFuture, d1, d2, d3, r1)
	want(pubP, t0.Add(time.Hour), b1)
	want(pubP, farFuture, b1, b2)
	// Whether the store deletes expired records at once or late, the
	// entries stay until their removal is accounted.
	if h, ok := e.harness(); ok {
		e.clock.Advance(90 * time.Minute)
		e.remove(h, d1.Key())
		e.remove(h, r1.Key())
		if h.Pending() > 0 {
			want(annP, e.clock.Now(), d1, r1)
		}
		e.deliver(h)
		want(annP, e.clock.Now())
		want(annP, farFuture, d2, d3)
	}
}

// testApplyRemoval: ApplyRemoval of a ledgered record deletes its entry
// and adds the deltas once; a repeat, or a removal of a record whose entry
// is gone, returns false and changes nothing. With Delete it deletes the
// record too; with Tombstone it leaves a tombstone that Stats returns
// until the broadcast's expiry.
func testApplyRemoval(e *env) {
	annP, pubP := e.part("ann"), e.pub()
	now := e.clock.Now()
	var direct []driver.Record
	for _, cat := range []string{"billing", "billing", ""} {
		d := e.message(annP, cat, time.Hour)
		e.put(d)
		direct = append(direct, e.markDirect(d))
	}
	b1, b2 := e.message(pubP, "news", 2*time.Hour), e.message(pubP, "news", time.Hour)
	e.put(b1)
	e.put(b2)
	apply := func(r driver.Removal, want bool) {
		e.t.Helper()
		got, err := e.store.ApplyRemoval(e.ctx, r)
		if err != nil || got != want {
			e.t.Errorf("ApplyRemoval(%s, ledgered %v, event %q): got %v, %v; want %v, nil", r.Record.Message.ID, r.Record.Ledgered(), r.EventID, got, err, want)
		}
	}
	d := direct[0]
	apply(driver.Removal{Record: d, Deltas: delta(annP, "billing", -1, -1), Now: now}, true)
	e.wantCounters(annP, counter(annP, "", 2, 2), counter(annP, "billing", 1, 1))
	apply(driver.Removal{Record: d, Deltas: delta(annP, "billing", -1, -1), Now: now}, false)
	e.wantCounters(annP, counter(annP, "", 2, 2), counter(annP, "billing", 1, 1))
	e.wantRecords("a record ApplyRemoval accounted without Delete", []driver.Record{d}, e.get(d.Key()))

	// An entry is found by its name: another record at the same key has
	// another entry.
	moved := direct[1]
	moved.Entry = driver.LedgerSK(moved.Message.ExpiresAt, moved.Message.ID, "other")
	apply(driver.Removal{Record: moved, Deltas: delta(annP, "billing", -1, -1), Delete: true, Now: now}, false)
	e.wantRecords("the record at the key of a removal of another entry", []driver.Record{direct[1]}, e.get(moved.Key()))
	e.wantCounters(annP, counter(annP, "", 2, 2), counter(annP, "billing", 1, 1))

	// Delete removes the record with its entry.
	apply(driver.Removal{Record: direct[2], Deltas: delta(annP, "", -1, -1), Delete: true, Now: now}, true)
	e.wantRecords("a record ApplyRemoval deleted", nil, e.get(direct[2].Key()))
	apply(driver.Removal{Record: direct[2], Deltas: delta(annP, "", -1, -1), Delete: true, Now: now}, false)
	e.wantCounters(annP, counter(annP, "", 1, 1), counter(annP, "billing", 1, 1))
	if got := len(e.ledger(annP)); got != 1 {
		e.t.Errorf("ann's ledger has %d entries after two removals of three, want 1", got)
	}

	// A broadcast removed before it expired leaves a tombstone.
	apply(driver.Removal{Record: b1, Deltas: delta(pubP, "news", -1, 0), Tombstone: true, Now: now}, true)
	tomb := driver.Record{Partition: pubP, Message: driver.Message{ID: b1.Message.ID, Category: "news", ExpiresAt: b1.Message.ExpiresAt}}
	e.wantRecords("tombstones", []driver.Record{tomb}, e.stats(pubP, now).Tombstones)
	// Until it is deleted, an expired tombstone is still returned: the
	// caller filters by its own time.
	e.wantRecords("tombstones at the broadcast's expiry", []driver.Record{tomb}, e.stats(pubP, b1.Message.ExpiresAt).Tombstones)
	e.wantCounters(pubP, counter(pubP, "", 1, 0), counter(pubP, "news", 1, 0))

	// A record without a ledger entry (another program's) is accounted
	// once per event ID in its partition.
	foreign := e.message(annP, "other", time.Hour)
	foreign.Entry = ""
	foreign.Message.ReadAt = now
	byEvent := func(id string, want bool) {
		e.t.Helper()
		apply(driver.Removal{Record: foreign, EventID: id, Deltas: delta(annP, "other", -1, -1), Now: now}, want)
	}
	byEvent("shardId-000001:49590338271490256608559692538361571095921575989136588898", true)
	byEvent("shardId-000001:49590338271490256608559692538361571095921575989136588898", false)
	byEvent("9f7c1e0a4b2d4e6f8a0b1c2d3e4f5a6b", true)
	e.wantCounters(annP, counter(annP, "", -1, -1), counter(annP, "billing", 1, 1), counter(annP, "other", -2, -2))
	bobForeign := foreign
	bobForeign.Partition = e.part("bob")
	apply(driver.Removal{Record: bobForeign, EventID: "9f7c1e0a4b2d4e6f8a0b1c2d3e4f5a6b", Deltas: delta(bobForeign.Partition, "", -1, 0), Now: now}, true)
	if _, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: foreign, EventID: "x", Delete: true, Now: now}); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("ApplyRemoval with Delete of a record without an entry: %v, want ErrInvalidInput", err)
	}
}

// testRepair: Repair adopts records that still stand as given, and
// replaces the counters only if their version is still the one read.
func testRepair(e *env) {
	annP, bobP, pubP := e.part("ann"), e.part("bob"), e.pub()
	for _, p := range []driver.Partition{annP, bobP} {
		for _, cat := range []string{"a", "b", "c"} {
			e.put(e.message(p, cat, time.Hour))
		}
	}
	e.put(e.message(pubP, "a", time.Hour))
	d := e.message(annP, "a", time.Hour)
	e.put(d)
	now := e.clock.Now()

	// Adoption writes the entry of a record that has lost it; a record
	// that is gone or whose read state changed is skipped.
	if ok, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: d, Now: now}); !ok || err != nil {
		e.t.Fatalf("ApplyRemoval to drop an entry: %v, %v", ok, err)
	}
	read := e.message(annP, "b", time.Hour)
	e.put(read)
	stale := read
	read = e.markDirect(read)
	if _, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: read, Now: now}); err != nil {
		e.t.Fatalf("ApplyRemoval to drop an entry: %v", err)
	}
	gone := e.message(annP, "a", time.Hour)
	before := len(e.ledger(annP))
	as := func(recs ...driver.Record) []string {
		var out []string
		for _, r := range recs {
			out = append(out, driver.LedgerSK(r.Message.ExpiresAt, r.Message.ID, "adopted"))
		}
		return out
	}
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Adopt: []driver.Record{d, stale, gone}, AdoptAs: as(d, stale, gone)}); err != nil {
		e.t.Fatalf("Repair(Adopt): %v", err)
	}
	d.Entry = as(d)[0]
	e.wantRecords("an adopted record", []driver.Record{d}, e.get(d.Key()))
	if got := len(e.ledger(annP)); got != before+1 {
		e.t.Errorf("ann's ledger has %d entries after adopting one record (and skipping two), want %d", got, before+1)
	}
	bobs := e.message(bobP, "", time.Hour)
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Adopt: []driver.Record{bobs}, AdoptAs: as(bobs)}); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("Repair adopting a record of another partition: %v, want ErrInvalidInput", err)
	}

	// A reset with the version read replaces the counters.
	st := e.stats(annP, now)
	reset := []driver.Counter{counter(annP, "", 7, 2), counter(annP, "a", 5, 1), counter(annP, "d", 1, 0)}
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: reset}); err != nil {
		e.t.Fatalf("Repair(Reset): %v", err)
	}
	e.wantCounters(annP, reset...)
	e.wantCounters(bobP, counter(bobP, "", 3, 0), counter(bobP, "a", 1, 0), counter(bobP, "b", 1, 0), counter(bobP, "c", 1, 0))
	e.wantCounters(pubP, counter(pubP, "", 1, 0), counter(pubP, "a", 1, 0))
	// A second reset with the same, now stale, version conflicts.
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: nil}); !errors.Is(err, driver.ErrConflict) {
		e.t.Errorf("Repair with a stale version: %v, want ErrConflict", err)
	}
	e.wantCounters(annP, reset...)

	// A write moves the version: a reset computed before it conflicts.
	st = e.stats(annP, now)
	e.put(e.message(annP, "a", time.Hour))
	e.wantCounters(annP, counter(annP, "", 8, 2), counter(annP, "a", 6, 1), counter(annP, "d", 1, 0))
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: nil}); !errors.Is(err, driver.ErrConflict) {
		e.t.Errorf("Repair with the version before a write: %v, want ErrConflict", err)
	}

	// An empty reset keeps the total, at zero.
	st = e.stats(pubP, now)
	if err := e.store.Repair(e.ctx, pubP, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters}); err != nil {
		e.t.Fatalf("Repair(Reset, no counters): %v", err)
	}
	e.wantCounters(pubP, counter(pubP, "", 0, 0))
	for _, bad := range [][]driver.Counter{
		{counter(annP, "a", 1, 0), counter(annP, "a", 2, 0)},
		{counter(bobP, "", 1, 0)},
	} {
		st = e.stats(annP, now)
		if err := e.store.Repair(e.ctx, annP, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: bad}); !errors.Is(err, driver.ErrInvalidInput) {
			e.t.Errorf("Repair(Reset, %v): %v, want ErrInvalidInput", bad, err)
		}
	}
	e.wantCounters(annP, counter(annP, "", 8, 2), counter(annP, "a", 6, 1), counter(annP, "d", 1, 0))
	if n := len(e.records(annP)); n != 6 {
		e.t.Errorf("ann has %d records after Repair, want the 6 messages", n)
	}
}

// testClaimHostID: the first claim of a host system ID in a scope wins;
// later claims get it back, with its ID, expiry and digest. Scopes and host
// IDs are independent; an expired claim is replaced.
func testClaimHostID(e *env) {
	exp := e.clock.Now().Add(driver.MaxTTL)
	id1, id2, id3 := e.newID(), e.newID(), e.newID()
	other := driver.Scope{Tenant: e.scope.Tenant, Inbox: "other"}
	otherTenant := driver.Scope{Tenant: "globex", Inbox: e.scope.Inbox}
	claim := func(s driver.Scope, host, id string, exp time.Time, digest string) driver.HostClaim {
		return driver.HostClaim{Scope: s, HostSystemID: host, ID: id, ExpiresAt: exp, Digest: digest}
	}
	first := claim(e.scope, "order#42/ü", id1, exp, "digest-1")
	cases := []struct {
		c    driver.HostClaim
		want driver.HostClaim
	}{
		{first, first},
		{claim(e.scope, "order#42/ü", id2, exp.Add(time.Hour), "digest-2"), first},
		{claim(e.scope, "order#42/ü", id1, exp, "digest-1"), first},
		{claim(e.scope, "order#43", id2, exp, ""), claim(e.scope, "order#43", id2, exp, "")},
		{claim(other, "order#42/ü", id3, exp, "d"), claim(other, "order#42/ü", id3, exp, "d")},
		{claim(otherTenant, "order#42/ü", id2, exp, "d"), claim(otherTenant, "order#42/ü", id2, exp, "d")},
		{claim(e.scope, "order#43", id3, exp.Add(time.Hour), "x"), claim(e.scope, "order#43", id2, exp, "")},
	}
	for _, c := range cases {
		got, err := e.store.ClaimHostID(e.ctx, c.c)
		if err != nil {
			e.t.Errorf("ClaimHostID(%s, %q, %s): %v", c.c.Scope, c.c.HostSystemID, c.c.ID, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			e.t.Errorf("ClaimHostID(%s, %q, %s) (-want +got):\n%s", c.c.Scope, c.c.HostSystemID, c.c.ID, diff)
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
		hc := claim(e.scope, "order#42/ü", c.id, exp.Add(time.Hour), "digest-4")
		hc.Now = c.now
		if got, err := e.store.ClaimHostID(e.ctx, hc); err != nil || got.ID != c.want {
			e.t.Errorf("ClaimHostID(Now %s, %s): got %q, %v; want %q", c.now, c.id, got.ID, err, c.want)
		}
	}
	e.wantRecords("Query($public) with claims", nil, e.records(e.pub()))
	e.wantCounters(e.pub())
}

// testClaimRetire: a claim keeps its group; Retire sets the digest of the
// standing claim to RetiredDigest when the ID matches (or none is given),
// leaves a claim of another ID as it is, and makes no claim where none
// stands.
func testClaimRetire(e *env) {
	now := e.clock.Now()
	exp := now.Add(time.Hour)
	id, other := e.newID(), e.newID()
	g := driver.HostClaim{Scope: e.scope, HostSystemID: "deploy-1", ID: id, Group: "admins", ExpiresAt: exp, Digest: "d", Now: now}
	if got, err := e.store.ClaimHostID(e.ctx, g); err != nil || got != g {
		e.t.Fatalf("ClaimHostID = %+v, %v; want %+v", got, err, g)
	}
	retire := func(host, id string) driver.HostClaim {
		e.t.Helper()
		got, err := e.store.ClaimHostID(e.ctx, driver.HostClaim{Scope: e.scope, HostSystemID: host, ID: id, Now: e.clock.Now(), Retire: true})
		if err != nil {
			e.t.Fatalf("ClaimHostID(retire %s, %s): %v", host, id, err)
		}
		return got
	}
	standing := g
	standing.Now = e.clock.Now()
	if got := retire("deploy-1", other); got != standing {
		e.t.Errorf("retire with another ID = %+v; want the claim unchanged %+v", got, standing)
	}
	retired := standing
	retired.Digest = driver.RetiredDigest
	for _, wantID := range []string{id, ""} {
		if got := retire("deploy-1", wantID); got != retired {
			e.t.Errorf("retire(%q) = %+v; want %+v", wantID, got, retired)
		}
	}
	retry := g
	retry.ID, retry.Now = other, e.clock.Now()
	if got, err := e.store.ClaimHostID(e.ctx, retry); err != nil || got != retired {
		e.t.Errorf("a claim after retirement = %+v, %v; want the retired claim %+v", got, err, retired)
	}
	if got := retire("never-claimed", ""); got != (driver.HostClaim{}) {
		e.t.Errorf("retire of no claim = %+v; want zero", got)
	}
	e.clock.Advance(time.Hour)
	if got := retire("deploy-1", ""); got != (driver.HostClaim{}) {
		e.t.Errorf("retire of an expired claim = %+v; want zero", got)
	}
	fresh := retry
	fresh.Now, fresh.ExpiresAt = e.clock.Now(), e.clock.Now().Add(time.Hour)
	if got, err := e.store.ClaimHostID(e.ctx, fresh); err != nil || got != fresh {
		e.t.Errorf("a claim after the retired one expired = %+v, %v; want %+v", got, err, fresh)
	}
}

// testConfig: Config returns nil for missing settings and configs, and
// round-trips what PutTenantSettings and PutInboxConfig wrote, replacing
// earlier values; their default preferences too, Own ignored (unset).
func testConfig(e *env) {
	want := func(s driver.Scope, w driver.Config) {
		e.t.Helper()
		got, err := e.store.Config(e.ctx, s)
		if err != nil {
			e.t.Fatalf("Config(%v): %v", s, err)
		}
		if diff := cmp.Diff(w, got); diff != "" {
			e.t.Errorf("Config(%v) (-want +got):\n%s", s, diff)
		}
	}
	other := driver.Scope{Tenant: e.scope.Tenant, Inbox: "other"}
	globex := driver.Scope{Tenant: "globex", Inbox: e.scope.Inbox}
	want(e.scope, driver.Config{})

	ts := driver.TenantSettings{Title: "Acme Corp — ünïcødé 🙂", TTL: "10d", UpdatedBy: "admin-7",
		Preferences: driver.Preferences{MutedCategories: []string{"news"}, OptedOut: []string{"promo"}, Own: true}}
	if err := e.store.PutTenantSettings(e.ctx, e.scope.Tenant, ts); err != nil {
		e.t.Fatalf("PutTenantSettings: %v", err)
	}
	ts.Preferences.Own = false
	want(e.scope, driver.Config{Tenant: &ts})
	want(other, driver.Config{Tenant: &ts})
	want(globex, driver.Config{})

	ic := driver.InboxConfig{Title: "Alerts", Description: "Pages and outages", TTL: map[string]string{driver.DefaultTTLKey: "5d", "billing": "2d", "ünï": "300m"}, UpdatedBy: "ops ü",
		Preferences: driver.Preferences{MutedGroups: []string{"devs", "ops"}, Own: true}}
	if err := e.store.PutInboxConfig(e.ctx, e.scope, ic); err != nil {
		e.t.Fatalf("PutInboxConfig: %v", err)
	}
	ic.Preferences.Own = false
	want(e.scope, driver.Config{Tenant: &ts, Inbox: &ic})
	want(other, driver.Config{Tenant: &ts})

	ts2 := driver.TenantSettings{Title: "Acme"}
	ic2 := driver.InboxConfig{Title: "Alerts 2", TTL: map[string]string{"news": "6000s"}}
	if err := e.store.PutTenantSettings(e.ctx, e.scope.Tenant, ts2); err != nil {
		e.t.Fatalf("PutTenantSettings: %v", err)
	}
	if err := e.store.PutInboxConfig(e.ctx, e.scope, ic2); err != nil {
		e.t.Fatalf("PutInboxConfig: %v", err)
	}
	want(e.scope, driver.Config{Tenant: &ts2, Inbox: &ic2})
	if err := e.store.PutInboxConfig(e.ctx, globex, ic); err != nil {
		e.t.Fatalf("PutInboxConfig: %v", err)
	}
	want(globex, driver.Config{Inbox: &ic})

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
	want(globex, driver.Config{Inbox: &ic})

	// Defaults that mute a thread (one user's) are refused, and nothing
	// is written.
	bad := ic
	bad.Preferences = driver.Preferences{MutedThreads: []string{"ann-bob"}}
	if err := e.store.PutInboxConfig(e.ctx, globex, bad); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("PutInboxConfig with a muted thread: %v, want ErrInvalidInput", err)
	}
	badTenant := ts2
	badTenant.Preferences = bad.Preferences
	if err := e.store.PutTenantSettings(e.ctx, e.scope.Tenant, badTenant); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("PutTenantSettings with a muted thread: %v, want ErrInvalidInput", err)
	}
	want(globex, driver.Config{Inbox: &ic})
	// So are settings and configs the library does not accept: larger
	// than a DynamoDB item, say.
	huge := strings.Repeat("x", driver.MaxItemSize+1024)
	if err := e.store.PutTenantSettings(e.ctx, globex.Tenant, driver.TenantSettings{Title: huge}); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("PutTenantSettings of a 400 KB title: %v, want ErrInvalidInput", err)
	}
	if err := e.store.PutInboxConfig(e.ctx, globex, driver.InboxConfig{Description: huge}); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("PutInboxConfig of a 400 KB description: %v, want ErrInvalidInput", err)
	}
	if err := e.store.PutInboxConfig(e.ctx, globex, driver.InboxConfig{TTL: map[string]string{"billing": "5x"}}); !errors.Is(err, driver.ErrInvalidTTL) {
		e.t.Errorf("PutInboxConfig of a TTL 5x: %v, want ErrInvalidTTL", err)
	}
	want(globex, driver.Config{Inbox: &ic})

	// The largest settings and config the library accepts are stored.
	text := strings.Repeat("ü", driver.MaxConfigTextLen/2)
	ttl := strings.Repeat("9", driver.MaxConfigTTLLen-1) + "d"
	key := func(prefix string, i int) string {
		return prefix + strings.Repeat("k", driver.MaxKeyLen-len(prefix)-4) + fmt.Sprintf("%04d", i)
	}
	var prefs driver.Preferences
	for i := range driver.MaxMutedGroups {
		prefs.MutedGroups = append(prefs.MutedGroups, key("g", i))
	}
	for i := range driver.MaxMutedCategories {
		prefs.MutedCategories = append(prefs.MutedCategories, key("m", i))
	}
	for i := range driver.MaxOptedOut {
		prefs.OptedOut = append(prefs.OptedOut, key("o", i))
	}
	largestTenant := driver.TenantSettings{Title: text, TTL: ttl, Preferences: prefs, UpdatedBy: text}
	largest := driver.InboxConfig{Title: text, Description: text, TTL: map[string]string{}, Preferences: prefs, UpdatedBy: text}
	for i := range driver.MaxInboxTTLs {
		largest.TTL[key("c", i)] = ttl
	}
	if err := errors.Join(largestTenant.Validate(), largest.Validate()); err != nil {
		e.t.Fatalf("the largest settings and config: %v", err)
	}
	if err := e.store.PutTenantSettings(e.ctx, globex.Tenant, largestTenant); err != nil {
		e.t.Errorf("PutTenantSettings of the largest settings: %v", err)
	}
	if err := e.store.PutInboxConfig(e.ctx, globex, largest); err != nil {
		e.t.Errorf("PutInboxConfig of the largest config: %v", err)
	}
	want(globex, driver.Config{Tenant: &largestTenant, Inbox: &largest})
}

// testClaimHostIDPeek: a Peek returns the standing claim and changes
// nothing; with no standing claim (none, or expired) it returns a zero
// claim and makes none.
func testClaimHostIDPeek(e *env) {
	now := e.clock.Now()
	peek := driver.HostClaim{Scope: e.scope, HostSystemID: "peeked", Now: now, Peek: true}
	if got, err := e.store.ClaimHostID(e.ctx, peek); err != nil || got.ID != "" {
		e.t.Fatalf("Peek with no claim: %+v, %v; want a zero claim", got, err)
	}
	c := driver.HostClaim{Scope: e.scope, HostSystemID: "peeked", ID: e.newID(), ExpiresAt: now.Add(time.Hour), Group: "admins", Digest: "d1", Now: now}
	if got, err := e.store.ClaimHostID(e.ctx, c); err != nil || got.ID != c.ID {
		e.t.Fatalf("claim after a Peek with none: %+v, %v; want this call's claim (the Peek made none)", got, err)
	}
	got, err := e.store.ClaimHostID(e.ctx, peek)
	if err != nil || got.ID != c.ID || got.Group != "admins" || got.Digest != "d1" || !got.ExpiresAt.Equal(c.ExpiresAt) || got.Peek {
		e.t.Errorf("Peek: %+v, %v; want the standing claim %+v", got, err, c)
	}
	expired := peek
	expired.Now = c.ExpiresAt
	if got, err := e.store.ClaimHostID(e.ctx, expired); err != nil || got.ID != "" {
		e.t.Errorf("Peek at the claim's expiry: %+v, %v; want a zero claim", got, err)
	}
}

// testRecountTime: a reset or a stamp records the partition's recount
// time, under the version condition; the removal of a record without a
// ledger entry that left the table by then (expired, or deleted at
// Removal.At) writes its marker but not its deltas (a recount counted it
// out already), and one that left later is counted out as usual.
func testRecountTime(e *env) {
	annP, bobP := e.part("ann"), e.part("bob")
	e.put(e.message(annP, "a", time.Hour))
	e.put(e.message(bobP, "a", time.Hour))
	now := e.clock.Now()
	if got := e.stats(annP, now).Recounted; !got.IsZero() {
		e.t.Errorf("Stats.Recounted before any recount = %v, want zero", got)
	}
	// A stamp records the time (to the second), changes the version, and
	// leaves the counters; a stale version conflicts.
	st := e.stats(annP, now)
	at := now.Add(-time.Minute)
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Stamp: true, Version: st.Version, Recounted: at}); err != nil {
		e.t.Fatalf("Repair(Stamp): %v", err)
	}
	after := e.stats(annP, now)
	if !after.Recounted.Equal(at.Truncate(time.Second)) || after.Version == st.Version {
		e.t.Errorf("after a stamp at %v: Recounted %v, version %d (was %d); want the time to the second, a new version", at, after.Recounted, after.Version, st.Version)
	}
	e.wantCounters(annP, counter(annP, "", 1, 0), counter(annP, "a", 1, 0))
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Stamp: true, Version: st.Version, Recounted: now}); !errors.Is(err, driver.ErrConflict) {
		e.t.Errorf("Repair(Stamp) with a stale version: %v, want ErrConflict", err)
	}
	if got := e.stats(annP, now).Recounted; !got.Equal(at.Truncate(time.Second)) {
		e.t.Errorf("a conflicting stamp changed Recounted to %v", got)
	}
	if got := e.stats(bobP, now).Recounted; !got.IsZero() {
		e.t.Errorf("bob's Recounted = %v after a stamp of ann's partition, want zero", got)
	}

	foreign := func(p driver.Partition, expires time.Time) driver.Record {
		r := e.message(p, "a", time.Hour)
		r.Entry, r.Message.ExpiresAt = "", expires.Truncate(time.Second)
		return r
	}
	apply := func(r driver.Removal, want bool) {
		e.t.Helper()
		if got, err := e.store.ApplyRemoval(e.ctx, r); err != nil || got != want {
			e.t.Errorf("ApplyRemoval(%s expiring %v, event %q): %v, %v; want %v, nil", r.Record.Message.ID, r.Record.Message.ExpiresAt, r.EventID, got, err, want)
		}
	}
	// Expired at the recount time, or before: the marker only.
	for i, exp := range []time.Time{at, at.Add(-time.Hour)} {
		r := foreign(annP, exp)
		ev := "recounted-" + strconv.Itoa(i)
		apply(driver.Removal{Record: r, EventID: ev, Deltas: delta(annP, "a", -1, 0), Now: now}, true)
		apply(driver.Removal{Record: r, EventID: ev, Deltas: delta(annP, "a", -1, 0), Now: now}, false)
	}
	e.wantCounters(annP, counter(annP, "", 1, 0), counter(annP, "a", 1, 0))
	// Expiring a second after it: counted out, once.
	later := foreign(annP, at.Add(time.Second))
	apply(driver.Removal{Record: later, EventID: "later", Deltas: delta(annP, "a", -1, 0), Now: now}, true)
	apply(driver.Removal{Record: later, EventID: "later", Deltas: delta(annP, "a", -1, 0), Now: now}, false)
	e.wantCounters(annP, counter(annP, "", 0, 0), counter(annP, "a", 0, 0))
	// Deleted (At, to the second) at the recount time or before, though
	// it expires long after: the marker only. Deleted a second after it:
	// counted out, once. At after the expiry (TTL's deletion) changes
	// nothing: the expiry is when it left.
	deleted := func(left time.Time) driver.Removal {
		r := driver.Removal{Record: foreign(annP, at.Add(time.Hour)), Deltas: delta(annP, "a", -1, 0), Now: now, At: left}
		r.EventID = "deleted-" + strconv.FormatInt(left.UnixMilli(), 10)
		return r
	}
	for _, left := range []time.Time{at.Truncate(time.Second).Add(999 * time.Millisecond), at.Add(-time.Minute)} {
		apply(deleted(left), true)
		apply(deleted(left), false)
	}
	e.wantCounters(annP, counter(annP, "", 0, 0), counter(annP, "a", 0, 0))
	apply(deleted(at.Truncate(time.Second).Add(time.Second)), true)
	apply(deleted(at.Truncate(time.Second).Add(time.Second)), false)
	e.wantCounters(annP, counter(annP, "", -1, 0), counter(annP, "a", -1, 0))
	expired := foreign(annP, at)
	apply(driver.Removal{Record: expired, EventID: "ttl-late", Deltas: delta(annP, "a", -1, 0), Now: now, At: at.Add(time.Hour)}, true)
	e.wantCounters(annP, counter(annP, "", -1, 0), counter(annP, "a", -1, 0))
	// A broadcast deleted by then leaves its tombstone all the same (its
	// readers' receipts stop counting), without its deltas.
	pubP := e.pub()
	e.put(e.message(pubP, "a", time.Hour))
	pst := e.stats(pubP, now)
	if err := e.store.Repair(e.ctx, pubP, driver.Repair{Stamp: true, Version: pst.Version, Recounted: at}); err != nil {
		e.t.Fatalf("Repair(Stamp) of the public partition: %v", err)
	}
	gone := foreign(pubP, at.Add(time.Hour))
	apply(driver.Removal{Record: gone, EventID: "pub-deleted", Deltas: delta(pubP, "a", -1, 0), Tombstone: true, Now: now, At: at}, true)
	if ts := e.stats(pubP, now).Tombstones; len(ts) != 1 || ts[0].Message.ID != gone.Message.ID {
		e.t.Errorf("tombstones after the removal of a broadcast deleted before the recount: %+v, want %s's", ts, gone.Message.ID)
	}
	e.wantCounters(pubP, counter(pubP, "", 1, 0), counter(pubP, "a", 1, 0))
	// Another partition's recount time does not apply.
	apply(driver.Removal{Record: foreign(bobP, at.Add(-time.Hour)), EventID: "bob", Deltas: delta(bobP, "a", -1, 0), Now: now}, true)
	e.wantCounters(bobP, counter(bobP, "", 0, 0), counter(bobP, "a", 0, 0))

	// A ledgered record's removal is not affected, even with a recount
	// time after its expiry: its entry decides.
	d := e.message(annP, "a", time.Hour)
	e.put(d)
	st = e.stats(annP, now)
	past := d.Message.ExpiresAt.Add(time.Hour)
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: []driver.Counter{counter(annP, "", 1, 0), counter(annP, "a", 1, 0)}, Recounted: past}); err != nil {
		e.t.Fatalf("Repair(Reset) with a recount time: %v", err)
	}
	if got := e.stats(annP, now).Recounted; !got.Equal(past.Truncate(time.Second)) {
		e.t.Errorf("after a reset: Recounted %v, want %v", got, past.Truncate(time.Second))
	}
	apply(driver.Removal{Record: d, Deltas: delta(annP, "a", -1, 0), Delete: true, Now: now}, true)
	e.wantCounters(annP, counter(annP, "", 0, 0), counter(annP, "a", 0, 0))
}

// testResetAfterForeignChange: another program following the seeds changes
// the tallies of a partition's counters without the library's version, so
// a reset whose counters were read before that change, to a counter read
// or to a new category's, is ErrConflict and keeps the change (a reset
// that overwrote it left that program's item uncounted for good); read
// again, it applies.
func testResetAfterForeignChange(e *env) {
	w, ok := e.store.(ForeignWriter)
	if !ok {
		e.t.Skip("the store is not a storetest.ForeignWriter")
	}
	annP := e.part("ann")
	e.put(e.message(annP, "a", time.Hour))
	now := e.clock.Now()
	for _, cat := range []string{"a", "b"} {
		st := e.stats(annP, now)
		r := e.message(annP, cat, time.Hour)
		r.Entry = ""
		if err := w.PutForeign(e.ctx, r, []driver.Counter{{Partition: annP, Published: 1}, {Partition: annP, Category: cat, Published: 1}}); err != nil {
			e.t.Fatalf("PutForeign: %v", err)
		}
		after := e.stats(annP, now)
		if err := e.store.Repair(e.ctx, annP, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: st.Counters}); !errors.Is(err, driver.ErrConflict) {
			e.t.Errorf("Repair(Reset) read before another program's change to c#%s: %v, want ErrConflict", cat, err)
		}
		e.wantCounters(annP, after.Counters...) // the change kept
	}
	st := e.stats(annP, now)
	if err := e.store.Repair(e.ctx, annP, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: st.Counters}); err != nil {
		e.t.Errorf("Repair(Reset) read after the changes: %v", err)
	}
	e.wantCounters(annP, counter(annP, "", 3, 0), counter(annP, "a", 2, 0), counter(annP, "b", 1, 0))
}

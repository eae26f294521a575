package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// newClock returns a clock that moves only when told.
func newClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
}

var (
	ctx   = context.Background()
	scope = driver.Scope{Tenant: "acme", Inbox: "alerts"}
	ann   = scope.User("ann")
	bob   = scope.User("bob")
	// annP and pubP are the partitions of ann and of the inbox's broadcasts.
	annP = driver.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	pubP = driver.Partition{Tenant: "acme", Inbox: "alerts", Group: driver.PublicGroup}
)

func setup(t *testing.T) (*storetest.Clock, *memstore.Store, *inbox.Inbox) {
	t.Helper()
	clk := newClock()
	st := memstore.New(memstore.WithClock(clk.Now))
	return clk, st, inbox.New(st, inbox.WithClock(clk.Now))
}

func publish(t *testing.T, ib *inbox.Inbox, users []string, d inbox.Draft) string {
	t.Helper()
	res, err := ib.Publish(ctx, scope, users, d)
	if err != nil {
		t.Fatalf("Publish(%q): %v", d.Title, err)
	}
	return res.Message.ID
}

func broadcast(t *testing.T, ib *inbox.Inbox, d inbox.Draft) string {
	t.Helper()
	m, err := ib.Broadcast(ctx, scope, d)
	if err != nil {
		t.Fatalf("Broadcast(%q): %v", d.Title, err)
	}
	return m.ID
}

func markRead(t *testing.T, ib *inbox.Inbox, u driver.User, id string) {
	t.Helper()
	if ok, err := ib.MarkRead(ctx, u, id); err != nil || !ok {
		t.Fatalf("MarkRead(%s, %s) = %v, %v; want true, nil", u.ID, id, ok, err)
	}
}

func wantCounts(t *testing.T, ib *inbox.Inbox, u driver.User, want inbox.Counts) {
	t.Helper()
	got, err := ib.Counts(ctx, u)
	if err != nil {
		t.Fatalf("Counts(%s): %v", u.ID, err)
	}
	want.Unseen = want.Unread // nothing is marked seen here
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Counts(%s) (-want +got):\n%s", u.ID, d)
	}
}

// tally returns the Tally of total messages, read of them read, of a user
// with no seen watermark: every unread one unseen.
func tally(total, read int64) inbox.Tally {
	return inbox.Tally{Total: total, Read: read, Unread: total - read, Unseen: total - read}
}

func listIDs(t *testing.T, ib *inbox.Inbox, u driver.User) []string {
	t.Helper()
	page, err := ib.List(ctx, u, inbox.ListOptions{Limit: inbox.MaxPageSize})
	if err != nil {
		t.Fatalf("List(%s): %v", u.ID, err)
	}
	var ids []string
	for _, m := range page.Messages {
		ids = append(ids, m.ID)
	}
	return ids
}

func TestExpiryAccounting(t *testing.T) {
	clk, st, ib := setup(t)
	both := []string{"ann", "bob"}
	m1 := publish(t, ib, both, inbox.Draft{Title: "m1", Category: "ops"})
	m2 := publish(t, ib, both, inbox.Draft{Title: "m2", Category: "ops", TTL: time.Hour})
	m3 := publish(t, ib, []string{"ann"}, inbox.Draft{Title: "m3", Category: "billing"})
	b1 := broadcast(t, ib, inbox.Draft{Title: "b1", Category: "news", TTL: time.Hour})
	b2 := broadcast(t, ib, inbox.Draft{Title: "b2"})
	markRead(t, ib, ann, m1)
	markRead(t, ib, ann, m2)
	markRead(t, ib, ann, b1)
	markRead(t, ib, bob, m2)
	markRead(t, ib, bob, b2)

	annBefore := inbox.Counts{Tally: tally(5, 3), Categories: map[string]inbox.Tally{
		"ops": tally(2, 2), "billing": tally(1, 0), "news": tally(1, 1),
	}}
	bobBefore := inbox.Counts{Tally: tally(4, 2), Categories: map[string]inbox.Tally{
		"ops": tally(2, 1), "news": tally(1, 0),
	}}
	wantCounts(t, ib, ann, annBefore)
	wantCounts(t, ib, bob, bobBefore)

	clk.Advance(time.Hour - time.Second) // one second before m2 and b1 expire
	if n := st.Sweep(); n != 0 {
		t.Errorf("Sweep before expiry = %d, want 0", n)
	}
	wantCounts(t, ib, ann, annBefore)
	if got, want := listIDs(t, ib, ann), []string{b2, b1, m3, m2, m1}; !slices.Equal(got, want) {
		t.Errorf("List(ann) before expiry = %v, want %v", got, want)
	}

	clk.Advance(time.Second) // ExpiresAt itself counts as expired
	// ann's and bob's m2, b1, and ann's receipt for b1.
	if n := st.Sweep(); n != 4 {
		t.Errorf("Sweep at expiry = %d, want 4", n)
	}
	if n := st.Sweep(); n != 0 {
		t.Errorf("second Sweep = %d, want 0", n)
	}
	wantCounts(t, ib, ann, inbox.Counts{Tally: tally(3, 1), Categories: map[string]inbox.Tally{
		"ops": tally(1, 1), "billing": tally(1, 0),
	}})
	wantCounts(t, ib, bob, inbox.Counts{Tally: tally(2, 1), Categories: map[string]inbox.Tally{
		"ops": tally(1, 0),
	}})
	if got, want := listIDs(t, ib, ann), []string{b2, m3, m1}; !slices.Equal(got, want) {
		t.Errorf("List(ann) after expiry = %v, want %v", got, want)
	}
	if got, want := listIDs(t, ib, bob), []string{b2, m1}; !slices.Equal(got, want) {
		t.Errorf("List(bob) after expiry = %v, want %v", got, want)
	}
	if _, err := ib.MarkRead(ctx, bob, b1); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("MarkRead of expired broadcast: err = %v, want ErrNotFound", err)
	}

	// Deleting ann's read direct message m1 drops published and read.
	k := driver.Key{Partition: annP, ID: m1}
	if ok, err := st.Delete(ctx, k); err != nil || !ok {
		t.Fatalf("Delete(m1) = %v, %v; want true, nil", ok, err)
	}
	if ok, err := st.Delete(ctx, k); err != nil || ok {
		t.Errorf("second Delete(m1) = %v, %v; want false, nil", ok, err)
	}
	annAfter := inbox.Counts{Tally: tally(2, 0), Categories: map[string]inbox.Tally{"billing": tally(1, 0)}}
	wantCounts(t, ib, ann, annAfter)
	// The counters equal a recount of what is left.
	got, err := ib.Recount(ctx, ann)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(annAfter, got); d != "" {
		t.Errorf("Recount(ann) differs from the accounted counts (-accounted +recount):\n%s", d)
	}
}

// TestStreamLag: with WithStreamLag, a record is gone at expiry or delete
// but its counters fall only when the removal is delivered, once however
// often it is delivered; Counts equal List throughout.
func TestStreamLag(t *testing.T) {
	clk := newClock()
	st := memstore.New(memstore.WithClock(clk.Now), memstore.WithStreamLag())
	ib := inbox.New(st, inbox.WithClock(clk.Now))
	m1 := publish(t, ib, []string{"ann"}, inbox.Draft{Title: "m1", Category: "ops", TTL: time.Hour})
	m2 := publish(t, ib, []string{"ann"}, inbox.Draft{Title: "m2", Category: "ops"})
	b := broadcast(t, ib, inbox.Draft{Title: "b", TTL: time.Hour})
	markRead(t, ib, ann, m1)
	markRead(t, ib, ann, b)
	clk.Advance(time.Hour) // m1, b and ann's receipt expire
	if n := st.Sweep(); n != 3 {
		t.Errorf("Sweep at expiry = %d, want 3", n)
	}
	if _, err := st.Delete(ctx, driver.Key{Partition: annP, ID: m2}); err != nil {
		t.Fatal(err)
	}
	if n := st.Pending(); n != 4 {
		t.Errorf("Pending = %d, want 4", n)
	}
	raw := counters(t, st, annP)
	if raw[0].Published != 2 || raw[0].Read != 2 {
		t.Errorf("ann's raw total before delivery = %+v, want published 2, read 2", raw[0])
	}
	// Counts leave the expired records out at once; the deleted m2 counts
	// until its removal is delivered (a delete behind the library's back).
	wantCounts(t, ib, ann, inbox.Counts{Tally: tally(1, 0), Categories: map[string]inbox.Tally{"ops": tally(1, 0)}})
	if n, err := st.Deliver(ctx); err != nil || n != 4 {
		t.Errorf("Deliver = %d, %v; want 4, nil", n, err)
	}
	empty := inbox.Counts{Categories: map[string]inbox.Tally{}}
	wantCounts(t, ib, ann, empty)
	if n, err := st.Redeliver(ctx); err != nil || n != 0 {
		t.Errorf("Redeliver = %d, %v; want 0 applied, nil", n, err)
	}
	wantCounts(t, ib, ann, empty)
	if got := counters(t, st, annP)[0]; got.Published != 0 || got.Read != 0 {
		t.Errorf("ann's raw total after delivery = %+v, want zeros", got)
	}
}

// newIDs returns n ULIDs in ascending order.
func newIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = ulid.MustNew(uint64(1_700_000_000_000+i), nil).String()
	}
	return ids
}

func message(p driver.Partition, id, category string, expires time.Time) driver.Record {
	return driver.Record{Partition: p, Entry: driver.LedgerSK(expires, id, "t"), Message: driver.Message{
		ID: id, Category: category, ExpiresAt: expires,
		Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{p.User}},
	}}
}

// readMark returns the mark of rec read at now (a receipt if rec is a
// broadcast).
func readMark(p driver.Partition, rec driver.Record, now time.Time) driver.Mark {
	mk := driver.Mark{Key: driver.Key{Partition: p, ID: rec.Message.ID}, To: driver.State{ReadAt: now}, Now: now,
		Category: rec.Message.Category, ExpiresAt: rec.Message.ExpiresAt, Entry: rec.Entry}
	if rec.Partition.IsShared() {
		mk.Receipt, mk.Shared, mk.Entry = true, rec.Partition, driver.LedgerSK(rec.Message.ExpiresAt, rec.Message.ID, "r")
	}
	return mk
}

func queryIDs(t *testing.T, st *memstore.Store, q driver.Query) ([]string, string) {
	t.Helper()
	res, err := st.Query(ctx, q)
	if err != nil {
		t.Fatalf("Query(%+v): %v", q, err)
	}
	var ids []string
	for _, r := range res.Records {
		ids = append(ids, r.Message.ID)
	}
	return ids, res.Next
}

func TestQuery(t *testing.T) {
	clk, st, _ := setup(t)
	now := clk.Now()
	ids := newIDs(7)
	// ids[0..5] are direct messages of ann, alternating categories a and b;
	// ids[3] expires soonest. ids[6] is a broadcast ann has read.
	for i, id := range ids[:6] {
		cat := []string{"a", "b"}[i%2]
		exp := now.Add(48 * time.Hour)
		if i == 3 {
			exp = now.Add(time.Hour)
		}
		if err := st.PutMessage(ctx, message(annP, id, cat, exp), nil); err != nil {
			t.Fatal(err)
		}
	}
	bc := message(pubP, ids[6], "b", now.Add(48*time.Hour))
	bc.Message.Audience = driver.Audience{Kind: driver.AudienceEveryone}
	if err := st.PutMessage(ctx, bc, nil); err != nil {
		t.Fatal(err)
	}
	marks := []driver.Mark{
		readMark(annP, message(annP, ids[5], "b", now.Add(48*time.Hour)), now),
		readMark(annP, bc, now),
	}
	if err := st.Mark(ctx, marks, nil); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		q        driver.Query
		want     []string
		wantNext string
	}{
		{"first page", driver.Query{Limit: 3}, []string{ids[6], ids[5], ids[4]}, ids[4]},
		{"middle page", driver.Query{Before: ids[4], Limit: 2}, []string{ids[3], ids[2]}, ids[2]},
		{"last page exactly", driver.Query{Before: ids[2], Limit: 2}, []string{ids[1], ids[0]}, ""},
		{"last page short", driver.Query{Before: ids[2], Limit: 10}, []string{ids[1], ids[0]}, ""},
		{"before the lowest", driver.Query{Before: ids[0], Limit: 10}, nil, ""},
		{"before an absent ID", driver.Query{Before: ids[4] + "0", Limit: 1}, []string{ids[4]}, ids[4]},
		{"category after limit", driver.Query{Limit: 3, Category: "a"}, []string{ids[4]}, ids[4]},
		{"category on receipts", driver.Query{Limit: 1, Category: "b"}, []string{ids[6]}, ids[6]},
		{"category none kept", driver.Query{Before: ids[4], Limit: 1, Category: "a"}, nil, ids[3]},
		{"unread drops receipts", driver.Query{Limit: 3, UnreadOnly: true}, []string{ids[4]}, ids[4]},
		{"now drops expiring", driver.Query{Before: ids[5], Limit: 3, Now: now.Add(time.Hour)}, []string{ids[4], ids[2]}, ids[2]},
		{"now before expiry keeps", driver.Query{Before: ids[5], Limit: 2, Now: now.Add(time.Hour - time.Second)}, []string{ids[4], ids[3]}, ids[3]},
		{"other partition empty", driver.Query{Partition: driver.Partition{Tenant: "acme", Inbox: "alerts", User: "bob"}, Limit: 5}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.q.Partition == (driver.Partition{}) {
				tc.q.Partition = annP
			}
			got, next := queryIDs(t, st, tc.q)
			if !slices.Equal(got, tc.want) || next != tc.wantNext {
				t.Errorf("Query = %v, next %q; want %v, next %q", got, next, tc.want, tc.wantNext)
			}
		})
	}

	// Paging with Next visits every record once.
	var all []string
	q := driver.Query{Partition: annP, Limit: 2}
	for {
		got, next := queryIDs(t, st, q)
		all = append(all, got...)
		if next == "" {
			break
		}
		q.Before = next
	}
	want := slices.Clone(ids)
	slices.Reverse(want)
	if !slices.Equal(all, want) {
		t.Errorf("paged Query = %v, want %v", all, want)
	}

	for _, limit := range []int{0, -1} {
		if _, err := st.Query(ctx, driver.Query{Partition: annP, Limit: limit}); !errors.Is(err, driver.ErrInvalidInput) {
			t.Errorf("Query with Limit %d: err = %v, want ErrInvalidInput", limit, err)
		}
	}
}

func TestDeepCopy(t *testing.T) {
	clk, st, ib := setup(t)
	id := newIDs(1)[0]
	rec := message(annP, id, "", clk.Now().Add(time.Hour))
	rec.Message.Body = map[string]any{"list": []any{map[string]any{"x": 1.0}}, "s": "v"}
	want := copyOf(t, rec)
	want.Counted = driver.MarksKnown // an unread copy: its entry counts no mark
	if err := st.PutMessage(ctx, rec, nil); err != nil {
		t.Fatal(err)
	}
	// Changes to what was passed in do not reach the store.
	rec.Message.Body.(map[string]any)["s"] = "changed"
	rec.Message.Body.(map[string]any)["list"].([]any)[0].(map[string]any)["x"] = 2.0
	rec.Message.Audience.UIDs[0] = "mallory"

	k := driver.Key{Partition: annP, ID: id}
	got := getOne(t, st, k)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("stored record changed through the caller's value (-want +got):\n%s", d)
	}
	// Changes to what came out do not reach the store.
	body := got.Message.Body.(map[string]any)
	body["list"].([]any)[0].(map[string]any)["x"] = 3.0
	body["new"] = true
	got.Message.Audience.UIDs[0] = "mallory"
	if d := cmp.Diff(want, getOne(t, st, k)); d != "" {
		t.Errorf("stored record changed through a returned value (-want +got):\n%s", d)
	}
	res, err := st.Query(ctx, driver.Query{Partition: annP, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	res.Records[0].Message.Body.(map[string]any)["s"] = "changed"
	if d := cmp.Diff(want, getOne(t, st, k)); d != "" {
		t.Errorf("stored record changed through a Query result (-want +got):\n%s", d)
	}

	ic := driver.InboxConfig{Title: "Alerts", TTL: map[string]string{"default": "7d"}}
	if err := ib.PutInboxConfig(ctx, scope, ic); err != nil {
		t.Fatal(err)
	}
	ic.TTL["default"] = "1d"
	cfg, err := st.Config(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Inbox.TTL["default"] = "2d"
	cfg, err = st.Config(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Inbox.TTL["default"]; got != "7d" {
		t.Errorf("stored inbox TTL = %q, want 7d", got)
	}
	if cfg.Tenant != nil {
		t.Errorf("Config.Tenant = %+v, want nil", cfg.Tenant)
	}
}

// copyOf returns an independent copy of a record with a JSON-like body made
// of maps, slices and scalars, built by hand so the test does not rely on
// the code it tests.
func copyOf(t *testing.T, r driver.Record) driver.Record {
	t.Helper()
	var cp func(v any) any
	cp = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			m := map[string]any{}
			for k, e := range v {
				m[k] = cp(e)
			}
			return m
		case []any:
			s := []any{}
			for _, e := range v {
				s = append(s, cp(e))
			}
			return s
		}
		return v
	}
	r.Message.Body = cp(r.Message.Body)
	r.Message.Audience.UIDs = slices.Clone(r.Message.Audience.UIDs)
	return r
}

func getOne(t *testing.T, st *memstore.Store, k driver.Key) driver.Record {
	t.Helper()
	recs, err := st.GetRecords(ctx, []driver.Key{k, k})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("GetRecords(%v twice) returned %d records, want 1", k, len(recs))
	}
	return recs[0]
}

func counters(t *testing.T, st *memstore.Store, p driver.Partition) []driver.Counter {
	t.Helper()
	s, err := st.Stats(ctx, driver.StatsQuery{Partition: p, Now: time.Time{}})
	if err != nil {
		t.Fatal(err)
	}
	return s.Counters
}

func TestApplyRemovalOnce(t *testing.T) {
	clk, st, _ := setup(t)
	// A record without a ledger entry (another program's) is accounted
	// once per event ID in its partition.
	foreign := message(annP, newIDs(1)[0], "ops", clk.Now().Add(time.Hour))
	foreign.Entry = ""
	r := driver.Removal{
		Record:  foreign,
		EventID: "event-1",
		Deltas:  []driver.Counter{{Partition: annP, Published: -1, Read: -1}, {Partition: annP, Category: "ops", Published: -1}},
		Now:     clk.Now(),
	}
	want := []driver.Counter{{Partition: annP, Published: -1, Read: -1}, {Partition: annP, Category: "ops", Published: -1}}
	if ok, err := st.ApplyRemoval(ctx, r); err != nil || !ok {
		t.Fatalf("first ApplyRemoval = %v, %v; want true, nil", ok, err)
	}
	if ok, err := st.ApplyRemoval(ctx, r); err != nil || ok {
		t.Fatalf("second ApplyRemoval = %v, %v; want false, nil", ok, err)
	}
	if d := cmp.Diff(want, counters(t, st, annP)); d != "" {
		t.Errorf("counters (-want +got):\n%s", d)
	}
	// Once the marker has expired it is forgotten.
	clk.Advance(driver.RemovalMarkerTTL)
	if ok, err := st.ApplyRemoval(ctx, r); err != nil || !ok {
		t.Errorf("ApplyRemoval after the marker expired = %v, %v; want true, nil", ok, err)
	}
	if got := counters(t, st, annP)[0].Published; got != -2 {
		t.Errorf("published after a third removal = %d, want -2", got)
	}
}

func TestClaimHostID(t *testing.T) {
	clk, st, _ := setup(t)
	exp := clk.Now().Add(time.Hour)
	claim := func(s driver.Scope, id string, exp time.Time) string {
		t.Helper()
		got, err := st.ClaimHostID(ctx, driver.HostClaim{Scope: s, HostSystemID: "ext-1", ID: id, ExpiresAt: exp, Now: clk.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return got.ID
	}
	if got := claim(scope, "id1", exp); got != "id1" {
		t.Errorf("first claim = %q, want id1", got)
	}
	if got := claim(scope, "id2", exp.Add(time.Hour)); got != "id1" {
		t.Errorf("second claim = %q, want the first one's id1", got)
	}
	other := driver.Scope{Tenant: "acme", Inbox: "billing"}
	if got := claim(other, "id3", exp); got != "id3" {
		t.Errorf("claim in another inbox = %q, want id3", got)
	}
	clk.Advance(time.Hour - time.Second)
	if got := claim(scope, "id4", exp.Add(time.Hour)); got != "id1" {
		t.Errorf("claim a second before expiry = %q, want id1", got)
	}
	clk.Advance(time.Second)
	if got := claim(scope, "id5", exp.Add(time.Hour)); got != "id5" {
		t.Errorf("claim after expiry = %q, want the new id5", got)
	}
}

func TestPublishRetryWithHostID(t *testing.T) {
	_, _, ib := setup(t)
	d := inbox.Draft{Title: "once", HostSystemID: "order-7"}
	first, err := ib.Publish(ctx, scope, []string{"ann"}, d)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ib.Publish(ctx, scope, []string{"ann", "bob"}, d)
	if err != nil {
		t.Fatal(err)
	}
	if again.Message.ID != first.Message.ID || !slices.Equal(again.Duplicates, []string{"ann"}) || !slices.Equal(again.Delivered, []string{"bob"}) {
		t.Errorf("retry: id %s (first %s), delivered %v, duplicates %v", again.Message.ID, first.Message.ID, again.Delivered, again.Duplicates)
	}
	wantCounts(t, ib, ann, inbox.Counts{Tally: tally(1, 0), Categories: map[string]inbox.Tally{}})
}

func TestMarkReadAllOrNothing(t *testing.T) {
	clk, st, _ := setup(t)
	now := clk.Now()
	ids := newIDs(4)
	for _, id := range ids[:3] {
		if err := st.PutMessage(ctx, message(annP, id, "", now.Add(time.Hour)), []driver.Counter{{Partition: annP, Published: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	mark := func(id string) driver.Mark {
		return readMark(annP, message(annP, id, "", now.Add(time.Hour)), now)
	}
	read1 := []driver.Counter{{Partition: annP, Read: 1}}
	if err := st.Mark(ctx, []driver.Mark{mark(ids[2])}, read1); err != nil {
		t.Fatal(err)
	}
	start := counters(t, st, annP)

	receiptFor := func(id string) driver.Mark {
		return readMark(annP, message(pubP, id, "", now.Add(time.Hour)), now)
	}
	late := mark(ids[0])
	late.Now = now.Add(time.Hour)
	tests := []struct {
		name  string
		marks []driver.Mark
		want  error
	}{
		{"one already read", []driver.Mark{mark(ids[0]), mark(ids[1]), mark(ids[2])}, driver.ErrStateChanged},
		{"one missing", []driver.Mark{mark(ids[0]), mark(ids[3])}, driver.ErrNotFound},
		{"one expired at Now", []driver.Mark{mark(ids[1]), late}, driver.ErrNotFound},
		{"same key twice", []driver.Mark{mark(ids[0]), mark(ids[0])}, driver.ErrStateChanged},
		{"receipt without broadcast", []driver.Mark{mark(ids[0]), receiptFor(ids[3])}, driver.ErrNotFound},
		{"receipt of no broadcast where a record is", []driver.Mark{mark(ids[0]), receiptFor(ids[1])}, driver.ErrStateChanged}, // the receipt's condition first, as DynamoDB reports it
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := st.Mark(ctx, tc.marks, []driver.Counter{{Partition: annP, Read: int64(len(tc.marks))}})
			if !errors.Is(err, tc.want) {
				t.Fatalf("MarkRead: err = %v, want %v", err, tc.want)
			}
			if d := cmp.Diff(start, counters(t, st, annP)); d != "" {
				t.Errorf("counters changed (-before +after):\n%s", d)
			}
			for _, id := range ids[:2] {
				if r := getOne(t, st, driver.Key{Partition: annP, ID: id}); r.Message.IsRead() {
					t.Errorf("message %s was marked read", id)
				}
			}
			if recs, _ := st.GetRecords(ctx, []driver.Key{{Partition: annP, ID: ids[3]}}); len(recs) != 0 {
				t.Errorf("a record was created at %s: %+v", ids[3], recs)
			}
		})
	}

	tooMany := make([]driver.Mark, driver.MaxMarkBatch+1)
	if err := st.Mark(ctx, tooMany, nil); !errors.Is(err, driver.ErrInvalidInput) {
		t.Errorf("MarkRead of %d marks: err = %v, want ErrInvalidInput", len(tooMany), err)
	}

	// A batch whose marks all hold applies them all, with its deltas.
	if err := st.Mark(ctx, []driver.Mark{mark(ids[0]), mark(ids[1])}, []driver.Counter{{Partition: annP, Read: 2}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:3] {
		if r := getOne(t, st, driver.Key{Partition: annP, ID: id}); !r.Message.ReadAt.Equal(now) {
			t.Errorf("message %s ReadAt = %v, want %v", id, r.Message.ReadAt, now)
		}
	}
	if got := counters(t, st, annP)[0]; got.Published != 3 || got.Read != 3 {
		t.Errorf("counter = %+v, want published 3, read 3", got)
	}
}

func TestPutAndGetErrors(t *testing.T) {
	clk, st, _ := setup(t)
	id := newIDs(1)[0]
	rec := message(annP, id, "", clk.Now().Add(time.Hour))
	one := []driver.Counter{{Partition: annP, Published: 1}}
	if err := st.PutMessage(ctx, rec, one); err != nil {
		t.Fatal(err)
	}
	if err := st.PutMessage(ctx, rec, one); !errors.Is(err, driver.ErrExists) {
		t.Errorf("second PutMessage: err = %v, want ErrExists", err)
	}
	receipt := rec
	receipt.Receipt = true
	receipt.Partition = driver.Partition{Tenant: "acme", Inbox: "alerts", User: "bob"}
	if err := st.PutMessage(ctx, receipt, one); !errors.Is(err, driver.ErrInvalidInput) {
		t.Errorf("PutMessage of a receipt: err = %v, want ErrInvalidInput", err)
	}
	if d := cmp.Diff([]driver.Counter{{Partition: annP, Published: 1}}, counters(t, st, annP)); d != "" {
		t.Errorf("counters (-want +got):\n%s", d)
	}
	if cs := counters(t, st, receipt.Partition); cs == nil || len(cs) != 0 {
		t.Errorf("Counters of an untouched partition = %#v, want an empty slice", cs)
	}
	var keys []driver.Key
	for _, id := range newIDs(101) {
		keys = append(keys, driver.Key{Partition: annP, ID: id})
	}
	if _, err := st.GetRecords(ctx, keys); !errors.Is(err, driver.ErrInvalidInput) {
		t.Errorf("GetRecords of 101 distinct keys: err = %v, want ErrInvalidInput", err)
	}
	if _, err := st.GetRecords(ctx, append(keys[:100], keys[:100]...)); err != nil {
		t.Errorf("GetRecords of 100 distinct keys, each twice: %v", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.GetRecords(canceled, []driver.Key{rec.Key()}); !errors.Is(err, context.Canceled) {
		t.Errorf("GetRecords with a canceled context: err = %v, want context.Canceled", err)
	}
}

func TestCountersAndReset(t *testing.T) {
	clk, st, _ := setup(t)
	rec := message(annP, newIDs(1)[0], "z", clk.Now().Add(time.Hour))
	deltas := []driver.Counter{{Partition: annP, Category: "z", Published: 1}, {Partition: annP, Published: 1}, {Partition: annP, Category: "a", Read: 2}}
	if err := st.PutMessage(ctx, rec, deltas); err != nil {
		t.Fatal(err)
	}
	want := []driver.Counter{{Partition: annP, Published: 1}, {Partition: annP, Category: "a", Read: 2}, {Partition: annP, Category: "z", Published: 1}}
	if d := cmp.Diff(want, counters(t, st, annP)); d != "" {
		t.Errorf("Counters, sorted by category (-want +got):\n%s", d)
	}
	read := func() driver.Stats {
		s, err := st.Stats(ctx, driver.StatsQuery{Partition: annP, Now: time.Time{}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	version := func() int64 { return read().Version }
	bad := []driver.Counter{{Partition: annP, Published: 9}, {Partition: pubP, Published: 9}}
	if err := st.Repair(ctx, annP, driver.Repair{Reset: true, Version: version(), Counters: bad}); !errors.Is(err, driver.ErrInvalidInput) {
		t.Errorf("Repair with another partition's counter: err = %v, want ErrInvalidInput", err)
	}
	if d := cmp.Diff(want, counters(t, st, annP)); d != "" {
		t.Errorf("Counters after a refused reset (-want +got):\n%s", d)
	}
	reset := []driver.Counter{{Partition: annP, Category: "z", Published: 1}, {Partition: annP, Published: 1}}
	if err := st.Repair(ctx, annP, driver.Repair{Reset: true, Version: version() - 1, Counters: reset}); !errors.Is(err, driver.ErrConflict) {
		t.Errorf("Repair with a stale version: err = %v, want ErrConflict", err)
	}
	if err := st.Repair(ctx, annP, driver.Repair{Reset: true, Version: version(), Before: read().Counters, Counters: reset}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]driver.Counter{reset[1], reset[0]}, counters(t, st, annP)); d != "" {
		t.Errorf("Counters after reset (-want +got):\n%s", d)
	}
}

func TestConcurrentMarkReadCountsOnce(t *testing.T) {
	_, _, ib := setup(t)
	m := publish(t, ib, []string{"ann"}, inbox.Draft{Title: "direct", Category: "ops"})
	b := broadcast(t, ib, inbox.Draft{Title: "public", Category: "ops"})
	var wg sync.WaitGroup
	var mu sync.Mutex
	changed := map[string]int{}
	for i := 0; i < 16; i++ {
		for _, id := range []string{m, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := ib.MarkRead(ctx, ann, id)
				if err != nil {
					t.Errorf("MarkRead(%s): %v", id, err)
				}
				if ok {
					mu.Lock()
					changed[id]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if changed[m] != 1 || changed[b] != 1 {
		t.Errorf("MarkRead reported a change %d and %d times, want once each", changed[m], changed[b])
	}
	wantCounts(t, ib, ann, inbox.Counts{Tally: tally(2, 2), Categories: map[string]inbox.Tally{"ops": tally(2, 2)}})
}

// TestCountersMatchRecount runs random publishes, broadcasts, marks,
// deletes and clock moves, and checks after each step that the accounted
// counts equal a recount of the records left.
func TestCountersMatchRecount(t *testing.T) {
	clk, st, ib := setup(t)
	rng := rand.New(rand.NewPCG(1, 2))
	users := []string{"ann", "bob", "cy"}
	cats := []string{"", "ops", "news"}
	var ids []string
	for step := 0; step < 1500; step++ {
		u := scope.User(users[rng.IntN(len(users))])
		d := inbox.Draft{
			Title:    fmt.Sprint("step ", step),
			Category: cats[rng.IntN(len(cats))],
			TTL:      time.Duration(1+rng.IntN(120)) * time.Minute,
			Body:     map[string]any{"step": step},
		}
		switch op := rng.IntN(10); {
		case op < 3:
			ids = append(ids, publish(t, ib, users[:1+rng.IntN(len(users))], d))
		case op < 4:
			ids = append(ids, broadcast(t, ib, d))
		case op < 7 && len(ids) > 0:
			id := ids[rng.IntN(len(ids))]
			if _, err := ib.MarkRead(ctx, u, id); err != nil && !errors.Is(err, driver.ErrNotFound) {
				t.Fatalf("step %d: MarkRead: %v", step, err)
			}
		case op < 8 && len(ids) > 0:
			p := driver.Partition{Tenant: scope.Tenant, Inbox: scope.Inbox, User: u.ID}
			if rng.IntN(2) == 0 {
				p.User, p.Group = "", driver.PublicGroup
			}
			if _, err := st.Delete(ctx, driver.Key{Partition: p, ID: ids[rng.IntN(len(ids))]}); err != nil {
				t.Fatalf("step %d: Delete: %v", step, err)
			}
		case op < 9:
			if _, err := ib.MarkAllRead(ctx, u, inbox.ListOptions{}); err != nil {
				t.Fatalf("step %d: MarkAllRead: %v", step, err)
			}
		default:
			clk.Advance(time.Duration(rng.IntN(20)) * time.Minute)
		}
		if step%50 != 49 {
			continue
		}
		for _, name := range users {
			u := scope.User(name)
			before, err := ib.Counts(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			after, err := ib.Recount(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(before, after); d != "" {
				t.Fatalf("step %d: Counts(%s) differ from a recount (-accounted +recount):\n%s", step, name, d)
			}
		}
	}
}

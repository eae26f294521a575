package storetest

import (
	"errors"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stak/inbox/driver"
)

// scheduledCopy returns a scheduled record in p of a message due at due
// with ID id (shared by the copies of one publish), expiring ttl after
// due: a user's copy, or in a shared partition the broadcast or group
// message itself.
func (e *env) scheduledCopy(p driver.Partition, id string, due time.Time, ttl time.Duration) driver.Record {
	rec := e.message(p, "billing", time.Hour)
	rec.Message.ID, rec.Message.Title = id, "due "+due.Format(time.RFC3339)
	if !p.IsShared() {
		rec.Message.Audience.UIDs = []string{p.User}
	}
	rec.Message.DeliverAt, rec.Message.DeliveredAt, rec.Message.ExpiresAt = due, due, due.Add(ttl)
	rec.Entry = driver.LedgerSK(rec.Message.ExpiresAt, id, "storetest")
	rec.Timed = driver.TimedKey(due, rec.Entry, true) // its pending entry
	return rec
}

// scheduledID returns a new ID minted at t, as the Inbox mints a
// scheduled message's.
func (e *env) scheduledID(t time.Time) string {
	return ulid.MustNew(ulid.Timestamp(t), e.ids).String()
}

// positionOf returns rec's position in a scheduled query.
func positionOf(rec driver.Record) string {
	return driver.ScheduledKey(rec.Message.ID, rec.Partition)
}

// unmarked returns rec without a user's marks, as a scheduled query
// returns it.
func unmarked(rec driver.Record) driver.Record {
	rec.Message.ReadAt, rec.Message.ArchivedAt, rec.Timed = time.Time{}, time.Time{}, ""
	return rec
}

// scheduled runs a scheduled query of the env's scope and checks its
// page: in ascending order of position, within the bounds, each record of
// a partition of the scope, no receipt.
func (e *env) scheduled(q driver.Query) driver.QueryResult {
	e.t.Helper()
	q.Partition, q.Scheduled = driver.Partition{Tenant: e.scope.Tenant, Inbox: e.scope.Inbox}, true
	res, err := e.store.Query(e.ctx, q)
	if err != nil {
		e.t.Fatalf("scheduled query after %q before %q: %v", q.After, q.Before, err)
	}
	for i, r := range res.Records {
		pos := positionOf(r)
		switch {
		case i > 0 && pos <= positionOf(res.Records[i-1]):
			e.t.Errorf("scheduled query: %s after %s, not in ascending order", pos, positionOf(res.Records[i-1]))
		case q.After != "" && pos <= q.After, q.Before != "" && pos >= q.Before:
			e.t.Errorf("scheduled query after %q before %q returned %s", q.After, q.Before, pos)
		case r.Receipt || r.Partition.Scope() != e.scope:
			e.t.Errorf("scheduled query returned a record of %s (receipt %v)", r.Partition.PK(), r.Receipt)
		case res.Next != "" && pos > res.Next:
			e.t.Errorf("scheduled query returned %s above its Next %s", pos, res.Next)
		}
		e.checkStored(r)
	}
	return res
}

// scheduledAll pages through a scheduled query with q's bounds and Now,
// limit records a page, and returns what it returned. It stops at a Next
// of Before or above, as Inbox.Scheduled and Due do: nothing remains.
func (e *env) scheduledAll(q driver.Query, limit int) []driver.Record {
	e.t.Helper()
	q.Limit = limit
	var out []driver.Record
	for pages := 0; ; pages++ {
		if pages > 100 {
			e.t.Fatalf("scheduled query: more than 100 pages")
		}
		res := e.scheduled(q)
		if len(res.Records) > limit {
			e.t.Errorf("scheduled query of limit %d returned %d records", limit, len(res.Records))
		}
		out = append(out, res.Records...)
		if res.Next == "" || q.Before != "" && res.Next >= q.Before {
			// None remain; or the last one evaluated was at Before
			// (evaluated and dropped: see driver.Query.Scheduled).
			return out
		}
		if res.Next <= q.After {
			e.t.Fatalf("scheduled query after %q: Next %q does not move up", q.After, res.Next)
		}
		q.After = res.Next
	}
}

// testQueryScheduled: a scheduled query returns the scheduled records of
// one inbox, due or not: the users' copies, and each broadcast and group
// message once, in its shared partition, ascending by position (ID then
// user or group) among the copies, within its bounds (bare IDs or
// positions), at most Limit evaluated, the expired left out with Now,
// each without its user's marks; not the inbox's other messages, a
// receipt, another inbox's, a copy deleted, or a broadcast or group
// message removed.
func testQueryScheduled(e *env) {
	now := e.clock.Now()
	ann, bob, carl := e.part("ann"), e.part("bob"), e.part("carl")
	ops := groupOf(e.scope, "ops")
	e.used[ops] = true
	id3, idG := e.scheduledID(now.Add(30*time.Minute)), e.scheduledID(now.Add(45*time.Minute))
	id1, idB := e.scheduledID(now.Add(time.Hour)), e.scheduledID(now.Add(time.Hour))
	id2 := e.scheduledID(now.Add(2 * time.Hour))
	c3 := e.scheduledCopy(carl, id3, now.Add(30*time.Minute), time.Hour)
	g := e.scheduledCopy(ops, idG, now.Add(45*time.Minute), time.Hour)
	a1, b1 := e.scheduledCopy(ann, id1, now.Add(time.Hour), time.Hour), e.scheduledCopy(bob, id1, now.Add(time.Hour), time.Hour)
	pub := e.scheduledCopy(e.pub(), idB, now.Add(time.Hour), 90*time.Minute)
	a2 := e.scheduledCopy(ann, id2, now.Add(2*time.Hour), 10*time.Minute)
	d1 := e.scheduledCopy(e.part("dora"), id1, now.Add(time.Hour), time.Hour)
	for _, r := range []driver.Record{a2, pub, b1, c3, g, a1, d1} {
		e.put(r)
	}
	// Not listed: a message delivered now, in a user's partition and in a
	// shared one, and another inbox's scheduled copy and broadcast.
	e.put(e.message(ann, "billing", time.Hour))
	e.put(e.message(e.pub(), "billing", time.Hour))
	other := driver.Partition{Tenant: e.scope.Tenant, Inbox: "other", User: "ann"}
	e.used[other] = true
	e.put(e.scheduledCopy(other, e.scheduledID(now.Add(time.Hour)), now.Add(time.Hour), time.Hour))
	otherPub := publicOf(other.Scope())
	e.used[otherPub] = true
	e.put(e.scheduledCopy(otherPub, e.scheduledID(now.Add(time.Hour)), now.Add(time.Hour), time.Hour))
	// A mark on a copy (the Store does not know it is not due) is not
	// returned, nor is a receipt of the broadcast; a copy deleted is gone.
	e.setMarks(&a1, driver.State{ReadAt: now, ArchivedAt: now})
	e.markReceipt(bob, pub)
	mk := directMark(d1, time.Time{}, now)
	mk.Delete = true
	if err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, nil); err != nil {
		e.t.Fatalf("delete dora's copy: %v", err)
	}

	all := []driver.Record{unmarked(c3), unmarked(g), unmarked(a1), unmarked(b1), unmarked(pub), unmarked(a2)}
	for _, limit := range []int{1, 2, 3, 10} {
		e.wantRecords("scheduled pages", all, e.scheduledAll(driver.Query{}, limit))
	}
	if res := e.scheduled(driver.Query{Limit: 2}); len(res.Records) != 2 || res.Next != positionOf(g) {
		e.t.Errorf("a scheduled page of 2: %d records, Next %q; want 2, Next %q", len(res.Records), res.Next, positionOf(g))
	}
	for _, c := range []struct {
		what          string
		after, before string
		want          []driver.Record
	}{
		{"after a bare ID: its copies on", id1, "", all[2:]},
		{"after a position", positionOf(a1), "", all[3:]},
		{"after a group message's position", positionOf(g), "", all[2:]},
		{"after a broadcast's bare ID", idB, "", all[4:]},
		{"before a bare ID: below its copies", "", id1, all[:2]},
		{"before a position", "", positionOf(b1), all[:3]},
		{"before a broadcast's position", "", positionOf(pub), all[:4]},
		{"between positions", positionOf(c3), positionOf(a2), all[1:5]},
		{"between a group message's and a broadcast's position", positionOf(g), positionOf(pub), all[2:4]},
		{"between bare IDs", id3, id2, all[:5]},
		{"between a position and the bare ID after it", positionOf(pub), id2, nil},
	} {
		e.wantRecords("scheduled query "+c.what, c.want, e.scheduledAll(driver.Query{After: c.after, Before: c.before}, 2))
	}
	// With Now, the expired are left out (not the due: a1, b1 and the
	// broadcast are due then).
	e.wantRecords("scheduled query at c3's expiry", all[1:], e.scheduledAll(driver.Query{Now: c3.Message.ExpiresAt}, 2))
	e.wantRecords("scheduled query at the group message's expiry", all[2:], e.scheduledAll(driver.Query{Now: g.Message.ExpiresAt}, 2))
	// Limit counts the records evaluated, the expired among them.
	if res := e.scheduled(driver.Query{Limit: 1, Now: c3.Message.ExpiresAt}); len(res.Records) != 0 || res.Next != positionOf(c3) {
		e.t.Errorf("a scheduled page of 1 at c3's expiry: %d records, Next %q; want none, Next %q", len(res.Records), res.Next, positionOf(c3))
	}
	// A broadcast or group message removed leaves the index.
	for _, r := range []driver.Record{pub, g} {
		if ok, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: r, Deltas: driver.RemovalDeltas(r), Tombstone: driver.LeavesTombstone(r, now), Delete: true, Now: now}); err != nil || !ok {
			e.t.Fatalf("ApplyRemoval of the scheduled message of %s: %v, %v", r.Partition.PK(), ok, err)
		}
	}
	e.wantRecords("scheduled pages after the removal of the broadcast and the group message", []driver.Record{unmarked(c3), unmarked(a1), unmarked(b1), unmarked(a2)}, e.scheduledAll(driver.Query{}, 2))
}

// testQueryScheduledBadInput: a scheduled query of a partition that
// names a user or a group, with another filter, with bounds that are
// neither IDs nor positions or are reversed, or with a bad scope, is
// refused.
func testQueryScheduledBadInput(e *env) {
	scope := driver.Partition{Tenant: e.scope.Tenant, Inbox: e.scope.Inbox}
	id := e.newID()
	for name, q := range map[string]driver.Query{
		"a user's partition":      {Partition: e.part("ann")},
		"a group's partition":     {Partition: e.pub()},
		"a category":              {Partition: scope, Category: "billing"},
		"a thread":                {Partition: scope, Thread: "chat"},
		"unread only":             {Partition: scope, UnreadOnly: true},
		"archived":                {Partition: scope, Archived: driver.OnlyArchived},
		"unseen":                  {Partition: scope, Unseen: true},
		"a bound that is no ID":   {Partition: scope, After: "m#" + id},
		"a position of no user":   {Partition: scope, Before: id + "#"},
		"a position of no group":  {Partition: scope, After: id + "##"},
		"a group with a '#'":      {Partition: scope, After: id + "###ops"},
		"After equal to Before":   {Partition: scope, After: id, Before: id},
		"After above Before":      {Partition: scope, After: driver.ScheduledKey(id, e.part("ann")), Before: id},
		"a limit of 0":            {Partition: scope, Limit: 0},
		"a tenant with a '#'":     {Partition: driver.Partition{Tenant: "ac#me", Inbox: e.scope.Inbox}},
		"no inbox":                {Partition: driver.Partition{Tenant: e.scope.Tenant}},
		"After above Before (ID)": {Partition: scope, After: id, Before: idBelow(id)},
	} {
		if q.Limit == 0 && name != "a limit of 0" {
			q.Limit = 10
		}
		q.Scheduled = true
		_, err := e.store.Query(e.ctx, q)
		if !errors.Is(err, driver.ErrInvalidInput) && !errors.Is(err, driver.ErrInvalidKey) {
			e.t.Errorf("scheduled query with %s: %v, want ErrInvalidInput or ErrInvalidKey", name, err)
		}
	}
}

// idBelow returns a ULID just below id (id's time less a millisecond).
func idBelow(id string) string {
	u := ulid.MustParseStrict(id)
	var below ulid.ULID
	_ = below.SetTime(u.Time() - 1)
	return below.String()
}

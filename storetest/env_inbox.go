package storetest

import (
	"fmt"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// publish publishes d to users of the env's scope and returns the result;
// it fails the test on error.
func (e *env) publish(d inbox.Draft, users ...string) inbox.PublishResult {
	e.t.Helper()
	return e.publishIn(e.scope, d, users...)
}

// publishIn publishes d to users of scope s.
func (e *env) publishIn(s driver.Scope, d inbox.Draft, users ...string) inbox.PublishResult {
	e.t.Helper()
	for _, u := range users {
		e.userIn(s, u)
	}
	res, err := e.ib.Publish(e.ctx, s, users, d)
	if err != nil {
		e.t.Fatalf("Publish(%v, %v): %v", s, users, err)
	}
	for _, u := range users {
		e.active(res.Message, "", driver.Partition{Tenant: s.Tenant, Inbox: s.Inbox, User: u})
	}
	return res
}

// broadcastTo broadcasts d to group g of the env's scope.
func (e *env) broadcastTo(g string, d inbox.Draft) driver.Message {
	e.t.Helper()
	e.used[groupOf(e.scope, g)] = true
	m, err := e.ib.BroadcastGroup(e.ctx, e.scope, g, d)
	if err != nil {
		e.t.Fatalf("BroadcastGroup(%s): %v", g, err)
	}
	e.active(m, g)
	return m
}

// broadcast broadcasts d in the env's scope.
func (e *env) broadcast(d inbox.Draft) driver.Message {
	e.t.Helper()
	m, err := e.ib.Broadcast(e.ctx, e.scope, d)
	if err != nil {
		e.t.Fatalf("Broadcast: %v", err)
	}
	e.active(m, driver.PublicGroup)
	return m
}

// markRead marks id read for u and checks whether it changed anything.
func (e *env) markRead(u driver.User, id string, wantChanged bool) {
	e.t.Helper()
	changed, err := e.ib.MarkRead(e.ctx, u, id)
	if err != nil || changed != wantChanged {
		e.t.Errorf("MarkRead(%s, %s): got %v, %v; want %v, nil", u.ID, id, changed, err, wantChanged)
	}
}

// copyFor returns m as user u's copy: a published message's audience names
// only u. A broadcast is returned as is.
func copyFor(m driver.Message, u string) driver.Message {
	if !m.IsBroadcast() {
		m.Audience.UIDs = []string{u}
	}
	return m
}

// read returns m read at t.
func read(m driver.Message, t time.Time) driver.Message {
	m.ReadAt = t
	return m
}

// listAll pages through u's feed with o (o.Cursor is where it starts) and
// returns every message. It checks that no page holds more than the page
// size, that messages come newest first and that none repeats.
func (e *env) listAll(u driver.User, o inbox.ListOptions) []driver.Message {
	e.t.Helper()
	limit := o.Limit
	if limit == 0 {
		limit = inbox.DefaultPageSize
	}
	var out []driver.Message
	for pages := 0; ; pages++ {
		if pages > 10000 {
			e.t.Fatalf("List(%s, %+v): more than 10000 pages", u.ID, o)
		}
		p, err := e.ib.List(e.ctx, u, o)
		if err != nil {
			e.t.Fatalf("List(%s, %+v): %v", u.ID, o, err)
		}
		if len(p.Messages) > limit {
			e.t.Errorf("List(%s, %+v): %d messages on a page of %d", u.ID, o, len(p.Messages), limit)
		}
		for _, m := range p.Messages {
			if n := len(out); n > 0 && m.ID >= out[n-1].ID {
				e.t.Fatalf("List(%s, %+v): %s after %s: repeated or not newest first", u.ID, o, m.ID, out[n-1].ID)
			}
			out = append(out, m)
		}
		if p.Cursor == "" {
			return out
		}
		o.Cursor = p.Cursor
	}
}

// wantFeed checks that u's whole feed with o, paged by o.Limit, is exactly
// want.
func (e *env) wantFeed(u driver.User, o inbox.ListOptions, want ...driver.Message) {
	e.t.Helper()
	e.wantMessages(fmt.Sprintf("List(%s, limit %d, category %q, thread %q, unread only %v)", u.ID, o.Limit, o.Category, o.Thread, o.UnreadOnly), want, e.listAll(u, o))
}

// wantMessages checks that got equals want exactly.
func (e *env) wantMessages(what string, want, got []driver.Message) {
	e.t.Helper()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	if diff := cmp.Diff(want, got, recordOpts()); diff != "" {
		e.t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// wantIDs checks that msgs have exactly the IDs ids, in order, and the read
// state of each (reads[i] for ids[i]).
func (e *env) wantIDs(what string, msgs []driver.Message, ids []string, reads []bool) {
	e.t.Helper()
	type entry struct {
		ID   string
		Read bool
	}
	var want, got []entry
	for i, id := range ids {
		want = append(want, entry{id, reads[i]})
	}
	for _, m := range msgs {
		got = append(got, entry{m.ID, m.IsRead()})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// counts returns u's Counts.
func (e *env) counts(u driver.User) inbox.Counts {
	e.t.Helper()
	c, err := e.ib.Counts(e.ctx, u)
	if err != nil {
		e.t.Fatalf("Counts(%s): %v", u.ID, err)
	}
	return c
}

// wantCounts checks u's Counts. For a user the test never marked seen
// (markSeen), Unseen is Unread: want's Unseen is set so.
func (e *env) wantCounts(u driver.User, want inbox.Counts) {
	e.t.Helper()
	if want.Categories == nil {
		want.Categories = map[string]inbox.Tally{}
	}
	if _, ok := e.seen[partitionOf(u)]; !ok {
		want = allUnseen(want)
	}
	if diff := cmp.Diff(want, e.counts(u)); diff != "" {
		e.t.Errorf("Counts(%s) (-want +got):\n%s", u.ID, diff)
	}
}

// markSeen marks u's feed seen (Inbox.MarkSeen) and notes it, for
// wantCounts.
func (e *env) markSeen(u driver.User) {
	e.t.Helper()
	if _, err := e.ib.MarkSeen(e.ctx, u); err != nil {
		e.t.Fatalf("MarkSeen(%s): %v", u.ID, err)
	}
	e.seen[partitionOf(u)] = inbox.SeenAt(e.clock.Now())
}

// tallyOf returns a Tally of total and read.
func tallyOf(total, read int64) inbox.Tally {
	return inbox.Tally{Total: total, Read: read, Unread: max(total-read, 0)}
}

// unseenOf returns t with Unseen n.
func unseenOf(t inbox.Tally, n int64) inbox.Tally {
	t.Unseen = n
	return t
}

// state is everything the suite can see of the env's store: the records,
// counters and preferences of every used partition, and the configs of
// its scope.
type state struct {
	Records     map[string][]driver.Record
	Counters    map[string][]driver.Counter
	Preferences map[string]string
	Config      driver.Config
}

// snapshot returns the store's state.
func (e *env) snapshot() state {
	e.t.Helper()
	s := state{Records: map[string][]driver.Record{}, Counters: map[string][]driver.Counter{}, Preferences: map[string]string{}}
	for p := range e.used {
		s.Records[p.PK()] = e.records(p)
		s.Counters[p.PK()] = e.counters(p)
		s.Preferences[p.PK()] = e.stats(p, e.clock.Now()).Preferences.Encode()
	}
	cfg, err := e.store.Config(e.ctx, e.scope)
	if err != nil {
		e.t.Fatalf("Config: %v", err)
	}
	s.Config = cfg
	return s
}

// wantUnchanged checks that the store's state is still before.
func (e *env) wantUnchanged(what string, before state) {
	e.t.Helper()
	if diff := cmp.Diff(before, e.snapshot(), recordOpts()); diff != "" {
		e.t.Errorf("%s changed the store (-before +after):\n%s", what, diff)
	}
}

// foreignWriter returns the Store as a ForeignWriter, or skips the test
// if it is not one.
func (e *env) foreignWriter() ForeignWriter {
	e.t.Helper()
	w, ok := e.store.(ForeignWriter)
	if !ok {
		e.t.Skip("the store is not a storetest.ForeignWriter")
	}
	return w
}

// readForeign has another program mark m, a message of the user of
// partition p (a direct message or the user's receipt of a broadcast),
// read as the seeds do (readat, and read +1 in c#* and c#<category>), and
// returns the MODIFY record for the stream handler.
func (e *env) readForeign(p driver.Partition, m driver.Message) driver.Change {
	e.t.Helper()
	c, ok, err := e.foreignWriter().ReadForeign(e.ctx, driver.Key{Partition: p, ID: m.ID}, e.clock.Now(), delta(p, m.Category, 0, 1))
	if err != nil || !ok {
		e.t.Fatalf("ReadForeign(%s): %v, %v", m.ID, ok, err)
	}
	return c
}

package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// callCounter is a Store that counts the calls made to it, by method.
type callCounter struct {
	inbox.Store
	mu sync.Mutex
	n  map[string]int
}

func (s *callCounter) count(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	s.n[name]++
}

// take returns the calls counted since the last take, and forgets them.
func (s *callCounter) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	s.n = nil
	return n
}

func (s *callCounter) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	s.count("Stats")
	return s.Store.Stats(ctx, q)
}

func (s *callCounter) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	s.count("Query")
	return s.Store.Query(ctx, q)
}

func (s *callCounter) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	s.count("Mark")
	return s.Store.Mark(ctx, marks, deltas)
}

func (s *callCounter) PutMessage(ctx context.Context, rec driver.Record, deltas []driver.Counter, receipts ...driver.Mark) error {
	s.count("PutMessage")
	return s.Store.PutMessage(ctx, rec, deltas, receipts...)
}

func (s *callCounter) PutTenantSettings(ctx context.Context, tenant string, ts driver.TenantSettings) error {
	s.count("PutTenantSettings")
	return s.Store.PutTenantSettings(ctx, tenant, ts)
}

func (s *callCounter) PutInboxConfig(ctx context.Context, sc driver.Scope, ic driver.InboxConfig) error {
	s.count("PutInboxConfig")
	return s.Store.PutInboxConfig(ctx, sc, ic)
}

// TestMuteThreadBadInput: a thread mute that cannot be is a typed error
// and writes nothing: a key with '#', an empty key, a thread twice, more
// than MaxMutedThreads threads, and default preferences (an inbox's, a
// tenant's) that mute a thread. MaxMutedThreads threads fit.
func TestMuteThreadBadInput(t *testing.T) {
	ctx := context.Background()
	st := &callCounter{Store: memstore.New()}
	ib := inbox.New(st)
	ann := scope.User("ann")
	if _, err := ib.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{Sender: "bob", Thread: "ann-bob", Title: "hi"}); err != nil {
		t.Fatal(err)
	}
	before := inbox.Preferences{MutedGroups: []string{"devs"}, Own: true}
	if _, err := ib.SetPreferences(ctx, ann, before); err != nil {
		t.Fatal(err)
	}
	counts, err := ib.Counts(ctx, ann)
	if err != nil {
		t.Fatal(err)
	}
	threads := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("t%02d", i)
		}
		return out
	}
	st.take()
	for _, c := range []struct {
		what string
		p    inbox.Preferences
		want error
	}{
		{"a thread key with '#'", inbox.Preferences{MutedThreads: []string{"ann#bob"}}, inbox.ErrInvalidKey},
		{"an empty thread key", inbox.Preferences{MutedThreads: []string{""}}, inbox.ErrInvalidKey},
		{"a thread twice", inbox.Preferences{MutedThreads: []string{"ann-bob", "ann-bob"}}, inbox.ErrInvalidInput},
		{fmt.Sprint(inbox.MaxMutedThreads+1, " threads"), inbox.Preferences{MutedThreads: threads(inbox.MaxMutedThreads + 1)}, inbox.ErrInvalidInput},
	} {
		if changed, err := ib.SetPreferences(ctx, ann, c.p); changed || !errors.Is(err, c.want) {
			t.Errorf("SetPreferences with %s = %v, %v; want false, %v", c.what, changed, err, c.want)
		}
	}
	defaults := inbox.Preferences{MutedThreads: []string{"ann-bob"}}
	if err := ib.PutInboxConfig(ctx, scope, inbox.InboxConfig{Preferences: defaults}); !errors.Is(err, inbox.ErrInvalidInput) {
		t.Errorf("PutInboxConfig with a muted thread: %v, want ErrInvalidInput", err)
	}
	if err := ib.PutTenantSettings(ctx, scope.Tenant, inbox.TenantSettings{Preferences: defaults}); !errors.Is(err, inbox.ErrInvalidInput) {
		t.Errorf("PutTenantSettings with a muted thread: %v, want ErrInvalidInput", err)
	}
	for _, w := range []string{"Mark", "PutMessage", "PutTenantSettings", "PutInboxConfig"} {
		if n := st.take()[w]; n != 0 {
			t.Errorf("bad input made %d %s calls, want none", n, w)
		}
	}
	if p, err := ib.Preferences(ctx, ann); err != nil || !p.Equal(before) {
		t.Errorf("Preferences(ann) after bad input = %+v, %v; want %+v", p, err, before)
	}
	if cfg, err := ib.Config(ctx, scope); err != nil || cfg.Inbox != nil || cfg.Tenant != nil {
		t.Errorf("Config after bad defaults = %+v, %v; want none", cfg, err)
	}
	if got, err := ib.Counts(ctx, ann); err != nil || !cmp.Equal(got, counts) {
		t.Errorf("Counts(ann) after bad input = %+v, %v; want %+v", got, err, counts)
	}

	// The most threads a user can mute are taken, in any order.
	most := threads(inbox.MaxMutedThreads)
	slices.Reverse(most)
	if changed, err := ib.SetPreferences(ctx, ann, inbox.Preferences{MutedThreads: most}); !changed || err != nil {
		t.Errorf("SetPreferences with %d threads = %v, %v; want true, nil", len(most), changed, err)
	}
	if p, err := ib.Preferences(ctx, ann); err != nil || !slices.Equal(p.MutedThreads, threads(inbox.MaxMutedThreads)) {
		t.Errorf("Preferences(ann) = %v, %v; want the %d threads, sorted", p.MutedThreads, err, inbox.MaxMutedThreads)
	}
}

// feedTally returns what a full List of u shows, counted as Counts counts
// it: the feed's messages by state (a muted unread message in Muted, an
// unmuted one above the watermark seen in Unseen), overall and by
// category, the archived view's and the snoozed view's.
func feedTally(t *testing.T, ib *inbox.Inbox, u inbox.User, seen string) inbox.Counts {
	t.Helper()
	c := inbox.Counts{Categories: map[string]inbox.Tally{}}
	each := func(o inbox.ListOptions, f func(inbox.Message)) {
		o.Limit = inbox.MaxPageSize
		for {
			page, err := ib.List(context.Background(), u, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page.Messages {
				f(m)
			}
			if page.Cursor == "" {
				return
			}
			o.Cursor = page.Cursor
		}
	}
	add := func(cat string, f func(*inbox.Tally)) {
		f(&c.Tally)
		if cat == "" {
			return // no category: in the totals alone
		}
		tl := c.Categories[cat]
		f(&tl)
		c.Categories[cat] = tl
	}
	each(inbox.ListOptions{}, func(m inbox.Message) {
		add(m.Category, func(tl *inbox.Tally) {
			tl.Total++
			switch {
			case m.IsRead():
				tl.Read++
			case m.Muted:
				tl.Muted++
			default:
				tl.Unread++
				if m.ID > seen {
					tl.Unseen++
				}
			}
		})
	})
	each(inbox.ListOptions{Archived: true}, func(m inbox.Message) { add(m.Category, func(tl *inbox.Tally) { tl.Archived++ }) })
	each(inbox.ListOptions{Snoozed: true}, func(inbox.Message) { c.Snoozed++ })
	return c
}

// wantCountsAsListed checks that Counts of u equals feedTally: every
// figure, overall and by category (a category with nothing to count
// either way left out).
func wantCountsAsListed(t *testing.T, ib *inbox.Inbox, u inbox.User, seen, what string) inbox.Counts {
	t.Helper()
	got, err := ib.Counts(context.Background(), u)
	if err != nil {
		t.Fatalf("%s: Counts: %v", what, err)
	}
	want := feedTally(t, ib, u, seen)
	for _, c := range []*inbox.Counts{&got, &want} {
		c.Categories = maps.Clone(c.Categories)
		maps.DeleteFunc(c.Categories, func(_ string, tl inbox.Tally) bool { return tl == inbox.Tally{} })
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: Counts (-as List shows +got):\n%s", what, diff)
	}
	return got
}

// TestMuteThreadCountsAsListed mutes ann's one-to-one chat with bob, then
// changes it while it is muted: bob writes more (one message expiring),
// a message is scheduled, she reads one, archives one, snoozes another message, marks
// her feed seen, and the chat is unmuted. After each step Counts (every
// figure, overall and by category) equals what List shows; the chat's
// messages are listed muted, its unread in Muted, and ListThreads shows
// it muted; a group's message of the same thread key is not muted (only
// direct messages' threads are), nor is anyone else's chat.
func TestMuteThreadCountsAsListed(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	ib := inbox.New(memstore.New(memstore.WithClock(clock.Now)), inbox.WithClock(clock.Now))
	ann := scope.User("ann").InGroups("team")
	chat := func(d inbox.Draft) inbox.Message {
		t.Helper()
		d.Sender, d.Thread = "bob", "ann-bob"
		if d.Category == "" {
			d.Category = "chat"
		}
		res, err := ib.Publish(ctx, scope, []string{"ann", "bob"}, d)
		if err != nil {
			t.Fatal(err)
		}
		return res.Message
	}
	direct := func(title, category string) inbox.Message {
		t.Helper()
		res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: title, Category: category})
		if err != nil {
			t.Fatal(err)
		}
		return res.Message
	}
	seen := ""
	check := func(what string, muted bool) inbox.Counts {
		t.Helper()
		c := wantCountsAsListed(t, ib, ann, seen, what)
		page, err := ib.List(ctx, ann, inbox.ListOptions{Limit: inbox.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			if want := muted && m.Thread == "ann-bob" && m.Audience.Kind == inbox.AudienceUsers; m.Muted != want {
				t.Errorf("%s: List shows %q (thread %q, %s) muted %v, want %v", what, m.Title, m.Thread, m.Audience.Kind, m.Muted, want)
			}
		}
		threads, err := ib.ListThreads(ctx, ann, inbox.ThreadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range threads.Threads {
			dm := th.Thread == "ann-bob" && th.Group == ""
			if th.Muted != (muted && dm) || th.Latest.Muted != th.Muted {
				t.Errorf("%s: ListThreads shows %s (group %q) muted %v (latest %v), want %v", what, th.Thread, th.Group, th.Muted, th.Latest.Muted, muted && dm)
			}
			if !dm {
				continue
			}
			all, err := ib.List(ctx, ann, inbox.ListOptions{Thread: "ann-bob", Limit: inbox.MaxPageSize})
			if err != nil {
				t.Fatal(err)
			}
			var unread int64
			for _, m := range all.Messages {
				if !m.IsRead() && m.Audience.Kind == inbox.AudienceUsers {
					unread++
				}
			}
			want := inbox.Tally{Unread: unread}
			if muted {
				want = inbox.Tally{Muted: unread}
			}
			if got := (inbox.Tally{Unread: th.Unread, Muted: th.Tally.Muted}); got != want {
				t.Errorf("%s: ListThreads counts the chat with bob %+v, want %+v", what, got, want)
			}
		}
		return c
	}

	chat(inbox.Draft{Title: "hi ann"})
	chat(inbox.Draft{Title: "lunch?", Category: "food"})
	hello := chat(inbox.Draft{Title: "hello"})
	snoozed := direct("invoice", "billing")
	direct("story", "news")
	if _, err := ib.BroadcastGroup(ctx, scope, "team", inbox.Draft{Sender: "carol", Thread: "ann-bob", Title: "same key, the team's"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ib.Publish(ctx, scope, []string{"ann", "cy"}, inbox.Draft{Sender: "cy", Thread: "ann-cy", Title: "hey"}); err != nil {
		t.Fatal(err)
	}
	before := check("nothing muted", false)

	if changed, err := ib.SetPreferences(ctx, ann, inbox.Preferences{MutedThreads: []string{"ann-bob"}}); !changed || err != nil {
		t.Fatalf("SetPreferences(mute ann-bob) = %v, %v", changed, err)
	}
	c := check("the chat with bob muted", true)
	if want := (inbox.Tally{Total: before.Total, Unread: before.Unread - 3, Muted: 3, Unseen: before.Unseen - 3}); c.Tally != want {
		t.Errorf("Counts with the chat muted = %+v, want %+v: its 3 unread in Muted", c.Tally, want)
	}
	if p, err := ib.Preferences(ctx, ann); err != nil || !slices.Equal(p.MutedThreads, []string{"ann-bob"}) || !p.Own {
		t.Errorf("Preferences(ann) = %+v, %v; want ann-bob muted, her own", p, err)
	}

	clock.Advance(time.Second)
	chat(inbox.Draft{Title: "still there?"})
	chat(inbox.Draft{Title: "gone soon", TTL: time.Hour})
	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "later", Category: "news", DeliverAt: clock.Now().Add(3 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	check("bob wrote more", true)
	if _, err := ib.MarkRead(ctx, ann, hello.ID); err != nil {
		t.Fatal(err)
	}
	check("she read one", true)
	if _, err := ib.Archive(ctx, ann, hello.ID); err != nil {
		t.Fatal(err)
	}
	check("she archived it", true)
	if _, err := ib.Snooze(ctx, ann, snoozed.ID, clock.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	check("she snoozed the invoice", true)
	if _, err := ib.MarkSeen(ctx, ann); err != nil {
		t.Fatal(err)
	}
	seen = inbox.SeenAt(clock.Now())
	c = check("she marked her feed seen", true)
	if c.Unseen != 0 {
		t.Errorf("Unseen after MarkSeen = %d, want 0", c.Unseen)
	}
	clock.Advance(time.Second)
	chat(inbox.Draft{Title: "after seen"})
	direct("after seen too", "news")
	c = check("more after the watermark", true)
	if c.Unseen != 1 {
		t.Errorf("Unseen after two new messages, one in the muted chat = %d, want 1", c.Unseen)
	}
	clock.Advance(4 * time.Hour)
	c = check("one expired, the scheduled one due, the snooze over", true)
	if c.Snoozed != 0 {
		t.Errorf("Snoozed after the snooze's end = %d, want 0", c.Snoozed)
	}

	if changed, err := ib.SetPreferences(ctx, ann, inbox.Preferences{}); !changed || err != nil {
		t.Fatalf("SetPreferences(unmute) = %v, %v", changed, err)
	}
	c = check("unmuted", false)
	if c.Muted != 0 {
		t.Errorf("Muted after unmuting = %d, want 0", c.Muted)
	}
	if changed, err := ib.SetPreferences(ctx, ann, inbox.Preferences{MutedThreads: []string{"ann-bob"}}); !changed || err != nil {
		t.Fatalf("SetPreferences(mute ann-bob again) = %v, %v", changed, err)
	}
	check("muted again", true)
}

// TestMuteThreadCost: muting a thread anew reads u's preferences, her
// stats, the thread's counters and the thread's records (a page of
// records at a time), then writes once; unmuting it, or muting a group,
// reads the preferences and writes once, whatever the thread holds.
func TestMuteThreadCost(t *testing.T) {
	ctx := context.Background()
	st := &callCounter{Store: memstore.New()}
	ib := inbox.New(st)
	ann := scope.User("ann")
	for i := range 30 {
		if _, err := ib.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{Sender: "bob", Thread: "ann-bob", Title: fmt.Sprint("m", i)}); err != nil {
			t.Fatal(err)
		}
	}
	st.take()
	for _, c := range []struct {
		what string
		p    inbox.Preferences
		want map[string]int
	}{
		{"mute the chat", inbox.Preferences{MutedThreads: []string{"ann-bob"}}, map[string]int{"Stats": 3, "Query": 1, "Mark": 1}},
		{"mute a group too", inbox.Preferences{MutedGroups: []string{"devs"}, MutedThreads: []string{"ann-bob"}}, map[string]int{"Stats": 1, "Mark": 1}},
		{"unmute the chat", inbox.Preferences{MutedGroups: []string{"devs"}}, map[string]int{"Stats": 1, "Mark": 1}},
	} {
		if changed, err := ib.SetPreferences(ctx, ann, c.p); !changed || err != nil {
			t.Fatalf("SetPreferences(%s) = %v, %v", c.what, changed, err)
		}
		if diff := cmp.Diff(c.want, st.take()); diff != "" {
			t.Errorf("%s: store calls (-want +got):\n%s", c.what, diff)
		}
	}
}

// TestMuteThreadEvent: a thread mute makes an EventPreferences with the
// muted threads, from the memstore's changes as from a table's stream.
func TestMuteThreadEvent(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.WithChanges())
	var l eventLog
	ib := inbox.New(mem, inbox.WithEvents(l.handle))
	ann := scope.User("ann")
	if _, err := ib.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{Sender: "bob", Thread: "ann-bob", Title: "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.DeliverChanges(ctx, ib.HandleChange); err != nil {
		t.Fatal(err)
	}
	l.take()
	for _, p := range []inbox.Preferences{{MutedGroups: []string{"devs"}, MutedThreads: []string{"ann-bob", "ann-cy"}}, {}} {
		if _, err := ib.SetPreferences(ctx, ann, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mem.DeliverChanges(ctx, ib.HandleChange); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range l.take() {
		if e.Kind != inbox.EventPreferences || e.Partition != ann.Partition() {
			t.Errorf("event %+v, want a preferences event of ann", e)
			continue
		}
		got = append(got, fmt.Sprintf("%v %v %v", e.Preferences.MutedGroups, e.Preferences.MutedThreads, e.Preferences.Own))
	}
	if want := []string{"[devs] [ann-bob ann-cy] true", "[] [] true"}; strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("preferences events %q, want %q", got, want)
	}
}

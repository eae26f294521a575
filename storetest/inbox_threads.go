package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// threadTests are the Inbox subtests about threads.
func threadTests() []suiteTest {
	return []suiteTest{
		{"Threads", testThreads},
		{"ThreadsBadInput", testThreadsBadInput},
		{"MarkAllReadThreadStops", testMarkAllReadThreadStops},
		{"ListThreadsDeepCached", testListThreadsDeepCached},
		{"ListThreadsCachedThreadMovesUp", testListThreadsCachedThreadMovesUp},
		{"MarkAllReadThreadStaleSnapshots", testMarkAllReadThreadStaleSnapshots},
		{"ListThreadsStaleSnapshots", testListThreadsStaleSnapshots},
		{"MarkAllReadThreadUpToCost", testMarkAllReadThreadUpToCost},
		{"MarkAllReadThreadCategoryBatch", testMarkAllReadThreadCategoryBatch},
		{"MarkAllReadThreadChurn", testMarkAllReadThreadChurn},
		{"MarkAllReadThreadSteadyWrites", testMarkAllReadThreadSteadyWrites},
		{"ListThreads", testListThreads},
		{"ListThreadsBadInput", testListThreadsBadInput},
	}
}

// testThreads: List with a thread shows that thread's messages alone,
// newest first: the user's direct messages and the thread's messages to
// everyone and to the user's groups, each with the user's marks, in pages
// of any size; MarkAllRead with the thread marks exactly them; the feed
// without a thread still shows every message.
func testThreads(e *env) {
	ann, bob := e.member("ann", "admins"), e.member("bob")
	var chat, other, none, all []driver.Message
	add := func(m driver.Message, into *[]driver.Message) {
		*into = append([]driver.Message{m}, *into...)
		all = append([]driver.Message{m}, all...)
	}
	for i := range 3 {
		add(copyFor(e.publish(inbox.Draft{Title: "dm", Thread: "chat", Category: "chat"}, "ann", "bob").Message, "ann"), &chat)
		add(e.broadcastTo("admins", inbox.Draft{Title: "group", Thread: "chat"}), &chat)
		add(copyFor(e.publish(inbox.Draft{Title: "elsewhere", Thread: "other"}, "ann").Message, "ann"), &other)
		add(copyFor(e.publish(inbox.Draft{Title: "no thread"}, "ann").Message, "ann"), &none)
		if i == 1 {
			add(e.broadcast(inbox.Draft{Title: "everyone", Thread: "chat"}), &chat)
			e.broadcastTo("eu", inbox.Draft{Title: "not ann's group", Thread: "chat"})
		}
		e.clock.Advance(time.Minute)
	}
	e.markRead(ann, chat[1].ID, true) // a group message: a receipt of the thread
	e.markRead(ann, chat[2].ID, true)
	chat[1].ReadAt, chat[2].ReadAt = e.clock.Now(), e.clock.Now()
	for i := range all {
		if all[i].ID == chat[1].ID || all[i].ID == chat[2].ID {
			all[i].ReadAt = e.clock.Now()
		}
	}
	for _, limit := range []int{1, 2, 0} {
		e.wantFeed(ann, inbox.ListOptions{Limit: limit, Thread: "chat"}, chat...)
		e.wantFeed(ann, inbox.ListOptions{Limit: limit, Thread: "chat", UnreadOnly: true}, visibleIn(chat, inbox.ListOptions{UnreadOnly: true})...)
	}
	e.wantFeed(ann, inbox.ListOptions{Thread: "chat", Category: "chat"}, visibleIn(chat, inbox.ListOptions{Category: "chat"})...)
	e.wantFeed(ann, inbox.ListOptions{Thread: "none"})
	e.wantFeed(ann, inbox.ListOptions{}, all...)

	n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "chat"})
	if want := len(visibleIn(chat, inbox.ListOptions{UnreadOnly: true})); err != nil || n != want {
		e.t.Fatalf("MarkAllRead(thread chat) = %d, %v; want %d, nil", n, err, want)
	}
	e.wantFeed(ann, inbox.ListOptions{Thread: "chat", UnreadOnly: true})
	e.wantFeed(ann, inbox.ListOptions{Thread: "other", UnreadOnly: true}, visibleIn(other, inbox.ListOptions{UnreadOnly: true})...)
	e.wantCountsFromFeed(ann)
	// bob's copies and his view of the broadcast are his own.
	page, err := e.ib.List(e.ctx, bob, inbox.ListOptions{Thread: "chat", UnreadOnly: true})
	if err != nil || len(page.Messages) != 4 {
		e.t.Errorf("bob's unread chat: %d messages, %v; want his 3 direct ones and the broadcast", len(page.Messages), err)
	}
	for _, m := range chat {
		if m.Thread != "chat" {
			e.t.Errorf("message %s: thread %q, want chat", m.ID, m.Thread)
		}
	}
}

// testThreadsBadInput: a thread that is not a key is ErrInvalidKey in a
// Draft (nothing is written) and in ListOptions; a retry by host system ID
// with another thread is ErrConflict.
func testThreadsBadInput(e *env) {
	ann := e.user("ann")
	for _, bad := range []string{"a#b", "*", "new\nline", string(make([]byte, driver.MaxKeyLen+1))} {
		if _, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Title: "x", Thread: bad}); !errors.Is(err, inbox.ErrInvalidKey) {
			e.t.Errorf("Publish with thread %q: %v, want ErrInvalidKey", bad, err)
		}
		if _, err := e.ib.Broadcast(e.ctx, e.scope, inbox.Draft{Title: "x", Thread: bad}); !errors.Is(err, inbox.ErrInvalidKey) {
			e.t.Errorf("Broadcast with thread %q: %v, want ErrInvalidKey", bad, err)
		}
		if _, err := e.ib.List(e.ctx, ann, inbox.ListOptions{Thread: bad}); !errors.Is(err, inbox.ErrInvalidKey) {
			e.t.Errorf("List of thread %q: %v, want ErrInvalidKey", bad, err)
		}
	}
	e.wantFeed(ann, inbox.ListOptions{})
	d := inbox.Draft{HostSystemID: "thread-retry", Title: "x", Thread: "a"}
	e.publish(d, "ann")
	d.Thread = "b"
	if _, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, d); !errors.Is(err, inbox.ErrConflict) {
		e.t.Errorf("retry by host system ID in another thread: %v, want ErrConflict", err)
	}
	d.Thread = "a"
	if res := e.publish(d, "ann"); len(res.Duplicates) != 1 {
		e.t.Errorf("retry in the same thread: %+v, want a duplicate", res)
	}
}

// threadGroup returns the audience of listed message m as Thread.Group
// names it.
func threadGroup(m driver.Message) string {
	switch m.Audience.Kind {
	case driver.AudienceGroup:
		return m.Audience.Group
	case driver.AudienceEveryone:
		return driver.PublicGroup
	}
	return ""
}

// threadsDiff compares got, a user's whole ListThreads, with what the
// user's whole List (feed) and archived List (archived), newest first,
// show: one thread per audience and thread key with a message in feed,
// counted as Counts counts (Archived from archived), its Latest the newest
// of them with its read state, ordered by Activity, latest first, each
// Activity at least its Latest's ID and, with activity non-nil, equal to
// it where it knows it (not ""), muted with its group or, of the user's
// direct messages, itself as prefs say. It returns "" if they agree.
func threadsDiff(got []inbox.Thread, feed, archived []driver.Message, activity func(group, thread string) (string, bool), prefs inbox.Preferences) string {
	type key struct{ group, thread string }
	want := map[key]*inbox.Thread{}
	var order []key
	for _, m := range feed {
		if m.Thread == "" {
			continue
		}
		k := key{threadGroup(m), m.Thread}
		t := want[k]
		if t == nil {
			// A thread is muted with its group, or itself; a muted
			// category marks its messages, not the thread's counts.
			muted := k.group != "" && slices.Contains(prefs.MutedGroups, k.group) || k.group == "" && slices.Contains(prefs.MutedThreads, k.thread)
			t = &inbox.Thread{Thread: k.thread, Group: k.group, Latest: m, Muted: muted}
			want[k] = t
			order = append(order, k)
		}
		t.Total++
		switch {
		case m.IsRead():
			t.Read++
		case t.Muted:
			t.Tally.Muted++
		default:
			t.Unread++
		}
	}
	for _, m := range archived {
		if t := want[key{threadGroup(m), m.Thread}]; t != nil && m.Thread != "" {
			t.Archived++
		}
	}
	var out []string
	seen := map[key]bool{}
	for i, t := range got {
		k := key{t.Group, t.Thread}
		w := want[k]
		switch {
		case seen[k]:
			out = append(out, fmt.Sprintf("thread %q of %q listed twice", t.Thread, t.Group))
			continue
		case w == nil:
			out = append(out, fmt.Sprintf("thread %q of %q listed (%+v), but List shows none of its messages", t.Thread, t.Group, t.Tally))
			continue
		}
		seen[k] = true
		if t.Tally != w.Tally {
			out = append(out, fmt.Sprintf("thread %q of %q: counts %+v, List shows %+v", t.Thread, t.Group, t.Tally, w.Tally))
		}
		if t.Muted != w.Muted || t.Latest.Muted != w.Latest.Muted {
			out = append(out, fmt.Sprintf("thread %q of %q: muted %v (latest %v), List shows %v (latest %v)", t.Thread, t.Group, t.Muted, t.Latest.Muted, w.Muted, w.Latest.Muted))
		}
		if t.Latest.ID != w.Latest.ID || t.Latest.IsRead() != w.Latest.IsRead() || t.Latest.Thread != t.Thread {
			out = append(out, fmt.Sprintf("thread %q of %q: latest %s (read %v), List shows %s (read %v)", t.Thread, t.Group, t.Latest.ID, t.Latest.IsRead(), w.Latest.ID, w.Latest.IsRead()))
		}
		known, sure := "", true
		if activity != nil {
			known, sure = activity(t.Group, t.Thread)
		}
		if t.Activity < w.Latest.ID || known != "" && (sure && t.Activity != known || t.Activity > known) {
			out = append(out, fmt.Sprintf("thread %q of %q: activity %s, below its latest message %s or not its latest publish", t.Thread, t.Group, t.Activity, w.Latest.ID))
		}
		if i > 0 && t.Activity >= got[i-1].Activity {
			out = append(out, fmt.Sprintf("thread %q of %q: activity %s after %s", t.Thread, t.Group, t.Activity, got[i-1].Activity))
		}
	}
	for _, k := range order {
		if !seen[k] {
			out = append(out, fmt.Sprintf("thread %q of %q not listed, List shows %d of its messages", k.thread, k.group, want[k].Total))
		}
	}
	return strings.Join(out, "\n")
}

// listThreads returns every thread ListThreads gives u through ib, paging
// with limit; it checks that no page is larger than limit.
func listThreads(t testingT, ctx context.Context, ib *inbox.Inbox, u driver.User, limit int) []inbox.Thread {
	t.Helper()
	var out []inbox.Thread
	o := inbox.ThreadOptions{Limit: limit}
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("ListThreads(%s): more than 1000 pages", u.ID)
		}
		p, err := ib.ListThreads(ctx, u, o)
		if err != nil {
			t.Fatalf("ListThreads(%s, %+v): %v", u.ID, o, err)
		}
		if len(p.Threads) > max(limit, 1) && limit != 0 {
			t.Errorf("ListThreads(%s): %d threads on a page of %d", u.ID, len(p.Threads), limit)
		}
		out = append(out, p.Threads...)
		if p.Cursor == "" {
			return out
		}
		o.Cursor = p.Cursor
	}
}

// wantThreadsFromFeed checks u's threads, paged at 1 and whole, against
// u's full List (see threadsDiff), with e's record of each thread's
// latest publish.
func (e *env) wantThreadsFromFeed(u driver.User) {
	e.t.Helper()
	feed := e.listAll(u, inbox.ListOptions{Limit: inbox.MaxPageSize})
	archived := e.listAll(u, inbox.ListOptions{Limit: inbox.MaxPageSize, Archived: true})
	prefs, err := e.ib.Preferences(e.ctx, u)
	if err != nil {
		e.t.Fatalf("Preferences(%s): %v", u.ID, err)
	}
	if len(prefs.OptedOut) > 0 {
		names := map[string]bool{}
		for k := range e.activity {
			names[k.thread] = true
		}
		feed, archived = threadsWhole(func(o inbox.ListOptions) []driver.Message {
			o.Limit = inbox.MaxPageSize
			return e.listAll(u, o)
		}, listThreads(e.t, e.ctx, e.ib, u, inbox.MaxPageSize), names, feed, archived)
	}
	for _, limit := range []int{1, inbox.MaxPageSize} {
		got := listThreads(e.t, e.ctx, e.ib, u, limit)
		activity := func(g, t string) (string, bool) {
			if g == "" {
				return e.activity[threadOf{p: partitionOf(u), thread: t}], true
			}
			return e.activity[threadOf{group: g, thread: t}], true
		}
		if diff := threadsDiff(got, feed, archived, activity, prefs); diff != "" {
			e.t.Errorf("ListThreads(%s) by pages of %d differ from its List:\n%s", u.ID, limit, diff)
		}
	}
}

// threadsWhole returns a user's feed and archived view as her threads
// show them, for threadsDiff, when she opted out of categories (the feed
// leaves them out; a thread's view, as ListThreads, shows a thread
// whole): the views of each thread that names holds, threads lists or
// feed and archived show, listed with list, newest first.
func threadsWhole(list func(inbox.ListOptions) []driver.Message, threads []inbox.Thread, names map[string]bool, feed, archived []driver.Message) (wholeFeed, wholeArchived []driver.Message) {
	names = maps.Clone(names)
	if names == nil {
		names = map[string]bool{}
	}
	for _, m := range append(slices.Clone(feed), archived...) {
		names[m.Thread] = true
	}
	for _, t := range threads {
		names[t.Thread] = true
	}
	delete(names, "")
	for _, t := range slices.Sorted(maps.Keys(names)) {
		wholeFeed = append(wholeFeed, list(inbox.ListOptions{Thread: t})...)
		wholeArchived = append(wholeArchived, list(inbox.ListOptions{Thread: t, Archived: true})...)
	}
	newest := func(a, b driver.Message) int { return strings.Compare(b.ID, a.ID) }
	slices.SortFunc(wholeFeed, newest)
	slices.SortFunc(wholeArchived, newest)
	return wholeFeed, wholeArchived
}

// testingT is what the suite's helpers need of a *testing.T.
type testingT interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// testListThreads: a chat's flows. ann and bob chat one to one (direct
// messages to both, one thread), ann's team chats in the group's thread
// (each message stored once), and everyone gets a thread of news. After
// each change ann's and bob's threads agree with their List, in order of
// last activity, with exact counts: sending moves a thread to the top,
// marking a thread read resets its count, an ephemeral message leaves the
// counts the instant it expires, a redaction takes the message out but
// not the activity, archiving a thread's every message or leaving its
// group takes the thread off the list.
func testListThreads(e *env) {
	ann, bob := e.member("ann", "team"), e.user("bob")
	check := func(step string, users ...driver.User) {
		e.t.Helper()
		for _, u := range users {
			e.wantCountsFromFeed(u)
		}
		if e.t.Failed() {
			e.t.Fatalf("after %s", step)
		}
	}
	dm := func(title string) driver.Message {
		return copyFor(e.publish(inbox.Draft{Title: title, Thread: "ann-bob"}, "ann", "bob").Message, "ann")
	}
	dm("hi bob")
	e.clock.Advance(time.Second)
	team := e.broadcastTo("team", inbox.Draft{Title: "standup?", Thread: "team"})
	e.clock.Advance(time.Second)
	e.broadcast(inbox.Draft{Title: "release 1.0", Thread: "news"})
	e.clock.Advance(time.Second)
	e.publish(inbox.Draft{Title: "no thread"}, "ann")
	check("the first messages", ann, bob)
	threads := listThreads(e.t, e.ctx, e.ib, ann, 0)
	if got := threadNames(threads); !slices.Equal(got, []string{"news", "team", "ann-bob"}) {
		e.t.Errorf("ann's threads by activity: %v", got)
	}

	// A reply moves the chat to the top, with its preview.
	reply := dm("hi ann")
	e.clock.Advance(time.Second)
	threads = listThreads(e.t, e.ctx, e.ib, ann, 0)
	if got := threadNames(threads); !slices.Equal(got, []string{"ann-bob", "news", "team"}) || threads[0].Latest.Title != reply.Title || threads[0].Unread != 2 {
		e.t.Errorf("after a reply: %v, first %+v", got, threads[0])
	}
	check("a reply", ann, bob)

	// Marking the chat read resets its count, and only its.
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "ann-bob"}); err != nil || n != 2 {
		e.t.Errorf("MarkAllRead(ann-bob) = %d, %v; want 2", n, err)
	}
	e.markRead(ann, team.ID, true)
	check("marking read", ann, bob)

	// An ephemeral message counts until the instant it expires.
	e.broadcastTo("team", inbox.Draft{Title: "gone soon", Thread: "team", TTL: time.Minute})
	check("an ephemeral message", ann)
	e.clock.Advance(time.Minute)
	check("its expiry", ann)

	// A redaction takes a message out of its thread; the thread keeps its
	// place.
	last := e.broadcastTo("team", inbox.Draft{Title: "oops", Thread: "team"})
	if n, err := e.ib.Redact(e.ctx, e.scope, inbox.Redaction{ID: last.ID, Group: "team"}); err != nil || n != 1 {
		e.t.Fatalf("Redact = %d, %v", n, err)
	}
	check("a redaction", ann)

	// Archiving every message of the news thread takes it off the list;
	// deleting the chat's for bob takes it off his.
	for _, m := range e.listAll(ann, inbox.ListOptions{Thread: "news"}) {
		if _, err := e.ib.Archive(e.ctx, ann, m.ID); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, m := range e.listAll(bob, inbox.ListOptions{Thread: "ann-bob"}) {
		if _, err := e.ib.Delete(e.ctx, bob, m.ID); err != nil {
			e.t.Fatal(err)
		}
	}
	check("archive and delete", ann, bob)
	if got := threadNames(listThreads(e.t, e.ctx, e.ib, ann, 0)); slices.Contains(got, "news") {
		e.t.Errorf("ann's threads after archiving the news: %v", got)
	}
	if got := threadNames(listThreads(e.t, e.ctx, e.ib, bob, 0)); slices.Contains(got, "ann-bob") {
		e.t.Errorf("bob's threads after deleting the chat: %v", got)
	}

	// Leaving the team takes its thread off ann's list, joining brings it
	// back with ann's marks.
	left := e.user("ann")
	check("leaving the team", left)
	if got := threadNames(listThreads(e.t, e.ctx, e.ib, left, 0)); slices.Contains(got, "team") {
		e.t.Errorf("ann's threads after leaving the team: %v", got)
	}
	check("joining again", ann)

	// Counts and the thread list survive a Recount, and the removals the
	// stream delivers late.
	if h, ok := e.harness(); ok {
		e.deliver(h)
	}
	if _, err := e.ib.Recount(e.ctx, ann); err != nil {
		e.t.Fatal(err)
	}
	check("a recount", ann, bob)
	e.checkInvariant()
}

// threadNames returns the keys of threads, in order.
func threadNames(threads []inbox.Thread) []string {
	var out []string
	for _, t := range threads {
		out = append(out, t.Thread)
	}
	return out
}

// testListThreadsBadInput: a bad user or limit is refused, and a cursor
// that is not one of this user's ListThreads cursors is ErrInvalidCursor.
func testListThreadsBadInput(e *env) {
	ann, bob := e.user("ann"), e.user("bob")
	for i := range 3 {
		e.publish(inbox.Draft{Title: "x", Thread: fmt.Sprintf("t%d", i)}, "ann", "bob")
	}
	for _, limit := range []int{-1, inbox.MaxPageSize + 1} {
		if _, err := e.ib.ListThreads(e.ctx, ann, inbox.ThreadOptions{Limit: limit}); !errors.Is(err, inbox.ErrInvalidInput) {
			e.t.Errorf("ListThreads with limit %d: %v, want ErrInvalidInput", limit, err)
		}
	}
	if _, err := e.ib.ListThreads(e.ctx, driver.User{Scope: e.scope, ID: "a#b"}, inbox.ThreadOptions{}); !errors.Is(err, inbox.ErrInvalidKey) {
		e.t.Errorf("ListThreads of user a#b: %v, want ErrInvalidKey", err)
	}
	page, err := e.ib.ListThreads(e.ctx, ann, inbox.ThreadOptions{Limit: 1})
	if err != nil || page.Cursor == "" {
		e.t.Fatalf("ListThreads(limit 1) = %+v, %v", page, err)
	}
	list, err := e.ib.List(e.ctx, ann, inbox.ListOptions{Limit: 1})
	if err != nil || list.Cursor == "" {
		e.t.Fatalf("List(limit 1) = %+v, %v", list, err)
	}
	for name, c := range map[string]string{"bob's": page.Cursor, "a List": list.Cursor, "garbage": "x" + page.Cursor[1:], "empty-ish": "AAAA"} {
		u := ann
		if name == "bob's" {
			u = bob
		}
		if _, err := e.ib.ListThreads(e.ctx, u, inbox.ThreadOptions{Cursor: c}); !errors.Is(err, inbox.ErrInvalidCursor) {
			e.t.Errorf("ListThreads with %s cursor: %v, want ErrInvalidCursor", name, err)
		}
	}
	if _, err := e.ib.List(e.ctx, ann, inbox.ListOptions{Cursor: page.Cursor}); !errors.Is(err, inbox.ErrInvalidCursor) {
		e.t.Errorf("List with a ListThreads cursor: %v, want ErrInvalidCursor", err)
	}
}

// testMarkAllReadThreadStops: MarkAllRead of a thread marks its unread
// messages, a group's and the user's own, and stops once the thread's
// counts say none is left, without reading the thread's read history
// below them.
func testMarkAllReadThreadStops(e *env) {
	ann := e.member("ann", "team")
	const history = 200
	for i := range history {
		if i%2 == 0 {
			e.broadcastTo("team", inbox.Draft{Title: "old", Thread: "chat"})
		} else {
			e.publish(inbox.Draft{Title: "old dm", Thread: "chat"}, "ann")
		}
		e.clock.Advance(time.Second)
	}
	if n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n != history {
		e.t.Fatalf("MarkAllRead(chat) of the history = %d, %v; want %d", n, err, history)
	}
	for range 3 {
		e.broadcastTo("team", inbox.Draft{Title: "new", Thread: "chat"})
		e.publish(inbox.Draft{Title: "new dm", Thread: "chat"}, "ann")
		e.clock.Advance(time.Second)
	}
	counted := &countingStore{Store: e.store}
	for _, ib := range []*inbox.Inbox{
		inbox.New(counted, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0)),
		inbox.New(counted, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(time.Minute)),
	} {
		counted.threadRecords.Store(0)
		if n, err := ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "chat"}); err != nil || n != 6 {
			e.t.Fatalf("MarkAllRead(chat) = %d, %v; want the 6 new messages", n, err)
		}
		// One page of the thread index of each partition: the 6 unread,
		// and the read ones on the group's page; not the history below.
		if n := counted.threadRecords.Load(); n > 2*(22+1) {
			e.t.Errorf("MarkAllRead(chat) of 6 unread above %d read queried %d records, want at most a page of each partition", history, n)
		}
		e.wantFeed(ann, inbox.ListOptions{Thread: "chat", UnreadOnly: true})
		e.wantCountsFromFeed(ann)
		for range 3 {
			e.broadcastTo("team", inbox.Draft{Title: "newer", Thread: "chat"})
			e.publish(inbox.Draft{Title: "newer dm", Thread: "chat"}, "ann")
			e.clock.Advance(time.Second)
		}
	}
}

// testListThreadsCachedThreadMovesUp: a group thread below those its
// partition's snapshot holds that another process writes to (it moves to
// the top) is listed where the snapshot has it or at the top, not left
// out: the snapshot still has it below its threads, and the store's
// read below them no longer does.
func testListThreadsCachedThreadMovesUp(e *env) {
	ann := e.member("ann", "team")
	const threads = inbox.DefaultPageSize + 2 // more than a snapshot holds (DefaultPageSize+1)
	for i := range threads {
		e.broadcastTo("team", inbox.Draft{Title: "x", Thread: fmt.Sprintf("t%02d", i)})
		e.clock.Advance(time.Second)
	}
	names := func(ts []inbox.Thread) []string {
		var out []string
		for _, t := range ts {
			out = append(out, fmt.Sprintf("%s:%d", t.Thread, t.Total))
		}
		return out
	}
	cached := inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(time.Hour))
	before := names(listThreads(e.t, e.ctx, cached, ann, inbox.MaxPageSize))
	if len(before) != threads {
		e.t.Fatalf("ListThreads(ann) = %v; want %d threads", before, threads)
	}
	e.broadcastTo("team", inbox.Draft{Title: "moves up", Thread: "t00"}) // another process
	e.clock.Advance(time.Second)
	now := names(listThreads(e.t, e.ctx, inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0)), ann, inbox.MaxPageSize))
	got := names(listThreads(e.t, e.ctx, cached, ann, inbox.MaxPageSize))
	if !slices.Equal(got, before) && !slices.Equal(got, now) {
		e.t.Errorf("ListThreads(ann) with the cache after t00 moved up = %v\nwant as the snapshot has them: %v\nor as they are now: %v", got, before, now)
	}
}

// testListThreadsDeepCached: with the shared cache on, a page of
// ListThreads below the threads a snapshot holds counts each thread as
// the partition stands, when one of its messages expired and its removal
// was accounted after the snapshot was read (the snapshot still lists the
// expired entry): the thread keeps its place and its counts.
func testListThreadsDeepCached(e *env) {
	h := e.needHarness()
	bob := e.user("bob")
	e.broadcast(inbox.Draft{Title: "kept", Thread: "t00"})
	e.clock.Advance(time.Second)
	e.broadcast(inbox.Draft{Title: "expires", Thread: "t00", TTL: time.Hour})
	e.clock.Advance(time.Second)
	const threads = 30 // more than a snapshot holds
	for i := 1; i < threads; i++ {
		e.broadcast(inbox.Draft{Title: "x", Thread: fmt.Sprintf("t%02d", i)})
		e.clock.Advance(time.Second)
	}
	e.clock.Advance(time.Hour)
	cached := inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(time.Hour))
	first, err := cached.ListThreads(e.ctx, bob, inbox.ThreadOptions{Limit: 10})
	if err != nil || first.Cursor == "" {
		e.t.Fatalf("ListThreads(bob) = %d threads, cursor %q, %v; want a page and a cursor", len(first.Threads), first.Cursor, err)
	}
	e.deliver(h) // the expired message's removal
	got := first.Threads
	for o := (inbox.ThreadOptions{Limit: 10, Cursor: first.Cursor}); o.Cursor != ""; {
		p, err := cached.ListThreads(e.ctx, bob, o)
		if err != nil {
			e.t.Fatalf("ListThreads(bob, %+v): %v", o, err)
		}
		got, o.Cursor = append(got, p.Threads...), p.Cursor
	}
	want := listThreads(e.t, e.ctx, inbox.New(e.store, inbox.WithClock(e.clock.Now), inbox.WithSharedCache(0)), bob, 0)
	tallies := func(ts []inbox.Thread) []string {
		var out []string
		for _, t := range ts {
			out = append(out, fmt.Sprintf("%s:%d/%d", t.Thread, t.Total, t.Unread))
		}
		return out
	}
	if g, w := tallies(got), tallies(want); !slices.Equal(g, w) || len(w) != threads {
		e.t.Errorf("bob's threads paged with the cache: %v\nwith the cache off: %v (want %d threads)", g, w, threads)
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// sse is an open GET /events stream, read event by event.
type sse struct {
	t      *testing.T
	cancel context.CancelFunc
	events chan sseEvent
}

// sseEvent is one server-sent event.
type sseEvent struct {
	id, name, data string
}

// openEvents opens user's event stream (see api.do for user) and checks
// that it starts with "ready" and live.
func (a *api) openEvents(user string, live bool) *sse {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", a.srv.URL+"/events", nil)
	if err != nil {
		a.t.Fatal(err)
	}
	setUser(req, user)
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatalf("GET /events: %v", err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		a.t.Fatalf("GET /events: status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sse{t: a.t, cancel: cancel, events: make(chan sseEvent, 100)}
	a.t.Cleanup(func() { cancel(); resp.Body.Close() })
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch k, v, _ := strings.Cut(line, ": "); k {
			case "id":
				ev.id = v
			case "event":
				ev.name = v
			case "data":
				ev.data = v
			case "":
				if ev.name != "" {
					s.events <- ev
				}
				ev = sseEvent{}
			}
		}
	}()
	ready := s.next()
	var rb readyBody
	if ready.name != "ready" || json.Unmarshal([]byte(ready.data), &rb) != nil || rb.Live != live {
		a.t.Fatalf("first event %+v, want ready with live %v", ready, live)
	}
	return s
}

// eventWait bounds the wait for an event, which normally comes within a
// second. These tests once saw none for over a minute on a loaded machine:
// DynamoDB Local answered a fresh iterator's GetRecords with a
// TrimmedDataAccessException, on which the reader of then ended for good
// (the trace of its calls showed it). The reader now renews the iterator
// and never ends; the trace is logged if a test here fails.
const eventWait = 60 * time.Second

// next returns the next event, failing the test after eventWait.
func (s *sse) next() sseEvent {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			s.t.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(eventWait):
		s.t.Fatalf("no event in %v", eventWait)
	}
	return sseEvent{}
}

// none checks that no event comes within d.
func (s *sse) none(d time.Duration) {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			s.t.Errorf("unexpected event %+v", ev)
		}
	case <-time.After(d):
	}
}

// body decodes ev's data.
func (ev sseEvent) body(t *testing.T) eventBody {
	t.Helper()
	var b eventBody
	if err := json.Unmarshal([]byte(ev.data), &b); err != nil {
		t.Fatalf("event data %q: %v", ev.data, err)
	}
	if b.ID != ev.id || b.Kind != ev.name {
		t.Errorf("event %q/%q carries id %q kind %q", ev.id, ev.name, b.ID, b.Kind)
	}
	return b
}

// TestHubRoutesEvents: an event reaches the streams of the users it
// concerns: a user's change that user's, a broadcast everyone's, a group
// message its members'; events of another inbox none.
func TestHubRoutesEvents(t *testing.T) {
	hub := NewHub(testScope, true)
	a := newAPIWithHub(t, inbox.New(nil), nil, hub)
	ann, bob := a.openEvents("ann|admins", true), a.openEvents("bob", true)
	ctx := context.Background()
	part := func(user, group string) inbox.Partition {
		return inbox.Partition{Tenant: testScope.Tenant, Inbox: testScope.Inbox, User: user, Group: group}
	}
	send := func(id string, p inbox.Partition) {
		if err := hub.Publish(ctx, inbox.Event{ID: id, Kind: inbox.EventCreated, Partition: p, Message: inbox.Message{ID: id}}); err != nil {
			t.Fatal(err)
		}
	}
	send("to-bob", part("bob", ""))
	send("to-admins", part("", "admins"))
	send("other-inbox", inbox.Partition{Tenant: testScope.Tenant, Inbox: "other", User: "ann"})
	send("to-all", part("", inbox.PublicGroup))
	send("to-ann", part("ann", ""))
	got := func(s *sse, n int) (ids []string) {
		for range n {
			ids = append(ids, s.next().body(t).Message.ID)
		}
		return ids
	}
	if diff := cmp.Diff([]string{"to-admins", "to-all", "to-ann"}, got(ann, 3)); diff != "" {
		t.Errorf("ann's events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"to-bob", "to-all"}, got(bob, 2)); diff != "" {
		t.Errorf("bob's events (-want +got):\n%s", diff)
	}
	ann.none(100 * time.Millisecond)
	bob.none(100 * time.Millisecond)
}

// TestHubForwardsReads: another member's read of a chat's message reaches
// the streams that show its ticks, with only what a tick needs: a
// one-to-one chat's (a direct copy in a thread) its sender's, a group
// chat's (a receipt in a thread) the group's members', everyone's chat's
// every stream. A read outside a thread, or another mark, stays the
// reader's.
func TestHubForwardsReads(t *testing.T) {
	hub := NewHub(testScope, true)
	a := newAPIWithHub(t, inbox.New(nil), nil, hub)
	ann, bob, carol, dave := a.openEvents("ann|team", true), a.openEvents("bob|team", true), a.openEvents("carol", true), a.openEvents("dave|other", true)
	ctx := context.Background()
	at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	bobs := inbox.Partition{Tenant: testScope.Tenant, Inbox: testScope.Inbox, User: "bob"}
	direct := func(sender, thread string) inbox.Message {
		return inbox.Message{ID: "m-" + sender + "-" + thread, Sender: sender, Thread: thread, Title: "secret", Body: "body",
			Audience: inbox.Audience{Kind: inbox.AudienceUsers, UIDs: []string{"bob"}}, ReadAt: at, ArchivedAt: at}
	}
	receipt := func(group, thread string) inbox.Message {
		return inbox.Message{ID: "m-" + group + "-" + thread, Thread: thread, Audience: inbox.Audience{Group: group}, ReadAt: at}
	}
	send := func(id string, kind inbox.EventKind, m inbox.Message) {
		if err := hub.Publish(ctx, inbox.Event{ID: id, Kind: kind, Partition: bobs, Message: m, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	send("dm-read", inbox.EventRead, direct("ann", "ann-bob"))
	send("team-read", inbox.EventRead, receipt("team", "team"))
	send("no-thread", inbox.EventRead, direct("ann", ""))
	send("archived", inbox.EventArchived, direct("ann", "ann-bob"))
	send("all-read", inbox.EventRead, receipt("", "town-hall"))
	send("other-read", inbox.EventRead, receipt("other", "other"))
	send("carols-read", inbox.EventRead, direct("carol", "bob-carol"))
	got := func(s *sse, n int) (ids []string) {
		for range n {
			ids = append(ids, s.next().id)
		}
		return ids
	}
	for _, c := range []struct {
		name string
		s    *sse
		want []string
	}{
		{"ann", ann, []string{"dm-read", "team-read", "all-read"}},
		{"bob", bob, []string{"dm-read", "team-read", "no-thread", "archived", "all-read", "other-read", "carols-read"}},
		{"carol", carol, []string{"all-read", "carols-read"}},
		{"dave", dave, []string{"all-read", "other-read"}},
	} {
		if diff := cmp.Diff(c.want, got(c.s, len(c.want))); diff != "" {
			t.Errorf("%s's events (-want +got):\n%s", c.name, diff)
		}
	}
	for _, s := range []*sse{ann, bob, carol, dave} {
		s.none(100 * time.Millisecond)
	}

	// What ann's stream got of bob's read is the tick's, not bob's other
	// marks or the message's content; bob's own stream has it whole.
	send("again", inbox.EventRead, direct("ann", "ann-bob"))
	want := eventBody{ID: "again", Kind: "read", User: "bob", At: at, Message: messageBody{ID: "m-ann-ann-bob", Sender: "ann", Thread: "ann-bob", Read: true, ReadAt: at}}
	if diff := cmp.Diff(want, ann.next().body(t)); diff != "" {
		t.Errorf("ann's forwarded read (-want +got):\n%s", diff)
	}
	if own := bob.next().body(t); !own.Message.Archived || own.Message.Title != "secret" {
		t.Errorf("bob's own read %+v, want his copy whole", own)
	}
}

// TestHubDropsASlowStream: a stream that falls a buffer behind is closed,
// for the client to reconnect, and publishing never blocks.
func TestHubDropsASlowStream(t *testing.T) {
	hub := NewHub(testScope, true)
	sub := hub.subscribe(testScope.User("ann"))
	p := inbox.Partition{Tenant: testScope.Tenant, Inbox: testScope.Inbox, User: "ann"}
	for range subscriberBuffer + 1 {
		if err := hub.Publish(context.Background(), inbox.Event{Partition: p}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-sub.dropped:
	default:
		t.Fatal("the stream that fell behind is still open")
	}
	if len(hub.subs) != 0 {
		t.Errorf("%d subscribers left", len(hub.subs))
	}
}

// TestEventsWithoutAStream: an API whose store's changes are not fed to
// it (a table whose stream another process reads) says it is not live.
func TestEventsWithoutAStream(t *testing.T) {
	a := newMemAPI(t)
	a.openEvents("ann", false).none(100 * time.Millisecond)
}

// liveAPI serves testScope from DynamoDB Local, with the table's stream
// read in the background into the Inbox's StreamHandler, whose events feed
// the API's Hub: the setup of main with -dynamodb-endpoint.
func liveAPI(t *testing.T) *api {
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	hub := NewHub(testScope, true)
	// The real clock: seen watermarks are times, and DynamoDB Local's TTL
	// runs on it.
	ib := inbox.New(dynamo.New(c, table), inbox.WithEvents(hub.Publish))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	tr := &readerTrace{start: time.Now()}
	r := dynamo.NewStreamReader(ddblocal.StreamsClient(t), arn, dynamo.WithHooks(tr.hooks()))
	go func() { done <- r.Run(ctx, ib.StreamHandler, 100*time.Millisecond) }()
	dueDone := make(chan struct{})
	go func() { pushDue(ctx, ib, testScope, hub.Publish, dueTick); close(dueDone) }()
	t.Cleanup(func() {
		cancel()
		<-dueDone
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("stream reader: %v", err)
		}
		if t.Failed() {
			t.Logf("the stream reader's trace:\n%s", tr)
		} else if errs := tr.errors(); len(errs) > 0 {
			t.Logf("the stream reader recovered from %d errors: %s", len(errs), strings.Join(errs, "; "))
		}
	})
	return newAPIWithHub(t, ib, nil, hub)
}

// memLiveAPI serves testScope from the in-memory store as main does
// without an endpoint or a table: its changes fed to the Inbox's events.
func memLiveAPI(t *testing.T) *api {
	b, err := openStore(context.Background(), "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	ib, hub := b.wire(testScope)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.stream(ctx, ib) }()
	dueDone := make(chan struct{})
	go func() { pushDue(ctx, ib, testScope, hub.Publish, dueTick); close(dueDone) }()
	t.Cleanup(func() {
		cancel()
		<-dueDone
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("in-memory changes: %v", err)
		}
	})
	return newAPIWithHub(t, ib, nil, hub)
}

// dueTick is how often the live setups' due worker runs.
const dueTick = 100 * time.Millisecond

// liveBackends are the live setups of main: the in-memory store, and
// DynamoDB Local with its stream read in the process.
var liveBackends = []struct {
	name string
	api  func(*testing.T) *api
}{{"memory", memLiveAPI}, {"dynamodb", liveAPI}}

// TestLiveEvents: changes made through the API reach the event streams of
// the users they concern, from the in-memory store's changes and from
// DynamoDB Local's stream.
func TestLiveEvents(t *testing.T) {
	for _, b := range liveBackends {
		t.Run(b.name, func(t *testing.T) { testLiveEvents(t, b.api(t)) })
	}
}

func testLiveEvents(t *testing.T, a *api) {
	ann, bob := a.openEvents("ann|admins", true), a.openEvents("bob", true)
	d := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "direct", "category": "billing"})
	ev := ann.next().body(t)
	if ev.Kind != "created" || ev.User != "ann" || ev.Message.ID != d.Message.ID || ev.Message.Title != "direct" || ev.Message.Category != "billing" {
		t.Errorf("ann's event %+v, want created of the direct message", ev)
	}
	g := a.broadcast("ops", map[string]any{"group": "admins", "title": "deploy"})
	if ev := ann.next().body(t); ev.Kind != "created" || ev.Group != "admins" || ev.Message.ID != g.Message.ID {
		t.Errorf("ann's event %+v, want created of the group message", ev)
	}
	a.call("POST", "/messages/"+g.Message.ID+"/read", "ann|admins", nil, http.StatusOK, nil)
	if ev := ann.next().body(t); ev.Kind != "read" || ev.User != "ann" || ev.Message.ID != g.Message.ID || !ev.Message.Read {
		t.Errorf("ann's event %+v, want read of the group message", ev)
	}
	all := a.broadcast("ops", map[string]any{"title": "to everyone"})
	for name, s := range map[string]*sse{"ann": ann, "bob": bob} {
		if ev := s.next().body(t); ev.Kind != "created" || ev.Group != inbox.PublicGroup || ev.Message.ID != all.Message.ID {
			t.Errorf("%s's event %+v, want created of the broadcast", name, ev)
		}
	}
	a.call("PUT", "/preferences", "ann", map[string]any{"muted_groups": []string{"admins"}}, http.StatusOK, nil)
	want := &preferencesBody{MutedGroups: []string{"admins"}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}, Own: true}
	if ev := ann.next().body(t); ev.Kind != "preferences" || ev.User != "ann" || !cmp.Equal(ev.Preferences, want) {
		t.Errorf("ann's event %+v, want her preferences %+v", ev, want)
	}
	bob.none(500 * time.Millisecond) // none of ann's changes
}

// TestLiveChatRead: ann marks a one-to-one chat read in one write (a
// read position): her stream gets a thread-read of the chat up to above
// its newest message, and bob's, the sender's, then gets a read of each of
// his messages (the stream function writes the position out on them),
// for his second ticks; from the in-memory store and DynamoDB Local.
func TestLiveChatRead(t *testing.T) {
	for _, b := range liveBackends {
		t.Run(b.name, func(t *testing.T) { testLiveChatRead(t, b.api(t)) })
	}
}

func testLiveChatRead(t *testing.T, a *api) {
	ann, bob := a.openEvents("ann", true), a.openEvents("bob", true)
	var ids []string
	for i := range 3 {
		p := a.publish("bob", map[string]any{"users": []string{"ann", "bob"}, "title": fmt.Sprint("hi ", i), "thread": "ann-bob"})
		ids = append(ids, p.Message.ID)
	}
	for name, s := range map[string]*sse{"ann": ann, "bob": bob} {
		for range ids {
			if ev := s.next().body(t); ev.Kind != "created" || ev.Message.Thread != "ann-bob" {
				t.Fatalf("%s's event %+v, want created in ann-bob", name, ev)
			}
		}
	}
	var all struct{ Marked int }
	a.call("POST", "/messages/read-all?thread=ann-bob", "ann", nil, http.StatusOK, &all)
	if all.Marked != 3 {
		t.Errorf("read-all marked %d, want 3", all.Marked)
	}
	if ev := ann.next().body(t); ev.Kind != "thread-read" || ev.User != "ann" || ev.Thread != "ann-bob" || ev.ReadUpTo <= ids[2] {
		t.Errorf("ann's event %+v, want thread-read of ann-bob up to above %s", ev, ids[2])
	}
	got := map[string]bool{}
	for range ids {
		ev := bob.next().body(t)
		if ev.Kind != "read" || ev.User != "ann" || ev.Message.Sender != "bob" || !ev.Message.Read {
			t.Errorf("bob's event %+v, want ann's read of his message", ev)
		}
		got[ev.Message.ID] = true
	}
	for _, id := range ids {
		if !got[id] {
			t.Errorf("bob's stream got no read of %s (got %v)", id, got)
		}
	}
}

// readerTrace keeps what a stream reader did (its last 200 calls, batches
// and errors), to show when a test waiting on events fails. It is safe for
// concurrent use.
type readerTrace struct {
	start time.Time
	mu    sync.Mutex
	lines []string
}

func (tr *readerTrace) add(format string, args ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.lines = append(tr.lines, fmt.Sprintf("%8.3fs ", time.Since(tr.start).Seconds())+fmt.Sprintf(format, args...))
	if len(tr.lines) > 200 {
		tr.lines = tr.lines[1:]
	}
}

func (tr *readerTrace) hooks() dynamo.ReaderHooks {
	return dynamo.ReaderHooks{
		OnCall: func(_ context.Context, c dynamo.Call) {
			tr.add("%s %s: %d records in %v, err %v", c.Op, c.ShardID, c.Records, c.Took.Round(time.Millisecond), c.Err)
		},
		OnBatch: func(_ context.Context, b dynamo.Batch) {
			tr.add("batch of %d, %d accepted, age %v, handler %v, err %v", b.Records, b.Accepted, b.Age, b.Took.Round(time.Millisecond), b.Err)
		},
		OnError: func(_ context.Context, err error) { tr.add("error: %v", err) },
		OnFailure: func(_ context.Context, f dynamo.Failure) {
			tr.add("passed %s after %d tries: %v", f.Record.Change.SequenceNumber, f.Attempts, f.Err)
		},
	}
}

// errors returns the errors of the trace.
func (tr *readerTrace) errors() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for _, l := range tr.lines {
		if strings.Contains(l, " error: ") {
			out = append(out, l)
		}
	}
	return out
}

func (tr *readerTrace) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return strings.Join(tr.lines, "\n")
}

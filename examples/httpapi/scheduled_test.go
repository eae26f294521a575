package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// TestScheduled: POST /messages with deliver_at schedules a message, and
// POST /broadcasts with deliver_at a broadcast or group message; GET
// /scheduled lists each copy with its user and each broadcast or group
// message once with its group, a page at a time, until they are due;
// bad times, limits and cursors are 400s.
func TestScheduled(t *testing.T) {
	a := newMemAPI(t)
	at := a.start.Add(time.Hour)
	m := a.publish("ops", map[string]any{"users": []string{"bob", "ann"}, "title": "Standup", "deliver_at": at}).Message
	if !m.DeliverAt.Equal(at) {
		t.Errorf("the scheduled message's deliver_at is %v, want %v", m.DeliverAt, at)
	}
	b := a.broadcast("ops", map[string]any{"title": "all", "deliver_at": at.Add(time.Second)}).Message
	g := a.broadcast("ops", map[string]any{"group": "admins", "title": "deploy", "deliver_at": at.Add(2 * time.Second)}).Message
	want := []deliveryBody{{User: "ann"}, {User: "bob"}, {Group: inbox.PublicGroup}, {Group: "admins"}}
	for i, id := range []string{m.ID, m.ID, b.ID, g.ID} {
		want[i].Message.ID = id
	}
	wantPage := func(what string, got, want []deliveryBody) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s = %+v; want %d deliveries", what, got, len(want))
			return
		}
		for i, d := range got {
			if d.User != want[i].User || d.Group != want[i].Group || d.Message.ID != want[i].Message.ID {
				t.Errorf("%s: delivery %d is %+v; want user %q, group %q, message %s", what, i, d, want[i].User, want[i].Group, want[i].Message.ID)
			}
		}
	}
	var page scheduledBody
	a.call("GET", "/scheduled?limit=1", "!ops", nil, http.StatusOK, &page)
	wantPage("GET /scheduled?limit=1", page.Deliveries, want[:1])
	if page.Cursor == "" {
		t.Fatalf("GET /scheduled?limit=1 = %+v; want a cursor", page)
	}
	var next scheduledBody
	a.call("GET", "/scheduled?cursor="+page.Cursor, "!ops", nil, http.StatusOK, &next)
	wantPage("GET /scheduled's next page", next.Deliveries, want[1:])
	if next.Cursor != "" {
		t.Errorf("GET /scheduled's next page = %+v; want the last", next)
	}
	var one []deliveryBody
	for c, pages := "", 0; pages == 0 || c != ""; pages++ {
		if pages > len(want) {
			t.Fatalf("GET /scheduled?limit=1: more than %d pages", len(want))
		}
		var p scheduledBody
		a.call("GET", "/scheduled?limit=1&cursor="+url.QueryEscape(c), "!ops", nil, http.StatusOK, &p)
		one, c = append(one, p.Deliveries...), p.Cursor
	}
	wantPage("GET /scheduled, a page of 1 at a time", one, want)
	var feed pageBody
	a.call("GET", "/messages", "ann", nil, http.StatusOK, &feed)
	if len(feed.Messages) != 0 {
		t.Errorf("ann's feed before the delivery time: %+v, want nothing", feed)
	}

	a.wantError("GET", "/scheduled?limit=1000", "!ops", nil, http.StatusBadRequest)
	a.wantError("GET", "/scheduled?cursor=nope", "!ops", nil, http.StatusBadRequest)
	a.wantError("GET", "/scheduled", "", nil, http.StatusUnauthorized)
	a.wantError("POST", "/messages", "ops", map[string]any{"users": []string{"ann"}, "title": "late", "deliver_at": a.start.Add(-time.Minute)}, http.StatusBadRequest)
	a.wantError("POST", "/broadcasts", "ops", map[string]any{"title": "all", "deliver_at": a.start.Add(-time.Minute)}, http.StatusBadRequest)

	a.clock.Advance(time.Hour + 2*time.Second)
	var none scheduledBody
	a.call("GET", "/scheduled", "!ops", nil, http.StatusOK, &none)
	if len(none.Deliveries) != 0 {
		t.Errorf("GET /scheduled at the delivery times = %+v; want nothing", none)
	}
	feed = pageBody{}
	a.call("GET", "/messages", "ann", nil, http.StatusOK, &feed)
	if len(feed.Messages) != 2 || feed.Messages[0].ID != b.ID || feed.Messages[1].ID != m.ID || feed.Messages[0].Read || feed.Messages[1].Read {
		t.Errorf("ann's feed at the delivery times: %+v, want the broadcast and the message, unread", feed)
	}
}

// TestPushWindow: the due worker's window pushes each delivery that came
// due in it once, an overlapping window none again, and a later one those
// due since; through the Hub, a copy reaches its user's stream, a
// broadcast every stream and a group message its members', as the
// stream's events of them do.
func TestPushWindow(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC))
	start := clock.Now()
	ib := inbox.New(memstore.New(memstore.WithClock(clock.Now)), inbox.WithClock(clock.Now))
	for i, users := range [][]string{{"ann", "bob"}, {"cid"}} {
		if _, err := ib.Publish(ctx, testScope, users, inbox.Draft{Title: fmt.Sprint("due ", i), DeliverAt: start.Add(time.Duration(i+1) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ib.Broadcast(ctx, testScope, inbox.Draft{Title: "to all", DeliverAt: start.Add(80 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ib.BroadcastGroup(ctx, testScope, "ops", inbox.Draft{Title: "to ops", DeliverAt: start.Add(150 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	hub := NewHub(testScope, true)
	streams := map[string]*subscriber{}
	for _, u := range []inbox.User{testScope.User("ann"), testScope.User("bob").InGroups("ops"), testScope.User("cid")} {
		streams[u.ID] = hub.subscribe(u)
	}
	var got []string
	push := func(ctx context.Context, e inbox.Event) error {
		got = append(got, fmt.Sprintf("%s %s%s %s", e.Kind, e.Partition.User, e.Partition.Group, e.Message.Title))
		return hub.Publish(ctx, e)
	}
	pushed := map[string]time.Time{}
	clock.Advance(90 * time.Second)
	for _, w := range [][2]time.Duration{{-time.Minute, 90 * time.Second}, {0, 90 * time.Second}, {30 * time.Second, 3 * time.Minute}} {
		if err := pushWindow(ctx, ib, testScope, start.Add(w[0]), start.Add(w[1]), pushed, push); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
	}
	if want := []string{"due ann due 0", "due bob due 0", "due $public to all", "due cid due 1", "due ops to ops"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pushed %q, want %q", got, want)
	}
	for user, want := range map[string][]string{
		"ann": {"due 0", "to all"},
		"bob": {"due 0", "to all", "to ops"},
		"cid": {"to all", "due 1"},
	} {
		var titles []string
		for len(streams[user].events) > 0 {
			titles = append(titles, (<-streams[user].events).Message.Title)
		}
		if fmt.Sprint(titles) != fmt.Sprint(want) {
			t.Errorf("%s's stream got %q, want %q", user, titles, want)
		}
	}
}

// TestScheduledPageLive drives the page in headless Chromium, against each
// live setup of main: a message scheduled for ann and bob and a broadcast
// scheduled for everyone show in the page's "Scheduled" list (the
// message's two copies, the broadcast once, to everyone), not in the
// feed; at their delivery time the due worker's pushes (events "due" on
// ann's stream: her copy's, and the broadcast's, in the public partition,
// fanned out as its creation was) move them to the feed, unread, with
// their badge, and out of the list, with no reload.
func TestScheduledPageLive(t *testing.T) {
	for _, b := range liveBackends {
		t.Run(b.name, func(t *testing.T) { testScheduledPageLive(t, b.api(t)) })
	}
}

func testScheduledPageLive(t *testing.T, a *api) {
	events := a.openEvents("ann", true)
	browser := newBrowser(t)
	tab := openPage(t, browser, "ann's tab", a.srv.URL+"/?user=ann&operator=1") // the list is an operator's
	tab.run("mark the page", chromedp.Evaluate(`window.loadedOnce = true`, nil))
	const lead = 6 * time.Second
	at := time.Now().UTC().Truncate(time.Second).Add(lead)
	id := a.publish("ops", map[string]any{"users": []string{"ann", "bob"}, "title": "Standup", "deliver_at": at}).Message.ID
	bid := a.broadcast("ops", map[string]any{"title": "Drill", "deliver_at": at}).Message.ID
	scheduled := fmt.Sprintf(`document.querySelectorAll('#scheduled li[data-id="%s"]').length === 2 && `+
		`document.querySelectorAll('#scheduled li[data-id="%s"][data-to="everyone"]').length === 1`, id, bid)
	if time.Until(at) > time.Second {
		tab.run("refresh the view", click(`#view-all`))
		tab.wait("the scheduled list shows both copies and the broadcast, the feed nothing", scheduled+" && "+shows(id, "")+" && "+shows(bid, "")+" && "+badge("", 0))
	} else {
		t.Logf("the machine is slow: the messages are due %v after they were published; not checking the page before", lead)
	}
	tab.wait("at the delivery time the pushes move them to the feed", shows(id, "unread")+" && "+shows(bid, "unread")+" && "+badge("", 2)+
		` && document.querySelectorAll("#scheduled li").length === 0`)
	due := map[string]eventBody{}
	for len(due) < 2 {
		e := events.next().body(t)
		if e.Kind != "due" {
			continue // the messages' creation
		}
		due[e.Message.ID] = e
		if time.Now().Before(at) || !e.At.Equal(at) {
			t.Errorf("the due event of %s came at %v for %v; want it at %v, not before", e.Message.ID, time.Now(), e.At, at)
		}
	}
	if e := due[id]; e.User != "ann" || e.Group != "" {
		t.Errorf("ann's due event of the message %+v, want it in her partition", e)
	}
	if e := due[bid]; e.User != "" || e.Group != inbox.PublicGroup {
		t.Errorf("ann's due event of the broadcast %+v, want it in the public partition", e)
	}
	var loadedOnce bool
	tab.run("check the page was not reloaded", chromedp.Evaluate(`window.loadedOnce === true`, &loadedOnce))
	if !loadedOnce {
		t.Error("the tab was reloaded")
	}
}

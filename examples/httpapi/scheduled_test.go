package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// TestScheduled: POST /messages with deliver_at schedules a message; GET
// /scheduled lists its copies, each with its user, a page at a time,
// until they are due; bad times, limits and cursors are 400s.
func TestScheduled(t *testing.T) {
	a := newMemAPI(t)
	at := a.start.Add(time.Hour)
	m := a.publish("ops", map[string]any{"users": []string{"bob", "ann"}, "title": "Standup", "deliver_at": at}).Message
	if !m.DeliverAt.Equal(at) {
		t.Errorf("the scheduled message's deliver_at is %v, want %v", m.DeliverAt, at)
	}
	var page scheduledBody
	a.call("GET", "/scheduled?limit=1", "ops", nil, http.StatusOK, &page)
	if len(page.Deliveries) != 1 || page.Deliveries[0].User != "ann" || page.Deliveries[0].Message.ID != m.ID || page.Cursor == "" {
		t.Fatalf("GET /scheduled?limit=1 = %+v; want ann's copy and a cursor", page)
	}
	var next scheduledBody
	a.call("GET", "/scheduled?cursor="+page.Cursor, "ops", nil, http.StatusOK, &next)
	if len(next.Deliveries) != 1 || next.Deliveries[0].User != "bob" || next.Cursor != "" {
		t.Errorf("GET /scheduled's next page = %+v; want bob's copy, the last", next)
	}
	var feed pageBody
	a.call("GET", "/messages", "ann", nil, http.StatusOK, &feed)
	if len(feed.Messages) != 0 {
		t.Errorf("ann's feed before the delivery time: %+v, want nothing", feed)
	}

	a.wantError("GET", "/scheduled?limit=1000", "ops", nil, http.StatusBadRequest)
	a.wantError("GET", "/scheduled?cursor=nope", "ops", nil, http.StatusBadRequest)
	a.wantError("GET", "/scheduled", "", nil, http.StatusUnauthorized)
	a.wantError("POST", "/messages", "ops", map[string]any{"users": []string{"ann"}, "title": "late", "deliver_at": a.start.Add(-time.Minute)}, http.StatusBadRequest)
	a.wantError("POST", "/broadcasts", "ops", map[string]any{"title": "all", "deliver_at": a.start.Add(-time.Minute)}, http.StatusBadRequest)
	var b publishBody
	a.call("POST", "/broadcasts", "ops", map[string]any{"title": "all", "deliver_at": at}, http.StatusCreated, &b) // stored once, not in the scheduled list

	a.clock.Advance(time.Hour)
	var none scheduledBody
	a.call("GET", "/scheduled", "ops", nil, http.StatusOK, &none)
	if len(none.Deliveries) != 0 {
		t.Errorf("GET /scheduled at the delivery time = %+v; want nothing", none)
	}
	feed = pageBody{}
	a.call("GET", "/messages", "ann", nil, http.StatusOK, &feed)
	// Both are due at one second: their IDs order them by entropy.
	got := map[string]bool{}
	for _, msg := range feed.Messages {
		got[msg.ID] = !msg.Read
	}
	if len(feed.Messages) != 2 || !got[b.Message.ID] || !got[m.ID] {
		t.Errorf("ann's feed at the delivery time: %+v, want the broadcast and the message, unread", feed)
	}
}

// TestPushWindow: the due worker's window pushes each copy that came due
// in it once, an overlapping window none again, and a later one the
// copies due since.
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
	var got []string
	push := func(_ context.Context, e inbox.Event) error {
		got = append(got, fmt.Sprintf("%s %s %s", e.Kind, e.Partition.User, e.Message.Title))
		return nil
	}
	pushed := map[string]time.Time{}
	clock.Advance(90 * time.Second)
	for _, w := range [][2]time.Duration{{-time.Minute, 90 * time.Second}, {0, 90 * time.Second}, {30 * time.Second, 3 * time.Minute}} {
		if err := pushWindow(ctx, ib, testScope, start.Add(w[0]), start.Add(w[1]), pushed, push); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
	}
	if want := []string{"due ann due 0", "due bob due 0", "due cid due 1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pushed %q, want %q", got, want)
	}
}

// TestScheduledPageLive drives the page in headless Chromium, against each
// live setup of main: a message scheduled for ann and bob shows in the
// page's "Scheduled" list, not in the feed; at its delivery time the due
// worker's push (an event "due" on ann's stream) moves it to the feed,
// unread, with its badge, and out of the list, with no reload.
func TestScheduledPageLive(t *testing.T) {
	for _, b := range liveBackends {
		t.Run(b.name, func(t *testing.T) { testScheduledPageLive(t, b.api(t)) })
	}
}

func testScheduledPageLive(t *testing.T, a *api) {
	events := a.openEvents("ann", true)
	browser := newBrowser(t)
	tab := openPage(t, browser, "ann's tab", a.srv.URL+"/?user=ann")
	tab.run("mark the page", chromedp.Evaluate(`window.loadedOnce = true`, nil))
	const lead = 6 * time.Second
	at := time.Now().UTC().Truncate(time.Second).Add(lead)
	id := a.publish("ops", map[string]any{"users": []string{"ann", "bob"}, "title": "Standup", "deliver_at": at}).Message.ID
	scheduled := fmt.Sprintf(`document.querySelectorAll('#scheduled li[data-id="%s"]').length === 2`, id)
	if time.Until(at) > time.Second {
		tab.run("refresh the view", click(`#view-all`))
		tab.wait("the scheduled list shows both copies, the feed nothing", scheduled+" && "+shows(id, "")+" && "+badge("", 0))
	} else {
		t.Logf("the machine is slow: the message is due %v after it was published; not checking the page before", lead)
	}
	tab.wait("at the delivery time the push moves it to the feed", shows(id, "unread")+" && "+badge("", 1)+
		` && document.querySelectorAll("#scheduled li").length === 0`)
	for {
		e := events.next().body(t)
		if e.Kind != "due" {
			continue // the message's creation
		}
		if e.User != "ann" || e.Message.ID != id || !e.At.Equal(at) {
			t.Errorf("ann's due event %+v, want the message, at %v", e, at)
		}
		if time.Now().Before(at) {
			t.Errorf("the due event came before the delivery time %v", at)
		}
		break
	}
	var loadedOnce bool
	tab.run("check the page was not reloaded", chromedp.Evaluate(`window.loadedOnce === true`, &loadedOnce))
	if !loadedOnce {
		t.Error("the tab was reloaded")
	}
}

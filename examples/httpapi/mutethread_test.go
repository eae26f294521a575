package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
)

// nextOf returns the next event of s named name, past the others (at most
// 20 of them).
func (s *sse) nextOf(name string) sseEvent {
	s.t.Helper()
	for range 20 {
		if ev := s.next(); ev.name == name {
			return ev
		}
	}
	s.t.Fatalf("no %q event in 20", name)
	return sseEvent{}
}

// threadOf returns the chat of page with key thread in group ("" for a
// one-to-one chat), failing t if there is none.
func threadOf(t *testing.T, page threadsBody, thread, group string) threadBody {
	t.Helper()
	for _, th := range page.Threads {
		if th.Thread == thread && th.Group == group {
			return th
		}
	}
	t.Fatalf("no chat %q of group %q in %+v", thread, group, page.Threads)
	return threadBody{}
}

// TestMuteThreadAPI: PUT /preferences with muted_threads mutes ann's
// one-to-one chat with bob, for her alone: GET /preferences and her
// preferences event carry it; the chat's messages stay listed, marked
// muted, their unread in muted (overall and in their category, out of
// unseen); GET /threads shows the chat thread_muted, its unread in muted.
// A group chat's key in muted_threads mutes none of the group's messages
// (a group chat is muted by its group). Bad thread keys, a thread twice
// and more than inbox.MaxMutedThreads are a 400 that changes nothing.
// Unmuting gives the unread back. Against each live setup of main.
func TestMuteThreadAPI(t *testing.T) {
	for _, b := range liveBackends {
		t.Run(b.name, func(t *testing.T) { testMuteThreadAPI(t, b.api(t)) })
	}
}

func testMuteThreadAPI(t *testing.T, a *api) {
	events := a.openEvents("ann|team", true)
	a.publish("bob", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "lunch?", "category": "chat"})
	a.publish("bob", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "12:30?", "category": "chat"})
	a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "invoice", "category": "billing"})
	a.broadcast("carol", map[string]any{"group": "team", "thread": "team", "title": "standup?", "category": "chat"})

	var set setPreferencesBody
	a.call("PUT", "/preferences", "ann|team", map[string]any{"muted_threads": []string{"ann-bob"}}, http.StatusOK, &set)
	want := preferencesBody{MutedGroups: []string{}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{"ann-bob"}, Own: true}
	if diff := cmp.Diff(setPreferencesBody{Changed: true, preferencesBody: want}, set, cmp.AllowUnexported(setPreferencesBody{})); diff != "" {
		t.Errorf("PUT /preferences muting the chat (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, a.preferences("ann")); diff != "" {
		t.Errorf("GET /preferences after the PUT (-want +got):\n%s", diff)
	}
	if ev := events.nextOf("preferences").body(t); ev.User != "ann" || !cmp.Equal(ev.Preferences, &want) {
		t.Errorf("ann's preferences event %+v, want %+v", ev, want)
	}

	wantCounts := countsBody{tallyBody: tallyBody{Total: 4, Unread: 2, Muted: 2}, Unseen: 2, Categories: map[string]categoryBody{
		"chat":    {tallyBody: tallyBody{Total: 3, Unread: 1, Muted: 2}, Unseen: 1},
		"billing": category(1, 0, 1, 1),
	}}
	if diff := cmp.Diff(wantCounts, a.counts("ann|team"), cmp.AllowUnexported(countsBody{}, categoryBody{})); diff != "" {
		t.Errorf("ann's counts, the chat with bob muted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"lunch?": true, "12:30?": true, "invoice": false, "standup?": false}, a.mutedByTitle("ann|team")); diff != "" {
		t.Errorf("ann's feed, muted by title (-want +got):\n%s", diff)
	}
	threads := func(user string) threadsBody {
		t.Helper()
		var out threadsBody // a fresh one: decoding into the last would keep its fields
		a.call("GET", "/threads", user, nil, http.StatusOK, &out)
		return out
	}
	if c := threadOf(t, threads("ann|team"), "ann-bob", ""); !c.ThreadMuted || c.GroupMuted || c.Unread != 0 || c.tallyBody.Muted != 2 || !c.Latest.Muted {
		t.Errorf("ann's chat with bob %+v, want thread_muted, its 2 unread in muted", c)
	}
	if c := threadOf(t, threads("ann|team"), "team", "team"); c.ThreadMuted || c.GroupMuted || c.Unread != 1 {
		t.Errorf("ann's team chat %+v, want it unmuted, 1 unread", c)
	}
	if c := threadOf(t, threads("bob"), "ann-bob", ""); c.ThreadMuted || c.Latest.Muted {
		t.Errorf("bob's chat with ann %+v, want it unmuted: ann's mute is hers", c)
	}

	// The team chat's key as a thread: the group's messages stay unmuted.
	a.call("PUT", "/preferences", "ann", map[string]any{"muted_threads": []string{"team", "ann-bob"}}, http.StatusOK, &set)
	if c := threadOf(t, threads("ann|team"), "team", "team"); !set.Changed || c.ThreadMuted || c.GroupMuted || c.Unread != 1 || c.Latest.Muted {
		t.Errorf("ann's team chat with its key in muted_threads (changed %v): %+v, want it unmuted, 1 unread", set.Changed, c)
	}
	if c := a.counts("ann|team"); c.Unread != 2 || c.Muted != 2 {
		t.Errorf("ann's counts with the team chat's key in muted_threads: %+v, want 2 unread, 2 muted", c)
	}

	many := make([]string, inbox.MaxMutedThreads+1)
	for i := range many {
		many[i] = fmt.Sprintf("t%d", i)
	}
	for name, body := range map[string]any{
		"thread with #":  map[string]any{"muted_threads": []string{"ann#bob"}},
		"empty thread":   map[string]any{"muted_threads": []string{""}},
		"a thread twice": map[string]any{"muted_threads": []string{"ann-bob", "ann-bob"}},
		"too many":       map[string]any{"muted_threads": many},
		"not a list":     map[string]any{"muted_threads": "ann-bob"},
	} {
		t.Run(name, func(t *testing.T) { a.wantError("PUT", "/preferences", "ann", body, http.StatusBadRequest) })
	}
	want.MutedThreads = []string{"ann-bob", "team"}
	if diff := cmp.Diff(want, a.preferences("ann")); diff != "" {
		t.Errorf("preferences after the bad PUTs (-want +got):\n%s", diff)
	}

	a.call("PUT", "/preferences", "ann", map[string]any{}, http.StatusOK, &set)
	if c := a.counts("ann|team"); !set.Changed || c.Unread != 4 || c.Muted != 0 || c.Unseen != 4 {
		t.Errorf("ann's counts after unmuting (changed %v): %+v, want 4 unread and unseen, none muted", set.Changed, c)
	}
	if c := threadOf(t, threads("ann|team"), "ann-bob", ""); c.ThreadMuted || c.Unread != 2 {
		t.Errorf("ann's chat with bob after unmuting %+v, want 2 unread", c)
	}
}

// TestPageMuteThreadLive drives the one-to-one chat's mute toggle in the
// page's chat list, in headless Chromium, in two tabs of ann's (a member
// of team), against each live setup of main. Muting the chat with bob
// marks it and its messages muted and takes its unread out of its badge
// and the total at once; a message bob writes while it is muted arrives
// muted; the team's chat is left alone; the other tab follows through
// the preferences event; unmuting there brings the unread back in both.
// No tab reloads. A last setup without events shows that the tab that
// toggles updates itself, not through the event of its change.
func TestPageMuteThreadLive(t *testing.T) {
	browser := newBrowser(t)
	for _, b := range liveBackends {
		t.Run(b.name, func(t *testing.T) { testPageMuteThreadLive(t, b.api(t), browser) })
	}
	t.Run("memory without events", func(t *testing.T) {
		a := newMemAPI(t)
		hi := a.publish("bob", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "hi ann"}).Message.ID
		a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "invoice"})
		one := openPageStatus(t, browser, "ann's tab", a.srv.URL+"/?user=ann", "not live: no stream is read")
		one.wait("the badge counts both", badge("", 2)+" && "+mutedMessage(hi, false))
		one.run("mute the chat with bob", click(`#threads li[data-thread="ann-bob"] button.mute`))
		one.wait("the badges and the feed follow at once", badge("", 1)+" && "+mutedMessage(hi, true)+" && "+chatShows("ann-bob", true, 0)+
			" && "+muteButton(`#threads li[data-thread="ann-bob"] button.mute`, true))
	})
}

// chatShows returns the expression that the chat list shows the chat of
// key thread muted or not, its badge at unread.
func chatShows(thread string, muted bool, unread int) string {
	return fmt.Sprintf(`(() => { const li = document.querySelector('#threads li[data-thread="%s"]'); return !!li && li.dataset.muted === "%v" && li.querySelector(".badge").textContent === "%d"; })()`, thread, muted, unread)
}

func testPageMuteThreadLive(t *testing.T, a *api, browser context.Context) {
	hi := a.publish("bob", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "hi ann"}).Message.ID
	lunch := a.publish("bob", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "lunch?"}).Message.ID
	standup := a.broadcast("carol", map[string]any{"group": "team", "thread": "team", "title": "standup?"}).Message.ID
	inv := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "invoice"}).Message.ID
	url := a.srv.URL + "/?user=ann&groups=team"
	one, two := openPage(t, browser, "tab one", url), openPage(t, browser, "tab two", url)
	bobChat := `#threads li[data-thread="ann-bob"] button.mute[data-mute-thread="ann-bob"]`
	for _, tb := range []*tab{one, two} {
		tb.wait("nothing muted", badge("", 4)+" && "+chatShows("ann-bob", false, 2)+" && "+chatShows("team", false, 1)+" && "+muteButton(bobChat, false)+
			" && "+mutedMessage(hi, false)+" && "+mutedMessage(lunch, false))
	}
	one.run("mark the page", chromedp.Evaluate(`window.loadedOnce = true`, nil))

	one.run("mute the chat with bob", click(bobChat))
	for _, tb := range []*tab{one, two} {
		tb.wait("the chat with bob is muted", muteButton(bobChat, true)+" && "+chatShows("ann-bob", true, 0)+" && "+chatShows("team", false, 1)+
			" && "+badge("", 2)+" && "+mutedMessage(hi, true)+" && "+mutedMessage(lunch, true)+" && "+mutedMessage(standup, false)+" && "+mutedMessage(inv, false))
	}
	one.wait("the toggle did not open the chat", `document.querySelectorAll("#feed li").length === 4`)

	again := a.publish("bob", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "still there?"}).Message.ID
	for _, tb := range []*tab{one, two} {
		tb.wait("bob's new message arrives muted", mutedMessage(again, true)+" && "+chatShows("ann-bob", true, 0)+" && "+badge("", 2))
	}

	two.run("unmute the chat with bob", click(bobChat))
	for _, tb := range []*tab{one, two} {
		tb.wait("the chat with bob is back", muteButton(bobChat, false)+" && "+chatShows("ann-bob", false, 3)+" && "+badge("", 5)+
			" && "+mutedMessage(hi, false)+" && "+mutedMessage(again, false))
	}

	if diff := cmp.Diff(preferencesBody{MutedGroups: []string{}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}, Own: true}, a.preferences("ann|team")); diff != "" {
		t.Errorf("ann's preferences at the end (-want +got):\n%s", diff)
	}
	var loadedOnce bool
	one.run("check the page was not reloaded", chromedp.Evaluate(`window.loadedOnce === true`, &loadedOnce))
	if !loadedOnce {
		t.Error("tab one was reloaded")
	}
}

package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
)

// preferences returns user's preferences, as GET /preferences answers.
func (a *api) preferences(user string) preferencesBody {
	a.t.Helper()
	var p preferencesBody
	a.call("GET", "/preferences", user, nil, http.StatusOK, &p)
	return p
}

// TestPreferencesAPI: PUT /preferences replaces the caller's muted groups
// and categories and says whether it changed them; GET /preferences reads
// them, sorted. A muted group's and category's messages stay listed,
// marked muted, their unread in muted (overall and in their category,
// whose unseen leaves them too); a muted group's chat is marked muted.
// Bad input is a 400 that changes nothing. On the in-memory store; see
// TestPreferencesAPIDynamoDB.
func TestPreferencesAPI(t *testing.T) { testPreferencesAPI(t, newMemAPI(t)) }

func testPreferencesAPI(t *testing.T, a *api) {
	want := preferencesBody{MutedGroups: []string{}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}}
	if diff := cmp.Diff(want, a.preferences("ann")); diff != "" {
		t.Errorf("preferences before any (-want +got):\n%s", diff)
	}
	inv := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "invoice", "category": "billing"}).Message.ID
	a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "story", "category": "news"})
	a.broadcast("carol", map[string]any{"group": "team", "thread": "team", "title": "standup?", "category": "chat"})

	var set setPreferencesBody
	a.call("PUT", "/preferences", "ann|team", map[string]any{"muted_groups": []string{"team", "admins"}, "muted_categories": []string{"billing"}}, http.StatusOK, &set)
	want = preferencesBody{MutedGroups: []string{"admins", "team"}, MutedCategories: []string{"billing"}, OptedOut: []string{}, MutedThreads: []string{}, Own: true}
	if diff := cmp.Diff(setPreferencesBody{Changed: true, preferencesBody: want}, set, cmp.AllowUnexported(setPreferencesBody{})); diff != "" {
		t.Errorf("PUT /preferences (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, a.preferences("ann")); diff != "" {
		t.Errorf("GET /preferences after the PUT (-want +got):\n%s", diff)
	}
	a.call("PUT", "/preferences", "ann", map[string]any{"muted_groups": []string{"admins", "team"}, "muted_categories": []string{"billing"}}, http.StatusOK, &set)
	if set.Changed {
		t.Error("PUT of the same preferences changed them")
	}

	wantCounts := countsBody{tallyBody: tallyBody{Total: 3, Unread: 1, Muted: 2}, Unseen: 1, Categories: map[string]categoryBody{
		"billing": {tallyBody: tallyBody{Total: 1, Muted: 1}},
		"news":    category(1, 0, 1, 1),
		"chat":    {tallyBody: tallyBody{Total: 1, Muted: 1}},
	}}
	if diff := cmp.Diff(wantCounts, a.counts("ann|team"), cmp.AllowUnexported(countsBody{}, categoryBody{})); diff != "" {
		t.Errorf("ann's counts, team and billing muted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"invoice": true, "story": false, "standup?": true}, a.mutedByTitle("ann|team")); diff != "" {
		t.Errorf("ann's feed, muted by title (-want +got):\n%s", diff)
	}
	var threads threadsBody
	a.call("GET", "/threads", "ann|team", nil, http.StatusOK, &threads)
	if len(threads.Threads) != 1 || !threads.Threads[0].GroupMuted || threads.Threads[0].Unread != 0 || threads.Threads[0].tallyBody.Muted != 1 || !threads.Threads[0].Latest.Muted {
		t.Errorf("ann's chats %+v, want the team's muted, its unread in muted", threads.Threads)
	}
	if c := a.counts("bob|team"); c.Unread != 1 || c.Muted != 0 {
		t.Errorf("bob's counts %+v, want the team's message unread: ann's mute is hers", c)
	}

	// Unmuting gives the unread back, and a read made while muted stays.
	a.call("POST", "/messages/"+inv+"/read", "ann|team", nil, http.StatusOK, nil)
	a.call("PUT", "/preferences", "ann", map[string]any{"muted_groups": []string{"team"}}, http.StatusOK, &set)
	if c := a.counts("ann|team"); !set.Changed || c.Unread != 1 || c.Muted != 1 || c.Categories["billing"].Read != 1 || c.Categories["billing"].Muted != 0 {
		t.Errorf("ann's counts after unmuting billing (changed %v): %+v, want billing read, the team's message muted", set.Changed, c)
	}

	// Opted out of news: the story leaves her feed and counts; a PUT
	// without opted_out opts her in again.
	a.call("PUT", "/preferences", "ann", map[string]any{"muted_groups": []string{"team"}, "opted_out": []string{"news"}}, http.StatusOK, &set)
	if got := a.preferences("ann"); !set.Changed || !slices.Equal(got.OptedOut, []string{"news"}) {
		t.Errorf("GET /preferences after opting out of news: %+v (changed %v)", got, set.Changed)
	}
	if c := a.counts("ann|team"); c.Total != 2 || c.Unread != 0 || c.Muted != 1 {
		t.Errorf("ann's counts opted out of news: %+v; want 2, none unread, the team's muted", c)
	}
	if _, shown := a.mutedByTitle("ann|team")["story"]; shown {
		t.Errorf("ann's feed shows the news story, opted out of")
	}
	a.call("PUT", "/preferences", "ann", map[string]any{"muted_groups": []string{"team"}}, http.StatusOK, &set)
	if c := a.counts("ann|team"); !set.Changed || c.Unread != 1 {
		t.Errorf("ann's counts opted in again: %+v, want the story unread", c)
	}

	// DELETE: back to the inbox's defaults (none here), and her own no more.
	var reset setPreferencesBody
	a.call("DELETE", "/preferences", "ann", nil, http.StatusOK, &reset)
	if !reset.Changed || reset.Own || len(reset.MutedGroups) != 0 {
		t.Errorf("DELETE /preferences = %+v, want changed, the defaults", reset)
	}
	a.call("PUT", "/preferences", "ann", map[string]any{"muted_groups": []string{"team"}}, http.StatusOK, &set)

	many := func(n int) []string {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%d", i)
		}
		return keys
	}
	for name, body := range map[string]any{
		"group with #":        map[string]any{"muted_groups": []string{"a#b"}},
		"category with #":     map[string]any{"muted_categories": []string{"a#b"}},
		"empty group":         map[string]any{"muted_groups": []string{""}},
		"everyone's group":    map[string]any{"muted_groups": []string{"$public"}},
		"a group twice":       map[string]any{"muted_groups": []string{"team", "team"}},
		"a category twice":    map[string]any{"muted_categories": []string{"news", "news"}},
		"51 groups":           map[string]any{"muted_groups": many(51)},
		"51 categories":       map[string]any{"muted_categories": many(51)},
		"an unknown field":    map[string]any{"muted_users": []string{"team"}},
		"not a list":          map[string]any{"muted_groups": "team"},
		"malformed JSON":      []byte(`{"muted_groups": [`),
		"data after the JSON": []byte(`{} {}`),
	} {
		t.Run(name, func(t *testing.T) { a.wantError("PUT", "/preferences", "ann", body, http.StatusBadRequest) })
	}
	a.wantError("GET", "/preferences", "", nil, http.StatusUnauthorized)
	a.wantError("PUT", "/preferences", "", map[string]any{}, http.StatusUnauthorized)
	a.wantError("GET", "/preferences", "a#nn", nil, http.StatusBadRequest)
	want = preferencesBody{MutedGroups: []string{"team"}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}, Own: true}
	if diff := cmp.Diff(want, a.preferences("ann")); diff != "" {
		t.Errorf("preferences after the bad PUTs (-want +got):\n%s", diff)
	}
	// 50 of each is the limit, and fits.
	a.call("PUT", "/preferences", "ann", map[string]any{"muted_groups": many(50), "muted_categories": many(50)}, http.StatusOK, &set)
	if p := a.preferences("ann"); len(p.MutedGroups) != 50 || len(p.MutedCategories) != 50 {
		t.Errorf("preferences after muting 50 of each: %d groups, %d categories", len(p.MutedGroups), len(p.MutedCategories))
	}
	// An empty body unmutes everything.
	a.call("PUT", "/preferences", "ann", map[string]any{}, http.StatusOK, &set)
	if diff := cmp.Diff(preferencesBody{MutedGroups: []string{}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}, Own: true}, a.preferences("ann")); diff != "" || !set.Changed {
		t.Errorf("preferences after an empty PUT (changed %v) (-want +got):\n%s", set.Changed, diff)
	}
}

// muteButton returns the expression that the tab's mute toggle selector
// shows pressed (muted) or not.
func muteButton(selector string, pressed bool) string {
	return fmt.Sprintf(`(() => { const el = document.querySelector(%q); return !!el && el.getAttribute("aria-pressed") === "%v"; })()`, selector, pressed)
}

// mutedMessage returns the expression that message id shows in the tab's
// feed marked muted, or not.
func mutedMessage(id string, muted bool) string {
	return fmt.Sprintf(`(() => { const li = document.querySelector('#feed li[data-id="%s"]'); return !!li && li.classList.contains("muted") === %v; })()`, id, muted)
}

// TestPageMuteLive drives the page's mute toggles in headless Chromium, in
// two tabs of ann's (a member of team), against each live setup of main.
// Muting a category on its tab takes its unread out of the badges at once
// and marks its messages muted; muting the team's chat in the chat list
// marks the chat and its messages muted and takes them out of the badge;
// the one-to-one chat's toggle stays off (see TestPageMuteThreadLive).
// The other tab follows through the preferences event, as it does a mute
// made through the API elsewhere. No tab reloads. A last setup without events (the in-memory store whose
// changes no one reads) shows that the tab that toggles updates itself,
// not through the event of its change.
func TestPageMuteLive(t *testing.T) {
	browser := newBrowser(t)
	for _, b := range liveBackends {
		t.Run(b.name, func(t *testing.T) { testPageMuteLive(t, b.api(t), browser) })
	}
	t.Run("memory without events", func(t *testing.T) {
		a := newMemAPI(t)
		inv := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "invoice", "category": "billing"}).Message.ID
		a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "story", "category": "news"})
		one := openPageStatus(t, browser, "ann's tab", a.srv.URL+"/?user=ann", "not live: no stream is read")
		one.wait("the badges count both", badge("", 2)+" && "+badge("billing", 1)+" && "+mutedMessage(inv, false))
		one.run("mute billing", click(`#categories button.mute[data-mute-category="billing"]`))
		one.wait("the badges and the feed follow at once", badge("", 1)+" && "+badge("billing", 0)+" && "+badge("news", 1)+" && "+mutedMessage(inv, true)+
			" && "+muteButton(`#categories button.mute[data-mute-category="billing"]`, true))
	})
}

func testPageMuteLive(t *testing.T, a *api, browser context.Context) {
	inv := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "invoice", "category": "billing"}).Message.ID
	story := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "story", "category": "news"}).Message.ID
	hi := a.publish("bob", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "hi ann"}).Message.ID
	standup := a.broadcast("carol", map[string]any{"group": "team", "thread": "team", "title": "standup?"}).Message.ID
	url := a.srv.URL + "/?user=ann&groups=team"
	one, two := openPage(t, browser, "tab one", url), openPage(t, browser, "tab two", url)
	for _, tb := range []*tab{one, two} {
		tb.wait("nothing muted", badge("", 4)+" && "+badge("billing", 1)+" && "+badge("news", 1)+" && "+mutedMessage(inv, false)+" && "+mutedMessage(standup, false)+
			" && "+muteButton(`#categories button.mute[data-mute-category="billing"]`, false))
	}
	one.run("mark the page", chromedp.Evaluate(`window.loadedOnce = true`, nil))

	one.run("mute billing on its tab", click(`#categories button.mute[data-mute-category="billing"]`))
	for _, tb := range []*tab{one, two} {
		tb.wait("billing is muted", badge("", 3)+" && "+badge("billing", 0)+" && "+badge("news", 1)+" && "+mutedMessage(inv, true)+" && "+mutedMessage(story, false)+
			" && "+muteButton(`#categories button.mute[data-mute-category="billing"]`, true)+" && "+muteButton(`#categories button.mute[data-mute-category="news"]`, false))
	}

	teamChat := `#threads li[data-thread="team"]`
	one.wait("the team's chat and the chat with bob have toggles, off", muteButton(teamChat+" button.mute", false)+
		" && "+muteButton(`#threads li[data-thread="ann-bob"] button.mute[data-mute-thread="ann-bob"]`, false))
	one.run("mute the team's chat", click(teamChat+" button.mute"))
	for _, tb := range []*tab{one, two} {
		tb.wait("the team's chat is muted", muteButton(teamChat+" button.mute", true)+
			fmt.Sprintf(` && document.querySelector(%q).dataset.muted === "true" && document.querySelector(%q).textContent === "0"`, teamChat, teamChat+" .badge")+
			` && document.querySelector('#threads li[data-thread="ann-bob"]').dataset.muted === "false"`+
			" && "+badge("", 2)+" && "+mutedMessage(standup, true)+" && "+mutedMessage(hi, false))
	}
	one.wait("the toggle did not open the chat", `document.querySelectorAll("#feed li").length === 4`)

	// A change made elsewhere (another device, through the API) reaches
	// both tabs.
	a.call("PUT", "/preferences", "ann", map[string]any{"muted_groups": []string{"team"}}, http.StatusOK, nil)
	for _, tb := range []*tab{one, two} {
		tb.wait("billing is back", badge("", 3)+" && "+badge("billing", 1)+" && "+mutedMessage(inv, false)+" && "+mutedMessage(standup, true)+
			" && "+muteButton(`#categories button.mute[data-mute-category="billing"]`, false))
	}
	two.run("unmute the team's chat", click(teamChat+" button.mute"))
	one.wait("the team's chat is back in tab one", muteButton(teamChat+" button.mute", false)+" && "+badge("", 4)+" && "+mutedMessage(standup, false))

	if diff := cmp.Diff(preferencesBody{MutedGroups: []string{}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}, Own: true}, a.preferences("ann|team")); diff != "" {
		t.Errorf("ann's preferences at the end (-want +got):\n%s", diff)
	}
	var loadedOnce bool
	one.run("check the page was not reloaded", chromedp.Evaluate(`window.loadedOnce === true`, &loadedOnce))
	if !loadedOnce {
		t.Error("tab one was reloaded")
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// BrowserEnv names the environment variable with the path of the headless
// browser the page test drives; unset, it looks for chromium on the PATH.
const BrowserEnv = "INBOX_BROWSER"

// browserPath returns the browser to drive. Without one it skips t, or
// fails it when the environment variable CI is "true".
func browserPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(BrowserEnv); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no chromium on the PATH and %s is unset, with CI=true: run `make test`, which installs it", BrowserEnv)
	}
	t.Skipf("no chromium on the PATH and %s is unset: run `make test`, which installs it", BrowserEnv)
	return ""
}

// shared is the headless browser of the page tests: started by the first
// newBrowser, stopped by TestMain. A browser's start takes about a second
// of CPU; the tests took nine. Each test opens tabs of its own (openPage),
// which it closes when it ends, on a server of its own: another origin,
// whose pages share nothing with the others'.
var shared struct {
	once sync.Once
	ctx  context.Context // the context of its first tab
	stop func()
	err  error
}

// newBrowser returns the context of the first tab of the headless browser
// the page tests share (see shared), starting it if need be.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := browserPath(t)
	shared.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox, // as root in CI
			chromedp.DisableGPU,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("no-first-run", true),
		)
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(alloc)
		shared.ctx, shared.stop = ctx, func() { cancel(); cancelAlloc() }
		shared.err = chromedp.Run(ctx)
	})
	if shared.err != nil {
		t.Fatalf("start the browser: %v", shared.err)
	}
	return shared.ctx
}

// TestMain stops the shared browser, if a test started it, after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared.stop != nil {
		shared.stop()
	}
	os.Exit(code)
}

// tab is one browser tab showing the inbox page.
type tab struct {
	t    *testing.T
	name string
	ctx  context.Context
}

// openPage opens the page of user in a new tab of browser and waits until
// its event stream is live.
func openPage(t *testing.T, browser context.Context, name, url string) *tab {
	return openPageStatus(t, browser, name, url, "live")
}

// openPageStatus is openPage for a page whose status line ends up status
// ("not live: …" for an API without events).
func openPageStatus(t *testing.T, browser context.Context, name, url, status string) *tab {
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	// The first Run opens the tab, which lives as long as the context
	// given to it: this one, not one of run's timeouts.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("%s: open a tab: %v", name, err)
	}
	tb := &tab{t: t, name: name, ctx: ctx}
	tb.run("open the page", chromedp.Navigate(url))
	tb.wait("the event stream is "+status, fmt.Sprintf(`document.getElementById("status").textContent === %q`, status))
	return tb
}

// waitFor bounds each step of a tab. A step normally takes well under a
// second; the bound is for a loaded two-core machine running every
// package's tests at once, where DynamoDB Local's stream was seen to lag
// past 20 s.
const waitFor = 60 * time.Second

// run runs actions in the tab, failing the test after waitFor.
func (tb *tab) run(what string, actions ...chromedp.Action) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitFor)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %s: %v", tb.name, what, err)
	}
}

// wait waits until the JavaScript expression cond is true in the tab. On
// failure it shows the page's status line and feed.
func (tb *tab) wait(what, cond string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitFor)
	defer cancel()
	err := chromedp.Run(ctx, chromedp.Poll(cond, nil, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0)))
	if err == nil {
		return
	}
	var page string
	ctx, cancel = context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	_ = chromedp.Run(ctx, chromedp.Evaluate(`document.getElementById("status").textContent + " | " + document.body.innerText`, &page))
	tb.t.Fatalf("%s: wait until %s: %v; the page shows: %s", tb.name, what, err, page)
}

// badge returns the expression of the badge of category ("" for the unread
// total, "new" for the unseen count, "archived" and "snoozed" for those
// views' counts) showing n.
func badge(category string, n int) string {
	switch category {
	case "":
		return fmt.Sprintf(`document.getElementById("unread-total").textContent === "%d"`, n)
	case "new":
		return fmt.Sprintf(`document.getElementById("unseen").textContent === "%d"`, n)
	case "archived":
		return fmt.Sprintf(`document.getElementById("archived-total").textContent === "%d"`, n)
	case "snoozed":
		return fmt.Sprintf(`document.getElementById("snoozed-total").textContent === "%d"`, n)
	}
	return fmt.Sprintf(`(document.querySelector('#categories [data-category="%s"] .badge') || {}).textContent === "%d"`, category, n)
}

// shows returns the expression that message id is in the tab's list,
// unread or read, or (with state "") not.
func shows(id, state string) string {
	if state == "" {
		return fmt.Sprintf(`document.querySelector('#feed li[data-id="%s"]') === null`, id)
	}
	return fmt.Sprintf(`document.querySelector('#feed li[data-id="%s"].%s') !== null`, id, state)
}

// click waits for the element selector names and clicks it, in one step
// of the page's JavaScript: the page redraws its list on every event, so a
// node found in one step may be gone in the next.
func click(selector string) chromedp.Action {
	sel, _ := json.Marshal(selector)
	return chromedp.Poll(fmt.Sprintf(`(() => { const el = document.querySelector(%s); if (!el) return false; el.click(); return true; })()`, sel), nil,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(0))
}

// TestPageUpdatesLive drives the inbox page in headless Chromium, in tabs
// of ann's (a member of admins), against each live setup of main (the
// in-memory store, and DynamoDB Local with its stream read in the
// process): opening the page marks everything seen; messages
// published through the API appear with their badges; reads, a mark all
// read of one category, an archive, a delete, a snooze and an unsnooze
// made in one tab update the others; opening another tab clears the "new" badge everywhere; no tab
// reloads.
func TestPageUpdatesLive(t *testing.T) {
	for _, b := range liveBackends {
		t.Run(b.name, func(t *testing.T) { testPageUpdatesLive(t, b.api(t)) })
	}
}

func testPageUpdatesLive(t *testing.T, a *api) {
	a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "Before opening", "category": "news"})
	browser := newBrowser(t)
	url := a.srv.URL + "/?user=ann&groups=admins"
	one, two := openPage(t, browser, "tab one", url), openPage(t, browser, "tab two", url)
	// Both tabs mark the feed seen on opening: wait for both, or a late
	// opening of tab two marks the next message seen too.
	for _, tb := range []*tab{one, two} {
		tb.wait("the old message shows, seen on opening", badge("", 1)+" && "+badge("new", 0))
	}
	one.run("mark the page", chromedp.Evaluate(`window.loadedOnce = true`, nil))
	// The watermark ends the second of the opening (inbox.SeenAt): what is
	// published in that second counts as seen. Publish in the next.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))

	d := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "Disk full", "category": "billing"}).Message.ID
	one.wait("the direct message shows", shows(d, "unread"))
	one.wait("the badges count it", badge("", 2)+" && "+badge("new", 1)+" && "+badge("billing", 1))

	g := a.broadcast("ops", map[string]any{"group": "admins", "title": "Deploy at 5", "category": "ops"}).Message.ID
	a.broadcast("ops", map[string]any{"group": "eu", "title": "Not for ann", "category": "ops"})
	for _, tb := range []*tab{one, two} {
		tb.wait("the group message shows", shows(g, "unread"))
		tb.wait("the badges count it", badge("", 3)+" && "+badge("new", 2)+" && "+badge("ops", 1)+" && "+badge("billing", 1))
	}

	two.run("mark the group message read", click(fmt.Sprintf(`#feed li[data-id="%s"] button.mark-read`, g)))
	one.wait("the read in tab two shows in tab one", badge("", 2)+" && "+badge("new", 1)+" && "+badge("ops", 0)+" && "+shows(g, "read"))

	openPage(t, browser, "tab three", url)
	one.wait("opening tab three marks everything seen", badge("new", 0)+" && "+badge("", 2))

	n := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "Approve the invoice", "category": "news"}).Message.ID
	one.wait("the invoice shows", shows(n, "unread")+" && "+badge("", 3))
	two.run("act on it", click(fmt.Sprintf(`#feed li[data-id="%s"] button.interact`, n)))
	one.wait("acting on it in tab two shows in tab one: read, no action left", shows(n, "read")+" && "+badge("", 2)+fmt.Sprintf(` && document.querySelector('#feed li[data-id="%s"] button.interact') === null`, n))
	one.run("delete the invoice", click(fmt.Sprintf(`#feed li[data-id="%s"] button.delete`, n)))
	two.wait("the invoice is gone in tab two", shows(n, ""))

	one.run("open the billing view", click(`#categories [data-category="billing"]`))
	one.wait("the billing view shows only billing", shows(d, "unread")+" && "+shows(g, ""))
	one.run("mark all read in the billing view", click(`#mark-all`))
	two.wait("billing is read in tab two", badge("billing", 0)+" && "+badge("", 1)+" && "+badge("news", 1)+" && "+shows(d, "read"))

	one.run("archive the direct message", click(fmt.Sprintf(`#feed li[data-id="%s"] button.archive`, d)))
	two.wait("the archive shows in tab two", badge("archived", 1)+" && "+shows(d, ""))
	one.run("open the archived view", click(`#view-archived`))
	one.wait("the archived view shows it", shows(d, "read")+fmt.Sprintf(` && document.querySelector('#feed li[data-id="%s"] button.unarchive') !== null`, d))
	one.run("delete it", click(fmt.Sprintf(`#feed li[data-id="%s"] button.delete`, d)))
	two.wait("the delete shows in tab two", badge("archived", 0))
	one.wait("the archived view is empty", `!document.getElementById("empty").hidden`)

	one.run("back to every message", click(`#view-all`))
	one.run("snooze the group message", click(fmt.Sprintf(`#feed li[data-id="%s"] button.snooze`, g)))
	two.wait("the snooze shows in tab two", badge("snoozed", 1)+" && "+shows(g, "")+" && "+badge("", 1))
	one.run("open the snoozed view", click(`#view-snoozed`))
	one.wait("the snoozed view shows it", shows(g, "read"))
	one.run("bring it back now", click(fmt.Sprintf(`#feed li[data-id="%s"] button.unsnooze`, g)))
	two.wait("it is back in tab two", badge("snoozed", 0)+" && "+shows(g, "read"))
	one.wait("the snoozed view is empty", `!document.getElementById("empty").hidden`)

	var loadedOnce bool
	one.run("check the page was not reloaded", chromedp.Evaluate(`window.loadedOnce === true`, &loadedOnce))
	if !loadedOnce {
		t.Error("tab one was reloaded")
	}
	var feed []string
	two.run("read tab two's feed", chromedp.Evaluate(`[...document.querySelectorAll("#feed li .title")].map(e => e.textContent)`, &feed))
	if want := []string{"Deploy at 5", "Before opening"}; fmt.Sprint(feed) != fmt.Sprint(want) {
		t.Errorf("tab two's feed %q, want %q (not the other group's message, not the deleted one)", feed, want)
	}
	// The API agrees with what the pages show.
	var c countsBody
	a.call("GET", "/counts", "ann|admins", nil, http.StatusOK, &c)
	if c.Total != 2 || c.Unread != 1 || c.Archived != 0 || c.Unseen != 0 {
		t.Errorf("ann's counts %+v, want 2, 1 unread, none archived or unseen", c)
	}
}

// thread returns the expression that the chat list shows thread first-th
// (from 0) with unread unread messages and a preview ending with preview.
func thread(i int, name string, unread int, preview string) string {
	return fmt.Sprintf(`(() => { const li = document.querySelectorAll("#threads li")[%d]; return !!li && li.dataset.thread === %q && li.querySelector(".badge").textContent === "%d" && li.querySelector(".preview").textContent.endsWith(%q); })()`, i, name, unread, preview)
}

// TestChatPageLive drives the page's chat list in headless Chromium, in
// two tabs of ann's (a member of team), against each live setup of main:
// the seed's chat flows on the library. bob chats with ann one to one
// (direct messages to both, one thread); carol writes in the team's chat
// (each message stored once, for every member). The list shows the chats
// latest activity first with their previews and unread counts; a new
// message moves its chat to the top in both tabs; opening a chat shows its
// history alone; marking it read resets its count everywhere.
func TestChatPageLive(t *testing.T) {
	for _, b := range liveBackends {
		t.Run(b.name, func(t *testing.T) { testChatPageLive(t, b.api(t)) })
	}
}

func testChatPageLive(t *testing.T, a *api) {
	hi := a.publish("bob", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "hi ann"}).Message.ID
	a.broadcast("carol", map[string]any{"group": "team", "thread": "team", "title": "standup?"})
	a.broadcast("carol", map[string]any{"group": "team", "thread": "team", "title": "in 5"})
	a.broadcast("dave", map[string]any{"group": "other", "thread": "other", "title": "not ann's"})
	browser := newBrowser(t)
	url := a.srv.URL + "/?user=ann&groups=team"
	one, two := openPage(t, browser, "tab one", url), openPage(t, browser, "tab two", url)
	one.wait("the chats by activity", thread(0, "team", 2, "carol: in 5")+" && "+thread(1, "ann-bob", 1, "bob: hi ann")+` && document.querySelectorAll("#threads li").length === 2`)

	again := a.publish("bob", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "lunch?"}).Message.ID
	for _, tb := range []*tab{one, two} {
		tb.wait("bob's new message moves the chat to the top", thread(0, "ann-bob", 2, "bob: lunch?")+" && "+thread(1, "team", 2, "carol: in 5"))
	}
	one.run("open the chat with bob", click(`#threads li[data-thread="ann-bob"]`))
	one.wait("the chat's history alone", shows(again, "unread")+" && "+shows(hi, "unread")+` && document.querySelectorAll("#feed li").length === 2`)
	one.run("mark the chat read", click(`#mark-all`))
	two.wait("the chat is read in tab two", thread(0, "ann-bob", 0, "bob: lunch?")+" && "+thread(1, "team", 2, "carol: in 5")+" && "+badge("", 2))

	var threads threadsBody
	a.call("GET", "/threads", "ann|team", nil, http.StatusOK, &threads)
	if len(threads.Threads) != 2 || threads.Threads[0].Thread != "ann-bob" || threads.Threads[0].Unread != 0 || threads.Threads[1].Unread != 2 || threads.Threads[1].Total != 2 {
		t.Errorf("GET /threads = %+v, want ann-bob read, team 2 unread", threads)
	}

	// "Clear" archives the chat (ArchiveAll with the thread): it leaves the
	// list; in the archived view it empties the archive (DeleteAll).
	one.run("clear the chat with bob", click(`#archive-all`))
	two.wait("the chat leaves the list in tab two", thread(0, "team", 2, "carol: in 5")+` && document.querySelectorAll("#threads li").length === 1`+" && "+badge("archived", 2))
	one.run("open the archived view", click(`#view-archived`))
	one.wait("the archived view shows the chat", shows(again, "read")+" && "+shows(hi, "read"))
	one.run("empty the archive", click(`#archive-all`))
	two.wait("the archive is empty in tab two", badge("archived", 0)+" && "+badge("", 2))
}

// ticksShow returns the expression that the tab's feed shows message id
// with n ticks, read by readers (comma-separated, by ID) and the text
// seen ("seen by 1 of 2"); n 0 is no ticks.
func ticksShow(id string, n int, readers, seen string) string {
	if n == 0 {
		return fmt.Sprintf(`(() => { const li = document.querySelector('#feed li[data-id="%s"]'); return !!li && li.querySelector(".ticks") === null; })()`, id)
	}
	return fmt.Sprintf(`(() => { const el = document.querySelector('#feed li[data-id="%s"] .ticks'); return !!el && el.dataset.ticks === "%d" && el.dataset.readers === %q && el.textContent.endsWith(%q); })()`, id, n, readers, seen)
}

// TestPageReadTicksLive drives ann's page in headless Chromium, against
// each live setup of main: the read ticks of her own messages in a chat
// (GET /messages with readby, the chats' members from the page's URL),
// one when sent, two when every other member has read it. bob's and
// carol's reads, made through the API in their own partitions, reach
// ann's page (the Hub forwards them) and update the ticks without a
// reload: in a one-to-one chat, bob's read of his copy; in the team's
// chat, bob's read of the message and carol's mark of the chat read.
// Other users' messages show no ticks. One browser serves both setups.
func TestPageReadTicksLive(t *testing.T) {
	browser := newBrowser(t)
	for _, b := range liveBackends {
		t.Run(b.name, func(t *testing.T) { testPageReadTicksLive(t, b.api(t), browser) })
	}
}

func testPageReadTicksLive(t *testing.T, a *api, browser context.Context) {
	lunch := a.publish("ann", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "lunch?"}).Message.ID
	hi := a.publish("bob", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "hi ann"}).Message.ID
	standup := a.broadcast("ann", map[string]any{"group": "team", "thread": "team", "title": "standup"}).Message.ID
	ann := openPage(t, browser, "ann's page", a.srv.URL+"/?user=ann&groups=team&members.ann-bob=ann,bob&members.team=ann,bob,carol")
	ann.run("mark the page", chromedp.Evaluate(`window.loadedOnce = true`, nil))

	ann.run("open the chat with bob", click(`#threads li[data-thread="ann-bob"]`))
	ann.wait("one tick on her message, none on bob's", ticksShow(lunch, 1, "", "✓ seen by 0 of 1")+" && "+ticksShow(hi, 0, "", ""))
	a.call("POST", "/messages/"+lunch+"/read", "bob", nil, http.StatusOK, nil)
	ann.wait("two ticks once bob has read it", ticksShow(lunch, 2, "bob", "✓✓ seen by 1 of 1"))

	ann.run("open the team chat", click(`#threads li[data-thread="team"]`))
	ann.wait("one tick, seen by none", ticksShow(standup, 1, "", "✓ seen by 0 of 2"))
	a.call("POST", "/messages/"+standup+"/read", "bob|team", nil, http.StatusOK, nil)
	ann.wait("still one tick once bob has read it", ticksShow(standup, 1, "bob", "✓ seen by 1 of 2"))
	a.call("POST", "/messages/read-all?thread=team", "carol|team", nil, http.StatusOK, nil)
	ann.wait("two ticks once carol has read it too", ticksShow(standup, 2, "bob,carol", "✓✓ seen by 2 of 2"))

	var hover string
	ann.run("read the ticks' names", chromedp.Evaluate(fmt.Sprintf(`document.querySelector('#feed li[data-id="%s"] .ticks').title`, standup), &hover))
	if !strings.HasPrefix(hover, "bob at ") || !strings.Contains(hover, ", carol at ") {
		t.Errorf("the ticks' title %q, want bob's and carol's names and times", hover)
	}
	var loadedOnce bool
	ann.run("check the page was not reloaded", chromedp.Evaluate(`window.loadedOnce === true`, &loadedOnce))
	if !loadedOnce {
		t.Error("ann's page was reloaded")
	}
}

// TestPageEscapes: what a message holds is text on the page, whoever sent
// it: markup in a title, a body (a string, and a value of an object), a
// thread's preview and the scheduled list makes no element and runs no
// script, and shows as written.
func TestPageEscapes(t *testing.T) {
	a := memLiveAPI(t)
	const markup = `<img src=x onerror="window.injected=1"><b class="injected">bold</b><script>window.injected=1</script>`
	direct := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": markup, "body": markup, "category": "news"}).Message.ID
	a.publish("ops", map[string]any{"users": []string{"ann", "bob"}, "title": markup, "body": map[string]any{"note": markup}, "thread": "chat"})
	a.publish("ops", map[string]any{"users": []string{"ann"}, "title": markup, "deliver_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
	tb := openPage(t, newBrowser(t), "ann's page", a.srv.URL+"/?user=ann&operator=1") // with the scheduled list
	tb.wait("the message shows", shows(direct, "unread"))
	tb.wait("the scheduled list shows the scheduled one", `document.querySelectorAll("#scheduled li").length === 1`)
	tb.wait("the chat list shows the chat", `document.querySelectorAll("#threads li").length === 1`)
	var got struct {
		Injected bool     `json:"injected"`
		Elements int      `json:"elements"`
		Titles   []string `json:"titles"`
	}
	tb.run("look for what the markup would make", chromedp.Evaluate(`({
		injected: window.injected !== undefined,
		elements: document.querySelectorAll("body img, body .injected").length +
			[...document.scripts].filter(s => s.textContent.includes("window.injected")).length,
		titles: [...document.querySelectorAll("#feed li .title")].map(e => e.textContent),
	})`, &got))
	if got.Injected || got.Elements != 0 {
		t.Errorf("the markup ran (%v) or made %d elements", got.Injected, got.Elements)
	}
	if len(got.Titles) == 0 {
		t.Fatal("no title on the page")
	}
	// Everyone's schedule is an operator's view: another user's page
	// does not show it.
	bob := openPage(t, newBrowser(t), "bob's page", a.srv.URL+"/?user=bob")
	bob.wait("the chat shows", `document.querySelectorAll("#threads li").length === 1`)
	var hidden bool
	bob.run("look at the scheduled list", chromedp.Evaluate(`document.getElementById("scheduled-view").hidden && document.querySelectorAll("#scheduled li").length === 0`, &hidden))
	if !hidden {
		t.Error("bob's page shows the inbox's schedule")
	}
	for _, title := range got.Titles {
		if title != markup {
			t.Errorf("a title shows %q, want the markup as written", title)
		}
	}
}

// TestPageAggregatesLive drives the page in headless Chromium, in a tab
// of ann's, against each live setup of main: likes of one post published
// through the API (an aggregate key) show as one row, "carol and 1 other",
// counted once; a like while the page is open moves the row to the top,
// with the new count and sender, unread again after ann read it.
func TestPageAggregatesLive(t *testing.T) {
	for _, b := range liveBackends {
		t.Run(b.name, func(t *testing.T) { testPageAggregatesLive(t, b.api(t)) })
	}
}

func testPageAggregatesLive(t *testing.T, a *api) {
	like := func(fan string) string {
		return a.publish(fan, map[string]any{"users": []string{"ann"}, "title": fan + " liked your post", "category": "likes", "aggregate": "post-1"}).Message.ID
	}
	row := func(id string, count int, text string) string {
		return fmt.Sprintf(`(() => { const li = document.querySelector('#feed li[data-id="%s"]'); const a = li && li.querySelector(".aggregate"); return !!a && a.dataset.count === "%d" && a.textContent.includes(%q); })()`, id, count, text)
	}
	like("bob")
	second := like("carol")
	other := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "Welcome", "category": "news"}).Message.ID
	browser := newBrowser(t)
	one := openPage(t, browser, "tab one", a.srv.URL+"/?user=ann")
	one.wait("the likes show as one row, counted once", row(second, 2, "carol and 1 other")+" && "+badge("", 2)+" && "+badge("likes", 1)+` && document.querySelectorAll("#feed li").length === 2`)
	one.run("read the item", click(fmt.Sprintf(`#feed li[data-id="%s"] button.mark-read`, second)))
	one.wait("the item is read", shows(second, "read")+" && "+badge("", 1))
	third := like("dan")
	one.wait("the next like moves the row to the top, unread again", row(third, 3, "dan and 2 others")+" && "+shows(third, "unread")+" && "+shows(second, "")+" && "+badge("", 2)+
		fmt.Sprintf(` && document.querySelector("#feed li").dataset.id === %q && document.querySelectorAll("#feed li").length === 2`, third))
	one.wait("the other message stays", shows(other, "unread"))
}

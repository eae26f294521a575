package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
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

// newBrowser starts a headless browser and returns the context of its
// first tab.
func newBrowser(t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath(t)),
		chromedp.NoSandbox, // as root in CI
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	return ctx
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
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	// The first Run opens the tab, which lives as long as the context
	// given to it: this one, not one of run's timeouts.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("%s: open a tab: %v", name, err)
	}
	tb := &tab{t: t, name: name, ctx: ctx}
	tb.run("open the page", chromedp.Navigate(url))
	tb.wait("the event stream is live", `document.getElementById("status").textContent === "live"`)
	return tb
}

// run runs actions in the tab, failing the test after 20 s.
func (tb *tab) run(what string, actions ...chromedp.Action) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %s: %v", tb.name, what, err)
	}
}

// wait waits until the JavaScript expression cond is true in the tab. On
// failure it shows the page's status line and feed.
func (tb *tab) wait(what, cond string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	err := chromedp.Run(ctx, chromedp.Poll(cond, nil, chromedp.WithPollingInterval(50*time.Millisecond)))
	if err == nil {
		return
	}
	var page string
	ctx, cancel = context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	_ = chromedp.Run(ctx, chromedp.Evaluate(`document.getElementById("status").textContent + " | " + document.body.innerText`, &page))
	tb.t.Fatalf("%s: wait until %s: %v; the page shows: %s", tb.name, what, err, page)
}

// badge returns the expression of the unread badge of category ("" for the
// total) showing n.
func badge(category string, n int) string {
	if category == "" {
		return fmt.Sprintf(`document.getElementById("unread-total").textContent === "%d"`, n)
	}
	return fmt.Sprintf(`(document.querySelector('#categories li[data-category="%s"] .badge') || {}).textContent === "%d"`, category, n)
}

// TestPageUpdatesLive drives the inbox page in headless Chromium, in two
// tabs of ann's (a member of admins), against DynamoDB Local with its
// stream read as main does: messages published through the API appear
// with their badges, and reads made in one tab update the other, with no
// reload.
func TestPageUpdatesLive(t *testing.T) {
	a := liveAPI(t)
	browser := newBrowser(t)
	url := a.srv.URL + "/?user=ann&groups=admins"
	one, two := openPage(t, browser, "tab one", url), openPage(t, browser, "tab two", url)
	one.wait("the empty feed shows", `!document.getElementById("empty").hidden`)
	one.run("mark the page", chromedp.Evaluate(`window.loadedOnce = true`, nil))

	d := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "Disk full", "category": "billing"})
	one.wait("the direct message shows", fmt.Sprintf(`document.querySelector('#feed li[data-id="%s"].unread') !== null`, d.Message.ID))
	one.wait("the badges count it", badge("", 1)+" && "+badge("billing", 1))

	g := a.broadcast("ops", map[string]any{"group": "admins", "title": "Deploy at 5", "category": "ops"})
	a.broadcast("ops", map[string]any{"group": "eu", "title": "Not for ann", "category": "ops"})
	for _, tb := range []*tab{one, two} {
		tb.wait("the group message shows", fmt.Sprintf(`document.querySelector('#feed li[data-id="%s"]') !== null`, g.Message.ID))
		tb.wait("the badges count it", badge("", 2)+" && "+badge("ops", 1)+" && "+badge("billing", 1))
	}

	two.run("mark the group message read", chromedp.Click(fmt.Sprintf(`#feed li[data-id="%s"] button.mark-read`, g.Message.ID), chromedp.ByQuery))
	one.wait("the read in tab two shows in tab one", badge("", 1)+" && "+badge("ops", 0)+
		fmt.Sprintf(` && document.querySelector('#feed li[data-id="%s"].read') !== null`, g.Message.ID))

	one.run("mark all read", chromedp.Click(`#mark-all`, chromedp.ByQuery))
	two.wait("mark all read in tab one shows in tab two", badge("", 0)+" && "+badge("billing", 0)+
		` && document.querySelectorAll("#feed li.unread").length === 0`)

	var feed []string
	var loadedOnce bool
	one.run("read the feed", chromedp.Evaluate(`[...document.querySelectorAll("#feed li .title")].map(e => e.textContent)`, &feed),
		chromedp.Evaluate(`window.loadedOnce === true`, &loadedOnce))
	if want := []string{"Deploy at 5", "Disk full"}; fmt.Sprint(feed) != fmt.Sprint(want) {
		t.Errorf("tab one's feed %q, want %q (not the other group's message)", feed, want)
	}
	if !loadedOnce {
		t.Error("tab one was reloaded")
	}
	// The API agrees with what the page shows.
	var c countsBody
	a.call("GET", "/counts", "ann|admins", nil, http.StatusOK, &c)
	if c.Total != 2 || c.Unread != 0 {
		t.Errorf("ann's counts %+v, want 2, all read", c)
	}
}

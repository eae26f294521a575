package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// api is a running server of NewHandler and a client of it.
type api struct {
	t     *testing.T
	srv   *httptest.Server
	clock *storetest.Clock
	start time.Time // the clock's first time
}

var testScope = inbox.Scope{Tenant: "acme", Inbox: "alerts"}

// newMemAPI serves testScope from an Inbox on a fresh in-memory store,
// both on one test clock.
func newMemAPI(t *testing.T) *api {
	clock := storetest.NewClock(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC))
	ib := inbox.New(memstore.New(memstore.WithClock(clock.Now)), inbox.WithClock(clock.Now))
	return newAPI(t, ib, clock)
}

func newAPI(t *testing.T, ib *inbox.Inbox, clock *storetest.Clock) *api {
	return newAPIWithHub(t, ib, clock, nil)
}

// newAPIWithHub is newAPI with hub serving GET /events.
func newAPIWithHub(t *testing.T, ib *inbox.Inbox, clock *storetest.Clock, hub *Hub) *api {
	srv := httptest.NewServer(NewHandler(ib, testScope, hub))
	t.Cleanup(srv.Close)
	a := &api{t: t, srv: srv, clock: clock}
	if clock != nil {
		a.start = clock.Now()
	}
	return a
}

// do sends a request as user ("" sends no X-User; "ann|admins,eu" is ann
// in groups admins and eu) with body (a []byte as is, anything else as
// JSON, nil for none) and returns the status and the raw reply, which must
// be JSON.
func (a *api) do(method, path, user string, body any) (int, []byte) {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	setUser(req, user)
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		a.t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	if !json.Valid(raw) {
		a.t.Errorf("%s %s: reply is not JSON: %q", method, path, raw)
	}
	return resp.StatusCode, raw
}

// setUser sets req's X-User and X-Groups headers for user ("id|groups",
// see do), and X-Operator for one written "!id".
func setUser(req *http.Request, user string) {
	if op, ok := strings.CutPrefix(user, "!"); ok {
		user = op // an operator: "!ops"
		req.Header.Set(OperatorHeader, "true")
	}
	id, groups, _ := strings.Cut(user, "|")
	if id != "" {
		req.Header.Set(UserHeader, id)
	}
	if groups != "" {
		req.Header.Set(GroupsHeader, groups)
	}
}

// call is do for a request that must succeed with status want; it decodes
// the reply into out (if not nil).
func (a *api) call(method, path, user string, body any, want int, out any) {
	a.t.Helper()
	status, raw := a.do(method, path, user, body)
	if status != want {
		a.t.Fatalf("%s %s as %q: status %d, want %d; reply %s", method, path, user, status, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			a.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
}

// wantError checks that a request fails with status and a JSON error.
func (a *api) wantError(method, path, user string, body any, status int) {
	a.t.Helper()
	got, raw := a.do(method, path, user, body)
	var e errorBody
	if err := json.Unmarshal(raw, &e); err != nil || e.Error == "" {
		a.t.Errorf("%s %s as %q: reply %s is not a JSON error", method, path, user, raw)
	}
	if got != status {
		a.t.Errorf("%s %s as %q: status %d, want %d; reply %s", method, path, user, got, status, raw)
	}
}

func (a *api) publish(sender string, req map[string]any) publishBody {
	a.t.Helper()
	var out publishBody
	a.call("POST", "/messages", sender, req, http.StatusCreated, &out)
	return out
}

func (a *api) broadcast(sender string, req map[string]any) publishBody {
	a.t.Helper()
	var out publishBody
	a.call("POST", "/broadcasts", sender, req, http.StatusCreated, &out)
	return out
}

// listAll pages through user's feed with query q (limit, filters) and
// returns the titles in order, checking each page's size.
func (a *api) listAll(user string, q url.Values, limit int) (titles []string, pages int) {
	a.t.Helper()
	q.Set("limit", strconv.Itoa(limit))
	for {
		var page pageBody
		a.call("GET", "/messages?"+q.Encode(), user, nil, http.StatusOK, &page)
		pages++
		if len(page.Messages) > limit {
			a.t.Fatalf("page %d holds %d messages, limit %d", pages, len(page.Messages), limit)
		}
		for _, m := range page.Messages {
			titles = append(titles, m.Title)
		}
		if page.Cursor == "" {
			return titles, pages
		}
		if pages > 50 {
			a.t.Fatal("paging does not end")
		}
		q.Set("cursor", page.Cursor)
	}
}

// mutedByTitle returns whether each message of user's first page is
// muted, by title.
func (a *api) mutedByTitle(user string) map[string]bool {
	a.t.Helper()
	var page pageBody
	a.call("GET", "/messages", user, nil, http.StatusOK, &page)
	muted := map[string]bool{}
	for _, m := range page.Messages {
		muted[m.Title] = m.Muted
	}
	return muted
}

// counts returns user's counts.
func (a *api) counts(user string) countsBody {
	a.t.Helper()
	var c countsBody
	a.call("GET", "/counts", user, nil, http.StatusOK, &c)
	return c
}

// category returns a category's counts as GET /counts shows them,
// nothing archived or muted.
func category(total, read, unread, unseen int64) categoryBody {
	return categoryBody{tallyBody: tallyBody{Total: total, Read: read, Unread: unread}, Unseen: unseen}
}

// seed publishes, a minute apart, the messages the flow tests read:
// ann gets all seven, bob four.
func seed(a *api) map[string]string {
	ids := map[string]string{}
	steps := []struct {
		broadcast bool
		req       map[string]any
	}{
		{false, map[string]any{"users": []string{"ann", "bob"}, "category": "billing", "title": "invoice 1"}},
		{true, map[string]any{"category": "news", "title": "maintenance"}},
		{false, map[string]any{"users": []string{"ann"}, "category": "security", "title": "sign-in"}},
		{false, map[string]any{"users": []string{"ann", "bob"}, "category": "billing", "title": "invoice 2"}},
		{true, map[string]any{"title": "release notes", "label": "all staff"}},
		{false, map[string]any{
			"users": []string{"ann"}, "category": "security", "title": "password changed",
			"host_system_id": "pw-1", "body": map[string]any{"ip": "10.0.0.1", "attempts": 2},
			"cta_uri": "https://example.com/security",
		}},
		{false, map[string]any{"users": []string{"ann"}, "title": "hello", "body": "plain text"}},
	}
	for _, s := range steps {
		var out publishBody
		if s.broadcast {
			out = a.broadcast("ops", s.req)
		} else {
			out = a.publish("ops", s.req)
			if got, want := out.Delivered, s.req["users"].([]string); !cmp.Equal(got, want) {
				a.t.Errorf("publish %q delivered to %v, want %v", s.req["title"], got, want)
			}
		}
		ids[out.Message.Title] = out.Message.ID
		a.clock.Advance(time.Minute)
	}
	return ids
}

func TestFlow(t *testing.T) { testFlow(t, newMemAPI(t)) }

// testFlow publishes, lists, reads and counts through the API on a's
// store, with a's clock at a.start.
func testFlow(t *testing.T, a *api) {
	ids := seed(a)
	allAnn := []string{"hello", "password changed", "release notes", "invoice 2", "sign-in", "maintenance", "invoice 1"}

	// A retry with the same host_system_id delivers nothing new.
	pwChanged := map[string]any{
		"users": []string{"ann"}, "category": "security", "title": "password changed",
		"host_system_id": "pw-1", "body": map[string]any{"ip": "10.0.0.1", "attempts": 2},
		"cta_uri": "https://example.com/security",
	}
	retry := a.publish("ops", pwChanged)
	if retry.Message.ID != ids["password changed"] || len(retry.Delivered) != 0 || !cmp.Equal(retry.Duplicates, []string{"ann"}) {
		t.Errorf("retry: id %s delivered %v duplicates %v; want id %s, nothing delivered, duplicate ann", retry.Message.ID, retry.Delivered, retry.Duplicates, ids["password changed"])
	}
	// The same host_system_id for another message is a conflict.
	pwChanged["title"] = "password reset"
	a.wantError("POST", "/messages", "ops", pwChanged, http.StatusConflict)

	// The merged feed, paged three at a time.
	titles, pages := a.listAll("ann", url.Values{}, 3)
	if diff := cmp.Diff(allAnn, titles); diff != "" {
		t.Errorf("ann's feed (-want +got):\n%s", diff)
	}
	if pages < 3 {
		t.Errorf("7 messages came in %d pages of at most 3", pages)
	}
	bobTitles, _ := a.listAll("bob", url.Values{}, 10)
	if diff := cmp.Diff([]string{"release notes", "invoice 2", "maintenance", "invoice 1"}, bobTitles); diff != "" {
		t.Errorf("bob's feed (-want +got):\n%s", diff)
	}

	// What a message looks like on the wire.
	var page pageBody
	a.call("GET", "/messages?limit=2", "ann", nil, http.StatusOK, &page)
	pw := page.Messages[1]
	wantPW := messageBody{
		ID: ids["password changed"], HostSystemID: "pw-1", Sender: "ops", Category: "security",
		Title: "password changed", Body: map[string]any{"ip": "10.0.0.1", "attempts": float64(2)},
		CTAURI: "https://example.com/security", ReceivedAt: a.start.Add(5 * time.Minute), DeliveredAt: a.start.Add(5 * time.Minute),
		ExpiresAt: a.start.Add(5*time.Minute + inbox.DefaultTTL),
	}
	if diff := cmp.Diff(wantPW, pw); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	_, raw := a.do("GET", "/messages?limit=1", "ann", nil)
	for _, field := range []string{`"id":`, `"broadcast":false`, `"read":false`, `"title":"hello"`, `"body":"plain text"`, `"delivered_at":"` + a.start.Add(6*time.Minute).Format(time.RFC3339) + `"`} {
		if !strings.Contains(string(raw), field) {
			t.Errorf("reply %s lacks %s", raw, field)
		}
	}
	if strings.Contains(string(raw), "read_at") {
		t.Errorf("unread message has read_at: %s", raw)
	}

	// Read one direct message and one broadcast; again changes nothing.
	readAt := a.clock.Now()
	for _, title := range []string{"invoice 2", "maintenance"} {
		var mr changedBody
		a.call("POST", "/messages/"+ids[title]+"/read", "ann", nil, http.StatusOK, &mr)
		if !mr.Changed {
			t.Errorf("first read of %q: changed false", title)
		}
		a.call("POST", "/messages/"+ids[title]+"/read", "ann", nil, http.StatusOK, &mr)
		if mr.Changed {
			t.Errorf("second read of %q: changed true", title)
		}
	}
	a.clock.Advance(time.Minute)

	var news pageBody
	a.call("GET", "/messages?category=news", "ann", nil, http.StatusOK, &news)
	if len(news.Messages) != 1 || news.Cursor != "" {
		t.Fatalf("ann's news: %+v, want the maintenance broadcast only", news)
	}
	if m := news.Messages[0]; !m.Broadcast || !m.Read || !m.ReadAt.Equal(readAt) || m.Title != "maintenance" {
		t.Errorf("read broadcast: %+v, want broadcast maintenance read at %v", m, readAt)
	}
	// Bob's copy of the broadcast is still unread: receipts are per user.
	a.call("GET", "/messages?category=news", "bob", nil, http.StatusOK, &news)
	if len(news.Messages) != 1 || news.Messages[0].Read {
		t.Errorf("bob's news: %+v, want maintenance unread", news.Messages)
	}

	unread, _ := a.listAll("ann", url.Values{"unread": {"true"}}, 2)
	if diff := cmp.Diff([]string{"hello", "password changed", "release notes", "sign-in", "invoice 1"}, unread); diff != "" {
		t.Errorf("ann's unread (-want +got):\n%s", diff)
	}
	secUnread, _ := a.listAll("ann", url.Values{"unread": {"true"}, "category": {"security"}}, 1)
	if diff := cmp.Diff([]string{"password changed", "sign-in"}, secUnread); diff != "" {
		t.Errorf("ann's unread security (-want +got):\n%s", diff)
	}

	// ann and bob have no seen watermark: everything unread is unseen.
	wantAnn := countsBody{tallyBody: tallyBody{Total: 7, Read: 2, Unread: 5}, Unseen: 5, Categories: map[string]categoryBody{
		"billing": category(2, 1, 1, 1), "news": category(1, 1, 0, 0), "security": category(2, 0, 2, 2),
	}}
	if diff := cmp.Diff(wantAnn, a.counts("ann"), cmp.AllowUnexported(countsBody{}, categoryBody{})); diff != "" {
		t.Errorf("ann's counts (-want +got):\n%s", diff)
	}
	wantBob := countsBody{tallyBody: tallyBody{Total: 4, Read: 0, Unread: 4}, Unseen: 4, Categories: map[string]categoryBody{
		"billing": category(2, 0, 2, 2), "news": category(1, 0, 1, 1),
	}}
	if diff := cmp.Diff(wantBob, a.counts("bob"), cmp.AllowUnexported(countsBody{}, categoryBody{})); diff != "" {
		t.Errorf("bob's counts (-want +got):\n%s", diff)
	}

	var all markAllReadBody
	a.call("POST", "/messages/read-all", "ann", nil, http.StatusOK, &all)
	if all.Marked != 5 {
		t.Errorf("read-all marked %d, want 5", all.Marked)
	}
	a.call("POST", "/messages/read-all", "ann", nil, http.StatusOK, &all)
	if all.Marked != 0 {
		t.Errorf("second read-all marked %d, want 0", all.Marked)
	}
	if left, _ := a.listAll("ann", url.Values{"unread": {"true"}}, 5); len(left) != 0 {
		t.Errorf("unread after read-all: %v", left)
	}
	wantAnn = countsBody{tallyBody: tallyBody{Total: 7, Read: 7, Unread: 0}, Categories: map[string]categoryBody{
		"billing": category(2, 2, 0, 0), "news": category(1, 1, 0, 0), "security": category(2, 2, 0, 0),
	}}
	if diff := cmp.Diff(wantAnn, a.counts("ann"), cmp.AllowUnexported(countsBody{}, categoryBody{})); diff != "" {
		t.Errorf("ann's counts after read-all (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantBob, a.counts("bob"), cmp.AllowUnexported(countsBody{}, categoryBody{})); diff != "" {
		t.Errorf("bob's counts after ann's read-all (-want +got):\n%s", diff)
	}
}

func TestMessageTTL(t *testing.T) {
	a := newMemAPI(t)
	a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "short", "ttl": "2m"})
	a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "long"})
	if got, _ := a.listAll("ann", url.Values{}, 10); !cmp.Equal(got, []string{"long", "short"}) {
		t.Fatalf("feed %v, want long, short", got)
	}
	a.clock.Advance(2 * time.Minute)
	if got, _ := a.listAll("ann", url.Values{}, 10); !cmp.Equal(got, []string{"long"}) {
		t.Errorf("feed after 2m: %v, want long only", got)
	}
	if c := a.counts("ann"); c.Total != 1 || c.Unread != 1 {
		t.Errorf("counts after expiry: %+v, want total 1, unread 1", c.tallyBody)
	}
}

func TestErrors(t *testing.T) {
	a := newMemAPI(t)
	ids := seed(a)

	for _, ep := range []struct{ method, path string }{
		{"GET", "/messages"}, {"POST", "/messages"}, {"POST", "/broadcasts"},
		{"POST", "/messages/" + ids["hello"] + "/read"}, {"POST", "/messages/read-all"}, {"GET", "/counts"},
		{"POST", "/messages/" + ids["hello"] + "/archive"}, {"POST", "/messages/" + ids["hello"] + "/unarchive"},
		{"DELETE", "/messages/" + ids["hello"]}, {"POST", "/seen"}, {"POST", "/redactions"}, {"GET", "/events"},
	} {
		a.wantError(ep.method, ep.path, "", nil, http.StatusUnauthorized)
		a.wantError(ep.method, ep.path, "a#b", nil, http.StatusBadRequest)
	}
	a.wantError("GET", "/counts", "$public", nil, http.StatusBadRequest)
	// The operator's endpoints refuse anyone else, and change nothing.
	before := a.counts("ann")
	a.wantError("POST", "/redactions", "ann", map[string]any{"id": ids["hello"], "users": []string{"ann"}}, http.StatusForbidden)
	a.wantError("GET", "/scheduled", "ann", nil, http.StatusForbidden)
	if after := a.counts("ann"); after.Total != before.Total {
		t.Errorf("a refused redaction changed ann's total from %d to %d", before.Total, after.Total)
	}

	var first pageBody
	a.call("GET", "/messages?limit=2", "ann", nil, http.StatusOK, &first)
	cur := url.QueryEscape(first.Cursor)
	a.wantError("GET", "/messages?cursor=garbage", "ann", nil, http.StatusBadRequest)
	a.wantError("GET", "/messages?limit=2&cursor="+cur, "bob", nil, http.StatusBadRequest)             // another user's
	a.wantError("GET", "/messages?limit=2&unread=true&cursor="+cur, "ann", nil, http.StatusBadRequest) // another filter
	a.call("GET", "/messages?limit=2&cursor="+cur, "ann", nil, http.StatusOK, nil)
	a.wantError("GET", "/messages?limit=abc", "ann", nil, http.StatusBadRequest)
	a.wantError("GET", "/messages?limit=101", "ann", nil, http.StatusBadRequest)
	a.wantError("GET", "/messages?unread=maybe", "ann", nil, http.StatusBadRequest)
	a.wantError("GET", "/messages?category=a%23b", "ann", nil, http.StatusBadRequest)

	a.wantError("POST", "/messages/01ARZ3NDEKTSV4RRFFQ69G5FAV/read", "ann", nil, http.StatusNotFound)
	a.wantError("POST", "/messages/"+ids["sign-in"]+"/read", "bob", nil, http.StatusNotFound) // ann's, not bob's
	a.wantError("POST", "/messages/not-an-id/read", "ann", nil, http.StatusBadRequest)

	a.wantError("POST", "/messages", "ops", map[string]any{"users": []string{"carol", "bad#user"}, "title": "x"}, http.StatusBadRequest)
	a.wantError("POST", "/messages", "ops", map[string]any{"users": []string{}, "title": "x"}, http.StatusBadRequest)
	a.wantError("POST", "/messages", "ops", map[string]any{"users": []string{"carol"}, "title": "x", "ttl": "5x"}, http.StatusBadRequest)
	a.wantError("POST", "/messages", "ops", map[string]any{"users": []string{"carol"}, "title": "x", "category": "*"}, http.StatusBadRequest)
	a.wantError("POST", "/messages", "ops", map[string]any{"users": []string{"carol"}, "tilte": "typo"}, http.StatusBadRequest)
	a.wantError("POST", "/messages", "ops", []byte(`{"users": ["carol"],`), http.StatusBadRequest)
	a.wantError("POST", "/messages", "ops", []byte(`{"users": ["carol"]} {}`), http.StatusBadRequest)
	a.wantError("POST", "/broadcasts", "ops", map[string]any{"title": "x", "ttl": "-1d"}, http.StatusBadRequest)
	// Over DynamoDB's item limit, and over the request limit.
	a.wantError("POST", "/messages", "ops", map[string]any{"users": []string{"carol"}, "title": strings.Repeat("x", inbox.MaxItemSize)}, http.StatusRequestEntityTooLarge)
	padded := []byte(`{"title": "small"` + strings.Repeat(" ", maxRequestBody) + `}`)
	a.wantError("POST", "/broadcasts", "ops", padded, http.StatusRequestEntityTooLarge)
	// None of the refused publishes wrote anything.
	if c := a.counts("carol"); c.Total != 2 {
		t.Errorf("carol's total %d, want 2 (the broadcasts)", c.Total)
	}
}

// failingStore is a store whose reads fail, as when DynamoDB is
// unreachable.
type failingStore struct {
	inbox.Store
	err error
}

func (s failingStore) Query(context.Context, driver.Query) (driver.QueryResult, error) {
	return driver.QueryResult{}, s.err
}

func (s failingStore) Stats(context.Context, driver.StatsQuery) (driver.Stats, error) {
	return driver.Stats{}, s.err
}

func TestStoreFailureIs500(t *testing.T) {
	secret := errors.New("dial tcp 10.1.2.3:443: connection refused")
	a := newAPI(t, inbox.New(failingStore{Store: memstore.New(), err: secret}), nil)
	for _, path := range []string{"/messages", "/counts"} {
		status, raw := a.do("GET", path, "ann", nil)
		if status != http.StatusInternalServerError {
			t.Errorf("GET %s: status %d, want 500", path, status)
		}
		if strings.Contains(string(raw), "10.1.2.3") {
			t.Errorf("GET %s: reply leaks the cause: %s", path, raw)
		}
	}
}

// markStore is a store whose marks fail with err.
type markStore struct {
	inbox.Store
	err error
}

func (s markStore) Mark(context.Context, []driver.Mark, []driver.Counter) error { return s.err }

// TestRetryableErrorsAre503: a failure that a retry may well not meet
// again is 503 with a Retry-After, not 500 or 409: the table's throttling
// (ErrThrottled), a write whose outcome is unknown (ErrOutcomeUnknown: a
// mark is safe to retry) and a mark that lost every race to other writers
// (ErrConflict of contention). 409 stays for a host_system_id reused for
// another message (TestFlow), which no retry fixes.
func TestRetryableErrorsAre503(t *testing.T) {
	for name, err := range map[string]error{
		"throttled":  fmt.Errorf("dynamo: mark: %w", driver.ErrThrottled),
		"unknown":    errors.New("read tcp 10.1.2.3:443: connection reset by peer"),
		"contention": fmt.Errorf("dynamo: mark: %w", driver.ErrStateChanged),
	} {
		t.Run(name, func(t *testing.T) {
			mem := memstore.New()
			res, perr := inbox.New(mem).Publish(context.Background(), testScope, []string{"ann"}, inbox.Draft{Title: "hi"})
			if perr != nil {
				t.Fatal(perr)
			}
			a := newAPI(t, inbox.New(markStore{Store: mem, err: err}), nil)
			req, _ := http.NewRequest("POST", a.srv.URL+"/messages/"+res.Message.ID+"/read", nil)
			setUser(req, "ann")
			resp, rerr := a.srv.Client().Do(req)
			if rerr != nil {
				t.Fatal(rerr)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				t.Errorf("status %d, Retry-After %q, want 503 with a Retry-After; reply %s", resp.StatusCode, resp.Header.Get("Retry-After"), raw)
			}
			if strings.Contains(string(raw), "10.1.2.3") {
				t.Errorf("reply leaks the cause: %s", raw)
			}
		})
	}
}

// TestIgnoredParametersRefused: a query parameter that an endpoint would
// ignore is bad input, not a silent no-op: a bulk action acts on its
// whole view, so delete-all?limit=1 must not delete every message; the
// chat list and the scheduled list take no feed filters.
func TestIgnoredParametersRefused(t *testing.T) {
	a := newMemAPI(t)
	for _, title := range []string{"one", "two", "three"} {
		a.publish("ops", map[string]any{"users": []string{"ann"}, "title": title, "category": "news"})
	}
	for _, path := range []string{
		"/messages/delete-all?limit=1", "/messages/archive-all?limit=1", "/messages/read-all?limit=1",
		"/messages/read-all?cursor=abc", "/messages/delete-all?category=news&limit=2",
	} {
		a.wantError("POST", path, "ann", nil, http.StatusBadRequest)
	}
	if c := a.counts("ann"); c.Total != 3 || c.Unread != 3 || c.Archived != 0 {
		t.Errorf("ann's counts after refused bulk actions: %+v, want 3 unread, none archived", c.tallyBody)
	}
	for _, path := range []string{"/threads?unread=true", "/threads?category=news", "/threads?thread=ann-bob", "/scheduled?category=news", "/scheduled?archived=true"} {
		user := "ann"
		if strings.HasPrefix(path, "/scheduled") {
			user = "!ann" // an operator's endpoint
		}
		a.wantError("GET", path, user, nil, http.StatusBadRequest)
	}
}

// TestUnroutedRequestsAreJSON: a path the API does not serve is 404, and
// a method a path does not take 405 with its Allow header, each a JSON
// error like every other error.
func TestUnroutedRequestsAreJSON(t *testing.T) {
	a := newMemAPI(t)
	a.wantError("GET", "/nope", "ann", nil, http.StatusNotFound)
	a.wantError("GET", "/messages/01ARZ3NDEKTSV4RRFFQ69G5FAV/nope", "ann", nil, http.StatusNotFound)
	a.wantError("PATCH", "/messages", "ann", nil, http.StatusMethodNotAllowed)
	a.wantError("GET", "/messages/01ARZ3NDEKTSV4RRFFQ69G5FAV", "ann", nil, http.StatusMethodNotAllowed)
	req, _ := http.NewRequest("PUT", a.srv.URL+"/counts", nil)
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if allow := resp.Header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Errorf("PUT /counts: Allow %q, want GET", allow)
	}
	a.call("GET", "/counts", "ann", nil, http.StatusOK, nil)
}

// TestBodyNumbersExact: a body's number comes back as it was sent, or
// the publish is refused (the library's rule, inbox.Draft.Body): one with
// no exact float64, an order ID past 2^53 say, is 400, not stored
// rounded.
func TestBodyNumbersExact(t *testing.T) {
	a := newMemAPI(t)
	a.wantError("POST", "/messages", "ops", []byte(`{"users": ["ann"], "title": "order", "body": {"order": 9007199254740993}}`), http.StatusBadRequest)
	a.wantError("POST", "/broadcasts", "ops", []byte(`{"title": "order", "body": [0.1000000000000000000001]}`), http.StatusBadRequest)
	if c := a.counts("ann"); c.Total != 0 {
		t.Errorf("ann's total %d, want 0: nothing stored", c.Total)
	}
	sent := `{"big":1e+100,"n":-3,"order":9007199254740992,"price":0.25}`
	out := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "exact", "body": json.RawMessage(sent)})
	if got, _ := json.Marshal(out.Message.Body); string(got) != sent {
		t.Errorf("body came back %s, want %s", got, sent)
	}
}

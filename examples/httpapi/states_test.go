package main

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestStates: seen, archive, unarchive, delete, mark all read of a view,
// and redaction, through the API on the in-memory store.
func TestStates(t *testing.T) {
	a := newMemAPI(t)
	bill := a.publish("ops", map[string]any{"users": []string{"ann", "bob"}, "title": "bill", "category": "billing"}).Message.ID
	news := a.broadcast("ops", map[string]any{"title": "news", "category": "news"}).Message.ID
	a.clock.Advance(time.Second)
	var ch changedBody
	a.call("POST", "/seen", "ann", nil, http.StatusOK, &ch)
	if !ch.Changed {
		t.Error("POST /seen changed nothing")
	}
	a.clock.Advance(time.Second)
	later := a.publish("ops", map[string]any{"users": []string{"ann"}, "title": "later", "category": "billing"}).Message.ID
	if c := a.counts("ann"); c.Unseen != 1 || c.Unread != 3 {
		t.Errorf("after seen and one more message: %+v, want 3 unread, 1 unseen", c)
	}

	for _, step := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/messages/" + news + "/archive", true},
		{"POST", "/messages/" + news + "/archive", false},
		{"POST", "/messages/" + bill + "/read", true},
		{"POST", "/messages/" + bill + "/archive", true},
		{"POST", "/messages/" + bill + "/unarchive", true},
		{"DELETE", "/messages/" + bill, true},
		{"DELETE", "/messages/" + bill, false},
	} {
		var got changedBody
		a.call(step.method, step.path, "ann", nil, http.StatusOK, &got)
		if got.Changed != step.want {
			t.Errorf("%s %s: changed %v, want %v", step.method, step.path, got.Changed, step.want)
		}
	}
	titles, _ := a.listAll("ann", url.Values{"archived": {"true"}}, 10)
	if diff := cmp.Diff([]string{"news"}, titles); diff != "" {
		t.Errorf("archived (-want +got):\n%s", diff)
	}
	if c := a.counts("ann"); c.Total != 1 || c.Archived != 1 || c.Unread != 1 {
		t.Errorf("ann's counts %+v, want 1 unread, 1 archived", c)
	}
	if c := a.counts("bob"); c.Total != 2 {
		t.Errorf("bob's counts %+v: ann's delete touched them", c)
	}

	// Mark all read of a view: the archived ones, up to an ID.
	var marked markAllReadBody
	a.call("POST", "/messages/read-all?archived=true&upto="+news, "ann", nil, http.StatusOK, &marked)
	if marked.Marked != 1 {
		t.Errorf("read-all of the archived view marked %d, want 1", marked.Marked)
	}
	a.call("POST", "/messages/read-all?category=billing&upto="+bill, "ann", nil, http.StatusOK, &marked)
	if marked.Marked != 0 {
		t.Errorf("read-all of billing up to the deleted bill marked %d, want 0 (later is above)", marked.Marked)
	}

	// An operator redacts the later message.
	var red redactedBody
	a.call("POST", "/redactions", "!ops", map[string]any{"id": later, "users": []string{"ann"}}, http.StatusOK, &red)
	if red.Removed != 1 {
		t.Errorf("redaction removed %d, want 1", red.Removed)
	}
	if c := a.counts("ann"); c.Total != 0 || c.Archived != 1 {
		t.Errorf("ann's counts after the redaction %+v, want nothing but 1 archived", c)
	}

	for _, bad := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"POST", "/messages/nope/archive", nil, http.StatusBadRequest},
		{"POST", "/messages/01ARZ3NDEKTSV4RRFFQ69G5FAV/unarchive", nil, http.StatusNotFound},
		{"DELETE", "/messages/x", nil, http.StatusBadRequest},
		{"POST", "/messages/read-all?upto=yesterday", nil, http.StatusBadRequest},
		{"POST", "/messages/read-all?archived=maybe", nil, http.StatusBadRequest},
		{"GET", "/messages?upto=x", nil, http.StatusBadRequest},
		{"POST", "/redactions", map[string]any{"id": later}, http.StatusBadRequest},
		{"POST", "/redactions", map[string]any{"id": later, "group": "a#b"}, http.StatusBadRequest},
		{"POST", "/redactions", map[string]any{"idd": later}, http.StatusBadRequest},
	} {
		user := "ann"
		if bad.path == "/redactions" {
			user = "!ann" // an operator's endpoint
		}
		a.wantError(bad.method, bad.path, user, bad.body, bad.status)
	}
}

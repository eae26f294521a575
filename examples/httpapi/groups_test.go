package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGroups: a broadcast to a group reaches the users whose X-Groups
// name it, in List and Counts, and is marked read per user; groups are
// validated like every key.
func TestGroups(t *testing.T) {
	a := newMemAPI(t)
	a.publish("ops", map[string]any{"users": []string{"ann", "bob"}, "title": "direct", "category": "billing"})
	out := a.broadcast("ops", map[string]any{"group": "admins", "title": "deploy at 5", "category": "ops", "label": "Admins"})
	if !out.Message.Broadcast || out.Message.Group != "admins" {
		t.Errorf("group broadcast on the wire: broadcast %v group %q, want true, admins", out.Message.Broadcast, out.Message.Group)
	}
	a.broadcast("ops", map[string]any{"title": "to everyone"})

	annTitles, _ := a.listAll("ann|admins", url.Values{}, 2)
	if diff := cmp.Diff([]string{"to everyone", "deploy at 5", "direct"}, annTitles); diff != "" {
		t.Errorf("ann in admins (-want +got):\n%s", diff)
	}
	bobTitles, _ := a.listAll("bob|eu", url.Values{}, 10)
	if diff := cmp.Diff([]string{"to everyone", "direct"}, bobTitles); diff != "" {
		t.Errorf("bob, not in admins (-want +got):\n%s", diff)
	}
	if c := a.counts("ann|admins"); c.Total != 3 || c.Unread != 3 || c.Categories["ops"].Unread != 1 {
		t.Errorf("ann's counts %+v, want 3 unread, 1 in ops", c)
	}
	var mr changedBody
	a.call("POST", "/messages/"+out.Message.ID+"/read", "ann|admins", nil, http.StatusOK, &mr)
	if !mr.Changed {
		t.Error("marking the group message read changed nothing")
	}
	a.wantError("POST", "/messages/"+out.Message.ID+"/read", "bob|eu", nil, http.StatusNotFound)
	if c := a.counts("ann|admins"); c.Unread != 2 || c.Categories["ops"].Read != 1 {
		t.Errorf("ann's counts after the read %+v, want 2 unread, 1 read in ops", c)
	}
	// Leaving the group takes its message and its read out of ann's counts.
	if c := a.counts("ann"); c.Total != 2 || c.Read != 0 || c.Unread != 2 {
		t.Errorf("ann out of admins: counts %+v, want 2 unread", c)
	}

	many := strings.Repeat("g,", 16) + "g16"
	for name, c := range map[string]struct {
		method, path, user string
		body               any
	}{
		"group with #":       {"GET", "/counts", "ann|a#b", nil},
		"empty group":        {"GET", "/messages", "ann|admins,", nil},
		"17 groups":          {"GET", "/counts", "ann|" + many, nil},
		"broadcast to a*":    {"POST", "/broadcasts", "ops", map[string]any{"group": "a*", "title": "x"}},
		"broadcast to a#b":   {"POST", "/broadcasts", "ops", map[string]any{"group": "a#b", "title": "x"}},
		"events for a group": {"GET", "/events", "ann|a?", nil},
	} {
		t.Run(name, func(t *testing.T) { a.wantError(c.method, c.path, c.user, c.body, http.StatusBadRequest) })
	}
}

// TestGroupsHeaderList: X-Groups is a comma-separated list as HTTP writes
// lists, spaces allowed after the commas: "admins, eu" names eu, not a
// group " eu".
func TestGroupsHeaderList(t *testing.T) {
	a := newMemAPI(t)
	a.broadcast("ops", map[string]any{"group": "eu", "title": "eu maintenance"})
	a.broadcast("ops", map[string]any{"group": "admins", "title": "deploy at 5"})
	titles, _ := a.listAll("ann|admins, eu", url.Values{}, 10)
	if diff := cmp.Diff([]string{"deploy at 5", "eu maintenance"}, titles); diff != "" {
		t.Errorf("ann in admins and eu (-want +got):\n%s", diff)
	}
	if c := a.counts("ann|admins , eu"); c.Unread != 2 {
		t.Errorf("ann's unread %d, want 2", c.Unread)
	}
}

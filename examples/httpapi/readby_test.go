package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// readBy returns who has read each message of user's chat thread, by
// message ID, as GET /messages with readby answers it (members, if any,
// comma-separated).
func (a *api) readBy(user, thread, members string) map[string][]readerBody {
	a.t.Helper()
	path := "/messages?readby=true&thread=" + thread
	if members != "" {
		path += "&members=" + members
	}
	var page pageBody
	a.call("GET", path, user, nil, http.StatusOK, &page)
	out := map[string][]readerBody{}
	for _, m := range page.Messages {
		if m.ReadBy == nil {
			a.t.Fatalf("GET %s as %s: message %s has no read_by", path, user, m.ID)
		}
		out[m.Title] = m.ReadBy
	}
	return out
}

// TestReadByAPI: GET /messages of a chat with readby=true gives each
// message its readers (the sender left out): a one-to-one chat's from the
// members named (their copies), a group chat's from every member's read,
// or those named. Without readby no read_by is sent; bad input is 400.
func TestReadByAPI(t *testing.T) {
	a := newMemAPI(t)
	a.publish("ann", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "lunch?"})
	a.clock.Advance(time.Minute)
	hi := a.publish("bob", map[string]any{"users": []string{"ann", "bob"}, "thread": "ann-bob", "title": "hi ann"}).Message.ID
	standup := a.broadcast("ann", map[string]any{"group": "team", "thread": "team", "title": "standup"}).Message.ID

	none := []readerBody{}
	if diff := cmp.Diff(map[string][]readerBody{"lunch?": none, "hi ann": none}, a.readBy("ann", "ann-bob", "ann,bob")); diff != "" {
		t.Errorf("the chat before bob reads (-want +got):\n%s", diff)
	}
	a.clock.Advance(time.Minute)
	bobRead := a.clock.Now()
	a.call("POST", "/messages/read-all?thread=ann-bob", "bob", nil, http.StatusOK, nil)
	a.clock.Advance(time.Minute)
	annRead := a.clock.Now()
	a.call("POST", "/messages/"+hi+"/read", "ann", nil, http.StatusOK, nil)
	want := map[string][]readerBody{"lunch?": {{"bob", bobRead}}, "hi ann": {{"ann", annRead}}}
	if diff := cmp.Diff(want, a.readBy("ann", "ann-bob", "bob")); diff != "" {
		t.Errorf("the chat after both read, bob named (-want +got):\n%s", diff)
	}
	// A one-to-one chat's other user is read by her copy: unnamed, she is
	// not asked.
	want["lunch?"] = none
	if diff := cmp.Diff(want, a.readBy("ann", "ann-bob", "")); diff != "" {
		t.Errorf("the chat, no members named (-want +got):\n%s", diff)
	}

	a.clock.Advance(time.Minute)
	teamRead := a.clock.Now()
	a.call("POST", "/messages/"+standup+"/read", "bob|team", nil, http.StatusOK, nil)
	a.call("POST", "/messages/read-all?thread=team", "carol|team", nil, http.StatusOK, nil)
	if diff := cmp.Diff(map[string][]readerBody{"standup": {{"bob", teamRead}, {"carol", teamRead}}}, a.readBy("ann|team", "team", "")); diff != "" {
		t.Errorf("the group chat (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]readerBody{"standup": {{"bob", teamRead}}}, a.readBy("ann|team", "team", "ann,bob")); diff != "" {
		t.Errorf("the group chat, ann and bob named (-want +got):\n%s", diff)
	}

	if status, raw := a.do("GET", "/messages?thread=team", "ann|team", nil); status != http.StatusOK || bytes.Contains(raw, []byte("read_by")) {
		t.Errorf("GET /messages without readby: status %d, reply %s; want 200 without read_by", status, raw)
	}
	for _, q := range []string{
		"readby=true",                          // no thread
		"readby=true&category=news",            // no thread
		"thread=team&members=bob",              // members without readby
		"thread=team&readby=false&members=bob", // members without readby
		"thread=team&readby=maybe",
		"thread=team&readby=true&members=bob,,carol",
		"thread=team&readby=true&members=b%23ob",
		"thread=team&readby=true&members=" + strings.Repeat("u,", 100) + "u",
	} {
		a.wantError("GET", "/messages?"+q, "ann|team", nil, http.StatusBadRequest)
	}
}

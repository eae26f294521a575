package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// TestScheduledAndDue: publish --deliver-at schedules a message, and
// broadcast --deliver-at a broadcast or group message; scheduled lists
// each copy with its user and each broadcast or group message once with
// its audience, until they are due, in JSON and in a table, a page at a
// time; due lists them once due, for a window; bad windows, limits and
// cursors are usage errors; a table without the scheduled index is a
// runtime error naming it.
func TestScheduledAndDue(t *testing.T) {
	f := newFixture(t)
	scope := []string{"--tenant", "acme", "--inbox", "alerts"}
	start := time.Now().UTC().Truncate(time.Second)
	// After the publishes and the listings below, on a loaded machine too:
	// make test runs this beside the other modules' tests, and 3 s once
	// passed before the first listing.
	at := start.Add(10 * time.Second)
	var pub publishJSON
	cli(t, with(f.g, append([]string{"publish", "--user", "bob", "--user", "ann", "--title", "Standup", "--category", "ops",
		"--deliver-at", at.Format(time.RFC3339)}, scope...)...)...).ok(t).decode(t, &pub)
	if !pub.Message.DeliverAt.Equal(at) {
		t.Errorf("publish --deliver-at printed deliver_at %v, want %v", pub.Message.DeliverAt, at)
	}
	var group, all messageJSON
	cli(t, with(f.g, append([]string{"broadcast", "--group", "ops", "--title", "Deploy", "--deliver-at", at.Add(time.Second).Format(time.RFC3339)}, scope...)...)...).ok(t).decode(t, &group)
	cli(t, with(f.g, append([]string{"broadcast", "--title", "Drill", "--deliver-at", at.Add(2 * time.Second).Format(time.RFC3339)}, scope...)...)...).ok(t).decode(t, &all)
	f.publish(t, f.scope, []string{"ann"}, inbox.Draft{Title: "now"})
	// Whom each delivery goes to, and its message, in order: the copies,
	// then the group message and the broadcast, once each.
	want := []deliveryJSON{
		{User: "ann", Message: messageJSON{ID: pub.Message.ID}},
		{User: "bob", Message: messageJSON{ID: pub.Message.ID}},
		{Group: "ops", Message: messageJSON{ID: group.ID}},
		{Group: inbox.PublicGroup, Message: messageJSON{ID: all.ID}},
	}
	wantPage := func(what string, got []deliveryJSON, want []deliveryJSON) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s printed %+v; want %d deliveries", what, got, len(want))
			return
		}
		for i, d := range got {
			if d.User != want[i].User || d.Group != want[i].Group || d.Message.ID != want[i].Message.ID {
				t.Errorf("%s: delivery %d is %+v; want user %q, group %q, message %s", what, i, d, want[i].User, want[i].Group, want[i].Message.ID)
			}
		}
	}
	// list runs a command that prints a page of deliveries, and returns
	// the page.
	list := func(args ...string) deliveriesJSON {
		t.Helper()
		var page deliveriesJSON
		cli(t, with(f.g, append(args, scope...)...)...).ok(t).decode(t, &page)
		return page
	}

	page := list("scheduled", "--limit", "1")
	wantPage("scheduled --limit 1", page.Deliveries, want[:1])
	if page.NextCursor == "" {
		t.Fatalf("scheduled --limit 1 printed no cursor")
	}
	cursor := page.NextCursor
	rest := list("scheduled", "--cursor", page.NextCursor)
	wantPage("scheduled's next page", rest.Deliveries, want[1:])
	if rest.NextCursor != "" {
		t.Errorf("scheduled's next page is not the last: cursor %q", rest.NextCursor)
	}
	// One at a time, the cursors carry the group message's and the
	// broadcast's positions.
	var one []deliveryJSON
	for c, pages := "", 0; pages == 0 || c != ""; pages++ {
		if pages > len(want) {
			t.Fatalf("scheduled --limit 1: more than %d pages", len(want))
		}
		args := []string{"scheduled", "--limit", "1"}
		if c != "" {
			args = append(args, "--cursor", c)
		}
		page = list(args...)
		one, c = append(one, page.Deliveries...), page.NextCursor
	}
	wantPage("scheduled, a page of 1 at a time", one, want)
	r := cli(t, with(f.g, append([]string{"-o", "table", "scheduled"}, scope...)...)...).ok(t)
	for _, row := range [][]string{
		{at.Format(time.RFC3339), pub.Message.ID, "ann", "ops", "Standup"},
		{at.Format(time.RFC3339), pub.Message.ID, "bob", "ops", "Standup"},
		{at.Add(time.Second).Format(time.RFC3339), group.ID, "group:ops", "-", "Deploy"},
		{at.Add(2 * time.Second).Format(time.RFC3339), all.ID, "everyone", "-", "Drill"},
	} {
		if !hasRow(r.stdout, row...) {
			t.Errorf("scheduled -o table lacks the row %q:\n%s", row, r.stdout)
		}
	}

	time.Sleep(time.Until(at.Add(3 * time.Second)))
	page = list("scheduled")
	if len(page.Deliveries) != 0 {
		t.Errorf("scheduled after the delivery times printed %+v; want nothing", page)
	}
	page = list("due", "--from", start.Format(time.RFC3339))
	wantPage("due --from the start", page.Deliveries, want)
	if len(page.Deliveries) == len(want) && (page.Deliveries[1].Message.Title != "Standup" || page.Deliveries[3].Message.Audience != "everyone") {
		t.Errorf("due --from the start printed %+v; want the messages as published", page)
	}
	page = list("due", "--from", at.Add(time.Second).Format(time.RFC3339), "--to", at.Add(2*time.Second).Format(time.RFC3339))
	wantPage("due of the group message's second", page.Deliveries, want[2:3])
	page = list("due", "--from", start.Format(time.RFC3339), "--to", at.Format(time.RFC3339))
	if len(page.Deliveries) != 0 {
		t.Errorf("due of a window that ends at the delivery time printed %+v; want nothing", page)
	}
	r = cli(t, with(f.g, append([]string{"-o", "table", "due", "--from", start.Format(time.RFC3339)}, scope...)...)...).ok(t)
	if !hasRow(r.stdout, at.Add(2*time.Second).Format(time.RFC3339), all.ID, "everyone", "-", "Drill") {
		t.Errorf("due -o table lacks the broadcast:\n%s", r.stdout)
	}

	for name, args := range map[string][]string{
		"due without --from":               {"due"},
		"due with a bad --from":            {"due", "--from", "yesterday"},
		"due with --from after --to":       {"due", "--from", at.Format(time.RFC3339), "--to", start.Format(time.RFC3339)},
		"due from the future":              {"due", "--from", start.Add(time.Hour).Format(time.RFC3339), "--to", start.Add(2 * time.Hour).Format(time.RFC3339)},
		"scheduled with --limit 101":       {"scheduled", "--limit", "101"},
		"scheduled with a foreign cursor":  {"scheduled", "--cursor", "AQ"},
		"due with scheduled's cursor":      {"due", "--from", start.Format(time.RFC3339), "--cursor", cursor},
		"publish --deliver-at in the past": {"publish", "--user", "ann", "--title", "late", "--deliver-at", start.Add(-time.Hour).Format(time.RFC3339)},
	} {
		if r := cli(t, with(f.g, append(args, scope...)...)...); r.code != exitUsage {
			t.Errorf("%s: exit %d, stderr %q; want %d", name, r.code, r.stderr, exitUsage)
		}
	}
	// A table without the index: a runtime error that names the option,
	// whether or not --scheduled-index says so.
	bare, _ := ddblocal.NewTable(t, f.raw, dynamo.WithScheduledIndex(""))
	for _, g := range [][]string{local(t, bare), with(local(t, bare), "--scheduled-index", "")} {
		if r := cli(t, with(g, append([]string{"scheduled"}, scope...)...)...); r.code != exitError || !strings.Contains(r.stderr, "WithScheduledIndex") {
			t.Errorf("scheduled on a table without the index (%q): exit %d, stderr %q; want 1, naming the option", g[len(g)-1], r.code, r.stderr)
		}
	}
}

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// TestScheduledAndDue: publish --deliver-at schedules a message; scheduled
// lists its copies, each with its user, until they are due, in JSON and
// in a table, a page at a time; due lists them once due, for a window;
// bad windows, limits and cursors are usage errors; a table without the
// scheduled index is a runtime error naming it.
func TestScheduledAndDue(t *testing.T) {
	f := newFixture(t)
	scope := []string{"--tenant", "acme", "--inbox", "alerts"}
	start := time.Now().UTC().Truncate(time.Second)
	at := start.Add(3 * time.Second) // after the publish, on a loaded machine too
	var pub publishJSON
	cli(t, with(f.g, append([]string{"publish", "--user", "bob", "--user", "ann", "--title", "Standup", "--category", "ops",
		"--deliver-at", at.Format(time.RFC3339)}, scope...)...)...).ok(t).decode(t, &pub)
	if !pub.Message.DeliverAt.Equal(at) {
		t.Errorf("publish --deliver-at printed deliver_at %v, want %v", pub.Message.DeliverAt, at)
	}
	f.publish(t, f.scope, []string{"ann"}, inbox.Draft{Title: "now"})

	var page deliveriesJSON
	cli(t, with(f.g, append([]string{"scheduled", "--limit", "1"}, scope...)...)...).ok(t).decode(t, &page)
	if len(page.Deliveries) != 1 || page.Deliveries[0].User != "ann" || page.Deliveries[0].Message.ID != pub.Message.ID || page.NextCursor == "" {
		t.Fatalf("scheduled --limit 1 printed %+v; want ann's copy and a cursor", page)
	}
	cursor := page.NextCursor
	var rest deliveriesJSON
	cli(t, with(f.g, append([]string{"scheduled", "--cursor", page.NextCursor}, scope...)...)...).ok(t).decode(t, &rest)
	if len(rest.Deliveries) != 1 || rest.Deliveries[0].User != "bob" || rest.NextCursor != "" {
		t.Errorf("scheduled's next page printed %+v; want bob's copy, the last", rest)
	}
	r := cli(t, with(f.g, append([]string{"-o", "table", "scheduled"}, scope...)...)...).ok(t)
	for _, u := range []string{"ann", "bob"} {
		if !hasRow(r.stdout, at.Format(time.RFC3339), pub.Message.ID, u, "ops", "Standup") {
			t.Errorf("scheduled -o table lacks %s's copy:\n%s", u, r.stdout)
		}
	}

	time.Sleep(time.Until(at.Add(time.Second)))
	cli(t, with(f.g, append([]string{"scheduled"}, scope...)...)...).ok(t).decode(t, &page)
	if len(page.Deliveries) != 0 {
		t.Errorf("scheduled after the delivery time printed %+v; want nothing", page)
	}
	cli(t, with(f.g, append([]string{"due", "--from", start.Format(time.RFC3339)}, scope...)...)...).ok(t).decode(t, &page)
	if len(page.Deliveries) != 2 || page.Deliveries[0].User != "ann" || page.Deliveries[1].User != "bob" || page.Deliveries[1].Message.Title != "Standup" {
		t.Errorf("due --from the start printed %+v; want ann's and bob's copies", page)
	}
	cli(t, with(f.g, append([]string{"due", "--from", start.Format(time.RFC3339), "--to", at.Format(time.RFC3339)}, scope...)...)...).ok(t).decode(t, &page)
	if len(page.Deliveries) != 0 {
		t.Errorf("due of a window that ends at the delivery time printed %+v; want nothing", page)
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
	// A broadcast is scheduled too (stored once; not in the scheduled index).
	if r := cli(t, with(f.g, append([]string{"broadcast", "--title", "all", "--deliver-at", start.Add(time.Hour).Format(time.RFC3339)}, scope...)...)...); r.code != 0 {
		t.Errorf("broadcast --deliver-at: exit %d, stderr %q; want 0", r.code, r.stderr)
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

package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
)

// TestOperatorDay runs an operator's day against DynamoDB Local: settings
// and configs set and read back, an announcement published and broadcast
// (a retry delivering nothing twice), records read as stored, and messages
// redacted by ID and by host ID; the library sees each change.
func TestOperatorDay(t *testing.T) {
	f := newFixture(t)
	scope := []string{"--tenant", "acme", "--inbox", "alerts"}

	// Settings and config.
	var cfg configJSON
	cli(t, with(f.g, slices.Concat([]string{"config"}, scope)...)...).ok(t).decode(t, &cfg)
	if cfg.Tenant != nil || cfg.Inbox != nil {
		t.Errorf("config of a new inbox = %+v, want both null", cfg)
	}
	cli(t, with(f.g, "set-tenant", "--tenant", "acme", "--title", "Acme", "--ttl", "30d", "--by", "ops")...).ok(t)
	cli(t, with(f.g, slices.Concat([]string{"set-inbox"}, scope, []string{"--title", "Alerts", "--ttl", "ops=7d", "--ttl", inbox.DefaultTTLKey + "=14d", "--opt-out", "promo", "--mute", "devs"})...)...).ok(t)
	cli(t, with(f.g, slices.Concat([]string{"config"}, scope)...)...).ok(t).decode(t, &cfg)
	none := preferencesJSON{MutedGroups: []string{}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}}
	if cfg.Tenant == nil || !cmp.Equal(*cfg.Tenant, tenantJSON{Title: "Acme", TTL: "30d", UpdatedBy: "ops", Preferences: none}) ||
		!cmp.Equal(cfg.Inbox.Preferences, preferencesJSON{MutedGroups: []string{"devs"}, MutedCategories: []string{}, OptedOut: []string{"promo"}, MutedThreads: []string{}}) ||
		cfg.Inbox == nil || cfg.Inbox.Title != "Alerts" || cfg.Inbox.TTL["ops"] != "7d" || cfg.Inbox.TTL[inbox.DefaultTTLKey] != "14d" {
		t.Errorf("config after setting = %+v %+v", cfg.Tenant, cfg.Inbox)
	}
	c, err := f.ib.Config(t.Context(), f.scope)
	if err != nil || c.Inbox == nil || c.Inbox.TTL["ops"] != "7d" {
		t.Errorf("the library reads config %+v, %v", c, err)
	}
	if out := cli(t, with(f.g, slices.Concat([]string{"-o", "table", "config"}, scope)...)...).ok(t).stdout; !hasRow(out, "inbox", "ttl.ops", "7d") || !hasRow(out, "tenant", "title", "Acme") {
		t.Errorf("config -o table:\n%s", out)
	}
	if p, err := f.ib.Preferences(t.Context(), f.scope.User("zed")); err != nil || !slices.Equal(p.OptedOut, []string{"promo"}) || p.Own {
		t.Errorf("a user's preferences under the inbox's defaults = %+v, %v; want promo opted out, not her own", p, err)
	}
	if out := cli(t, with(f.g, slices.Concat([]string{"-o", "table", "config"}, scope)...)...).ok(t).stdout; !hasRow(out, "inbox", "preferences.opt_out", "promo") {
		t.Errorf("config -o table has no default opt-out:\n%s", out)
	}
	if r := cli(t, with(f.g, slices.Concat([]string{"set-inbox"}, scope, []string{"--opt-out", "a#b"})...)...); r.code != 2 {
		t.Errorf("set-inbox --opt-out a#b: exit %d, want 2 (usage)", r.code)
	}

	// An announcement to two users, retried.
	var pub publishJSON
	args := with(f.g, slices.Concat([]string{"publish"}, scope, []string{"--user", "ann", "--user", "bob", "--title", "Maintenance", "--body", `{"at":"22:00"}`, "--category", "ops", "--host-id", "maint-1"})...)
	cli(t, args...).ok(t).decode(t, &pub)
	if !slices.Equal(pub.Delivered, []string{"ann", "bob"}) || pub.Message.Title != "Maintenance" || pub.Message.Category != "ops" {
		t.Errorf("publish = %+v", pub)
	}
	var again publishJSON
	cli(t, args...).ok(t).decode(t, &again)
	if again.Message.ID != pub.Message.ID || len(again.Delivered) != 0 || !slices.Equal(again.Duplicates, []string{"ann", "bob"}) {
		t.Errorf("publish again = %+v, want duplicates of %s", again, pub.Message.ID)
	}
	// A broadcast to everyone and one to a group.
	var all, group messageJSON
	cli(t, with(f.g, slices.Concat([]string{"broadcast"}, scope, []string{"--title", "All hands", "--host-id", "hands-1"})...)...).ok(t).decode(t, &all)
	cli(t, with(f.g, slices.Concat([]string{"broadcast"}, scope, []string{"--group", "admins", "--title", "Rotate keys"})...)...).ok(t).decode(t, &group)
	if all.Audience != string(inbox.AudienceEveryone) || group.Group != "admins" {
		t.Errorf("broadcasts %+v, %+v", all, group)
	}
	if got := f.counts(t, f.scope.User("ann").InGroups("admins")).Total; got != 3 {
		t.Errorf("ann in admins counts %d messages, want 3", got)
	}

	// Records as stored.
	var rec recordJSON
	cli(t, with(f.g, slices.Concat([]string{"get"}, scope, []string{"--user", "ann", "--id", pub.Message.ID})...)...).ok(t).decode(t, &rec)
	if rec.PK != "t#acmeU#ann#alerts" || rec.SK != "m#"+pub.Message.ID || rec.Entry == "" || rec.Receipt || rec.Message.Body == nil {
		t.Errorf("get ann's copy = %+v", rec)
	}
	cli(t, with(f.g, slices.Concat([]string{"get"}, scope, []string{"--id", all.ID})...)...).ok(t).decode(t, &rec)
	if rec.PK != "t#acmeG#$public#alerts" || rec.Message.Title != "All hands" {
		t.Errorf("get the broadcast = %+v", rec)
	}
	if out := cli(t, with(f.g, slices.Concat([]string{"-o", "table", "get"}, scope, []string{"--group", "admins", "--id", group.ID})...)...).ok(t).stdout; !strings.Contains(out, "t#acmeG#admins#alerts") {
		t.Errorf("get -o table of the group message:\n%s", out)
	}

	// Redactions: by ID with the recipients, by host ID.
	var removed map[string]int
	cli(t, with(f.g, slices.Concat([]string{"redact"}, scope, []string{"--id", pub.Message.ID, "--user", "ann", "--user", "bob"})...)...).ok(t).decode(t, &removed)
	if removed["removed"] != 2 {
		t.Errorf("redact of the direct message = %v, want 2 removed", removed)
	}
	// A redaction the library refuses once it has read the host ID's
	// claim (the broadcast is to everyone, not to admins) is a usage error,
	// and removes nothing.
	r := cli(t, with(f.g, slices.Concat([]string{"redact"}, scope, []string{"--host-id", "hands-1", "--group", "admins"})...)...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "invalid input") {
		t.Errorf("redact with the wrong group: exit %d, stderr %q; want 2, invalid input", r.code, r.stderr)
	}
	cli(t, with(f.g, slices.Concat([]string{"redact"}, scope, []string{"--host-id", "hands-1"})...)...).ok(t).decode(t, &removed)
	if removed["removed"] != 1 {
		t.Errorf("redact by host ID = %v, want 1 removed", removed)
	}
	if got := f.counts(t, f.scope.User("ann").InGroups("admins")).Total; got != 1 {
		t.Errorf("after the redactions ann counts %d messages, want 1", got)
	}
	r = cli(t, with(f.g, slices.Concat([]string{"get"}, scope, []string{"--user", "bob", "--id", pub.Message.ID})...)...)
	if r.code != exitError || !strings.Contains(r.stderr, "not found") {
		t.Errorf("get of a redacted copy: exit %d, stderr %q; want 1, not found", r.code, r.stderr)
	}

	// A message too large to store is refused before anything is written.
	r = cli(t, with(f.g, slices.Concat([]string{"publish"}, scope, []string{"--user", "ann", "--title", strings.Repeat("x", 500<<10)})...)...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "message too large") {
		t.Errorf("publish of a 500 KB title: exit %d, stderr %q; want 2, message too large", r.code, r.stderr)
	}
	if got := f.counts(t, f.scope.User("ann")).Total; got != 0 {
		t.Errorf("after a refused publish ann counts %d messages, want 0", got)
	}
}

// TestPublishOptedOut: publish names the recipients who opted out of the
// message's category, who got no copy, in JSON and in a table.
func TestPublishOptedOut(t *testing.T) {
	f := newFixture(t)
	if _, err := f.ib.SetPreferences(t.Context(), f.scope.User("bob"), inbox.Preferences{OptedOut: []string{"promo"}}); err != nil {
		t.Fatal(err)
	}
	args := []string{"publish", "--tenant", "acme", "--inbox", "alerts", "--user", "ann", "--user", "bob", "--category", "promo", "--title", "Sale"}
	var out map[string]any
	if err := json.Unmarshal([]byte(cli(t, with(f.g, args...)...).ok(t).stdout), &out); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(out["delivered"], out["opted_out"]); got != "[ann] [bob]" {
		t.Errorf("publish printed delivered and opted_out %s; want [ann] [bob]", got)
	}
	r := cli(t, with(f.g, append([]string{"-o", "table"}, append(args[:len(args)-1], "Sale 2")...)...)...).ok(t)
	if !hasRow(r.stdout, "ID", "DELIVERED", "DUPLICATES", "OPTED", "OUT", "TITLE") || !strings.Contains(r.stdout, "  ann  ") || !strings.Contains(r.stdout, "  bob  ") {
		t.Errorf("publish -o table printed:\n%s\nwant bob opted out", r.stdout)
	}
}

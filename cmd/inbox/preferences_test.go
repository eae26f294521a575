package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/stak/inbox"
)

// TestPreferences: preferences prints a user's muted groups; with --set
// it replaces them and says whether they changed; counts and feed then
// show the muted group's message muted, and unmuting brings it back.
func TestPreferences(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	deploy, err := f.ib.BroadcastGroup(ctx, f.scope, "devs", inbox.Draft{Title: "Deploy", Category: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	f.publish(t, f.scope, []string{"ann"}, inbox.Draft{Title: "Invoice"})
	ann := with(f.g, "--tenant", "acme", "--inbox", "alerts", "--user", "ann")
	prefs := func(args ...string) preferencesJSON {
		t.Helper()
		var p preferencesJSON
		cli(t, slices.Concat([]string{"preferences"}, ann, args)...).ok(t).decode(t, &p)
		return p
	}
	yes, no := true, false
	for _, c := range []struct {
		args []string
		want preferencesJSON
	}{
		{nil, preferencesJSON{MutedGroups: []string{}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}}},
		{[]string{"--set", "--mute", "ops", "--mute", "devs"}, preferencesJSON{MutedGroups: []string{"devs", "ops"}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}, Changed: &yes}},
		{[]string{"--set", "--mute", "devs", "--mute", "ops"}, preferencesJSON{MutedGroups: []string{"devs", "ops"}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}, Changed: &no}},
		{nil, preferencesJSON{MutedGroups: []string{"devs", "ops"}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}}},
	} {
		if diff := cmp.Diff(c.want, prefs(c.args...)); diff != "" {
			t.Errorf("preferences %q (-want +got):\n%s", c.args, diff)
		}
	}
	if got, err := f.ib.Preferences(ctx, f.scope.User("ann")); err != nil || !slices.Equal(got.MutedGroups, []string{"devs", "ops"}) {
		t.Errorf("Preferences(ann) after the command = %v, %v; want [devs ops]", got.MutedGroups, err)
	}
	inDevs := with(ann, "--group", "devs")
	var counts countsJSON
	cli(t, slices.Concat([]string{"counts"}, inDevs)...).ok(t).decode(t, &counts)
	want := countsJSON{Total: 2, Unread: 1, Muted: 1, Unseen: 1, Categories: map[string]tallyJSON{"ops": {Total: 1, Muted: 1}}}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("counts of ann muting devs (-want +got):\n%s", diff)
	}
	var page pageJSON
	cli(t, slices.Concat([]string{"feed"}, inDevs)...).ok(t).decode(t, &page)
	if len(page.Messages) != 2 || page.Messages[1].ID != deploy.ID || !page.Messages[1].Muted || page.Messages[0].Muted {
		t.Errorf("feed of ann muting devs: %+v; want Invoice, then Deploy muted", page.Messages)
	}
	r := cli(t, slices.Concat([]string{"-o", "table", "feed"}, inDevs)...).ok(t)
	if !hasRow(r.stdout, deploy.ID, timeCell(deploy.DeliveredAt), "group:devs", "ops", "unread,muted", "Deploy") {
		t.Errorf("feed -o table shows no muted row for Deploy:\n%s", r.stdout)
	}
	r = cli(t, slices.Concat([]string{"preferences", "-o", "table"}, ann)...).ok(t)
	for _, row := range [][]string{{"MUTED", "KEY"}, {"group", "devs"}, {"group", "ops"}} {
		if !hasRow(r.stdout, row...) {
			t.Errorf("preferences -o table has no row %q:\n%s", row, r.stdout)
		}
	}

	// A muted category: its message muted, whatever the groups.
	if diff := cmp.Diff(preferencesJSON{MutedGroups: []string{}, MutedCategories: []string{"ops"}, OptedOut: []string{}, MutedThreads: []string{}, Changed: &yes}, prefs("--set", "--mute-category", "ops")); diff != "" {
		t.Errorf("preferences --set --mute-category ops (-want +got):\n%s", diff)
	}
	cli(t, slices.Concat([]string{"counts"}, inDevs)...).ok(t).decode(t, &counts)
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("counts of ann muting ops (-want +got):\n%s", diff)
	}
	r = cli(t, slices.Concat([]string{"preferences", "-o", "table"}, ann)...).ok(t)
	if !hasRow(r.stdout, "category", "ops") {
		t.Errorf("preferences -o table has no row for the muted category:\n%s", r.stdout)
	}
	if r := cli(t, slices.Concat([]string{"preferences"}, ann, []string{"--set", "--mute-category", "a#b"})...); r.code != 2 {
		t.Errorf("preferences --mute-category a#b: exit %d, want 2 (usage)", r.code)
	}

	// Opted out of ops: the deploy leaves her feed and counts.
	if diff := cmp.Diff(preferencesJSON{MutedGroups: []string{}, MutedCategories: []string{}, OptedOut: []string{"ops"}, MutedThreads: []string{}, Changed: &yes}, prefs("--set", "--opt-out", "ops")); diff != "" {
		t.Errorf("preferences --set --opt-out ops (-want +got):\n%s", diff)
	}
	var opted countsJSON // a fresh one: decoding into counts would keep its categories
	cli(t, slices.Concat([]string{"counts"}, inDevs)...).ok(t).decode(t, &opted)
	if diff := cmp.Diff(countsJSON{Total: 1, Unread: 1, Unseen: 1, Categories: map[string]tallyJSON{}}, opted, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("counts of ann opted out of ops (-want +got):\n%s", diff)
	}
	cli(t, slices.Concat([]string{"feed"}, inDevs)...).ok(t).decode(t, &page)
	if len(page.Messages) != 1 || page.Messages[0].ID == deploy.ID {
		t.Errorf("feed of ann opted out of ops: %+v; want Invoice alone", page.Messages)
	}
	r = cli(t, slices.Concat([]string{"preferences", "-o", "table"}, ann)...).ok(t)
	if !hasRow(r.stdout, "opted-out", "ops") {
		t.Errorf("preferences -o table has no row for the category opted out of:\n%s", r.stdout)
	}
	if r := cli(t, slices.Concat([]string{"preferences"}, ann, []string{"--set", "--opt-out", "ops", "--mute-category", "ops"})...); r.code != 2 {
		t.Errorf("preferences --opt-out ops --mute-category ops: exit %d, want 2 (usage)", r.code)
	}

	// --reset: she follows the defaults again (none here).
	if diff := cmp.Diff(preferencesJSON{MutedGroups: []string{}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}, Changed: &yes}, prefs("--reset")); diff != "" {
		t.Errorf("preferences --reset (-want +got):\n%s", diff)
	}
	if got, err := f.ib.Preferences(ctx, f.scope.User("ann")); err != nil || got.Own {
		t.Errorf("Preferences(ann) after --reset = %+v, %v; want the defaults", got, err)
	}
	if r := cli(t, slices.Concat([]string{"preferences"}, ann, []string{"--set", "--reset"})...); r.code != 2 {
		t.Errorf("preferences --set --reset: exit %d, want 2 (usage)", r.code)
	}

	// --set without --mute unmutes every group.
	if diff := cmp.Diff(preferencesJSON{MutedGroups: []string{}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{}, Changed: &yes}, prefs("--set")); diff != "" {
		t.Errorf("preferences --set (-want +got):\n%s", diff)
	}
	cli(t, slices.Concat([]string{"counts"}, inDevs)...).ok(t).decode(t, &counts)
	if counts.Unread != 2 || counts.Muted != 0 {
		t.Errorf("counts after unmuting: unread %d, muted %d; want 2, 0", counts.Unread, counts.Muted)
	}
}

// TestPreferencesMuteThread: preferences --set --mute-thread mutes a
// one-to-one chat (a thread of the user's direct messages): the output
// and the table show it, the library reads it, counts and feed show the
// chat's unread muted, its messages marked; --set without it unmutes.
// A bad thread key, a thread twice, too many threads, or the flag
// without --set is a usage error that changes nothing.
func TestPreferencesMuteThread(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var chat []string
	for _, title := range []string{"lunch?", "12:30?"} {
		chat = append(chat, f.publish(t, f.scope, []string{"ann", "bob"}, inbox.Draft{Sender: "bob", Thread: "ann-bob", Title: title, Category: "chat"}))
	}
	f.publish(t, f.scope, []string{"ann"}, inbox.Draft{Title: "Invoice"})
	ann := with(f.g, "--tenant", "acme", "--inbox", "alerts", "--user", "ann")
	many := []string{"preferences"}
	many = append(many, ann...)
	many = append(many, "--set")
	for i := range inbox.MaxMutedThreads + 1 {
		many = append(many, "--mute-thread", fmt.Sprint("t", i))
	}
	for name, args := range map[string][]string{
		"a thread with #":             slices.Concat([]string{"preferences"}, ann, []string{"--set", "--mute-thread", "ann#bob"}),
		"a thread twice":              slices.Concat([]string{"preferences"}, ann, []string{"--set", "--mute-thread", "x", "--mute-thread", "x"}),
		"too many threads":            many,
		"--mute-thread without --set": slices.Concat([]string{"preferences"}, ann, []string{"--mute-thread", "x"}),
	} {
		if r := cli(t, args...); r.code != 2 {
			t.Errorf("%s: exit %d, want 2 (usage)", name, r.code)
		}
	}
	if got, err := f.ib.Preferences(ctx, f.scope.User("ann")); err != nil || got.Own {
		t.Errorf("Preferences(ann) after the bad commands = %+v, %v; want none of her own", got, err)
	}

	var p preferencesJSON
	cli(t, slices.Concat([]string{"preferences"}, ann, []string{"--set", "--mute-thread", "ann-bob"})...).ok(t).decode(t, &p)
	yes := true
	want := preferencesJSON{MutedGroups: []string{}, MutedCategories: []string{}, OptedOut: []string{}, MutedThreads: []string{"ann-bob"}, Changed: &yes}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("preferences --set --mute-thread ann-bob (-want +got):\n%s", diff)
	}
	if got, err := f.ib.Preferences(ctx, f.scope.User("ann")); err != nil || !slices.Equal(got.MutedThreads, []string{"ann-bob"}) {
		t.Errorf("Preferences(ann) after the command = %v, %v; want [ann-bob]", got.MutedThreads, err)
	}
	if r := cli(t, slices.Concat([]string{"preferences", "-o", "table"}, ann)...).ok(t); !hasRow(r.stdout, "thread", "ann-bob") {
		t.Errorf("preferences -o table has no row for the muted thread:\n%s", r.stdout)
	}
	var counts countsJSON
	cli(t, slices.Concat([]string{"counts"}, ann)...).ok(t).decode(t, &counts)
	if counts.Total != 3 || counts.Unread != 1 || counts.Muted != 2 || counts.Unseen != 1 || counts.Categories["chat"].Muted != 2 {
		t.Errorf("counts of ann muting the chat = %+v; want 3, 1 unread, the chat's 2 muted", counts)
	}
	var page pageJSON
	cli(t, slices.Concat([]string{"feed"}, ann)...).ok(t).decode(t, &page)
	for _, m := range page.Messages {
		if m.Muted != slices.Contains(chat, m.ID) {
			t.Errorf("feed of ann muting the chat shows %q muted %v", m.Title, m.Muted)
		}
	}

	cli(t, slices.Concat([]string{"preferences"}, ann, []string{"--set"})...).ok(t).decode(t, &p)
	cli(t, slices.Concat([]string{"counts"}, ann)...).ok(t).decode(t, &counts)
	if len(p.MutedThreads) != 0 || counts.Unread != 3 || counts.Muted != 0 {
		t.Errorf("after --set alone: threads %v, counts %+v; want none muted, 3 unread", p.MutedThreads, counts)
	}
}

// TestPreferencesTableSaysChanged: with --set or --reset, preferences -o
// table says whether the preferences changed, as the JSON's changed does;
// without them it says nothing of it.
func TestPreferencesTableSaysChanged(t *testing.T) {
	f := newFixture(t)
	ann := with(f.g, "-o", "table", "preferences", "--tenant", "acme", "--inbox", "alerts", "--user", "ann")
	for _, c := range []struct {
		args []string
		want string // the line that says it, "" for none
	}{
		{[]string{"--set", "--mute", "devs"}, "changed: true"},
		{[]string{"--set", "--mute", "devs"}, "changed: false"},
		{nil, ""},
		{[]string{"--reset"}, "changed: true"},
		{[]string{"--reset"}, "changed: false"},
	} {
		r := cli(t, with(ann, c.args...)...).ok(t)
		var said []string
		for line := range strings.Lines(r.stdout) {
			if strings.HasPrefix(line, "changed:") {
				said = append(said, strings.TrimSpace(line))
			}
		}
		if c.want == "" && len(said) != 0 || c.want != "" && !slices.Equal(said, []string{c.want}) {
			t.Errorf("preferences -o table %q printed:\n%s\nwant %q", c.args, r.stdout, c.want)
		}
	}
}

package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/stak/inbox"
)

// preferencesJSON is a user's preferences as the command prints them.
// Changed is set by --set alone: whether the call changed them.
type preferencesJSON struct {
	MutedGroups     []string `json:"muted_groups"`
	MutedCategories []string `json:"muted_categories"`
	OptedOut        []string `json:"opted_out"`
	// MutedThreads are the threads of her direct messages (one-to-one
	// chats) the user muted; defaults never hold any.
	MutedThreads []string `json:"muted_threads"`
	Changed      *bool    `json:"changed,omitempty"`
}

// setupPreferences is preferences: a user's preferences, with
// Inbox.Preferences, or, with --set, Inbox.SetPreferences first.
func setupPreferences(fs *flag.FlagSet) func(context.Context, *env) error {
	var sf scopeFlags
	sf.register(fs)
	var user string
	var muted, mutedCats, optedOut, mutedThreads stringList
	var set, reset bool
	fs.StringVar(&user, "user", "", "the `user` ID (required)")
	fs.BoolVar(&set, "set", false, "replace the user's preferences: the groups, categories and threads muted are the --mute, --mute-category and --mute-thread ones, the categories opted out of the --opt-out ones (none of a flag clears them)")
	fs.BoolVar(&reset, "reset", false, "drop the user's own preferences: the defaults of her inbox, else her tenant, apply to her again (see set-inbox)")
	fs.Var(&muted, "mute", "with --set, a `group` to mute (repeat for each)")
	fs.Var(&mutedCats, "mute-category", "with --set, a `category` to mute (repeat for each)")
	fs.Var(&optedOut, "opt-out", "with --set, a `category` to opt out of: its messages leave the feed and counts, and new ones are not stored for the user (repeat for each)")
	fs.Var(&mutedThreads, "mute-thread", "with --set, a `thread` of the user's direct messages (a one-to-one chat) to mute; a group chat is muted with --mute (repeat for each)")
	return func(ctx context.Context, e *env) error {
		s, err := sf.scope()
		if err != nil {
			return err
		}
		if user == "" {
			return usagef("missing --user")
		}
		u := s.User(user)
		if err := u.Validate(); err != nil {
			return asUsage(err)
		}
		if (len(muted) > 0 || len(mutedCats) > 0 || len(optedOut) > 0 || len(mutedThreads) > 0) && !set {
			return usagef("--mute, --mute-category, --opt-out and --mute-thread go with --set")
		}
		if set && reset {
			return usagef("--set or --reset, not both")
		}
		if _, err := (inbox.Preferences{MutedGroups: muted}).Normal(); err != nil {
			return &usageError{flag: "mute", err: err}
		}
		if _, err := (inbox.Preferences{MutedGroups: muted, MutedCategories: mutedCats}).Normal(); err != nil {
			return &usageError{flag: "mute-category", err: err}
		}
		if _, err := (inbox.Preferences{MutedGroups: muted, MutedCategories: mutedCats, OptedOut: optedOut}).Normal(); err != nil {
			return &usageError{flag: "opt-out", err: err}
		}
		want, err := inbox.Preferences{MutedGroups: muted, MutedCategories: mutedCats, OptedOut: optedOut, MutedThreads: mutedThreads}.Normal()
		if err != nil {
			return &usageError{flag: "mute-thread", err: err}
		}
		ib, _, _, err := e.openInbox(ctx)
		if err != nil {
			return err
		}
		var changed *bool
		if set {
			ok, err := ib.SetPreferences(ctx, u, want)
			if err != nil {
				return err
			}
			changed = &ok
		}
		if reset {
			ok, err := ib.ResetPreferences(ctx, u)
			if err != nil {
				return err
			}
			changed = &ok
		}
		p, err := ib.Preferences(ctx, u)
		if err != nil {
			return err
		}
		out := newPreferencesJSON(p)
		out.Changed = changed
		if e.output == outputJSON {
			return writeJSON(e.stdout, out)
		}
		var rows [][]string
		for _, g := range out.MutedGroups {
			rows = append(rows, []string{"group", g})
		}
		for _, c := range out.MutedCategories {
			rows = append(rows, []string{"category", c})
		}
		for _, c := range out.OptedOut {
			rows = append(rows, []string{"opted-out", c})
		}
		for _, th := range out.MutedThreads {
			rows = append(rows, []string{"thread", th})
		}
		if err := writeTable(e.stdout, []string{"MUTED", "KEY"}, rows); err != nil || changed == nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "\nchanged: %v\n", *changed)
		return err
	}
}

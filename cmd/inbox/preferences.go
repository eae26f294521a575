package main

import (
	"context"
	"flag"

	"github.com/stak/inbox"
)

// preferencesJSON is a user's preferences as the command prints them.
// Changed is set by --set alone: whether the call changed them.
type preferencesJSON struct {
	MutedGroups     []string `json:"muted_groups"`
	MutedCategories []string `json:"muted_categories"`
	OptedOut        []string `json:"opted_out"`
	Changed         *bool    `json:"changed,omitempty"`
}

// setupPreferences is preferences: a user's preferences, with
// Inbox.Preferences, or, with --set, Inbox.SetPreferences first.
func setupPreferences(fs *flag.FlagSet) func(context.Context, *env) error {
	var sf scopeFlags
	sf.register(fs)
	var user string
	var muted, mutedCats, optedOut stringList
	var set, reset bool
	fs.StringVar(&user, "user", "", "the `user` ID (required)")
	fs.BoolVar(&set, "set", false, "replace the user's preferences: the groups and categories muted are the --mute and --mute-category ones, the categories opted out of the --opt-out ones (none of a flag clears them)")
	fs.BoolVar(&reset, "reset", false, "drop the user's own preferences: the defaults of her inbox, else her tenant, apply to her again (see set-inbox)")
	fs.Var(&muted, "mute", "with --set, a `group` to mute (repeat for each)")
	fs.Var(&mutedCats, "mute-category", "with --set, a `category` to mute (repeat for each)")
	fs.Var(&optedOut, "opt-out", "with --set, a `category` to opt out of: its messages leave the feed and counts, and new ones are not stored for the user (repeat for each)")
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
		if (len(muted) > 0 || len(mutedCats) > 0 || len(optedOut) > 0) && !set {
			return usagef("--mute, --mute-category and --opt-out go with --set")
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
		want, err := inbox.Preferences{MutedGroups: muted, MutedCategories: mutedCats, OptedOut: optedOut}.Normal()
		if err != nil {
			return &usageError{flag: "opt-out", err: err}
		}
		ib, _, _, err := e.openInbox(ctx)
		if err != nil {
			return err
		}
		out := preferencesJSON{}
		if set {
			changed, err := ib.SetPreferences(ctx, u, want)
			if err != nil {
				return err
			}
			out.Changed = &changed
		}
		if reset {
			changed, err := ib.ResetPreferences(ctx, u)
			if err != nil {
				return err
			}
			out.Changed = &changed
		}
		p, err := ib.Preferences(ctx, u)
		if err != nil {
			return err
		}
		out.MutedGroups = append([]string{}, p.MutedGroups...)
		out.MutedCategories = append([]string{}, p.MutedCategories...)
		out.OptedOut = append([]string{}, p.OptedOut...)
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
		return writeTable(e.stdout, []string{"MUTED", "KEY"}, rows)
	}
}

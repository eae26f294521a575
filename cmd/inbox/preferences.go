package main

import (
	"context"
	"flag"

	"github.com/stak/inbox"
)

// preferencesJSON is a user's preferences as the command prints them.
// Changed is set by --set alone: whether the call changed them.
type preferencesJSON struct {
	MutedGroups []string `json:"muted_groups"`
	Changed     *bool    `json:"changed,omitempty"`
}

// setupPreferences is preferences: a user's preferences, with
// Inbox.Preferences, or, with --set, Inbox.SetPreferences first.
func setupPreferences(fs *flag.FlagSet) func(context.Context, *env) error {
	var sf scopeFlags
	sf.register(fs)
	var user string
	var muted stringList
	var set bool
	fs.StringVar(&user, "user", "", "the `user` ID (required)")
	fs.BoolVar(&set, "set", false, "replace the user's preferences: the groups muted are the --mute ones (none unmutes every group)")
	fs.Var(&muted, "mute", "with --set, a `group` to mute (repeat for each)")
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
		if len(muted) > 0 && !set {
			return usagef("--mute goes with --set")
		}
		want, err := inbox.Preferences{MutedGroups: muted}.Normal()
		if err != nil {
			return &usageError{flag: "mute", err: err}
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
		p, err := ib.Preferences(ctx, u)
		if err != nil {
			return err
		}
		out.MutedGroups = append([]string{}, p.MutedGroups...)
		if e.output == outputJSON {
			return writeJSON(e.stdout, out)
		}
		rows := make([][]string, len(out.MutedGroups))
		for i, g := range out.MutedGroups {
			rows[i] = []string{g}
		}
		return writeTable(e.stdout, []string{"MUTED GROUP"}, rows)
	}
}

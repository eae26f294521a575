package main

import (
	"context"
	"errors"
	"flag"
	"strings"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// stringList is a flag that may be given many times (--group a --group b).
type stringList []string

// String returns the values given, comma-separated.
func (l *stringList) String() string { return strings.Join(*l, ",") }

// Set adds a value.
func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// scopeFlags are the flags naming an inbox.
type scopeFlags struct {
	tenant, inbox string
}

// register registers --tenant and --inbox on fs.
func (f *scopeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.tenant, "tenant", "", "the `tenant` key (required)")
	fs.StringVar(&f.inbox, "inbox", "", "the `inbox` key (required)")
}

// scope returns the inbox the flags name, checked.
func (f *scopeFlags) scope() (inbox.Scope, error) {
	for _, r := range []struct{ name, value string }{{"tenant", f.tenant}, {"inbox", f.inbox}} {
		if r.value == "" {
			return inbox.Scope{}, usagef("missing --%s", r.name)
		}
	}
	s := inbox.Scope{Tenant: f.tenant, Inbox: f.inbox}
	return s, asUsage(s.Validate())
}

// userFlags are the flags naming a user of an inbox, and the user's groups.
type userFlags struct {
	scopeFlags
	user   string
	groups stringList
}

// register registers --tenant, --inbox, --user and --group on fs.
func (f *userFlags) register(fs *flag.FlagSet) {
	f.scopeFlags.register(fs)
	fs.StringVar(&f.user, "user", "", "the `user` ID")
	fs.Var(&f.groups, "group", "a `group` the user is in (repeat for each; everyone's is implied)")
}

// userOf returns the user the flags name, checked: a bad key is a usage
// error wrapping inbox.ErrInvalidKey.
func (f *userFlags) userOf() (inbox.User, error) {
	s, err := f.scope()
	if err != nil {
		return inbox.User{}, err
	}
	if f.user == "" {
		return inbox.User{}, usagef("missing --user")
	}
	u := s.User(f.user).InGroups(f.groups...)
	return u, asUsage(u.Validate())
}

// setupFeed is feed: one page of a user's feed, with Inbox.List.
func setupFeed(fs *flag.FlagSet) func(context.Context, *env) error {
	var uf userFlags
	uf.register(fs)
	var o inbox.ListOptions
	fs.BoolVar(&o.UnreadOnly, "unread", false, "only unread messages")
	fs.StringVar(&o.Category, "category", "", "only messages of this `category`")
	fs.BoolVar(&o.Archived, "archived", false, "list the archived messages instead of the feed")
	fs.IntVar(&o.Limit, "limit", 0, "the most messages on the page: 1 to 100 (default 20)")
	fs.StringVar(&o.Cursor, "cursor", "", "continue from a page's next_cursor, with the same user and filters")
	return func(ctx context.Context, e *env) error {
		u, err := uf.userOf()
		if err != nil {
			return err
		}
		if o.Limit < 0 || o.Limit > inbox.MaxPageSize {
			return usagef("--limit %d: want 1 to %d", o.Limit, inbox.MaxPageSize)
		}
		if o.Category != "" {
			if err := driver.ValidateKey("category", o.Category); err != nil {
				return asUsage(err)
			}
		}
		ib, _, _, err := e.openInbox(ctx)
		if err != nil {
			return err
		}
		page, err := ib.List(ctx, u, o)
		if errors.Is(err, inbox.ErrInvalidCursor) {
			return &usageError{flag: "cursor", err: err}
		}
		if err != nil {
			return err
		}
		if e.output == outputJSON {
			out := pageJSON{Messages: make([]messageJSON, len(page.Messages)), NextCursor: page.Cursor}
			for i, m := range page.Messages {
				out.Messages[i] = newMessageJSON(m)
			}
			return writeJSON(e.stdout, out)
		}
		rows := make([][]string, len(page.Messages))
		for i, m := range page.Messages {
			rows[i] = []string{m.ID, timeCell(m.DeliveredAt), audienceCell(m), m.Category, stateCell(m), m.Title}
		}
		if err := writeTable(e.stdout, []string{"ID", "DELIVERED", "AUDIENCE", "CATEGORY", "STATE", "TITLE"}, rows); err != nil {
			return err
		}
		if page.Cursor != "" {
			_, err = e.stdout.Write([]byte("\nnext cursor: " + page.Cursor + "\n"))
		}
		return err
	}
}

// setupCounts is counts: a user's counts, with Inbox.Counts.
func setupCounts(fs *flag.FlagSet) func(context.Context, *env) error {
	var uf userFlags
	uf.register(fs)
	return func(ctx context.Context, e *env) error {
		return e.userCounts(ctx, uf, (*inbox.Inbox).Counts)
	}
}

// userCounts prints the counts op (Counts, or Recount) returns for the
// user uf names.
func (e *env) userCounts(ctx context.Context, uf userFlags, op func(*inbox.Inbox, context.Context, inbox.User) (inbox.Counts, error)) error {
	u, err := uf.userOf()
	if err != nil {
		return err
	}
	ib, _, _, err := e.openInbox(ctx)
	if err != nil {
		return err
	}
	c, err := op(ib, ctx, u)
	if err != nil {
		return err
	}
	return e.writeCounts(c)
}

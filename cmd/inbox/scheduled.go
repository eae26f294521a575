package main

import (
	"context"
	"errors"
	"flag"
	"time"

	"github.com/stak/inbox"
)

// timeFlag is a flag of an RFC 3339 time.
type timeFlag struct{ t time.Time }

// String returns the time, or "" if unset.
func (f *timeFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

// Set parses an RFC 3339 time.
func (f *timeFlag) Set(s string) error {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return errors.New("want an RFC 3339 time, e.g. 2026-11-21T09:00:00Z")
	}
	f.t = t
	return nil
}

// deliveriesJSON is a page of Scheduled or Due as the command prints it.
// NextCursor is "" on the last page.
type deliveriesJSON struct {
	Deliveries []deliveryJSON `json:"deliveries"`
	NextCursor string         `json:"next_cursor"`
}

// deliveryJSON is one scheduled delivery: whom it goes to and the
// message. User is set for a user's copy of a message to users, Group
// for a broadcast ($public, everyone) or a group message, stored once.
type deliveryJSON struct {
	User    string      `json:"user,omitempty"`
	Group   string      `json:"group,omitempty"`
	Message messageJSON `json:"message"`
}

// setupScheduled is scheduled: a page of the messages an inbox has
// scheduled and not due yet, with Inbox.Scheduled.
func setupScheduled(fs *flag.FlagSet) func(context.Context, *env) error {
	var sf scopeFlags
	sf.register(fs)
	var o inbox.ScheduledOptions
	registerPage(fs, &o)
	return func(ctx context.Context, e *env) error {
		return e.deliveries(ctx, sf, o, func(ib *inbox.Inbox, s inbox.Scope) (inbox.DeliveryPage, error) {
			return ib.Scheduled(ctx, s, o)
		})
	}
}

// setupDue is due: a page of the scheduled deliveries of an inbox that came
// due in [--from, --to), with Inbox.Due.
func setupDue(fs *flag.FlagSet) func(context.Context, *env) error {
	var sf scopeFlags
	sf.register(fs)
	var from, to timeFlag
	fs.Var(&from, "from", "the window's start, an RFC 3339 `time` (required)")
	fs.Var(&to, "to", "the window's end, an RFC 3339 `time`, excluded (default now)")
	var o inbox.ScheduledOptions
	registerPage(fs, &o)
	return func(ctx context.Context, e *env) error {
		if from.t.IsZero() {
			return usagef("missing --from")
		}
		if to.t.IsZero() {
			to.t = time.Now()
		}
		return e.deliveries(ctx, sf, o, func(ib *inbox.Inbox, s inbox.Scope) (inbox.DeliveryPage, error) {
			return ib.Due(ctx, s, from.t, to.t, o)
		})
	}
}

// registerPage registers --limit and --cursor on fs.
func registerPage(fs *flag.FlagSet, o *inbox.ScheduledOptions) {
	fs.IntVar(&o.Limit, "limit", 0, "the most deliveries on the page: 1 to 100 (default 20)")
	fs.StringVar(&o.Cursor, "cursor", "", "continue from a page's next_cursor, with the same inbox (and window)")
}

// deliveries prints the page read returns for the inbox sf names: in a
// table, one row per delivery, TO naming the user of a copy, or the
// audience of a broadcast or group message (everyone, group:<group>).
func (e *env) deliveries(ctx context.Context, sf scopeFlags, o inbox.ScheduledOptions, read func(*inbox.Inbox, inbox.Scope) (inbox.DeliveryPage, error)) error {
	s, err := sf.scope()
	if err != nil {
		return err
	}
	if o.Limit < 0 || o.Limit > inbox.MaxPageSize {
		return usagef("--limit %d: want 1 to %d", o.Limit, inbox.MaxPageSize)
	}
	ib, _, _, err := e.openInbox(ctx)
	if err != nil {
		return err
	}
	page, err := read(ib, s)
	if errors.Is(err, inbox.ErrInvalidCursor) {
		return &usageError{flag: "cursor", err: err}
	}
	if err != nil {
		return libraryUsage(err)
	}
	if e.output == outputJSON {
		out := deliveriesJSON{Deliveries: make([]deliveryJSON, len(page.Deliveries)), NextCursor: page.Cursor}
		for i, d := range page.Deliveries {
			out.Deliveries[i] = deliveryJSON{User: d.Partition.User, Group: d.Partition.Group, Message: newMessageJSON(d.Message)}
		}
		return writeJSON(e.stdout, out)
	}
	rows := make([][]string, len(page.Deliveries))
	for i, d := range page.Deliveries {
		to := d.Partition.User
		if d.Partition.IsShared() {
			to = audienceCell(d.Message)
		}
		rows[i] = []string{timeCell(d.Message.DeliverAt), d.Message.ID, to, d.Message.Category, d.Message.Title}
	}
	if err := writeTable(e.stdout, []string{"DELIVER AT", "ID", "TO", "CATEGORY", "TITLE"}, rows); err != nil {
		return err
	}
	if page.Cursor != "" {
		_, err = e.stdout.Write([]byte("\nnext cursor: " + page.Cursor + "\n"))
	}
	return err
}

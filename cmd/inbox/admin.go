package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// libraryUsage returns err as a usage error if the library refused a
// flag's value (inbox.ErrInvalidInput, ErrInvalidKey, ErrInvalidTTL or
// ErrTooLarge), else err.
func libraryUsage(err error) error {
	for _, bad := range []error{inbox.ErrInvalidInput, inbox.ErrInvalidKey, inbox.ErrInvalidTTL, inbox.ErrTooLarge} {
		if !errors.Is(err, bad) {
			continue
		}
		return asUsage(err)
	}
	return err
}

// setupConfig is config: an inbox's tenant settings and inbox config, with
// Inbox.Config.
func setupConfig(fs *flag.FlagSet) func(context.Context, *env) error {
	var sf scopeFlags
	sf.register(fs)
	return func(ctx context.Context, e *env) error {
		s, err := sf.scope()
		if err != nil {
			return err
		}
		ib, _, _, err := e.openInbox(ctx)
		if err != nil {
			return err
		}
		c, err := ib.Config(ctx, s)
		if err != nil {
			return err
		}
		return e.writeConfig(c)
	}
}

// configJSON is an inbox.Config as the command prints it; a record that
// does not exist is null.
type configJSON struct {
	Tenant *tenantJSON `json:"tenant_settings"`
	Inbox  *inboxJSON  `json:"inbox_config"`
}

type tenantJSON struct {
	Title     string `json:"title"`
	TTL       string `json:"ttl"`
	UpdatedBy string `json:"updated_by"`
	// Preferences are the tenant's default preferences.
	Preferences preferencesJSON `json:"preferences"`
}

type inboxJSON struct {
	Title       string            `json:"title"`
	Description string            `json:"description"`
	TTL         map[string]string `json:"ttl"`
	UpdatedBy   string            `json:"updated_by"`
	// Preferences are the inbox's default preferences.
	Preferences preferencesJSON `json:"preferences"`
}

// newPreferencesJSON returns p as the command prints it: empty lists,
// never null.
func newPreferencesJSON(p inbox.Preferences) preferencesJSON {
	return preferencesJSON{MutedGroups: append([]string{}, p.MutedGroups...), MutedCategories: append([]string{}, p.MutedCategories...), OptedOut: append([]string{}, p.OptedOut...),
		MutedThreads: append([]string{}, p.MutedThreads...)}
}

// preferencesRows returns p as table rows of record rec: one per key.
func preferencesRows(rec string, p preferencesJSON) [][]string {
	var rows [][]string
	for _, kind := range []struct {
		name string
		keys []string
	}{{"mute", p.MutedGroups}, {"mute_category", p.MutedCategories}, {"opt_out", p.OptedOut}} {
		for _, k := range kind.keys {
			rows = append(rows, []string{rec, "preferences." + kind.name, k})
		}
	}
	return rows
}

// prefsFlags are the flags of default preferences (set-tenant,
// set-inbox).
type prefsFlags struct{ muted, mutedCats, optedOut stringList }

func (f *prefsFlags) register(fs *flag.FlagSet, whose string) {
	fs.Var(&f.muted, "mute", "a `group` "+whose+" users mute by default (repeat for each)")
	fs.Var(&f.mutedCats, "mute-category", "a `category` "+whose+" users mute by default (repeat for each)")
	fs.Var(&f.optedOut, "opt-out", "a `category` "+whose+" users opt out of by default (repeat for each)")
}

// preferences returns the flags' preferences, checked as the Inbox takes
// them: bad ones are a usage error.
func (f *prefsFlags) preferences() (inbox.Preferences, error) {
	p, err := inbox.Preferences{MutedGroups: f.muted, MutedCategories: f.mutedCats, OptedOut: f.optedOut}.Normal()
	if err != nil {
		return inbox.Preferences{}, asUsage(err)
	}
	return p, nil
}

// writeConfig writes c in the format of e: in a table, one row per
// setting.
func (e *env) writeConfig(c inbox.Config) error {
	var out configJSON
	if t := c.Tenant; t != nil {
		out.Tenant = &tenantJSON{Title: t.Title, TTL: t.TTL, UpdatedBy: t.UpdatedBy, Preferences: newPreferencesJSON(t.Preferences)}
	}
	if i := c.Inbox; i != nil {
		out.Inbox = &inboxJSON{Title: i.Title, Description: i.Description, TTL: i.TTL, UpdatedBy: i.UpdatedBy, Preferences: newPreferencesJSON(i.Preferences)}
		if out.Inbox.TTL == nil {
			out.Inbox.TTL = map[string]string{}
		}
	}
	if e.output == outputJSON {
		return writeJSON(e.stdout, out)
	}
	var rows [][]string
	if t := out.Tenant; t != nil {
		rows = append(rows, []string{"tenant", "title", t.Title}, []string{"tenant", "ttl", t.TTL}, []string{"tenant", "updated_by", t.UpdatedBy})
		rows = append(rows, preferencesRows("tenant", t.Preferences)...)
	}
	if i := out.Inbox; i != nil {
		rows = append(rows, []string{"inbox", "title", i.Title}, []string{"inbox", "description", i.Description})
		for _, k := range slices.Sorted(maps.Keys(i.TTL)) {
			rows = append(rows, []string{"inbox", "ttl." + k, i.TTL[k]})
		}
		rows = append(rows, []string{"inbox", "updated_by", i.UpdatedBy})
		rows = append(rows, preferencesRows("inbox", i.Preferences)...)
	}
	return writeTable(e.stdout, []string{"RECORD", "SETTING", "VALUE"}, rows)
}

// setupSetTenant is set-tenant: replace a tenant's settings, with
// Inbox.PutTenantSettings, and print the inbox's config after.
func setupSetTenant(fs *flag.FlagSet) func(context.Context, *env) error {
	var tenant string
	var ts inbox.TenantSettings
	fs.StringVar(&tenant, "tenant", "", "the `tenant` key (required)")
	fs.StringVar(&ts.Title, "title", "", "the tenant's `title`")
	fs.StringVar(&ts.TTL, "ttl", "", "the tenant's default message `TTL`, e.g. 30d (empty: none)")
	fs.StringVar(&ts.UpdatedBy, "by", "", "who makes the change (the record's uid)")
	var pf prefsFlags
	pf.register(fs, "the tenant's")
	return func(ctx context.Context, e *env) error {
		if tenant == "" {
			return usagef("missing --tenant")
		}
		var err error
		if ts.Preferences, err = pf.preferences(); err != nil {
			return err
		}
		if err := driver.ValidateKey("tenant", tenant); err != nil {
			return asUsage(err)
		}
		if err := ts.Validate(); err != nil {
			return asUsage(err)
		}
		return e.putConfig(ctx, func(ib *inbox.Inbox) error { return ib.PutTenantSettings(ctx, tenant, ts) }, inbox.Config{Tenant: &ts})
	}
}

// ttlList is a flag of category=TTL pairs (--ttl default=30d --ttl ops=7d).
type ttlList map[string]string

func (l ttlList) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

func (l ttlList) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want category=TTL (or %s=TTL)", s, inbox.DefaultTTLKey)
	}
	l[k] = v
	return nil
}

// setupSetInbox is set-inbox: replace an inbox's config, with
// Inbox.PutInboxConfig, and print it.
func setupSetInbox(fs *flag.FlagSet) func(context.Context, *env) error {
	var sf scopeFlags
	sf.register(fs)
	var ic inbox.InboxConfig
	ttl := ttlList{}
	fs.StringVar(&ic.Title, "title", "", "the inbox's `title`")
	fs.StringVar(&ic.Description, "description", "", "the inbox's `description`")
	fs.Var(ttl, "ttl", "a `category=TTL` pair, e.g. ops=7d, or "+inbox.DefaultTTLKey+"=30d for the inbox's default (repeat for each)")
	fs.StringVar(&ic.UpdatedBy, "by", "", "who makes the change (the record's uid)")
	var pf prefsFlags
	pf.register(fs, "the inbox's")
	return func(ctx context.Context, e *env) error {
		s, err := sf.scope()
		if err != nil {
			return err
		}
		if ic.Preferences, err = pf.preferences(); err != nil {
			return err
		}
		if len(ttl) > 0 {
			ic.TTL = ttl
		}
		if err := ic.Validate(); err != nil {
			return asUsage(err)
		}
		return e.putConfig(ctx, func(ib *inbox.Inbox) error { return ib.PutInboxConfig(ctx, s, ic) }, inbox.Config{Inbox: &ic})
	}
}

// putConfig writes a config record with put and prints c, what it wrote.
func (e *env) putConfig(ctx context.Context, put func(*inbox.Inbox) error, c inbox.Config) error {
	ib, _, _, err := e.openInbox(ctx)
	if err != nil {
		return err
	}
	if err := put(ib); err != nil {
		return libraryUsage(err)
	}
	return e.writeConfig(c)
}

// draftFlags are the flags of a message to publish.
type draftFlags struct {
	d         inbox.Draft
	body      string
	deliverAt timeFlag
}

func (f *draftFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.d.Title, "title", "", "the message's `title`")
	fs.StringVar(&f.body, "body", "", "the message's body, a `JSON` value")
	fs.StringVar(&f.d.Category, "category", "", "the message's `category`")
	fs.StringVar(&f.d.Sender, "sender", "", "who sends it")
	fs.StringVar(&f.d.HostSystemID, "host-id", "", "the sending system's `ID` for it: a retry with the same ID delivers nothing twice")
	fs.StringVar(&f.d.CTAURI, "cta", "", "the call to action's `URI`")
	fs.StringVar(&f.d.Label, "label", "", "a `label` for the audience")
	fs.Var(&f.deliverAt, "deliver-at", "schedule it: deliver it at this RFC 3339 `time`")
}

// draft returns the draft the flags describe, its body parsed.
func (f *draftFlags) draft() (inbox.Draft, error) {
	d := f.d
	d.DeliverAt = f.deliverAt.t
	if f.body != "" {
		if err := json.Unmarshal([]byte(f.body), &d.Body); err != nil {
			return d, &usageError{flag: "body", err: fmt.Errorf("not JSON: %w", err)}
		}
	}
	return d, nil
}

// publishJSON is what publish prints.
type publishJSON struct {
	Message    messageJSON `json:"message"`
	Delivered  []string    `json:"delivered"`
	Duplicates []string    `json:"duplicates"`
	// OptedOut are the recipients who opted out of the message's
	// category: none of them got a copy.
	OptedOut []string `json:"opted_out"`
}

// setupPublish is publish: a message to users, with Inbox.Publish.
func setupPublish(fs *flag.FlagSet) func(context.Context, *env) error {
	var sf scopeFlags
	sf.register(fs)
	var users stringList
	fs.Var(&users, "user", "a recipient's `user` ID (repeat for each; at least one)")
	var df draftFlags
	df.register(fs)
	return func(ctx context.Context, e *env) error {
		s, err := sf.scope()
		if err != nil {
			return err
		}
		if len(users) == 0 {
			return usagef("missing --user")
		}
		d, err := df.draft()
		if err != nil {
			return err
		}
		ib, _, _, err := e.openInbox(ctx)
		if err != nil {
			return err
		}
		res, err := ib.Publish(ctx, s, users, d)
		if err != nil {
			return libraryUsage(err)
		}
		// Empty lists, never null.
		out := publishJSON{Message: newMessageJSON(res.Message), Delivered: append([]string{}, res.Delivered...),
			Duplicates: append([]string{}, res.Duplicates...), OptedOut: append([]string{}, res.OptedOut...)}
		if e.output == outputJSON {
			return writeJSON(e.stdout, out)
		}
		return writeTable(e.stdout, []string{"ID", "DELIVERED", "DUPLICATES", "OPTED OUT", "TITLE"},
			[][]string{{res.Message.ID, strings.Join(out.Delivered, ","), strings.Join(out.Duplicates, ","), strings.Join(out.OptedOut, ","), res.Message.Title}})
	}
}

// setupBroadcast is broadcast: a message to everyone in an inbox, or to a
// group, stored once (Inbox.Broadcast, Inbox.BroadcastGroup).
func setupBroadcast(fs *flag.FlagSet) func(context.Context, *env) error {
	var sf scopeFlags
	sf.register(fs)
	group := fs.String("group", "", "send to this `group` only (default: everyone)")
	var df draftFlags
	df.register(fs)
	return func(ctx context.Context, e *env) error {
		s, err := sf.scope()
		if err != nil {
			return err
		}
		d, err := df.draft()
		if err != nil {
			return err
		}
		ib, _, _, err := e.openInbox(ctx)
		if err != nil {
			return err
		}
		var m inbox.Message
		if *group == "" {
			m, err = ib.Broadcast(ctx, s, d)
		} else {
			m, err = ib.BroadcastGroup(ctx, s, *group, d)
		}
		if err != nil {
			return libraryUsage(err)
		}
		return e.writeMessage(m)
	}
}

// writeMessage writes m in the format of e.
func (e *env) writeMessage(m inbox.Message) error {
	if e.output == outputJSON {
		return writeJSON(e.stdout, newMessageJSON(m))
	}
	return writeTable(e.stdout, []string{"ID", "DELIVERED", "AUDIENCE", "CATEGORY", "STATE", "TITLE"},
		[][]string{{m.ID, timeCell(m.DeliveredAt), audienceCell(m), m.Category, stateCell(m), m.Title}})
}

// setupRedact is redact: remove a message from every inbox that holds it,
// by ID or host system ID, with Inbox.Redact.
func setupRedact(fs *flag.FlagSet) func(context.Context, *env) error {
	var sf scopeFlags
	sf.register(fs)
	var r inbox.Redaction
	var users stringList
	fs.StringVar(&r.ID, "id", "", "the message's `ID`")
	fs.StringVar(&r.HostSystemID, "host-id", "", "the message's host system `ID`, instead of --id")
	fs.Var(&users, "user", "a recipient of the direct message (repeat for each)")
	fs.StringVar(&r.Group, "group", "", "the `group` of a group message, or "+inbox.PublicGroup+" for a broadcast to everyone")
	return func(ctx context.Context, e *env) error {
		s, err := sf.scope()
		if err != nil {
			return err
		}
		if (r.ID == "") == (r.HostSystemID == "") {
			return usagef("want one of --id and --host-id")
		}
		r.Users = users
		ib, _, _, err := e.openInbox(ctx)
		if err != nil {
			return err
		}
		n, err := ib.Redact(ctx, s, r)
		if err != nil && n > 0 {
			// Some copies went: not a usage error, and the operator
			// must know. Redact can be run again for the rest.
			return fmt.Errorf("removed %d %s, then failed (run it again for the rest): %w", n, plural(n, "copy", "copies"), err)
		}
		if err != nil {
			return libraryUsage(err)
		}
		if e.output == outputJSON {
			return writeJSON(e.stdout, map[string]int{"removed": n})
		}
		return writeTable(e.stdout, []string{"REMOVED"}, [][]string{{fmt.Sprint(n)}})
	}
}

// plural returns one if n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// recordJSON is a stored record as get prints it.
type recordJSON struct {
	PK        string      `json:"pk"`
	SK        string      `json:"sk"`
	Receipt   bool        `json:"receipt"`
	Entry     string      `json:"ledger_entry"`
	DeletedAt time.Time   `json:"deleted_at,omitzero"`
	Message   messageJSON `json:"message"`
}

// setupGet is get: one message, receipt or broadcast as it is stored, by
// key, with Store.GetRecords: in a user's partition (--user), a group's
// (--group) or everyone's (neither).
func setupGet(fs *flag.FlagSet) func(context.Context, *env) error {
	var sf scopeFlags
	sf.register(fs)
	id := fs.String("id", "", "the message's `ID` (required)")
	user := fs.String("user", "", "read the `user`'s partition: a direct message, or the user's receipt of a broadcast")
	group := fs.String("group", "", "read the `group`'s partition (default, without --user: everyone's)")
	return func(ctx context.Context, e *env) error {
		s, err := sf.scope()
		if err != nil {
			return err
		}
		if *id == "" {
			return usagef("missing --id")
		}
		if *user != "" && *group != "" {
			return usagef("want at most one of --user and --group")
		}
		p := inbox.Partition{Tenant: s.Tenant, Inbox: s.Inbox, User: *user, Group: *group}
		if *user == "" && *group == "" {
			p.Group = inbox.PublicGroup
		}
		if err := p.Validate(); err != nil {
			return asUsage(err)
		}
		if err := driver.ValidateMessageID(*id); err != nil {
			return &usageError{flag: "id", err: err}
		}
		ib, _, _, err := e.openInbox(ctx)
		if err != nil {
			return err
		}
		recs, err := ib.Store().GetRecords(ctx, []driver.Key{{Partition: p, ID: *id}})
		if err != nil {
			return libraryUsage(err)
		}
		if len(recs) == 0 {
			return fmt.Errorf("%w: %s in %s", inbox.ErrNotFound, *id, p.PK())
		}
		r := recs[0]
		if e.output == outputJSON {
			return writeJSON(e.stdout, recordJSON{PK: r.Partition.PK(), SK: driver.MessageSK(r.Message.ID), Receipt: r.Receipt,
				Entry: r.Entry, DeletedAt: r.DeletedAt, Message: newMessageJSON(r.Message)})
		}
		kind := "message"
		if r.Receipt {
			kind = "receipt"
		}
		return writeTable(e.stdout, []string{"PK", "SK", "KIND", "STATE", "LEDGER", "EXPIRES", "TITLE"},
			[][]string{{r.Partition.PK(), driver.MessageSK(r.Message.ID), kind, stateCell(r.Message), r.Entry, timeCell(r.Message.ExpiresAt), r.Message.Title}})
	}
}

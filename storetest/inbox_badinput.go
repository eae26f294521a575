package storetest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/stak/inbox"
)

// testBadInput: every kind of bad input fails with its sentinel error
// (matched with errors.Is) and changes no record, counter or config.
func testBadInput(e *env) {
	ann, bob := e.user("ann"), e.user("bob")
	e.user("carol")
	if err := e.ib.PutTenantSettings(e.ctx, e.scope.Tenant, inbox.TenantSettings{Title: "Acme", TTL: "10d"}); err != nil {
		e.t.Fatalf("PutTenantSettings: %v", err)
	}
	if err := e.ib.PutInboxConfig(e.ctx, e.scope, inbox.InboxConfig{Title: "Alerts", TTL: map[string]string{inbox.DefaultTTLKey: "5d"}}); err != nil {
		e.t.Fatalf("PutInboxConfig: %v", err)
	}
	d := e.publish(inbox.Draft{Title: "d1"}, "ann", "bob").Message
	e.publish(inbox.Draft{Title: "d2"}, "ann")
	b := e.broadcast(inbox.Draft{Title: "b"})
	e.markRead(bob, b.ID, true)
	page, err := e.ib.List(e.ctx, ann, inbox.ListOptions{Limit: 1})
	if err != nil || page.Cursor == "" {
		e.t.Fatalf("List(ann, limit 1): cursor %q, %v; want a cursor", page.Cursor, err)
	}
	cursor := page.Cursor
	unreadPage, err := e.ib.List(e.ctx, ann, inbox.ListOptions{Limit: 1, UnreadOnly: true})
	if err != nil || unreadPage.Cursor == "" {
		e.t.Fatalf("List(ann, limit 1, unread only): cursor %q, %v; want a cursor", unreadPage.Cursor, err)
	}
	const big = inbox.MaxItemSize + 1024
	good := inbox.Draft{Title: "ok"}
	publish := func(users []string, d inbox.Draft) func() error {
		return func() error { _, err := e.ib.Publish(e.ctx, e.scope, users, d); return err }
	}
	publishIn := func(s inbox.Scope, d inbox.Draft) func() error {
		return func() error { _, err := e.ib.Publish(e.ctx, s, []string{"ann"}, d); return err }
	}
	broadcast := func(d inbox.Draft) func() error {
		return func() error { _, err := e.ib.Broadcast(e.ctx, e.scope, d); return err }
	}
	list := func(u inbox.User, o inbox.ListOptions) func() error {
		return func() error { _, err := e.ib.List(e.ctx, u, o); return err }
	}
	tenantTTL := func(ttl string) func() error {
		return func() error {
			return e.ib.PutTenantSettings(e.ctx, e.scope.Tenant, inbox.TenantSettings{Title: "changed", TTL: ttl})
		}
	}
	inboxTTL := func(ttl map[string]string) func() error {
		return func() error {
			return e.ib.PutInboxConfig(e.ctx, e.scope, inbox.InboxConfig{Title: "changed", TTL: ttl})
		}
	}
	markRead := func(u inbox.User, id string) func() error {
		return func() error { _, err := e.ib.MarkRead(e.ctx, u, id); return err }
	}
	tampered := []byte(cursor) // one base64url character changed
	if i := len(tampered) / 2; tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	public := e.scope.User(inbox.PublicGroup)

	cases := []struct {
		name string
		op   func() error
		want error
	}{
		{"user with #", publish([]string{"ann#alerts"}, good), inbox.ErrInvalidKey},
		{"empty user", publish([]string{""}, good), inbox.ErrInvalidKey},
		{"129-byte user", publish([]string{strings.Repeat("a", inbox.MaxKeyLen+1)}, good), inbox.ErrInvalidKey},
		{"$public user", publish([]string{inbox.PublicGroup}, good), inbox.ErrInvalidKey},
		{"newline in user", publish([]string{"a\nb"}, good), inbox.ErrInvalidKey},
		{"NUL in user", publish([]string{"a\x00b"}, good), inbox.ErrInvalidKey},
		{"tab in user", publish([]string{"a\tb"}, good), inbox.ErrInvalidKey},
		{"DEL in user", publish([]string{"a\x7fb"}, good), inbox.ErrInvalidKey},
		{"C1 control in user", publish([]string{"a\u0085b"}, good), inbox.ErrInvalidKey},
		{"zero-width space in user", publish([]string{"a\u200bb"}, good), inbox.ErrInvalidKey},
		{"invalid UTF-8 user", publish([]string{"a\xffb"}, good), inbox.ErrInvalidKey},
		{"one bad recipient among good ones", publish([]string{"ann", "carol", "bad#user"}, inbox.Draft{HostSystemID: "bad-1"}), inbox.ErrInvalidKey},
		{"no recipients", publish(nil, good), inbox.ErrInvalidInput},
		{"tenant with #", publishIn(inbox.Scope{Tenant: "ac#me", Inbox: "alerts"}, good), inbox.ErrInvalidKey},
		{"empty inbox", publishIn(inbox.Scope{Tenant: "acme", Inbox: ""}, good), inbox.ErrInvalidKey},
		{"129-byte inbox", publishIn(inbox.Scope{Tenant: "acme", Inbox: strings.Repeat("i", inbox.MaxKeyLen+1)}, good), inbox.ErrInvalidKey},
		{"control char in tenant", publishIn(inbox.Scope{Tenant: "acme\r", Inbox: "alerts"}, good), inbox.ErrInvalidKey},
		{"category with #", publish([]string{"ann"}, inbox.Draft{Category: "a#b"}), inbox.ErrInvalidKey},
		{"category *", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-2", Category: inbox.AllCategories}), inbox.ErrInvalidKey},
		{"category with newline", broadcast(inbox.Draft{Category: "a\nb"}), inbox.ErrInvalidKey},
		{"host ID with control char", publish([]string{"ann"}, inbox.Draft{HostSystemID: "h\x01"}), inbox.ErrInvalidKey},
		{"host ID too long", publish([]string{"ann"}, inbox.Draft{HostSystemID: strings.Repeat("h", inbox.MaxHostSystemIDLen+1)}), inbox.ErrInvalidKey},
		{"negative message TTL", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-3", TTL: -time.Second}), inbox.ErrInvalidTTL},
		{"tenant TTL 30x", tenantTTL("30x"), inbox.ErrInvalidTTL},
		{"tenant TTL -5d", tenantTTL("-5d"), inbox.ErrInvalidTTL},
		{"tenant TTL 0s", tenantTTL("0s"), inbox.ErrInvalidTTL},
		{"tenant TTL 1.5d", tenantTTL("1.5d"), inbox.ErrInvalidTTL},
		{"tenant TTL d", tenantTTL("d"), inbox.ErrInvalidTTL},
		{"inbox TTL 30x", inboxTTL(map[string]string{inbox.DefaultTTLKey: "30x"}), inbox.ErrInvalidTTL},
		{"inbox TTL -5d", inboxTTL(map[string]string{"billing": "-5d"}), inbox.ErrInvalidTTL},
		{"inbox TTL 0s", inboxTTL(map[string]string{inbox.DefaultTTLKey: "5d", "billing": "0s"}), inbox.ErrInvalidTTL},
		{"inbox TTL empty", inboxTTL(map[string]string{"billing": ""}), inbox.ErrInvalidTTL},
		{"inbox TTL category with #", inboxTTL(map[string]string{"a#b": "5d"}), inbox.ErrInvalidKey},
		{"tenant settings of a bad tenant", func() error { return e.ib.PutTenantSettings(e.ctx, "a#b", inbox.TenantSettings{}) }, inbox.ErrInvalidKey},
		{"tenant title not UTF-8", func() error {
			return e.ib.PutTenantSettings(e.ctx, e.scope.Tenant, inbox.TenantSettings{Title: "a\xffb"})
		}, inbox.ErrInvalidInput},
		{"inbox description not UTF-8", func() error {
			return e.ib.PutInboxConfig(e.ctx, e.scope, inbox.InboxConfig{Description: "a\xffb"})
		}, inbox.ErrInvalidInput},
		{"category with *", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-8", Category: "a*"}), inbox.ErrInvalidKey},
		{"user with ?", publish([]string{"a?"}, inbox.Draft{HostSystemID: "bad-9"}), inbox.ErrInvalidKey},
		{"body nested 31 deep", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-10", Body: nested(inbox.MaxBodyDepth + 1)}), inbox.ErrInvalidInput},
		{"body number 1e126", broadcast(inbox.Draft{HostSystemID: "bad-11", Body: []any{1, 1e126}}), inbox.ErrInvalidInput},
		{"body number 1e-131", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-12", Body: map[string]any{"x": 1e-131}}), inbox.ErrInvalidInput},
		{"body with an empty key", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-13", Body: map[string]any{"": 1}}), inbox.ErrInvalidInput},
		{"body integer float64 cannot hold", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-14", Body: map[string]any{"id": int64(1<<53 + 1)}}), inbox.ErrInvalidInput},
		{"body of negatives over 400 KB", broadcast(inbox.Draft{HostSystemID: "bad-15", Body: negatives(inbox.MaxItemSize / 3)}), inbox.ErrTooLarge},
		{"body too large", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-4", Body: strings.Repeat("x", big)}), inbox.ErrTooLarge},
		{"nested body too large", publish([]string{"ann", "bob"}, inbox.Draft{Body: map[string]any{"a": []any{strings.Repeat("ü", big/2)}}}), inbox.ErrTooLarge},
		{"title too large", broadcast(inbox.Draft{HostSystemID: "bad-5", Title: strings.Repeat("t", big)}), inbox.ErrTooLarge},
		{"broadcast body too large", broadcast(inbox.Draft{Body: strings.Repeat("x", big)}), inbox.ErrTooLarge},
		{"body not JSON: func", publish([]string{"ann"}, inbox.Draft{Body: func() {}}), inbox.ErrInvalidInput},
		{"body not JSON: NaN", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-6", Body: map[string]any{"x": math.NaN()}}), inbox.ErrInvalidInput},
		{"body not JSON: channel", broadcast(inbox.Draft{HostSystemID: "bad-7", Body: make(chan int)}), inbox.ErrInvalidInput},
		{"body invalid UTF-8", publish([]string{"ann"}, inbox.Draft{Body: "a\xffb"}), inbox.ErrInvalidInput},
		{"title invalid UTF-8", publish([]string{"ann"}, inbox.Draft{Title: "a\xffb"}), inbox.ErrInvalidInput},
		{"tampered cursor", list(ann, inbox.ListOptions{Limit: 1, Cursor: string(tampered)}), inbox.ErrInvalidCursor},
		{"truncated cursor", list(ann, inbox.ListOptions{Limit: 1, Cursor: cursor[:len(cursor)-2]}), inbox.ErrInvalidCursor},
		{"garbage cursor", list(ann, inbox.ListOptions{Cursor: "!!not a cursor!!"}), inbox.ErrInvalidCursor},
		{"cursor of another user", list(bob, inbox.ListOptions{Limit: 1, Cursor: cursor}), inbox.ErrInvalidCursor},
		{"cursor of another inbox", list(e.userIn(inbox.Scope{Tenant: e.scope.Tenant, Inbox: "other"}, "ann"), inbox.ListOptions{Limit: 1, Cursor: cursor}), inbox.ErrInvalidCursor},
		{"cursor of another filter", list(ann, inbox.ListOptions{Limit: 1, Cursor: unreadPage.Cursor}), inbox.ErrInvalidCursor},
		{"cursor of another category", list(ann, inbox.ListOptions{Limit: 1, Category: "billing", Cursor: cursor}), inbox.ErrInvalidCursor},
		{"page size -1", list(ann, inbox.ListOptions{Limit: -1}), inbox.ErrInvalidInput},
		{"page size 101", list(ann, inbox.ListOptions{Limit: inbox.MaxPageSize + 1}), inbox.ErrInvalidInput},
		{"list category *", list(ann, inbox.ListOptions{Category: inbox.AllCategories}), inbox.ErrInvalidKey},
		{"list $public", list(public, inbox.ListOptions{}), inbox.ErrInvalidKey},
		{"mark read: not a ULID", markRead(ann, "not-a-ulid"), inbox.ErrInvalidKey},
		{"mark read: lower-case ULID", markRead(ann, strings.ToLower(d.ID)), inbox.ErrInvalidKey},
		{"mark read: ID with #", markRead(ann, d.ID+"#x"), inbox.ErrInvalidKey},
		{"mark read as $public", markRead(public, b.ID), inbox.ErrInvalidKey},
		{"mark all read as $public", func() error { _, err := e.ib.MarkAllRead(e.ctx, public, inbox.ListOptions{}); return err }, inbox.ErrInvalidKey},
		{"counts of $public", func() error { _, err := e.ib.Counts(e.ctx, public); return err }, inbox.ErrInvalidKey},
		{"recount of $public", func() error { _, err := e.ib.Recount(e.ctx, public); return err }, inbox.ErrInvalidKey},
		{"recount of a user with #", func() error { _, err := e.ib.Recount(e.ctx, e.scope.User("ann#x")); return err }, inbox.ErrInvalidKey},
	}
	before := e.snapshot() // after the cases noted every partition they use
	for _, c := range cases {
		err := c.op()
		if !errors.Is(err, c.want) {
			e.t.Errorf("%s: got error %v, want one matching %v", c.name, err, c.want)
		}
		e.wantUnchanged(c.name, before)
	}
	// Nor did any claim a host system ID: the first claim now is this one.
	for i := 1; i <= 15; i++ {
		host, id := fmt.Sprintf("bad-%d", i), e.newID()
		got, err := e.store.ClaimHostID(e.ctx, inbox.HostClaim{Scope: e.scope, HostSystemID: host, ID: id, ExpiresAt: e.clock.Now().Add(inbox.MaxTTL)})
		if err != nil || got.ID != id {
			e.t.Errorf("ClaimHostID(%s) after bad input with that host ID: %q, %v; want %q: the bad input claimed it", host, got.ID, err, id)
		}
	}
}

// nested returns a body of objects nested depth deep.
func nested(depth int) any {
	var v any = "x"
	for range depth {
		v = map[string]any{"k": v}
	}
	return v
}

// negatives returns a list of n negative numbers: each costs a byte more
// than its positive counterpart as DynamoDB counts an item.
func negatives(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = -1
	}
	return out
}

package storetest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// testBadInput: every kind of bad input fails with its sentinel error
// (matched with errors.Is) and changes no record, counter or config.
func testBadInput(e *env) {
	ann, bob := e.user("ann"), e.user("bob")
	e.user("carol")
	if err := e.ib.PutTenantSettings(e.ctx, e.scope.Tenant, driver.TenantSettings{Title: "Acme", TTL: "10d"}); err != nil {
		e.t.Fatalf("PutTenantSettings: %v", err)
	}
	if err := e.ib.PutInboxConfig(e.ctx, e.scope, driver.InboxConfig{Title: "Alerts", TTL: map[string]string{driver.DefaultTTLKey: "5d"}}); err != nil {
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
	const big = driver.MaxItemSize + 1024
	good := inbox.Draft{Title: "ok"}
	publish := func(users []string, d inbox.Draft) func() error {
		return func() error { _, err := e.ib.Publish(e.ctx, e.scope, users, d); return err }
	}
	publishIn := func(s driver.Scope, d inbox.Draft) func() error {
		return func() error { _, err := e.ib.Publish(e.ctx, s, []string{"ann"}, d); return err }
	}
	broadcast := func(d inbox.Draft) func() error {
		return func() error { _, err := e.ib.Broadcast(e.ctx, e.scope, d); return err }
	}
	list := func(u driver.User, o inbox.ListOptions) func() error {
		return func() error { _, err := e.ib.List(e.ctx, u, o); return err }
	}
	tenantTTL := func(ttl string) func() error {
		return func() error {
			return e.ib.PutTenantSettings(e.ctx, e.scope.Tenant, driver.TenantSettings{Title: "changed", TTL: ttl})
		}
	}
	inboxTTL := func(ttl map[string]string) func() error {
		return func() error {
			return e.ib.PutInboxConfig(e.ctx, e.scope, driver.InboxConfig{Title: "changed", TTL: ttl})
		}
	}
	markRead := func(u driver.User, id string) func() error {
		return func() error { _, err := e.ib.MarkRead(e.ctx, u, id); return err }
	}
	tampered := []byte(cursor) // one base64url character changed
	if i := len(tampered) / 2; tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	public := e.scope.User(driver.PublicGroup)

	cases := []struct {
		name string
		op   func() error
		want error
	}{
		{"user with #", publish([]string{"ann#alerts"}, good), driver.ErrInvalidKey},
		{"empty user", publish([]string{""}, good), driver.ErrInvalidKey},
		{"129-byte user", publish([]string{strings.Repeat("a", driver.MaxKeyLen+1)}, good), driver.ErrInvalidKey},
		{"$public user", publish([]string{driver.PublicGroup}, good), driver.ErrInvalidKey},
		{"newline in user", publish([]string{"a\nb"}, good), driver.ErrInvalidKey},
		{"NUL in user", publish([]string{"a\x00b"}, good), driver.ErrInvalidKey},
		{"tab in user", publish([]string{"a\tb"}, good), driver.ErrInvalidKey},
		{"DEL in user", publish([]string{"a\x7fb"}, good), driver.ErrInvalidKey},
		{"C1 control in user", publish([]string{"a\u0085b"}, good), driver.ErrInvalidKey},
		{"zero-width space in user", publish([]string{"a\u200bb"}, good), driver.ErrInvalidKey},
		{"invalid UTF-8 user", publish([]string{"a\xffb"}, good), driver.ErrInvalidKey},
		{"one bad recipient among good ones", publish([]string{"ann", "carol", "bad#user"}, inbox.Draft{HostSystemID: "bad-1"}), driver.ErrInvalidKey},
		{"no recipients", publish(nil, good), driver.ErrInvalidInput},
		{"tenant with #", publishIn(driver.Scope{Tenant: "ac#me", Inbox: "alerts"}, good), driver.ErrInvalidKey},
		{"empty inbox", publishIn(driver.Scope{Tenant: "acme", Inbox: ""}, good), driver.ErrInvalidKey},
		{"129-byte inbox", publishIn(driver.Scope{Tenant: "acme", Inbox: strings.Repeat("i", driver.MaxKeyLen+1)}, good), driver.ErrInvalidKey},
		{"control char in tenant", publishIn(driver.Scope{Tenant: "acme\r", Inbox: "alerts"}, good), driver.ErrInvalidKey},
		{"category with #", publish([]string{"ann"}, inbox.Draft{Category: "a#b"}), driver.ErrInvalidKey},
		{"category *", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-2", Category: driver.AllCategories}), driver.ErrInvalidKey},
		{"category with newline", broadcast(inbox.Draft{Category: "a\nb"}), driver.ErrInvalidKey},
		{"host ID with control char", publish([]string{"ann"}, inbox.Draft{HostSystemID: "h\x01"}), driver.ErrInvalidKey},
		{"host ID too long", publish([]string{"ann"}, inbox.Draft{HostSystemID: strings.Repeat("h", driver.MaxHostSystemIDLen+1)}), driver.ErrInvalidKey},
		{"negative message TTL", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-3", TTL: -time.Second}), driver.ErrInvalidTTL},
		{"tenant TTL 30x", tenantTTL("30x"), driver.ErrInvalidTTL},
		{"tenant TTL -5d", tenantTTL("-5d"), driver.ErrInvalidTTL},
		{"tenant TTL 0s", tenantTTL("0s"), driver.ErrInvalidTTL},
		{"tenant TTL 1.5d", tenantTTL("1.5d"), driver.ErrInvalidTTL},
		{"tenant TTL d", tenantTTL("d"), driver.ErrInvalidTTL},
		{"inbox TTL 30x", inboxTTL(map[string]string{driver.DefaultTTLKey: "30x"}), driver.ErrInvalidTTL},
		{"inbox TTL -5d", inboxTTL(map[string]string{"billing": "-5d"}), driver.ErrInvalidTTL},
		{"inbox TTL 0s", inboxTTL(map[string]string{driver.DefaultTTLKey: "5d", "billing": "0s"}), driver.ErrInvalidTTL},
		{"inbox TTL empty", inboxTTL(map[string]string{"billing": ""}), driver.ErrInvalidTTL},
		{"inbox TTL category with #", inboxTTL(map[string]string{"a#b": "5d"}), driver.ErrInvalidKey},
		{"tenant TTL of 400 KB", tenantTTL(strings.Repeat("9", big) + "d"), driver.ErrInvalidTTL},
		{"inbox TTL of 400 KB", inboxTTL(map[string]string{driver.DefaultTTLKey: strings.Repeat("0", big) + "5d"}), driver.ErrInvalidTTL},
		{"inbox TTLs of 4,000 categories", inboxTTL(ttlCategories(4000)), driver.ErrInvalidInput},
		{"tenant settings of a bad tenant", func() error { return e.ib.PutTenantSettings(e.ctx, "a#b", driver.TenantSettings{}) }, driver.ErrInvalidKey},
		{"tenant title not UTF-8", func() error {
			return e.ib.PutTenantSettings(e.ctx, e.scope.Tenant, driver.TenantSettings{Title: "a\xffb"})
		}, driver.ErrInvalidInput},
		{"inbox description not UTF-8", func() error {
			return e.ib.PutInboxConfig(e.ctx, e.scope, driver.InboxConfig{Description: "a\xffb"})
		}, driver.ErrInvalidInput},
		{"category with *", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-8", Category: "a*"}), driver.ErrInvalidKey},
		{"user with ?", publish([]string{"a?"}, inbox.Draft{HostSystemID: "bad-9"}), driver.ErrInvalidKey},
		{"body nested 31 deep", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-10", Body: nested(driver.MaxBodyDepth + 1)}), driver.ErrInvalidInput},
		{"body number 1e126", broadcast(inbox.Draft{HostSystemID: "bad-11", Body: []any{1, 1e126}}), driver.ErrInvalidInput},
		{"body number 1e-131", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-12", Body: map[string]any{"x": 1e-131}}), driver.ErrInvalidInput},
		{"body with an empty key", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-13", Body: map[string]any{"": 1}}), driver.ErrInvalidInput},
		{"body key of 50,001 bytes", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-17", Body: map[string]any{"a": map[string]any{strings.Repeat("k", 50_001): 1}}}), driver.ErrInvalidInput},
		{"received before 1970", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-15", ReceivedAt: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)}), driver.ErrInvalidInput},
		{"received after 9999", broadcast(inbox.Draft{HostSystemID: "bad-16", ReceivedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}), driver.ErrInvalidInput},
		{"body integer float64 cannot hold", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-14", Body: map[string]any{"id": int64(1<<53 + 1)}}), driver.ErrInvalidInput},
		{"body of negatives over 400 KB", broadcast(inbox.Draft{HostSystemID: "bad-15", Body: negatives(driver.MaxItemSize / 3)}), driver.ErrTooLarge},
		{"body too large", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-4", Body: strings.Repeat("x", big)}), driver.ErrTooLarge},
		{"nested body too large", publish([]string{"ann", "bob"}, inbox.Draft{Body: map[string]any{"a": []any{strings.Repeat("ü", big/2)}}}), driver.ErrTooLarge},
		{"title too large", broadcast(inbox.Draft{HostSystemID: "bad-5", Title: strings.Repeat("t", big)}), driver.ErrTooLarge},
		{"broadcast body too large", broadcast(inbox.Draft{Body: strings.Repeat("x", big)}), driver.ErrTooLarge},
		{"body not JSON: func", publish([]string{"ann"}, inbox.Draft{Body: func() {}}), driver.ErrInvalidInput},
		{"body not JSON: NaN", publish([]string{"ann"}, inbox.Draft{HostSystemID: "bad-6", Body: map[string]any{"x": math.NaN()}}), driver.ErrInvalidInput},
		{"body not JSON: channel", broadcast(inbox.Draft{HostSystemID: "bad-7", Body: make(chan int)}), driver.ErrInvalidInput},
		{"body invalid UTF-8", publish([]string{"ann"}, inbox.Draft{Body: "a\xffb"}), driver.ErrInvalidInput},
		{"title invalid UTF-8", publish([]string{"ann"}, inbox.Draft{Title: "a\xffb"}), driver.ErrInvalidInput},
		{"tampered cursor", list(ann, inbox.ListOptions{Limit: 1, Cursor: string(tampered)}), driver.ErrInvalidCursor},
		{"truncated cursor", list(ann, inbox.ListOptions{Limit: 1, Cursor: cursor[:len(cursor)-2]}), driver.ErrInvalidCursor},
		{"garbage cursor", list(ann, inbox.ListOptions{Cursor: "!!not a cursor!!"}), driver.ErrInvalidCursor},
		{"cursor of another user", list(bob, inbox.ListOptions{Limit: 1, Cursor: cursor}), driver.ErrInvalidCursor},
		{"cursor of another inbox", list(e.userIn(driver.Scope{Tenant: e.scope.Tenant, Inbox: "other"}, "ann"), inbox.ListOptions{Limit: 1, Cursor: cursor}), driver.ErrInvalidCursor},
		{"cursor of another filter", list(ann, inbox.ListOptions{Limit: 1, Cursor: unreadPage.Cursor}), driver.ErrInvalidCursor},
		{"cursor of another category", list(ann, inbox.ListOptions{Limit: 1, Category: "billing", Cursor: cursor}), driver.ErrInvalidCursor},
		{"page size -1", list(ann, inbox.ListOptions{Limit: -1}), driver.ErrInvalidInput},
		{"page size 101", list(ann, inbox.ListOptions{Limit: inbox.MaxPageSize + 1}), driver.ErrInvalidInput},
		{"list category *", list(ann, inbox.ListOptions{Category: driver.AllCategories}), driver.ErrInvalidKey},
		{"list $public", list(public, inbox.ListOptions{}), driver.ErrInvalidKey},
		{"mark read: not a ULID", markRead(ann, "not-a-ulid"), driver.ErrInvalidKey},
		{"mark read: lower-case ULID", markRead(ann, strings.ToLower(d.ID)), driver.ErrInvalidKey},
		{"mark read: ID with #", markRead(ann, d.ID+"#x"), driver.ErrInvalidKey},
		{"mark read as $public", markRead(public, b.ID), driver.ErrInvalidKey},
		{"mark all read as $public", func() error { _, err := e.ib.MarkAllRead(e.ctx, public, inbox.ListOptions{}); return err }, driver.ErrInvalidKey},
		{"mark all read of the snoozed view", func() error { _, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Snoozed: true}); return err }, driver.ErrInvalidInput},
		{"archive all of the snoozed view", func() error { _, err := e.ib.ArchiveAll(e.ctx, ann, inbox.ListOptions{Snoozed: true}); return err }, driver.ErrInvalidInput},
		{"archive all of the archive", func() error { _, err := e.ib.ArchiveAll(e.ctx, ann, inbox.ListOptions{Archived: true}); return err }, driver.ErrInvalidInput},
		{"delete all of the snoozed view", func() error { _, err := e.ib.DeleteAll(e.ctx, ann, inbox.ListOptions{Snoozed: true}); return err }, driver.ErrInvalidInput},
		{"counts of $public", func() error { _, err := e.ib.Counts(e.ctx, public); return err }, driver.ErrInvalidKey},
		{"recount of $public", func() error { _, err := e.ib.Recount(e.ctx, public); return err }, driver.ErrInvalidKey},
		{"recount of a user with #", func() error { _, err := e.ib.Recount(e.ctx, e.scope.User("ann#x")); return err }, driver.ErrInvalidKey},
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
	for i := 1; i <= 17; i++ {
		host, id := fmt.Sprintf("bad-%d", i), e.newID()
		got, err := e.store.ClaimHostID(e.ctx, driver.HostClaim{Scope: e.scope, HostSystemID: host, ID: id, ExpiresAt: e.clock.Now().Add(driver.MaxTTL)})
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

// ttlCategories returns an inbox config's TTLs of n categories of
// MaxKeyLen bytes.
func ttlCategories(n int) map[string]string {
	out := make(map[string]string, n)
	for i := range n {
		out[fmt.Sprintf("%0*d", driver.MaxKeyLen, i)] = "5d"
	}
	return out
}

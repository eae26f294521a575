package inbox_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
)

// failingConfigStore fails every Config read, once fail is set, with
// ErrThrottled.
type failingConfigStore struct {
	inbox.Store
	fail atomic.Bool
}

func (s *failingConfigStore) Config(ctx context.Context, sc inbox.Scope) (inbox.Config, error) {
	if s.fail.Load() {
		return inbox.Config{}, inbox.ErrThrottled
	}
	return s.Store.Config(ctx, sc)
}

// TestDefaultsUnreadable: when the config that holds the default
// preferences cannot be read, a List, Get, ListThreads or Counts of a
// user without preferences of her own fails with the read's error,
// with the shared cache on or off, rather than showing what the defaults
// hide.
func TestDefaultsUnreadable(t *testing.T) {
	ctx := context.Background()
	for _, fresh := range []time.Duration{0, time.Hour} {
		st := &failingConfigStore{Store: memstore.New()}
		ib := inbox.New(st, inbox.WithConfigCacheTTL(0), inbox.WithSharedCache(fresh))
		if err := ib.PutInboxConfig(ctx, scope, inbox.InboxConfig{Preferences: inbox.Preferences{OptedOut: []string{"promo"}}}); err != nil {
			t.Fatal(err)
		}
		msg, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "sale", Category: "promo"})
		if err != nil {
			t.Fatal(err)
		}
		ann := scope.User("ann")
		if page, err := ib.List(ctx, ann, inbox.ListOptions{}); err != nil || len(page.Messages) != 0 {
			t.Fatalf("shared cache %v: List(ann) = %d messages, %v; want none, the defaults opting out of promo", fresh, len(page.Messages), err)
		}
		st.fail.Store(true)
		if page, err := ib.List(ctx, ann, inbox.ListOptions{}); !errors.Is(err, inbox.ErrThrottled) {
			t.Errorf("shared cache %v: List(ann), the config unreadable = %d messages, %v; want ErrThrottled", fresh, len(page.Messages), err)
		}
		if _, err := ib.Get(ctx, ann, msg.ID); !errors.Is(err, inbox.ErrThrottled) {
			t.Errorf("shared cache %v: Get(ann), the config unreadable: %v; want ErrThrottled", fresh, err)
		}
		if _, err := ib.ListThreads(ctx, ann, inbox.ThreadOptions{}); !errors.Is(err, inbox.ErrThrottled) {
			t.Errorf("shared cache %v: ListThreads(ann), the config unreadable: %v; want ErrThrottled", fresh, err)
		}
		if _, err := ib.Counts(ctx, ann); !errors.Is(err, inbox.ErrThrottled) {
			t.Errorf("shared cache %v: Counts(ann), the config unreadable: %v; want ErrThrottled", fresh, err)
		}
	}
}

// TestDefaultsNotShared: the preferences Preferences returns for a user
// who follows the defaults are hers to change: editing them in place (as
// a page that unmutes one group does) changes neither the defaults the
// Inbox applies to other users nor what it returns next.
func TestDefaultsNotShared(t *testing.T) {
	ctx := context.Background()
	ib := inbox.New(memstore.New()) // the config cache on, as by default
	defaults := inbox.Preferences{MutedGroups: []string{"devs", "ops"}, MutedCategories: []string{"news"}, OptedOut: []string{"promo"}}
	if err := ib.PutInboxConfig(ctx, scope, inbox.InboxConfig{Preferences: defaults}); err != nil {
		t.Fatal(err)
	}
	ann, bob := scope.User("ann"), scope.User("bob")
	p, err := ib.Preferences(ctx, ann)
	if err != nil || !p.Equal(defaults) {
		t.Fatalf("Preferences(ann) = %+v, %v; want the defaults %+v", p, err, defaults)
	}
	p.MutedGroups = slices.DeleteFunc(p.MutedGroups, func(g string) bool { return g == "devs" })
	p.MutedCategories[0], p.OptedOut[0] = "sports", "ads"
	if _, err := ib.SetPreferences(ctx, ann, p); err != nil {
		t.Fatal(err)
	}
	if got, err := ib.Preferences(ctx, bob); err != nil || !got.Equal(defaults) {
		t.Errorf("Preferences(bob) after ann edited hers = %+v, %v; want the defaults %+v", got, err, defaults)
	}
	if _, err := ib.Publish(ctx, scope, []string{"bob"}, inbox.Draft{Title: "sale", Category: "promo"}); err != nil {
		t.Fatal(err)
	}
	if c, err := ib.Counts(ctx, bob); err != nil || c.Total != 0 {
		t.Errorf("Counts(bob) = %+v, %v; want nothing, the defaults opting out of promo", c.Tally, err)
	}
}

// TestConfigNotShared: the Config that Inbox.Config returns is the
// caller's own: changing its TTLs or default preferences in place
// changes neither the next Config nor what the Inbox applies.
func TestConfigNotShared(t *testing.T) {
	ctx := context.Background()
	ib := inbox.New(memstore.New())
	ic := inbox.InboxConfig{TTL: map[string]string{"ops": "7d"}, Preferences: inbox.Preferences{OptedOut: []string{"promo"}}}
	if err := ib.PutInboxConfig(ctx, scope, ic); err != nil {
		t.Fatal(err)
	}
	if err := ib.PutTenantSettings(ctx, scope.Tenant, inbox.TenantSettings{Preferences: inbox.Preferences{MutedGroups: []string{"devs"}}}); err != nil {
		t.Fatal(err)
	}
	c, err := ib.Config(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	c.Inbox.TTL["ops"] = "1d"
	c.Inbox.Preferences.OptedOut[0] = "news"
	c.Tenant.Preferences.MutedGroups[0] = "ops"
	again, err := ib.Config(ctx, scope)
	if err != nil || again.Inbox.TTL["ops"] != "7d" || again.Inbox.Preferences.OptedOut[0] != "promo" || again.Tenant.Preferences.MutedGroups[0] != "devs" {
		t.Errorf("Config after editing the last one in place = %+v %+v, %v; want it as put", again.Inbox, again.Tenant, err)
	}
	res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "sale", Category: "promo"})
	if err != nil || !slices.Equal(res.OptedOut, []string{"ann"}) {
		t.Errorf("Publish(promo) = opted out %v, %v; want ann: the defaults as put", res.OptedOut, err)
	}
}

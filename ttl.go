package inbox

import (
	"context"
	"sync"
	"time"

	"github.com/stak/inbox/driver"
)

// resolveTTL returns the TTL of a message: the first of the message's own
// TTL (rounded up to a whole second, since expiries are stored in seconds),
// the inbox's ttl[category], the inbox's ttl.default, the tenant's ttl, and
// DefaultTTL; capped at MaxTTL.
func resolveTTL(msgTTL time.Duration, category string, cfg Config) (time.Duration, error) {
	if msgTTL > 0 {
		msgTTL = min(msgTTL, MaxTTL)
		if r := msgTTL % time.Second; r != 0 {
			msgTTL += time.Second - r
		}
		return msgTTL, nil
	}
	var candidates []string
	if cfg.Inbox != nil {
		if category != "" {
			candidates = append(candidates, cfg.Inbox.TTL[category])
		}
		candidates = append(candidates, cfg.Inbox.TTL[DefaultTTLKey])
	}
	if cfg.Tenant != nil {
		candidates = append(candidates, cfg.Tenant.TTL)
	}
	for _, s := range candidates {
		if s != "" {
			return ParseTTL(s)
		}
	}
	return DefaultTTL, nil
}

// maxCachedConfigs bounds the config cache: past it, expired entries are
// dropped, then the entries that expire soonest.
const maxCachedConfigs = 1024

// configCache keeps each scope's Config for a while, for at most
// maxCachedConfigs scopes. It is safe for concurrent use.
type configCache struct {
	mu      sync.Mutex
	ttl     time.Duration
	entries map[Scope]cachedConfig
}

type cachedConfig struct {
	cfg     Config
	expires time.Time
}

// config returns s's Config, from the cache while fresh.
func (ib *Inbox) config(ctx context.Context, s Scope) (Config, error) {
	now := ib.now()
	c := &ib.configs
	if c.ttl > 0 {
		c.mu.Lock()
		e, ok := c.entries[s]
		c.mu.Unlock()
		if ok && now.Before(e.expires) {
			return e.cfg, nil
		}
	}
	cfg, err := ib.store.Config(ctx, s)
	if err != nil {
		return Config{}, err
	}
	if c.ttl > 0 {
		c.put(s, cachedConfig{cfg: cfg, expires: now.Add(c.ttl)}, now)
	}
	return cfg, nil
}

// put caches e for s, first making room if the cache is full.
func (c *configCache) put(s Scope, e cachedConfig, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[s]; !ok && len(c.entries) >= maxCachedConfigs {
		for k, old := range c.entries {
			if !now.Before(old.expires) {
				delete(c.entries, k)
			}
		}
		for len(c.entries) >= maxCachedConfigs {
			var victim Scope
			var soonest time.Time
			for k, old := range c.entries {
				if soonest.IsZero() || old.expires.Before(soonest) {
					victim, soonest = k, old.expires
				}
			}
			delete(c.entries, victim)
		}
	}
	c.entries[s] = e
}

// forget drops every cached config of tenant (settings changes touch all
// of its inboxes).
func (c *configCache) forget(tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for s := range c.entries {
		if s.Tenant == tenant {
			delete(c.entries, s)
		}
	}
}

// Config returns s's tenant settings and inbox config, read through the
// Inbox's cache (see WithConfigCacheTTL), as a copy of its own.
func (ib *Inbox) Config(ctx context.Context, s Scope) (_ Config, err error) {
	defer ib.observe(&ctx, "Config", s, "").end(&err)
	if err := s.Validate(); err != nil {
		return Config{}, err
	}
	cfg, err := ib.config(ctx, s)
	return cfg.Clone(), err
}

// PutTenantSettings validates and stores a tenant's settings. Other Inbox
// instances see the change when their cached copy expires. Its
// Preferences (in any order, as SetPreferences takes them) are the
// defaults of its users who set none of their own, in inboxes whose
// config sets none.
func (ib *Inbox) PutTenantSettings(ctx context.Context, tenant string, ts TenantSettings) (err error) {
	defer ib.observe(&ctx, "PutTenantSettings", Scope{Tenant: tenant}, "").end(&err)
	if err := driver.ValidateKey("tenant", tenant); err != nil {
		return err
	}
	if ts.Preferences, err = ts.Preferences.Normal(); err != nil {
		return err
	}
	ts.Preferences.Own = false
	if err := ts.Validate(); err != nil {
		return err
	}
	if err := ib.store.PutTenantSettings(ctx, tenant, ts); err != nil {
		return err
	}
	ib.configs.forget(tenant)
	return nil
}

// PutInboxConfig validates and stores an inbox's config. Other Inbox
// instances see the change when their cached copy expires. Its
// Preferences (in any order, as SetPreferences takes them) are the
// defaults of its users who set none of their own.
func (ib *Inbox) PutInboxConfig(ctx context.Context, s Scope, ic InboxConfig) (err error) {
	defer ib.observe(&ctx, "PutInboxConfig", s, "").end(&err)
	if err := s.Validate(); err != nil {
		return err
	}
	if ic.Preferences, err = ic.Preferences.Normal(); err != nil {
		return err
	}
	ic.Preferences.Own = false
	if err := ic.Validate(); err != nil {
		return err
	}
	if err := ib.store.PutInboxConfig(ctx, s, ic); err != nil {
		return err
	}
	ib.configs.forget(s.Tenant)
	return nil
}

// TenantSettings are a tenant's settings, read with Inbox.Config and
// written with Inbox.PutTenantSettings: its TTL and the texts its inboxes
// show.
type TenantSettings = driver.TenantSettings

// InboxConfig is an inbox's config, read with Inbox.Config and written
// with Inbox.PutInboxConfig: TTLs by category and texts.
type InboxConfig = driver.InboxConfig

// Config is what TTL resolution reads: a tenant's settings and an inbox's
// config, each nil when not set.
type Config = driver.Config

// DefaultTTL is the TTL of a message when neither it, its inbox nor its
// tenant sets one.
const DefaultTTL = driver.DefaultTTL

// MaxTTL is the longest TTL; longer ones are capped to it.
const MaxTTL = driver.MaxTTL

// DefaultTTLKey is the key of InboxConfig.TTL that applies to every
// category without a TTL of its own. The seeds name it "default", so a
// category of that name has no TTL of its own: this one is its TTL.
const DefaultTTLKey = driver.DefaultTTLKey

// ParseTTL parses a TTL such as "30d", "12h", "90m" or "3600s": a positive
// whole number and a unit. Other input is ErrInvalidTTL; longer than MaxTTL
// is capped to it.
func ParseTTL(s string) (time.Duration, error) { return driver.ParseTTL(s) }

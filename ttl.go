package inbox

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultTTL is how long a message lives when no message, inbox or tenant
// TTL applies.
const DefaultTTL = 30 * 24 * time.Hour

// MaxTTL caps every TTL: a longer one is shortened to it.
const MaxTTL = 730 * 24 * time.Hour

// DefaultTTLKey is the InboxConfig.TTL entry used for categories without
// their own entry.
const DefaultTTLKey = "default"

// ParseTTL parses a duration written as a positive whole number and a unit:
// d (days), h, m or s, e.g. "30d", "300m", "6000s". A duration longer than
// MaxTTL is capped to MaxTTL. Anything else, including "0s", "-5d", "30x",
// "1.5d" and "", is an error matching ErrInvalidTTL.
func ParseTTL(s string) (time.Duration, error) {
	if len(s) < 2 {
		return 0, fmt.Errorf("%w: %q", ErrInvalidTTL, s)
	}
	var unit time.Duration
	switch s[len(s)-1] {
	case 'd':
		unit = 24 * time.Hour
	case 'h':
		unit = time.Hour
	case 'm':
		unit = time.Minute
	case 's':
		unit = time.Second
	default:
		return 0, fmt.Errorf("%w: %q: unit must be d, h, m or s", ErrInvalidTTL, s)
	}
	digits := s[:len(s)-1]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, fmt.Errorf("%w: %q: want a whole number before the unit", ErrInvalidTTL, s)
		}
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil { // only overflow is left: far beyond the cap
		return MaxTTL, nil
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: %q: must be positive", ErrInvalidTTL, s)
	}
	if n > uint64(MaxTTL/unit) {
		return MaxTTL, nil
	}
	return time.Duration(n) * unit, nil
}

// TenantSettings is a tenant's settings record (kind TS).
type TenantSettings struct {
	Title string
	// TTL is the tenant's default message TTL, e.g. "30d"; "" for none.
	TTL string
	// UpdatedBy is the ID of whoever last changed the record (the seed's
	// uid), "" if unset.
	UpdatedBy string
}

// InboxConfig is an inbox's config record (kind IC).
type InboxConfig struct {
	Title       string
	Description string
	// TTL maps a category, or DefaultTTLKey, to a TTL such as "7d".
	TTL map[string]string
	// UpdatedBy is the ID of whoever last changed the record (the seed's
	// uid), "" if unset.
	UpdatedBy string
}

// MaxConfigTextLen bounds the title, description and UpdatedBy of tenant
// settings and inbox configs, in bytes.
const MaxConfigTextLen = 4096

// validateText reports whether the named texts are valid UTF-8 of at most
// MaxConfigTextLen bytes, wrapping ErrInvalidInput.
func validateText(texts map[string]string) error {
	for name, s := range texts {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidInput, name)
		}
		if len(s) > MaxConfigTextLen {
			return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrInvalidInput, name, len(s), MaxConfigTextLen)
		}
	}
	return nil
}

// Config is what TTL resolution reads: a tenant's settings and an inbox's
// config, each nil when not set.
type Config struct {
	Tenant *TenantSettings
	Inbox  *InboxConfig
}

// Validate reports whether ts's texts are valid UTF-8 and its TTL parses.
func (ts TenantSettings) Validate() error {
	if err := validateText(map[string]string{"title": ts.Title, "updated by": ts.UpdatedBy}); err != nil {
		return err
	}
	if ts.TTL == "" {
		return nil
	}
	_, err := ParseTTL(ts.TTL)
	return err
}

// Validate reports whether ic's texts are valid UTF-8, every TTL parses and
// every key is a category or DefaultTTLKey.
func (ic InboxConfig) Validate() error {
	if err := validateText(map[string]string{"title": ic.Title, "description": ic.Description, "updated by": ic.UpdatedBy}); err != nil {
		return err
	}
	for k, v := range ic.TTL {
		if k != DefaultTTLKey {
			if err := validateCategory(k); err != nil {
				return err
			}
		}
		if _, err := ParseTTL(v); err != nil {
			return fmt.Errorf("ttl[%s]: %w", k, err)
		}
	}
	return nil
}

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
// Inbox's cache (see WithConfigCacheTTL).
func (ib *Inbox) Config(ctx context.Context, s Scope) (Config, error) {
	if err := s.Validate(); err != nil {
		return Config{}, err
	}
	return ib.config(ctx, s)
}

// PutTenantSettings validates and stores a tenant's settings. Other Inbox
// instances see the change when their cached copy expires.
func (ib *Inbox) PutTenantSettings(ctx context.Context, tenant string, ts TenantSettings) error {
	if err := ValidateKey("tenant", tenant); err != nil {
		return err
	}
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
// instances see the change when their cached copy expires.
func (ib *Inbox) PutInboxConfig(ctx context.Context, s Scope, ic InboxConfig) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if err := ic.Validate(); err != nil {
		return err
	}
	if err := ib.store.PutInboxConfig(ctx, s, ic); err != nil {
		return err
	}
	ib.configs.forget(s.Tenant)
	return nil
}

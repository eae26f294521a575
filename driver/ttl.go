package driver

import (
	"fmt"
	"maps"
	"strconv"
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
	// Preferences are the tenant's default preferences: those of a user
	// who set none of her own, in an inbox whose config sets none (see
	// Config.DefaultPreferences). Own is ignored.
	Preferences Preferences
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
	// Preferences are the inbox's default preferences: those of a user
	// who set none of her own; if they mute nothing and opt out of
	// nothing, the tenant's apply (see Config.DefaultPreferences). Own is
	// ignored.
	Preferences Preferences
	// UpdatedBy is the ID of whoever last changed the record (the seed's
	// uid), "" if unset.
	UpdatedBy string
}

// MaxConfigTextLen bounds the title, description and UpdatedBy of tenant
// settings and inbox configs, in bytes.
const MaxConfigTextLen = 4096

// MaxConfigTTLLen bounds each TTL of tenant settings and inbox configs, in
// bytes: "99999999999999999999999d" (capped to MaxTTL) is 24.
const MaxConfigTTLLen = 32

// MaxInboxTTLs is the most entries of an InboxConfig's TTL (DefaultTTLKey
// included). With MaxConfigTextLen, MaxConfigTTLLen and the limits of
// preferences, it keeps a config within DynamoDB's 400 KB item, so that
// every Store refuses the same configs.
const MaxInboxTTLs = 1000

// validateTTL reports whether s, a TTL of a config, parses (ParseTTL) and
// is at most MaxConfigTTLLen bytes, wrapping ErrInvalidTTL.
func validateTTL(s string) error {
	if len(s) > MaxConfigTTLLen {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidTTL, len(s), MaxConfigTTLLen)
	}
	_, err := ParseTTL(s)
	return err
}

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

// Clone returns c with nothing shared with it.
func (c Config) Clone() Config {
	if c.Tenant != nil {
		t := *c.Tenant
		t.Preferences = t.Preferences.Clone()
		c.Tenant = &t
	}
	if c.Inbox != nil {
		i := *c.Inbox
		i.TTL = maps.Clone(i.TTL)
		i.Preferences = i.Preferences.Clone()
		c.Inbox = &i
	}
	return c
}

// ValidateDefaultPreferences checks default preferences (a tenant's or an
// inbox's) as a Store keeps them: ValidatePreferences, and no muted
// thread, since a thread of direct messages is one user's (else
// ErrInvalidInput).
func ValidateDefaultPreferences(p Preferences) error {
	if len(p.MutedThreads) > 0 {
		return fmt.Errorf("%w: default preferences that mute a thread: a thread is one user's", ErrInvalidInput)
	}
	return ValidatePreferences(p)
}

// DefaultPreferences returns the preferences of a user who set none of
// her own: the inbox's if they set any, else the tenant's, else none; as
// the TTL falls back from the inbox to the tenant. Own is false.
func (c Config) DefaultPreferences() Preferences {
	var p Preferences
	switch {
	case c.Inbox != nil && !c.Inbox.Preferences.None():
		p = c.Inbox.Preferences
	case c.Tenant != nil:
		p = c.Tenant.Preferences
	}
	p.Own, p.MutedThreads = false, nil // a thread is one user's: see ValidateDefaultPreferences
	return p
}

// Validate reports whether ts's texts are valid UTF-8, its TTL parses
// and is at most MaxConfigTTLLen bytes, and its preferences are as a
// Store keeps them (ValidatePreferences).
func (ts TenantSettings) Validate() error {
	if err := validateText(map[string]string{"title": ts.Title, "updated by": ts.UpdatedBy}); err != nil {
		return err
	}
	if err := ValidateDefaultPreferences(ts.Preferences); err != nil {
		return err
	}
	if ts.TTL == "" {
		return nil
	}
	return validateTTL(ts.TTL)
}

// Validate reports whether ic's texts are valid UTF-8, it has at most
// MaxInboxTTLs TTLs (else ErrInvalidInput), every TTL parses and is at
// most MaxConfigTTLLen bytes, and every key is a category or
// DefaultTTLKey.
func (ic InboxConfig) Validate() error {
	if err := validateText(map[string]string{"title": ic.Title, "description": ic.Description, "updated by": ic.UpdatedBy}); err != nil {
		return err
	}
	if err := ValidateDefaultPreferences(ic.Preferences); err != nil {
		return err
	}
	if len(ic.TTL) > MaxInboxTTLs {
		return fmt.Errorf("%w: %d ttls, at most %d", ErrInvalidInput, len(ic.TTL), MaxInboxTTLs)
	}
	for k, v := range ic.TTL {
		if k != DefaultTTLKey {
			if err := ValidateCategory(k); err != nil {
				return err
			}
		}
		if err := validateTTL(v); err != nil {
			return fmt.Errorf("ttl[%s]: %w", k, err)
		}
	}
	return nil
}

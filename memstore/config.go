package memstore

import (
	"context"

	"github.com/stak/inbox/driver"
)

// ClaimHostID returns the unexpired claim of c.HostSystemID in c.Scope,
// making c the claim (and returning it) if there is none; with c.Retire it
// retires the claim instead, with c.Peek it only returns it (see
// driver.Store).
func (s *Store) ClaimHostID(ctx context.Context, c driver.HostClaim) (driver.HostClaim, error) {
	if err := s.begin(ctx); err != nil {
		return driver.HostClaim{}, err
	}
	defer s.mu.Unlock()
	k := claimKey{scope: c.Scope, host: c.HostSystemID}
	prev, ok := s.claims[k]
	standing := ok && c.Now.Before(prev.c.ExpiresAt)
	if c.Peek {
		if !standing {
			return driver.HostClaim{}, nil
		}
		got := prev.c
		got.Now = c.Now
		return got, nil
	}
	if c.Retire {
		if !standing {
			return driver.HostClaim{}, nil
		}
		if c.ID == "" || c.ID == prev.c.ID {
			prev.c.Digest = driver.RetiredDigest
			s.claims[k] = prev
		}
		got := prev.c
		got.Now, got.Retire = c.Now, false
		return got, nil
	}
	if standing {
		got := prev.c
		got.Now = c.Now
		return got, nil
	}
	seq := s.nextSeq()
	s.claims[k] = claim{c: c, seq: seq}
	s.expire(expiry{at: c.ExpiresAt, kind: expireClaim, seq: seq, claim: k})
	return c, nil
}

// Config returns copies of the tenant settings and inbox config of sc; a
// missing one is nil.
func (s *Store) Config(ctx context.Context, sc driver.Scope) (driver.Config, error) {
	if err := s.begin(ctx); err != nil {
		return driver.Config{}, err
	}
	defer s.mu.Unlock()
	var cfg driver.Config
	if ts, ok := s.tenants[sc.Tenant]; ok {
		ts.Preferences = ts.Preferences.Clone()
		cfg.Tenant = &ts
	}
	if ic, ok := s.inboxes[sc]; ok {
		ic = copyInboxConfig(ic)
		cfg.Inbox = &ic
	}
	return cfg, nil
}

// PutTenantSettings creates or replaces a tenant's settings, keeping a
// copy (its preferences' Own unset); settings that ts.Validate refuses
// (default preferences not as a Store keeps them, say) are refused.
func (s *Store) PutTenantSettings(ctx context.Context, tenant string, ts driver.TenantSettings) error {
	if err := ts.Validate(); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	ts.Preferences = ts.Preferences.Clone()
	ts.Preferences.Own = false // ignored, as DynamoDB's prefs attribute has no room for it
	s.tenants[tenant] = ts
	return nil
}

// PutInboxConfig creates or replaces an inbox's config, keeping a copy
// (its preferences' Own unset); a config that ic.Validate refuses is
// refused.
func (s *Store) PutInboxConfig(ctx context.Context, sc driver.Scope, ic driver.InboxConfig) error {
	if err := ic.Validate(); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.inboxes[sc] = copyInboxConfig(ic)
	return nil
}

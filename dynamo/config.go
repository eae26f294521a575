package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/driver"
)

// ClaimHostID puts the claim (sort key h#<host system ID> in the
// partition driver.ClaimPK, kind HC, with the message ID, group and digest, expiring with
// the message) on condition that there is none or it expires at or before
// c.Now, asking for the old item on failure: then it returns the old claim.
// With c.Retire it updates the standing claim's digest instead (see
// retireClaim); with c.Peek it reads it (peekClaim).
func (s *Store) ClaimHostID(ctx context.Context, c driver.HostClaim) (driver.HostClaim, error) {
	switch {
	case c.Peek:
		return s.peekClaim(ctx, c)
	case c.Retire:
		return s.retireClaim(ctx, c)
	}
	item, err := s.item(driver.ClaimPK(c.Scope, c.HostSystemID), driver.HostPrefix+c.HostSystemID, claimItem{
		Kind: kindClaim, ID: c.ID, Group: c.Group, Digest: c.Digest, TenantKey: c.Scope.Tenant, InboxKey: c.Scope.Inbox,
	}, c.ExpiresAt)
	if err != nil {
		return driver.HostClaim{}, err
	}
	cond := expression.Or(s.notExists(), expression.Not(s.expiresAfter(c.Now))) // expired, as expiry reads it
	put, err := s.conditionalPut(item, cond)
	if err != nil {
		return driver.HostClaim{}, err
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           put.TableName,
		Item:                                put.Item,
		ConditionExpression:                 put.ConditionExpression,
		ExpressionAttributeNames:            put.ExpressionAttributeNames,
		ExpressionAttributeValues:           put.ExpressionAttributeValues,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	})
	if err == nil {
		return c, nil
	}
	var got driver.HostClaim
	err = condError("claim host id", err, func(old map[string]types.AttributeValue) error {
		got, err = s.decodeClaim(c, old)
		return err
	})
	if err != nil {
		return driver.HostClaim{}, err
	}
	return got, nil
}

// peekClaim returns c's standing claim, read strongly consistent (a
// BatchGetItem of its key), or a zero HostClaim if none stands.
func (s *Store) peekClaim(ctx context.Context, c driver.HostClaim) (driver.HostClaim, error) {
	items, err := s.batchGet(ctx, []map[string]types.AttributeValue{s.key(driver.ClaimPK(c.Scope, c.HostSystemID), driver.HostPrefix+c.HostSystemID)}, true)
	if err != nil {
		return driver.HostClaim{}, opError("peek host id", err)
	}
	if len(items) == 0 {
		return driver.HostClaim{}, nil
	}
	if !c.Now.Before(s.expiry(items[0])) {
		return driver.HostClaim{}, nil // expired: none stands
	}
	got, err := s.decodeClaim(c, items[0])
	got.Peek = false
	return got, err
}

// retireClaim sets the digest of c's standing claim to driver.RetiredDigest
// with one UpdateItem, on condition that the claim exists, expires after
// c.Now and (if c.ID is set) claims c.ID; it returns the claim as it
// stands after, or a zero HostClaim if none stands.
func (s *Store) retireClaim(ctx context.Context, c driver.HostClaim) (driver.HostClaim, error) {
	cond := expression.And(expression.NameNoDotSplit(s.o.pk).AttributeExists(), s.expiresAfter(c.Now))
	if c.ID != "" {
		cond = expression.And(cond, expression.Name("id").Equal(expression.Value(c.ID)))
	}
	expr, err := expression.NewBuilder().WithCondition(cond).
		WithUpdate(expression.Set(expression.Name("digest"), expression.Value(driver.RetiredDigest))).Build()
	if err != nil {
		return driver.HostClaim{}, fmt.Errorf("dynamo: retire expression: %w", err)
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 s.key(driver.ClaimPK(c.Scope, c.HostSystemID), driver.HostPrefix+c.HostSystemID),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	})
	if err == nil {
		return s.decodeClaim(c, out.Attributes)
	}
	var got driver.HostClaim
	err = condError("retire host id", err, func(old map[string]types.AttributeValue) error {
		if old == nil {
			return nil // no claim
		}
		if !c.Now.Before(s.expiry(old)) {
			return nil // expired: none stands
		}
		var err error
		got, err = s.decodeClaim(c, old)
		return err
	})
	return got, err
}

// decodeClaim returns the claim item av of c's host system ID.
func (s *Store) decodeClaim(c driver.HostClaim, av map[string]types.AttributeValue) (driver.HostClaim, error) {
	var prev claimItem
	if err := attributevalue.UnmarshalMap(av, &prev); err != nil || prev.ID == "" {
		return driver.HostClaim{}, fmt.Errorf("dynamo: claim of host id %q: no ID in the existing claim", c.HostSystemID)
	}
	exp := s.expiry(av)
	got := c
	got.Retire = false
	got.ID, got.Group, got.Digest, got.ExpiresAt = prev.ID, prev.Group, prev.Digest, exp
	return got, nil
}

// Config reads the tenant settings and inbox config of sc with one
// strongly consistent BatchGetItem.
func (s *Store) Config(ctx context.Context, sc driver.Scope) (driver.Config, error) {
	tenantPK := driver.TenantPK(sc.Tenant)
	items, err := s.batchGet(ctx, []map[string]types.AttributeValue{
		s.key(tenantPK, driver.TenantSettingsSK),
		s.key(tenantPK, driver.InboxConfigSK(sc.Inbox)),
	}, true)
	if err != nil {
		return driver.Config{}, opError("config", err)
	}
	var cfg driver.Config
	for _, av := range items {
		_, sk, err := s.itemKey(av)
		if err != nil {
			return driver.Config{}, err
		}
		if sk == driver.TenantSettingsSK {
			prefs, err := defaultPreferences(av)
			if err != nil {
				return driver.Config{}, fmt.Errorf("dynamo: default preferences of tenant %q: %w", sc.Tenant, err)
			}
			var it tenantItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return driver.Config{}, fmt.Errorf("dynamo: decode tenant settings of %q: %w", sc.Tenant, err)
			}
			cfg.Tenant = &driver.TenantSettings{Title: it.Title, TTL: it.TTL, UpdatedBy: it.UID, Preferences: prefs}
			continue
		}
		prefs, err := defaultPreferences(av)
		if err != nil {
			return driver.Config{}, fmt.Errorf("dynamo: default preferences of inbox %q/%q: %w", sc.Tenant, sc.Inbox, err)
		}
		var it inboxConfigItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return driver.Config{}, fmt.Errorf("dynamo: decode inbox config of %q/%q: %w", sc.Tenant, sc.Inbox, err)
		}
		cfg.Inbox = &driver.InboxConfig{Title: it.Title, Description: it.Description, TTL: it.TTL, UpdatedBy: it.UID, Preferences: prefs}
	}
	return cfg, nil
}

// defaultPreferences returns the default preferences a config item av
// holds (its prefs attribute, see driver.Preferences.Encode; none if
// absent). Any other attribute type, a string Encode does not write, or
// defaults that mute a thread (driver.ValidateDefaultPreferences), is
// driver.ErrInvalidInput (or driver.ErrInvalidKey).
func defaultPreferences(av map[string]types.AttributeValue) (driver.Preferences, error) {
	v, ok := av["prefs"]
	if !ok {
		return driver.Preferences{}, nil
	}
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		return driver.Preferences{}, fmt.Errorf("%w: prefs of type %T, not a string", driver.ErrInvalidInput, v)
	}
	prefs, err := driver.DecodePreferences(s.Value)
	if err != nil {
		return driver.Preferences{}, err
	}
	// Defaults never mute a thread (a thread is one user's): the Store
	// writes none that do, and Counts keeps no muted counters for them,
	// so List would mark muted what Counts counts unread.
	if err := driver.ValidateDefaultPreferences(prefs); err != nil {
		return driver.Preferences{}, err
	}
	return prefs, nil
}

// PutTenantSettings writes the tenant's settings item (kind TS), replacing
// any; settings that ts.Validate refuses (default preferences not as a
// Store keeps them, say) are refused, as every Store refuses them.
func (s *Store) PutTenantSettings(ctx context.Context, tenant string, ts driver.TenantSettings) error {
	if err := ts.Validate(); err != nil {
		return err
	}
	item, err := s.item(driver.TenantPK(tenant), driver.TenantSettingsSK, tenantItem{
		Kind: kindTenant, Title: ts.Title, TTL: ts.TTL, Prefs: ts.Preferences.Encode(), TenantKey: tenant, UID: ts.UpdatedBy,
	}, time.Time{})
	if err != nil {
		return err
	}
	return s.put(ctx, "put tenant settings", item)
}

// PutInboxConfig writes the inbox's config item (kind IC), replacing any;
// a config that ic.Validate refuses is refused, as every Store refuses it.
func (s *Store) PutInboxConfig(ctx context.Context, sc driver.Scope, ic driver.InboxConfig) error {
	if err := ic.Validate(); err != nil {
		return err
	}
	item, err := s.item(driver.TenantPK(sc.Tenant), driver.InboxConfigSK(sc.Inbox), inboxConfigItem{
		Kind: kindInbox, Title: ic.Title, Description: ic.Description, TTL: ic.TTL, Prefs: ic.Preferences.Encode(),
		TenantKey: sc.Tenant, InboxKey: sc.Inbox, UID: ic.UpdatedBy,
	}, time.Time{})
	if err != nil {
		return err
	}
	return s.put(ctx, "put inbox config", item)
}

// put writes item unconditionally.
func (s *Store) put(ctx context.Context, op string, item map[string]types.AttributeValue) error {
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:              aws.String(s.table),
		Item:                   item,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return opError(op, err)
	}
	return nil
}

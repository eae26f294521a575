package dynamo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/internal/ddblocal"
)

// TestHostileDefaultPreferences: a config item's prefs attribute (the
// default preferences of a tenant or an inbox) that another program
// overwrote with what Encode does not write (a string out of its form, or
// another type), or with defaults that mute a thread, which no Store
// writes (driver.ValidateDefaultPreferences), makes Config, and the calls
// that apply the defaults, fail
// with ErrInvalidInput (ErrInvalidKey for a key that cannot be); nothing
// panics. Removed, the defaults are none again.
func TestHostileDefaultPreferences(t *testing.T) {
	ddblocal.Endpoint(t)
	ctx := context.Background()
	store, c, table := newLocalStore(t)
	ib := inbox.New(store, inbox.WithConfigCacheTTL(0))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	ann := scope.User("ann")
	if err := ib.PutTenantSettings(ctx, scope.Tenant, inbox.TenantSettings{Preferences: inbox.Preferences{OptedOut: []string{"promo"}}}); err != nil {
		t.Fatal(err)
	}
	if err := ib.PutInboxConfig(ctx, scope, inbox.InboxConfig{Preferences: inbox.Preferences{MutedGroups: []string{"devs"}}}); err != nil {
		t.Fatal(err)
	}
	invalid := func(err error) bool {
		return errors.Is(err, driver.ErrInvalidInput) || errors.Is(err, driver.ErrInvalidKey)
	}
	setPrefs := func(sk string, v types.AttributeValue) {
		t.Helper()
		in := &dynamodb.UpdateItemInput{
			TableName:        aws.String(table),
			Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: driver.TenantPK(scope.Tenant)}, "sk": &types.AttributeValueMemberS{Value: sk}},
			UpdateExpression: aws.String("REMOVE prefs"),
		}
		if v != nil {
			in.UpdateExpression = aws.String("SET prefs = :v")
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": v}
		}
		if _, err := c.UpdateItem(ctx, in); err != nil {
			t.Fatalf("UpdateItem %s: %v", sk, err)
		}
	}
	for _, item := range []struct{ what, sk string }{{"tenant settings", driver.TenantSettingsSK}, {"inbox config", driver.InboxConfigSK(scope.Inbox)}} {
		for _, v := range []struct {
			what string
			v    types.AttributeValue
		}{
			{"unsorted groups", &types.AttributeValueMemberS{Value: "ops#devs"}},
			{"an opt-out without its closing '*'", &types.AttributeValueMemberS{Value: "*promo"}},
			{"a group after a category", &types.AttributeValueMemberS{Value: "?news#devs"}},
			{"an empty key", &types.AttributeValueMemberS{Value: "#"}},
			{"everyone's group", &types.AttributeValueMemberS{Value: driver.PublicGroup}},
			{"a muted thread", &types.AttributeValueMemberS{Value: driver.MutedThreadToken("bob")}},
			{"a number", &types.AttributeValueMemberN{Value: "5"}},
			{"a boolean", &types.AttributeValueMemberBOOL{Value: true}},
			{"a list", &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "devs"}}}},
			{"a map", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"devs": &types.AttributeValueMemberS{Value: "x"}}}},
			{"a string set", &types.AttributeValueMemberSS{Value: []string{"devs"}}},
		} {
			setPrefs(item.sk, v.v)
			if _, err := store.Config(ctx, scope); !invalid(err) {
				t.Errorf("%s with prefs %s: Store.Config: %v, want ErrInvalidInput", item.what, v.what, err)
			}
			if _, err := ib.Preferences(ctx, ann); !invalid(err) {
				t.Errorf("%s with prefs %s: Preferences(ann): %v, want ErrInvalidInput", item.what, v.what, err)
			}
			if _, err := ib.Counts(ctx, ann); !invalid(err) {
				t.Errorf("%s with prefs %s: Counts(ann): %v, want ErrInvalidInput", item.what, v.what, err)
			}
		}
		setPrefs(item.sk, nil)
	}
	if got, err := ib.Preferences(ctx, ann); err != nil || !got.IsZero() {
		t.Errorf("Preferences(ann), the prefs attributes removed: %+v, %v; want none", got, err)
	}
}

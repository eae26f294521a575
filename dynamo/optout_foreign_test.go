package dynamo_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/internal/ddblocal"
)

// TestForeignMutedOptOut: another program overwrote a user's muted
// attribute (her preferences, on her c#*) with a set or a list that
// holds an opt-out's token, "*promo*". A promo Publish to her returns at
// once and stores her copy: the condition of her c#* takes only a string
// for preferences (DynamoDB's contains finds an element of a set or a
// list too). Reading her preferences (Preferences, Counts) is
// ErrInvalidInput, as for a string that is no preferences.
func TestForeignMutedOptOut(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	ctx := context.Background()
	store, c, table := newLocalStore(t)
	ib := inbox.New(store, inbox.WithSharedCache(0))
	for i, v := range []types.AttributeValue{
		&types.AttributeValueMemberSS{Value: []string{"*promo*"}},
		&types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "*promo*"}}},
	} {
		scope := inbox.Scope{Tenant: "acme", Inbox: "i" + string(rune('a'+i))}
		ann := scope.User("ann")
		if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "ops", Category: "ops"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(table),
			Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: ann.Partition().PK()},
				"sk": &types.AttributeValueMemberS{Value: driver.CounterSK("", "")},
			},
			UpdateExpression:          aws.String("SET muted = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": v},
		}); err != nil {
			t.Fatalf("write a foreign muted attribute %T: %v", v, err)
		}
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		res, err := ib.Publish(pctx, scope, []string{"ann"}, inbox.Draft{Title: "sale", Category: "promo"})
		cancel()
		if err != nil || !slices.Equal(res.Delivered, []string{"ann"}) {
			t.Errorf("%T: Publish(promo, ann) = delivered %v, opted out %v, %v; want ann delivered", v, res.Delivered, res.OptedOut, err)
		}
		if p, err := ib.Preferences(ctx, ann); !errors.Is(err, inbox.ErrInvalidInput) {
			t.Errorf("%T: Preferences(ann) = %+v, %v; want ErrInvalidInput", v, p, err)
		}
		if c, err := ib.Counts(ctx, ann); !errors.Is(err, inbox.ErrInvalidInput) {
			t.Errorf("%T: Counts(ann) = %+v, %v; want ErrInvalidInput", v, c, err)
		}
	}
}

package dynamo

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/internal/ddbsize"
)

// TestTransactLeastThreadEntry: an update of a thread's own counter (it
// sets rev) is billed its unread index entry too, on a table with the
// unread index; another update, or one on a table without it, is not.
func TestTransactLeastThreadEntry(t *testing.T) {
	update := func(names map[string]string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{TableName: aws.String("t"), UpdateExpression: aws.String("SET #0 = :0"), ExpressionAttributeNames: names}}
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		update(map[string]string{"#0": attrRev, "#1": "published"}),
		update(map[string]string{"#0": "published"}),
	}}
	with, err := resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	without, err := resolve([]Option{WithUnreadIndex("")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		o    options
		want float64
	}{{"with the unread index", with, 2*writeUnits(0, true) + indexEntryUnits}, {"without it", without, 2 * writeUnits(0, true)}} {
		if got := newBilling(c.o).transactLeast(in); got != c.want {
			t.Errorf("%s: transactLeast = %v, want %v", c.what, got, c.want)
		}
	}
}

// TestNumberSizeExponent: a number written with an exponent counts as the
// same number written out, whatever its significant digits (up to
// DynamoDB's 38).
func TestNumberSizeExponent(t *testing.T) {
	for s, plain := range map[string]string{
		"-12.5e3":                            "-12500",
		"1.2345678901234567890123456789e5":   "123456.78901234567890123456789",
		"9.9999999999999999999999999999e-20": "0.000000000000000000099999999999999999999999999999",
		"12345678901234567890123456789012e6": "12345678901234567890123456789012000000",
	} {
		if got, want := numberSize(s), ddbsize.Number(plain); got != want {
			t.Errorf("numberSize(%q) = %d, want %d (%s)", s, got, want, plain)
		}
	}
}

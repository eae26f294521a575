package dynamo

import (
	"math"
	"math/big"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/internal/ddbsize"
)

// This file holds AWS's billing rules for the requests the Store makes,
// which both the requests it reports (reporting) and the benchmarks'
// meter rest on:
//
//   - A write is billed 1 write unit per KB of the item, rounded up, at
//     least 1; the size is the larger of the item's before and after the
//     write. In a transaction each item (a condition check too) is billed
//     twice that.
//   - A write that puts an item's entry in a local secondary index is
//     billed for the entry too: the unread and thread indexes' entries
//     (keys, category and expiry; a thread counter's tallies) are under
//     1 KB, 1 unit. An update of a thread's own counter changes its
//     entry in the unread index (its Rev at least), billed so too.
//   - A read is billed 1 read unit per 4 KB read, strongly consistent,
//     half that eventually consistent; a read that finds nothing is billed
//     as one of 4 KB, and each key of a BatchGetItem is a read of its own.
//     In a TransactGetItems each item (read or found missing) is billed
//     twice a strongly consistent read of it.

// billingKB is the unit of write billing.
const billingKB = 1024

// indexEntryUnits is what a write of an entry in the unread or thread
// index bills: it is under 1 KB.
const indexEntryUnits = 1

// writeUnits returns the write units AWS bills for writing an item whose
// larger size, before or after the write, is size bytes: 1 per KB, rounded
// up, at least 1; twice that in a transaction.
func writeUnits(size int, transactional bool) float64 {
	u := max(math.Ceil(float64(size)/billingKB), 1)
	if transactional {
		u *= 2
	}
	return u
}

// readUnit returns the least AWS bills a read for each item it reads (or
// finds missing): 1 unit strongly consistent, 0.5 eventually.
func readUnit(consistent *bool) float64 {
	if aws.ToBool(consistent) {
		return 1
	}
	return 0.5
}

// queryLeast returns the least AWS bills for Query in: one read, even if
// it finds nothing.
func queryLeast(in *dynamodb.QueryInput) float64 { return readUnit(in.ConsistentRead) }

// batchGetLeast returns the least AWS bills for BatchGetItem in: a read
// for each key it processed (all of in's keys but those out returns
// unprocessed; out may be nil), even one that finds nothing.
func batchGetLeast(in *dynamodb.BatchGetItemInput, out *dynamodb.BatchGetItemOutput) float64 {
	u := 0.0
	for table, ka := range in.RequestItems {
		n := len(ka.Keys)
		if out != nil {
			n -= len(out.UnprocessedKeys[table].Keys)
		}
		u += float64(max(n, 0)) * readUnit(ka.ConsistentRead)
	}
	return u
}

// readKB is the unit of read billing.
const readKB = 4 * 1024

// transactGetLeast returns what AWS bills for TransactGetItems in, which
// out answered (nil if it failed): 2 read units per 4 KB of each item
// out returns, rounded up, and 2 for each item it found missing; with no
// answer, 2 for each item of in.
func transactGetLeast(in *dynamodb.TransactGetItemsInput, out *dynamodb.TransactGetItemsOutput) float64 {
	if out == nil || len(out.Responses) != len(in.TransactItems) {
		return 2 * float64(len(in.TransactItems))
	}
	u := 0.0
	for _, r := range out.Responses {
		u += 2 * max(math.Ceil(float64(itemSize(r.Item))/readKB), 1)
	}
	return u
}

// billing knows what of a request's items AWS's bill depends on: the
// table's partition key attribute, and the key attributes of its local
// secondary indexes. It holds no mutable state.
type billing struct {
	pk      string
	indexed []string
}

// newBilling returns the billing of a table with options o.
func newBilling(o options) billing {
	b := billing{pk: o.pk}
	for _, ix := range [][2]string{{o.unread, attrUnread}, {o.thread, attrTSK}} {
		if ix[0] != "" {
			b.indexed = append(b.indexed, ix[1])
		}
	}
	return b
}

// notExistsCondition matches the condition expression the expression
// builder makes of attribute_not_exists on one attribute name.
var notExistsCondition = regexp.MustCompile(`^attribute_not_exists \((#\w+)\)$`)

// putLeast returns the least AWS bills for a Put of item on condition
// cond (with names) in a transaction or not: the item's size as the
// request holds it (its size before may have been larger), and, when cond
// says no item was there (attribute_not_exists on the partition key), an
// entry in each local secondary index whose key the item holds. Another
// put may have replaced an item with the same entry, which AWS does not
// bill: it is left out.
func (b billing) putLeast(item map[string]types.AttributeValue, cond *string, names map[string]string, transactional bool) float64 {
	u := writeUnits(itemSize(item), transactional)
	m := notExistsCondition.FindStringSubmatch(aws.ToString(cond))
	if m == nil || names[m[1]] != b.pk {
		return u
	}
	for _, a := range b.indexed {
		if _, ok := item[a]; ok {
			u += indexEntryUnits
		}
	}
	return u
}

// transactLeast returns the least AWS bills for transaction in, from what
// the request holds: each put as putLeast says, and each update, delete or
// condition check as an item of 1 KB (its size is not in the request), in
// the table and not in an index (whether its entry changes is not
// either), but an update of a thread's own counter, which sets its Rev:
// its unread index entry too.
func (b billing) transactLeast(in *dynamodb.TransactWriteItemsInput) float64 {
	u := 0.0
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			u += b.putLeast(it.Put.Item, it.Put.ConditionExpression, it.Put.ExpressionAttributeNames, true)
		case it.Update != nil && slices.Contains(b.indexed, attrUnread) && names(it.Update.ExpressionAttributeNames, attrRev):
			u += writeUnits(0, true) + indexEntryUnits
		default:
			u += writeUnits(0, true)
		}
	}
	return u
}

// names reports whether an expression's attribute names name attr.
func names(m map[string]string, attr string) bool {
	for _, n := range m {
		if n == attr {
			return true
		}
	}
	return false
}

// itemSize returns the bytes DynamoDB counts for item: each attribute's
// name and value.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + avSize(v)
	}
	return n
}

// avSize returns the bytes DynamoDB counts for v: a string or binary its
// length; a number ddbsize.Number; a boolean or null 1; a map 3 plus each
// member's name, value and 1; a list 3 plus each element's value and 1; a
// set the sum of its members.
func avSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += len(k) + avSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += avSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, e := range v.Value {
			n += numberSize(e)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	}
	return 1 // BOOL, NULL
}

// numberPrec is the mantissa bits numberSize parses a number with an
// exponent to: enough that the shortest decimal of the value is the
// number's own, up to DynamoDB's 38 significant digits (about 127 bits).
const numberPrec = 256

// numberSize is ddbsize.Number for a number as the SDK writes it, which
// may have an exponent.
func numberSize(s string) int {
	if !strings.ContainsAny(s, "eE") {
		return ddbsize.Number(s)
	}
	f, _, err := new(big.Float).SetPrec(numberPrec).Parse(s, 10)
	if err != nil {
		return len(s)
	}
	return ddbsize.Number(f.Text('f', -1))
}

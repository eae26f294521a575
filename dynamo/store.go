package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stak/inbox/driver"
)

// Client is the narrow part of *dynamodb.Client the Store uses, so that
// users can wrap or instrument it. Every request the Store makes sets
// ReturnConsumedCapacity to TOTAL, so a wrapping Client can sum the
// capacity units of each call; the Store itself reports each request, with
// its units, to the driver.RequestLog of the call's context
// (driver.StartRequest), which is how inbox.WithHooks sees them.
type Client interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error)
}

// Store is the production driver.Store: one DynamoDB table in the seeds'
// single-table layout (see the package documentation). Create it with New.
//
// A Store holds no mutable state but hints (the threads it found muted,
// the bounds of the read positions it saw, and the receipts' hints of
// users' counters of shared threads, which its writes' conditions check) and is safe for concurrent use by
// multiple goroutines, as long as its Client is (a *dynamodb.Client is).
type Store struct {
	client Client
	table  string
	o      options
	// hints remembers the muted threads of user partitions, as writes
	// found them (see muteHints).
	hints *muteHints
	// covers remembers the bounds of the read positions of user
	// partitions, as the Store last saw them (see coverHints).
	covers *coverHints
	// forms remembers the receipts' hints of users' counters of shared
	// threads, as writes found them (see hintForms).
	forms *hintForms
}

var _ driver.Store = (*Store)(nil)

// New returns a Store over table, reached through client. The table must
// have string partition and sort keys named as the options say (pk and sk
// by default); CreateTable makes one.
//
// New panics if the options name an attribute empty, give two of the key
// and TTL attributes the same name, or use a name the Store writes itself
// (such as "kind" or "ttl"): that is a programming error, like a bad
// regexp.MustCompile pattern.
func New(client Client, table string, opts ...Option) *Store {
	o, err := resolve(opts)
	if err != nil {
		panic(err)
	}
	return &Store{client: reporting{Client: client, table: table, bill: newBilling(o)}, table: table, o: o, hints: &muteHints{}, covers: &coverHints{}, forms: &hintForms{}}
}

// Namespace returns the table's name (see driver.Namespacer): Inboxes over
// Stores of two tables that share one inbox.SharedBackend keep their
// snapshots apart. Tables of the same name in two accounts or regions need
// backends of their own (or rediscache prefixes).
func (s *Store) Namespace() string { return s.table }

// key returns the primary key of the item at pk, sk.
func (s *Store) key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		s.o.pk: &types.AttributeValueMemberS{Value: pk},
		s.o.sk: &types.AttributeValueMemberS{Value: sk},
	}
}

// messageKey returns the primary key of the message, broadcast or receipt
// at k.
func (s *Store) messageKey(k driver.Key) map[string]types.AttributeValue {
	return s.key(k.Partition.PK(), driver.MessageSK(k.ID))
}

// itemKey returns the string values of item's partition and sort keys.
func (s *Store) itemKey(item map[string]types.AttributeValue) (pk, sk string, err error) {
	p, ok1 := item[s.o.pk].(*types.AttributeValueMemberS)
	k, ok2 := item[s.o.sk].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 {
		return "", "", fmt.Errorf("dynamo: item without string key attributes %q and %q", s.o.pk, s.o.sk)
	}
	return p.Value, k.Value, nil
}

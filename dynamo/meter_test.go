package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// meter is a dynamo.Client that counts the requests a Store makes, their
// round trips, the capacity units DynamoDB Local reports for them (the
// Store asks for TOTAL consumed capacity on every call) and the units AWS
// would bill for them. It is safe for concurrent use.
//
// Round trips are the sequential stages of an operation: a request that
// starts while another is in flight shares its round trip; one that starts
// while none is begins a new one. The Inbox's parallel reads (List's and
// Counts' queries) start within microseconds of each other, while a
// request to DynamoDB Local takes a millisecond or more, so they count as
// one.
//
// Local's figure differs from AWS's billing for transactions: Local
// charges each transactional item 2 units per KB as AWS does, but sums
// only the distinct per-item amounts (three small items report 2 units,
// where AWS bills 6). So the meter computes the write units AWS bills from
// the items themselves: it reads each written item (through the wrapped
// client, uncounted) before and after the write, and bills the larger
// size, rounded up to the KB, once for a single write and twice for each
// item of a transaction (a condition check included). An item in the
// unread index before or after the write (it has the attribute "unread")
// adds one unit: its index entry, keys only and under 1 KB, is written,
// changed or deleted, and AWS bills writes to a local secondary index by
// the entry's size; so does an item in the thread index ("tsk"). A write
// that changes the item's key in an index adds two: AWS deletes the old
// entry and puts the new one. (A write that changes no attribute an index
// holds costs AWS nothing there: the meter bills it anyway, so its figures
// are an upper bound.) An item in
// the scheduled index ("spk"), a global one, adds the size of its entry
// (the keys and the projected attributes), rounded up to the KB, when the
// write puts, deletes or changes that entry, and nothing when the entry
// stays as it was (a mark, which changes no projected attribute), as AWS
// bills a global index. Reads are billed as Local reports them, which
// follows AWS's rule (1 unit per 4 KB read, strongly consistent; half
// that eventually consistent; a TransactGetItems 2 units per 4 KB of
// each item read or found missing), but at least what the Store's rule
// gives for what the request returns (a read that finds nothing: see
// metered). TestMeterBillsAsAWS checks them. SDK retries happen below the
// Client and are not counted. The rules (an item's size, the units per KB, a
// read's least) are the Store's own (billing.go), which the requests it
// reports to the Inbox's hooks follow without reading the items (see the
// package's Capacity): TestReportsBillAsAWS compares the two.
type meter struct {
	c dynamo.Client

	mu       sync.Mutex
	on       bool
	requests int
	rounds   int
	inFlight int
	local    float64 // capacity units as DynamoDB Local reports them
	rcu, wcu float64 // units as AWS bills them

	watch   string // a partition key whose requests are counted apart
	watched int
}

// reads reports whether a request naming values reads or writes the
// watched partition: its key condition or key holds the watched key.
func (m *meter) reads(values ...map[string]types.AttributeValue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.on || m.watch == "" {
		return
	}
	for _, vs := range values {
		for _, v := range vs {
			if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == m.watch {
				m.watched++
				return
			}
		}
	}
}

func (m *meter) start() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.on {
		return false
	}
	m.requests++
	if m.inFlight == 0 {
		m.rounds++
	}
	m.inFlight++
	return true
}

// end ends a request that start counted, adding the capacity Local
// reported, and the read and write units AWS bills for it.
func (m *meter) end(rcu, wcu float64, cc ...types.ConsumedCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight--
	if !m.on {
		return
	}
	for _, c := range cc {
		m.local += aws.ToFloat64(c.CapacityUnits)
	}
	m.rcu += rcu
	m.wcu += wcu
}

// measure starts counting from zero.
func (m *meter) measure() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on, m.requests, m.rounds, m.inFlight, m.local, m.rcu, m.wcu, m.watched = true, 0, 0, 0, 0, 0, 0, 0
}

// resume counts again after pause, adding to what was counted before.
func (m *meter) resume() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on = true
}

// pause stops counting, e.g. while a benchmark sets up.
func (m *meter) pause() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on = false
}

// report adds the per-operation metrics to b.
func (m *meter) report(b *testing.B) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := float64(b.N)
	b.ReportMetric(float64(m.requests)/n, "requests/op")
	b.ReportMetric(float64(m.rounds)/n, "round-trips/op")
	b.ReportMetric(m.local/n, "local-CU/op")
	b.ReportMetric(m.rcu/n, "RCU/op")
	b.ReportMetric(m.wcu/n, "WCU/op")
	if m.watch != "" {
		b.ReportMetric(float64(m.watched)/n, "public-requests/op")
	}
}

func one(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

// readUnits returns the read units in cc, which Local reports as AWS bills
// them (but for reads that find nothing: see metered).
func readUnits(cc ...types.ConsumedCapacity) float64 {
	u := 0.0
	for _, c := range cc {
		u += aws.ToFloat64(c.CapacityUnits)
	}
	return u
}

// itemKey is where a write lands.
type itemKey struct {
	table string
	key   map[string]types.AttributeValue
}

// written is a request's writes, and whether they are a transaction's
// (which bills 2 units per KB of each item, where a single write bills 1).
type written struct {
	keys          []itemKey
	transactional bool
	before        []stored
}

// stored is what the meter reads of an item around a write: its size (0
// for none), its keys in the unread index and the thread index ("" for
// none), and its entry in the scheduled index ("" for none) with the
// entry's size.
type stored struct {
	size            int
	unread, threads string
	scheduled       string
	scheduledSize   int
}

// localIndexUnits returns the write units AWS bills a local secondary
// index for a write that changes an item's key in it from before to after
// ("" for no entry): none if the item is in it neither before nor after,
// two if the key changes (the old entry deleted, the new one put), one
// otherwise (an entry put, deleted or, at most, changed in place). Each
// entry is under 1 KB.
func localIndexUnits(before, after string) float64 {
	switch {
	case before == "" && after == "":
		return 0
	case before != "" && after != "" && before != after:
		return 2 * dynamo.IndexEntryUnits
	}
	return dynamo.IndexEntryUnits
}

// metered runs one request through m: a read (w nil), billed as Local
// reports it but at least minRead (AWS bills a read that finds nothing one
// unit, half eventually consistent; Local reports 0), or the writes w,
// billed from the sizes of their items before and after. A single write
// that its condition refused writes nothing, but AWS bills it as a write
// of the item there (1 unit if there is none); a failed transaction, or a
// request that failed otherwise, is billed nothing.
func metered[O any](m *meter, w *written, minRead float64, call func() (O, error), used func(O) []types.ConsumedCapacity) (O, error) {
	if !m.start() {
		return call()
	}
	ctx := context.Background()
	if w != nil {
		w.before = m.sizes(ctx, w.keys)
	}
	out, err := call()
	if err != nil {
		wcu := 0.0
		var failed *types.ConditionalCheckFailedException
		if w != nil && !w.transactional && errors.As(err, &failed) {
			for _, b := range w.before {
				wcu += dynamo.WriteUnits(b.size, false)
			}
		}
		m.end(0, wcu)
		return out, err
	}
	cc := used(out)
	if w == nil {
		m.end(max(readUnits(cc...), minRead), 0, cc...)
		return out, nil
	}
	after := m.sizes(ctx, w.keys)
	wcu := 0.0
	for i := range w.keys {
		wcu += dynamo.WriteUnits(max(w.before[i].size, after[i].size), w.transactional)
		wcu += localIndexUnits(w.before[i].unread, after[i].unread)
		wcu += localIndexUnits(w.before[i].threads, after[i].threads) // its entry projects the keys, taxonomy and expiry: under 1 KB
		if b, a := w.before[i], after[i]; b.scheduled != a.scheduled {
			wcu += max(math.Ceil(float64(max(b.scheduledSize, a.scheduledSize))/1024), 1)
		}
	}
	m.end(0, wcu, cc...)
	return out, nil
}

// sizes returns the size DynamoDB counts for the item at each key, 0 for
// none, and its keys in the indexes, read consistently through the wrapped
// client (uncounted).
func (m *meter) sizes(ctx context.Context, keys []itemKey) []stored {
	out := make([]stored, len(keys))
	for i, k := range keys {
		res, err := m.c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			k.table: {Keys: []map[string]types.AttributeValue{k.key}, ConsistentRead: aws.Bool(true)},
		}})
		if err == nil && len(res.Responses[k.table]) == 1 {
			item := res.Responses[k.table][0]
			out[i] = stored{size: itemSize(item), unread: indexKey(item["unread"]), threads: indexKey(item["tsk"])}
			if _, ok := item["spk"]; ok {
				entry := map[string]types.AttributeValue{}
				for _, name := range append([]string{"pk", "sk", "spk", "ssk"}, dynamo.ScheduledProjection(driver.TTLAttribute)...) {
					if v, ok := item[name]; ok {
						entry[name] = v
					}
				}
				out[i].scheduled, out[i].scheduledSize = avString(&types.AttributeValueMemberM{Value: entry}), itemSize(entry)
			}
		}
	}
	return out
}

// indexKey returns an item's index key attribute v (a string), "" if it
// has none.
func indexKey(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// avString returns v as a string that two values share if and only if
// they are equal: maps with their keys sorted.
func avString(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberM:
		keys := slices.Sorted(maps.Keys(v.Value))
		var b strings.Builder
		b.WriteString("M{")
		for _, k := range keys {
			fmt.Fprintf(&b, "%q:%s,", k, avString(v.Value[k]))
		}
		return b.String() + "}"
	case *types.AttributeValueMemberL:
		var b strings.Builder
		b.WriteString("L[")
		for _, e := range v.Value {
			b.WriteString(avString(e) + ",")
		}
		return b.String() + "]"
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("S%q", v.Value)
	case *types.AttributeValueMemberN:
		return "N" + v.Value
	}
	return fmt.Sprintf("%T%v", v, v)
}

// keyOf returns the primary key of item (the Store's default attribute
// names, which the benchmarks use).
func keyOf(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": item["pk"], "sk": item["sk"]}
}

// itemSize returns the bytes DynamoDB counts for item (the Store's own
// count, by AWS's rules).
func itemSize(item map[string]types.AttributeValue) int { return dynamo.ItemSize(item) }

func (m *meter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for _, ka := range in.RequestItems {
		m.reads(ka.Keys...)
	}
	return metered(m, nil, dynamo.BatchGetLeast(in, nil), func() (*dynamodb.BatchGetItemOutput, error) { return m.c.BatchGetItem(ctx, in, optFns...) },
		func(out *dynamodb.BatchGetItemOutput) []types.ConsumedCapacity { return out.ConsumedCapacity })
}

func (m *meter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	m.reads(in.ExpressionAttributeValues)
	return metered(m, nil, dynamo.QueryLeast(in), func() (*dynamodb.QueryOutput, error) { return m.c.Query(ctx, in, optFns...) },
		func(out *dynamodb.QueryOutput) []types.ConsumedCapacity { return one(out.ConsumedCapacity) })
}

func (m *meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	w := &written{keys: []itemKey{{aws.ToString(in.TableName), keyOf(in.Item)}}}
	return metered(m, w, 0, func() (*dynamodb.PutItemOutput, error) { return m.c.PutItem(ctx, in, optFns...) },
		func(out *dynamodb.PutItemOutput) []types.ConsumedCapacity { return one(out.ConsumedCapacity) })
}

func (m *meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	w := &written{keys: []itemKey{{aws.ToString(in.TableName), in.Key}}}
	return metered(m, w, 0, func() (*dynamodb.UpdateItemOutput, error) { return m.c.UpdateItem(ctx, in, optFns...) },
		func(out *dynamodb.UpdateItemOutput) []types.ConsumedCapacity { return one(out.ConsumedCapacity) })
}

func (m *meter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	w := &written{transactional: true}
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			w.keys = append(w.keys, itemKey{aws.ToString(it.Put.TableName), keyOf(it.Put.Item)})
		case it.Update != nil:
			w.keys = append(w.keys, itemKey{aws.ToString(it.Update.TableName), it.Update.Key})
		case it.Delete != nil:
			w.keys = append(w.keys, itemKey{aws.ToString(it.Delete.TableName), it.Delete.Key})
		case it.ConditionCheck != nil:
			w.keys = append(w.keys, itemKey{aws.ToString(it.ConditionCheck.TableName), it.ConditionCheck.Key})
		}
	}
	return metered(m, w, 0, func() (*dynamodb.TransactWriteItemsOutput, error) { return m.c.TransactWriteItems(ctx, in, optFns...) },
		func(out *dynamodb.TransactWriteItemsOutput) []types.ConsumedCapacity { return out.ConsumedCapacity })
}

// TransactGetItems is billed as Local reports it, but at least 2 units
// per 4 KB of each item it returns, 2 for each it finds missing, as AWS
// bills it (dynamo.TransactGetLeast).
func (m *meter) TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error) {
	for _, it := range in.TransactItems {
		if it.Get != nil {
			m.reads(it.Get.Key)
		}
	}
	if !m.start() {
		return m.c.TransactGetItems(ctx, in, optFns...)
	}
	out, err := m.c.TransactGetItems(ctx, in, optFns...)
	if err != nil {
		m.end(0, 0)
		return out, err
	}
	m.end(max(readUnits(out.ConsumedCapacity...), dynamo.TransactGetLeast(in, out)), 0, out.ConsumedCapacity...)
	return out, nil
}

// TestMeterBillsAsAWS checks the meter's AWS-billed figures on requests of
// known sizes against AWS's published rules, and that Local reports reads
// (which the meter takes from it) by the same rules, and transactions not.
func TestMeterBillsAsAWS(t *testing.T) {
	ctx := context.Background()
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	m := &meter{c: c}
	m.measure()
	item := func(sk string, pad int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "p"}, "sk": &types.AttributeValueMemberS{Value: sk},
			"pad": &types.AttributeValueMemberS{Value: strings.Repeat("x", pad)},
			"n":   &types.AttributeValueMemberN{Value: "-12.5e3"},
		}
	}
	// Sizes: "pk"+"p" 3, "sk"+sk 2+len(sk), "pad"+pad 3+pad, "n"+-12500 1+4.
	const small, kb15, kb25 = 10, 1500, 2500
	check := func(step string, rcu, wcu, local float64) {
		t.Helper()
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.rcu != rcu || m.wcu != wcu || (local >= 0 && m.local != local) {
			t.Errorf("%s: billed %v RCU, %v WCU, Local %v; want %v RCU, %v WCU, Local %v", step, m.rcu, m.wcu, m.local, rcu, wcu, local)
		}
		m.rcu, m.wcu, m.local = 0, 0, 0
	}
	if got := itemSize(item("a", small)); got != 3+3+3+small+5 {
		t.Fatalf("itemSize = %d, want %d", got, 3+3+3+small+5)
	}
	tx := &dynamodb.TransactWriteItemsInput{}
	for _, sk := range []string{"a", "b", "c"} {
		tx.TransactItems = append(tx.TransactItems, types.TransactWriteItem{Put: &types.Put{TableName: &table, Item: item(sk, small)}})
	}
	tx.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	if _, err := m.TransactWriteItems(ctx, tx); err != nil {
		t.Fatal(err)
	}
	check("three small items in a transaction", 0, 6, 2) // Local under-reports
	if _, err := m.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item("d", kb25), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}); err != nil {
		t.Fatal(err)
	}
	check("a 2.5 KB PutItem", 0, 3, 3)
	tx = &dynamodb.TransactWriteItemsInput{ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal, TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: &table, Item: item("a", kb15)}},                                                                                   // grows a small item to 1.5 KB: 2 KB
		{ConditionCheck: &types.ConditionCheck{TableName: &table, Key: keyOf(item("d", 0)), ConditionExpression: aws.String("attribute_exists(pk)")}}, // 2.5 KB: 3 KB
	}}
	if _, err := m.TransactWriteItems(ctx, tx); err != nil {
		t.Fatal(err)
	}
	check("a put and a condition check in a transaction", 0, 2*2+2*3, -1)
	for _, sk := range []string{"b", "c"} {
		if _, err := m.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item(sk, kb15)}); err != nil {
			t.Fatal(err)
		}
	}
	check("two puts that grow items to 1.5 KB", 0, 4, -1)
	// A single write refused by its condition is billed as a write of the
	// item there (1 unit if there is none), though nothing is written.
	refused := func(sk string) {
		t.Helper()
		_, err := m.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item(sk, small), ConditionExpression: aws.String("#p = :x"),
			ExpressionAttributeNames: map[string]string{"#p": "pad"}, ExpressionAttributeValues: map[string]types.AttributeValue{":x": &types.AttributeValueMemberS{Value: "x"}}})
		var failed *types.ConditionalCheckFailedException
		if !errors.As(err, &failed) {
			t.Fatalf("a PutItem on a false condition: %v, want a ConditionalCheckFailedException", err)
		}
	}
	refused("d")
	check("a PutItem refused by its condition on a 2.5 KB item", 0, 3, -1)
	refused("none")
	check("a PutItem refused by its condition where there is no item", 0, 1, -1)
	// a, b, c are 1.5 KB each, d 2.5 KB: 7 KB in all, 2 units of 4 KB.
	query := func(pk string, consistent bool) {
		t.Helper()
		_, err := m.Query(ctx, &dynamodb.QueryInput{
			TableName: &table, KeyConditionExpression: aws.String("pk = :p"), ConsistentRead: aws.Bool(consistent),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: pk}},
			ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	query("p", true)
	check("a strongly consistent query of 7 KB", 2, 0, 2)
	query("p", false)
	check("an eventually consistent query of 7 KB", 1, 0, 1)
	query("none", true)
	check("a query that finds nothing", 1, 0, 0) // Local reports 0

	// A TransactGetItems: 2 units per 4 KB of each item, 2 for one found
	// missing, which Local reports alike (unlike a transaction's writes).
	if _, err := m.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item("g", 5000), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}); err != nil {
		t.Fatal(err)
	}
	check("a 5 KB PutItem", 0, 5, 5)
	transactGet := func(sks ...string) {
		t.Helper()
		in := &dynamodb.TransactGetItemsInput{ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
		for _, sk := range sks {
			in.TransactItems = append(in.TransactItems, types.TransactGetItem{Get: &types.Get{TableName: &table, Key: keyOf(item(sk, 0))}})
		}
		out, err := m.TransactGetItems(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Responses) != len(sks) {
			t.Fatalf("TransactGetItems of %v answered %d items", sks, len(out.Responses))
		}
	}
	transactGet("a", "d", "g", "none")
	check("a TransactGetItems of items of 1.5, 2.5 and 5 KB and a missing one", 2+2+4+2, 0, 10)
	transactGet("a", "b", "c")
	check("a TransactGetItems of three items of 1.5 KB", 6, 0, 6)
	transactGet("none", "none2")
	check("a TransactGetItems that finds nothing", 4, 0, 4)

	// An item in the unread index: its keys-only entry adds a unit when
	// written and when removed.
	indexed := item("e", small)
	indexed["unread"] = &types.AttributeValueMemberS{Value: "e"}
	if _, err := m.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: indexed}); err != nil {
		t.Fatal(err)
	}
	check("a small PutItem into the unread index", 0, 2, -1)
	if _, err := m.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &table, Key: keyOf(indexed), UpdateExpression: aws.String("REMOVE unread")}); err != nil {
		t.Fatal(err)
	}
	check("an update that takes an item out of the unread index", 0, 2, -1)
	if _, err := m.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &table, Key: keyOf(indexed), UpdateExpression: aws.String("SET #p = :p"),
		ExpressionAttributeNames: map[string]string{"#p": "pad"}, ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "y"}}}); err != nil {
		t.Fatal(err)
	}
	check("an update of an item out of the index", 0, 1, -1)
	// An update that changes an item's key in the unread index: its entry
	// is deleted and put again, two writes (as Local reports it too).
	setUnread := func(k string) {
		t.Helper()
		if _, err := m.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &table, Key: keyOf(indexed), UpdateExpression: aws.String("SET unread = :u"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":u": &types.AttributeValueMemberS{Value: k}}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}); err != nil {
			t.Fatal(err)
		}
	}
	setUnread("e1")
	check("an update that puts an item back in the unread index", 0, 2, 2)
	setUnread("e2")
	check("an update that changes an item's key in the unread index", 0, 3, 3)

	// An item in the scheduled index, a global one: its entry (keys and
	// projected attributes) is billed when it is put, changed or deleted,
	// not when an attribute it does not project changes.
	sched := item("f", small)
	sched["spk"], sched["ssk"] = &types.AttributeValueMemberS{Value: "s"}, &types.AttributeValueMemberS{Value: "f#ann"}
	sched["message"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"title": &types.AttributeValueMemberS{Value: strings.Repeat("t", kb15)}}}
	if _, err := m.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: sched}); err != nil {
		t.Fatal(err)
	}
	check("a PutItem of 1.5 KB into the scheduled index", 0, 2+2, -1)
	if _, err := m.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &table, Key: keyOf(sched), UpdateExpression: aws.String("SET readat = :r"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberN{Value: "1"}}}); err != nil {
		t.Fatal(err)
	}
	check("an update of an attribute the scheduled index does not project", 0, 2, -1)
	if _, err := m.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &table, Key: keyOf(sched), UpdateExpression: aws.String("SET deliverat = :d"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberN{Value: "2"}}}); err != nil {
		t.Fatal(err)
	}
	check("an update of an attribute it projects", 0, 2+2, -1)
	if _, err := m.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: &table, Key: keyOf(sched)}}}}); err != nil {
		t.Fatal(err)
	}
	check("a delete from the scheduled index in a transaction", 0, 2*2+2, -1)
}

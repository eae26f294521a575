package dynamo_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// meter is a dynamo.Client that counts the requests a Store makes, their
// round trips and the capacity units DynamoDB reports for them (the Store
// asks for TOTAL consumed capacity on every call). It is safe for
// concurrent use.
//
// Round trips are the sequential stages of an operation: a request that
// starts while another is in flight shares its round trip; one that starts
// while none is begins a new one. The Inbox's parallel reads (List's and
// Counts' two queries) start within microseconds of each other, while a
// request to DynamoDB Local takes a millisecond or more, so they count as
// one.
//
// Capacity units are what DynamoDB Local reports, which differs from AWS's
// billing for transactions: Local charges each transactional item 2 units
// per KB as AWS does, but sums only the distinct per-item amounts (three
// small items report 2 units, where AWS bills 6). SDK retries happen below
// the Client and are not counted.
type meter struct {
	c dynamo.Client

	mu       sync.Mutex
	on       bool
	requests int
	rounds   int
	inFlight int
	units    float64
}

func (m *meter) start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.on {
		return
	}
	m.requests++
	if m.inFlight == 0 {
		m.rounds++
	}
	m.inFlight++
}

func (m *meter) end(cc ...types.ConsumedCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.on {
		return
	}
	m.inFlight--
	for _, c := range cc {
		m.units += aws.ToFloat64(c.CapacityUnits)
	}
}

// measure starts counting from zero.
func (m *meter) measure() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.on, m.requests, m.rounds, m.inFlight, m.units = true, 0, 0, 0, 0
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
	b.ReportMetric(m.units/n, "CU/op")
}

func one(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

// metered runs one request through m and records the capacity it used.
func metered[O any](m *meter, call func() (O, error), used func(O) []types.ConsumedCapacity) (O, error) {
	m.start()
	out, err := call()
	if err != nil {
		m.end()
		return out, err
	}
	m.end(used(out)...)
	return out, nil
}

func (m *meter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return metered(m, func() (*dynamodb.BatchGetItemOutput, error) { return m.c.BatchGetItem(ctx, in, optFns...) },
		func(out *dynamodb.BatchGetItemOutput) []types.ConsumedCapacity { return out.ConsumedCapacity })
}

func (m *meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return metered(m, func() (*dynamodb.PutItemOutput, error) { return m.c.PutItem(ctx, in, optFns...) },
		func(out *dynamodb.PutItemOutput) []types.ConsumedCapacity { return one(out.ConsumedCapacity) })
}

func (m *meter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return metered(m, func() (*dynamodb.QueryOutput, error) { return m.c.Query(ctx, in, optFns...) },
		func(out *dynamodb.QueryOutput) []types.ConsumedCapacity { return one(out.ConsumedCapacity) })
}

func (m *meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return metered(m, func() (*dynamodb.UpdateItemOutput, error) { return m.c.UpdateItem(ctx, in, optFns...) },
		func(out *dynamodb.UpdateItemOutput) []types.ConsumedCapacity { return one(out.ConsumedCapacity) })
}

func (m *meter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return metered(m, func() (*dynamodb.TransactWriteItemsOutput, error) { return m.c.TransactWriteItems(ctx, in, optFns...) },
		func(out *dynamodb.TransactWriteItemsOutput) []types.ConsumedCapacity { return out.ConsumedCapacity })
}

// benchInbox returns an Inbox over a fresh table through a paused meter,
// and the scope to use. Its config cache is warmed, so that Publish and
// Broadcast measure their own writes.
func benchInbox(b *testing.B) (*inbox.Inbox, *meter, inbox.Scope) {
	b.Helper()
	c := ddblocal.Client(b)
	table, _ := ddblocal.NewTable(b, c)
	m := &meter{c: c}
	ib := inbox.New(dynamo.New(m, table))
	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
	if _, err := ib.Config(context.Background(), scope); err != nil {
		b.Fatalf("Config: %v", err)
	}
	return ib, m, scope
}

// draft is a typical message: a title, a small JSON body and a category.
func draft(i int) inbox.Draft {
	return inbox.Draft{
		Sender:   "ops-bot",
		Category: "ops",
		Title:    "Disk almost full on db-" + strconv.Itoa(i),
		Body:     map[string]any{"host": "db-" + strconv.Itoa(i), "used": 0.93},
		CTAURI:   "https://example.com/hosts/db-" + strconv.Itoa(i),
	}
}

func users(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "user" + strconv.Itoa(i)
	}
	return out
}

func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("users=%d", n), func(b *testing.B) { benchPublish(b, n) })
	}
}

// benchPublish measures Publish to n users.
func benchPublish(b *testing.B, n int) {
	ib, m, scope := benchInbox(b)
	to := users(n)
	ctx := context.Background()
	m.measure()
	b.ResetTimer()
	for i := range b.N {
		if _, err := ib.Publish(ctx, scope, to, draft(i)); err != nil {
			b.Fatalf("Publish: %v", err)
		}
	}
	b.StopTimer()
	m.report(b)
}

// BenchmarkBroadcast costs what BenchmarkPublish/users=1 does, whatever
// the number of users: a broadcast is stored once and has no audience
// size.
func BenchmarkBroadcast(b *testing.B) {
	ib, m, scope := benchInbox(b)
	ctx := context.Background()
	m.measure()
	b.ResetTimer()
	for i := range b.N {
		if _, err := ib.Broadcast(ctx, scope, draft(i)); err != nil {
			b.Fatalf("Broadcast: %v", err)
		}
	}
	b.StopTimer()
	m.report(b)
}

// feed gives u 100 direct messages and the inbox 50 broadcasts,
// interleaved in time.
func feed(b *testing.B, ib *inbox.Inbox, scope inbox.Scope, u inbox.User) {
	b.Helper()
	ctx := context.Background()
	for i := range 150 {
		var err error
		if i%3 == 2 {
			_, err = ib.Broadcast(ctx, scope, draft(i))
		} else {
			_, err = ib.Publish(ctx, scope, []string{u.ID}, draft(i))
		}
		if err != nil {
			b.Fatalf("set up the feed: %v", err)
		}
	}
}

// BenchmarkList lists a page of 20 for a user in 0, 4 and 16 groups (the
// most a call may name), each group with messages of its own: one query
// per partition (the user's, the public one, each group's), all in one
// round trip.
func BenchmarkList(b *testing.B) {
	for _, groups := range []int{0, 4, inbox.MaxGroups} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) {
			ib, m, scope := benchInbox(b)
			ann := scope.User("ann")
			feed(b, ib, scope, ann)
			ctx := context.Background()
			for g := range groups {
				group := "team" + strconv.Itoa(g)
				ann = ann.InGroups(append(ann.Groups, group)...)
				for i := range 5 {
					if _, err := ib.BroadcastGroup(ctx, scope, group, draft(i)); err != nil {
						b.Fatalf("BroadcastGroup: %v", err)
					}
				}
			}
			m.measure()
			b.ResetTimer()
			for range b.N {
				page, err := ib.List(ctx, ann, inbox.ListOptions{Limit: 20})
				if err != nil {
					b.Fatalf("List: %v", err)
				}
				if len(page.Messages) != 20 || page.Cursor == "" {
					b.Fatalf("List returned %d messages, cursor %q", len(page.Messages), page.Cursor)
				}
			}
			b.StopTimer()
			m.report(b)
		})
	}
}

// BenchmarkGroupMessage puts a message before every member of a group, two
// ways side by side: stored once for the group (BroadcastGroup), and the
// fan-out a team writes without groups (Publish to every member: a copy,
// and a transaction, per member). The group's cost has no term in its
// size: the same at 10 members as at 1,000,000, and after each run two
// members at the ends of the group (user0 and the last) see every message
// in Counts. The fan-out grows with the group; it runs at 10 and 100
// members (a million copies is hours on DynamoDB Local).
func BenchmarkGroupMessage(b *testing.B) {
	for _, n := range []int{10, 1_000_000} {
		b.Run(fmt.Sprintf("group/members=%d", n), func(b *testing.B) {
			ib, m, scope := benchInbox(b)
			ctx := context.Background()
			m.measure()
			b.ResetTimer()
			for i := range b.N {
				if _, err := ib.BroadcastGroup(ctx, scope, "all-staff", draft(i)); err != nil {
					b.Fatalf("BroadcastGroup: %v", err)
				}
			}
			b.StopTimer()
			m.report(b)
			m.pause()
			for _, id := range []string{"user0", "user" + strconv.Itoa(n-1)} {
				c, err := ib.Counts(ctx, scope.User(id).InGroups("all-staff"))
				if err != nil || c.Unread != int64(b.N) {
					b.Fatalf("Counts(%s) = %+v, %v; want %d unread", id, c.Tally, err, b.N)
				}
			}
		})
	}
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("fan-out/members=%d", n), func(b *testing.B) { benchPublish(b, n) })
	}
}

// BenchmarkMarkRead marks unread messages read: a direct message (its
// readat is set) or a broadcast (a receipt is written).
func BenchmarkMarkRead(b *testing.B) {
	for _, kind := range []string{"direct", "broadcast"} {
		b.Run(kind, func(b *testing.B) {
			ib, m, scope := benchInbox(b)
			ann := scope.User("ann")
			ctx := context.Background()
			ids := make([]string, b.N)
			for i := range ids {
				if kind == "direct" {
					res, err := ib.Publish(ctx, scope, []string{ann.ID}, draft(i))
					if err != nil {
						b.Fatalf("Publish: %v", err)
					}
					ids[i] = res.Message.ID
					continue
				}
				msg, err := ib.Broadcast(ctx, scope, draft(i))
				if err != nil {
					b.Fatalf("Broadcast: %v", err)
				}
				ids[i] = msg.ID
			}
			m.measure()
			b.ResetTimer()
			for _, id := range ids {
				if ok, err := ib.MarkRead(ctx, ann, id); err != nil || !ok {
					b.Fatalf("MarkRead = %v, %v", ok, err)
				}
			}
			b.StopTimer()
			m.report(b)
		})
	}
}

func BenchmarkCounts(b *testing.B) {
	ib, m, scope := benchInbox(b)
	ann := scope.User("ann")
	feed(b, ib, scope, ann)
	ctx := context.Background()
	m.measure()
	b.ResetTimer()
	for range b.N {
		c, err := ib.Counts(ctx, ann)
		if err != nil {
			b.Fatalf("Counts: %v", err)
		}
		if c.Total != 150 {
			b.Fatalf("Counts total = %d, want 150", c.Total)
		}
	}
	b.StopTimer()
	m.report(b)
}

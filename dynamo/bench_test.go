package dynamo_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"
	"golang.org/x/sync/errgroup"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// benchInbox returns an Inbox over a fresh table through a paused meter,
// and the scope to use. Its config cache is warmed, so that Publish and
// Broadcast measure their own writes.
func benchInbox(b *testing.B, opts ...dynamo.Option) (*inbox.Inbox, *meter, driver.Scope) {
	b.Helper()
	ib, m, scope, _ := benchInboxTable(b, opts...)
	return ib, m, scope
}

// benchInboxTable is benchInbox, with the table's name, for a benchmark that
// writes to it with the SDK too.
func benchInboxTable(b *testing.B, opts ...dynamo.Option) (*inbox.Inbox, *meter, driver.Scope, string) {
	b.Helper()
	c := ddblocal.Client(b)
	table, _ := ddblocal.NewTable(b, c, opts...)
	m := &meter{c: c}
	ib := inbox.New(dynamo.New(m, table))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	if _, err := ib.Config(context.Background(), scope); err != nil {
		b.Fatalf("Config: %v", err)
	}
	return ib, m, scope, table
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

// BenchmarkPublish publishes a direct message to 1 and 10 users;
// users=1/positions=8 publishes to a user who holds 8 read positions, each
// moved 4 times (the most: she marked 8 one-to-one chats read, each 4
// times, within 15 minutes), which ride on her c#*, an item every such
// write carries; users=1/group-positions=16 to a user who marked a chat
// read in each of her 16 groups (the most): those positions stay for good,
// on her counters of the groups, not on her c#*.
func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("users=%d", n), func(b *testing.B) { benchPublish(b, n, 0) })
	}
	b.Run("users=1/positions=8", func(b *testing.B) { benchPublish(b, 1, 8) })
	b.Run("users=1/group-positions=16", func(b *testing.B) { benchPublishGroupPositions(b, 16) })
}

// benchPublishGroupPositions measures Publish to a user who holds a read
// position in a chat of each of groups groups.
func benchPublishGroupPositions(b *testing.B, groups int) {
	ib, m, scope := benchInbox(b)
	ctx := context.Background()
	var names []string
	for i := range groups {
		names = append(names, "group-"+strconv.Itoa(i))
	}
	u := scope.User("user0").InGroups(names...)
	for _, g := range names {
		d := draft(0)
		d.Sender, d.Thread = "friend", "chat-"+g
		if _, err := ib.BroadcastGroup(ctx, scope, g, d); err != nil {
			b.Fatal(err)
		}
		if k, err := ib.MarkAllRead(ctx, u, inbox.ListOptions{Thread: d.Thread}); err != nil || k != 1 {
			b.Fatalf("MarkAllRead(%s) = %d, %v", d.Thread, k, err)
		}
	}
	m.measure()
	b.ResetTimer()
	for i := range b.N {
		if _, err := ib.Publish(ctx, scope, []string{"user0"}, draft(i)); err != nil {
			b.Fatalf("Publish: %v", err)
		}
	}
	b.StopTimer()
	m.report(b)
}

// benchPublish measures Publish to n users, the first of whom holds
// positions read positions.
func benchPublish(b *testing.B, n, positions int) {
	ib, m, scope := benchInbox(b)
	to := users(n)
	ctx := context.Background()
	for i := range positions * driver.MaxPositionSteps {
		// Each position moved up as often as it can be, keeping each
		// move's time: the largest c#* positions make.
		d := draft(i)
		d.Sender, d.Thread = "friend"+strconv.Itoa(i%positions), "dm-"+strconv.Itoa(i%positions)
		if _, err := ib.Publish(ctx, scope, to[:1], d); err != nil {
			b.Fatal(err)
		}
		if k, err := ib.MarkAllRead(ctx, scope.User(to[0]), inbox.ListOptions{Thread: d.Thread}); err != nil || k != 1 {
			b.Fatalf("MarkAllRead = %d, %v", k, err)
		}
	}
	st, err := ib.Store().Stats(ctx, driver.StatsQuery{Partition: scope.User(to[0]).Partition()})
	if err != nil {
		b.Fatal(err)
	}
	for th, p := range driver.Positions(st.Counters) {
		if steps, _ := p.Steps(); len(steps) != driver.MaxPositionSteps {
			b.Fatalf("position of %s has %d moves; want %d", th, len(steps), driver.MaxPositionSteps)
		}
	}
	if got := len(driver.Positions(st.Counters)); got != positions {
		b.Fatalf("positions = %d; want %d", got, positions)
	}
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
func feed(b *testing.B, ib *inbox.Inbox, scope driver.Scope, u driver.User) {
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
	for _, groups := range []int{0, 4, driver.MaxGroups} {
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
		b.Run(fmt.Sprintf("fan-out/members=%d", n), func(b *testing.B) { benchPublish(b, n, 0) })
	}
}

// unread puts n unread messages of kind in u's feed, and returns their
// IDs: direct ones, broadcasts to everyone, or group messages to admins.
func unread(b *testing.B, ib *inbox.Inbox, scope driver.Scope, u driver.User, kind string, n int) []string {
	b.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		if kind == "direct" || kind == "direct-thread" {
			d := draft(i)
			if kind == "direct-thread" {
				d.Thread = "bob" // a one-to-one chat's
			}
			res, err := ib.Publish(ctx, scope, []string{u.ID}, d)
			if err != nil {
				b.Fatalf("Publish: %v", err)
			}
			ids[i] = res.Message.ID
			continue
		}
		group, d := driver.PublicGroup, draft(i)
		switch kind {
		case "group":
			group = "admins"
		case "group-thread":
			group, d.Thread = "admins", "admins"
		}
		msg, err := ib.BroadcastGroup(ctx, scope, group, d)
		if err != nil {
			b.Fatalf("BroadcastGroup: %v", err)
		}
		ids[i] = msg.ID
	}
	return ids
}

// BenchmarkMarkRead marks unread messages read: a direct message (its
// readat is set), a broadcast or a group message (a receipt is written; a
// group's also moves the user's counters of the group), and a group
// chat's message (group-thread: the thread's counters, and the reader
// item that Inbox.ReadBy reads); a one-to-one chat's (direct-thread: the
// thread's counters, and the user's c#* read after the message, for her
// read position in the thread).
func BenchmarkMarkRead(b *testing.B) {
	for _, kind := range []string{"direct", "direct-thread", "broadcast", "group", "group-thread"} {
		b.Run(kind, func(b *testing.B) {
			ib, m, scope := benchInbox(b)
			ann := scope.User("ann").InGroups("admins")
			ctx := context.Background()
			ids := unread(b, ib, scope, ann, kind, b.N)
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

// BenchmarkMarkAllRead marks every message of a user read, for a user
// with 10 and with 10,000 unread direct messages. Its cost grows with the
// unread messages: one feed page and one transaction per
// driver.MaxMarkBatch of them (there is no watermark that marks them in
// O(1): see MarkAllRead's doc).
func BenchmarkMarkAllRead(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("unread=%d", n), func(b *testing.B) {
			ib, m, scope := benchInbox(b)
			ctx := context.Background()
			for i := range b.N {
				b.StopTimer()
				m.pause()
				u := scope.User("ann" + strconv.Itoa(i))
				for j := range n {
					if _, err := ib.Publish(ctx, scope, []string{u.ID}, draft(j)); err != nil {
						b.Fatalf("Publish: %v", err)
					}
				}
				m.resume()
				b.StartTimer()
				marked, err := ib.MarkAllRead(ctx, u, inbox.ListOptions{})
				if err != nil || marked != n {
					b.Fatalf("MarkAllRead = %d, %v; want %d", marked, err, n)
				}
			}
			b.StopTimer()
			m.report(b)
		})
	}
}

// BenchmarkBulk measures ArchiveAll of a user's 10 newest messages (the
// "clear inbox" button), with nothing else in the feed and above 1,000
// messages archived before, and DeleteAll of the archive of 10.
func BenchmarkBulk(b *testing.B) {
	ctx := context.Background()
	for _, before := range []int{0, 1_000} {
		b.Run(fmt.Sprintf("archive-all/10/archived-before=%d", before), func(b *testing.B) {
			ib, m, scope := benchInbox(b)
			for i := range b.N {
				m.pause()
				u := scope.User("ann" + strconv.Itoa(i))
				for j := range before + 10 {
					if j == before {
						if _, err := ib.ArchiveAll(ctx, u, inbox.ListOptions{}); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := ib.Publish(ctx, scope, []string{u.ID}, draft(j)); err != nil {
						b.Fatal(err)
					}
				}
				m.resume()
				if n, err := ib.ArchiveAll(ctx, u, inbox.ListOptions{}); err != nil || n != 10 {
					b.Fatalf("ArchiveAll = %d, %v; want 10", n, err)
				}
			}
			m.report(b)
		})
	}
	b.Run("delete-all/archived=10", func(b *testing.B) {
		ib, m, scope := benchInbox(b)
		for i := range b.N {
			m.pause()
			u := scope.User("ann" + strconv.Itoa(i))
			for j := range 10 {
				if _, err := ib.Publish(ctx, scope, []string{u.ID}, draft(j)); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := ib.ArchiveAll(ctx, u, inbox.ListOptions{}); err != nil {
				b.Fatal(err)
			}
			m.resume()
			if n, err := ib.DeleteAll(ctx, u, inbox.ListOptions{Archived: true}); err != nil || n != 10 {
				b.Fatalf("DeleteAll = %d, %v; want 10", n, err)
			}
		}
		m.report(b)
	})
}

// BenchmarkStates measures the per-user marks on an unread message, a
// direct one and a broadcast (whose mark is a receipt in the user's
// partition): Archive, Delete, Redact (for everyone), and MarkSeen (a
// watermark, whatever the feed's size).
func BenchmarkStates(b *testing.B) {
	// op applies one operation to message id, of kind direct or broadcast,
	// in ann's feed.
	type op func(ctx context.Context, ib *inbox.Inbox, scope driver.Scope, ann driver.User, kind, id string) (bool, error)
	ops := map[string]op{
		"archive": func(ctx context.Context, ib *inbox.Inbox, _ driver.Scope, ann driver.User, _, id string) (bool, error) {
			return ib.Archive(ctx, ann, id)
		},
		"delete": func(ctx context.Context, ib *inbox.Inbox, _ driver.Scope, ann driver.User, _, id string) (bool, error) {
			return ib.Delete(ctx, ann, id)
		},
		"interact": func(ctx context.Context, ib *inbox.Inbox, _ driver.Scope, ann driver.User, _, id string) (bool, error) {
			return ib.MarkInteracted(ctx, ann, id)
		},
		"snooze": func(ctx context.Context, ib *inbox.Inbox, _ driver.Scope, ann driver.User, _, id string) (bool, error) {
			return ib.Snooze(ctx, ann, id, time.Now().Add(time.Hour))
		},
		"redact": func(ctx context.Context, ib *inbox.Inbox, scope driver.Scope, ann driver.User, kind, id string) (bool, error) {
			r := inbox.Redaction{ID: id, Users: []string{ann.ID}}
			if kind == "broadcast" {
				r = inbox.Redaction{ID: id, Group: driver.PublicGroup}
			}
			n, err := ib.Redact(ctx, scope, r)
			return n == 1, err
		},
	}
	for _, op := range []string{"archive", "delete", "interact", "snooze", "redact"} {
		for _, kind := range []string{"direct", "broadcast"} {
			b.Run(op+"/"+kind, func(b *testing.B) {
				ib, m, scope := benchInbox(b)
				ann := scope.User("ann")
				ctx := context.Background()
				ids := unread(b, ib, scope, ann, kind, b.N)
				m.measure()
				b.ResetTimer()
				for _, id := range ids {
					if ok, err := ops[op](ctx, ib, scope, ann, kind, id); err != nil || !ok {
						b.Fatalf("%s = %v, %v", op, ok, err)
					}
				}
				b.StopTimer()
				m.report(b)
			})
		}
	}
	b.Run("seen", func(b *testing.B) {
		ib, m, scope := benchInbox(b)
		ctx := context.Background()
		feed(b, ib, scope, scope.User("ann"))
		m.measure()
		b.ResetTimer()
		for i := range b.N {
			if _, err := ib.MarkSeen(ctx, scope.User("ann"+strconv.Itoa(i))); err != nil {
				b.Fatalf("MarkSeen: %v", err)
			}
		}
		b.StopTimer()
		m.report(b)
	})
}

// BenchmarkSharedCache has 1, 100 and 1,000 users list the first page of
// one inbox's feed at once, from one Inbox, with the shared-partition
// cache on (the default freshness) and off, side by side. Each operation
// is one such wave on a new Inbox (a cold cache: the worst case of one
// freshness interval); public-requests/op counts the requests to the
// inbox's public partition. With the cache off every List reads it; on,
// the concurrent misses collapse into one refresh (its head and stats).
func BenchmarkSharedCache(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		for _, cache := range []string{"on", "off"} {
			b.Run(fmt.Sprintf("listers=%d/cache=%s", n, cache), func(b *testing.B) {
				c := ddblocal.Client(b)
				table, _ := ddblocal.NewTable(b, c)
				scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
				m := &meter{c: c, watch: driver.Partition{Tenant: "acme", Inbox: "alerts", Group: driver.PublicGroup}.PK()}
				store := dynamo.New(m, table)
				opts := []inbox.Option{}
				if cache == "off" {
					opts = append(opts, inbox.WithSharedCache(0))
				}
				ctx := context.Background()
				setup := inbox.New(store, opts...)
				for i := range 30 {
					if _, err := setup.Broadcast(ctx, scope, draft(i)); err != nil {
						b.Fatalf("Broadcast: %v", err)
					}
				}
				m.measure()
				b.ResetTimer()
				for range b.N {
					ib := inbox.New(store, opts...)
					g, gctx := errgroup.WithContext(ctx)
					for u := range n {
						g.Go(func() error {
							page, err := ib.List(gctx, scope.User("user"+strconv.Itoa(u)), inbox.ListOptions{})
							if err == nil && len(page.Messages) != inbox.DefaultPageSize {
								err = fmt.Errorf("List returned %d messages", len(page.Messages))
							}
							return err
						})
					}
					if err := g.Wait(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				m.report(b)
			})
		}
	}
}

// BenchmarkUnreadPage reads a user's unread feed where one unread message
// lies below 0, 100 and 10,000 read ones, side by side from the unread
// index and without it (WithUnreadIndex(""): the read history filtered,
// the design before the index), on one table:
//
//   - list: List(UnreadOnly) page after page until the cursor is "",
//     which finds the one message; list-category the same with a
//     category filter;
//   - markallread: MarkAllRead after one new unread message arrives on
//     top, which marks it and must find that nothing else is unread.
//
// The broadcasts' side (the public partition's head, and the user's
// receipts of it by key) is the same either way.
func BenchmarkUnreadPage(b *testing.B) {
	c := ddblocal.Client(b)
	table, _ := ddblocal.NewTable(b, c)
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	ctx := context.Background()
	sizes := []int{0, 100, 10_000}
	seed := inbox.New(dynamo.New(c, table))
	for _, n := range sizes {
		u := scope.User("reader" + strconv.Itoa(n))
		if _, err := seed.Publish(ctx, scope, []string{u.ID}, draft(0)); err != nil {
			b.Fatalf("Publish: %v", err)
		}
		seedRead(b, dynamo.New(c, table), u, n)
	}
	for _, n := range sizes {
		for _, index := range []string{"on", "off"} {
			for _, op := range []string{"list", "list-category", "markallread"} {
				b.Run(fmt.Sprintf("read=%d/index=%s/%s", n, index, op), func(b *testing.B) {
					m := &meter{c: c}
					opts := []dynamo.Option{}
					if index == "off" {
						opts = append(opts, dynamo.WithUnreadIndex(""))
					}
					ib := inbox.New(dynamo.New(m, table, opts...))
					u := scope.User("reader" + strconv.Itoa(n))
					if op == "markallread" {
						u = scope.User(fmt.Sprintf("marker%d-%s", n, index))
						seedRead(b, dynamo.New(c, table), u, n)
					}
					m.measure()
					b.ResetTimer()
					for range b.N {
						if op == "markallread" {
							b.StopTimer()
							m.pause()
							if _, err := seed.Publish(ctx, scope, []string{u.ID}, draft(1)); err != nil {
								b.Fatalf("Publish: %v", err)
							}
							m.resume()
							b.StartTimer()
							if marked, err := ib.MarkAllRead(ctx, u, inbox.ListOptions{}); err != nil || marked != 1 {
								b.Fatalf("MarkAllRead = %d, %v; want 1", marked, err)
							}
							continue
						}
						found := 0
						o := inbox.ListOptions{UnreadOnly: true}
						if op == "list-category" {
							o.Category = draft(0).Category
						}
						for {
							page, err := ib.List(ctx, u, o)
							if err != nil {
								b.Fatalf("List: %v", err)
							}
							found += len(page.Messages)
							if o.Cursor = page.Cursor; o.Cursor == "" {
								break
							}
						}
						if found != 1 {
							b.Fatalf("the unread feed listed %d messages, want 1", found)
						}
					}
					b.StopTimer()
					m.report(b)
				})
			}
		}
	}
}

// seedRead writes n read direct messages for u, newer than any before,
// straight through the Store (with their counters), 32 at a time.
func seedRead(b *testing.B, store *dynamo.Store, u driver.User, n int) {
	b.Helper()
	p, err := driver.ParsePartitionKey(driver.Partition{Tenant: u.Scope.Tenant, Inbox: u.Scope.Inbox, User: u.ID}.PK())
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = ulid.Make().String()
	}
	var g errgroup.Group
	g.SetLimit(32)
	for i, id := range ids {
		g.Go(func() error {
			d := draft(i)
			rec := driver.Record{Partition: p, Message: driver.Message{
				ID: id, Sender: d.Sender, Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{u.ID}},
				Category: d.Category, Title: d.Title, Body: d.Body, CTAURI: d.CTAURI,
				ReceivedAt: now, DeliveredAt: now, ReadAt: now, ExpiresAt: now.Add(24 * time.Hour),
			}}
			rec.Entry = driver.LedgerSK(rec.Message.ExpiresAt, id, "seed")
			return store.PutMessage(context.Background(), rec, []driver.Counter{
				{Partition: p, Published: 1, Read: 1}, {Partition: p, Category: d.Category, Published: 1, Read: 1},
			})
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("seed %d read messages: %v", n, err)
	}
}

// BenchmarkChat compares a group chat on the library with the chat seed's
// copy-per-member design, side by side on one table each:
//
//   - send: one message to a group chat of 5 and of 1,000 members. The
//     library stores it once in the group's partition with the thread's
//     counter and, in the same transaction, the sender's read receipt
//     (no-thread: the same message in no thread, for what a thread and
//     the sender's read add; one-to-one: a message to both users of a
//     chat, the sender's copy read); the seed writes the message, updates the chat, and updates
//     each member's UserChatMapping item (last message, unread count + 1):
//     one write per member, the least the seed's design can do.
//   - list: a member's chat list of 20 chats (the group's and 19
//     one-to-one chats), latest activity first, with previews and unread
//     counts: ListThreads against the seed's Query of UserChatMapping
//     (library-untallied-table: on a table of an earlier version, whose
//     unread index holds no tallies; library-groups: 20 group chats, 5 in
//     each of 4 groups, and no one-to-one chat).
//   - read: marking the group chat read after 3 and after 50 new
//     messages: MarkAllRead with the thread (a receipt per message)
//     against the seed's reset of the member's unread count.
func BenchmarkChat(b *testing.B) {
	ctx := context.Background()
	chat := func(i int) inbox.Draft {
		return inbox.Draft{Sender: "user0", Title: "Hey everyone! " + strconv.Itoa(i), Thread: "group-789", Category: "chat"}
	}
	for _, n := range []int{5, 100, 1_000} {
		b.Run(fmt.Sprintf("send/library/members=%d", n), func(b *testing.B) {
			ib, m, scope := benchInbox(b)
			m.measure()
			for i := range b.N {
				if _, err := ib.BroadcastGroup(ctx, scope, "group-789", chat(i)); err != nil {
					b.Fatal(err)
				}
			}
			m.report(b)
			m.pause()
			c, err := ib.ListThreads(ctx, scope.User("user"+strconv.Itoa(n-1)).InGroups("group-789"), inbox.ThreadOptions{})
			if err != nil || len(c.Threads) != 1 || c.Threads[0].Unread != int64(b.N) {
				b.Fatalf("ListThreads = %+v, %v; want one thread with %d unread", c, err, b.N)
			}
			// The sender's own messages are read for her, in the same write.
			c, err = ib.ListThreads(ctx, scope.User("user0").InGroups("group-789"), inbox.ThreadOptions{})
			if err != nil || len(c.Threads) != 1 || c.Threads[0].Unread != 0 || c.Threads[0].Read != int64(b.N) {
				b.Fatalf("the sender's ListThreads = %+v, %v; want one thread with %d read", c, err, b.N)
			}
		})
		b.Run(fmt.Sprintf("send/no-thread/members=%d", n), func(b *testing.B) {
			ib, m, scope := benchInbox(b)
			m.measure()
			for i := range b.N {
				d := chat(i)
				d.Thread = ""
				if _, err := ib.BroadcastGroup(ctx, scope, "group-789", d); err != nil {
					b.Fatal(err)
				}
			}
			m.report(b)
		})
		b.Run(fmt.Sprintf("send/seed-copy/members=%d", n), func(b *testing.B) {
			_, m, _ := benchInbox(b)
			table := benchTable(b, m)
			m.measure()
			for i := range b.N {
				seedSend(b, m, table, "group-789", n, i)
			}
			m.report(b)
		})
	}
	b.Run("send/library/one-to-one", func(b *testing.B) {
		ib, m, scope := benchInbox(b)
		m.measure()
		for i := range b.N {
			d := chat(i)
			d.Thread = "dm-user0-user1"
			if _, err := ib.Publish(ctx, scope, []string{"user0", "user1"}, d); err != nil {
				b.Fatal(err)
			}
		}
		m.report(b)
		m.pause()
		for u, unread := range map[string]int64{"user0": 0, "user1": int64(b.N)} {
			c, err := ib.ListThreads(ctx, scope.User(u), inbox.ThreadOptions{})
			if err != nil || len(c.Threads) != 1 || c.Threads[0].Unread != unread || c.Threads[0].Total != int64(b.N) {
				b.Fatalf("ListThreads(%s) = %+v, %v; want one thread with %d unread of %d", u, c, err, unread, b.N)
			}
		}
	})
	for _, untallied := range []bool{false, true} {
		name := "list/library"
		var opts []dynamo.Option
		if untallied {
			// A table of an earlier version: the index holds no tallies.
			name, opts = "list/library-untallied-table", []dynamo.Option{dynamo.WithUntalliedIndex()}
		}
		b.Run(name, func(b *testing.B) { benchChatList(b, opts...) })
	}
	b.Run("list/library-groups", benchGroupChatList)
	b.Run("list/seed-copy", func(b *testing.B) {
		_, m, _ := benchInbox(b)
		table := benchTable(b, m)
		for i := range 19 {
			seedSend(b, m, table, "dm-"+strconv.Itoa(i), 1, i)
		}
		for i := range 3 {
			seedSend(b, m, table, "group-789", 1, i)
		}
		m.measure()
		for range b.N {
			out, err := m.Query(ctx, &dynamodb.QueryInput{
				TableName: &table, KeyConditionExpression: aws.String("pk = :u"), ScanIndexForward: aws.Bool(false), Limit: aws.Int32(20),
				ExpressionAttributeValues: map[string]types.AttributeValue{":u": &types.AttributeValueMemberS{Value: "user0"}}, ConsistentRead: aws.Bool(true),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			})
			if err != nil || len(out.Items) != 20 {
				b.Fatalf("Query = %d items, %v", len(out.Items), err)
			}
		}
		m.report(b)
	})
	for _, unread := range []int{3, 50} {
		b.Run(fmt.Sprintf("read/library/unread=%d", unread), func(b *testing.B) {
			ib, m, scope := benchInbox(b)
			u := scope.User("user0").InGroups("group-789")
			m.measure()
			for i := range b.N {
				m.pause()
				for j := range unread {
					d := chat(unread*i + j)
					d.Sender = "user1" // to user0, who marks them read
					if _, err := ib.BroadcastGroup(ctx, scope, "group-789", d); err != nil {
						b.Fatal(err)
					}
				}
				m.resume()
				if n, err := ib.MarkAllRead(ctx, u, inbox.ListOptions{Thread: "group-789"}); err != nil || n != unread {
					b.Fatalf("MarkAllRead = %d, %v; want %d", n, err, unread)
				}
			}
			m.report(b)
		})
		b.Run(fmt.Sprintf("read/seed-copy/unread=%d", unread), func(b *testing.B) {
			_, m, _ := benchInbox(b)
			table := benchTable(b, m)
			m.measure()
			for i := range b.N {
				m.pause()
				for j := range unread {
					seedSend(b, m, table, "group-789", 1, unread*i+j)
				}
				m.resume()
				if _, err := m.UpdateItem(ctx, &dynamodb.UpdateItemInput{
					TableName: &table, Key: seedKey("user0", "chat#group-789"), UpdateExpression: aws.String("SET unreadCount = :z"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":z": &types.AttributeValueMemberN{Value: "0"}},
					ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
				}); err != nil {
					b.Fatal(err)
				}
			}
			m.report(b)
		})
	}
	// A one-to-one chat's unread messages marked read at once, by a user
	// of her own each time: MarkAllRead of the thread alone (a read
	// position: one write), and with the stream function's writing it out
	// on each message afterwards (written-out), which the user does not
	// wait for but which is billed too.
	for _, unread := range []int{3, 50} {
		for _, out := range []bool{false, true} {
			name := fmt.Sprintf("read/library/one-to-one/unread=%d", unread)
			if out {
				name = fmt.Sprintf("read/library/one-to-one-written-out/unread=%d", unread)
			}
			b.Run(name, func(b *testing.B) {
				c := ddblocal.Client(b)
				table, _ := ddblocal.NewTable(b, c)
				m := &meter{c: c}
				ib := inbox.New(dynamo.New(m, table))
				scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
				m.measure()
				for i := range b.N {
					m.pause()
					u := scope.User("reader" + strconv.Itoa(i))
					for j := range unread {
						d := chat(unread*i + j)
						d.Sender, d.Thread = "user1", "dm-user1"
						if _, err := ib.Publish(ctx, scope, []string{u.ID}, d); err != nil {
							b.Fatal(err)
						}
					}
					m.resume()
					if n, err := ib.MarkAllRead(ctx, u, inbox.ListOptions{Thread: "dm-user1"}); err != nil || n != unread {
						b.Fatalf("MarkAllRead = %d, %v; want %d", n, err, unread)
					}
					if out {
						m.pause()
						rec := positionRecord(b, c, table, u.Partition(), "dm-user1")
						m.resume()
						if resp, err := ib.StreamHandler(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}}); err != nil || len(resp.BatchItemFailures) > 0 {
							b.Fatalf("StreamHandler = %+v, %v", resp, err)
						}
					}
				}
				m.report(b)
				m.pause()
				c2, err := ib.Counts(ctx, scope.User("reader0"))
				if err != nil || c2.Unread != 0 || c2.Total != int64(unread) {
					b.Fatalf("Counts = %+v, %v; want %d read", c2.Tally, err, unread)
				}
			})
		}
	}
	// Read by: who has read each message of a page of 20, in a group chat
	// of 5 (each read by the 4 others) and a one-to-one chat (read by the
	// other user).
	b.Run("readby/library/members=5", func(b *testing.B) {
		ib, m, scope := benchInbox(b)
		for i := range 20 {
			if _, err := ib.BroadcastGroup(ctx, scope, "group-789", chat(i)); err != nil {
				b.Fatal(err)
			}
		}
		for u := 1; u < 5; u++ {
			if n, err := ib.MarkAllRead(ctx, scope.User("user"+strconv.Itoa(u)).InGroups("group-789"), inbox.ListOptions{Thread: "group-789"}); err != nil || n != 20 {
				b.Fatalf("MarkAllRead = %d, %v", n, err)
			}
		}
		u := scope.User("user0").InGroups("group-789")
		page, err := ib.List(ctx, u, inbox.ListOptions{Thread: "group-789"})
		if err != nil || len(page.Messages) != 20 {
			b.Fatalf("List = %d, %v", len(page.Messages), err)
		}
		m.measure()
		for range b.N {
			rb, err := ib.ReadBy(ctx, u, page.Messages)
			if err != nil || len(rb) != 20 || len(rb[0].Readers) != 4 || len(rb[19].Readers) != 4 {
				b.Fatalf("ReadBy = %+v, %v; want 4 readers of each of 20", rb, err)
			}
		}
		m.report(b)
	})
	b.Run("readby/library/one-to-one", func(b *testing.B) {
		ib, m, scope := benchInbox(b)
		for i := range 20 {
			d := chat(i)
			d.Thread = "dm-user0-user1"
			if _, err := ib.Publish(ctx, scope, []string{"user0", "user1"}, d); err != nil {
				b.Fatal(err)
			}
		}
		if n, err := ib.MarkAllRead(ctx, scope.User("user1"), inbox.ListOptions{Thread: "dm-user0-user1"}); err != nil || n != 20 {
			b.Fatalf("MarkAllRead = %d, %v", n, err)
		}
		u := scope.User("user0")
		page, err := ib.List(ctx, u, inbox.ListOptions{Thread: "dm-user0-user1"})
		if err != nil || len(page.Messages) != 20 {
			b.Fatalf("List = %d, %v", len(page.Messages), err)
		}
		m.measure()
		for range b.N {
			rb, err := ib.ReadBy(ctx, u, page.Messages, "user1")
			if err != nil || len(rb) != 20 || len(rb[0].Readers) != 1 || len(rb[19].Readers) != 1 {
				b.Fatalf("ReadBy = %+v, %v; want user1 as the reader of each of 20", rb, err)
			}
		}
		m.report(b)
	})
}

// benchTable returns a new table of DynamoDB Local for the seed's design,
// through m's client.
func benchTable(b *testing.B, m *meter) string {
	b.Helper()
	table, _ := ddblocal.NewTable(b, m.c.(*dynamodb.Client))
	return table
}

// seedKey is a key of the chat seed's items in the benchmark's table.
func seedKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}}
}

// seedSend sends message i to chat, of members user0 to user<n-1>, as the
// chat seed does: the message, the chat's last message, and each member's
// UserChatMapping (last message and preview, unread count + 1).
func seedSend(b *testing.B, m *meter, table, chat string, n, i int) {
	b.Helper()
	ctx := context.Background()
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	id := fmt.Sprintf("%s#msg_%06d", now, i)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	msg := seedKey(chat, id)
	msg["senderId"], msg["content"], msg["expiresAt"] = s("user0"), s("Hey everyone! "+strconv.Itoa(i)), &types.AttributeValueMemberN{Value: "1893456000"}
	if _, err := m.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: msg, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}); err != nil {
		b.Fatal(err)
	}
	update := func(key map[string]types.AttributeValue, expr string) {
		if _, err := m.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &table, Key: key, UpdateExpression: aws.String(expr),
			ExpressionAttributeValues: map[string]types.AttributeValue{":at": s(now), ":id": s(id), ":p": s("Hey everyone!"), ":one": &types.AttributeValueMemberN{Value: "1"}},
			ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
		}); err != nil {
			b.Fatal(err)
		}
	}
	update(seedKey(chat, "chat"), "SET lastMessageAt = :at, lastMessageId = :id, lastMessagePreview = :p ADD messageCount :one")
	for u := range n {
		update(seedKey("user"+strconv.Itoa(u), "chat#"+chat), "SET lastMessageAt = :at, lastMessageId = :id, lastMessagePreview = :p ADD unreadCount :one")
	}
}

// BenchmarkForeignRead hands the stream handler the MODIFY record of a
// read of one of ann's messages: made by another program as the seeds
// make it (readat set; its counter changes are not measured), of a
// direct message, a snoozed one, one of a thread (the handler rewrites
// the ledger entry, the snooze entry, and the thread's counter), ann's
// receipt of a broadcast she deleted (the read taken back) and a message
// not yet due (its pending entry rewritten); and made by the library
// (MarkRead), which the handler recognises at no cost.
func BenchmarkForeignRead(b *testing.B) {
	for _, kind := range []string{"direct", "snoozed", "thread", "deleted", "notdue", "library"} {
		b.Run(kind, func(b *testing.B) {
			raw := ddblocal.Client(b)
			table, _ := ddblocal.NewTable(b, raw)
			m := &meter{c: raw}
			store := dynamo.New(m, table)
			ib := inbox.New(store)
			scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
			ann := scope.User("ann")
			ctx := context.Background()
			changes := make([]driver.Change, b.N)
			for i := range changes {
				d := draft(i)
				switch kind {
				case "thread":
					d.Thread = "chat"
				case "notdue":
					d.DeliverAt = time.Now().Add(time.Hour)
				}
				var id string
				if kind == "deleted" {
					// A broadcast ann deleted: her receipt is read.
					m, err := ib.Broadcast(ctx, scope, d)
					if err != nil {
						b.Fatalf("Broadcast: %v", err)
					}
					if _, err := ib.Delete(ctx, ann, m.ID); err != nil {
						b.Fatalf("Delete: %v", err)
					}
					id = m.ID
				} else {
					res, err := ib.Publish(ctx, scope, []string{ann.ID}, d)
					if err != nil {
						b.Fatalf("Publish: %v", err)
					}
					id = res.Message.ID
				}
				k := driver.Key{Partition: ann.Partition(), ID: id}
				if kind == "snoozed" {
					if _, err := ib.Snooze(ctx, ann, k.ID, time.Now().Add(time.Hour)); err != nil {
						b.Fatalf("Snooze: %v", err)
					}
				}
				before, err := store.GetRecords(ctx, []driver.Key{k})
				if err != nil {
					b.Fatal(err)
				}
				if kind == "library" {
					_, err = ib.MarkRead(ctx, ann, k.ID)
				} else {
					_, err = raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{
						TableName: aws.String(table),
						Key: map[string]types.AttributeValue{
							"pk": &types.AttributeValueMemberS{Value: k.Partition.PK()}, "sk": &types.AttributeValueMemberS{Value: driver.MessageSK(k.ID)},
						},
						UpdateExpression:          aws.String("SET readat = :t"),
						ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Unix(), 10)}},
					})
				}
				if err != nil {
					b.Fatalf("read: %v", err)
				}
				after, err := store.GetRecords(ctx, []driver.Key{k})
				if err != nil {
					b.Fatal(err)
				}
				changes[i] = driver.Change{ID: strconv.Itoa(i), Op: driver.ChangeModify, Old: &before[0], New: &after[0]}
			}
			m.measure()
			b.ResetTimer()
			for _, c := range changes {
				if err := ib.HandleChange(ctx, c); err != nil {
					b.Fatalf("HandleChange: %v", err)
				}
			}
			b.StopTimer()
			m.report(b)
		})
	}
}

// benchChatList measures a member's chat list of BenchmarkChat, on a
// table made with opts.
func benchChatList(b *testing.B, opts ...dynamo.Option) {
	ctx := context.Background()
	ib, m, scope := benchInbox(b, opts...)
	u := scope.User("user0").InGroups("group-789")
	for i := range 19 {
		if _, err := ib.Publish(ctx, scope, []string{"user0", "peer" + strconv.Itoa(i)}, inbox.Draft{Title: "Hello!", Thread: "dm-" + strconv.Itoa(i)}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 3 {
		// BenchmarkChat's group message, from user1 to user0, who reads.
		d := inbox.Draft{Sender: "user1", Title: "Hey everyone! " + strconv.Itoa(i), Thread: "group-789", Category: "chat"}
		if _, err := ib.BroadcastGroup(ctx, scope, "group-789", d); err != nil {
			b.Fatal(err)
		}
	}
	m.measure()
	for range b.N {
		p, err := ib.ListThreads(ctx, u, inbox.ThreadOptions{Limit: 20})
		if err != nil || len(p.Threads) != 20 || p.Threads[0].Unread != 3 {
			b.Fatalf("ListThreads = %d threads, %v", len(p.Threads), err)
		}
	}
	m.report(b)
}

// benchGroupChatList measures a member's chat list of 20 group chats, 5 in
// each of 4 groups, each with a message to her from another member.
func benchGroupChatList(b *testing.B) {
	ctx := context.Background()
	ib, m, scope := benchInbox(b)
	groups := []string{"g0", "g1", "g2", "g3"}
	u := scope.User("user0").InGroups(groups...)
	for i := range 20 {
		d := inbox.Draft{Sender: "user1", Title: "Hey everyone! " + strconv.Itoa(i), Thread: "chat-" + strconv.Itoa(i), Category: "chat"}
		if _, err := ib.BroadcastGroup(ctx, scope, groups[i%4], d); err != nil {
			b.Fatal(err)
		}
	}
	m.measure()
	for range b.N {
		p, err := ib.ListThreads(ctx, u, inbox.ThreadOptions{Limit: 20})
		if err != nil || len(p.Threads) != 20 || p.Threads[0].Unread != 1 {
			b.Fatalf("ListThreads = %d threads, %v", len(p.Threads), err)
		}
	}
	m.report(b)
}

// positionRecord returns the stream record, as Lambda delivers it, of
// the INSERT of the read position item of thread in partition p, read
// raw.
func positionRecord(b *testing.B, c *dynamodb.Client, table string, p driver.Partition, thread string) events.DynamoDBEventRecord {
	b.Helper()
	items := rawQuery(b, c, table, p.PK(), driver.PositionSK(thread))
	if len(items) != 1 {
		b.Fatalf("%d read position items of %s in %s, want 1", len(items), thread, p.PK())
	}
	img := map[string]events.DynamoDBAttributeValue{}
	for k, v := range items[0] {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			img[k] = events.NewStringAttribute(v.Value)
		case *types.AttributeValueMemberN:
			img[k] = events.NewNumberAttribute(v.Value)
		}
	}
	return events.DynamoDBEventRecord{
		EventID: "position-" + p.PK(), EventName: "INSERT", EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{
			Keys:     map[string]events.DynamoDBAttributeValue{"pk": img["pk"], "sk": img["sk"]},
			NewImage: img, StreamViewType: "NEW_AND_OLD_IMAGES", SequenceNumber: "1",
		},
	}
}

package dynamo_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// BenchmarkPreferences measures what muting groups costs, for a user in
// 4 groups with 40 messages (direct, everyone's, and 5 in each group):
//
//   - set: SetPreferences, muting 5 groups and unmuting them in turn (a
//     change each time): a read of the user's c#*, then one transaction
//     (c#* and the preferences item for the stream);
//   - Counts, List (a page of 20, the cache off) and Get (a group
//     message) with muted=0, 5 and 50 groups muted (keys of 20 bytes, two
//     of them the user's): the preferences come with the user's c#*, so
//     Counts reads nothing more; List with the cache off, and Get, read
//     c#* by key beside their own reads, in the same round trip;
//   - Counts/seen/cache=on and off/categories=0, 5 and 50: categories
//     muted (keys of 20 bytes, one of them "ops", every message's), for a
//     user who marked her feed seen before its messages, so that each
//     category's Unseen comes from her categories' Above and from the
//     shared partitions' snapshots (cache on) or their time buckets by
//     category (cache off, with the watermark's hour bucket: a second
//     round trip): the muted categories are read with her c#*, so Counts
//     reads nothing more for them;
//   - Publish, Counts/seen and List (cache off) with 5 categories opted
//     out of, every message's ("ops") among them or not
//     (opted-out-of-all): a Publish to a user who opted out of its
//     category is one refused transaction, which writes nothing; Counts
//     reads nothing more; List reads past the messages it leaves out;
//     Counts with the same opt-outs as the inbox's defaults, for a user
//     without her own: the config comes from the Inbox's cache.
func BenchmarkPreferences(b *testing.B) {
	ctx := context.Background()
	groups := []string{"group-000000000000-0", "group-000000000000-1", "group-000000000000-2", "group-000000000000-3"}
	muted := func(n int) inbox.Preferences {
		var p inbox.Preferences
		for i := range n {
			if i < 2 {
				p.MutedGroups = append(p.MutedGroups, groups[i]) // two of hers
			} else {
				p.MutedGroups = append(p.MutedGroups, fmt.Sprintf("other-000000000-%04d", i))
			}
		}
		return p
	}
	mutedCategories := func(n int) inbox.Preferences {
		var p inbox.Preferences
		for i := range n {
			c := fmt.Sprintf("category-000000-%04d", i)
			if i == 0 {
				c = "ops"
			}
			p.MutedCategories = append(p.MutedCategories, c)
		}
		return p
	}
	setup := func(b *testing.B, seen bool, opts ...inbox.Option) (*inbox.Inbox, *meter, driver.User, string) {
		ib, m, scope := benchInbox(b)
		if len(opts) > 0 {
			ib = inbox.New(ib.Store(), opts...)
		}
		ann := scope.User("ann").InGroups(groups...)
		if seen {
			if _, err := ib.MarkSeen(ctx, ann); err != nil {
				b.Fatal(err)
			}
			time.Sleep(time.Second) // every message above the watermark (SeenAt ends the second)
		}
		var last string
		for i := range 20 {
			var err error
			if i%2 == 0 {
				_, err = ib.Publish(ctx, scope, []string{"ann"}, draft(i))
			} else {
				_, err = ib.Broadcast(ctx, scope, draft(i))
			}
			if err != nil {
				b.Fatalf("set up the feed: %v", err)
			}
		}
		for i := range 20 {
			msg, err := ib.BroadcastGroup(ctx, scope, groups[i%len(groups)], draft(i))
			if err != nil {
				b.Fatalf("set up the groups: %v", err)
			}
			if i%len(groups) == 0 {
				last = msg.ID // in a group she mutes, from muted=5 on
			}
		}
		return ib, m, ann, last
	}
	b.Run("set", func(b *testing.B) {
		ib, m, ann, _ := setup(b, false)
		m.measure()
		b.ResetTimer()
		for i := range b.N {
			p := muted(5)
			if i%2 == 1 {
				p = inbox.Preferences{}
			}
			if ok, err := ib.SetPreferences(ctx, ann, p); err != nil || !ok {
				b.Fatalf("SetPreferences = %v, %v", ok, err)
			}
		}
		b.StopTimer()
		m.report(b)
	})
	optedOut := func(ops bool) inbox.Preferences {
		p := inbox.Preferences{OptedOut: []string{"category-000000-0001", "category-000000-0002", "category-000000-0003", "category-000000-0004", "category-000000-0005"}}
		if ops {
			p.OptedOut[0] = "ops"
			slices.Sort(p.OptedOut)
		}
		return p
	}
	for _, out := range []bool{false, true} {
		b.Run(fmt.Sprintf("Publish/opted-out=%v", out), func(b *testing.B) {
			ib, m, ann, _ := setup(b, false)
			if _, err := ib.SetPreferences(ctx, ann, optedOut(out)); err != nil {
				b.Fatal(err)
			}
			m.measure()
			b.ResetTimer()
			for i := range b.N {
				res, err := ib.Publish(ctx, ann.Scope, []string{"ann"}, draft(i))
				if err != nil || (len(res.OptedOut) == 1) != out {
					b.Fatalf("Publish = opted out %v, %v; want opted out %v", res.OptedOut, err, out)
				}
			}
			b.StopTimer()
			m.report(b)
		})
		for _, c := range []struct {
			name, cache string
			defaults    bool // the inbox's defaults, not her own
		}{{"opted-out-of-all", "on", false}, {"opted-out-of-all", "off", false}, {"defaults-opt-out-of-all", "on", true}} {
			b.Run(fmt.Sprintf("Counts/seen/cache=%s/%s=%v", c.cache, c.name, out), func(b *testing.B) {
				var opts []inbox.Option
				if c.cache == "off" {
					opts = append(opts, inbox.WithSharedCache(0))
				}
				ib, m, ann, _ := setup(b, true, opts...)
				var err error
				if c.defaults {
					err = ib.PutInboxConfig(ctx, ann.Scope, inbox.InboxConfig{Preferences: optedOut(out)})
				} else {
					_, err = ib.SetPreferences(ctx, ann, optedOut(out))
				}
				if err != nil {
					b.Fatal(err)
				}
				want := int64(40)
				if out {
					want = 0
				}
				m.measure()
				b.ResetTimer()
				for range b.N {
					c, err := ib.Counts(ctx, ann)
					if err != nil || c.Total != want || c.Unseen != want {
						b.Fatalf("Counts = %+v, %v; want total and unseen %d", c.Tally, err, want)
					}
				}
				b.StopTimer()
				m.report(b)
			})
		}
		b.Run(fmt.Sprintf("List/cache=off/opted-out-of-all=%v", out), func(b *testing.B) {
			ib, m, ann, _ := setup(b, false, inbox.WithSharedCache(0))
			if _, err := ib.SetPreferences(ctx, ann, optedOut(out)); err != nil {
				b.Fatal(err)
			}
			want := 20
			if out {
				want = 0
			}
			m.measure()
			b.ResetTimer()
			for range b.N {
				p, err := ib.List(ctx, ann, inbox.ListOptions{})
				if err != nil || len(p.Messages) != want {
					b.Fatalf("List = %d messages, %v; want %d", len(p.Messages), err, want)
				}
			}
			b.StopTimer()
			m.report(b)
		})
	}
	for _, n := range []int{0, 5, 50} {
		for _, cache := range []string{"on", "off"} {
			b.Run(fmt.Sprintf("Counts/seen/cache=%s/categories=%d", cache, n), func(b *testing.B) {
				var opts []inbox.Option
				if cache == "off" {
					opts = append(opts, inbox.WithSharedCache(0))
				}
				ib, m, ann, _ := setup(b, true, opts...)
				if _, err := ib.SetPreferences(ctx, ann, mutedCategories(n)); err != nil {
					b.Fatal(err)
				}
				want := int64(min(n, 1) * 40)
				m.measure()
				b.ResetTimer()
				for range b.N {
					c, err := ib.Counts(ctx, ann)
					if err != nil || c.Total != 40 || c.Muted != want || c.Unseen != 40-want || c.Categories["ops"].Unseen != 40-want {
						b.Fatalf("Counts = %+v, %v; want total 40, muted %d, unseen %d", c, err, want, 40-want)
					}
				}
				b.StopTimer()
				m.report(b)
			})
		}
		b.Run(fmt.Sprintf("Counts/muted=%d", n), func(b *testing.B) {
			ib, m, ann, _ := setup(b, false)
			if _, err := ib.SetPreferences(ctx, ann, muted(n)); err != nil {
				b.Fatal(err)
			}
			want := int64(min(n, 2) * 5)
			m.measure()
			b.ResetTimer()
			for range b.N {
				c, err := ib.Counts(ctx, ann)
				if err != nil || c.Total != 40 || c.Muted != want {
					b.Fatalf("Counts = %+v, %v; want total 40, muted %d", c.Tally, err, want)
				}
			}
			b.StopTimer()
			m.report(b)
		})
		b.Run(fmt.Sprintf("List/cache=off/muted=%d", n), func(b *testing.B) {
			ib, m, ann, _ := setup(b, false, inbox.WithSharedCache(0))
			if _, err := ib.SetPreferences(ctx, ann, muted(n)); err != nil {
				b.Fatal(err)
			}
			m.measure()
			b.ResetTimer()
			for range b.N {
				p, err := ib.List(ctx, ann, inbox.ListOptions{})
				mutedOnes := 0
				for _, msg := range p.Messages {
					if msg.Muted {
						mutedOnes++
					}
				}
				if err != nil || len(p.Messages) != 20 || mutedOnes != min(n, 2)*5 {
					b.Fatalf("List = %d messages (%d muted), %v; want 20 (%d muted)", len(p.Messages), mutedOnes, err, min(n, 2)*5)
				}
			}
			b.StopTimer()
			m.report(b)
		})
		b.Run(fmt.Sprintf("Get/muted=%d", n), func(b *testing.B) {
			ib, m, ann, id := setup(b, false)
			if _, err := ib.SetPreferences(ctx, ann, muted(n)); err != nil {
				b.Fatal(err)
			}
			m.measure()
			b.ResetTimer()
			for range b.N {
				msg, err := ib.Get(ctx, ann, id)
				if err != nil || msg.Muted != (n > 0) {
					b.Fatalf("Get = muted %v, %v; want %v", msg.Muted, err, n > 0)
				}
			}
			b.StopTimer()
			m.report(b)
		})
	}
}

// BenchmarkMuteThreads measures what muting threads of direct messages
// (one-to-one chats) costs, for a user with 20 chats of 3 unread messages
// each (keys of 20 bytes), marked seen before the last message of each:
//
//   - mute: SetPreferences muting one chat and unmuting it in turn: a
//     read of her c#*, her stats, the chat's counter by key and its
//     messages (a mute), then one transaction;
//   - Counts/muted=0, 1 and 20 chats: the muted chats' counts come with
//     her c#*, so Counts reads nothing more, whatever their number;
//   - Publish/muted=false and true: a message to one of her chats, muted
//     or not, from another Inbox and Store than the mute's: a copy of a
//     muted chat's message is written with its counts in a second
//     attempt once the first finds the chat muted, the first time; the
//     Store remembers it then (a hint its writes' conditions check).
func BenchmarkMuteThreads(b *testing.B) {
	ctx := context.Background()
	chats := make([]string, 20)
	for i := range chats {
		chats[i] = fmt.Sprintf("chat-00000000000-%03d", i)
	}
	var table string // of the last setup
	setup := func(b *testing.B) (*inbox.Inbox, *meter, driver.User) {
		c := ddblocal.Client(b)
		table, _ = ddblocal.NewTable(b, c)
		m := &meter{c: c}
		ib := inbox.New(dynamo.New(m, table))
		scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
		ann := scope.User("ann")
		for round := range 3 {
			if round == 2 {
				if _, err := ib.MarkSeen(ctx, ann); err != nil {
					b.Fatal(err)
				}
				time.Sleep(time.Second) // the last messages above the watermark
			}
			for _, t := range chats {
				d := draft(round)
				d.Thread, d.Category = t, "chat"
				if _, err := ib.Publish(ctx, scope, []string{"ann"}, d); err != nil {
					b.Fatalf("set up the chats: %v", err)
				}
			}
		}
		return ib, m, ann
	}
	b.Run("mute", func(b *testing.B) {
		ib, m, ann := setup(b)
		m.measure()
		b.ResetTimer()
		for i := range b.N {
			var p inbox.Preferences
			if i%2 == 0 {
				p.MutedThreads = chats[:1]
			}
			if ok, err := ib.SetPreferences(ctx, ann, p); err != nil || !ok {
				b.Fatalf("SetPreferences = %v, %v", ok, err)
			}
		}
		b.StopTimer()
		m.report(b)
	})
	for _, n := range []int{0, 1, 20} {
		b.Run(fmt.Sprintf("Counts/muted=%d", n), func(b *testing.B) {
			ib, m, ann := setup(b)
			if _, err := ib.SetPreferences(ctx, ann, inbox.Preferences{MutedThreads: chats[:n]}); err != nil {
				b.Fatal(err)
			}
			m.measure()
			b.ResetTimer()
			for range b.N {
				c, err := ib.Counts(ctx, ann)
				if err != nil || c.Muted != int64(3*n) || c.Unseen != int64(20-n) {
					b.Fatalf("Counts = %+v, %v; want %d muted, %d unseen", c.Tally, err, 3*n, 20-n)
				}
			}
			b.StopTimer()
			m.report(b)
		})
	}
	for _, muted := range []bool{false, true} {
		b.Run(fmt.Sprintf("Publish/muted=%v", muted), func(b *testing.B) {
			ib, m, ann := setup(b)
			if muted {
				if _, err := ib.SetPreferences(ctx, ann, inbox.Preferences{MutedThreads: chats[:1]}); err != nil {
					b.Fatal(err)
				}
			}
			ib = inbox.New(dynamo.New(m, table)) // another process's
			m.measure()
			b.ResetTimer()
			for i := range b.N {
				d := draft(i)
				d.Thread, d.Category = chats[0], "chat"
				if _, err := ib.Publish(ctx, ann.Scope, []string{"ann"}, d); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			m.report(b)
		})
	}
}

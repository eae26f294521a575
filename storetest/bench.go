package storetest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// Benchmarks runs the read-cost benchmarks against the stores newStore
// returns: every case of BenchCases at each history size in sizes (three,
// as 1,000, 10,000 and 100,000). Run one case at a size with
// BenchmarkCase.
func Benchmarks(b *testing.B, newStore NewStore, sizes ...int) {
	for _, c := range BenchCases {
		for _, n := range sizes {
			BenchmarkCase(b, newStore, c, n)
		}
	}
}

// BenchCases are the read-cost benchmarks: what the hottest reads cost
// for a user whose history holds size messages that the read does not
// return.
//
//   - Counts/<history>: the badge of a user with a seen watermark and
//     size messages above it, unseen, read, snoozed, scheduled ahead for
//     her, broadcasts scheduled ahead, or broadcasts redacted before they
//     expired (their tombstones); one new message beside them, the shared
//     cache on and off (off, every call pays every read). Counts/redacted
//     with the cache off is the one figure that grows: each tombstone is
//     read with its partition's stats until the broadcast would have
//     expired (Redact is for rare removals; with the cache on, the
//     snapshot holds them).
//   - List/scheduled-ahead: a first page of 20 among 30 visible messages,
//     with size messages scheduled ahead (half hers, half broadcasts),
//     the shared cache on and off.
//   - ListThreads/threads: a first page of 20 of a user's size
//     conversations, the cache on and off.
//   - ListThreads/group-threads: the same of size group chats, a
//     quarter in each of her 4 groups, each with one message to her from
//     another member (her receipts' hints, not her receipts, show her
//     marks on them), the cache on and off.
//   - MarkAllRead/chat: marking read a one-to-one chat of size unread
//     messages (a read position: one write whatever their number).
//   - MarkAllRead/group-chat: the same of a group chat of size unread
//     messages, each stored once in the group's partition.
//   - Counts/group-chat: the badge of a member of a group chat whose size
//     messages she read by her read position in it (MarkAllRead).
//   - MarkRead/messages: marking one of her unread messages read in a
//     feed of size messages.
var BenchCases = []string{
	"Counts/unseen", "Counts/read", "Counts/snoozed", "Counts/scheduled", "Counts/broadcast-scheduled", "Counts/redacted", "Counts/group-chat",
	"List/scheduled-ahead", "ListThreads/threads", "ListThreads/group-threads", "MarkRead/messages", "MarkAllRead/chat", "MarkAllRead/group-chat",
}

// BenchmarkCase runs the read-cost benchmark c (one of BenchCases) at
// history size n, as the sub-benchmark c=n. Each reports, per operation,
// the Store calls ("store-calls/op") and, for a Store that reports its
// requests (driver.StartRequest, as the dynamo Store does), the backend
// requests, their round trips and the read and write units AWS bills
// ("requests/op", "round-trips/op", "RCU/op", "WCU/op"), as
// inbox.WithHooks sees them. Each also checks what the read returns, so a
// figure is never that of a wrong answer. A read must cost the same at
// every size. The case writes its n messages once, one after the other,
// then measures in a sub-benchmark (named for the cache setting, or
// "direct"): on a remote store, run it with -benchtime=Nx to bound the
// measured calls.
func BenchmarkCase(b *testing.B, newStore NewStore, c string, n int) {
	b.Run(c+"="+strconv.Itoa(n), func(b *testing.B) {
		switch kind, history, _ := strings.Cut(c, "/"); kind {
		case "Counts":
			benchCounts(b, newStore, history, n)
		case "List":
			benchList(b, newStore, n)
		case "ListThreads":
			benchThreads(b, newStore, history, n)
		case "MarkRead":
			benchMarkRead(b, newStore, n)
		case "MarkAllRead":
			benchMarkAllRead(b, newStore, history, n)
		default:
			b.Fatalf("storetest: no benchmark %q", c)
		}
	})
}

// benchGroups are the groups of ListThreads/group-threads.
var benchGroups = []string{"g0", "g1", "g2", "g3"}

// benchScope is the inbox the benchmarks write to.
var benchScope = inbox.Scope{Tenant: "acme", Inbox: "alerts"}

// opMeter sums what inbox.WithHooks reports of the operations named op
// while it is on. It is safe for concurrent use.
type opMeter struct {
	op     string
	mu     sync.Mutex
	on     bool
	calls  int
	totals driver.RequestTotals
}

// hooks returns the hooks that feed m.
func (m *opMeter) hooks() inbox.Hooks {
	return inbox.Hooks{Operation: func(ctx context.Context, op inbox.Operation) (context.Context, func(inbox.OperationReport)) {
		return ctx, func(r inbox.OperationReport) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if !m.on || r.Name != m.op {
				return
			}
			m.calls += r.StoreCalls
			m.totals.Requests += r.Totals.Requests
			m.totals.RoundTrips += r.Totals.RoundTrips
			m.totals.ReadUnits += r.Totals.ReadUnits
			m.totals.WriteUnits += r.Totals.WriteUnits
		}
	}}
}

// measure starts counting from zero, and resets b's timer.
func (m *opMeter) measure(b *testing.B) {
	m.mu.Lock()
	m.on, m.calls, m.totals = true, 0, driver.RequestTotals{}
	m.mu.Unlock()
	b.ReportAllocs()
	b.ResetTimer()
}

// pause and resume stop and restart the counting and b's timer.
func (m *opMeter) pause(b *testing.B) {
	b.StopTimer()
	m.mu.Lock()
	m.on = false
	m.mu.Unlock()
}

func (m *opMeter) resume(b *testing.B) {
	m.mu.Lock()
	m.on = true
	m.mu.Unlock()
	b.StartTimer()
}

// report stops b's timer and reports the per-operation figures.
func (m *opMeter) report(b *testing.B) {
	b.StopTimer()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := float64(b.N)
	b.ReportMetric(float64(m.calls)/n, "store-calls/op")
	if m.totals.Requests > 0 {
		b.ReportMetric(float64(m.totals.Requests)/n, "requests/op")
		b.ReportMetric(float64(m.totals.RoundTrips)/n, "round-trips/op")
		b.ReportMetric(m.totals.ReadUnits/n, "RCU/op")
		b.ReportMetric(m.totals.WriteUnits/n, "WCU/op")
	}
}

// benchEnv is a fresh store at a fixed clock, an Inbox that writes the
// history (cache off) and the user whose reads are measured.
type benchEnv struct {
	ctx   context.Context
	store driver.Store
	clock *Clock
	setup *inbox.Inbox
	ann   inbox.User
}

func newBenchEnv(b *testing.B, newStore NewStore) *benchEnv {
	b.Helper()
	clock := NewClock(startTime())
	store := newStore(b, clock.Now)
	return &benchEnv{
		ctx: context.Background(), store: store, clock: clock,
		setup: inbox.New(store, inbox.WithClock(clock.Now), inbox.WithSharedCache(0)),
		ann:   benchScope.User("ann"),
	}
}

// inbox returns an Inbox over the env's store whose op calls m measures,
// with the shared cache on or off.
func (e *benchEnv) inbox(m *opMeter, cache bool) *inbox.Inbox {
	opts := []inbox.Option{inbox.WithClock(e.clock.Now), inbox.WithHooks(m.hooks())}
	if !cache {
		opts = append(opts, inbox.WithSharedCache(0))
	}
	return inbox.New(e.store, opts...)
}

// each calls f(i) for i in [0, n), one after the other: the writes of a
// benchmark's history all change one user's counters (or the public
// partition's), which concurrent transactions would contend for.
func (e *benchEnv) each(b *testing.B, n int, f func(i int) error) {
	b.Helper()
	for i := range n {
		if err := f(i); err != nil {
			b.Fatal(err)
		}
	}
}

// publish publishes one message to ann, returning its ID.
func (e *benchEnv) publish(d inbox.Draft) (string, error) {
	res, err := e.setup.Publish(e.ctx, benchScope, []string{"ann"}, d)
	return res.Message.ID, err
}

// benchDraft is a typical message: a title, a small body and a category.
func benchDraft(i int) inbox.Draft {
	return inbox.Draft{Sender: "ops-bot", Category: "ops", Title: "Disk almost full on db-" + strconv.Itoa(i),
		Body: map[string]any{"host": "db-" + strconv.Itoa(i), "used": 0.93}}
}

// history writes n messages of kind for ann, above her seen watermark.
func (e *benchEnv) history(b *testing.B, kind string, n int) {
	b.Helper()
	later := e.clock.Now().Add(24 * time.Hour)
	e.each(b, n, func(i int) error {
		d := benchDraft(i)
		switch kind {
		case "unseen":
			_, err := e.publish(d)
			return err
		case "read":
			id, err := e.publish(d)
			if err == nil {
				_, err = e.setup.MarkRead(e.ctx, e.ann, id)
			}
			return err
		case "snoozed":
			id, err := e.publish(d)
			if err == nil {
				_, err = e.setup.Snooze(e.ctx, e.ann, id, later)
			}
			return err
		case "scheduled":
			d.DeliverAt = later.Add(time.Duration(i) * time.Second)
			_, err := e.publish(d)
			return err
		case "broadcast-scheduled":
			d.DeliverAt = later.Add(time.Duration(i) * time.Second)
			_, err := e.setup.Broadcast(e.ctx, benchScope, d)
			return err
		case "redacted":
			m, err := e.setup.Broadcast(e.ctx, benchScope, d)
			if err == nil {
				_, err = e.setup.Redact(e.ctx, benchScope, inbox.Redaction{ID: m.ID, Group: inbox.PublicGroup})
			}
			return err
		case "group-chat":
			// A chat's pace: a message a second, whose newest second's
			// messages a Counts reads (see Inbox.MarkAllRead).
			d.Thread, d.Sender = "chat", "bob"
			_, err := e.setup.BroadcastGroup(e.ctx, benchScope, "team", d)
			e.clock.Advance(time.Second)
			return err
		}
		panic("storetest: no history " + kind)
	})
	if kind == "group-chat" {
		// Read by her read position in the chat: one write.
		if got, err := e.setup.MarkAllRead(e.ctx, e.ann, inbox.ListOptions{Thread: "chat"}); err != nil || got != n {
			b.Fatalf("MarkAllRead of the group chat = %d, %v; want %d", got, err, n)
		}
	}
}

func benchCounts(b *testing.B, newStore NewStore, kind string, n int) {
	e := newBenchEnv(b, newStore)
	if kind == "group-chat" {
		e.ann = e.ann.InGroups("team")
	}
	if _, err := e.setup.MarkSeen(e.ctx, e.ann); err != nil {
		b.Fatal(err)
	}
	e.clock.Advance(time.Second) // what follows is above the watermark
	e.history(b, kind, n)
	if _, err := e.publish(benchDraft(n)); err != nil {
		b.Fatal(err)
	}
	want := inbox.Counts{Tally: inbox.Tally{Total: 1, Unread: 1, Unseen: 1}}
	switch kind {
	case "unseen":
		want.Total, want.Unread, want.Unseen = int64(n+1), int64(n+1), int64(n+1)
	case "read", "group-chat":
		want.Total, want.Read = int64(n+1), int64(n)
	case "snoozed":
		want.Snoozed = int64(n)
	}
	for _, cache := range []bool{true, false} {
		b.Run("cache="+onOff(cache), func(b *testing.B) {
			m := &opMeter{op: "Counts"}
			ib := e.inbox(m, cache)
			if _, err := ib.Counts(e.ctx, e.ann); err != nil { // the watermark is remembered
				b.Fatal(err)
			}
			m.measure(b)
			for range b.N {
				c, err := ib.Counts(e.ctx, e.ann)
				if err != nil {
					b.Fatal(err)
				}
				if c.Tally != want.Tally || c.Unseen != want.Unseen || c.Snoozed != want.Snoozed {
					b.Fatalf("Counts = %+v, want %+v", c, want)
				}
			}
			m.report(b)
		})
	}
}

func benchList(b *testing.B, newStore NewStore, n int) {
	e := newBenchEnv(b, newStore)
	e.each(b, 30, func(i int) error { _, err := e.publish(benchDraft(i)); return err })
	e.clock.Advance(time.Second)
	e.history(b, "scheduled", n/2)
	e.history(b, "broadcast-scheduled", n-n/2)
	for _, cache := range []bool{true, false} {
		b.Run("cache="+onOff(cache), func(b *testing.B) {
			m := &opMeter{op: "List"}
			ib := e.inbox(m, cache)
			o := inbox.ListOptions{Limit: 20}
			if _, err := ib.List(e.ctx, e.ann, o); err != nil { // the snapshot is read
				b.Fatal(err)
			}
			m.measure(b)
			for range b.N {
				p, err := ib.List(e.ctx, e.ann, o)
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Messages) != 20 {
					b.Fatalf("List = %d messages, want a full page of 20", len(p.Messages))
				}
			}
			m.report(b)
		})
	}
}

func benchThreads(b *testing.B, newStore NewStore, history string, n int) {
	e := newBenchEnv(b, newStore)
	u := e.ann
	e.each(b, n, func(i int) error {
		d := benchDraft(i)
		d.Thread = "dm-" + strconv.Itoa(i)
		if history == "group-threads" {
			d.Sender = "bob"
			_, err := e.setup.BroadcastGroup(e.ctx, benchScope, benchGroups[i%len(benchGroups)], d)
			return err
		}
		_, err := e.publish(d)
		return err
	})
	if history == "group-threads" {
		u = u.InGroups(benchGroups...)
	}
	for _, cache := range []bool{true, false} {
		b.Run("cache="+onOff(cache), func(b *testing.B) {
			m := &opMeter{op: "ListThreads"}
			ib := e.inbox(m, cache)
			o := inbox.ThreadOptions{Limit: 20}
			if _, err := ib.ListThreads(e.ctx, u, o); err != nil {
				b.Fatal(err)
			}
			want := min(n, 20)
			m.measure(b)
			for range b.N {
				p, err := ib.ListThreads(e.ctx, u, o)
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Threads) != want || p.Threads[0].Unread != 1 {
					b.Fatalf("ListThreads = %d threads, want %d, each with one unread message", len(p.Threads), want)
				}
			}
			m.report(b)
		})
	}
}

func benchMarkRead(b *testing.B, newStore NewStore, n int) {
	e := newBenchEnv(b, newStore)
	var mu sync.Mutex
	var ids []string
	fill := func(k int) {
		e.each(b, k, func(i int) error {
			id, err := e.publish(benchDraft(i))
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
			return err
		})
	}
	fill(n)
	next := 0 // the first of ids not marked read yet
	b.Run("direct", func(b *testing.B) {
		m := &opMeter{op: "MarkRead"}
		ib := e.inbox(m, false)
		m.measure(b)
		for range b.N {
			if next == len(ids) {
				m.pause(b)
				ids, next = ids[:0], 0
				fill(min(n, 1000)) // more unread messages: the feed grows
				m.resume(b)
			}
			ok, err := ib.MarkRead(e.ctx, e.ann, ids[next])
			if err != nil || !ok {
				b.Fatalf("MarkRead = %v, %v; want a change", ok, err)
			}
			next++
		}
		m.report(b)
	})
}

// benchMarkAllRead measures MarkAllRead of a one-to-one chat of n unread
// messages, each op a chat of its own, written before it, of a reader of
// her own: the bench delivers no changes, so no position is written out
// and ages, and a reader past the most positions she holds would mark
// one by one (see inbox.Inbox.MarkAllRead).
func benchMarkAllRead(b *testing.B, newStore NewStore, kind string, n int) {
	e := newBenchEnv(b, newStore)
	b.Run("direct", func(b *testing.B) {
		m := &opMeter{op: "MarkAllRead"}
		ib := e.inbox(m, false)
		m.measure(b)
		for i := range b.N {
			m.pause(b)
			thread, reader := "chat-"+strconv.Itoa(i), benchScope.User("reader-"+strconv.Itoa(i))
			e.each(b, n, func(k int) error {
				d := benchDraft(k)
				d.Thread, d.Sender = thread, "bob"
				if kind == "group-chat" {
					_, err := e.setup.BroadcastGroup(e.ctx, benchScope, thread, d)
					return err
				}
				_, err := e.setup.Publish(e.ctx, benchScope, []string{reader.ID}, d)
				return err
			})
			if kind == "group-chat" {
				reader = reader.InGroups(thread)
			}
			m.resume(b)
			got, err := ib.MarkAllRead(e.ctx, reader, inbox.ListOptions{Thread: thread})
			if err != nil || got != n {
				b.Fatalf("MarkAllRead(%s) = %d, %v; want %d", thread, got, err, n)
			}
		}
		m.report(b)
	})
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

package storetest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// maxULID is the highest ULID: a Before above every message ID.
const maxULID = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"

// matches reports whether Store.Query q keeps record r, by the contract.
func matches(r driver.Record, q driver.Query) bool {
	m := r.Message
	return (q.Category == "" || m.Category == q.Category) &&
		(q.Thread == "" || m.Thread == q.Thread) &&
		(!q.UnreadOnly || !r.Receipt && !m.IsRead()) &&
		(q.Now.IsZero() || q.Now.Before(m.ExpiresAt)) &&
		(q.Archived != driver.NotArchived || r.Receipt || !m.IsArchived()) &&
		(q.Archived != driver.OnlyArchived || m.IsArchived())
}

// unreadFeed reports whether q selects a user's unread feed, which a
// Store may read from an index of the unread, unarchived messages.
func unreadFeed(q driver.Query) bool {
	return q.UnreadOnly && q.Archived == driver.NotArchived && !q.Partition.IsShared()
}

// inRange reports whether r's ID lies in q's bounds, Before and After.
func inRange(r driver.Record, q driver.Query) bool {
	return (q.Before == "" || r.Message.ID < q.Before) && (q.After == "" || r.Message.ID > q.After)
}

// describe names a query in failure messages.
func describe(q driver.Query) string {
	s := fmt.Sprintf("Query(%s, limit %d", q.Partition.PK(), q.Limit)
	if q.Before != "" {
		s += ", before " + q.Before
	}
	if q.After != "" {
		s += ", after " + q.After
	}
	if q.Archived != driver.AnyArchived {
		s += fmt.Sprintf(", archived filter %d", q.Archived)
	}
	if q.Category != "" {
		s += ", category " + q.Category
	}
	if q.Thread != "" {
		s += ", thread " + q.Thread
	}
	if q.UnreadOnly {
		s += ", unread only"
	}
	if !q.Now.IsZero() {
		s += ", now " + q.Now.Format(time.RFC3339)
	}
	return s + ")"
}

// query runs q and checks its page against all, every record of the
// partition newest first: the store evaluated the records from Before
// (exclusive) down to Next (inclusive; to the end when Next is ""), at most
// Limit of them, and returned exactly those that match the filters. An
// unread feed query (UnreadOnly, NotArchived) may evaluate only the unread,
// unarchived messages, as from an index of them: Limit then counts those.
// A thread's query (Thread) evaluates only the thread's records.
func (e *env) query(q driver.Query, all []driver.Record) driver.QueryResult {
	e.t.Helper()
	res, err := e.store.Query(e.ctx, q)
	if err != nil {
		e.t.Fatalf("%s: %v", describe(q), err)
	}
	var evaluated, want []driver.Record
	for _, r := range all {
		if inRange(r, q) && (res.Next == "" || r.Message.ID >= res.Next) {
			switch {
			case q.Thread != "":
				if r.Message.Thread == q.Thread {
					evaluated = append(evaluated, r)
				}
			case !unreadFeed(q) || !r.Receipt && !r.Message.IsRead() && !r.Message.IsArchived():
				evaluated = append(evaluated, r)
			}
			if matches(r, q) {
				want = append(want, r)
			}
		}
	}
	if len(evaluated) > q.Limit {
		e.t.Errorf("%s: Next %q means %d records were evaluated, more than Limit (Limit counts records before filtering)", describe(q), res.Next, len(evaluated))
	}
	if res.Next != "" && q.Before != "" && res.Next >= q.Before {
		e.t.Errorf("%s: Next %q is not below Before", describe(q), res.Next)
	}
	for _, r := range res.Records {
		e.checkStored(r)
	}
	e.wantRecords(fmt.Sprintf("%s with Next %q: the matching records from Before down to Next", describe(q), res.Next), want, res.Records)
	return res
}

// pageAll pages through q from q.Before, checking every page with query,
// and checks that together the pages hold every matching record of all
// below q.Before exactly once, in order.
func (e *env) pageAll(q driver.Query, all []driver.Record) {
	e.t.Helper()
	var want, got []driver.Record
	for _, r := range all {
		if inRange(r, q) && matches(r, q) {
			want = append(want, r)
		}
	}
	first := q
	for pages := 0; ; pages++ {
		if pages > 2*len(all)+2 {
			e.t.Fatalf("%s: more than %d pages for %d records", describe(first), pages, len(all))
		}
		res := e.query(q, all)
		got = append(got, res.Records...)
		if res.Next == "" {
			break
		}
		q.Before = res.Next
	}
	e.wantRecords(describe(first)+", all pages", want, got)
}

// mixedPartition fills ann's partition with messages and receipts of
// several categories, read and unread, expiring at different times, and
// returns every record of it newest first, and the public partition's.
func (e *env) mixedPartition() (ann, pub []driver.Record) {
	annP, pubP := e.part("ann"), e.pub()
	hours := []time.Duration{1, 5, 2, 8, 3, 6, 4, 9, 7, 10}
	cats := []string{"billing", "", "news", "billing", "", "billing", "news", "", "billing", "news"}
	for i := range hours {
		ttl := hours[i] * time.Hour
		switch i % 3 {
		case 0, 1:
			d := e.message(annP, cats[i], ttl)
			e.put(d)
			if i%4 == 0 {
				d = e.markDirect(d)
			}
			ann = append([]driver.Record{d}, ann...)
		case 2:
			b := e.message(pubP, cats[i], ttl)
			e.put(b)
			pub = append([]driver.Record{b}, pub...)
			if i != 8 {
				ann = append([]driver.Record{e.markReceipt(annP, b)}, ann...)
			}
		}
	}
	return ann, pub
}

// testQueryOrder: Query returns a partition's messages and receipts in
// descending ID order, and never its counters, ledger entries, tombstones,
// host ID claims or removal markers.
func testQueryOrder(e *env) {
	annP, pubP := e.part("ann"), e.pub()
	ann, pub := e.mixedPartition()
	if _, err := e.store.ClaimHostID(e.ctx, driver.HostClaim{Scope: e.scope, HostSystemID: "order-1", ID: e.newID(), ExpiresAt: e.clock.Now().Add(driver.MaxTTL)}); err != nil {
		e.t.Fatalf("ClaimHostID: %v", err)
	}
	gone := e.message(pubP, "gone", time.Hour)
	e.put(gone)
	if _, err := e.store.ApplyRemoval(e.ctx, driver.Removal{Record: gone, Deltas: delta(pubP, "gone", -1, 0), Tombstone: true, Delete: true, Now: e.clock.Now()}); err != nil {
		e.t.Fatalf("ApplyRemoval with a tombstone: %v", err)
	}
	for _, p := range []driver.Partition{annP, pubP} {
		foreign := e.message(p, "gone", time.Hour)
		foreign.Entry = ""
		r := driver.Removal{Record: foreign, EventID: "removal-" + p.User, Deltas: []driver.Counter{counter(p, "gone", -1, 0)}, Now: e.clock.Now()}
		if _, err := e.store.ApplyRemoval(e.ctx, r); err != nil {
			e.t.Fatalf("ApplyRemoval: %v", err)
		}
	}
	e.wantRecords("Query(ann), all pages", ann, e.records(annP))
	e.wantRecords("Query($public), all pages", pub, e.records(pubP))
	e.wantRecords("Query(bob)", nil, e.records(e.part("bob")))
	e.pageAll(driver.Query{Partition: annP, Limit: 100}, ann)
	e.pageAll(driver.Query{Partition: pubP, Limit: 100}, pub)
}

// testQueryBefore: Before is an exclusive upper bound on IDs.
func testQueryBefore(e *env) {
	annP := e.part("ann")
	ann, _ := e.mixedPartition()
	befores := []string{maxULID, e.newID()}
	for _, r := range ann {
		befores = append(befores, r.Message.ID)
	}
	// An ID between two records, which is no record's ID.
	between := []byte(ann[2].Message.ID)
	between[len(between)-1]++
	befores = append(befores, string(between))
	for _, b := range befores {
		e.pageAll(driver.Query{Partition: annP, Before: b, Limit: 100}, ann)
	}
	res := e.query(driver.Query{Partition: annP, Before: ann[len(ann)-1].Message.ID, Limit: 10}, ann)
	if len(res.Records) != 0 || res.Next != "" {
		e.t.Errorf("Query below the oldest record: got %d records and Next %q, want none and \"\"", len(res.Records), res.Next)
	}
}

// testQueryPaging: paging with Limit 1, 2 and 3, with and without filters,
// visits every matching record exactly once.
func testQueryPaging(e *env) {
	ann, pub := e.mixedPartition()
	now := e.clock.Now()
	filters := []driver.Query{
		{},
		{Category: "billing"},
		{Category: "news"},
		{UnreadOnly: true},
		{Now: now.Add(4 * time.Hour)},
		{Category: "billing", UnreadOnly: true, Now: now.Add(2 * time.Hour)},
		{Category: "nothing-here"},
	}
	for _, part := range []struct {
		p   driver.Partition
		all []driver.Record
	}{{e.part("ann"), ann}, {e.pub(), pub}} {
		for _, limit := range []int{1, 2, 3} {
			for _, f := range filters {
				f.Partition, f.Limit = part.p, limit
				e.pageAll(f, part.all)
			}
		}
	}
}

// testQueryLimitBeforeFilter: Limit bounds the records evaluated before
// filtering, and Next is the last record evaluated, even when the filter
// dropped it.
func testQueryLimitBeforeFilter(e *env) {
	annP := e.part("ann")
	var all []driver.Record
	for _, cat := range []string{"a", "b", "a", "b", "b"} { // newest last
		d := e.message(annP, cat, time.Hour)
		e.put(d)
		all = append([]driver.Record{d}, all...)
	}
	// The two newest are "b": a store evaluating two records finds no "a".
	res := e.query(driver.Query{Partition: annP, Limit: 2, Category: "a"}, all)
	if len(res.Records) != 0 || res.Next == "" {
		e.t.Errorf("Query(limit 2, category a) over b, b, a, b, a: got %d records and Next %q, want none and a Next to continue from", len(res.Records), res.Next)
	}
	for _, limit := range []int{1, 2, 3, 4} {
		for _, cat := range []string{"a", "b"} {
			e.pageAll(driver.Query{Partition: annP, Limit: limit, Category: cat}, all)
		}
	}
	d := e.markDirect(all[0])
	all[0] = d
	e.pageAll(driver.Query{Partition: annP, Limit: 1, UnreadOnly: true}, all)
}

// testQueryFilters: Category, UnreadOnly (receipts dropped) and Now (records
// expiring at or before Now dropped), alone and together.
func testQueryFilters(e *env) {
	annP, pubP := e.part("ann"), e.pub()
	ann, pub := e.mixedPartition()
	now := e.clock.Now()
	// One unread message archived: out of the unread feed.
	archived := -1
	for i, r := range ann {
		if !r.Receipt && !r.Message.IsRead() {
			archived = i
			break
		}
	}
	if archived < 0 {
		e.t.Fatal("test setup: no unread direct message")
	}
	e.setMarks(&ann[archived], driver.State{ArchivedAt: now})
	for _, f := range []driver.Query{
		{Category: "billing"},
		{Category: "news"},
		{UnreadOnly: true},
		{Now: now},
		{Now: now.Add(3 * time.Hour)},
		{Now: now.Add(3*time.Hour - time.Second)},
		{Now: now.Add(100 * time.Hour)},
		{Category: "news", UnreadOnly: true},
		{Category: "billing", UnreadOnly: true, Now: now.Add(time.Hour)},
		{UnreadOnly: true, Archived: driver.NotArchived},
		{Category: "news", UnreadOnly: true, Archived: driver.NotArchived},
		{Category: "billing", UnreadOnly: true, Archived: driver.NotArchived, Now: now.Add(time.Hour)},
	} {
		f.Limit = 100
		f.Partition = annP
		e.pageAll(f, ann)
		f.Partition = pubP
		e.pageAll(f, pub)
	}
	// The unread feed, page by page, and above a bound; unarchived, the
	// message is back in it; read, out again.
	unreadPages := func() {
		e.t.Helper()
		for _, limit := range []int{1, 2, 3} {
			e.pageAll(driver.Query{Partition: annP, Limit: limit, UnreadOnly: true, Archived: driver.NotArchived}, ann)
			e.pageAll(driver.Query{Partition: annP, Limit: limit, UnreadOnly: true, Archived: driver.NotArchived, After: ann[len(ann)-2].Message.ID}, ann)
		}
	}
	unreadPages()
	e.setMarks(&ann[archived], driver.State{})
	unreadPages()
	e.setMarks(&ann[archived], driver.State{ReadAt: now})
	unreadPages()

	// The boundaries, spelled out: a record expiring at T is kept by Now
	// T-1s and dropped by Now T; UnreadOnly drops receipts and read
	// messages.
	x := e.message(e.part("cat"), "", time.Hour)
	e.put(x)
	T := x.Message.ExpiresAt
	if res := e.query(driver.Query{Partition: x.Partition, Limit: 10, Now: T.Add(-time.Second)}, []driver.Record{x}); len(res.Records) != 1 {
		e.t.Errorf("Query(now = expiry - 1s) dropped a record that has not expired")
	}
	if res := e.query(driver.Query{Partition: x.Partition, Limit: 10, Now: T}, []driver.Record{x}); len(res.Records) != 0 {
		e.t.Errorf("Query(now = expiry) kept a record that expires at Now")
	}
	read := 0
	for _, r := range ann {
		if r.Message.IsRead() {
			read++
		}
	}
	if read < 2 {
		e.t.Fatalf("test setup: want read messages and receipts, have %d read records", read)
	}
}

// testQueryThread: a Query with Thread returns the thread's messages and
// receipts alone (a receipt carries its broadcast's thread), in every
// partition, with the other filters, evaluating only the thread's records
// (Limit counts them), in pages that visit each once.
func testQueryThread(e *env) {
	annP, pubP := e.part("ann"), e.pub()
	var ann, pub []driver.Record
	threads := []string{"t1", "", "t2", "t1", "t1", "", "t2", "t1", "t1", ""}
	cats := []string{"billing", "", "news", "billing", "news", "billing", "", "", "billing", "news"}
	for i, th := range threads {
		ttl := time.Duration(i+1) * time.Hour
		if i%3 == 2 {
			b := e.message(pubP, cats[i], ttl)
			b.Message.Thread = th
			e.put(b)
			pub = append([]driver.Record{b}, pub...)
			ann = append([]driver.Record{e.markReceipt(annP, b)}, ann...)
			continue
		}
		d := e.message(annP, cats[i], ttl)
		d.Message.Thread = th
		e.put(d)
		if i%4 == 0 {
			d = e.markDirect(d)
		}
		ann = append([]driver.Record{d}, ann...)
	}
	now := e.clock.Now()
	for _, f := range []driver.Query{
		{Thread: "t1"},
		{Thread: "t2"},
		{Thread: "t1", Category: "billing"},
		{Thread: "t1", UnreadOnly: true, Archived: driver.NotArchived},
		{Thread: "t1", Now: now.Add(5 * time.Hour)},
		{Thread: "t1", After: ann[len(ann)-1].Message.ID},
		{Thread: "none-here"},
	} {
		for _, limit := range []int{1, 2, 5} {
			for _, part := range []struct {
				p   driver.Partition
				all []driver.Record
			}{{annP, ann}, {pubP, pub}} {
				q := f
				q.Partition, q.Limit = part.p, limit
				e.pageAll(q, part.all)
			}
		}
	}
	for _, bad := range []string{"a#b", "*", string([]byte{0xff})} {
		if _, err := e.store.Query(e.ctx, driver.Query{Partition: annP, Thread: bad, Limit: 10}); !errors.Is(err, driver.ErrInvalidKey) {
			e.t.Errorf("Query of thread %q: %v, want ErrInvalidKey", bad, err)
		}
	}
	d := e.message(annP, "", time.Hour)
	d.Message.Thread = "a#b"
	if err := e.store.PutMessage(e.ctx, d, delta(annP, "", 1, 0)); !errors.Is(err, driver.ErrInvalidKey) {
		e.t.Errorf("PutMessage of thread %q: %v, want ErrInvalidKey", d.Message.Thread, err)
	}
}

// testQueryThreadsActivity: a Query with Threads lists a partition's
// threads' own counters, latest activity first, page by page, Tallied;
// with ActivityOnly it lists the same threads (Partition, Thread, Latest)
// in the same pages, their tallies and Rev zero unless Tallied, and then
// as without it. ActivityOnly without Threads is ErrInvalidInput.
func testQueryThreadsActivity(e *env) {
	for i, th := range []string{"t1", "t2", "t3", "t1", "t4", "t2", "t5"} {
		e.publish(inbox.Draft{Title: "dm", Thread: th}, "ann")
		if i%2 == 0 {
			e.broadcast(inbox.Draft{Title: "everyone", Thread: th})
		}
		e.clock.Advance(time.Second)
	}
	for _, p := range []driver.Partition{e.part("ann"), e.pub()} {
		for _, limit := range []int{1, 2, 10} {
			var full, keys []driver.Counter
			var tallied []bool // of each of keys
			for _, activityOnly := range []bool{false, true} {
				q := driver.Query{Partition: p, Threads: true, ActivityOnly: activityOnly, Limit: limit}
				for pages := 0; ; pages++ {
					if pages > 10 {
						e.t.Fatalf("%s: more than 10 pages of %d", describe(q), limit)
					}
					res, err := e.store.Query(e.ctx, q)
					if err != nil {
						e.t.Fatalf("%s: %v", describe(q), err)
					}
					if !activityOnly && !res.Tallied {
						e.t.Errorf("%s: not Tallied", describe(q))
					}
					for _, c := range res.Threads {
						if c.Rev == 0 && res.Tallied {
							e.t.Errorf("%s: thread %s without a Rev", describe(q), c.Thread)
						}
						if activityOnly {
							keys = append(keys, c)
							tallied = append(tallied, res.Tallied)
						} else {
							full = append(full, c)
						}
					}
					if res.Next == "" {
						break
					}
					q.Before = res.Next
				}
			}
			if len(full) != 5 && p == e.part("ann") || len(full) != 4 && p == e.pub() {
				e.t.Errorf("%s: %d threads, want 5 (hers) or 4 (everyone's)", p.PK(), len(full))
			}
			want := slices.Clone(full)
			for j, c := range want {
				if j < len(tallied) && !tallied[j] {
					want[j] = driver.Counter{Partition: c.Partition, Thread: c.Thread, Latest: c.Latest}
				}
			}
			if diff := cmp.Diff(want, keys); diff != "" {
				e.t.Errorf("%s, limit %d: ActivityOnly lists other threads (-full +activity):\n%s", p.PK(), limit, diff)
			}
		}
	}
	if _, err := e.store.Query(e.ctx, driver.Query{Partition: e.part("ann"), ActivityOnly: true, Limit: 10}); !errors.Is(err, driver.ErrInvalidInput) {
		e.t.Errorf("Query with ActivityOnly, no Threads: %v, want ErrInvalidInput", err)
	}
}

// testQueryThreadsRev: a thread's own counter has a new Rev after each
// write of it (a message, a mark, a deletion, a reset), and keeps it
// while nothing writes it; with and without ActivityOnly a Query reads the
// same Rev.
func testQueryThreadsRev(e *env) {
	p := e.part("ann")
	ann := e.user("ann")
	revs := func() map[string]int64 {
		e.t.Helper()
		out := map[string]int64{}
		for _, activityOnly := range []bool{false, true} {
			res, err := e.store.Query(e.ctx, driver.Query{Partition: p, Threads: true, ActivityOnly: activityOnly, Limit: 10})
			if err != nil {
				e.t.Fatalf("Query threads: %v", err)
			}
			for _, c := range res.Threads {
				if was, ok := out[c.Thread]; ok && was != c.Rev {
					e.t.Errorf("thread %s: Rev %d, then %d with ActivityOnly", c.Thread, was, c.Rev)
				}
				out[c.Thread] = c.Rev
			}
		}
		return out
	}
	seen := map[int64]bool{}
	step := func(what, changed string, before map[string]int64) map[string]int64 {
		e.t.Helper()
		after := revs()
		for th, r := range after {
			switch {
			case th == changed && (r == before[th] || seen[r]):
				e.t.Errorf("%s: thread %s's Rev %d, one it had before", what, th, r)
			case th != changed && r != before[th]:
				e.t.Errorf("%s: thread %s's Rev changed (%d to %d), nothing written to it", what, th, before[th], r)
			}
			seen[r] = true
		}
		return after
	}
	one := e.publish(inbox.Draft{Title: "one", Thread: "t1"}, "ann").Message
	e.clock.Advance(time.Second)
	r := step("a message of t1", "t1", map[string]int64{})
	e.publish(inbox.Draft{Title: "two", Thread: "t2"}, "ann")
	r = step("a message of t2", "t2", r)
	e.markRead(ann, one.ID, true)
	r = step("t1's message read", "t1", r)
	r = step("nothing", "", r)
	if _, err := e.ib.Delete(e.ctx, ann, one.ID); err != nil {
		e.t.Fatalf("Delete: %v", err)
	}
	r = step("t1's message deleted", "t1", r)
	// A reset writes every counter anew, each with a new Rev, whatever
	// Rev its caller's counters carry (a change's is zero: Stats leaves
	// it so).
	st := e.stats(p, e.clock.Now())
	var reset []driver.Counter
	for _, c := range st.Counters {
		c.Rev = r[c.Thread] + 1
		reset = append(reset, c)
	}
	if err := e.store.Repair(e.ctx, p, driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: reset}); err != nil {
		e.t.Fatalf("Repair(Reset): %v", err)
	}
	for th, rev := range revs() {
		if rev == r[th] || seen[rev] || rev == r[th]+1 {
			e.t.Errorf("after a reset: thread %s's Rev %d, one it had before or its caller's", th, rev)
		}
	}
	for _, c := range e.stats(p, e.clock.Now()).Counters {
		if c.Rev != 0 {
			e.t.Errorf("after a reset: Stats lists %s with Rev %d, want 0", c.SK(), c.Rev)
		}
	}
}

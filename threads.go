package inbox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stak/inbox/driver"
)

// Thread is one of a user's conversations as ListThreads shows it: the
// messages of one thread key (Draft.Thread) in one audience, that is the
// user's own direct messages of the thread, or a group's messages of it,
// or everyone's. A one-to-one chat is a thread of direct messages to both
// users; a group chat is a group's thread, each message stored once.
type Thread struct {
	// Thread is the thread's key.
	Thread string
	// Group is the audience: "" for the user's direct messages,
	// PublicGroup for everyone's broadcasts, else the group's ID.
	Group string
	// Activity is the ID of the thread's latest message in this audience,
	// ever: its last activity, which ListThreads orders by (IDAt's
	// inverse, ulid.Time, gives its time). Removing or expiring that
	// message does not lower it, as a chat keeps its place when a message
	// is deleted.
	Activity string
	// Latest is the thread's newest message that List with
	// ListOptions.Thread shows the user (not expired, archived or
	// deleted), with the user's marks: the preview. It is zero only if
	// the thread changed between ListThreads' reads.
	Latest Message
	// Tally counts the thread's messages in this audience as Counts counts
	// the feed: Total, Read and Unread of what List shows, and Archived.
	// It is exact at the instant of the call.
	Tally
}

// ThreadOptions selects a page of ListThreads.
type ThreadOptions struct {
	// Limit is the most threads on the page: 1 to MaxPageSize, or 0 for
	// DefaultPageSize.
	Limit int
	// Cursor continues from a previous page's ThreadPage.Cursor; "" starts
	// at the latest activity. It is only valid for the same user.
	Cursor string
}

// ThreadPage is one page of ListThreads.
type ThreadPage struct {
	// Threads are ordered by Activity, latest first.
	Threads []Thread
	// Cursor fetches the next page; "" when there are no more threads.
	Cursor string
}

// ListThreads returns a page of u's threads, latest activity first: the
// threads of u's direct messages, of u's groups' messages and of
// everyone's, each with its newest visible message and its counts. A
// thread is listed while List would show one of its messages (Total > 0):
// a thread whose messages u archived, deleted, or saw expire leaves the
// list, and comes back with its next message.
//
// The counts come from counters kept per thread, as Counts' come from
// the partition's (see Draft.Thread): one counter per thread in the
// partition that holds its messages, and in u's partition one for u's
// receipts of a shared thread's messages. They are exact at every
// instant, as Counts is: across expiry, removals, redactions, archive and
// delete, group membership and the shared cache.
//
// Paging never repeats a thread; a thread whose activity moves above the
// cursor while u pages (a new message) shows at the top of a new listing,
// as List's new messages do.
//
// Cost: one round trip reads the stats of u's partition and of each
// shared one with their threads' counters (in parallel; the shared ones
// from the snapshots of WithSharedCache): its read units grow with the
// number of threads in those partitions (a thread's counter is about 100
// bytes, some 40 in a read unit), never with their messages. A second
// round trip reads each listed thread's latest message (and u's receipt
// of it) by key. A thread whose latest message u cannot see any more
// (expired, removed, archived or deleted by u) costs a read of that
// thread's newest messages from the thread index, in the same further
// round trip as the others; so does, once per Inbox, a broadcast removed
// before its expiry, as in Counts.
func (ib *Inbox) ListThreads(ctx context.Context, u User, o ThreadOptions) (_ ThreadPage, err error) {
	defer ib.observe(&ctx, "ListThreads", u.Scope, u.ID).end(&err)
	if err := u.Validate(); err != nil {
		return ThreadPage{}, err
	}
	if o.Limit < 0 || o.Limit > MaxPageSize {
		return ThreadPage{}, fmt.Errorf("%w: limit %d is not between 0 and %d", ErrInvalidInput, o.Limit, MaxPageSize)
	}
	limit := o.Limit
	if limit == 0 {
		limit = DefaultPageSize
	}
	binding := threadsBinding(u)
	start := ""
	if o.Cursor != "" {
		var err error
		if start, err = ib.decodeCursor(o.Cursor, binding); err != nil {
			return ThreadPage{}, err
		}
	}
	now := ib.now()
	v := ib.cache.newView(now)
	parts := append([]Partition{u.Partition()}, u.Shared()...)
	stats, err := ib.feedStats(ctx, v, parts, now, true, func(context.Context) error { return nil })
	if err != nil {
		return ThreadPage{}, err
	}
	var tombstones []driver.Record
	for _, st := range stats[1:] {
		tombstones = append(tombstones, st.Tombstones...)
	}
	dead, err := ib.deadReceipts(ctx, u, tombstones, now)
	if err != nil {
		return ThreadPage{}, err
	}
	all := threadTallies(parts, stats, dead)
	var page []Thread
	for _, t := range all {
		if start != "" && t.Activity >= start {
			continue
		}
		if len(page) == limit {
			cursor, err := ib.encodeCursor(page[len(page)-1].Activity, binding)
			if err != nil {
				return ThreadPage{}, err
			}
			if err := ib.previews(ctx, v, u, page, now); err != nil {
				return ThreadPage{}, err
			}
			return ThreadPage{Threads: page, Cursor: cursor}, nil
		}
		page = append(page, t)
	}
	if err := ib.previews(ctx, v, u, page, now); err != nil {
		return ThreadPage{}, err
	}
	return ThreadPage{Threads: page}, nil
}

// threadsBinding is what a cursor of ListThreads is valid for: the user
// and the groups whose threads it merges, behind a byte no List binding
// holds.
func threadsBinding(u User) []byte {
	return append([]byte("\x02threads\x00"), cursorBinding(u, ListOptions{})...)
}

// threadKey names one of a user's threads: its audience (as Thread.Group)
// and its key.
type threadKey struct{ group, thread string }

// threadTallies returns u's threads that List shows a message of, latest
// activity first, with their counts, from the stats (with the threads'
// counters) of parts, u's partition first, and dead, u's receipts of
// broadcasts removed before they expired.
func threadTallies(parts []Partition, stats []driver.Stats, dead []driver.Record) []Thread {
	source := map[string]bool{"": true} // the audiences listed
	for _, p := range parts[1:] {
		source[p.Group] = true
	}
	sums := map[threadKey]*driver.Counter{}
	// add adds c, a counter or change of partition p, to its thread's sum.
	add := func(p Partition, c driver.Counter) {
		if c.Thread == "" {
			return
		}
		k := threadKey{c.Group, c.Thread}
		if p.IsShared() {
			k.group = p.Group
			c = driver.Counter{Published: c.Published, Latest: c.Latest}
		}
		if !source[k.group] {
			return // u's receipts of a group u left
		}
		s := sums[k]
		if s == nil {
			s = &driver.Counter{}
			sums[k] = s
		}
		s.Add(c)
	}
	for i, st := range stats {
		for _, c := range st.Counters {
			add(parts[i], c)
		}
		// Records that expired are counted out, as Counts does.
		for _, e := range st.Expired {
			for _, d := range driver.RemovalDeltas(e) {
				add(parts[i], d)
			}
		}
	}
	for _, r := range dead {
		for _, d := range driver.RemovalDeltas(r) {
			add(parts[0], d)
		}
	}
	out := make([]Thread, 0, len(sums))
	for k, s := range sums {
		t := Thread{Thread: k.thread, Group: k.group, Activity: s.Latest, Tally: newTally(*s)}
		if t.Total > 0 && t.Activity != "" {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b Thread) int {
		if c := strings.Compare(b.Activity, a.Activity); c != 0 {
			return c
		}
		return strings.Compare(a.Group+"\x00"+a.Thread, b.Group+"\x00"+b.Thread)
	})
	return out
}

// previews sets each thread's Latest: its activity's message, read with
// u's receipt of it in one round trip, or, where u cannot see that one,
// the newest the thread's List shows, read from the thread index (all
// such threads in one more round trip).
func (ib *Inbox) previews(ctx context.Context, v *view, u User, threads []Thread, now time.Time) error {
	if len(threads) == 0 {
		return nil
	}
	var keys []driver.Key
	for _, t := range threads {
		keys = append(keys, driver.Key{Partition: u.Partition(), ID: t.Activity})
		if t.Group != "" {
			keys = append(keys, driver.Key{Partition: u.Scope.Group(t.Group), ID: t.Activity})
		}
	}
	recs, err := ib.getRecords(ctx, keys)
	if err != nil {
		return err
	}
	byKey := make(map[driver.Key]driver.Record, len(recs))
	for _, r := range recs {
		byKey[r.Key()] = r
	}
	o := ListOptions{}
	var missing []int
	for i, t := range threads {
		f, ok := feedRecord{}, false
		own, hasOwn := byKey[driver.Key{Partition: u.Partition(), ID: t.Activity}]
		if t.Group == "" {
			f, ok = feedRecord{Record: own}, hasOwn && !own.Receipt
		} else {
			var shared driver.Record
			shared, ok = byKey[driver.Key{Partition: u.Scope.Group(t.Group), ID: t.Activity}]
			f = feedRecord{Record: shared}
			if hasOwn && own.Receipt {
				f.receipt = &own
			}
		}
		if ok && f.Record.Message.Thread == t.Thread && visible(f, o, now) {
			threads[i].Latest = f.message()
			continue
		}
		missing = append(missing, i)
	}
	errs := make([]error, len(missing))
	done := make(chan struct{})
	for j, i := range missing {
		go func() {
			defer func() { done <- struct{}{} }()
			threads[i].Latest, errs[j] = ib.newestVisible(ctx, v, u, threads[i], now)
		}()
	}
	for range missing {
		<-done
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// newestVisible returns the newest message of thread t that List with the
// thread shows u, below t's activity, read from the thread index of t's
// partition (with u's receipts of a shared thread's messages by key); a
// zero Message if there is none.
func (ib *Inbox) newestVisible(ctx context.Context, v *view, u User, t Thread, now time.Time) (Message, error) {
	q := driver.Query{Partition: u.Partition(), Thread: t.Thread, Limit: DefaultPageSize, Now: now, Archived: driver.NotArchived}
	s := &feedStream{q: q, next: t.Activity, more: true}
	m := merger{streams: []*feedStream{s}}
	if t.Group != "" {
		s.q.Partition, s.receiptsIn = u.Scope.Group(t.Group), u.Partition()
		// The merger takes stream 0 for u's: an empty one stands for it.
		m.streams = []*feedStream{{}, s}
	}
	// The activity's own message is included: idAbove keeps it.
	s.next = idAbove(t.Activity)
	o := ListOptions{Thread: t.Thread}
	for {
		if err := ib.fetch(ctx, v, m.streams); err != nil {
			return Message{}, err
		}
		for {
			rec, ok, progressed := m.pop()
			if !progressed {
				break
			}
			if ok && visible(rec, o, now) {
				return rec.message(), nil
			}
		}
		if m.exhausted() {
			return Message{}, nil
		}
	}
}

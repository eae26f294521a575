package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// A ForeignWriter is a store under test that can write items as another
// program following the seeds writes them: the item without a ledger
// entry, and that program's own changes to the seeds' counters (published,
// read). memstore is one. RunFleetProperty writes such items when the
// store is one.
type ForeignWriter interface {
	PutForeign(ctx context.Context, rec driver.Record, deltas []driver.Counter) error
	// ReadForeign marks the record at k (a message or receipt of a user's
	// partition, the library's or not) read at at, as that program
	// marks one read (SET readat, if it has none), with its deltas, and
	// returns the stream's MODIFY record of the change, for the test to
	// hand to the stream handler (inbox.Inbox.HandleChange); ok is false,
	// and nothing is written, if no record is there or it is read.
	ReadForeign(ctx context.Context, k driver.Key, at time.Time, deltas []driver.Counter) (c driver.Change, ok bool, err error)
}

// An UnreliableStream is a Harness whose held removals can be delivered in
// part, as a stream whose handler fails some records (they come again
// later) and leaves others for a later batch: DeliverSome accounts the
// held removals for which deliver(i) is true, never one before an earlier
// held removal of the same item. memstore with WithStreamLag is one.
type UnreliableStream interface {
	DeliverSome(ctx context.Context, deliver func(i int) bool) (int, error)
}

// fleetFreshness is the shared-partition freshness bound of the fleet's
// processes, on the suite's clock.
const fleetFreshness = 30 * time.Second

// snapshotAge is how long after it was read no process of the fleet serves
// a snapshot any more: past the freshness bound, and the clock skew a
// backend snapshot is allowed (the backend's ttl runs on the real clock).
const snapshotAge = fleetFreshness + time.Minute + time.Second

// RunFleetProperty runs steps random operations, each through one of
// several Inboxes over one store (processes of a fleet, each with its own
// shared-partition cache, two of them sharing a SharedBackend), with
// another program writing seed-shaped items (direct messages, broadcasts,
// group messages and receipts, nested or flat headers, readat null) when
// the store is a ForeignWriter, and a stream that delivers late, in part,
// out of order across items (in order per item) and twice, when the store
// is a Harness (an UnreliableStream, for partial deliveries). Another
// program's items reach the stream handler (their INSERT records) through
// a random process, late, in any order and twice, but before they expire:
// an item that expires before its INSERT is handled is counted until its
// removal is.
//
// After every step, in every process, for every user, Counts must equal
// the tallies of a full List made right after it (the same view: totals,
// categories, archived, and the unread listed above the user's seen
// watermark; a check during which one of the process's snapshots expired
// by the real clock is made again); and whenever the stream is drained
// and the freshness bound has passed, every process's List, Counts and
// ReadBy (of every user's threads, page by page, and of her earlier
// pages) must equal the reference model's, and the reader items the
// receipts' ledger entries (see Run's invariant). Records are removed behind the library's back only once
// expired (as TTL does), but for another program's deletes of its own live
// messages, adopted or not, before or after a Recount: such a delete is
// counted when the stream delivers it, by design, so a user's Counts is
// compared with List only once the stream has delivered it.
//
// The seed is logged; set PropertySeedEnv to replay it.
func RunFleetProperty(t *testing.T, newStore NewStore, steps int) {
	seed := rand.Uint64()
	if s := os.Getenv(PropertySeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", PropertySeedEnv, s, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, PropertySeedEnv, seed)
	e := newEnv(t, newStore, seed)
	f := &fleet{
		e:          e,
		rng:        rand.New(rand.NewPCG(seed, 0xf1ee7)),
		users:      []string{"ann", "bob", "carol"},
		categories: []string{"", "alpha", "beta"},
		ttls:       []time.Duration{45 * time.Second, 3 * time.Minute, 15 * time.Minute},
		groups:     []string{"admins", "eu"},
		ids:        ulid.Monotonic(rand.NewChaCha8(seedBytes(seed, 7)), 0),
		unadopted:  map[string]map[string]bool{},
	}
	f.rb = &readByCheck{t: t, ctx: e.ctx, rng: rand.New(rand.NewPCG(seed, 0x4eadb7)), users: f.users}
	backend := newMemBackend()
	f.race = &markRace{Store: e.store}
	for i := range 3 {
		w := &snapshotWatch{}
		f.watches = append(f.watches, w)
		opts := []inbox.Option{inbox.WithClock(e.clock.Now), inbox.WithSharedCache(fleetFreshness),
			inbox.WithEntropy(rand.NewChaCha8(seedBytes(seed, 10+uint64(i)))), inbox.WithHooks(inbox.Hooks{SharedCache: w.event})}
		var over driver.Store = f.race
		if i < 2 {
			opts = append(opts, inbox.WithSharedBackend(backend))
		} else {
			// One process reads threads' counters by key, as over a table
			// whose index holds no tallies.
			over = untallied{f.race}
		}
		f.procs = append(f.procs, inbox.New(over, opts...))
	}
	f.m = newModel(f.users)
	f.rb.m = f.m
	for _, u := range f.users {
		e.member(u, f.groups...)
	}
	// Default preferences, one time in two, set before any process reads
	// the config (each caches it): every process applies them.
	f.m.defaults = randomDefaults(f.rng, f.groups, f.categories)
	if err := f.procs[0].PutInboxConfig(e.ctx, e.scope, inbox.InboxConfig{Preferences: prefsOfKeys(f.m.defaults)}); err != nil {
		t.Fatalf("PutInboxConfig: %v", err)
	}
	f.logf("inbox defaults %+v", prefsOfKeys(f.m.defaults))
	for f.step = 1; f.step <= steps; f.step++ {
		f.randomOp()
		f.checkViews()
		f.pageAcross()
		if f.step%25 == 0 {
			f.settle()
		}
		if t.Failed() {
			t.Fatalf("step %d failed (seed %d); the last operations:\n%s", f.step, seed, strings.Join(f.history, "\n"))
		}
	}
	f.settle()
	f.count("readByPages")
	f.stats["readByPages"], f.stats["readByReaders"] = f.rb.calls, f.rb.readers
	t.Logf("%d steps over %d processes: %v", steps, len(f.procs), f.stats)
}

// fleet is the state of one RunFleetProperty run.
type fleet struct {
	e     *env
	rng   *rand.Rand
	m     *model
	procs []*inbox.Inbox
	// watches watch the processes' snapshots, by process.
	watches []*snapshotWatch
	// race is the store under the processes: it runs a change racing a
	// bulk action's first write.
	race *markRace
	// rb checks ReadBy against the model, with a random source of its own
	// (the operations drawn are those of the seed without it).
	rb         *readByCheck
	users      []string
	categories []string
	ttls       []time.Duration
	groups     []string
	ids        *ulid.MonotonicEntropy
	// inserts are another program's items whose INSERT record the stream
	// handler has not yet handled (or may handle again).
	inserts []events.DynamoDBEventRecord
	// unadopted holds another program's direct messages and receipts not
	// yet adopted (by their INSERT, a mark or a recount), by user and ID:
	// they are not in the unread index, so Unseen does not see them (a
	// documented lag): an unread message not counted, a read broadcast
	// counted.
	unadopted map[string]map[string]bool
	// foreign are the keys of another program's messages (direct or
	// broadcast) it wrote, for it to delete.
	foreign []driver.Key
	// reads are the MODIFY records of another program's reads of users'
	// records that the stream handler has not yet handled (or may handle
	// again). Until it has handled one, the user's Counts may take the
	// record out with the marks its ledger entry counts (a documented
	// lag), so that user's views are not compared.
	reads []heldRead
	// live holds the users whose view another program's delete of a live
	// item, not yet accounted, changes (all of them for a broadcast):
	// List leaves the item out at once, Counts when the stream delivers
	// its removal (by design), so their Counts are not compared with
	// their List until the stream is drained; after a broadcast's, until
	// liveUntil, when no process's snapshot of its partition is from
	// before the delivery.
	live       map[string]bool
	liveShared bool
	liveUntil  time.Time
	step       int
	history    []string
	stats      map[string]int
}

// proc returns a random process and its number.
func (f *fleet) proc() (int, *inbox.Inbox) {
	i := f.rng.IntN(len(f.procs))
	return i, f.procs[i]
}

// user returns u in the groups the model has u in now.
func (f *fleet) user(u string) driver.User { return f.e.member(u, f.m.groups(u)...) }

// now returns the clock's time as the Inboxes see it.
func (f *fleet) now() time.Time { return f.e.clock.Now().UTC().Truncate(time.Second) }

// logf records an operation in the history shown on failure.
func (f *fleet) logf(format string, args ...any) {
	f.history = append(f.history, fmt.Sprintf("%5d %s ", f.step, f.now().Format("15:04:05"))+fmt.Sprintf(format, args...))
	if len(f.history) > 20 && os.Getenv("FLEET_DEBUG") == "" {
		f.history = f.history[1:]
	}
}

// count counts an operation for the final log.
func (f *fleet) count(op string) {
	if f.stats == nil {
		f.stats = map[string]int{}
	}
	f.stats[op]++
}

// fail reports an unexpected error of an operation.
func (f *fleet) fail(op string, err error) {
	f.e.t.Errorf("step %d: %s: %v", f.step, op, err)
}

// randomOp runs one random operation through a random process.
func (f *fleet) randomOp() {
	_, foreign := f.e.store.(ForeignWriter)
	h, harness := f.e.harness()
	switch r := f.rng.IntN(100); {
	case r < 14:
		f.publish()
	case r < 24:
		f.broadcast()
	case r < 33:
		f.mark()
	case r < 36:
		f.snooze()
	case r < 39:
		f.markAllRead()
	case r < 42:
		f.markSeen()
	case r < 44:
		f.redact()
	case r < 46:
		f.joinOrLeave()
	case r < 54 && foreign:
		f.writeForeign()
	case r < 60 && foreign:
		f.deliverInserts(false)
	case r < 63 && foreign && harness:
		f.deleteForeign(h)
	case r < 66 && foreign:
		f.readForeign()
	case r < 68 && foreign:
		f.deliverReads(false)
	case r < 74:
		f.advance()
	case r < 80 && harness:
		f.removeExpired(h)
	case r < 88 && harness:
		f.deliver(h)
	case r < 90 && harness:
		f.logf("redeliver")
		f.e.redeliver(h)
		f.count("redeliver")
	case r < 95:
		f.recount()
	case r < 97:
		f.mute()
	default:
		f.mark()
	}
}

// mute mutes or unmutes a random group, category or thread of direct
// messages, or opts in or out of a category, for a random user through a
// random process, and checks what SetPreferences reports: from then on every
// process's views and counts show it, whatever its snapshots hold.
func (f *fleet) mute() {
	i, ib := f.proc()
	u, k := f.users[f.rng.IntN(len(f.users))], f.groups[f.rng.IntN(len(f.groups))]
	switch r := f.rng.IntN(4); r {
	case 1, 2:
		k = "?*"[r-1:r] + f.categories[1+f.rng.IntN(len(f.categories)-1)]
	case 3:
		k = "!" + fleetThreads[1+f.rng.IntN(len(fleetThreads)-1)] // a thread of her direct messages
	}
	f.m.toggle(u, k)
	prefs := f.m.preferences(u)
	f.logf("p%d %s mutes %+v", i, u, prefs)
	if changed, err := ib.SetPreferences(f.e.ctx, f.user(u), prefs); err != nil || !changed {
		f.e.t.Errorf("step %d: p%d SetPreferences(%s, %+v) = %v, %v; want true, nil", f.step, i, u, prefs, changed, err)
	}
	f.count("mute")
}

// publish publishes a message to random users through a random process.
func (f *fleet) publish() {
	i, ib := f.proc()
	var to []string
	for _, j := range f.rng.Perm(len(f.users))[:1+f.rng.IntN(len(f.users))] {
		to = append(to, f.users[j])
	}
	d := f.draft()
	switch r := f.rng.IntN(8); {
	case d.Thread == "" && r < 2:
		// Scheduled, due within a minute: it shows in every process at once.
		d.DeliverAt = f.now().Add(time.Duration(1+f.rng.IntN(60)) * time.Second)
	case d.Thread == "" && r < 4:
		// An aggregated message, of its category's key, from anyone.
		d.Aggregate, d.Sender = "agg-"+cmpOr(d.Category, "none"), f.users[f.rng.IntN(len(f.users))]
	}
	f.logf("p%d publish to %v (category %q, thread %q, aggregate %q, sender %q, ttl %v, deliver at %v)", i, to, d.Category, d.Thread, d.Aggregate, d.Sender, d.TTL, d.DeliverAt.Format("15:04:05"))
	res, err := ib.Publish(f.e.ctx, f.e.scope, to, d)
	if err != nil {
		f.fail("Publish", err)
		return
	}
	delivered, _, optedOut := f.m.delivered(to, res.Message.ID, d.Category)
	if !slices.Equal(res.OptedOut, optedOut) || !slices.Equal(res.Delivered, delivered) {
		f.e.t.Errorf("step %d: p%d Publish to %v: delivered %v, opted out %v; want %v, %v", f.step, i, to, res.Delivered, res.OptedOut, delivered, optedOut)
	}
	for _, u := range delivered {
		c := &modelCopy{category: d.Category, thread: d.Thread, expiresAt: res.Message.ExpiresAt, deliverAt: res.Message.DeliverAt, sender: d.Sender}
		f.m.copyPublished(d, u, res.Message.ID, c, res.Message.DeliveredAt)
	}
	f.count("publish")
}

// broadcast broadcasts to everyone or a random group through a random
// process.
func (f *fleet) broadcast() {
	i, ib := f.proc()
	d := f.draft()
	g := ""
	if f.rng.IntN(2) == 0 {
		g = f.groups[f.rng.IntN(len(f.groups))]
	}
	if d.Thread == "" && f.rng.IntN(4) == 0 {
		// Scheduled, due within a minute: it shows in every process at
		// once, whatever its snapshot of the partition.
		d.DeliverAt = f.now().Add(time.Duration(1+f.rng.IntN(60)) * time.Second)
	}
	f.logf("p%d broadcast to %q (category %q, thread %q, sender %q, ttl %v, deliver at %v)", i, g, d.Category, d.Thread, d.Sender, d.TTL, d.DeliverAt.Format("15:04:05"))
	var m driver.Message
	var err error
	if g == "" {
		m, err = ib.Broadcast(f.e.ctx, f.e.scope, d)
	} else {
		m, err = ib.BroadcastGroup(f.e.ctx, f.e.scope, g, d)
	}
	if err != nil {
		f.fail("Broadcast", err)
		return
	}
	f.m.broadcasts[m.ID] = &modelCopy{category: d.Category, thread: d.Thread, expiresAt: m.ExpiresAt, group: g, deliverAt: m.DeliverAt, sender: d.Sender}
	f.m.published(m.ID, d.Thread, "", cmpOr(g, driver.PublicGroup), false)
	f.m.sent(d, d.Sender, m.ID, m.DeliveredAt)
	f.count("broadcast")
}

// fleetThreads are the threads the fleet's drafts and views draw from
// ("" for none).
var fleetThreads = []string{"", "t1"}

// draft returns a random draft.
func (f *fleet) draft() inbox.Draft {
	d := inbox.Draft{Title: "m" + strconv.Itoa(f.step), Category: f.categories[f.rng.IntN(len(f.categories))],
		Thread: fleetThreads[f.rng.IntN(len(fleetThreads))], TTL: f.ttls[f.rng.IntN(len(f.ttls))]}
	if d.Thread != "" && f.rng.IntN(2) == 0 {
		d.Sender = f.users[f.rng.IntN(len(f.users))] // her own message is read for her
	}
	return d
}

// pick returns a random message ID u could mark: one of u's feed, archived
// or not, or any message ever made; "" if there is none.
func (f *fleet) pick(u string) string {
	now := f.now()
	feed := append(f.m.feed(u, now, inbox.ListOptions{}), f.m.feed(u, now, inbox.ListOptions{Archived: true})...)
	feed = append(feed, f.m.feed(u, now, inbox.ListOptions{Snoozed: true})...)
	var ids []string
	for _, en := range feed {
		ids = append(ids, en.ID)
	}
	if len(ids) == 0 || f.rng.IntN(8) == 0 {
		for id := range f.m.broadcasts {
			ids = append(ids, id)
		}
		for id := range f.m.direct[u] {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	slices.Sort(ids)
	return ids[f.rng.IntN(len(ids))]
}

// mark makes a random per-user mark (read, archive, unarchive, delete,
// interacted) through a random process, and checks what it reports
// against the model.
func (f *fleet) mark() {
	i, ib := f.proc()
	u := f.users[f.rng.IntN(len(f.users))]
	id := f.pick(u)
	if id == "" {
		return
	}
	now := f.now()
	ops := []struct {
		name string
		do   func(context.Context, driver.User, string) (bool, error)
		to   func(driver.State) (driver.State, bool)
	}{
		{"MarkRead", ib.MarkRead, func(s driver.State) (driver.State, bool) {
			if !s.ReadAt.IsZero() {
				return s, false
			}
			s.ReadAt = now
			return s, true
		}},
		{"Archive", ib.Archive, func(s driver.State) (driver.State, bool) {
			if !s.ArchivedAt.IsZero() {
				return s, false
			}
			s.ArchivedAt = now
			return s, true
		}},
		{"Unarchive", ib.Unarchive, func(s driver.State) (driver.State, bool) {
			if s.ArchivedAt.IsZero() {
				return s, false
			}
			s.ArchivedAt = time.Time{}
			return s, true
		}},
		{"Delete", ib.Delete, func(driver.State) (driver.State, bool) { return driver.State{DeletedAt: now}, true }},
		{"MarkInteracted", ib.MarkInteracted, interacted(now)},
	}
	op := ops[f.rng.IntN(len(ops))]
	want, found := f.m.change(u, id, now, op.to)
	f.logf("p%d %s %s for %s (want changed %v, found %v)", i, op.name, id, u, want, found)
	got, err := op.do(f.e.ctx, f.user(u), id)
	f.wantMark(op.name, u, id, got, err, want, found)
}

// wantMark checks what mark op of message id for u reported (got, err)
// against the model's want and found, counts it, and notes that a mark
// that changed something adopted the message.
func (f *fleet) wantMark(op, u, id string, got bool, err error, want, found bool) {
	switch {
	case !found && op == "Delete":
		if err != nil || got {
			f.e.t.Errorf("step %d: Delete of a message not in the inbox: %v, %v; want false, nil", f.step, got, err)
		}
	case !found:
		if !errors.Is(err, driver.ErrNotFound) {
			f.e.t.Errorf("step %d: %s of a message not in the inbox: %v, %v; want ErrNotFound", f.step, op, got, err)
		}
	case err != nil || got != want:
		f.e.t.Errorf("step %d: %s(%s, %s) = %v, %v; want %v, nil", f.step, op, u, id, got, err, want)
	}
	if got {
		delete(f.unadopted[u], id) // a mark adopts it
	}
	f.count(op)
}

// snooze snoozes a random message for a random user, for seconds to
// minutes, or unsnoozes one, through a random process, and checks what it
// reports against the model.
func (f *fleet) snooze() {
	i, ib := f.proc()
	u := f.users[f.rng.IntN(len(f.users))]
	id := f.pick(u)
	if id == "" {
		return
	}
	now := f.now()
	var until time.Time
	if f.rng.IntN(3) != 0 {
		until = now.Add(time.Duration(1+f.rng.IntN(600)) * time.Second)
	}
	want, found, bad := f.m.snooze(u, id, until, now)
	f.logf("p%d snooze %s for %s until %v (want changed %v, found %v, refused %v)", i, id, u, until, want, found, bad)
	var got bool
	var err error
	if until.IsZero() {
		got, err = ib.Unsnooze(f.e.ctx, f.user(u), id)
	} else {
		got, err = ib.Snooze(f.e.ctx, f.user(u), id, until)
	}
	if bad {
		if !errors.Is(err, inbox.ErrInvalidInput) {
			f.e.t.Errorf("step %d: Snooze(%s, %s, %v) = %v, %v; want ErrInvalidInput", f.step, u, id, until, got, err)
		}
		f.count("Snooze")
		return
	}
	f.wantMark("Snooze", u, id, got, err, want, found)
}

// markAllRead runs a bulk action on the view a random process shows a
// random user, up to the newest message of that view: MarkAllRead of the
// unread view, ArchiveAll of the feed ("clear inbox") or DeleteAll of the
// archive ("empty the archive"). Half of the time another process changes
// one of the listed messages just before the action's first write (see
// raceBulk). The action must change exactly the messages it listed that
// still stand and are still in the view: none that the racing change took
// out of it.
func (f *fleet) markAllRead() {
	i, ib := f.proc()
	u := f.users[f.rng.IntN(len(f.users))]
	o := inbox.ListOptions{Category: f.categories[f.rng.IntN(len(f.categories))], Thread: fleetThreads[f.rng.IntN(len(fleetThreads))]}
	name, call, set := "MarkAllRead", ib.MarkAllRead, func(s driver.State, now time.Time) driver.State { s.ReadAt = now; return s }
	switch f.rng.IntN(4) {
	case 0:
		name, call, set = "ArchiveAll", ib.ArchiveAll, func(s driver.State, now time.Time) driver.State { s.ArchivedAt = now; return s }
	case 1:
		o.Archived = true
		name, call, set = "DeleteAll", ib.DeleteAll, func(_ driver.State, now time.Time) driver.State { return driver.State{DeletedAt: now} }
	default:
		o.UnreadOnly = true
	}
	listed := f.listIn(ib, f.user(u), o)
	if len(listed) == 0 {
		return
	}
	o.UpTo = listed[0].ID
	now := f.now()
	raced := f.rng.IntN(2) == 0
	if raced {
		f.raceBulk(i, u, listed[f.rng.IntN(len(listed))], o, now)
	}
	n, err := call(f.e.ctx, f.user(u), o)
	if left := f.race.pending(); raced && left != 0 {
		f.e.t.Errorf("step %d: %s of %d listed messages wrote nothing: the racing change did not run", f.step, name, len(listed))
	}
	// What the view lists and still holds, in the model, once the racing
	// change is made: another process may have removed some.
	held := map[string]bool{}
	for _, en := range f.m.feed(u, now, o) {
		held[en.ID] = true
	}
	want := 0
	for _, m := range listed {
		if !held[m.ID] {
			continue
		}
		if changed, _ := f.m.change(u, m.ID, now, func(s driver.State) (driver.State, bool) { return set(s, now), true }); changed {
			want++
			delete(f.unadopted[u], m.ID)
		}
	}
	f.logf("p%d %s for %s (category %q, thread %q, up to %s): %d of %d listed", i, name, u, o.Category, o.Thread, o.UpTo, want, len(listed))
	if err != nil || n != want {
		f.e.t.Errorf("step %d: %s(%s, %+v) = %d, %v; want %d, nil", f.step, name, u, o, n, err, want)
	}
	if err := f.m.syncPositions(f.e.ctx, f.e.store, f.user(u)); err != nil {
		f.e.t.Errorf("step %d: the read positions of %s: %v", f.step, u, err)
	}
	f.count(name)
}

// raceBulk has another process than i change message m of u's view o just
// before the bulk action's first write, as a call of u's made at that
// instant would: MarkRead, Archive (Unarchive in the archived view),
// Snooze or Delete. Each keeps m in the view or takes it out; none brings
// a message in. The change is checked against the model, which it updates.
func (f *fleet) raceBulk(i int, u string, m driver.Message, o inbox.ListOptions, now time.Time) {
	j := (i + 1 + f.rng.IntN(len(f.procs)-1)) % len(f.procs)
	ib := f.procs[j]
	name, call, to := "Delete", ib.Delete, func(driver.State) (driver.State, bool) { return driver.State{DeletedAt: now}, true }
	var until time.Time
	switch r := f.rng.IntN(4); {
	case r == 0:
		name, call, to = "MarkRead", ib.MarkRead, func(s driver.State) (driver.State, bool) {
			if !s.ReadAt.IsZero() {
				return s, false
			}
			s.ReadAt = now
			return s, true
		}
	case r == 1:
		name, call = "Archive", ib.Archive
		if o.Archived {
			name, call = "Unarchive", ib.Unarchive
		}
		to = func(s driver.State) (driver.State, bool) {
			if o.Archived == s.ArchivedAt.IsZero() {
				return s, false
			}
			s.ArchivedAt = time.Time{}
			if !o.Archived {
				s.ArchivedAt = now
			}
			return s, true
		}
	case r == 2 && m.Thread == "":
		if until = now.Add(time.Duration(1+f.rng.IntN(600)) * time.Second); until.Before(m.ExpiresAt) {
			name = "Snooze"
			call = func(ctx context.Context, du driver.User, id string) (bool, error) {
				return ib.Snooze(ctx, du, id, until)
			}
		}
	}
	f.logf("p%d %s %s for %s, racing the bulk action", j, name, m.ID, u)
	f.race.race(func([]driver.Mark) {
		var want, found bool
		if name == "Snooze" {
			want, found, _ = f.m.snooze(u, m.ID, until, now)
		} else {
			want, found = f.m.change(u, m.ID, now, to)
		}
		got, err := call(f.e.ctx, f.user(u), m.ID)
		f.wantMark(name, u, m.ID, got, err, want, found)
	})
	f.count("bulkRaced")
}

// markSeen marks a random user's feed seen through a random process.
func (f *fleet) markSeen() {
	i, ib := f.proc()
	u := f.users[f.rng.IntN(len(f.users))]
	w := inbox.SeenAt(f.e.clock.Now())
	want := w > f.m.seen[u]
	if want {
		f.m.seen[u] = w
	}
	f.logf("p%d mark seen for %s", i, u)
	if got, err := ib.MarkSeen(f.e.ctx, f.user(u)); err != nil || got != want {
		f.e.t.Errorf("step %d: MarkSeen(%s) = %v, %v; want %v, nil", f.step, u, got, err, want)
	}
	f.count("markSeen")
}

// redact redacts a random live message everywhere through a random
// process.
func (f *fleet) redact() {
	i, ib := f.proc()
	r, want, ok := f.m.redaction(f.users, f.now(), f.rng.IntN)
	if !ok {
		return
	}
	f.logf("p%d redact %s (group %q, users %v)", i, r.ID, r.Group, r.Users)
	if n, err := ib.Redact(f.e.ctx, f.e.scope, r); err != nil || n != want {
		f.e.t.Errorf("step %d: Redact(%+v) = %d, %v; want %d, nil", f.step, r, n, err, want)
	}
	f.count("redact")
}

// joinOrLeave moves a random user into or out of a random group.
func (f *fleet) joinOrLeave() {
	u, g := f.users[f.rng.IntN(len(f.users))], f.groups[f.rng.IntN(len(f.groups))]
	f.m.member[u][g] = !f.m.member[u][g]
	f.logf("%s in %s: %v", u, g, f.m.member[u][g])
	f.count("joinOrLeave")
}

// writeForeign writes an item as another program following the seeds
// does, with its counter changes, and holds its INSERT record for the
// stream: a direct message, a broadcast to everyone or to a group, or a
// user's receipt of an unread broadcast to everyone.
func (f *fleet) writeForeign() {
	w := f.e.store.(ForeignWriter)
	now := f.now()
	id := ulid.MustNew(ulid.Timestamp(f.e.clock.Now()), f.ids).String()
	cat := f.categories[f.rng.IntN(len(f.categories))]
	exp := now.Add(f.ttls[f.rng.IntN(len(f.ttls))])
	msg := driver.Message{ID: id, Category: cat, Title: "foreign", Body: "b", Sender: "other", ReceivedAt: now, DeliveredAt: now, ExpiresAt: exp}
	var rec driver.Record
	var what string
	switch r := f.rng.IntN(4); r {
	case 0, 1: // a direct message
		u := f.users[f.rng.IntN(len(f.users))]
		msg.Audience = driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{u}}
		rec = driver.Record{Partition: f.e.part(u), Message: msg}
		f.m.direct[u][id] = &modelCopy{category: cat, expiresAt: exp}
		f.unadopt(u, id)
		what = "direct to " + u
	case 2: // a broadcast, to everyone or a group
		g := f.groups[f.rng.IntN(len(f.groups))]
		if f.rng.IntN(2) == 0 {
			g = ""
		}
		msg.Audience = driver.Audience{Kind: driver.AudienceEveryone}
		p := f.e.pub()
		if g != "" {
			msg.Audience = driver.Audience{Kind: driver.AudienceGroup, Group: g}
			p = groupOf(f.e.scope, g)
		}
		rec = driver.Record{Partition: p, Message: msg}
		f.m.broadcasts[id] = &modelCopy{category: cat, expiresAt: exp, group: g}
		what = "broadcast to " + cmpOr(g, "everyone")
	default: // a receipt of a live broadcast to everyone, for a user with none
		var picks []string
		u := f.users[f.rng.IntN(len(f.users))]
		for bid, b := range f.m.broadcasts {
			// Of a broadcast older than the freshness bound: every view
			// holds it (one newer than a view is a documented lag).
			if b.group == "" && now.Before(b.expiresAt) && f.m.receipts[u][bid] == nil && f.m.stateOf(u, bid).IsZero() &&
				ulid.MustParse(bid).Time() <= ulid.Timestamp(f.e.clock.Now().Add(-fleetFreshness)) {
				picks = append(picks, bid)
			}
		}
		if len(picks) == 0 {
			return
		}
		slices.Sort(picks)
		bid := picks[f.rng.IntN(len(picks))]
		b := f.m.broadcasts[bid]
		rec = driver.Record{Partition: f.e.part(u), Receipt: true, Message: driver.Message{ID: bid, Category: b.category, ReadAt: now, ExpiresAt: b.expiresAt}}
		f.m.receipts[u][bid] = &driver.State{ReadAt: now}
		f.unadopt(u, bid)
		what = "receipt of " + bid + " for " + u
	}
	// The seeds' counter changes: published of a message, read of a
	// receipt, in c#* and c#<category>.
	t := driver.Counter{Partition: rec.Partition, Published: 1}
	if rec.Receipt {
		t = driver.Counter{Partition: rec.Partition, Read: 1}
	}
	deltas := []driver.Counter{t}
	if rec.Message.Category != "" {
		t.Category = rec.Message.Category
		deltas = append(deltas, t)
	}
	f.logf("foreign %s: %s", what, rec.Message.ID)
	if err := w.PutForeign(f.e.ctx, rec, deltas); err != nil {
		f.fail("PutForeign", err)
		return
	}
	f.inserts = append(f.inserts, insertRecord(rec, f.rng.IntN(2) == 0, "ins-"+strconv.Itoa(f.step)))
	if !rec.Receipt {
		f.foreign = append(f.foreign, rec.Key())
	}
	f.count("foreign")
}

// deleteForeign deletes, as the other program may, one of its live
// messages, adopted or not, before it expires: List leaves it out at
// once, Counts when the stream delivers the removal, whether a Recount
// came between or not.
func (f *fleet) deleteForeign(h Harness) {
	now := f.now()
	var keys []driver.Key
	for _, k := range f.foreign {
		if c := f.m.broadcasts[k.ID]; k.Partition.IsShared() && c != nil && now.Before(c.expiresAt) {
			keys = append(keys, k)
		}
		if c := f.m.direct[k.Partition.User][k.ID]; !k.Partition.IsShared() && c != nil && now.Before(c.expiresAt) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return
	}
	// Mostly one whose INSERT the stream has not handled (never adopted,
	// unless a mark or a Recount did), whose removal a Recount must not
	// count out twice.
	held := map[string]bool{}
	for _, r := range f.inserts {
		held[r.Change.Keys["pk"].String()+r.Change.Keys["sk"].String()] = true
	}
	if f.rng.IntN(4) > 0 {
		keys = slices.DeleteFunc(keys, func(k driver.Key) bool { return !held[k.Partition.PK()+driver.MessageSK(k.ID)] })
		if len(keys) == 0 {
			return
		}
	}
	k := keys[f.rng.IntN(len(keys))]
	f.logf("foreign delete of %s of %s (INSERT held: %v)", k.ID, k.Partition.PK(), held[k.Partition.PK()+driver.MessageSK(k.ID)])
	if ok, err := h.Delete(f.e.ctx, k); err != nil || !ok {
		f.fail("Delete", fmt.Errorf("a live item of another program: %v, %w", ok, err))
		return
	}
	if f.live == nil {
		f.live = map[string]bool{}
	}
	if k.Partition.IsShared() {
		f.m.remove("", k.ID)
		f.liveShared = true
		for _, u := range f.users {
			f.live[u] = true
		}
	} else {
		f.m.removeCopy(k.Partition.User, k.ID)
		delete(f.unadopted[k.Partition.User], k.ID)
		f.live[k.Partition.User] = true
	}
	f.count("foreignDelete")
}

// heldRead is the MODIFY record of another program's read of a record
// of user's, waiting for the stream handler.
type heldRead struct {
	user      string
	change    driver.Change
	delivered bool // handled once already: kept to come again
}

// readForeign has another program mark one of a user's records read, as
// the seeds mark one (readat on the user's copy, or on the user's receipt
// of a broadcast, and read +1 in c#* and c#<category>): a message of the
// library's or of that program's, snoozed, archived, deleted (a receipt:
// it stays hidden), scheduled and not due, of a thread or a group, or
// not. Its MODIFY record
// waits for the stream handler.
func (f *fleet) readForeign() {
	w := f.e.store.(ForeignWriter)
	now := f.now()
	u := f.users[f.rng.IntN(len(f.users))]
	cats := map[string]string{}
	for id, c := range f.m.direct[u] {
		if now.Before(c.expiresAt) && c.state.ReadAt.IsZero() { // not due yet too: it stays hidden
			cats[id] = c.category
		}
	}
	for id, st := range f.m.receipts[u] {
		if b := f.m.broadcasts[id]; b != nil && now.Before(b.expiresAt) && st.ReadAt.IsZero() { // deleted too: it stays hidden
			cats[id] = b.category
		}
	}
	if len(cats) == 0 {
		return
	}
	ids := slices.Sorted(maps.Keys(cats))
	id := ids[f.rng.IntN(len(ids))]
	p := f.e.part(u)
	f.logf("foreign read of %s for %s", id, u)
	c, ok, err := w.ReadForeign(f.e.ctx, driver.Key{Partition: p, ID: id}, now, delta(p, cats[id], 0, 1))
	if err != nil || !ok {
		f.fail("ReadForeign", fmt.Errorf("%s of %s, unread in the model: %v, %w", id, u, ok, err))
		return
	}
	if c, direct := f.m.direct[u][id]; direct {
		c.state.ReadAt = now
	} else {
		f.m.receipts[u][id].ReadAt = now
	}
	f.reads = append(f.reads, heldRead{user: u, change: c})
	f.count("foreignRead")
}

// reading reports whether another program's read of a record of u's
// waits for the stream handler.
func (f *fleet) reading(u string) bool {
	return slices.ContainsFunc(f.reads, func(r heldRead) bool { return r.user == u && !r.delivered })
}

// deliverReads hands held MODIFY records of another program's reads to
// the stream handler (HandleChange) of a random process: all of them with
// all set, else a random part, some kept to come again. Each item's
// records go in the order they were made.
func (f *fleet) deliverReads(all bool) {
	if len(f.reads) == 0 {
		return
	}
	i, ib := f.proc()
	var keep []heldRead
	n := 0
	held := map[driver.Key]bool{}
	for _, r := range f.reads {
		k := r.change.New.Key()
		if held[k] || !all && f.rng.IntN(3) == 0 {
			held[k] = true
			keep = append(keep, r)
			continue
		}
		if err := ib.HandleChange(f.e.ctx, r.change); err != nil {
			f.e.t.Errorf("step %d: p%d HandleChange(a foreign read of %s): %v", f.step, i, k.ID, err)
		}
		n++
		if !all && f.rng.IntN(4) == 0 {
			r.delivered = true
			keep = append(keep, r) // delivered again later
		}
	}
	f.logf("p%d stream: %d foreign reads (%d kept)", i, n, len(keep))
	f.reads = keep
	f.count("reads")
}

// deliverInserts hands held INSERT records to the stream handler of a
// random process: all of them with all set, else a random part, in a
// random order, some kept to come again.
func (f *fleet) deliverInserts(all bool) {
	if len(f.inserts) == 0 {
		return
	}
	i, ib := f.proc()
	var batch, keep []events.DynamoDBEventRecord
	for _, r := range f.inserts {
		switch {
		case all || f.rng.IntN(3) > 0:
			batch = append(batch, r)
			if !all && f.rng.IntN(4) == 0 {
				keep = append(keep, r) // delivered again later
			}
		default:
			keep = append(keep, r)
		}
	}
	for _, r := range batch {
		u := r.Change.NewImage["uid"].String()
		delete(f.unadopted[u], strings.TrimPrefix(r.Change.Keys["sk"].String(), driver.MessagePrefix))
	}
	f.rng.Shuffle(len(batch), func(a, b int) { batch[a], batch[b] = batch[b], batch[a] })
	f.logf("p%d stream: %d inserts (%d kept)", i, len(batch), len(keep))
	resp, err := ib.StreamHandler(f.e.ctx, events.DynamoDBEvent{Records: batch})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		f.e.t.Errorf("step %d: StreamHandler(inserts) = %+v, %v; want no failure", f.step, resp, err)
	}
	f.inserts = keep
	f.count("inserts")
}

// advance moves the clock on a little, or past the freshness bound. The
// INSERT records of another program's items that would expire within the
// freshness bound of the new time are handled first: the stream is never
// so late that a view read before an item's adoption outlives the item.
func (f *fleet) advance() {
	d := time.Duration(1+f.rng.IntN(20)) * time.Second
	if f.rng.IntN(4) == 0 {
		d = fleetFreshness + time.Duration(f.rng.IntN(60))*time.Second
	}
	to := f.now().Add(d)
	for _, r := range f.reads {
		// The handler sees a read before its record expires: else Counts
		// takes the record out with the marks its entry counts until the
		// stream accounts its removal (a documented lag).
		if !to.Before(r.change.New.Message.ExpiresAt) {
			f.deliverReads(true)
			break
		}
	}
	for _, r := range f.inserts {
		if exp, _ := strconv.ParseInt(r.Change.NewImage["expiredat"].Number(), 10, 64); !to.Add(fleetFreshness).Before(time.Unix(exp, 0)) {
			f.deliverInserts(true)
			break
		}
	}
	f.logf("advance %v", d)
	f.e.clock.Advance(d)
	f.count("advance")
}

// removeExpired deletes a random expired record, as TTL does.
func (f *fleet) removeExpired(h Harness) {
	now := f.now()
	var keys []driver.Key
	for _, u := range f.users {
		for id, c := range f.m.direct[u] {
			if !now.Before(c.expiresAt) {
				keys = append(keys, driver.Key{Partition: f.e.part(u), ID: id})
			}
		}
		for id := range f.m.receipts[u] {
			if b, ok := f.m.broadcasts[id]; ok && !now.Before(b.expiresAt) {
				keys = append(keys, driver.Key{Partition: f.e.part(u), ID: id})
			}
		}
	}
	for id, b := range f.m.broadcasts {
		if !now.Before(b.expiresAt) {
			p := f.e.pub()
			if b.group != "" {
				p = groupOf(f.e.scope, b.group)
			}
			keys = append(keys, driver.Key{Partition: p, ID: id})
		}
	}
	if len(keys) == 0 {
		return
	}
	slices.SortFunc(keys, func(a, b driver.Key) int { return strings.Compare(a.Partition.PK()+a.ID, b.Partition.PK()+b.ID) })
	k := keys[f.rng.IntN(len(keys))]
	f.logf("TTL deletes %s of %s", k.ID, k.Partition.PK())
	if _, err := h.Delete(f.e.ctx, k); err != nil {
		f.fail("Delete", err)
	}
	f.count("ttl")
}

// deliver delivers the held removals: all, or with an UnreliableStream a
// random part of them.
func (f *fleet) deliver(h Harness) {
	if u, ok := h.(UnreliableStream); ok && f.rng.IntN(3) > 0 {
		n, err := u.DeliverSome(f.e.ctx, func(int) bool { return f.rng.IntN(2) == 0 })
		if err != nil {
			f.fail("DeliverSome", err)
		}
		f.logf("stream: %d removals of %d", n, n+h.Pending())
		f.count("deliverSome")
		return
	}
	f.logf("stream: all %d removals", h.Pending())
	f.e.deliver(h)
	f.count("deliver")
}

// recount recounts a random user, or a random partition, through a random
// process.
func (f *fleet) recount() {
	i, ib := f.proc()
	u := f.users[f.rng.IntN(len(f.users))]
	if f.rng.IntN(2) == 0 {
		f.logf("p%d recount %s", i, u)
		if _, err := ib.Recount(f.e.ctx, f.user(u)); err != nil {
			f.fail("Recount", err)
		}
		for _, q := range append(f.user(u).Shared(), f.e.part(u)) {
			f.m.recounted(q)
		}
		f.adopted(u)
		f.count("recount")
		return
	}
	parts := []driver.Partition{f.e.part(u), f.e.pub()}
	for _, g := range f.groups {
		parts = append(parts, groupOf(f.e.scope, g))
	}
	p := parts[f.rng.IntN(len(parts))]
	f.logf("p%d recount partition %s", i, p.PK())
	if err := ib.RecountPartition(f.e.ctx, p); err != nil {
		f.fail("RecountPartition", err)
	}
	f.m.recounted(p)
	if p == f.e.part(u) {
		f.adopted(u)
	}
	f.count("recountPartition")
}

// unadopt notes that u's item id, another program's, is not adopted.
func (f *fleet) unadopt(u, id string) {
	if f.unadopted[u] == nil {
		f.unadopted[u] = map[string]bool{}
	}
	f.unadopted[u][id] = true
}

// adopted notes that every item another program wrote to u is adopted:
// a recount of u's partition adopted what stands.
func (f *fleet) adopted(u string) { delete(f.unadopted, u) }

// listIn lists all of u's feed with o through ib.
func (f *fleet) listIn(ib *inbox.Inbox, u driver.User, o inbox.ListOptions) []driver.Message {
	var out []driver.Message
	o.Limit = inbox.MaxPageSize
	for pages := 0; ; pages++ {
		page, err := ib.List(f.e.ctx, u, o)
		if err != nil || pages > 1000 {
			f.e.t.Fatalf("step %d: List(%s, %+v): %v", f.step, u.ID, o, err)
		}
		out = append(out, page.Messages...)
		if page.Cursor == "" {
			return out
		}
		o.Cursor = page.Cursor
	}
}

// checkViews checks, in every process, that every user's Counts equals a
// full List made right after it.
func (f *fleet) checkViews() {
	if h, ok := f.e.harness(); ok && h.Pending() == 0 && f.live != nil {
		// Every removal accounted: a snapshot of a shared partition
		// read before may still hold its counters from before.
		if f.liveShared {
			f.liveUntil = f.now().Add(snapshotAge)
		}
		f.live, f.liveShared = nil, false
	}
	if f.now().Before(f.liveUntil) {
		return
	}
	// Adopted by the store's own stream (the dynamo harness hands every
	// record of the table's stream to a stream handler), or gone.
	for u, ids := range f.unadopted {
		for id := range ids {
			recs, err := f.e.store.GetRecords(f.e.ctx, []driver.Key{{Partition: f.e.part(u), ID: id}})
			if err != nil {
				f.fail("GetRecords", err)
			}
			if len(recs) == 0 || recs[0].Ledgered() {
				delete(ids, id)
			}
		}
	}
	for i, ib := range f.procs {
		for _, name := range f.users {
			// The seed's draws, made once however many attempts follow.
			listBefore, threadsPage := f.rng.IntN(3) == 0, 1+f.rng.IntN(3)
			for attempt := 1; ; attempt++ {
				f.watches[i].start()
				errs := f.checkView(i, ib, name, listBefore, threadsPage)
				if expired := f.watches[i].stop(); len(errs) > 0 && expired && attempt < viewAttempts {
					f.count("viewRetried")
					continue
				}
				for _, err := range errs {
					f.e.t.Error(err)
				}
				break
			}
		}
	}
}

// snapshotWatch follows one process's shared-cache events while a check
// runs: a miss or refresh of a partition the check's calls had already
// found or read a snapshot of is a snapshot that expired, or was renewed,
// between them, or within one (nothing is written during a check). It is safe for concurrent use.
type snapshotWatch struct {
	mu      sync.Mutex
	seen    map[driver.Partition]bool // nil: not watching
	last    map[driver.Partition]inbox.CacheEventKind
	expired bool
}

// event notes e (the process's inbox.Hooks.SharedCache).
func (w *snapshotWatch) event(_ context.Context, e inbox.CacheEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		return
	}
	switch {
	case e.Kind == inbox.CacheMiss && w.seen[e.Partition]:
		w.expired = true
	case e.Kind == inbox.CacheRefresh && w.seen[e.Partition] && w.last[e.Partition] != inbox.CacheMiss:
		// A renewal, not a miss's read: Counts read the partition's hour
		// bucket at a later instant than its snapshot's day bucket, and
		// read a newer snapshot (see Inbox.staleBuckets), which the calls
		// after it serve.
		w.expired = true
	}
	w.seen[e.Partition], w.last[e.Partition] = true, e.Kind
}

// start starts watching.
func (w *snapshotWatch) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen, w.last, w.expired = map[driver.Partition]bool{}, map[driver.Partition]inbox.CacheEventKind{}, false
}

// stop stops watching, and reports whether a snapshot expired since start.
func (w *snapshotWatch) stop() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen, w.last = nil, nil
	return w.expired
}

// viewAttempts bounds the checks of one user's views in one process.
const viewAttempts = 4

// checkView checks, in process i (ib), that user name's Counts equals a
// full List made right after it (and one made before it, if listBefore)
// and that her threads (listed by pages of threadsPage) agree with her
// List, and returns what differs.
//
// Its calls see one view of each shared partition only if the process
// serves them one snapshot of it. The suite's clock stands still here,
// but a snapshot also expires by the real clock: the freshness bound
// after it was read, or before that if it came from the backend (whose
// ttl runs on the real clock, less a random part: see
// inbox.WithSharedBackend). On a slow run one now and then expires
// between two calls, and the next call reads a newer view; the caller
// then checks again (see snapshotWatch).
func (f *fleet) checkView(i int, ib *inbox.Inbox, name string, listBefore bool, threadsPage int) []string {
	var errs []string
	u := f.user(name)
	// A List made before Counts, nothing written between, shows
	// what the List after it shows: Counts does not see fresher
	// data than List (a receipt made through another process).
	var before []driver.Message
	if listBefore {
		before = f.listIn(ib, u, inbox.ListOptions{})
	}
	got, err := ib.Counts(f.e.ctx, u)
	if err != nil {
		f.e.t.Fatalf("step %d: p%d Counts(%s): %v", f.step, i, name, err)
	}
	listed := f.listIn(ib, u, inbox.ListOptions{})
	if before != nil {
		if diff := cmp.Diff(entries(before), entries(listed), cmp.Comparer(entry.equal)); diff != "" {
			errs = append(errs, fmt.Sprintf("step %d: p%d List(%s) before Counts differs from List after it (-before +after):\n%s", f.step, i, name, diff))
		}
	}
	archived := f.listIn(ib, u, inbox.ListOptions{Archived: true})
	// The process's threads agree with its List (but for another
	// program's receipts the stream has not adopted yet: that
	// program counts no thread); their activity with the model's
	// once settled.
	threads := listThreads(f.e.t, f.e.ctx, ib, u, threadsPage)
	if f.live[name] || f.reading(name) {
		return errs
	}
	threadFeed, threadArchived := listed, archived
	if len(f.m.preferences(name).OptedOut) > 0 {
		threadFeed, threadArchived = threadsWhole(func(o inbox.ListOptions) []driver.Message { return f.listIn(ib, u, o) }, threads, nil, listed, archived)
	}
	if diff := threadsDiff(threads, threadFeed, threadArchived, nil, f.m.preferences(name)); diff != "" && len(f.unadopted[name]) == 0 {
		errs = append(errs, fmt.Sprintf("step %d: p%d ListThreads(%s) differs from its List:\n%s", f.step, i, name, diff))
	}
	want := countsOf(listed, archived, f.m.seen[name])
	want.Snoozed = int64(len(f.listIn(ib, u, inbox.ListOptions{Snoozed: true})))
	if f.m.seen[name] == "" {
		want = allUnseen(want)
	} else {
		unseen := func(cat string, d int64) {
			want.Unseen += d
			if t, ok := want.Categories[cat]; ok {
				t.Unseen += d
				want.Categories[cat] = t
			}
		}
		for _, m := range listed {
			switch {
			case !f.unadopted[name][m.ID] || m.ID <= f.m.seen[name] || m.Muted:
			case !m.IsBroadcast() && !m.IsRead():
				unseen(m.Category, -1) // not counted above the watermark until adopted
			case m.IsBroadcast():
				unseen(m.Category, 1) // its receipt is not counted above the watermark until adopted
			}
		}
		// as Counts bounds them
		want.Unseen = min(max(want.Unseen, 0), want.Unread)
		for c, t := range want.Categories {
			t.Unseen = min(max(t.Unseen, 0), t.Unread)
			want.Categories[c] = t
		}
	}
	if !cmp.Equal(want, got) {
		errs = append(errs, fmt.Sprintf("step %d: p%d Counts(%s) differ from its List (-List +Counts):\n%s", f.step, i, name, cmp.Diff(want, got)))
		if os.Getenv("FLEET_DEBUG") != "" {
			for _, m := range f.listIn(ib, u, inbox.ListOptions{}) {
				f.e.t.Logf("listed %s %s %q read=%v exp=%v", m.ID, m.Audience.Kind, m.Category, !m.ReadAt.IsZero(), m.ExpiresAt.Format("15:04:05"))
			}
			fresh := inbox.New(f.e.store, inbox.WithClock(f.e.clock.Now), inbox.WithSharedCache(0))
			for _, m := range f.listIn(fresh, u, inbox.ListOptions{}) {
				f.e.t.Logf("fresh %s %s %q read=%v exp=%v", m.ID, m.Audience.Kind, m.Category, !m.ReadAt.IsZero(), m.ExpiresAt.Format("15:04:05"))
			}
			fc, _ := fresh.Counts(f.e.ctx, u)
			f.e.t.Logf("fresh counts %+v groups %v", fc, f.m.groups(name))
			res, _ := f.e.store.Query(f.e.ctx, driver.Query{Partition: f.e.part(name), Limit: 100})
			for _, r := range res.Records {
				f.e.t.Logf("stored %s receipt=%v read=%v entry=%q", r.Message.ID, r.Receipt, r.Message.IsRead(), r.Entry)
			}
		}
	}
	return errs
}

// pagedAcross pages all of u's feed with o (a page of limit) and all of
// u's threads (a page of limit too), each page from the next process of
// ibs in turn, as behind a load balancer, and fails if a page repeats a
// message or a thread of an earlier page, or breaks the order.
func (f *fleet) pagedAcross(ibs []*inbox.Inbox, names []int, u driver.User, o inbox.ListOptions, limit int) ([]driver.Message, []inbox.Thread) {
	var msgs []driver.Message
	o.Limit = limit
	for page := 0; ; page++ {
		p, err := ibs[page%len(ibs)].List(f.e.ctx, u, o)
		if err != nil || page > 1000 {
			f.e.t.Fatalf("step %d: List(%s, %+v) on p%d: %v", f.step, u.ID, o, names[page%len(ibs)], err)
		}
		for _, m := range p.Messages {
			if n := len(msgs); n > 0 && m.ID >= msgs[n-1].ID {
				f.e.t.Errorf("step %d: List(%s) paged across processes %v: %s on p%d's page %d after %s: repeated or out of order", f.step, u.ID, names, m.ID, names[page%len(ibs)], page+1, msgs[n-1].ID)
			}
			msgs = append(msgs, m)
		}
		if p.Cursor == "" {
			break
		}
		o.Cursor = p.Cursor
	}
	var threads []inbox.Thread
	seen := map[[2]string]int{}
	to := inbox.ThreadOptions{Limit: limit}
	for page := 0; ; page++ {
		p, err := ibs[page%len(ibs)].ListThreads(f.e.ctx, u, to)
		if err != nil || page > 1000 {
			f.e.t.Fatalf("step %d: ListThreads(%s) on p%d: %v", f.step, u.ID, names[page%len(ibs)], err)
		}
		for _, t := range p.Threads {
			k := [2]string{t.Group, t.Thread}
			if first, ok := seen[k]; ok {
				f.e.t.Errorf("step %d: ListThreads(%s) paged across processes %v: thread %q of %q on page %d (p%d) and again on page %d (p%d)",
					f.step, u.ID, names, t.Thread, t.Group, first+1, names[first%len(ibs)], page+1, names[page%len(ibs)])
			}
			seen[k] = page
			threads = append(threads, t)
		}
		if p.Cursor == "" {
			break
		}
		to.Cursor = p.Cursor
	}
	return msgs, threads
}

// pageAcross pages a random user's feed and threads through two random
// processes in turn (see pagedAcross).
func (f *fleet) pageAcross() {
	a := f.rng.IntN(len(f.procs))
	b := (a + 1 + f.rng.IntN(len(f.procs)-1)) % len(f.procs)
	name := f.users[f.rng.IntN(len(f.users))]
	f.pagedAcross([]*inbox.Inbox{f.procs[a], f.procs[b]}, []int{a, b}, f.user(name), inbox.ListOptions{}, 1+f.rng.IntN(2))
}

// settle drains the stream (another program's inserts, then the held
// removals, twice over), lets the freshness bound pass, and checks that
// every process shows every user the model's feed and counts.
func (f *fleet) settle() {
	f.deliverInserts(true)
	f.deliverReads(true)
	if h, ok := f.e.harness(); ok {
		f.e.deliver(h)
		f.e.redeliver(h)
	}
	f.e.clock.Advance(snapshotAge)
	now := f.now()
	f.logf("settle")
	for i, ib := range f.procs {
		for _, name := range f.users {
			u := f.user(name)
			for _, o := range []inbox.ListOptions{{}, {Archived: true}, {Thread: "t1"}, {Snoozed: true}} {
				if diff := cmp.Diff(f.m.feed(name, now, o), entries(f.listIn(ib, u, o)), cmp.Comparer(entry.equal)); diff != "" {
					f.e.t.Errorf("step %d: settled, p%d List(%s, archived %v, thread %q) differs from the model (-model +List):\n%s", f.step, i, name, o.Archived, o.Thread, diff)
					f.e.t.Logf("the view: %+v", o)
				}
			}
			want := f.m.counts(name, now)
			if got, err := ib.Counts(f.e.ctx, u); err != nil || !cmp.Equal(want, got) {
				f.e.t.Errorf("step %d: settled, p%d Counts(%s) differ from the model (-model +Counts): %v\n%s", f.step, i, name, err, cmp.Diff(want, got))
			}
			// Another program's messages are in no thread: every
			// thread's latest publish is the model's.
			if diff := f.m.threadsDiff(name, now, listThreads(f.e.t, f.e.ctx, ib, u, 2)); diff != "" {
				f.e.t.Errorf("step %d: settled, p%d ListThreads(%s) differs from the model:\n%s", f.step, i, name, diff)
			}
		}
	}
	// Paged across every process in turn, page after page, the feed and
	// the threads are the model's too.
	for _, name := range f.users {
		msgs, threads := f.pagedAcross(f.procs, []int{0, 1, 2}, f.user(name), inbox.ListOptions{}, 1)
		if diff := cmp.Diff(f.m.feed(name, now, inbox.ListOptions{}), entries(msgs), cmp.Comparer(entry.equal)); diff != "" {
			f.e.t.Errorf("step %d: settled, List(%s) paged across the processes differs from the model (-model +List):\n%s", f.step, name, diff)
		}
		if diff := f.m.threadsDiff(name, now, threads); diff != "" {
			f.e.t.Errorf("step %d: settled, ListThreads(%s) paged across the processes differs from the model:\n%s", f.step, name, diff)
		}
	}
	// Every process tells who has read each message of every user's
	// thread, page by page, and of her earlier pages (read, expired or
	// removed since), as the model does.
	for i, ib := range f.procs {
		what := fmt.Sprintf("step %d: settled, p%d", f.step, i)
		for _, name := range f.users {
			for _, t := range fleetThreads[1:] {
				f.rb.thread(what, ib, f.user(name), t, now)
			}
			f.rb.staleOnes(what, ib, f.user(name), now)
		}
	}
	f.e.checkInvariant()
}

// insertRecord returns the INSERT stream record of rec, an item another
// program wrote as the seeds lay it out: headers nested (seed 001) or, with
// flat, at the top level (seed 000); readat null while unread.
func insertRecord(rec driver.Record, flat bool, eventID string) events.DynamoDBEventRecord {
	s, n := events.NewStringAttribute, func(t time.Time) events.DynamoDBAttributeValue {
		return events.NewNumberAttribute(strconv.FormatInt(t.Unix(), 10))
	}
	m := rec.Message
	p := rec.Partition
	img := map[string]events.DynamoDBAttributeValue{
		"pk": s(p.PK()), "sk": s(driver.MessageSK(m.ID)), "kind": s("UM"), "expiredat": n(m.ExpiresAt),
		"tenant_key": s(p.Tenant), "inbox_key": s(p.Inbox), "uid": s(p.User + p.Group),
		"readat": events.NewNullAttribute(),
	}
	if !m.ReadAt.IsZero() {
		img["readat"] = n(m.ReadAt)
	}
	if m.Category != "" {
		img["taxonomy"] = events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"category": s(m.Category)})
	}
	if !rec.Receipt {
		aud := map[string]events.DynamoDBAttributeValue{"kind": s(string(m.Audience.Kind)), "label": s(m.Audience.Label)}
		if m.Audience.Group != "" {
			aud["group"] = s(m.Audience.Group)
		}
		if len(m.Audience.UIDs) > 0 {
			var uids []events.DynamoDBAttributeValue
			for _, u := range m.Audience.UIDs {
				uids = append(uids, s(u))
			}
			aud["uids"] = events.NewListAttribute(uids)
		}
		headers := map[string]events.DynamoDBAttributeValue{
			"id": s(m.ID), "host_system_id": events.NewNullAttribute(), "sender": s(m.Sender),
			"audiences": events.NewMapAttribute(aud), "received": n(m.ReceivedAt), "delivered": n(m.DeliveredAt),
		}
		if flat {
			for k, v := range headers {
				img[k] = v
			}
		} else {
			img["headers"] = events.NewMapAttribute(headers)
		}
		img["message"] = events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"title": s(m.Title), "body": s(fmt.Sprint(m.Body))})
	}
	return events.DynamoDBEventRecord{
		EventID:   eventID,
		EventName: "INSERT",
		Change: events.DynamoDBStreamRecord{
			Keys:           map[string]events.DynamoDBAttributeValue{"pk": img["pk"], "sk": img["sk"]},
			NewImage:       img,
			SequenceNumber: eventID,
			StreamViewType: "NEW_AND_OLD_IMAGES",
		},
	}
}

// memBackend is an in-memory inbox.SharedBackend for the fleet: values
// live for their ttl on the real clock. It is safe for concurrent use.
type memBackend struct {
	mu    sync.Mutex
	vals  map[string][]byte
	until map[string]time.Time
}

func newMemBackend() *memBackend {
	return &memBackend{vals: map[string][]byte{}, until: map[string]time.Time{}}
}

// Load implements inbox.SharedBackend.
func (b *memBackend) Load(_ context.Context, key string) ([]byte, time.Duration, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ttl := time.Until(b.until[key])
	if v, ok := b.vals[key]; ok && ttl > 0 {
		return v, ttl, true, nil
	}
	return nil, 0, false, nil
}

// Save implements inbox.SharedBackend.
func (b *memBackend) Save(_ context.Context, key string, v []byte, ttl time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.vals[key], b.until[key] = v, time.Now().Add(ttl)
	return nil
}

// Drop implements inbox.SharedBackend.
func (b *memBackend) Drop(_ context.Context, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.vals, key)
	return nil
}

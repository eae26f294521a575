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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// PropertySeedEnv names the environment variable that sets RunProperty's
// seed, to replay a failure: INBOX_PROPERTY_SEED=1234 go test -run ...
const PropertySeedEnv = "INBOX_PROPERTY_SEED"

// The inbox config RunProperty sets, so that a message without a TTL of its
// own resolves one: ttl[alpha] for alpha, ttl.default for the others.
const (
	propAlphaTTL   = 10 * time.Minute
	propDefaultTTL = 30 * time.Minute
)

// RunProperty runs steps random operations on an Inbox over a fresh store
// from newStore and checks each against a reference model: publishes to
// random users (some retried with an earlier host system ID, which must be
// idempotent), broadcasts to everyone and to groups, users joining and
// leaving groups (the groups their calls list), marks read, archive and
// unarchive, deletes for one user and mark-seens of known, foreign and
// unknown IDs, the same by the members of chats (threads' messages, of
// groups, everyone or users, some sent by one of them), mark-all-reads of
// random views (category, thread, up to an ID or a time, archived),
// redactions, and clock advances that make messages (with short random
// TTLs) expire. With a Harness it also removes records, expired or not,
// delivers and redelivers their removals, and recounts users while
// removals are pending.
//
// After every step it lists every user's feed through all pages, with a
// random page size and random filters, and compares it with the model's
// (IDs, categories, read and archive marks and expiry, newest first); it
// checks every user's Counts (Unseen and Archived included) against the
// model's feed, ReadBy of a random user's thread, page by page, and of an
// earlier page of hers, against the model's reads, and every counter and
// reader item against a recount of the records (see Run). At the end each
// user's Counts must add up the records, and every user's threads' ReadBy
// the model's reads.
//
// The seed is logged; set PropertySeedEnv to replay it.
func RunProperty(t *testing.T, newStore NewStore, steps int) {
	runProperty(t, newStore, steps, false)
}

// RunPropertyCached is RunProperty with the Inbox's shared-partition cache
// on (see inbox.WithSharedCache) and a freshness bound of an hour, so that
// List and Counts serve the shared partitions from snapshots nearly always:
// only the Inbox's own writes and the passing of (the test clock's) time
// may change what they show. Removals behind the library's back (see
// Harness) then touch users' partitions only: a process sees another's
// change to a shared partition up to the freshness bound late, by design.
func RunPropertyCached(t *testing.T, newStore NewStore, steps int) {
	runProperty(t, newStore, steps, true)
}

// RunPropertyChats is RunProperty with MarkAllRead of one thread of a
// user's feed (a one-to-one chat: a read position, see
// inbox.Inbox.MarkAllRead) drawn often, a tenth of the steps and half
// of the bulk actions.
func RunPropertyChats(t *testing.T, newStore NewStore, steps int) {
	runPropertyWith(t, newStore, steps, false, true)
}

func runProperty(t *testing.T, newStore NewStore, steps int, cached bool) {
	runPropertyWith(t, newStore, steps, cached, false)
}

func runPropertyWith(t *testing.T, newStore NewStore, steps int, cached, chats bool) {
	seed := rand.Uint64()
	if s := os.Getenv(PropertySeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", PropertySeedEnv, s, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, PropertySeedEnv, seed)
	var opts []inbox.Option
	if cached {
		opts = append(opts, inbox.WithSharedCache(time.Hour))
	}
	race := &markRace{}
	p := &property{
		cached: cached,
		chats:  chats,
		e: newEnvOver(t, newStore, seed, func(s driver.Store) driver.Store {
			race.Store = s
			if seed%2 == 1 {
				// Threads' counters read by key, as over a table whose
				// index holds no tallies.
				return untallied{race}
			}
			return race
		}, opts...),
		race:       race,
		rng:        rand.New(rand.NewPCG(seed, 0x5eed)),
		users:      []string{"ann", "bob", "carol", "dave"},
		categories: []string{"", "alpha", "beta", "gamma"},
		threads:    []string{"", "t1", "t2"},
		ttls:       []time.Duration{0, 45 * time.Second, 3 * time.Minute, 15 * time.Minute},
		groups:     []string{"admins", "eu"},
	}
	p.m = newModel(p.users)
	p.rb = &readByCheck{t: t, ctx: p.e.ctx, m: p.m, rng: rand.New(rand.NewPCG(seed, 0x4eadb7)), users: p.users}
	p.setup()
	for p.step = 1; p.step <= steps; p.step++ {
		p.randomOp()
		p.checkFeeds()
		p.checkCounts()
		p.checkScheduled()
		p.checkReadBy(false)
		p.e.checkInvariant()
		if t.Failed() {
			t.Fatalf("step %d failed (seed %d); the last operations:\n%s", p.step, seed, strings.Join(p.history, "\n"))
		}
	}
	if h, ok := p.e.harness(); ok {
		p.e.deliver(h)
		p.liveRemovals = false
		p.checkCounts()
		p.e.checkInvariant()
	}
	p.checkReadBy(true)
	for _, u := range p.users {
		p.e.wantCountsFromFeed(p.user(u))
	}
	st := p.stats
	t.Logf("%d steps: %d copies published, %d broadcasts (%d to groups), %d retries by host ID, %d marked read, %d marks of read messages, %d of missing or expired ones, %d archived, %d deleted for a user, %d marks seen, %d redactions, %d snoozes, %d removals, %d deliveries, %d redeliveries, %d recounts, %d joins, %d leaves, %d bulk actions raced, %d chat marks, %d mutes or unmutes, %d ReadBy pages checked (%d readers)",
		steps, st.published, st.broadcasts, st.groupMessages, st.retries, st.changed, st.alreadyRead, st.notFound, st.archived, st.deleted, st.seen, st.redacted, st.snoozed, st.removed, st.delivered, st.redelivered, st.recounts, st.joins, st.leaves, st.raced, st.chat, st.mutes, p.rb.calls, p.rb.readers)
}

// property is the state of one RunProperty run.
type property struct {
	e   *env
	rng *rand.Rand
	m   *model
	// race is the store under the env's Inbox: it runs a change racing a
	// bulk action's first write.
	race *markRace
	// rb checks ReadBy against the model, with a random source of its own
	// (the operations drawn are those of the seed without it).
	rb *readByCheck
	// The pools operations draw from: users, categories and threads ("" for
	// none), message TTLs (0 for the inbox config's), and groups.
	users      []string
	categories []string
	threads    []string
	ttls       []time.Duration
	groups     []string

	cached  bool // the Inbox caches shared partitions
	chats   bool // MarkAllRead of a chat (a read position) is drawn often
	step    int
	history []string
	hostSeq int
	// liveRemovals is set while the removal of an unexpired record waits
	// for delivery: List already leaves it out, Counts not yet (a delete
	// made outside the library is counted when the stream delivers it).
	liveRemovals bool
	stats        struct {
		published, broadcasts, groupMessages, retries, changed int
		alreadyRead, notFound, removed, delivered, redelivered int
		recounts, joins, leaves, archived, deleted, seen       int
		redacted, snoozed, raced, chat, mutes                  int
	}
}

// setup writes the inbox config and notes every partition as used.
func (p *property) setup() {
	e := p.e
	for _, u := range p.users {
		e.member(u, p.groups...)
	}
	ic := driver.InboxConfig{Title: "property", TTL: map[string]string{
		driver.DefaultTTLKey: fmt.Sprintf("%ds", int(propDefaultTTL/time.Second)),
		"alpha":              fmt.Sprintf("%dm", int(propAlphaTTL/time.Minute)),
	}}
	// Default preferences, one time in two: the users follow them until
	// they set their own, and again after a reset.
	p.m.defaults = randomDefaults(p.rng, p.groups, p.categories)
	ic.Preferences = prefsOfKeys(p.m.defaults)
	p.logf("inbox defaults %+v", ic.Preferences)
	if err := e.ib.PutInboxConfig(e.ctx, e.scope, ic); err != nil {
		e.t.Fatalf("PutInboxConfig: %v", err)
	}
}

// user returns user u in the groups the model has u in now.
func (p *property) user(u string) driver.User { return p.e.member(u, p.m.groups(u)...) }

// now returns the clock's time as the Inbox sees it.
func (p *property) now() time.Time { return p.e.clock.Now().UTC().Truncate(time.Second) }

// logf records an operation in the history shown on failure.
func (p *property) logf(format string, args ...any) {
	p.history = append(p.history, fmt.Sprintf("%5d %s ", p.step, p.now().Format("15:04:05"))+fmt.Sprintf(format, args...))
	if len(p.history) > 15 {
		p.history = p.history[1:]
	}
}

// randomOp runs one random operation. Removals, deliveries and recounts
// need a Harness; without one those draws list instead.
func (p *property) randomOp() {
	h, harness := p.e.harness()
	if p.chats && p.rng.IntN(10) == 0 {
		p.markAllRead()
		return
	}
	switch r := p.rng.IntN(100); {
	case r < 15:
		p.publish()
	case r < 25:
		p.chat(h, harness)
	case r < 29:
		p.snooze()
	case r < 37:
		p.broadcast()
	case r < 49:
		p.markRead()
	case r < 52:
		p.markAllRead()
	case r < 54:
		p.joinOrLeave()
	case r < 58:
		p.archive()
	case r < 60:
		p.deleteForUser()
	case r < 63:
		p.markSeen()
	case r < 64:
		p.redact()
	case r < 76:
		p.advance()
	case r < 78:
		p.mute()
	case r < 82 || !harness && r < 95:
		p.listFiltered()
	case r < 88:
		p.remove(h)
	case r < 93:
		p.deliver(h)
	case r < 95:
		p.redeliver(h)
	default:
		p.recount()
	}
}

// checkReadBy asks ReadBy who has read each message of a random user's
// view of a random thread, page by page, and of one of her earlier pages
// (read, expired or removed since), and compares the answers with the
// model's; with all, of every user's view of every thread. It is skipped
// while the removal of an unexpired record waits for delivery: a removed
// receipt's reader item goes with its removal, and a removed broadcast's
// readers with its tombstone.
func (p *property) checkReadBy(all bool) {
	if p.liveRemovals {
		return
	}
	users, threads := []string{p.users[p.rb.rng.IntN(len(p.users))]}, []string{p.threads[1+p.rb.rng.IntN(len(p.threads)-1)]}
	if all {
		users, threads = p.users, p.threads[1:]
	}
	what := fmt.Sprintf("step %d", p.step)
	for _, u := range users {
		for _, t := range threads {
			p.rb.thread(what, p.e.ib, p.user(u), t, p.now())
		}
		p.rb.staleOnes(what, p.e.ib, p.user(u), p.now())
	}
}

// joinOrLeave moves a random user into or out of a random group: from the
// next call on, the user's calls list the groups the model has.
func (p *property) joinOrLeave() {
	u, g := p.users[p.rng.IntN(len(p.users))], p.groups[p.rng.IntN(len(p.groups))]
	in := !p.m.member[u][g]
	p.m.member[u][g] = in
	if in {
		p.logf("%s joins %s", u, g)
		p.stats.joins++
	} else {
		p.logf("%s leaves %s", u, g)
		p.stats.leaves++
	}
}

// mute mutes or unmutes a random group (in or out of it), category or
// thread of direct messages, or opts in or out of a category, for a random user (one time in six it
// sets her preferences as they stand: no change but for a user who had
// none of her own; one time in eight it resets them to the inbox's
// defaults), with the groups and categories in a random order, and
// checks what SetPreferences or ResetPreferences reports. From then on List, Get,
// ListThreads and Counts show that group's, category's or thread's
// messages to her muted, or not.
func (p *property) mute() {
	u, k := p.users[p.rng.IntN(len(p.users))], p.groups[p.rng.IntN(len(p.groups))]
	if p.rng.IntN(8) == 0 {
		// Back to the inbox's defaults.
		changed, err := p.e.ib.ResetPreferences(p.e.ctx, p.user(u))
		p.logf("%s resets her preferences", u)
		if err != nil || changed != p.m.own[u] {
			p.e.t.Errorf("step %d: ResetPreferences(%s): %v, %v; want %v, nil", p.step, u, changed, err, p.m.own[u])
		}
		p.m.muted[u], p.m.own[u] = map[string]bool{}, false
		p.stats.mutes++
		return
	}
	switch r := p.rng.IntN(4); r {
	case 1, 2:
		k = "?*"[r-1:r] + p.categories[1+p.rng.IntN(len(p.categories)-1)]
	case 3:
		k = "!" + p.threads[1+p.rng.IntN(len(p.threads)-1)] // a thread of her direct messages
	}
	same := p.rng.IntN(6) == 0
	wasOwn := p.m.own[u]
	if !wasOwn {
		// She starts from the defaults, as a page that reads Preferences.
		p.m.muted[u], p.m.own[u] = maps.Clone(p.m.defaults), true
	}
	if !same {
		p.m.toggle(u, k)
	}
	prefs := p.m.preferences(u)
	p.rng.Shuffle(len(prefs.MutedGroups), func(i, j int) {
		prefs.MutedGroups[i], prefs.MutedGroups[j] = prefs.MutedGroups[j], prefs.MutedGroups[i]
	})
	p.rng.Shuffle(len(prefs.MutedCategories), func(i, j int) {
		prefs.MutedCategories[i], prefs.MutedCategories[j] = prefs.MutedCategories[j], prefs.MutedCategories[i]
	})
	p.logf("%s mutes %+v (no change %v)", u, prefs, same)
	changed, err := p.e.ib.SetPreferences(p.e.ctx, p.user(u), prefs)
	if want := !same || !wasOwn; err != nil || changed != want {
		p.e.t.Errorf("step %d: SetPreferences(%s, %+v): %v, %v; want %v, nil", p.step, u, prefs, changed, err, want)
	}
	p.stats.mutes++
}

// remove deletes a random record, as a delete or DynamoDB's TTL would: a
// user's direct copy, a broadcast (to everyone or a group) or a user's
// receipt, expired or not.
func (p *property) remove(h Harness) {
	type pick struct {
		user, id string // user "" for a broadcast
		exp      time.Time
	}
	var picks []pick
	for _, u := range p.users {
		for id, c := range p.m.direct[u] {
			picks = append(picks, pick{u, id, c.expiresAt})
		}
		for id := range p.m.receipts[u] {
			if b, ok := p.m.broadcasts[id]; ok {
				picks = append(picks, pick{u, id, b.expiresAt})
			}
		}
	}
	for id, b := range p.m.broadcasts {
		if !p.cached {
			picks = append(picks, pick{"", id, b.expiresAt})
		}
	}
	if len(picks) == 0 {
		return
	}
	// Map order is random: sort for a deterministic replay.
	slices.SortFunc(picks, func(a, b pick) int { return strings.Compare(a.user+"/"+a.id, b.user+"/"+b.id) })
	pk := picks[p.rng.IntN(len(picks))]
	k := driver.Key{Partition: publicOf(p.e.scope), ID: pk.id}
	switch {
	case pk.user != "":
		k.Partition = p.e.part(pk.user)
	case p.m.broadcasts[pk.id].group != "":
		k.Partition = groupOf(p.e.scope, p.m.broadcasts[pk.id].group)
	}
	p.logf("remove %s of %q (expired %v)", pk.id, pk.user, !p.now().Before(pk.exp))
	p.m.remove(pk.user, pk.id)
	before := h.Pending()
	if _, err := h.Delete(p.e.ctx, k); err != nil {
		p.e.t.Errorf("step %d: Delete(%s/%s): %v", p.step, k.Partition.PK(), k.ID, err)
	}
	if p.now().Before(pk.exp) && h.Pending() > before {
		p.liveRemovals = true
	}
	p.stats.removed++
}

// deliver delivers the removals the harness holds.
func (p *property) deliver(h Harness) {
	p.logf("deliver %d removals", h.Pending())
	p.e.deliver(h)
	p.liveRemovals = false
	p.stats.delivered++
}

// redeliver delivers every removal again.
func (p *property) redeliver(h Harness) {
	p.logf("redeliver")
	p.e.redeliver(h)
	p.stats.redelivered++
}

// recount recounts a random user, while removals may be pending.
func (p *property) recount() {
	u := p.users[p.rng.IntN(len(p.users))]
	p.logf("recount %s", u)
	if _, err := p.e.ib.Recount(p.e.ctx, p.user(u)); err != nil {
		p.e.t.Errorf("step %d: Recount(%s): %v", p.step, u, err)
	}
	for _, q := range append(p.user(u).Shared(), partitionOf(p.user(u))) {
		p.m.recounted(q)
	}
	p.stats.recounts++
}

// checkCounts checks every user's Counts against the model's feed, unless
// a removal of an unexpired record waits for delivery.
func (p *property) checkCounts() {
	if p.liveRemovals {
		return
	}
	now := p.now()
	for _, u := range p.users {
		want := p.m.counts(u, now)
		if got := p.e.counts(p.user(u)); !cmp.Equal(want, got) {
			p.e.t.Errorf("step %d: Counts(%s) differ from the model's feed (-model +Counts):\n%s", p.step, u, cmp.Diff(want, got))
		}
		got := listThreads(p.e.t, p.e.ctx, p.e.ib, p.user(u), 1+p.rng.IntN(3))
		if diff := p.m.threadsDiff(u, now, got); diff != "" {
			p.e.t.Errorf("step %d: ListThreads(%s) differs from the model's feed:\n%s", p.step, u, diff)
		}
	}
}

// pickMessage returns a random ID for u to mark: one of u's visible or
// archived messages, any message ever published, or an unknown ID.
func (p *property) pickMessage(u string) string {
	now := p.now()
	feed := append(p.m.feed(u, now, inbox.ListOptions{}), p.m.feed(u, now, inbox.ListOptions{Archived: true})...)
	feed = append(feed, p.m.feed(u, now, inbox.ListOptions{Snoozed: true})...)
	switch r := p.rng.IntN(10); {
	case r < 6 && len(feed) > 0:
		// Map order is random: sort for a deterministic replay.
		slices.SortFunc(feed, func(a, b entry) int { return strings.Compare(a.ID, b.ID) })
		return feed[p.rng.IntN(len(feed))].ID
	case r < 9 && p.m.lastID != "":
		return p.anyID()
	}
	return p.e.newID()
}

// archiveState returns the model's change of an archive (on) or unarchive
// at now: it reports false, changing nothing, if the state is so already.
func archiveState(on bool, now time.Time) func(driver.State) (driver.State, bool) {
	return func(s driver.State) (driver.State, bool) {
		if on == !s.ArchivedAt.IsZero() {
			return s, false
		}
		s.ArchivedAt = time.Time{}
		if on {
			s.ArchivedAt = now
		}
		return s, true
	}
}

// archive archives or unarchives a random message for a random user.
func (p *property) archive() {
	e, now := p.e, p.now()
	u := p.users[p.rng.IntN(len(p.users))]
	id := p.pickMessage(u)
	on := p.rng.IntN(3) != 0
	wantChanged, wantFound := p.m.change(u, id, now, archiveState(on, now))
	p.logf("archive %v %s for %s (want changed %v, found %v)", on, id, u, wantChanged, wantFound)
	op := e.ib.Unarchive
	if on {
		op = e.ib.Archive
	}
	changed, err := op(e.ctx, p.user(u), id)
	p.wantChange("archive", u, id, changed, err, wantChanged, wantFound)
	if on && changed {
		p.stats.archived++
	}
}

// snooze snoozes a random message for a random user, for seconds to
// minutes (sometimes past its expiry, which is refused), or unsnoozes one.
func (p *property) snooze() {
	e, now := p.e, p.now()
	u := p.users[p.rng.IntN(len(p.users))]
	id := p.pickMessage(u)
	var loose []string // u's messages in no thread, which can be snoozed
	for _, o := range []inbox.ListOptions{{}, {Archived: true}, {Snoozed: true}} {
		for _, en := range p.m.feed(u, now, o) {
			if en.Thread == "" {
				loose = append(loose, en.ID)
			}
		}
	}
	if len(loose) > 0 && p.rng.IntN(4) != 0 {
		slices.Sort(loose) // map order is random: sorted for a deterministic replay
		id = loose[p.rng.IntN(len(loose))]
	}
	var until time.Time
	if p.rng.IntN(3) != 0 {
		until = now.Add(time.Duration(1+p.rng.IntN(600)) * time.Second)
	}
	wantChanged, wantFound, bad := p.m.snooze(u, id, until, now)
	p.logf("snooze %s for %s until %v (want changed %v, found %v, refused %v)", id, u, until, wantChanged, wantFound, bad)
	var changed bool
	var err error
	if until.IsZero() {
		changed, err = e.ib.Unsnooze(e.ctx, p.user(u), id)
	} else {
		changed, err = e.ib.Snooze(e.ctx, p.user(u), id, until)
	}
	if bad {
		if !errors.Is(err, inbox.ErrInvalidInput) {
			e.t.Errorf("step %d: Snooze(%s, %s, %v): %v, %v; want ErrInvalidInput", p.step, u, id, until, changed, err)
		}
		return
	}
	p.wantChange("Snooze", u, id, changed, err, wantChanged, wantFound)
	if changed {
		p.stats.snoozed++
	}
}

// deleteForUser deletes a random message from a random user's inbox.
func (p *property) deleteForUser() {
	e, now := p.e, p.now()
	u := p.users[p.rng.IntN(len(p.users))]
	id := p.pickMessage(u)
	wantChanged, _ := p.m.change(u, id, now, func(driver.State) (driver.State, bool) { return driver.State{DeletedAt: now}, true })
	p.logf("delete %s for %s (want changed %v)", id, u, wantChanged)
	changed, err := e.ib.Delete(e.ctx, p.user(u), id)
	if err != nil || changed != wantChanged {
		e.t.Errorf("step %d: Delete(%s, %s) = %v, %v; want %v, nil", p.step, u, id, changed, err, wantChanged)
	}
	if changed {
		p.stats.deleted++
	}
}

// wantChange checks the outcome of a per-user mark against the model's.
func (p *property) wantChange(op, u, id string, changed bool, err error, wantChanged, wantFound bool) {
	e := p.e
	switch {
	case !wantFound && !errors.Is(err, driver.ErrNotFound):
		e.t.Errorf("step %d: %s(%s, %s): %v, %v; want ErrNotFound", p.step, op, u, id, changed, err)
	case wantFound && (err != nil || changed != wantChanged):
		e.t.Errorf("step %d: %s(%s, %s): %v, %v; want %v, nil", p.step, op, u, id, changed, err, wantChanged)
	}
}

// markSeen marks a random user's feed seen.
func (p *property) markSeen() {
	u := p.users[p.rng.IntN(len(p.users))]
	w := inbox.SeenAt(p.e.clock.Now())
	want := w > p.m.seen[u]
	if want {
		p.m.seen[u] = w
		p.e.seen[p.e.part(u)] = w // for wantCountsFromFeed
	}
	p.logf("mark seen for %s (want changed %v)", u, want)
	changed, err := p.e.ib.MarkSeen(p.e.ctx, p.user(u))
	if err != nil || changed != want {
		p.e.t.Errorf("step %d: MarkSeen(%s) = %v, %v; want %v, nil", p.step, u, changed, err, want)
	}
	p.stats.seen++
}

// redact removes a random unexpired message everywhere: a direct message
// from all its recipients, or a broadcast once.
func (p *property) redact() {
	e := p.e
	r, want, ok := p.m.redaction(p.users, p.now(), p.rng.IntN)
	if !ok {
		return
	}
	p.logf("redact %s (group %q, users %v)", r.ID, r.Group, r.Users)
	if n, err := e.ib.Redact(e.ctx, e.scope, r); n != want || err != nil {
		e.t.Errorf("step %d: Redact(%+v) = %d, %v; want %d, nil", p.step, r, n, err, want)
	}
	p.stats.redacted++
}

// cmpOr returns a, or b if a is empty.
func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// ttlOf resolves a draft's TTL as the Inbox should with setup's config.
func ttlOf(d inbox.Draft) time.Duration {
	switch {
	case d.TTL > 0:
		return d.TTL
	case d.Category == "alpha":
		return propAlphaTTL
	}
	return propDefaultTTL
}

// newDraft returns a draft of random category and TTL; with a host system
// ID, fresh, half of the time.
func (p *property) newDraft(broadcast bool) inbox.Draft {
	d := inbox.Draft{
		Title:    fmt.Sprintf("step %d", p.step),
		Category: p.categories[p.rng.IntN(len(p.categories))],
		Thread:   p.threads[p.rng.IntN(len(p.threads))],
		TTL:      p.ttls[p.rng.IntN(len(p.ttls))],
	}
	if d.Thread != "" && p.rng.IntN(2) == 0 {
		d.Sender = p.users[p.rng.IntN(len(p.users))] // her own message is read for her
	}
	if p.rng.IntN(2) == 0 {
		p.hostSeq++
		d.HostSystemID = fmt.Sprintf("host-%d", p.hostSeq)
		if broadcast {
			d.HostSystemID = fmt.Sprintf("bcast-%d", p.hostSeq)
		}
	}
	return d
}

// reusableHost returns an earlier host system ID of a publish (or
// broadcast) whose copies are all still there, if the dice say so.
func (p *property) reusableHost(broadcast bool) (modelHost, bool) {
	if p.rng.IntN(3) != 0 {
		return modelHost{}, false
	}
	var ok []modelHost
	for _, h := range p.m.hosts {
		if h.broadcast == broadcast && p.m.hostReusable(h, p.now()) {
			ok = append(ok, h)
		}
	}
	if len(ok) == 0 {
		return modelHost{}, false
	}
	// Map order is random: sort for a deterministic replay.
	slices.SortFunc(ok, func(a, b modelHost) int { return strings.Compare(a.id, b.id) })
	return ok[p.rng.IntN(len(ok))], true
}

// publish publishes to a random subset of users, sometimes retrying an
// earlier host system ID.
func (p *property) publish() {
	e, now := p.e, p.now()
	var to []string
	for _, i := range p.rng.Perm(len(p.users))[:1+p.rng.IntN(len(p.users))] {
		to = append(to, p.users[i])
	}
	h, retry := p.reusableHost(false)
	d := h.draft
	if !retry {
		d = p.newDraft(false)
		switch r := p.rng.IntN(8); {
		case d.Thread == "" && r < 2:
			d.DeliverAt = p.deliverAt(now)
		case d.Thread == "" && r < 4:
			// An aggregated message, of its category's key, from anyone.
			d.Aggregate, d.Sender = "agg-"+cmpOr(d.Category, "none"), ""
			if i := p.rng.IntN(len(p.users) + 1); i < len(p.users) {
				d.Sender = p.users[i]
			}
		}
	}
	p.logf("publish %q to %v (category %q, thread %q, aggregate %q, sender %q, ttl %v, retry %v, deliver at %v)", d.HostSystemID, to, d.Category, d.Thread, d.Aggregate, d.Sender, d.TTL, retry, d.DeliverAt.Format("15:04:05"))
	res, err := e.ib.Publish(e.ctx, e.scope, to, d)
	if err != nil {
		e.t.Errorf("step %d: Publish: %v", p.step, err)
		return
	}
	id := res.Message.ID
	if d.DeliverAt.IsZero() || retry {
		p.checkID(id, retry, h.id)
	}
	if retry {
		p.stats.retries++
	}
	wantDelivered, wantDup, wantOptedOut := p.m.delivered(to, id, d.Category)
	for _, u := range wantDelivered {
		exp := deliveredAt(now, d).Add(ttlOf(d))
		if retry {
			exp = h.expiresAt
		}
		c := &modelCopy{category: d.Category, thread: d.Thread, expiresAt: exp, deliverAt: d.DeliverAt, sender: d.Sender}
		took := p.m.copyPublished(d, u, id, c, now)
		if d.Aggregate != "" {
			p.logf("  %s's item of %s: count %d (took in %q)", u, d.Aggregate, c.count, took)
			if u == to[0] && (res.Message.Count != c.count || !slices.Equal(res.Message.Senders, c.senders) || !slices.Equal(res.Message.Members, c.members)) {
				e.t.Errorf("step %d: Publish's item for %s: count %d, senders %v, members %v; want %d, %v, %v", p.step, u, res.Message.Count, res.Message.Senders, res.Message.Members, c.count, c.senders, c.members)
			}
		}
		p.stats.published++
	}
	if diff := cmp.Diff([]any{wantDelivered, wantDup, wantOptedOut}, []any{res.Delivered, res.Duplicates, res.OptedOut}); diff != "" {
		e.t.Errorf("step %d: Publish delivered, duplicates, opted out (-want +got):\n%s", p.step, diff)
	}
	if d.HostSystemID != "" && !retry {
		p.m.hosts[d.HostSystemID] = modelHost{id: id, draft: d, expiresAt: deliveredAt(now, d).Add(ttlOf(d))}
	}
}

// checkID checks a published ID: a retry's is the first attempt's, a new
// one is above every earlier ID.
func (p *property) checkID(id string, retry bool, want string) {
	switch {
	case retry && id != want:
		p.e.t.Errorf("step %d: retry got ID %s, want the first attempt's %s", p.step, id, want)
	case !retry && id <= p.m.lastID:
		p.e.t.Errorf("step %d: new message ID %s is not above the last one %s", p.step, id, p.m.lastID)
	case !retry:
		p.m.lastID = id
	}
}

// broadcast broadcasts to everyone or to a random group, sometimes
// retrying an earlier host system ID (to its audience).
func (p *property) broadcast() {
	e, now := p.e, p.now()
	h, retry := p.reusableHost(true)
	d, group := h.draft, h.group
	if !retry && p.rng.IntN(30) == 0 {
		p.campaign()
		return
	}
	if !retry {
		d = p.newDraft(true)
		if r := p.rng.IntN(len(p.groups) + 1); r < len(p.groups) {
			group = p.groups[r]
		}
		if d.Thread == "" && p.rng.IntN(4) == 0 {
			d.DeliverAt = p.deliverAt(now)
		}
	}
	p.logf("broadcast %q to group %q (category %q, thread %q, sender %q, ttl %v, retry %v, deliver at %v)", d.HostSystemID, group, d.Category, d.Thread, d.Sender, d.TTL, retry, d.DeliverAt.Format("15:04:05"))
	var msg driver.Message
	var err error
	if group == "" {
		msg, err = e.ib.Broadcast(e.ctx, e.scope, d)
	} else {
		msg, err = e.ib.BroadcastGroup(e.ctx, e.scope, group, d)
	}
	if err != nil {
		e.t.Errorf("step %d: Broadcast to %q: %v", p.step, group, err)
		return
	}
	if msg.Audience.Group != group {
		e.t.Errorf("step %d: Broadcast to %q returned audience %+v", p.step, group, msg.Audience)
	}
	if d.DeliverAt.IsZero() || retry {
		p.checkID(msg.ID, retry, h.id)
	}
	if retry {
		p.stats.retries++
		return
	}
	exp := deliveredAt(now, d).Add(ttlOf(d))
	p.m.broadcasts[msg.ID] = &modelCopy{category: d.Category, thread: d.Thread, expiresAt: exp, group: group, deliverAt: d.DeliverAt, sender: d.Sender}
	p.m.published(msg.ID, d.Thread, "", cmpOr(group, driver.PublicGroup), false)
	p.m.sent(d, d.Sender, msg.ID, now)
	p.stats.broadcasts++
	if group != "" {
		p.stats.groupMessages++
	}
	if d.HostSystemID != "" {
		p.m.hosts[d.HostSystemID] = modelHost{id: msg.ID, draft: d, broadcast: true, group: group, expiresAt: exp}
	}
}

// campaign schedules a dozen broadcasts to everyone, hours ahead: above
// every ID a List reads until they come due.
func (p *property) campaign() {
	e, now := p.e, p.now()
	p.logf("campaign of 12 broadcasts, from %v", now.Add(time.Hour).Format("15:04:05"))
	for i := range 12 {
		d := p.newDraft(true)
		d.Thread, d.HostSystemID = "", ""
		d.DeliverAt = now.Add(time.Hour + time.Duration(i)*time.Minute)
		msg, err := e.ib.Broadcast(e.ctx, e.scope, d)
		if err != nil {
			e.t.Errorf("step %d: campaign Broadcast: %v", p.step, err)
			return
		}
		p.m.broadcasts[msg.ID] = &modelCopy{category: d.Category, expiresAt: deliveredAt(now, d).Add(ttlOf(d)), deliverAt: d.DeliverAt}
		p.m.published(msg.ID, "", "", driver.PublicGroup, false)
		p.stats.broadcasts++
	}
}

// markRead marks a random ID read (or, a quarter of the time, interacted
// with) for a random user: one of the user's messages, any message ever
// published, or an unknown ID.
func (p *property) markRead() {
	e, now := p.e, p.now()
	u := p.users[p.rng.IntN(len(p.users))]
	id := p.pickMessage(u)
	name, model, call := "MarkRead", p.m.markRead, e.ib.MarkRead
	if p.rng.IntN(4) == 0 {
		name, model, call = "MarkInteracted", p.m.interact, e.ib.MarkInteracted
	}
	wantChanged, wantFound := model(u, id, now)
	p.logf("%s %s for %s (want changed %v, found %v)", name, id, u, wantChanged, wantFound)
	changed, err := call(e.ctx, p.user(u), id)
	p.wantChange(name, u, id, changed, err, wantChanged, wantFound)
	switch {
	case !wantFound:
		p.stats.notFound++
	case wantChanged:
		p.stats.changed++
	default:
		p.stats.alreadyRead++
	}
}

// chat has a random user act on a random live message of a thread (a
// group's or everyone's, or a direct one), as a chat's members do: read
// it (or interact with it), archive or unarchive it, or delete it for
// herself; mostly a user who sees it, sometimes one who does not (the
// mark is then refused). With a Harness, a user's receipt of a group's or
// everyone's (mostly a read one, not the sender's) may be deleted behind
// the library's back instead (another program's delete). Its readers
// (ReadBy) change with each.
func (p *property) chat(h Harness, harness bool) {
	e, now := p.e, p.now()
	var ids []string
	for id, c := range p.m.broadcasts {
		if c.thread != "" && now.Before(c.expiresAt) {
			ids = append(ids, id)
		}
	}
	for _, copies := range p.m.direct {
		for id, c := range copies {
			if c.thread != "" && now.Before(c.expiresAt) && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	slices.Sort(ids) // map order is random: sorted for a deterministic replay
	id := ids[p.rng.IntN(len(ids))]
	var users []string
	for _, u := range p.users {
		if _, ok := p.m.lookup(u, id, now); ok {
			users = append(users, u)
		}
	}
	u := p.users[p.rng.IntN(len(p.users))]
	if len(users) > 0 && p.rng.IntN(5) != 0 {
		u = users[p.rng.IntN(len(users))]
	}
	name, call := "MarkRead", e.ib.MarkRead
	model := func() (bool, bool) { return p.m.markRead(u, id, now) }
	// The users with a receipt of id, read by them (not sent), first.
	var receipts, read []string
	for _, v := range p.users {
		if st := p.m.receipts[v][id]; st != nil {
			receipts = append(receipts, v)
			if !st.ReadAt.IsZero() && st.DeletedAt.IsZero() && v != p.m.broadcasts[id].sender {
				read = append(read, v)
			}
		}
	}
	switch r := p.rng.IntN(12); {
	case r >= 10 && harness && len(receipts) > 0:
		u = receipts[p.rng.IntN(len(receipts))]
		if len(read) > 0 && p.rng.IntN(4) != 0 {
			u = read[p.rng.IntN(len(read))]
		}
		k := driver.Key{Partition: p.e.part(u), ID: id}
		p.logf("chat: remove %s's receipt of %s", u, id)
		p.m.remove(u, id)
		before := h.Pending()
		if _, err := h.Delete(e.ctx, k); err != nil {
			e.t.Errorf("step %d: Delete(%s/%s): %v", p.step, k.Partition.PK(), k.ID, err)
		}
		if h.Pending() > before {
			p.liveRemovals = true
		}
		p.stats.removed++
		return
	case r == 0:
		name, call, model = "MarkInteracted", e.ib.MarkInteracted, func() (bool, bool) { return p.m.interact(u, id, now) }
	case r < 4:
		on := r < 3
		name, call = "Unarchive", e.ib.Unarchive
		if on {
			name, call = "Archive", e.ib.Archive
		}
		model = func() (bool, bool) {
			return p.m.change(u, id, now, archiveState(on, now))
		}
	case r < 6:
		name, call = "Delete", e.ib.Delete
		model = func() (bool, bool) {
			return p.m.change(u, id, now, func(driver.State) (driver.State, bool) { return driver.State{DeletedAt: now}, true })
		}
	}
	wantChanged, wantFound := model()
	p.logf("chat: %s %s for %s (want changed %v, found %v)", name, id, u, wantChanged, wantFound)
	changed, err := call(e.ctx, p.user(u), id)
	if name == "Delete" {
		if err != nil || changed != wantChanged {
			e.t.Errorf("step %d: Delete(%s, %s) = %v, %v; want %v, nil", p.step, u, id, changed, err, wantChanged)
		}
	} else {
		p.wantChange(name, u, id, changed, err, wantChanged, wantFound)
	}
	p.stats.chat++
}

// anyID returns the ID of a random message or broadcast ever published.
func (p *property) anyID() string {
	var ids []string
	for id := range p.m.broadcasts {
		ids = append(ids, id)
	}
	for _, copies := range p.m.direct {
		for id := range copies {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 { // every message was removed
		return p.e.newID()
	}
	// Map order is random: pick by rank for a deterministic replay.
	slices.Sort(ids)
	return ids[p.rng.IntN(len(ids))]
}

// markAllRead marks read, archives or deletes, for a random user, what a
// random view shows (MarkAllRead, ArchiveAll, DeleteAll).
func (p *property) markAllRead() {
	e, now := p.e, p.now()
	u := p.users[p.rng.IntN(len(p.users))]
	o := p.randomView(u)
	name, call, set := "MarkAllRead", e.ib.MarkAllRead, func(s driver.State) driver.State { s.ReadAt = now; return s }
	switch p.rng.IntN(4) {
	case 0:
		o.Archived = false
		name, call, set = "ArchiveAll", e.ib.ArchiveAll, func(s driver.State) driver.State { s.ArchivedAt = now; return s }
	case 1:
		name, call, set = "DeleteAll", e.ib.DeleteAll, func(driver.State) driver.State { return driver.State{DeletedAt: now} }
	default:
		o.UnreadOnly = true
	}
	if p.chats && p.rng.IntN(2) == 0 {
		// A chat marked read: one thread of her direct messages.
		name, call, set = "MarkAllRead", e.ib.MarkAllRead, func(s driver.State) driver.State { s.ReadAt = now; return s }
		o = inbox.ListOptions{Thread: p.threads[1+p.rng.IntN(len(p.threads)-1)], UnreadOnly: true}
		if p.rng.IntN(4) == 0 {
			o.UpTo = p.pickMessage(u)
		}
	}
	if h, ok := p.e.harness(); ok && o.Thread != "" && o.Category == "" && p.liveRemovals {
		// A chat's action follows the thread's counts, which count a
		// record deleted behind the library's back until its removal is
		// delivered (as Counts does: see checkCounts).
		p.deliver(h)
	}
	view := p.m.feed(u, now, o)
	raced := len(view) > 0 && p.rng.IntN(2) == 0
	if raced {
		p.raceBulk(u, view[p.rng.IntN(len(view))], o, now)
	}
	n, err := call(e.ctx, p.user(u), o)
	if left := p.race.pending(); raced && left != 0 {
		e.t.Errorf("step %d: %s(%s, %+v) of a view of %d wrote nothing: the racing change did not run", p.step, name, u, o, len(view))
	}
	// What the view holds once the racing change is made, and nothing
	// else, is changed.
	view = p.m.feed(u, now, o)
	for _, en := range view {
		p.m.change(u, en.ID, now, func(s driver.State) (driver.State, bool) { return set(s), true })
	}
	p.logf("%s for %s in %+v (want %d)", name, u, o, len(view))
	if n != len(view) || err != nil {
		e.t.Errorf("step %d: %s(%s, %+v): %d, %v; want %d, nil", p.step, name, u, o, n, err, len(view))
	}
	if err := p.m.syncPositions(e.ctx, e.store, p.user(u)); err != nil {
		e.t.Errorf("step %d: the read positions of %s: %v", p.step, u, err)
	}
	p.stats.changed += n
}

// raceBulk has a change of message en, of u's view o, run just before the
// bulk action's first write, as another call of u's made at that instant
// would: MarkRead, MarkInteracted, Archive (Unarchive in the archived
// view), Snooze or Delete. Each keeps en in the view or takes it out; none
// brings a message in. The change is checked against the model, which it
// updates.
func (p *property) raceBulk(u string, en entry, o inbox.ListOptions, now time.Time) {
	e := p.e
	name, call, model := "Delete", e.ib.Delete, func() (bool, bool) {
		return p.m.change(u, en.ID, now, func(driver.State) (driver.State, bool) { return driver.State{DeletedAt: now}, true })
	}
	switch r := p.rng.IntN(5); {
	case r == 0:
		name, call, model = "MarkRead", e.ib.MarkRead, func() (bool, bool) { return p.m.markRead(u, en.ID, now) }
	case r == 1:
		name, call, model = "MarkInteracted", e.ib.MarkInteracted, func() (bool, bool) { return p.m.interact(u, en.ID, now) }
	case r == 2:
		name, call = "Archive", e.ib.Archive
		if o.Archived {
			name, call = "Unarchive", e.ib.Unarchive
		}
		model = func() (bool, bool) {
			return p.m.change(u, en.ID, now, func(s driver.State) (driver.State, bool) {
				s.ArchivedAt = time.Time{}
				if !o.Archived {
					s.ArchivedAt = now
				}
				return s, true
			})
		}
	case r == 3 && en.Thread == "":
		until := now.Add(time.Duration(1+p.rng.IntN(600)) * time.Second)
		if !until.Before(en.ExpiresAt) {
			break
		}
		name = "Snooze"
		call = func(ctx context.Context, du driver.User, id string) (bool, error) {
			return e.ib.Snooze(ctx, du, id, until)
		}
		model = func() (bool, bool) {
			changed, found, _ := p.m.snooze(u, en.ID, until, now)
			return changed, found
		}
	}
	p.logf("%s %s for %s racing the bulk action", name, en.ID, u)
	p.race.race(func([]driver.Mark) {
		wantChanged, wantFound := model()
		changed, err := call(e.ctx, p.user(u), en.ID)
		p.wantChange(name, u, en.ID, changed, err, wantChanged, wantFound)
	})
	p.stats.raced++
}

// randomView returns random List filters for u: a category, the archived
// list, and messages up to one of u's messages or a time.
func (p *property) randomView(u string) inbox.ListOptions {
	var o inbox.ListOptions
	if p.rng.IntN(3) == 0 {
		o.Category = p.categories[p.rng.IntN(len(p.categories))]
	}
	if p.rng.IntN(3) == 0 {
		o.Thread = p.threads[p.rng.IntN(len(p.threads))]
	}
	if p.rng.IntN(5) == 0 {
		o.Archived = true
	}
	switch p.rng.IntN(4) {
	case 0:
		o.UpTo = p.pickMessage(u)
	case 1:
		o.UpTo = inbox.IDAt(p.e.clock.Now().Add(-time.Duration(p.rng.IntN(600)) * time.Second))
	}
	return o
}

// advance moves the clock: mostly seconds to minutes, sometimes most of an
// hour, sometimes by a fraction of a second.
func (p *property) advance() {
	var d time.Duration
	switch r := p.rng.IntN(10); {
	case r < 6:
		d = time.Duration(1+p.rng.IntN(240)) * time.Second
	case r < 8:
		d = time.Duration(1+p.rng.IntN(1500)) * time.Millisecond
	default:
		d = time.Duration(10+p.rng.IntN(50)) * time.Minute
	}
	p.e.clock.Advance(d)
	p.logf("advance %v", d)
}

// listFiltered lists one user's feed with every filter combination, and
// random views.
func (p *property) listFiltered() {
	u := p.users[p.rng.IntN(len(p.users))]
	p.logf("list %s with every filter", u)
	for _, o := range []inbox.ListOptions{{}, {UnreadOnly: true}, {Category: "alpha"}, {Category: "beta", UnreadOnly: true}, {Archived: true}, {Thread: "t1"}, {Thread: "t2", UnreadOnly: true}, {Snoozed: true}, p.randomView(u)} {
		o.Limit = 1 + p.rng.IntN(6)
		p.checkFeed(u, o)
	}
}

// checkFeeds lists every user's whole feed with a random page size and
// random filters and compares it with the model's.
func (p *property) checkFeeds() {
	for _, u := range p.users {
		o := inbox.ListOptions{Limit: 1 + p.rng.IntN(8)}
		if p.rng.IntN(4) == 0 {
			o.UnreadOnly = true
		}
		if p.rng.IntN(4) == 0 {
			o.Category = p.categories[p.rng.IntN(len(p.categories))]
		}
		if p.rng.IntN(4) == 0 {
			o.Thread = p.threads[p.rng.IntN(len(p.threads))]
		}
		switch p.rng.IntN(6) {
		case 0:
			o.Archived = true
		case 1:
			o.Snoozed, o.Thread = true, ""
		}
		p.checkFeed(u, o)
	}
}

// deliverAt returns when a scheduled message comes due: within two
// minutes of now, or (one time in two) hours ahead, above the IDs every
// List reads.
func (p *property) deliverAt(now time.Time) time.Time {
	if p.rng.IntN(2) == 0 {
		return now.Add(time.Duration(1+p.rng.IntN(120)) * time.Second)
	}
	return now.Add(time.Duration(60+p.rng.IntN(30*60)) * time.Minute)
}

// checkFirstPage checks that the first page of u's feed, with no filter,
// opens on its newest visible message (want[0]) whenever every partition
// List reads stores at most a page's worth of records above it (archived,
// deleted, snoozed or expired ones): one round of reads reaches it, so
// the page is not empty. Messages scheduled ahead, however many, do not
// count: List reads below them.
func (p *property) checkFirstPage(u string, o inbox.ListOptions, want []entry) {
	limit := o.Limit
	if limit == 0 {
		limit = inbox.DefaultPageSize
	}
	if o != (inbox.ListOptions{Limit: o.Limit}) || len(want) == 0 || p.m.storedAbove(u, want[0].ID, p.now()) > limit {
		return
	}
	page, err := p.e.ib.List(p.e.ctx, p.user(u), o)
	if err != nil {
		p.e.t.Fatalf("step %d: List(%s, %+v): %v", p.step, u, o, err)
	}
	if len(page.Messages) == 0 || page.Messages[0].ID != want[0].ID {
		p.e.t.Errorf("step %d: the first page of %s's feed (limit %d) holds %d messages, want it to open on %s, its newest visible one",
			p.step, u, limit, len(page.Messages), want[0].ID)
	}
}

// checkFeed compares u's listed feed with o to the model's.
func (p *property) checkFeed(u string, o inbox.ListOptions) {
	e := p.e
	want := p.m.feed(u, p.now(), o)
	p.checkFirstPage(u, o, want)
	got := entries(e.listAll(p.user(u), o))
	if slices.EqualFunc(want, got, entry.equal) {
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("step %d: List(%s, %+v) differs from the model (-model +List):\n%s", p.step, u, o, diff)
	}
}

// deliveredAt returns when d, published at now, is delivered: its
// DeliverAt if scheduled, else now.
func deliveredAt(now time.Time, d inbox.Draft) time.Time {
	if d.DeliverAt.IsZero() {
		return now
	}
	return d.DeliverAt.Truncate(time.Second)
}

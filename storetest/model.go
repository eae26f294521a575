package storetest

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// model is RunProperty's reference: what every user should see, kept in
// plain maps. It never deletes what expires: an expired entry stays and is
// only hidden, which is what the suite can rely on from any store.
type model struct {
	// direct holds each user's copies of published messages by ID, with
	// the user's marks.
	direct map[string]map[string]*modelCopy
	// broadcasts holds the broadcasts, to everyone and to groups, by ID.
	broadcasts map[string]*modelCopy
	// member holds, per user, the groups the user is in now.
	member map[string]map[string]bool
	// receipts holds, per user, the user's marks on each broadcast.
	receipts map[string]map[string]*driver.State
	// seen holds each user's seen watermark ("" for none).
	seen map[string]string
	// muted holds, per user, the groups the user muted, the categories
	// she muted, each as "?" and its key, those she opted out of, as "*"
	// and its key, and the threads of her direct messages she muted, as
	// "!" and its key (no key holds a '?' or '*'; those of the tests no
	// '!').
	muted map[string]map[string]bool
	// own holds the users who set preferences of their own (and have not
	// reset them since); the others follow defaults, the inbox's default
	// preferences, keyed as muted's.
	own      map[string]bool
	defaults map[string]bool
	// hosts maps a host system ID to its message ID and draft, for retries.
	hosts map[string]modelHost
	// lastID is the highest message ID published so far.
	lastID string
	// activity holds the latest ID published in each thread.
	activity map[threadOf]string
	// unsure holds the threads whose activity a store may have forgotten:
	// a recount drops the counters of a thread whose messages are all
	// gone, and a retry of an earlier message (its host system ID) then
	// brings it back with that message's activity.
	unsure map[threadOf]bool
	// positions holds, per user, her read positions by thread, as the
	// store holds them after her last MarkAllRead (see syncPositions):
	// everything below one reads as read, so a copy written unread below
	// it (a late copy, an unarchive) is read at its time (see covered).
	positions map[string]map[string]driver.Position
	// groupPositions holds, per user, her read positions in groups'
	// threads, as the store holds them after her last MarkAllRead: a
	// group's message of the thread below one is read by her, at the
	// position's time, unless her receipt of it reads it (see stateOf).
	groupPositions map[string]map[driver.GroupThread]driver.Position
}

// covered gives u's direct copy c of id, as its marks now stand, the read
// of her read position in its thread if one covers it: an unread copy,
// not archived or deleted, of a thread, is read at the position's time
// (driver.Position.ReadAt). The runs schedule no message of a thread.
func (m *model) covered(u, id string, c *modelCopy) {
	st := c.state
	if c.thread == "" || !st.ReadAt.IsZero() || !st.ArchivedAt.IsZero() || !st.DeletedAt.IsZero() || !c.deliverAt.IsZero() {
		return
	}
	if pos, ok := m.positions[u][c.thread]; ok && pos.Covers(id) {
		c.state.ReadAt = pos.ReadAt(id)
	}
}

// syncPositions sets u's read positions in the model to those store st
// holds (after a MarkAllRead of hers, which moves them).
func (m *model) syncPositions(ctx context.Context, st driver.Store, u driver.User) error {
	s, err := st.Stats(ctx, driver.StatsQuery{Partition: u.Partition()})
	if err != nil {
		return err
	}
	m.positions[u.ID] = driver.Positions(s.Counters)
	m.groupPositions[u.ID] = driver.GroupPositions(s.Counters)
	return nil
}

// modelCopy is one stored message as its user sees it.
type modelCopy struct {
	category  string
	thread    string
	expiresAt time.Time
	deliverAt time.Time    // a scheduled message's due time
	state     driver.State // direct copies only; broadcasts use receipts
	group     string       // a broadcast's group; "" for everyone
	sender    string       // its Draft.Sender
	// count, senders and members are an aggregated copy's item
	// (driver.Message.Count, Senders, Members); count is zero on a copy
	// that is not aggregated.
	count            int
	senders, members []string
}

// copyPublished notes c, u's new copy id of draft d published at now:
// an aggregated one joins u's item (see aggregate), whose ID taken in it
// returns ("" for none); the thread's activity moves; the sender's own
// copy is read (but one that joins an item she has not read); a late
// copy below her read position reads as read.
func (m *model) copyPublished(d inbox.Draft, u, id string, c *modelCopy, now time.Time) string {
	took, ownUnread := "", false
	if d.Aggregate != "" {
		c.thread = d.Aggregate
		took, ownUnread = m.aggregate(u, d.Aggregate, id, c, now)
	}
	m.direct[u][id] = c
	m.published(id, c.thread, u, "", d.Aggregate != "")
	if !ownUnread {
		m.sent(d, u, id, now)
	}
	m.covered(u, id, c)
	return took
}

// aggregateHead returns u's newest direct copy of thread key (an
// aggregate key) and its ID, as the Inbox finds the item a message of
// the key joins: nil if u has none, or it has expired at now.
func (m *model) aggregateHead(u, key string, now time.Time) (string, *modelCopy) {
	id := ""
	for cid, c := range m.direct[u] {
		if c.thread == key && cid > id {
			id = cid
		}
	}
	if id == "" || !now.Before(m.direct[u][id].expiresAt) {
		return "", nil
	}
	return id, m.direct[u][id]
}

// aggregate makes c, u's new copy id of an aggregated message of key,
// join u's item of key, if she has one it can join: c takes its count,
// senders and members, and the item's newest copy goes. It returns the
// ID of the copy taken in ("" for none), and whether that copy was
// unread: then u's own message (she is its sender) stays unread too.
func (m *model) aggregate(u, key, id string, c *modelCopy, now time.Time) (string, bool) {
	c.count = 1
	if c.sender != "" {
		c.senders = []string{c.sender}
	}
	hid, h := m.aggregateHead(u, key, now)
	if h == nil || c.sender != "" && !slices.Contains(h.senders, c.sender) && len(h.senders) >= inbox.MaxAggregateSenders {
		return "", false
	}
	c.count = h.count + 1
	for _, s := range h.senders {
		if !slices.Contains(c.senders, s) {
			c.senders = append(c.senders, s)
		}
	}
	c.members = append([]string{hid}, h.members...)
	c.members = c.members[:min(len(c.members), inbox.MaxAggregateMembers)]
	unread := h.state.ReadAt.IsZero()
	m.removeCopy(u, hid)
	return hid, unread
}

// modelHost is a publish or broadcast made with a host system ID.
type modelHost struct {
	id        string
	draft     inbox.Draft
	broadcast bool
	group     string    // a broadcast's group; "" for everyone
	expiresAt time.Time // of the claim, and of every copy made under it
	removed   bool      // a copy was removed: a retry may not recreate it
}

// entry is what RunProperty compares of a listed message.
type entry struct {
	ID         string
	Category   string
	Thread     string
	Group      string // as Thread.Group names the audience
	Broadcast  bool
	ReadAt     time.Time
	ArchivedAt time.Time
	ExpiresAt  time.Time
	// SnoozedUntil is the user's snooze, as it stands (past or not).
	SnoozedUntil time.Time
	InteractedAt time.Time
	// Muted is set on a message of a group or a category the user muted.
	Muted bool
}

func newModel(users []string) *model {
	m := &model{
		direct:     map[string]map[string]*modelCopy{},
		broadcasts: map[string]*modelCopy{},
		receipts:   map[string]map[string]*driver.State{},
		member:     map[string]map[string]bool{},
		seen:       map[string]string{},
		muted:      map[string]map[string]bool{},
		own:        map[string]bool{},
		defaults:   map[string]bool{},
		hosts:      map[string]modelHost{},
		activity:   map[threadOf]string{},
		unsure:     map[threadOf]bool{},
		positions:  map[string]map[string]driver.Position{},

		groupPositions: map[string]map[driver.GroupThread]driver.Position{},
	}
	for _, u := range users {
		m.direct[u] = map[string]*modelCopy{}
		m.receipts[u] = map[string]*driver.State{}
		m.member[u] = map[string]bool{}
		m.muted[u] = map[string]bool{}
	}
	return m
}

// stateOf returns u's marks on message id (a direct copy or a broadcast).
func (m *model) stateOf(u, id string) driver.State {
	if c, ok := m.direct[u][id]; ok {
		return c.state
	}
	var st driver.State
	if r := m.receipts[u][id]; r != nil {
		st = *r
	}
	if at := m.lent(u, id); st.ReadAt.IsZero() && !at.IsZero() {
		st.ReadAt = at
	}
	return st
}

// lent returns the read time u's read position in the thread of group
// message id lends it (zero if none covers it).
func (m *model) lent(u, id string) time.Time {
	c, ok := m.broadcasts[id]
	if !ok || c.group == "" || c.thread == "" {
		return time.Time{}
	}
	if pos, ok := m.groupPositions[u][driver.GroupThread{Group: c.group, Thread: c.thread}]; ok && pos.Covers(id) {
		return pos.ReadAt(id)
	}
	return time.Time{}
}

// feed returns u's visible feed at now with o's filters, newest first:
// the snoozed messages with o.Snoozed, the archived ones with o.Archived,
// else the others; never the deleted ones, nor, but in a thread's view,
// those of the categories u opted out of.
func (m *model) feed(u string, now time.Time, o inbox.ListOptions) []entry {
	return m.view(u, now, o, o.Thread == "")
}

// optsOut reports whether u opted out of category cat.
func (m *model) optsOut(u, cat string) bool { return cat != "" && m.prefsOf(u)["*"+cat] }

// prefsOf returns the preferences in effect for u, keyed as muted's: her
// own, else the defaults.
func (m *model) prefsOf(u string) map[string]bool {
	if m.own[u] {
		return m.muted[u]
	}
	return m.defaults
}

// view returns feed's messages, those of the categories u opted out of
// too unless optOut is set.
func (m *model) view(u string, now time.Time, o inbox.ListOptions, optOut bool) []entry {
	var out []entry
	add := func(id string, c *modelCopy, broadcast bool, st driver.State) {
		switch {
		case optOut && m.optsOut(u, c.category), !now.Before(c.expiresAt), now.Before(c.deliverAt), o.Category != "" && c.category != o.Category, o.Thread != "" && c.thread != o.Thread, o.UnreadOnly && !st.ReadAt.IsZero(),
			!o.Snoozed && o.Archived == st.ArchivedAt.IsZero(), o.Snoozed != now.Before(st.SnoozedUntil), !st.DeletedAt.IsZero(), o.UpTo != "" && id > o.UpTo:
			return
		}
		en := entry{ID: id, Category: c.category, Thread: c.thread, Broadcast: broadcast, ReadAt: st.ReadAt, ArchivedAt: st.ArchivedAt, ExpiresAt: c.expiresAt, SnoozedUntil: st.SnoozedUntil, InteractedAt: st.InteractedAt}
		if broadcast {
			en.Group = cmpOr(c.group, driver.PublicGroup)
			en.Muted = c.group != "" && m.prefsOf(u)[c.group]
		}
		en.Muted = en.Muted || c.category != "" && m.prefsOf(u)["?"+c.category] || !broadcast && c.thread != "" && m.prefsOf(u)["!"+c.thread]
		out = append(out, en)
	}
	for id, c := range m.direct[u] {
		add(id, c, false, c.state)
	}
	for id, c := range m.broadcasts {
		if m.sees(u, c) {
			add(id, c, true, m.stateOf(u, id))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out
}

// sees reports whether u sees broadcast c: it is to everyone, or to one of
// u's groups.
func (m *model) sees(u string, c *modelCopy) bool { return c.group == "" || m.member[u][c.group] }

// preferences returns u's preferences in effect as the model holds them:
// the groups and categories u muted and those she opted out of, sorted.
func (m *model) preferences(u string) inbox.Preferences { return prefsOfKeys(m.prefsOf(u)) }

// prefsOfKeys returns the preferences that set, keyed as model.muted's,
// holds.
func prefsOfKeys(set map[string]bool) inbox.Preferences {
	var p inbox.Preferences
	for _, k := range setKeys(set) {
		if t, ok := strings.CutPrefix(k, "!"); ok {
			p.MutedThreads = append(p.MutedThreads, t)
		} else if c, ok := strings.CutPrefix(k, "?"); ok {
			p.MutedCategories = append(p.MutedCategories, c)
		} else if c, ok := strings.CutPrefix(k, "*"); ok {
			p.OptedOut = append(p.OptedOut, c)
		} else {
			p.MutedGroups = append(p.MutedGroups, k)
		}
	}
	return p
}

// randomDefaults returns, one time in two, default preferences for an
// inbox, keyed as model.muted's: a group muted, a category muted and
// another opted out of, drawn by rng; else none.
func randomDefaults(rng *rand.Rand, groups, categories []string) map[string]bool {
	if rng.IntN(2) == 0 {
		return map[string]bool{}
	}
	cats := categories[1:] // not ""
	i := rng.IntN(len(cats))
	j := (i + 1 + rng.IntN(len(cats)-1)) % len(cats)
	return map[string]bool{groups[rng.IntN(len(groups))]: true, "?" + cats[i]: true, "*" + cats[j]: true}
}

// groups returns u's groups now, sorted.
func (m *model) groups(u string) []string { return setKeys(m.member[u]) }

// setKeys returns the keys of set that are in it (true), sorted.
func setKeys(set map[string]bool) []string {
	var out []string
	for k, in := range set {
		if in {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// storedAbove returns the most records that one of the partitions u's
// feed reads at now (u's own, holding u's direct copies and receipts, and
// each shared one u sees) stores above id: what a List must read past
// before it reaches id. Records scheduled well ahead of now (their IDs
// are their delivery times) are not counted: List reads below them.
func (m *model) storedAbove(u, id string, now time.Time) int {
	bound := inbox.IDAt(now.Add(2 * time.Minute))
	above := func(x string) bool { return x > id && x < bound }
	n := 0
	for cid := range m.direct[u] {
		if above(cid) {
			n++
		}
	}
	for rid := range m.receipts[u] {
		if above(rid) {
			n++
		}
	}
	most := n
	shared := map[string]int{}
	for bid, c := range m.broadcasts {
		if above(bid) && m.sees(u, c) {
			shared[c.group]++
			most = max(most, shared[c.group])
		}
	}
	return most
}

// lookup returns message id as u can mark it at now: ok is false if it is
// not (or no longer) in u's inbox (missing, expired, another group's,
// deleted by u).
func (m *model) lookup(u, id string, now time.Time) (c *modelCopy, ok bool) {
	if c, ok := m.direct[u][id]; ok {
		return c, now.Before(c.expiresAt) && !now.Before(c.deliverAt)
	}
	c, ok = m.broadcasts[id]
	if !ok || !m.sees(u, c) || !now.Before(c.expiresAt) || now.Before(c.deliverAt) || !m.stateOf(u, id).DeletedAt.IsZero() {
		return nil, false
	}
	return c, true
}

// change predicts a per-user mark of message id by u at now and applies
// it: f returns the new marks given the current ones, or false for no
// change. It reports whether anything changed, and found false if the
// message is not in u's inbox.
func (m *model) change(u, id string, now time.Time, f func(driver.State) (driver.State, bool)) (changed, found bool) {
	c, ok := m.lookup(u, id, now)
	if !ok {
		return false, false
	}
	to, ok := f(m.stateOf(u, id))
	if !ok {
		return false, true
	}
	m.setState(u, id, c, to)
	return true, true
}

// setState gives u's copy of id, or u's receipt of broadcast c, the marks
// st; a direct copy deleted is removed.
func (m *model) setState(u, id string, c *modelCopy, st driver.State) {
	if _, direct := m.direct[u][id]; direct {
		if !st.DeletedAt.IsZero() {
			m.removeCopy(u, id)
			return
		}
		c.state = st
		m.covered(u, id, c)
		return
	}
	if st.IsZero() {
		delete(m.receipts[u], id)
		return
	}
	m.receipts[u][id] = &st
}

// snooze predicts Snooze(u, id, until) (or with until zero, Unsnooze) at
// now and applies it: bad is set for a snooze the Inbox refuses (a
// message of a thread, or one that expires by until).
func (m *model) snooze(u, id string, until, now time.Time) (changed, found, bad bool) {
	if c, ok := m.lookup(u, id, now); ok && !until.IsZero() && (c.thread != "" || !until.Before(c.expiresAt)) {
		return false, true, true
	}
	changed, found = m.change(u, id, now, func(s driver.State) (driver.State, bool) {
		switch {
		case until.IsZero() && !now.Before(s.SnoozedUntil), !until.IsZero() && s.SnoozedUntil.Equal(until):
			return s, false
		}
		s.SnoozedUntil = until
		return s, true
	})
	return changed, found, false
}

// interact predicts MarkInteracted(u, id) at now and applies it: the
// message is read too.
func (m *model) interact(u, id string, now time.Time) (changed, found bool) {
	return m.change(u, id, now, interacted(now))
}

// interacted returns the change MarkInteracted makes to a user's marks at
// now: interacted, and read if it was not; false if interacted already.
func interacted(now time.Time) func(driver.State) (driver.State, bool) {
	return func(s driver.State) (driver.State, bool) {
		if !s.InteractedAt.IsZero() {
			return s, false
		}
		s.InteractedAt = now
		if s.ReadAt.IsZero() {
			s.ReadAt = now
		}
		return s, true
	}
}

// markRead predicts MarkRead(u, id) at now and applies it.
func (m *model) markRead(u, id string, now time.Time) (changed, found bool) {
	return m.change(u, id, now, func(s driver.State) (driver.State, bool) {
		if !s.ReadAt.IsZero() {
			return s, false
		}
		s.ReadAt = now
		return s, true
	})
}

// sent predicts what a new message id of draft d, just written at now,
// gives its sender (see inbox.Draft.Sender): in a thread, her copy if u
// is she (a message to users), or her receipt (a broadcast, u her too:
// whether or not she is in its group), read at now.
func (m *model) sent(d inbox.Draft, u, id string, now time.Time) {
	if d.Thread == "" && d.Aggregate == "" || d.Sender == "" || u != d.Sender {
		return
	}
	if c, ok := m.direct[u][id]; ok {
		c.state.ReadAt = now
		return
	}
	if _, ok := m.broadcasts[id]; ok {
		m.receipts[u][id] = &driver.State{ReadAt: now}
	}
}

// hostReusable reports whether a retry of host h would find every copy
// still there: none has expired (so no store may have deleted one) or been
// removed.
func (m *model) hostReusable(h modelHost, now time.Time) bool {
	return !h.removed && now.Before(h.expiresAt)
}

// removeCopy removes u's direct copy of id; the host system ID of a
// removed message may not be retried.
func (m *model) removeCopy(u, id string) {
	delete(m.direct[u], id)
	m.noRetry(id)
}

// noRetry marks the host system ID of message id, if any, as not to be
// retried: a copy of it is gone.
func (m *model) noRetry(id string) {
	for k, h := range m.hosts {
		if h.id == id {
			h.removed = true
			m.hosts[k] = h
		}
	}
}

// remove removes the record of user u (a direct copy, or the receipt of a
// broadcast) or, with u "", the broadcast id, as a delete would.
func (m *model) remove(u, id string) {
	switch {
	case u == "":
		delete(m.broadcasts, id)
		m.noRetry(id)
	case m.direct[u][id] != nil:
		m.removeCopy(u, id)
	default:
		delete(m.receipts[u], id)
	}
}

// equal reports whether en and o are the same, times compared as instants.
func (en entry) equal(o entry) bool {
	return en.ID == o.ID && en.Category == o.Category && en.Thread == o.Thread && en.Group == o.Group && en.Broadcast == o.Broadcast &&
		en.ReadAt.Equal(o.ReadAt) && en.ArchivedAt.Equal(o.ArchivedAt) && en.ExpiresAt.Equal(o.ExpiresAt) && en.SnoozedUntil.Equal(o.SnoozedUntil) && en.InteractedAt.Equal(o.InteractedAt) &&
		en.Muted == o.Muted
}

// entries projects listed messages for comparison with feed.
func entries(msgs []driver.Message) []entry {
	var out []entry
	for _, m := range msgs {
		out = append(out, entry{ID: m.ID, Category: m.Category, Thread: m.Thread, Group: threadGroup(m), Broadcast: m.IsBroadcast(), ReadAt: m.ReadAt, ArchivedAt: m.ArchivedAt, ExpiresAt: m.ExpiresAt, SnoozedUntil: m.SnoozedUntil, InteractedAt: m.InteractedAt, Muted: m.Muted})
	}
	return out
}

// redaction picks, with pick (given a count, an index below it), a random
// message that has not expired at now, a broadcast or a direct message of
// any of users, and applies its redaction to the model: it returns the
// Redaction that removes it everywhere and how many records that removes
// (the broadcast once, or each user's copy); ok is false if there is
// none.
func (m *model) redaction(users []string, now time.Time, pick func(n int) int) (r inbox.Redaction, want int, ok bool) {
	var ids []string
	for id, b := range m.broadcasts {
		if now.Before(b.expiresAt) {
			ids = append(ids, id)
		}
	}
	for _, copies := range m.direct {
		for id, c := range copies {
			if now.Before(c.expiresAt) && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return r, 0, false
	}
	slices.Sort(ids) // map order is random: sorted for a deterministic replay
	r.ID = ids[pick(len(ids))]
	if b, ok := m.broadcasts[r.ID]; ok {
		r.Group = cmpOr(b.group, driver.PublicGroup)
		m.remove("", r.ID)
		return r, 1, true
	}
	for _, u := range users {
		if _, ok := m.direct[u][r.ID]; ok {
			r.Users = append(r.Users, u)
			m.removeCopy(u, r.ID)
			want++
		}
	}
	return r, want, true
}

// counts returns u's Counts at now as the model's feed makes them: a user
// never marked seen has every unread message unseen.
func (m *model) counts(u string, now time.Time) inbox.Counts {
	msgs := func(o inbox.ListOptions) []driver.Message {
		var out []driver.Message
		for _, en := range m.feed(u, now, o) {
			out = append(out, driver.Message{ID: en.ID, Category: en.Category, ReadAt: en.ReadAt, ArchivedAt: en.ArchivedAt, Muted: en.Muted})
		}
		return out
	}
	want := countsOf(msgs(inbox.ListOptions{}), msgs(inbox.ListOptions{Archived: true}), m.seen[u])
	want.Snoozed = int64(len(m.feed(u, now, inbox.ListOptions{Snoozed: true})))
	if m.seen[u] == "" {
		want.Unseen = want.Unread
	}
	return want
}

// published records a message id published in thread t (none if "") to
// user u's partition (u set) or to group g's (PublicGroup for everyone's).
func (m *model) published(id, t, u, g string, follows bool) {
	if t == "" {
		return
	}
	k := threadOf{p: driver.Partition{User: u}, group: g, thread: t}
	if id >= m.activity[k] || follows {
		m.activity[k], m.unsure[k] = id, false
	}
}

// recounted notes that p was recounted: the activity of its threads is
// unsure (see model.unsure).
func (m *model) recounted(p driver.Partition) {
	for k := range m.activity {
		if p.IsShared() && k.group == p.Group || !p.IsShared() && k.group == "" && k.p.User == p.User {
			m.unsure[k] = true
		}
	}
}

// threadsDiff compares got, u's whole ListThreads at now, with the
// model's feed of u (whole, as a thread's view shows it: the categories
// u opted out of too) and the latest publish in each thread (see
// threadsDiff): "" if they agree.
func (m *model) threadsDiff(u string, now time.Time, got []inbox.Thread) string {
	msgs := func(o inbox.ListOptions) []driver.Message {
		var out []driver.Message
		for _, en := range m.view(u, now, o, false) {
			msg := driver.Message{ID: en.ID, Category: en.Category, Thread: en.Thread, ReadAt: en.ReadAt, ArchivedAt: en.ArchivedAt, Muted: en.Muted}
			switch {
			case en.Group == driver.PublicGroup:
				msg.Audience.Kind = driver.AudienceEveryone
			case en.Group != "":
				msg.Audience = driver.Audience{Kind: driver.AudienceGroup, Group: en.Group}
			}
			out = append(out, msg)
		}
		return out
	}
	return threadsDiff(got, msgs(inbox.ListOptions{}), msgs(inbox.ListOptions{Archived: true}), func(g, t string) (string, bool) {
		k := threadOf{group: g, thread: t}
		if g == "" {
			k = threadOf{p: driver.Partition{User: u}, thread: t}
		}
		return m.activity[k], !m.unsure[k]
	}, m.preferences(u))
}

// toggle mutes or unmutes key k of u (a group, "?" and a category to
// mute, "*" and one to opt out of, "!" and a thread of her direct
// messages to mute), as SetPreferences would be asked to:
// a category both muted and opted out of is refused, so turning one on
// turns the other off.
func (m *model) toggle(u, k string) {
	if !m.own[u] {
		// From the defaults in effect, as a page that reads Preferences,
		// changes one key and sets them.
		m.muted[u], m.own[u] = maps.Clone(m.defaults), true
	}
	m.muted[u][k] = !m.muted[u][k]
	if c, ok := strings.CutPrefix(k, "?"); ok && m.muted[u][k] {
		m.muted[u]["*"+c] = false
	}
	if c, ok := strings.CutPrefix(k, "*"); ok && m.muted[u][k] {
		m.muted[u]["?"+c] = false
	}
}

// delivered returns to split by whether the model stores a new copy of
// message id, of category cat, for each: those who have it already
// (dup), those who opted out of cat (optedOut, as the store refuses
// their copy), and the others (delivered).
func (m *model) delivered(to []string, id, cat string) (delivered, dup, optedOut []string) {
	for _, u := range to {
		switch _, has := m.direct[u][id]; {
		case has:
			dup = append(dup, u)
		case m.optsOut(u, cat):
			optedOut = append(optedOut, u)
		default:
			delivered = append(delivered, u)
		}
	}
	return delivered, dup, optedOut
}

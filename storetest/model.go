package storetest

import (
	"sort"
	"time"

	"github.com/stak/inbox"
)

// model is RunProperty's reference: what every user should see, kept in
// plain maps. It never deletes: an expired entry stays and is only hidden,
// which is what the suite can rely on from any store.
type model struct {
	// direct holds each user's copies of published messages by ID.
	direct map[string]map[string]*modelCopy
	// broadcasts holds the broadcasts, to everyone and to groups, by ID.
	broadcasts map[string]*modelCopy
	// member holds, per user, the groups the user is in now.
	member map[string]map[string]bool
	// receipts holds, per user, when each broadcast was read.
	receipts map[string]map[string]time.Time
	// hosts maps a host system ID to its message ID and draft, for retries.
	hosts map[string]modelHost
	// lastID is the highest message ID published so far.
	lastID string
}

// modelCopy is one stored message as its user sees it.
type modelCopy struct {
	category  string
	expiresAt time.Time
	readAt    time.Time // direct copies only; broadcasts use receipts
	group     string    // a broadcast's group; "" for everyone
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
	ID        string
	Category  string
	Broadcast bool
	ReadAt    time.Time
	ExpiresAt time.Time
}

func newModel(users []string) *model {
	m := &model{
		direct:     map[string]map[string]*modelCopy{},
		broadcasts: map[string]*modelCopy{},
		receipts:   map[string]map[string]time.Time{},
		member:     map[string]map[string]bool{},
		hosts:      map[string]modelHost{},
	}
	for _, u := range users {
		m.direct[u] = map[string]*modelCopy{}
		m.receipts[u] = map[string]time.Time{}
		m.member[u] = map[string]bool{}
	}
	return m
}

// feed returns u's visible feed at now with o's filters, newest first.
func (m *model) feed(u string, now time.Time, o inbox.ListOptions) []entry {
	var out []entry
	add := func(id string, c *modelCopy, broadcast bool, readAt time.Time) {
		if !now.Before(c.expiresAt) || o.Category != "" && c.category != o.Category || o.UnreadOnly && !readAt.IsZero() {
			return
		}
		out = append(out, entry{ID: id, Category: c.category, Broadcast: broadcast, ReadAt: readAt, ExpiresAt: c.expiresAt})
	}
	for id, c := range m.direct[u] {
		add(id, c, false, c.readAt)
	}
	for id, c := range m.broadcasts {
		if m.sees(u, c) {
			add(id, c, true, m.receipts[u][id])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out
}

// sees reports whether u sees broadcast c: it is to everyone, or to one of
// u's groups.
func (m *model) sees(u string, c *modelCopy) bool { return c.group == "" || m.member[u][c.group] }

// groups returns u's groups now, sorted.
func (m *model) groups(u string) []string {
	var out []string
	for g, in := range m.member[u] {
		if in {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out
}

// markRead predicts MarkRead(u, id) at now and applies it: whether it
// changes anything, or false if the message is not (or no longer) there.
func (m *model) markRead(u, id string, now time.Time) (changed, found bool) {
	if c, ok := m.direct[u][id]; ok {
		if !now.Before(c.expiresAt) {
			return false, false
		}
		if c.readAt.IsZero() {
			c.readAt = now
			return true, true
		}
		return false, true
	}
	if c, ok := m.broadcasts[id]; ok && m.sees(u, c) {
		if !now.Before(c.expiresAt) {
			return false, false
		}
		if _, read := m.receipts[u][id]; !read {
			m.receipts[u][id] = now
			return true, true
		}
		return false, true
	}
	return false, false
}

// hostReusable reports whether a retry of host h would find every copy
// still there: none has expired (so no store may have deleted one) or been
// removed.
func (m *model) hostReusable(h modelHost, now time.Time) bool {
	return !h.removed && now.Before(h.expiresAt)
}

// remove removes the record of user u (a direct copy, or the receipt of a
// broadcast) or, with u "", the broadcast id, as a delete would; the host
// system ID of a removed message may not be retried.
func (m *model) remove(u, id string) {
	switch {
	case u == "":
		delete(m.broadcasts, id)
	case m.direct[u][id] != nil:
		delete(m.direct[u], id)
	default:
		delete(m.receipts[u], id)
		return
	}
	for k, h := range m.hosts {
		if h.id == id {
			h.removed = true
			m.hosts[k] = h
		}
	}
}

// equal reports whether en and o are the same, times compared as instants.
func (en entry) equal(o entry) bool {
	return en.ID == o.ID && en.Category == o.Category && en.Broadcast == o.Broadcast &&
		en.ReadAt.Equal(o.ReadAt) && en.ExpiresAt.Equal(o.ExpiresAt)
}

// entries projects listed messages for comparison with feed.
func entries(msgs []inbox.Message) []entry {
	var out []entry
	for _, m := range msgs {
		out = append(out, entry{ID: m.ID, Category: m.Category, Broadcast: m.IsBroadcast(), ReadAt: m.ReadAt, ExpiresAt: m.ExpiresAt})
	}
	return out
}

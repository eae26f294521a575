package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// readBy returns who the model says has read msg, a message of one of
// u's threads as a List (perhaps an earlier one) showed it to u, at now,
// as Inbox.ReadBy with members should report it: none if msg has expired
// or, a broadcast, is gone; for a broadcast, each user (among members and
// u, if members are given) whose receipt of it is read and not deleted,
// with its ReadAt; for a direct message, u if msg is read (as msgs holds
// it: ReadBy does not read u's copy again) and each of members whose copy
// of it stands, unexpired, read, if u holds the message (she sent it, or
// her copy of it stands, of the same thread and sender); never its
// sender.
func (m *model) readBy(u string, msg driver.Message, members []string, now time.Time) []inbox.Reader {
	if !now.Before(msg.ExpiresAt) {
		return nil
	}
	var out []inbox.Reader
	if msg.IsBroadcast() {
		c, ok := m.broadcasts[msg.ID]
		if !ok {
			return nil // removed for everyone
		}
		for v, rs := range m.receipts {
			st := rs[msg.ID]
			if st == nil || st.ReadAt.IsZero() || !st.DeletedAt.IsZero() || v == c.sender || len(members) > 0 && v != u && !slices.Contains(members, v) {
				continue
			}
			out = append(out, inbox.Reader{User: v, ReadAt: st.ReadAt})
		}
		// A member whose read position in the group's thread covers it
		// has read it, at the position's time, whatever her own marks
		// but a read of her own that stands.
		for v := range m.groupPositions {
			if at := m.lent(v, msg.ID); !at.IsZero() && v != c.sender && (len(members) == 0 || v == u || slices.Contains(members, v)) &&
				!slices.ContainsFunc(out, func(r inbox.Reader) bool { return r.User == v }) {
				out = append(out, inbox.Reader{User: v, ReadAt: at})
			}
		}
	} else {
		sender := msg.Sender
		if c, ok := m.direct[u][msg.ID]; ok {
			sender = c.sender
		}
		if u != sender && msg.IsRead() {
			out = append(out, inbox.Reader{User: u, ReadAt: msg.ReadAt})
		}
		for _, v := range members {
			c, ok := m.direct[v][msg.ID]
			if v == u || !ok || v == c.sender || c.thread != msg.Thread || !now.Before(c.expiresAt) || c.state.ReadAt.IsZero() || slices.ContainsFunc(out, func(r inbox.Reader) bool { return r.User == v }) {
				continue
			}
			if own, ok := m.direct[u][msg.ID]; c.sender != u && (!ok || own.thread != c.thread || own.sender != c.sender) {
				continue // not a message u holds
			}
			out = append(out, inbox.Reader{User: v, ReadAt: c.state.ReadAt})
		}
	}
	slices.SortFunc(out, func(a, b inbox.Reader) int { return strings.Compare(a.User, b.User) })
	return out
}

// readByCheck checks Inbox.ReadBy against the model: see checkReadBy.
type readByCheck struct {
	t     interface{ Errorf(string, ...any) }
	ctx   context.Context
	m     *model
	rng   *rand.Rand
	users []string
	// stale are earlier pages of users' threads, by user, for ReadBy to
	// be asked of again once their messages have been read, expired or
	// removed.
	stale map[string][][]driver.Message
	// calls and readers count the ReadBy calls made and the readers they
	// reported, for the final log.
	calls, readers int
}

// members returns a random members argument of ReadBy: none (everyone)
// half of the time, else a random subset of the users, u perhaps among
// them.
func (c *readByCheck) members() []string {
	if c.rng.IntN(2) == 0 {
		return nil
	}
	var out []string
	for _, v := range c.users {
		if c.rng.IntN(2) == 0 {
			out = append(out, v)
		}
	}
	return out
}

// check asks ib who has read each message of page, u's at now (with
// random members), and compares the answer with the model's. what says
// which page it is, in a failure.
func (c *readByCheck) check(what string, ib *inbox.Inbox, u driver.User, page []driver.Message, now time.Time) {
	if len(page) == 0 {
		return
	}
	members := c.members()
	got, err := ib.ReadBy(c.ctx, u, page, members...)
	c.calls++
	if err != nil || len(got) != len(page) {
		c.t.Errorf("%s: ReadBy(%s, %d messages, members %v) = %d answers, %v", what, u.ID, len(page), members, len(got), err)
		return
	}
	for i, msg := range page {
		c.readers += len(got[i].Readers)
		want := c.m.readBy(u.ID, msg, members, now)
		if got[i].ID != msg.ID || !slices.EqualFunc(want, got[i].Readers, func(a, b inbox.Reader) bool { return a.User == b.User && a.ReadAt.Equal(b.ReadAt) }) {
			c.t.Errorf("%s: ReadBy(%s, members %v) of %s (%s %q, thread %s, sender %q, read %v, expires %v) is %s %s, the model's %s",
				what, u.ID, members, msg.ID, msg.Audience.Kind, msg.Audience.Group, msg.Thread, msg.Sender, msg.IsRead(), msg.ExpiresAt.Format("15:04:05"), got[i].ID, readersText(got[i].Readers), readersText(want))
		}
	}
}

// thread pages u's view of thread t through ib, a random number of
// messages at a time, and checks ReadBy of each page; it keeps the first
// page as a stale page of u's, to ask of again later.
func (c *readByCheck) thread(what string, ib *inbox.Inbox, u driver.User, t string, now time.Time) {
	o := inbox.ListOptions{Thread: t, Limit: 1 + c.rng.IntN(8)}
	if c.rng.IntN(4) == 0 {
		o.Archived = true
	}
	for pages := 0; ; pages++ {
		page, err := ib.List(c.ctx, u, o)
		if err != nil || pages > 1000 {
			c.t.Errorf("%s: List(%s, %+v): %v", what, u.ID, o, err)
			return
		}
		c.check(fmt.Sprintf("%s, page %d of %s's thread %s", what, pages+1, u.ID, t), ib, u, page.Messages, now)
		if pages == 0 && len(page.Messages) > 0 {
			c.keep(u.ID, page.Messages)
		}
		if page.Cursor == "" {
			return
		}
		o.Cursor = page.Cursor
	}
}

// keep keeps page as one of u's stale pages, the last few.
func (c *readByCheck) keep(u string, page []driver.Message) {
	if c.stale == nil {
		c.stale = map[string][][]driver.Message{}
	}
	c.stale[u] = append(c.stale[u], page)
	if len(c.stale[u]) > 4 {
		c.stale[u] = c.stale[u][1:]
	}
}

// staleOnes checks ReadBy of one of u's stale pages, as a client holding
// it would ask: its messages may have been read, unread, expired or
// removed since. The page's messages of groups u no longer names are
// left out (ReadBy refuses them).
func (c *readByCheck) staleOnes(what string, ib *inbox.Inbox, u driver.User, now time.Time) {
	pages := c.stale[u.ID]
	if len(pages) == 0 {
		return
	}
	var page []driver.Message
	for _, msg := range pages[c.rng.IntN(len(pages))] {
		if g := msg.Audience.Group; msg.Audience.Kind != driver.AudienceGroup || slices.Contains(u.Groups, g) {
			page = append(page, msg)
		}
	}
	c.check(what+", a stale page of "+u.ID+"'s", ib, u, page, now)
}

// readersText describes readers: each user, with when she read.
func readersText(rs []inbox.Reader) string {
	var b strings.Builder
	b.WriteString("[")
	for i, r := range rs {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s@%s", r.User, r.ReadAt.UTC().Format("15:04:05"))
	}
	b.WriteString("]")
	return b.String()
}

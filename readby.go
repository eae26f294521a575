package inbox

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sync/errgroup"

	"github.com/stak/inbox/driver"
)

// Reader is a member who has read a message, as ReadBy reports it.
type Reader struct {
	// User is the member's ID.
	User string
	// ReadAt is when she read it.
	ReadAt time.Time
}

// ReadBy is who has read one message of a thread, as Inbox.ReadBy
// reports it.
type ReadBy struct {
	// ID is the message's.
	ID string
	// Readers are the members who have read it, by user ID: its sender
	// is never among them. len(Readers) is how many ("seen by 3").
	Readers []Reader
}

// readersPage is how many reader items ReadBy asks a Store for at a
// time: a page of a thread's messages and their readers, below
// DynamoDB's 1 MB a Query returns.
const readersPage = 2000

// ReadBy returns who has read each of msgs, messages of u's threads as
// List shows them to u (a page of List with ListOptions.Thread): one
// ReadBy per message, in msgs' order, each with the members who have
// read it, by user ID, and when. The message's sender (Message.Sender)
// is left out: her own message is read for her (see Draft.Sender), so
// "seen by" counts the others. A message that has expired, or that was
// removed for everyone (Redact), has no readers, but for u's own read of a
// one-to-one copy, which ReadBy takes from msgs as given (a stale page
// may still hold it).
//
// A group chat's message (a group's, or everyone's, stored once) is read
// by the users whose receipts of it are read: each mark that reads or
// unreads a thread's broadcast keeps a small reader item in the
// broadcast's partition, in the same atomic write, and ReadBy reads the
// items of the page's messages with one Query of their range of keys in
// the thread. members, if given, keeps only those users (and u): the
// library does not know groups, and a user who left one keeps her reads.
// A one-to-one chat's message (direct copies to each user, under one ID)
// is read by the users among members whose copies are read, and by u if
// hers is (as msgs holds it): pass the chat's other user (or users) as
// members; their copies are read by key. A member's read is told only
// of a message u holds, as msgs are as the caller gives them: one u sent
// (the member's copy names her its sender), or one whose copy in u's
// partition is of the same thread and sender, which is then read by key
// too, beside the members' copies (a message of another user in a chat of
// three or more; in a one-to-one chat the other member is its sender, of
// whom nothing is asked). A message passed as u's of a chat she is not in
// has no readers.
//
// Cost: one round trip, whatever the page: the reader items of each
// shared partition's messages, in one Query of their range (some 160
// bytes each: 4 read units for a page of 20 messages each read by 4; a
// Query returns at most 1 MB, so a page whose readers pass it, some six
// thousand, takes one more round trip per MB), with the partition's
// stats for its tombstones (from the shared cache, see WithSharedCache,
// or one Stats read), and the members' copies of the direct messages, by
// key (a read unit per copy: 20 for a page of a one-to-one chat; in a
// chat of three or more, one more for u's copy of each message of the
// others).
// Marking a thread's broadcast read or unread writes its reader item in
// the same transaction (2 WCU more); the sender's read of her own message
// writes none. Another program's receipts of a thread's broadcast (the seeds'
// design has no threads) count once a mark adopts them into the thread:
// the stream handler's adoption, Recount's, or the user's next mark.
//
// A message without a thread, with a malformed ID, or not u's (a direct
// copy of another user's, a group message of a group u does not name) is
// ErrInvalidInput or ErrInvalidKey, and so is a member that is not a
// user's key, more than MaxPageSize messages or members: nothing is read.
func (ib *Inbox) ReadBy(ctx context.Context, u User, msgs []Message, members ...string) (_ []ReadBy, err error) {
	defer ib.observe(&ctx, "ReadBy", u.Scope, u.ID).end(&err)
	if err := u.Validate(); err != nil {
		return nil, err
	}
	if len(msgs) > MaxPageSize || len(members) > MaxPageSize {
		return nil, fmt.Errorf("%w: %d messages and %d members, at most %d each", ErrInvalidInput, len(msgs), len(members), MaxPageSize)
	}
	for _, m := range members {
		if err := driver.ValidateUserID(m); err != nil {
			return nil, err
		}
	}
	parts := make([]Partition, len(msgs)) // each message's partition
	for i, m := range msgs {
		p, err := readByPartition(u, m)
		if err != nil {
			return nil, err
		}
		parts[i] = p
	}
	now := ib.now()
	v := ib.cache.newView(now)
	// One range per shared partition and thread, and the members' copies
	// of the direct messages, all at once.
	type span struct {
		p          Partition
		thread     string
		lo, hi     string // the oldest and newest IDs
		readers    []driver.Reader
		positions  []driver.Reader // the members' read positions in a group's thread
		tombstones []driver.Record
	}
	spans := map[threadKey]*span{}
	var keys []driver.Key
	for i, m := range msgs {
		p := parts[i]
		if !p.IsShared() {
			others := false
			for _, member := range members {
				if member != u.ID && member != m.Sender {
					keys = append(keys, driver.Key{Partition: u.Scope.User(member).Partition(), ID: m.ID})
					others = true
				}
			}
			if others && m.Sender != u.ID {
				// u's own copy, which proves the message hers (see
				// holds): msgs are as the caller gives them.
				keys = append(keys, driver.Key{Partition: u.Partition(), ID: m.ID})
			}
			continue
		}
		k := threadKey{group: p.Group, thread: m.Thread}
		s := spans[k]
		if s == nil {
			s = &span{p: p, thread: m.Thread, lo: m.ID, hi: m.ID}
			spans[k] = s
		}
		s.lo, s.hi = min(s.lo, m.ID), max(s.hi, m.ID)
	}
	slices.SortFunc(keys, func(a, b driver.Key) int {
		return cmp.Or(strings.Compare(a.Partition.PK(), b.Partition.PK()), strings.Compare(a.ID, b.ID))
	})
	keys = slices.Compact(keys) // a message or member given twice
	var copies []driver.Record
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	positions := map[driver.Partition]map[string]driver.Position{} // the members' read positions
	if len(keys) > 0 {
		g.Go(func() (err error) { copies, err = ib.getRecords(gctx, keys); return err })
		others := map[driver.Partition]bool{}
		for _, k := range keys {
			others[k.Partition] = true
		}
		var mu sync.Mutex
		for p := range others {
			g.Go(func() error {
				st, err := ib.store.Stats(gctx, driver.StatsQuery{Partition: p, Keys: []driver.Counter{{}}})
				mu.Lock()
				positions[p] = driver.Positions(st.Counters)
				mu.Unlock()
				return err
			})
		}
	}
	for _, s := range spans {
		g.Go(func() error {
			q := driver.Query{Partition: s.p, Readers: true, Thread: s.thread, After: idBefore(s.lo), Limit: readersPage, Now: now}
			q.Before, _ = idAfter(s.hi)
			for {
				res, err := ib.store.Query(gctx, q)
				if err != nil {
					return err
				}
				s.readers = append(s.readers, res.Readers...)
				if res.Next == "" {
					return nil
				}
				q.After = res.Next
			}
		})
		g.Go(func() error {
			st, err := v.stats(gctx, s.p, false)
			s.tombstones = st.Tombstones
			return err
		})
		if !s.p.IsPublic() {
			g.Go(func() error {
				res, err := ib.store.Query(gctx, driver.Query{Partition: s.p, Readers: true, Positions: true, Thread: s.thread, Limit: readersPage})
				s.positions = res.Readers
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := readsWithin(start); err != nil {
		return nil, err
	}
	keep := func(user string) bool { return user == u.ID || len(members) == 0 || slices.Contains(members, user) }
	byCopy := make(map[driver.Key]driver.Record, len(copies))
	for _, c := range copies {
		byCopy[c.Key()] = driver.Overlay(c, positions[c.Partition])
	}
	out := make([]ReadBy, len(msgs))
	for i, m := range msgs {
		out[i].ID = m.ID
		if !now.Before(m.ExpiresAt) {
			continue
		}
		var rs []Reader
		if p := parts[i]; p.IsShared() {
			s := spans[threadKey{group: p.Group, thread: m.Thread}]
			if slices.ContainsFunc(s.tombstones, func(t driver.Record) bool { return t.Message.ID == m.ID }) {
				continue // removed before it expired
			}
			for _, r := range s.readers {
				if r.ID == m.ID && r.User != m.Sender && keep(r.User) {
					rs = append(rs, Reader{User: r.User, ReadAt: r.ReadAt})
				}
			}
			// The members whose read positions cover it, but for those
			// who read it before (their reader items, first).
			for _, r := range s.positions {
				if r.Position.Covers(m.ID) && r.User != m.Sender && keep(r.User) {
					rs = append(rs, Reader{User: r.User, ReadAt: r.Position.ReadAt(m.ID)})
				}
			}
		} else {
			if u.ID != m.Sender && m.IsRead() {
				rs = append(rs, Reader{User: u.ID, ReadAt: m.ReadAt})
			}
			own, hasOwn := byCopy[driver.Key{Partition: u.Partition(), ID: m.ID}]
			for _, member := range members {
				c, ok := byCopy[driver.Key{Partition: u.Scope.User(member).Partition(), ID: m.ID}]
				if ok && !c.Receipt && c.Message.Thread == m.Thread && c.Message.IsRead() && now.Before(c.Message.ExpiresAt) && member != u.ID && member != c.Message.Sender &&
					holds(u, c, own, hasOwn) {
					rs = append(rs, Reader{User: member, ReadAt: c.Message.ReadAt})
				}
			}
		}
		// Stable, so that a member's own read, listed before her
		// position's, is the one kept.
		slices.SortStableFunc(rs, func(a, b Reader) int { return strings.Compare(a.User, b.User) })
		out[i].Readers = slices.CompactFunc(rs, func(a, b Reader) bool { return a.User == b.User })
	}
	return out, nil
}

// holds reports whether u holds the message of c, another member's direct
// copy: u sent it (c's sender), or own, u's copy under its ID (hasOwn: it
// was read), is of the same thread and sender. ReadBy tells a member's
// read of a direct message only then: the message u passes is as the
// caller gives it, and could name another chat's.
func holds(u User, c, own driver.Record, hasOwn bool) bool {
	if c.Message.Sender == u.ID {
		return true
	}
	return hasOwn && !own.Receipt && own.Message.Thread == c.Message.Thread && own.Message.Sender == c.Message.Sender
}

// readByPartition returns the partition of m, a message of one of u's
// threads as List shows it to u: u's own for u's direct copy, the public
// one or one of u's groups' for a broadcast. Anything else is bad input.
func readByPartition(u User, m Message) (Partition, error) {
	if err := driver.ValidateMessageID(m.ID); err != nil {
		return Partition{}, err
	}
	if m.Thread == "" {
		return Partition{}, fmt.Errorf("%w: read by of message %s, in no thread", ErrInvalidInput, m.ID)
	}
	if err := driver.ValidateThread(m.Thread); err != nil {
		return Partition{}, err
	}
	a := m.Audience
	switch {
	case a.Kind == AudienceUsers && len(a.UIDs) == 1 && a.UIDs[0] == u.ID:
		return u.Partition(), nil
	case a.Kind == AudienceEveryone:
		return u.Scope.Public(), nil
	case a.Kind == AudienceGroup && driver.ValidateGroup(a.Group) == nil && slices.Contains(u.Shared(), u.Scope.Group(a.Group)):
		return u.Scope.Group(a.Group), nil
	}
	return Partition{}, fmt.Errorf("%w: read by of message %s of thread %q, not in a thread of %s (audience %s %q %v)", ErrInvalidInput, m.ID, m.Thread, u.ID, a.Kind, a.Group, a.UIDs)
}

// idBefore returns the ID just below id, a ULID ("" if there is none):
// an exclusive lower bound that keeps id.
func idBefore(id string) string {
	v, err := ulid.ParseStrict(id)
	if err != nil {
		return ""
	}
	for i := len(v) - 1; i >= 0; i-- {
		v[i]--
		if v[i] != 0xff {
			return v.String()
		}
	}
	return ""
}

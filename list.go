package inbox

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stak/inbox/driver"
	"golang.org/x/sync/errgroup"
)

// DefaultPageSize is List's page size when ListOptions.Limit is zero.
const DefaultPageSize = 20

// MaxPageSize is the largest ListOptions.Limit.
const MaxPageSize = 100

// listRounds bounds the store round trips of one List call: when filters
// drop many records a page can come back short (see Page).
const listRounds = 4

// ListOptions selects a page of List.
type ListOptions struct {
	// Limit is the most messages on the page: 1 to MaxPageSize, or 0 for
	// DefaultPageSize.
	Limit int
	// Cursor continues from a previous page's Page.Cursor; "" starts at the
	// newest message. A cursor is only valid with the same user and filters.
	Cursor string
	// UnreadOnly keeps only unread messages.
	UnreadOnly bool
	// Category keeps only messages of this category; "" keeps all.
	Category string
	// Thread keeps only the messages of this thread (see Draft.Thread),
	// read from the stores' thread index, with the user's receipts of the
	// thread's broadcasts read by key, as for an unread page: a page costs
	// what it holds, whatever the rest of the feed holds. "" keeps all.
	Thread string
	// UpTo keeps only messages with IDs up to this one (inclusive): the
	// newest message a view showed, so that MarkAllRead marks what the
	// user saw and not what arrived since. IDAt turns a time into one.
	// "" keeps all.
	UpTo string
	// Archived lists only the messages u archived, instead of the feed
	// (which leaves them out).
	Archived bool
	// Snoozed lists only the messages u snoozed that have not returned yet
	// (see Inbox.Snooze), instead of the feed (which leaves them out),
	// newest first, with Category and UnreadOnly as filters; with
	// Archived, Thread or UpTo it is ErrInvalidInput. A page reads u's
	// snooze entries with u's stats, then the messages by key (broadcasts
	// from the shared partitions' snapshots when they hold them, as
	// Counts does): two round trips, whatever the feed holds.
	Snoozed bool
}

// Page is one page of a user's feed.
type Page struct {
	// Messages are newest first.
	Messages []Message
	// Cursor fetches the next page; "" when there are no more messages.
	Cursor string
}

// List returns a page of u's feed, newest first: u's own messages merged
// with the inbox's broadcasts to everyone and to u's groups, each
// broadcast's read state taken from u's receipt. Messages that have
// expired are hidden even before DynamoDB's TTL deletes them; so are the
// messages u archived (unless o.Archived, which lists only those) and
// deleted.
//
// Each round reads u's partition and the shared ones (everyone's and each
// of u's groups') in parallel; a page normally costs one round trip. When
// filters drop many records a page may hold fewer than Limit messages
// (even none) with a non-empty Cursor: keep paging until Cursor is "".
// Paging never skips or repeats a message, and messages published after
// the first page appear on the first page of a new listing, not in later
// pages. The archived list reads u's partition, then the broadcasts it
// names: two round trips a page.
//
// An unread-only page (o.UnreadOnly) reads u's unread direct messages
// alone (the dynamo Store reads them from its unread index), and each
// shared partition's newest broadcasts followed by u's receipts of them,
// by key: two round trips (one when the shared partitions come from the
// cache). Its cost grows with the unread messages and the broadcasts it
// passes, not with the direct messages u has read: with 10,000 of them
// above one unread message, the page still costs two round trips. With a
// category too, it reads the same and filters what the index returns. A
// page filtered by category alone reads the partitions and filters them,
// so its cost grows with the messages of other categories it passes (an
// index by category would bill every message written, and fetch each item
// it returns at 1 read unit, about four times a dense category's cost).
func (ib *Inbox) List(ctx context.Context, u User, o ListOptions) (_ Page, err error) {
	defer ib.observe(&ctx, "List", u.Scope, u.ID).end(&err)
	recs, cursor, err := ib.page(ctx, u, o)
	if err != nil {
		return Page{}, err
	}
	p := Page{Messages: make([]Message, len(recs)), Cursor: cursor}
	for i, r := range recs {
		p.Messages[i] = r.message()
	}
	return p, nil
}

// feedRecord is a message of a user's feed: u's direct message, or a
// broadcast or group message with u's receipt of it (nil if none), and
// whether u muted its group.
type feedRecord struct {
	driver.Record
	receipt *driver.Record
	muted   bool
	// stored is the record as stored where a read position reads it
	// otherwise (Record: see driver.Overlay); nil elsewhere.
	stored *driver.Record
	// lent is the read time a read position in a group's thread lends
	// the message, which u's receipt leaves unread (see
	// position_group.go); zero elsewhere.
	lent time.Time
}

// overlay returns f as it reads with rp, its user's read positions
// (driver.Overlay, lentRead), the record as stored kept aside.
func (f feedRecord) overlay(rp readPositions) feedRecord {
	if over := driver.Overlay(f.Record, rp.direct); !over.Message.ReadAt.Equal(f.Record.Message.ReadAt) {
		stored := f.Record
		f.Record, f.stored = over, &stored
	}
	f.lent = lentRead(f.Record, f.receipt, rp.group)
	return f
}

// lentRead returns the read time u's read position in the thread of rec,
// a group's message, lends it where receipt, u's receipt of it (nil if
// none), holds no read (archived, or deleted, or not): zero if none does.
func lentRead(rec driver.Record, receipt *driver.Record, group map[driver.GroupThread]driver.Position) time.Time {
	if len(group) == 0 || !rec.Partition.IsShared() || rec.Partition.IsPublic() || rec.Message.Thread == "" {
		return time.Time{}
	}
	pos, ok := group[driver.GroupThread{Group: rec.Partition.Group, Thread: rec.Message.Thread}]
	if !ok || !pos.Covers(rec.Message.ID) || receipt != nil && !receipt.Message.ReadAt.IsZero() {
		return time.Time{}
	}
	return pos.ReadAt(rec.Message.ID)
}

// state returns u's marks on the message.
func (f feedRecord) state() driver.State {
	st := f.Record.State()
	if f.receipt != nil {
		st = f.receipt.State()
	}
	if !f.lent.IsZero() {
		st.ReadAt = f.lent
	}
	return st
}

// message returns the message as u sees it, with u's marks.
func (f feedRecord) message() Message {
	m := f.Record.Message
	st := f.state()
	m.ReadAt, m.ArchivedAt, m.SnoozedUntil, m.InteractedAt = st.ReadAt, st.ArchivedAt, st.SnoozedUntil, st.InteractedAt
	m.Muted = f.muted
	return m
}

// markMuted notes, on each record of recs, whether prefs, its user's
// preferences, mute it.
func markMuted(recs []feedRecord, prefs Preferences) {
	for i := range recs {
		recs[i].muted = mutes(prefs, recs[i].Record)
	}
}

// page returns a page of u's feed as records: u's direct messages, and
// broadcasts with u's receipts, and the cursor of the next page.
func (ib *Inbox) page(ctx context.Context, u User, o ListOptions) ([]feedRecord, string, error) {
	if err := u.Validate(); err != nil {
		return nil, "", err
	}
	if err := driver.ValidateCategory(o.Category); err != nil {
		return nil, "", err
	}
	if err := driver.ValidateThread(o.Thread); err != nil {
		return nil, "", err
	}
	if o.Snoozed && (o.Archived || o.Thread != "" || o.UpTo != "") {
		return nil, "", fmt.Errorf("%w: the snoozed view with Archived, Thread or UpTo", ErrInvalidInput)
	}
	if o.Limit < 0 || o.Limit > MaxPageSize {
		return nil, "", fmt.Errorf("%w: limit %d is not between 0 and %d", ErrInvalidInput, o.Limit, MaxPageSize)
	}
	limit := o.Limit
	if limit == 0 {
		limit = DefaultPageSize
	}
	binding := cursorBinding(u, o)
	start := ""
	if o.Cursor != "" {
		var err error
		if start, err = ib.decodeCursor(o.Cursor, binding); err != nil {
			return nil, "", err
		}
	}
	if o.UpTo != "" {
		upTo, err := idAfter(o.UpTo)
		if err != nil {
			return nil, "", err
		}
		// Above the greatest ULID there is no bound (""): the cursor's
		// start stands.
		if upTo != "" && (start == "" || upTo < start) {
			start = upTo
		}
	}
	now := ib.now()
	if b := feedBound(now); start == "" || b < start {
		// Nothing above it is due: scheduled messages are not read.
		start = b
	}
	v := ib.cache.newView(now)
	switch {
	case o.Snoozed:
		return ib.snoozedPage(ctx, v, u, o, limit, start, binding, now)
	case o.Archived:
		return ib.archivedPage(ctx, v, u, o, limit, start, binding, now)
	}
	base := driver.Query{Limit: limit + 1, Category: o.Category, Thread: o.Thread, UnreadOnly: o.UnreadOnly, Now: now, Archived: driver.NotArchived}
	m := merger{position: start}
	for _, p := range append([]Partition{u.Partition()}, u.Shared()...) {
		q := base
		q.Partition = p
		s := &feedStream{q: q, next: start, more: true}
		if (o.UnreadOnly || o.Thread != "") && p.IsShared() {
			// u's partition yields only unread direct messages, or only
			// the receipts that carry the thread (a receipt another
			// program wrote carries none): the receipts of the broadcasts
			// are read by key.
			s.receiptsIn = u.Partition()
		}
		m.streams = append(m.streams, s)
	}

	// The first round reads u's recent receipts beside the streams, and
	// reads again the partitions whose snapshot lacks one (see catchUp).
	parts := append([]Partition{u.Partition()}, u.Shared()...)
	g, gctx := errgroup.WithContext(ctx)
	var renewed []int
	var ps pageStats
	began := time.Now()
	g.Go(func() (err error) { renewed, ps, err = ib.catchUp(gctx, v, parts, now); return err })
	g.Go(func() error { return ib.fetch(gctx, v, m.streams) })
	if err := g.Wait(); err != nil {
		return nil, "", err
	}
	if err := readsWithin(began); err != nil {
		return nil, "", err
	}
	prefs := ps.prefs
	if hidesView(prefs, o) {
		return nil, "", nil // u opted out of the view's category
	}
	for _, i := range renewed {
		s := m.streams[i]
		s.buf, s.receipts, s.next, s.more = nil, nil, start, true
	}
	out := make([]feedRecord, 0, limit)
	for round := 0; ; round++ {
		if err := ib.fetch(ctx, v, m.streams); err != nil {
			return nil, "", err
		}
		for len(out) < limit {
			rec, ok, progressed := m.pop()
			if !progressed {
				break
			}
			rec = rec.overlay(ps.positions)
			if ok && visible(rec, o, now) && !hides(prefs, o, rec.Record) {
				out = append(out, rec)
			}
		}
		if len(out) == limit || m.exhausted() || round+1 == listRounds {
			break
		}
	}
	markMuted(out, prefs)
	if !m.exhausted() {
		if c := m.cursor(); c != "" {
			cursor, err := ib.encodeCursor(c, binding)
			if err != nil {
				return nil, "", err
			}
			return out, cursor, nil
		}
	}
	return out, "", nil
}

// archivedPage returns a page of the messages u archived, below start:
// u's archived direct messages and receipts, read from u's partition, and
// the broadcasts and group messages the receipts name: from v's snapshot
// of their partition when it holds them (or knows they are gone), else
// read by key.
func (ib *Inbox) archivedPage(ctx context.Context, v *view, u User, o ListOptions, limit int, start string, binding []byte, now time.Time) ([]feedRecord, string, error) {
	shared := map[string]Partition{"": u.Scope.Public()}
	for _, p := range u.Shared()[1:] {
		shared[p.Group] = p
	}
	q := driver.Query{Partition: u.Partition(), Before: start, Limit: limit + 1, Category: o.Category, Thread: o.Thread, Now: now, Archived: driver.OnlyArchived}
	var out []feedRecord
	var prefs Preferences
	var positions readPositions
	defer func() { markMuted(out, prefs) }()
	for round := 0; round < listRounds && len(out) < limit; round++ {
		var res driver.QueryResult
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() (err error) { res, err = ib.store.Query(gctx, q); return err })
		if round == 0 {
			g.Go(func() (err error) {
				_, ps, err := ib.catchUp(gctx, v, append([]Partition{u.Partition()}, u.Shared()...), now)
				// Archived records are read as they are, but for the read a
				// position in a group's thread lends (lentRead): a
				// position of her direct messages covers none.
				prefs, positions = ps.prefs, ps.positions
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, "", err
		}
		if hidesView(prefs, o) {
			return nil, "", nil // u opted out of the view's category
		}
		var keys []driver.Key
		found := map[string]driver.Record{}
		for _, r := range res.Records {
			p, ok := shared[r.Message.Audience.Group]
			if !ok || !r.Receipt {
				continue
			}
			b, known, err := v.lookup(ctx, driver.Key{Partition: p, ID: r.Message.ID})
			switch {
			case err != nil:
				return nil, "", err
			case b != nil:
				found[r.Message.ID] = *b
			case !known:
				keys = append(keys, driver.Key{Partition: p, ID: r.Message.ID})
			}
		}
		recs, err := ib.getRecords(ctx, keys)
		if err != nil {
			return nil, "", err
		}
		for _, r := range recs {
			found[r.Message.ID] = r
		}
		for i, r := range res.Records {
			f := feedRecord{Record: r}
			if r.Receipt {
				b, ok := found[r.Message.ID]
				if !ok {
					continue // a group u is not in, or a message removed
				}
				receipt := r
				f = feedRecord{Record: b, receipt: &receipt}.overlay(positions)
			}
			if !visible(f, o, now) || hides(prefs, o, f.Record) {
				continue
			}
			out = append(out, f)
			if len(out) == limit {
				if i+1 < len(res.Records) || res.Next != "" {
					cursor, err := ib.encodeCursor(r.Message.ID, binding)
					return out, cursor, err
				}
				return out, "", nil
			}
		}
		if res.Next == "" {
			return out, "", nil
		}
		q.Before = res.Next
	}
	cursor, err := ib.encodeCursor(q.Before, binding)
	return out, cursor, err
}

// idAfter returns the ID just above id, a ULID: the exclusive bound that
// keeps the IDs up to id. Above the greatest ULID there is none: "".
func idAfter(id string) (string, error) {
	u, err := ulid.ParseStrict(id)
	if err != nil {
		return "", fmt.Errorf("%w: up-to id %q is not a ULID", ErrInvalidInput, id)
	}
	for i := len(u) - 1; i >= 0; i-- {
		u[i]++
		if u[i] != 0 {
			return u.String(), nil
		}
	}
	return "", nil
}

// hides reports whether u's preferences prefs take record r out of List
// with o: r is of a category u opted out of, and o is no thread's view
// (which, as ListThreads, shows the thread whole).
func hides(prefs Preferences, o ListOptions, r driver.Record) bool {
	return o.Thread == "" && prefs.OptsOut(r.Message.Category)
}

// hidesView reports whether prefs take every message out of List with o:
// o is the view of a category u opted out of.
func hidesView(prefs Preferences, o ListOptions) bool {
	return o.Thread == "" && prefs.OptsOut(o.Category)
}

// visible applies List's filters again, whatever the store did.
func visible(f feedRecord, o ListOptions, now time.Time) bool {
	return inView(f.Record.Message, f.state(), o, now)
}

// inView reports whether List with o shows message m, with the user's
// marks st, at now, by every filter but UpTo.
func inView(m driver.Message, st driver.State, o ListOptions, now time.Time) bool {
	return now.Before(m.ExpiresAt) && m.Due(now) &&
		(o.Category == "" || m.Category == o.Category) &&
		(o.Thread == "" || m.Thread == o.Thread) &&
		(!o.UnreadOnly || st.ReadAt.IsZero()) &&
		(o.Archived == !st.ArchivedAt.IsZero() || o.Snoozed) &&
		o.Snoozed == now.Before(st.SnoozedUntil) &&
		st.DeletedAt.IsZero()
}

// fetch refills, in parallel, every stream whose buffer is empty and that
// has more records, reading the shared partitions through v.
func (ib *Inbox) fetch(ctx context.Context, v *view, streams []*feedStream) error {
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	read := func(i int, s *feedStream) {
		q := s.q
		q.Before = s.next
		res, err := v.query(ctx, q)
		if err != nil {
			errs[i] = err
			return
		}
		s.buf, s.next, s.more = res.Records, res.Next, res.Next != ""
		if s.receiptsIn.User != "" {
			errs[i] = ib.readReceipts(ctx, s)
		}
	}
	// The streams to read are read at once, the last in this goroutine.
	last := -1
	for i, s := range streams {
		if len(s.buf) > 0 || !s.more {
			continue
		}
		if last >= 0 {
			wg.Add(1)
			go func(i int) { defer wg.Done(); read(i, streams[i]) }(last)
		}
		last = i
	}
	if last >= 0 {
		read(last, streams[last])
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// readReceipts reads the receipts, in s.receiptsIn, of the broadcasts in
// s's buffer, in one round trip.
func (ib *Inbox) readReceipts(ctx context.Context, s *feedStream) error {
	keys := make([]driver.Key, len(s.buf))
	for i, r := range s.buf {
		keys[i] = driver.Key{Partition: s.receiptsIn, ID: r.Message.ID}
	}
	recs, err := ib.getRecords(ctx, keys)
	s.receipts = make(map[string]driver.Record, len(recs))
	for _, r := range recs {
		if r.Receipt {
			s.receipts[r.Message.ID] = r
		}
	}
	return err
}

// getRecords reads the records at keys, any number of them, in one round
// trip: parallel Store.GetRecords of at most maxGetKeys keys each.
func (ib *Inbox) getRecords(ctx context.Context, keys []driver.Key) ([]driver.Record, error) {
	var mu sync.Mutex
	var out []driver.Record
	g, gctx := errgroup.WithContext(ctx)
	for chunk := range slices.Chunk(keys, maxGetKeys) {
		g.Go(func() error {
			recs, err := ib.store.GetRecords(gctx, chunk)
			mu.Lock()
			defer mu.Unlock()
			out = append(out, recs...)
			return err
		})
	}
	return out, g.Wait()
}

// feedStream is one partition's records, read page by page in descending
// ID order.
type feedStream struct {
	q    driver.Query
	buf  []driver.Record
	next string // Before of the next read: records below it are unread
	more bool   // whether records below next may exist
	// receiptsIn is, for a shared stream of an unread-only or a thread's
	// listing, the user's partition, where the receipts of its broadcasts
	// are read by key into receipts (by ID) as its buffer is filled.
	receiptsIn Partition
	receipts   map[string]driver.Record
}

// merger merges the user's stream (0) and the shared streams (1 on: the
// public partition's, then each group's).
type merger struct {
	streams  []*feedStream
	position string // ID of the last record consumed; start of the listing
	consumed bool
}

// pop consumes the newest record(s) with one ID: a direct message, or a
// broadcast with the user's receipt of it. It reports progressed false
// when no record can be consumed without reading more: a stream with an
// empty buffer may still hold records above the newest buffered one. ok is
// false when the consumed records make no message (a receipt whose
// broadcast is gone).
func (m *merger) pop() (rec feedRecord, ok, progressed bool) {
	head := ""
	for _, s := range m.streams {
		if len(s.buf) > 0 && s.buf[0].Message.ID > head {
			head = s.buf[0].Message.ID
		}
	}
	if head == "" {
		return feedRecord{}, false, false
	}
	for _, s := range m.streams {
		if len(s.buf) == 0 && s.more && head < s.next {
			return feedRecord{}, false, false
		}
	}
	var receipt, direct, public *driver.Record
	for i, s := range m.streams {
		if len(s.buf) == 0 || s.buf[0].Message.ID != head {
			continue
		}
		r := &s.buf[0] // the buffer is not written to: no copy
		s.buf = s.buf[1:]
		switch {
		case i > 0:
			public = r // IDs are unique: one shared stream holds head
			if rc, ok := s.receipts[head]; ok {
				receipt = &rc
			}
		case r.Receipt:
			receipt = r
		default:
			direct = r
		}
	}
	m.position, m.consumed = head, true
	switch {
	case direct != nil:
		return feedRecord{Record: *direct}, true, true
	case public != nil:
		return feedRecord{Record: *public, receipt: receipt}, true, true
	}
	return feedRecord{}, false, true
}

// exhausted reports whether every record has been consumed.
func (m *merger) exhausted() bool {
	for _, s := range m.streams {
		if len(s.buf) > 0 || s.more {
			return false
		}
	}
	return true
}

// cursor returns the ID the next page starts below: every record above it
// has been consumed and none below it has. Before anything is consumed it is
// the highest point the streams have read past.
func (m *merger) cursor() string {
	if m.consumed {
		return m.position
	}
	c := ""
	for _, s := range m.streams {
		if s.more && s.next > c {
			c = s.next
		}
	}
	return c
}

// Get returns message id as u sees it: a direct message of u's, or a
// broadcast to everyone or to one of u's groups, with u's marks (read,
// archived) and whether u muted its group, its category or, for a direct
// message of a thread, that chat (Message.Muted). It costs one round trip, a strongly consistent read of
// every place the message can be and of u's preferences. A message that
// does not exist, has expired, was sent to a group u is not in, or that u
// deleted, is ErrNotFound.
func (ib *Inbox) Get(ctx context.Context, u User, id string) (_ Message, err error) {
	defer ib.observe(&ctx, "Get", u.Scope, u.ID).end(&err)
	if err := u.Validate(); err != nil {
		return Message{}, err
	}
	if err := driver.ValidateMessageID(id); err != nil {
		return Message{}, err
	}
	var rec driver.Record
	var receipt *driver.Record
	var ps pageStats
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { rec, receipt, err = ib.lookupState(gctx, u, id, ib.now(), false); return err })
	g.Go(func() (err error) {
		ps, err = ib.pagePreferences(gctx, append([]Partition{u.Partition()}, u.Shared()...), nil)
		return err
	})
	if err := g.Wait(); err != nil {
		return Message{}, err
	}
	if err := readsWithin(start); err != nil {
		return Message{}, err
	}
	return feedRecord{Record: rec, receipt: receipt, muted: mutes(ps.prefs, rec)}.overlay(ps.positions).message(), nil
}

// lookupState reads message id from u's partition and the shared ones at
// once and returns it as it is stored at now: u's direct message, or the
// broadcast and u's receipt of it (nil if none). A message missing,
// expired, deleted by u, or (unless scheduled) not due yet is ErrNotFound.
func (ib *Inbox) lookupState(ctx context.Context, u User, id string, now time.Time, scheduled bool) (driver.Record, *driver.Record, error) {
	keys := []driver.Key{{Partition: u.Partition(), ID: id}}
	for _, p := range u.Shared() {
		keys = append(keys, driver.Key{Partition: p, ID: id})
	}
	recs, err := ib.store.GetRecords(ctx, keys)
	if err != nil {
		return driver.Record{}, nil, err
	}
	var own, public *driver.Record
	for i := range recs {
		if recs[i].Partition.IsShared() {
			public = &recs[i]
		} else {
			own = &recs[i]
		}
	}
	var rec driver.Record
	var receipt *driver.Record
	switch {
	case own != nil && !own.Receipt:
		rec = *own
	case public != nil:
		rec, receipt = *public, own
	default:
		return driver.Record{}, nil, ErrNotFound
	}
	if !now.Before(rec.Message.ExpiresAt) || !scheduled && !rec.Message.Due(now) || receipt != nil && !receipt.DeletedAt.IsZero() {
		return driver.Record{}, nil, ErrNotFound
	}
	return rec, receipt, nil
}

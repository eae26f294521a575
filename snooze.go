package inbox

import (
	"context"
	"fmt"
	"golang.org/x/sync/errgroup"
	"slices"
	"strings"
	"time"

	"github.com/stak/inbox/driver"
)

// Snooze hides message id from u's feed and counts until until (to the
// second), then puts it back, read or unread, archived or not, as it was:
// at that instant, in List and Counts at once, with nothing running then.
// Until it returns it is listed only in the snoozed view
// (ListOptions.Snoozed) and counted only in Counts.Snoozed. It reports
// whether this call changed anything: false if the message was snoozed
// until that time already. Snoozing a snoozed message again moves its
// return time.
//
// The message keeps its place in the feed, by its ID, and the seen
// watermark is left alone: a message that returns unread above the
// watermark counts as unseen again, one below it does not.
//
// until must be after now, at most MaxTTL ahead and before the message
// expires; a message of a thread (whose activity ListThreads shows) cannot
// be snoozed alone. Either is ErrInvalidInput, and writes nothing. A
// message that does not exist, has expired, is not due yet, or that u
// deleted is ErrNotFound.
//
// It costs what MarkRead does (two round trips), and writes the snooze
// entry with the mark: the entry, in u's partition beside u's counters, is
// what takes the message out of u's counts while it is snoozed, so that
// Counts reads it with the counters, in the same Query. Marks on a snoozed
// message (MarkRead, Archive, ...) keep the snooze and write its entry
// again; Delete ends it.
func (ib *Inbox) Snooze(ctx context.Context, u User, id string, until time.Time) (_ bool, err error) {
	defer ib.observe(&ctx, "Snooze", u.Scope, u.ID).end(&err)
	at := until.UTC().Truncate(time.Second)
	now := ib.now()
	switch {
	case !at.After(now):
		return false, fmt.Errorf("%w: snooze until %v, which is not after now (%v)", ErrInvalidInput, at, now)
	case at.After(now.Add(MaxTTL)):
		return false, fmt.Errorf("%w: snooze until %v, more than %v ahead", ErrInvalidInput, at, MaxTTL)
	}
	var bad error
	changed, err := ib.transition(ctx, u, id, func(rec driver.Record, s driver.State) (driver.State, bool) {
		switch {
		case rec.Message.Thread != "":
			bad = fmt.Errorf("%w: message %s is in thread %q: a thread's messages are not snoozed one by one", ErrInvalidInput, id, rec.Message.Thread)
			return s, false
		case !at.Before(rec.Message.ExpiresAt):
			bad = fmt.Errorf("%w: snooze until %v, but message %s expires at %v", ErrInvalidInput, at, id, rec.Message.ExpiresAt)
			return s, false
		case s.SnoozedUntil.Equal(at):
			return s, false
		}
		s.SnoozedUntil = at
		return s, true
	})
	if bad != nil {
		return false, bad
	}
	return changed, err
}

// Unsnooze puts a snoozed message back in u's feed now, as it was. It
// reports whether this call changed anything: false if the message was
// not snoozed, or has returned already. It costs what MarkRead does. A
// receipt left with no mark (an unread broadcast) is removed.
func (ib *Inbox) Unsnooze(ctx context.Context, u User, id string) (_ bool, err error) {
	defer ib.observe(&ctx, "Unsnooze", u.Scope, u.ID).end(&err)
	return ib.transition(ctx, u, id, func(_ driver.Record, s driver.State) (driver.State, bool) {
		if !ib.now().Before(s.SnoozedUntil) {
			return s, false
		}
		s.SnoozedUntil = time.Time{}
		return s, true
	})
}

// snoozing returns the snooze entries of u's stats st that hide a message
// from u's feed at now: snoozed until after now, of a record that has not
// expired, and for a receipt, of a broadcast of everyone's or of a group
// in (the groups u is in) that was not removed (gone, a tombstone in
// tombstones).
func snoozing(st driver.Stats, in map[string]bool, tombstones map[string]bool, now time.Time) []driver.Record {
	var out []driver.Record
	for _, e := range st.Snoozed {
		if !e.Message.Snoozed(now) || !now.Before(e.Message.ExpiresAt) ||
			e.Receipt && (!in[e.Message.Audience.Group] || tombstones[e.Message.ID]) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// asFeedMessage returns snooze entry e as the message it hides from u's
// feed counts: a direct message of u's with e's marks, for a receipt too
// (a receipt adds only u's marks; its broadcast adds what a message does).
func asFeedMessage(e driver.Record) driver.Record {
	e.Receipt, e.Message.Audience.Group = false, ""
	return e
}

// snoozedPage returns a page of the messages u snoozed, below start: u's
// snooze entries (Query.Snoozed), read with those an earlier version of
// the library kept (with u's stats), newest first, then their messages by
// key (u's direct messages; u's receipts and the broadcasts they are of).
func (ib *Inbox) snoozedPage(ctx context.Context, v *view, u User, o ListOptions, limit int, start string, binding []byte, now time.Time) ([]feedRecord, string, error) {
	shared := map[string]Partition{"": u.Scope.Public()}
	in := map[string]bool{"": true}
	for _, p := range u.Shared()[1:] {
		shared[p.Group], in[p.Group] = p, true
	}
	keep := func(e driver.Record) bool {
		m := e.Message
		return e.Message.Snoozed(now) && now.Before(m.ExpiresAt) && (!e.Receipt || in[m.Audience.Group]) &&
			(start == "" || m.ID < start) && (o.Category == "" || m.Category == o.Category) && (!o.UnreadOnly || !m.IsRead())
	}
	var entries []driver.Record
	var st driver.Stats
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		st, err = ib.store.Stats(gctx, driver.StatsQuery{Partition: u.Partition(), Now: now})
		return err
	})
	g.Go(func() error {
		q := driver.Query{Partition: u.Partition(), Snoozed: true, Before: start, Limit: limit + 1}
		for {
			res, err := ib.store.Query(gctx, q)
			if err != nil {
				return err
			}
			for _, e := range res.Records {
				if keep(e) {
					entries = append(entries, e)
				}
			}
			if len(entries) > limit || res.Next == "" {
				return nil
			}
			q.Before = res.Next
		}
	})
	if err := g.Wait(); err != nil {
		return nil, "", err
	}
	// The shared partitions' views must hold what u marked lately (see
	// catchUp): their broadcasts are looked up in them below.
	parts := append([]Partition{u.Partition()}, u.Shared()...)
	behind, err := ib.behind(ctx, v, parts, st.Recent, now)
	if err != nil {
		return nil, "", err
	}
	for i, ids := range behind {
		if err := v.renew(ctx, parts[i], ids); err != nil {
			return nil, "", err
		}
	}
	prefs, err := ib.inEffect(ctx, u.Scope, st.Preferences)
	if err != nil {
		return nil, "", err
	}
	if hidesView(prefs, o) {
		return nil, "", nil // u opted out of the view's category
	}
	for _, e := range snoozing(st, in, nil, now) {
		if keep(e) {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b driver.Record) int { return strings.Compare(b.Message.ID, a.Message.ID) })
	more := len(entries) > limit
	entries = entries[:min(len(entries), limit)]
	var keys []driver.Key
	found := map[driver.Key]driver.Record{}
	for _, e := range entries {
		keys = append(keys, driver.Key{Partition: u.Partition(), ID: e.Message.ID})
		if e.Receipt {
			k := driver.Key{Partition: shared[e.Message.Audience.Group], ID: e.Message.ID}
			b, known, err := v.lookup(ctx, k)
			switch {
			case err != nil:
				return nil, "", err
			case b != nil:
				found[k] = *b
			case !known:
				keys = append(keys, k)
			}
		}
	}
	recs, err := ib.getRecords(ctx, keys)
	if err != nil {
		return nil, "", err
	}
	for _, r := range recs {
		found[r.Key()] = r
	}
	out := make([]feedRecord, 0, len(entries))
	for _, e := range entries {
		own, ok := found[driver.Key{Partition: u.Partition(), ID: e.Message.ID}]
		if !ok {
			continue // unsnoozed and gone since the entries were read
		}
		f := feedRecord{Record: own}
		if own.Receipt {
			b, ok := found[driver.Key{Partition: shared[own.Message.Audience.Group], ID: e.Message.ID}]
			if !ok || b.Receipt || !in[own.Message.Audience.Group] {
				continue
			}
			f = feedRecord{Record: b, receipt: &own}
		}
		if visible(f, o, now) && !hides(prefs, o, f.Record) {
			out = append(out, f)
		}
	}
	markMuted(out, prefs)
	if !more {
		return out, "", nil
	}
	cursor, err := ib.encodeCursor(entries[len(entries)-1].Message.ID, binding)
	return out, cursor, err
}

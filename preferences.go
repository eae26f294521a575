package inbox

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/stak/inbox/driver"
)

// Preferences are a user's preferences in one inbox, kept in the user's
// partition. MutedGroups are the groups the user muted, MutedCategories
// the categories: their messages stay in the user's feed (List and Get
// show them with Message.Muted set; ListThreads shows a muted group's
// threads with Thread.Muted), but leave Unread and Unseen: Counts counts
// their unread in Tally.Muted instead, overall and in their category.
// A mute holds at read time, so it covers a broadcast or a group message
// stored once for everyone, and the messages stored before the change
// alike. A muted category's messages in a thread are marked muted, but
// ListThreads counts a thread whole: its counts are not kept by category.
//
// OptedOut are the categories the user opted out of: their messages
// leave her feed and her counts. List without a Thread (the feed, a
// category's view, the archived and snoozed views) leaves them out, and
// Counts takes their tallies out of every figure, the instant
// SetPreferences returns, for messages stored before or after, stored
// once or copied; opting in again gives them back as they stand. Publish
// stores no copy of a new one for her (PublishResult.OptedOut). Decided:
// a thread is a conversation, not a category's feed, so List of one
// thread and ListThreads show a thread whole, as for a muted category;
// Get reads a message by ID whatever the preferences, and marks by ID
// apply to it. A page of the feed reads past the messages stored once
// (broadcasts, group messages) of a category she opted out of, as it
// does past archived ones: a category she opted out of that fills most
// of a shared partition costs her pages reads (see docs/costs.md).
//
// MutedThreads are the threads of her direct messages (Message.Thread of
// a one-to-one chat) the user muted: as a muted group's, their messages
// stay listed, marked muted, ListThreads shows the thread with
// Thread.Muted, and their unread leave Unread and Unseen for Tally.Muted.
// Her partition counts a muted thread's messages while it is muted, so a
// thread mute costs a read of the thread when it is set (see
// SetPreferences). Decided: only threads of direct messages are muted one
// by one. A group or broadcast message is stored once for everyone, so
// one member's mute of one of its threads could not be kept at a flat
// cost: she mutes the group (a group chat is a group); a group or
// broadcast message in a thread she muted is not muted by it. Defaults
// (InboxConfig, TenantSettings) never mute a thread: a thread is one
// user's (ErrInvalidInput).
type Preferences = driver.Preferences

// MaxOptedOut is the most categories a user can opt out of (50), kept
// and read with her mutes (see MaxMutedGroups).
const MaxOptedOut = driver.MaxOptedOut

// MaxMutedCategories is the most categories a user can mute (50), kept
// and read with the muted groups (see MaxMutedGroups).
const MaxMutedCategories = driver.MaxMutedCategories

// MaxMutedThreads is the most threads of her direct messages a user can
// mute (20): her partition keeps counts for each muted thread, read with
// her counters by every Counts (on DynamoDB, on her c#* item), so they
// stay few.
const MaxMutedThreads = driver.MaxMutedThreads

// MaxMutedGroups is the most groups a user can mute (50): the muted
// groups and categories and the categories opted out of are read with
// the user's counters by every Counts, so they stay small (on DynamoDB at
// most 20 KB on the user's c#* item with 50 of each of 128 bytes, at most
// five read units more; about 0.1 KB for five keys of 20 bytes, nothing
// more).
const MaxMutedGroups = driver.MaxMutedGroups

// Preferences returns the preferences in effect for u: her own, as
// SetPreferences last set them (Own set), or, if she has none, the
// defaults of her inbox, else of her tenant (InboxConfig.Preferences,
// TenantSettings.Preferences; Own unset). It costs one strongly
// consistent read of u's total counter (u.Groups play no part), and a
// read of the config when the Inbox's config cache misses. The result is
// the caller's: changing it changes nothing else.
func (ib *Inbox) Preferences(ctx context.Context, u User) (_ Preferences, err error) {
	defer ib.observe(&ctx, "Preferences", u.Scope, u.ID).end(&err)
	if err := u.Validate(); err != nil {
		return Preferences{}, err
	}
	own, err := ib.readPreferences(ctx, u)
	if err != nil {
		return Preferences{}, err
	}
	p, err := ib.inEffect(ctx, u.Scope, own)
	return p.Clone(), err // the defaults are the cached config's: the caller's own copy
}

// readPreferences reads u's own preferences: Store.Stats of u's total
// counter, by key.
func (ib *Inbox) readPreferences(ctx context.Context, u User) (Preferences, error) {
	st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: u.Partition(), Keys: []driver.Counter{{}}})
	if err != nil {
		return Preferences{}, err
	}
	return st.Preferences, nil
}

// inEffect returns the preferences in effect for a user of scope s whose
// own are own: own if they are hers, else the defaults of s's config
// (Config.DefaultPreferences), read through the Inbox's config cache. A
// change of the defaults reaches each Inbox when its cached config
// expires (WithConfigCacheTTL); the Inbox that makes it, at once.
func (ib *Inbox) inEffect(ctx context.Context, s Scope, own Preferences) (Preferences, error) {
	if own.Own {
		return own, nil
	}
	cfg, err := ib.config(ctx, s)
	if err != nil {
		return Preferences{}, err
	}
	return own.InEffect(cfg), nil
}

// SetPreferences replaces u's own preferences with p, and reports whether
// it changed them (false if they were p already): from then on they are
// hers (Own), whatever the defaults say, until ResetPreferences. p.MutedGroups are group
// keys, in any order, each once, at most MaxMutedGroups, never everyone's
// (PublicGroup); p.MutedCategories category keys, each once, at most
// MaxMutedCategories; p.OptedOut alike, at most MaxOptedOut, none of them
// muted too; p.MutedThreads thread keys of u's direct messages, each
// once, at most MaxMutedThreads: an invalid key is ErrInvalidKey, a
// repeated key, a category both muted and opted out of or more than a
// limit ErrInvalidInput, and nothing is written. p.Own is ignored.
//
// The change is exact the instant the call returns, in every process:
// Counts, ListThreads, List and Get read the preferences with u's
// counters, in the same consistent read, whatever the shared cache holds.
// Unmuting a group, a category or a thread gives back its messages'
// unread and unseen counts as they stand (marks made while it was muted
// included). A muted group's or thread's
// messages stay in every view, so MarkAllRead, ArchiveAll and DeleteAll
// act on them as before. The change makes an EventPreferences.
//
// It costs two round trips, whatever u's feed holds: a read of u's
// preferences, then one atomic write of them on u's total counter (c#*)
// that moves its version, on condition that they are still those read
// (a concurrent change has it read again). It takes the whole set rather
// than one group to mute or unmute, so that a retry is harmless and the
// kinds of preferences to come fit the same call; a page that toggles one
// group reads Preferences, changes it and sets it.
//
// Muting a thread anew costs more, since u's partition counts a muted
// thread's messages apart: four round trips, the read of her
// preferences, a read of her counters, then the thread's counter and its
// records, in parallel, up to 500 records a page (a read that grows with
// the thread; her ledger is read too if the removal of one of them is
// pending), then the one atomic write, which also carries the thread's
// counts and applies only if no write to u's counters came between (else
// it reads again). Unmuting a thread costs the two round trips.
func (ib *Inbox) SetPreferences(ctx context.Context, u User, p Preferences) (_ bool, err error) {
	defer ib.observe(&ctx, "SetPreferences", u.Scope, u.ID).end(&err)
	if err := u.Validate(); err != nil {
		return false, err
	}
	p, err = p.Normal()
	if err != nil {
		return false, err
	}
	p.Own = true
	return ib.changePreferences(ctx, u, p)
}

// ResetPreferences drops u's own preferences, and reports whether she had
// any: from then on the defaults apply to her (see Preferences), as to a
// user who never set any. It is exact at once, as SetPreferences, and
// costs what it costs.
func (ib *Inbox) ResetPreferences(ctx context.Context, u User) (_ bool, err error) {
	defer ib.observe(&ctx, "ResetPreferences", u.Scope, u.ID).end(&err)
	if err := u.Validate(); err != nil {
		return false, err
	}
	return ib.changePreferences(ctx, u, Preferences{})
}

// changePreferences makes u's own preferences p (none of her own if
// p.Own is unset), and reports whether they changed: a read of them, then
// a preferences mark from what was read, read again if a concurrent change
// came first. A thread p mutes anew gets its muted counters, counted from
// its records (mutedCounters), in the same mark, which applies only if no
// write to u's counters came between.
func (ib *Inbox) changePreferences(ctx context.Context, u User, p Preferences) (bool, error) {
	for range markAttempts {
		cur, err := ib.readPreferences(ctx, u)
		if err != nil {
			return false, err
		}
		if cur.Equal(p) {
			return false, nil
		}
		mk := driver.Mark{Key: driver.Key{Partition: u.Partition()}, Now: ib.now(), Preferences: &driver.PreferencesChange{From: cur, To: p}}
		if newly := mk.Preferences.NewlyMuted(); len(newly) > 0 {
			st, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: u.Partition(), Now: ib.now()})
			if err != nil {
				return false, err
			}
			if !st.Preferences.Equal(cur) {
				continue // changed since: read again
			}
			counters, ok, err := ib.mutedCounters(ctx, u.Partition(), st, newly)
			if err != nil {
				return false, err
			} else if !ok {
				continue // changed since: read again
			}
			mk.Versioned, mk.Version, mk.Muted = true, st.Version, &driver.MutedReset{Threads: newly, Counters: counters}
		}
		err = ib.store.Mark(ctx, []driver.Mark{mk}, nil)
		if !errors.Is(err, driver.ErrStateChanged) {
			return err == nil, unknownOutcome(err)
		}
	}
	return false, fmt.Errorf("inbox: preferences of %s kept changing: %w", u.ID, ErrConflict)
}

// mutedCounters returns the muted counters (driver.Counter.Muted) of
// threads of partition p, a user's, as its records stand with st, its
// stats: what each record of theirs that p's counters count adds to
// them (MutedCounters, and AboveCounters above st's Fence), the records
// read from each thread's index and, for those gone whose removal is
// pending (expired, or deleted behind the library's back, with a ledger
// entry still), from their ledger entries (a thread's messages are never
// snoozed nor scheduled: no timed entry hides one). Counts takes out the
// expired ones at read time, as for the partition's own counters. It reads every
// record of the threads, and the threads' counters by key: a thread is
// muted at the cost of reading it once. Where a thread's counter counts
// more records than its index holds (a removal is pending), it reads p's
// whole ledger too, to find them. ok is false if p's counters changed
// since st was read: the caller reads again.
func (ib *Inbox) mutedCounters(ctx context.Context, p Partition, st driver.Stats, threads []string) (_ []driver.Counter, ok bool, _ error) {
	keys := make([]driver.Counter, len(threads))
	for i, t := range threads {
		keys[i] = driver.Counter{Thread: t}
	}
	// The threads' counters by key and their records, in parallel.
	var own driver.Stats
	recs := make([][]driver.Record, len(threads))
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		own, err = ib.store.Stats(gctx, driver.StatsQuery{Partition: p, Keys: keys})
		return err
	})
	for i, t := range threads {
		g.Go(func() error {
			q := driver.Query{Partition: p, Thread: t, Limit: unseenPage}
			for {
				res, err := ib.store.Query(gctx, q)
				if err != nil {
					return err
				}
				for _, r := range res.Records {
					if !r.Receipt && r.Message.Thread == t {
						recs[i] = append(recs[i], r)
					}
				}
				if q.Before = res.Next; q.Before == "" {
					return nil
				}
			}
		})
	}
	if err := g.Wait(); err != nil || own.Version != st.Version {
		return nil, false, err
	}
	published := map[string]int64{}
	for _, c := range own.Counters {
		published[c.Thread] = c.Published
	}
	var out []driver.Counter
	add := func(r driver.Record) {
		out = append(out, driver.MutedCounters(r)...)
		if r.Message.ID > st.Fence {
			for _, c := range driver.AboveCounters(r) {
				if c.Muted {
					out = append(out, c)
				}
			}
		}
	}
	have := map[string]bool{} // the ledger entries of the records read
	gone := false
	for i, t := range threads {
		n := int64(0) // the records the thread's counter counts: the library's
		for _, r := range recs[i] {
			if r.Ledgered() {
				have[r.Entry] = true
				add(r)
				n++
			}
		}
		gone = gone || n != published[t]
	}
	if !gone {
		return driver.MergeCounters(out), true, nil
	}
	// The ledger, whole: the records gone whose removal is pending, as a
	// recount finds them.
	all, err := ib.store.Stats(ctx, driver.StatsQuery{Partition: p, Now: farFuture})
	if err != nil || all.Version != st.Version {
		return nil, false, err
	}
	for _, e := range all.Expired {
		if !e.Receipt && slices.Contains(threads, e.Message.Thread) && !have[e.Entry] {
			add(e)
		}
	}
	return driver.MergeCounters(out), true, nil
}

// mutes reports whether u's preferences p mute the messages of record r
// of u's feed: a group message (in its group's partition) of a group u
// muted, a message of a category u muted, or a direct message of a
// thread u muted.
func mutes(p Preferences, r driver.Record) bool {
	return r.Partition.IsShared() && !r.Partition.IsPublic() && p.Mutes(r.Partition.Group) || p.MutesCategory(r.Message.Category) ||
		!r.Partition.IsShared() && !r.Receipt && p.MutesThread(r.Message.Thread)
}

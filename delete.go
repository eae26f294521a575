package inbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/stak/inbox/driver"
)

// Delete deletes message id from u's inbox: u's copy of a direct message
// is removed (with its ledger entry and counters, in one atomic unit, so
// the stream's later report of the removal changes nothing); a broadcast
// or group message is hidden from u alone, by a mark on u's receipt. Counts
// follow at once. It reports whether this call changed anything: false if
// the message is not, or no longer, in u's inbox (deleting twice is not an
// error). Concurrent calls move the counters once.
//
// A direct message published with a HostSystemID comes back if the publish
// is retried with that ID after the delete (the copy is gone, so the retry
// writes it again); Redact retires the ID for everyone.
func (ib *Inbox) Delete(ctx context.Context, u User, id string) (_ bool, err error) {
	defer ib.observe(&ctx, "Delete", u.Scope, u.ID).end(&err)
	changed, err := ib.transition(ctx, u, id, func(_ driver.Record, s driver.State) (driver.State, bool) {
		return driver.State{DeletedAt: ib.now()}, true
	})
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return changed, err
}

// Redaction names the message Redact removes everywhere: by ID, or by the
// HostSystemID it was published with, and where its records are.
type Redaction struct {
	// ID is the message's ID. With HostSystemID instead, the ID comes from
	// the host system ID's claim.
	ID           string
	HostSystemID string
	// Users are the recipients of a direct message, whose copies go. The
	// inbox does not keep a publish's recipient list (it would grow with
	// the audience): name them.
	Users []string
	// Group is the group of a group message, or PublicGroup for a
	// broadcast to everyone. A redaction by HostSystemID of a broadcast or
	// group message finds it in the claim.
	Group string
}

// Redact removes a message from every place it is stored: each named
// user's copy of a direct message, or a broadcast or group message once.
// Every reader's counts follow at once, including readers who had read,
// archived or deleted it: a broadcast removed before its expiry leaves a
// tombstone that takes its receipts out of the counts until they expire.
// If the message was published with a HostSystemID, the ID's claim is
// retired, so a retry of the publish is refused (ErrConflict) rather than
// delivering the message again.
//
// It returns how many records it removed; removing what is already gone is
// not an error, so a Redact can be retried. Each copy is one atomic unit
// with its counters; a failure leaves the others done and is returned.
//
// Bad input writes nothing: the input is checked as Publish checks it (a
// host system ID Publish would refuse is refused alike), and a redaction
// by host system ID is checked against the ID's claim (read first) before
// the claim is retired: naming another group than the message's, or no
// users for a direct message, is ErrInvalidInput, and a retry of the
// original publish still works.
func (ib *Inbox) Redact(ctx context.Context, s Scope, r Redaction) (_ int, err error) {
	defer ib.observe(&ctx, "Redact", s, "").end(&err)
	if err := s.Validate(); err != nil {
		return 0, err
	}
	for _, u := range r.Users {
		if err := driver.ValidateUserID(u); err != nil {
			return 0, err
		}
	}
	if r.Group != "" {
		if err := driver.ValidateGroup(r.Group); err != nil {
			return 0, err
		}
	}
	if r.ID == "" && r.HostSystemID == "" {
		return 0, fmt.Errorf("%w: a redaction names an ID or a host system ID", ErrInvalidInput)
	}
	if r.ID != "" {
		if err := driver.ValidateMessageID(r.ID); err != nil {
			return 0, err
		}
	}
	if err := driver.ValidateHostSystemID(r.HostSystemID); err != nil {
		return 0, err
	}
	if r.HostSystemID != "" {
		// Read the claim first, and check the redaction against it: a
		// refused redaction retires nothing, so that the publish's retry
		// still works.
		c, err := ib.store.ClaimHostID(ctx, driver.HostClaim{Scope: s, HostSystemID: r.HostSystemID, Now: ib.now(), Peek: true})
		if err != nil {
			return 0, err
		}
		switch {
		case c.ID == "" && r.ID == "":
			return 0, nil // no message stands for the host system ID
		case r.ID == "":
			r.ID = c.ID
		}
		if c.ID == r.ID {
			if r.Group != "" && r.Group != c.Group {
				return 0, fmt.Errorf("%w: host system id %q names a message to group %q, not %q", ErrInvalidInput, r.HostSystemID, c.Group, r.Group)
			}
			if r.Group == "" {
				r.Group = c.Group
			}
		}
	}
	if len(r.Users) == 0 && r.Group == "" {
		return 0, fmt.Errorf("%w: a redaction of a direct message names its users", ErrInvalidInput)
	}
	// Retire the claim first, so that no retry publishes the message
	// again while the copies go.
	if r.HostSystemID != "" {
		if _, err := ib.store.ClaimHostID(ctx, driver.HostClaim{Scope: s, HostSystemID: r.HostSystemID, ID: r.ID, Now: ib.now(), Retire: true}); err != nil {
			return 0, err
		}
	} else if err := ib.retireHostIDOf(ctx, s, r); err != nil {
		return 0, err
	}
	removed := 0
	if r.Group != "" {
		ok, err := ib.removeShared(ctx, driver.Key{Partition: s.Group(r.Group), ID: r.ID})
		if err != nil {
			return 0, err
		}
		if ok {
			removed++
		}
	}
	results := make([]error, len(r.Users))
	done := make([]bool, len(r.Users))
	ib.each(len(r.Users), func(i int) {
		done[i], results[i] = ib.transitionAt(ctx, s.User(r.Users[i]), r.ID, true, func(rec driver.Record, _ driver.State) (driver.State, bool) {
			return driver.State{DeletedAt: ib.now()}, !rec.Partition.IsShared() // direct copies only
		})
		if errors.Is(results[i], ErrNotFound) {
			results[i] = nil
		}
	})
	// Every copy removed counts, those after a failed one too: the
	// copies are written at once, and a failure leaves the others done.
	var first error
	for i, err := range results {
		if err != nil && first == nil {
			first = err
		}
		if done[i] {
			removed++
		}
	}
	return removed, first
}

// retireHostIDOf retires the claim of the host system ID the message r
// names was published with, if it has one: it reads the message (the
// broadcast, or the first user's copy that stands).
func (ib *Inbox) retireHostIDOf(ctx context.Context, s Scope, r Redaction) error {
	var keys []driver.Key
	if r.Group != "" {
		keys = append(keys, driver.Key{Partition: s.Group(r.Group), ID: r.ID})
	}
	for _, u := range r.Users {
		keys = append(keys, driver.Key{Partition: s.User(u).Partition(), ID: r.ID})
	}
	for len(keys) > 0 {
		n := min(len(keys), maxGetKeys)
		recs, err := ib.store.GetRecords(ctx, keys[:n])
		if err != nil {
			return err
		}
		keys = keys[n:]
		for _, rec := range recs {
			if host := rec.Message.HostSystemID; host != "" && !rec.Receipt {
				_, err := ib.store.ClaimHostID(ctx, driver.HostClaim{Scope: s, HostSystemID: host, ID: r.ID, Now: ib.now(), Retire: true})
				return err
			}
		}
	}
	return nil
}

// removeShared removes the broadcast or group message at k with its
// counters, leaving a tombstone if it has not expired; a message without
// a ledger entry (another program's) is adopted first. It reports whether
// it removed anything.
func (ib *Inbox) removeShared(ctx context.Context, k driver.Key) (bool, error) {
	for range markAttempts {
		recs, err := ib.store.GetRecords(ctx, []driver.Key{k})
		if err != nil || len(recs) == 0 {
			return false, err
		}
		rec := recs[0]
		if !rec.Ledgered() {
			as := driver.NewLedgerSK(rec.Message.ExpiresAt, rec.Message.ID)
			if err := ib.store.Repair(ctx, k.Partition, driver.Repair{Adopt: []driver.Record{rec}, AdoptAs: []string{as}}); err != nil {
				return false, err
			}
			continue
		}
		now := ib.now()
		removed, err := ib.store.ApplyRemoval(ctx, driver.Removal{Record: rec, Deltas: driver.RemovalDeltasOf(rec), Tombstone: driver.LeavesTombstone(rec, now), Delete: true, Now: now})
		return removed, unknownOutcome(err)
	}
	return false, fmt.Errorf("inbox: redacting %s: the message kept changing: %w", k.ID, ErrConflict)
}

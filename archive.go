package inbox

import (
	"context"
	"time"

	"github.com/stak/inbox/driver"
)

// Archive archives message id for u: it leaves u's feed (List shows it
// with ListOptions.Archived) and u's Total, Read, Unread and Unseen, and
// counts in Archived. It keeps its read state. For a broadcast or group
// message the mark goes on u's receipt. It reports whether this call
// changed anything (false if it was archived already); concurrent calls
// move the counters once. It costs what MarkRead does. A message that does
// not exist, has expired, or that u deleted is ErrNotFound.
func (ib *Inbox) Archive(ctx context.Context, u User, id string) (_ bool, err error) {
	defer ib.observe(&ctx, "Archive", u.Scope, u.ID).end(&err)
	return ib.transition(ctx, u, id, func(_ driver.Record, s driver.State) (driver.State, bool) {
		if !s.ArchivedAt.IsZero() {
			return s, false
		}
		s.ArchivedAt = ib.now()
		return s, true
	})
}

// Unarchive puts an archived message back in u's feed, read or unread as
// it was. It reports whether this call changed anything (false if it was
// not archived). A receipt left with no mark (an unread broadcast) is
// removed.
func (ib *Inbox) Unarchive(ctx context.Context, u User, id string) (_ bool, err error) {
	defer ib.observe(&ctx, "Unarchive", u.Scope, u.ID).end(&err)
	return ib.transition(ctx, u, id, func(_ driver.Record, s driver.State) (driver.State, bool) {
		if s.ArchivedAt.IsZero() {
			return s, false
		}
		s.ArchivedAt = time.Time{}
		return s, true
	})
}

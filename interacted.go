package inbox

import (
	"context"

	"github.com/stak/inbox/driver"
)

// MarkInteracted records that u acted on message id (clicked its action,
// say), apart from opening it: Message.InteractedAt. A user who acts on a
// message has read it, so an unread one is marked read in the same write.
// It reports whether this call changed anything: false if u had acted on
// it already. It costs what MarkRead does; concurrent and repeated calls
// move the counters once.
//
// Interactions are not counted: Counts has no figure for them, since no
// view of the feed is filtered by them and each counter would grow by a
// tally every write pays for. The mark is on the message (List and Get
// show it) and in the events (EventInteracted).
//
// A message that does not exist, has expired, is not due yet, or that u
// deleted is ErrNotFound.
func (ib *Inbox) MarkInteracted(ctx context.Context, u User, id string) (_ bool, err error) {
	defer ib.observe(&ctx, "MarkInteracted", u.Scope, u.ID).end(&err)
	return ib.transition(ctx, u, id, func(_ driver.Record, s driver.State) (driver.State, bool) {
		if !s.InteractedAt.IsZero() {
			return s, false
		}
		now := ib.now()
		s.InteractedAt = now
		if s.ReadAt.IsZero() {
			s.ReadAt = now
		}
		return s, true
	})
}

package inbox

import (
	"context"
	"fmt"
	"time"

	"github.com/stak/inbox/driver"
)

// ArchiveAll archives every unexpired message of u that List with o shows
// (its Category, Thread, UnreadOnly and UpTo filters; Limit and Cursor are
// ignored), direct messages, broadcasts and group messages alike, read or
// unread as they are, and returns how many it archived: the "clear inbox"
// button. Pass the options of the view the button is on, with UpTo set to
// the newest message it showed, and it archives exactly that view, not
// what arrived since. The archived view (o.Archived) and the snoozed one
// (o.Snoozed) are ErrInvalidInput.
// On an error it returns how many it archived before, as MarkAllRead.
//
// It works as MarkAllRead does: each page of the view, up to MaxMarkBatch
// messages, is one atomic unit of marks and counter changes (one write
// per message of a page another writer changed meanwhile), so the counts
// are exact throughout; it archives exactly what the view holds at the
// instant each message is archived, never more (a message the user
// snoozed or archived meanwhile is left as it is). Its cost grows with the messages it archives (and
// the ones a filter passes over), never with what was archived before:
// one List page and one transaction per MaxMarkBatch messages.
func (ib *Inbox) ArchiveAll(ctx context.Context, u User, o ListOptions) (_ int, err error) {
	defer ib.observe(&ctx, "ArchiveAll", u.Scope, u.ID).end(&err)
	if o.Archived {
		return 0, fmt.Errorf("%w: archiving the archived view", ErrInvalidInput)
	}
	return ib.bulk(ctx, u, o, nil, func(s driver.State, now time.Time) driver.State {
		s.ArchivedAt = now
		return s
	})
}

// DeleteAll deletes for u every unexpired message that List with o shows
// (its Category, Thread, UnreadOnly, UpTo and Archived filters; Limit and
// Cursor are ignored), as Delete does for one: u's direct messages are
// removed, u's receipts of broadcasts and group messages hide them from u
// for good. It returns how many it deleted (on an error, how many
// before, as MarkAllRead). With o.Archived it empties the
// archive (up to UpTo, if set); the snoozed view is ErrInvalidInput. As
// ArchiveAll, it deletes exactly what the
// view holds at the instant each message is deleted, never more: a
// message moved out of the view meanwhile (unarchived, say, while the
// archive is emptied) is kept.
//
// It costs what ArchiveAll costs, per message deleted: one List page and
// one transaction per MaxMarkBatch messages (another program's direct
// message costs two writes of its own: it is adopted, then deleted).
func (ib *Inbox) DeleteAll(ctx context.Context, u User, o ListOptions) (_ int, err error) {
	defer ib.observe(&ctx, "DeleteAll", u.Scope, u.ID).end(&err)
	return ib.bulk(ctx, u, o, nil, func(_ driver.State, now time.Time) driver.State {
		return driver.State{DeletedAt: now}
	})
}

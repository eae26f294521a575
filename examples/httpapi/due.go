package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/stak/inbox"
)

// dueOverlap is how far each window of the due worker reaches back before
// the previous one ended: a scheduled message that reached the scheduled
// index late (its lag is usually well under a second) is pushed by a
// later run, once.
const dueOverlap = time.Minute

// pushDue is the worker that tells the page's users when their scheduled
// messages come due, which the table's stream does not (it reports a
// message when it is stored): every interval until ctx is done, it asks
// Inbox.Due for the window since its last run, reaching dueOverlap
// further back, and pushes each delivery's event (kind "due") to push,
// once (it remembers the events it pushed for twice the overlap). A
// broadcast's or group message's event is in its shared partition, as
// the stream's event of its creation: the Hub fans it out to every
// stream, or to the group's members', the same way. A window
// that fails is asked again on the next run. On a table without the
// scheduled index it logs so and ends. In production run it in one
// process (or a Lambda function EventBridge Scheduler invokes every
// minute) and fan its events out as the stream's.
func pushDue(ctx context.Context, ib *inbox.Inbox, scope inbox.Scope, push inbox.EventHandler, interval time.Duration) {
	pushed := map[string]time.Time{} // event ID: its copy's delivery time
	last := time.Now()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		to := time.Now()
		err := pushWindow(ctx, ib, scope, last.Add(-dueOverlap), to, pushed, push)
		switch {
		case errors.Is(err, inbox.ErrUnsupported):
			slog.Warn("no push at the due time: the table has no scheduled index", "err", err)
			return
		case err != nil:
			if ctx.Err() == nil {
				slog.Warn("due worker", "err", err)
			}
			continue
		}
		last = to
		for id, at := range pushed {
			if at.Before(last.Add(-2 * dueOverlap)) {
				delete(pushed, id)
			}
		}
	}
}

// pushWindow pushes the event of every delivery of scope that came due in
// [from, to) (a copy, a broadcast or a group message) and is not in
// pushed, page by page, and notes it there.
func pushWindow(ctx context.Context, ib *inbox.Inbox, scope inbox.Scope, from, to time.Time, pushed map[string]time.Time, push inbox.EventHandler) error {
	o := inbox.ScheduledOptions{Limit: inbox.MaxPageSize}
	for {
		page, err := ib.Due(ctx, scope, from, to, o)
		if err != nil {
			return err
		}
		for _, d := range page.Deliveries {
			e := d.Event()
			if _, ok := pushed[e.ID]; ok {
				continue
			}
			if err := push(ctx, e); err != nil {
				return err
			}
			pushed[e.ID] = e.At
		}
		if o.Cursor = page.Cursor; o.Cursor == "" {
			return nil
		}
	}
}

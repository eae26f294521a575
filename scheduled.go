package inbox

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stak/inbox/driver"
)

// This file holds what an operator and a host's worker read of scheduled
// messages (Draft.DeliverAt): Scheduled, the copies not due yet, and Due,
// the copies that came due in a window, with the event a worker pushes
// for each (Delivery.Event).

// EventDue is the kind of the event a host's worker makes for a scheduled
// copy that came due (Delivery.Event): the table's stream reports a
// scheduled message when it is stored (EventCreated), never when it comes
// due, since nothing is written then. StreamHandler never makes it.
const EventDue EventKind = "due"

// Delivery is one scheduled copy of a message: the user it is for and the
// message as it was published, without the user's marks (a copy that came
// due may have been read since: Get tells).
type Delivery struct {
	// User is the recipient, in no group (Scope and ID set).
	User User
	// Message is the copy: its DeliverAt is when it comes (or came) due.
	Message Message
}

// Event returns the event a worker pushes when d comes due: of kind
// EventDue, in d's user's partition, with d's message, at its delivery
// time, and an ID that is the same for every delivery of d, so that a
// handler that drops duplicates by Event.ID drops a copy that
// overlapping windows of Due return twice.
func (d Delivery) Event() Event {
	return Event{
		ID:        "due#" + driver.ScheduledKey(d.Message.ID, d.User.ID),
		Kind:      EventDue,
		Partition: d.User.Partition(),
		Message:   d.Message,
		At:        d.Message.DeliverAt,
	}
}

// DeliveryPage is one page of Scheduled or Due.
type DeliveryPage struct {
	// Deliveries are in order of delivery time, then message ID, then
	// user: the copies of one message are together.
	Deliveries []Delivery
	// Cursor fetches the next page; "" when there are no more. A page may
	// be short, even empty, and still have one.
	Cursor string
}

// ScheduledOptions selects a page of Scheduled or Due.
type ScheduledOptions struct {
	// Limit is the most copies on the page: 1 to MaxPageSize, or 0 for
	// DefaultPageSize.
	Limit int
	// Cursor continues from a previous page's DeliveryPage.Cursor; "" starts
	// at the earliest delivery time. A cursor is valid only with the call,
	// scope (and, for Due, window) it was issued for.
	Cursor string
}

// Scheduled returns a page of the messages of inbox s that are scheduled
// and not due yet, earliest delivery first: each copy with its user, for
// an operator to see what will be delivered, and to cancel it with Redact
// (its ID and users). A copy leaves the list when it comes due, and when
// it is redacted.
//
// It reads an index of the inbox's scheduled copies (the dynamo Store's
// scheduled index, a global secondary index): one request per page, at a
// cost that grows with the copies it returns, not with the inbox's
// messages. Unlike List, it is eventually consistent: a copy published or
// redacted within the index's lag (usually under a second on DynamoDB)
// may be missing from it or still in it. On a table without that index
// it returns an error matching ErrUnsupported; a bad scope, limit or
// cursor is ErrInvalidKey, ErrInvalidInput or ErrInvalidCursor.
func (ib *Inbox) Scheduled(ctx context.Context, s Scope, o ScheduledOptions) (_ DeliveryPage, err error) {
	defer ib.observe(&ctx, "Scheduled", s, "").end(&err)
	now := ib.now()
	binding := []byte("scheduled\x00" + s.Tenant + "\x00" + s.Inbox)
	keep := func(m Message) bool { return !m.Due(now) && now.Before(m.ExpiresAt) }
	return ib.deliveries(ctx, s, o, binding, idFloor(now.Add(time.Second)), "", now, keep)
}

// Due returns a page of the scheduled copies of inbox s whose delivery
// time is in [from, to) and has come (DeliverAt at or before now), each
// with its user: what a host pushes to the users when their scheduled
// messages come due, which the table's stream does not tell (it reports
// a message when it is stored). A copy that was redacted, deleted by its
// user, or has expired is not returned; one that was read since it came
// due is (without its marks).
//
// It is meant for a worker that runs every minute or so (a ticker in a
// long-running process, or a Lambda function that EventBridge Scheduler
// invokes): each run asks for the window since the last run, pages
// through it, and pushes each copy (Delivery.Event). Like Scheduled, it
// reads an eventually consistent index: a copy shows in it once DynamoDB
// has propagated the copy's write to the index, usually well under a
// second after Publish returned, so a copy scheduled at least a few
// seconds ahead is there when it comes due, and one scheduled less than
// the index's lag ahead (or written while the index was throttled, when
// the lag can reach minutes) may show late. So that none is missed, let
// each window start some minutes before the last one ended (from =
// lastTo - overlap) and drop the copies already pushed, by message ID and
// user (Delivery.Event's ID): a copy is then pushed once, within the run
// after it came due (or after it reached the index, if later). A to after
// now is served up to now: the rest of the window comes due later.
//
// from and to must be set, from before to, from not after now and not
// more than MaxTTL before it (no copy lives longer than MaxTTL after it
// came due); else ErrInvalidInput. Each page is one request; see
// Scheduled for its cost and errors.
func (ib *Inbox) Due(ctx context.Context, s Scope, from, to time.Time, o ScheduledOptions) (_ DeliveryPage, err error) {
	defer ib.observe(&ctx, "Due", s, "").end(&err)
	now := ib.now()
	switch {
	case from.IsZero() || to.IsZero():
		return DeliveryPage{}, fmt.Errorf("%w: due window [%v, %v) without a start or an end", ErrInvalidInput, from, to)
	case !from.Before(to):
		return DeliveryPage{}, fmt.Errorf("%w: due window [%v, %v) is empty or reversed", ErrInvalidInput, from, to)
	case !from.Before(now.Add(time.Second)): // now is truncated to the second
		return DeliveryPage{}, fmt.Errorf("%w: due window [%v, %v) starts after now (%v): nothing in it has come due (Scheduled lists what has not)", ErrInvalidInput, from, to, now)
	case from.Before(now.Add(-MaxTTL)):
		return DeliveryPage{}, fmt.Errorf("%w: due window [%v, %v) starts more than %v before now: no copy lives that long after it came due", ErrInvalidInput, from, to, MaxTTL)
	}
	lo, hi := ceilSecond(from), ceilSecond(to)
	binding := []byte("due\x00" + s.Tenant + "\x00" + s.Inbox + "\x00" + strconv.FormatInt(lo.Unix(), 10) + "\x00" + strconv.FormatInt(hi.Unix(), 10))
	if hi.After(now) {
		hi = now.Add(time.Second) // due by now: DeliverAt at or before now
	}
	keep := func(m Message) bool {
		return m.Due(now) && !m.DeliverAt.Before(from) && m.DeliverAt.Before(to) && now.Before(m.ExpiresAt)
	}
	return ib.deliveries(ctx, s, o, binding, idFloor(lo), idFloor(hi), now, keep)
}

// deliveries returns a page of the scheduled copies of s whose positions
// (driver.ScheduledKey) lie above after and below before ("" for no
// bound), and past the cursor of o (bound to binding), that keep keeps:
// one Store.Query of limit+1 copies.
func (ib *Inbox) deliveries(ctx context.Context, s Scope, o ScheduledOptions, binding []byte, after, before string, now time.Time, keep func(Message) bool) (DeliveryPage, error) {
	if err := s.Validate(); err != nil {
		return DeliveryPage{}, err
	}
	if o.Limit < 0 || o.Limit > MaxPageSize {
		return DeliveryPage{}, fmt.Errorf("%w: limit %d is not between 0 and %d", ErrInvalidInput, o.Limit, MaxPageSize)
	}
	limit := o.Limit
	if limit == 0 {
		limit = DefaultPageSize
	}
	if o.Cursor != "" {
		pos, err := ib.decodePosition(o.Cursor, binding)
		if err != nil {
			return DeliveryPage{}, err
		}
		after = max(after, pos)
	}
	if before != "" && after >= before {
		return DeliveryPage{}, nil // nothing left in the window
	}
	res, err := ib.store.Query(ctx, driver.Query{
		Partition: Partition{Tenant: s.Tenant, Inbox: s.Inbox}, Scheduled: true,
		After: after, Before: before, Limit: limit + 1, Now: now,
	})
	if err != nil {
		return DeliveryPage{}, err
	}
	page := DeliveryPage{Deliveries: make([]Delivery, 0, min(limit, len(res.Records)))}
	next := res.Next
	for _, r := range res.Records {
		if r.Receipt || r.Partition.IsShared() || !keep(r.Message) {
			continue
		}
		if len(page.Deliveries) == limit {
			// One more than the page holds: the next page starts after
			// the page's last copy.
			last := page.Deliveries[limit-1]
			next = driver.ScheduledKey(last.Message.ID, last.User.ID)
			break
		}
		page.Deliveries = append(page.Deliveries, Delivery{User: s.User(r.Partition.User), Message: r.Message})
	}
	if next != "" {
		if page.Cursor, err = ib.encodePosition(next, binding); err != nil {
			return DeliveryPage{}, err
		}
	}
	return page, nil
}

// idFloor returns the least ULID of time t: a bound below every ID minted
// at t or later and above every ID minted before (a bare ID sorts below
// every driver.ScheduledKey of it).
func idFloor(t time.Time) string {
	var u ulid.ULID
	_ = u.SetTime(ulid.Timestamp(t)) // fails only beyond the year 10889
	return u.String()
}

// ceilSecond returns t rounded up to a whole second: a scheduled copy's
// delivery time, a whole second, is at or after t when it is at or after
// ceilSecond(t).
func ceilSecond(t time.Time) time.Time {
	if s := t.Truncate(time.Second); !s.Equal(t) {
		return s.Add(time.Second)
	}
	return t
}

// A position cursor (of Scheduled and Due) is base64url (no padding) of: a
// version byte, the 16-byte ULID and the user of the copy the next page
// starts after, and 16 bytes of HMAC-SHA256 over them and what the cursor
// is bound to (the call, the scope and the window).
const positionCursorVersion = 2

// encodePosition returns the cursor of the page after position pos (a
// driver.ScheduledKey). A position that is not one (an item some other
// tool wrote) is ErrInvalidKey.
func (ib *Inbox) encodePosition(pos string, binding []byte) (string, error) {
	id, user, err := driver.ParseScheduledKey(pos)
	if err != nil {
		return "", err
	}
	u := ulid.MustParseStrict(id)
	body := append(append([]byte{positionCursorVersion}, u[:]...), user...)
	return base64.RawURLEncoding.EncodeToString(append(body, ib.cursorMAC(body, binding)...)), nil
}

// decodePosition returns the position a cursor starts after. A malformed,
// tampered or foreign cursor is ErrInvalidCursor.
func (ib *Inbox) decodePosition(c string, binding []byte) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(raw) < 1+16+1+cursorMACLen || raw[0] != positionCursorVersion {
		return "", fmt.Errorf("%w: malformed", ErrInvalidCursor)
	}
	body := raw[:len(raw)-cursorMACLen]
	if !hmac.Equal(raw[len(body):], ib.cursorMAC(body, binding)) {
		return "", fmt.Errorf("%w: not issued for this call, scope and window, or altered", ErrInvalidCursor)
	}
	var id ulid.ULID
	copy(id[:], body[1:17])
	user := string(body[17:])
	if driver.ValidateUserID(user) != nil {
		return "", fmt.Errorf("%w: malformed", ErrInvalidCursor)
	}
	return driver.ScheduledKey(id.String(), user), nil
}

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
// messages (Draft.DeliverAt): Scheduled, the deliveries not due yet, and
// Due, those that came due in a window, with the event a worker pushes
// for each (Delivery.Event).

// EventDue is the kind of the event a host's worker makes for a scheduled
// message that came due (Delivery.Event): the table's stream reports a
// scheduled message when it is stored (EventCreated), never when it comes
// due, since nothing is written then. StreamHandler never makes it.
const EventDue EventKind = "due"

// Delivery is one scheduled delivery: a message as it was published,
// without a user's marks (one that came due may have been read since:
// Get tells), and the partition it is stored in, which says to whom it
// goes, as Event.Partition does.
type Delivery struct {
	// Partition is where the message is stored: a user's (User set) for
	// that user's copy of a message published to users, or a shared one
	// (Group set: PublicGroup for a broadcast to everyone, else the
	// group) for a broadcast or group message, stored and delivered once
	// for its whole audience.
	Partition Partition
	// Message is what is delivered: its DeliverAt is when it comes (or
	// came) due.
	Message Message
}

// Event returns the event a worker pushes when d comes due: of kind
// EventDue, in d's partition (a user's, or for a broadcast or group
// message the shared one, which concerns its whole audience, as the
// stream's EventCreated of it does), with d's message, at its delivery
// time, and an ID that is the same for every delivery of d, so that a
// handler that drops duplicates by Event.ID drops one that overlapping
// windows of Due return twice.
func (d Delivery) Event() Event {
	return Event{
		ID:        "due#" + d.position(),
		Kind:      EventDue,
		Partition: d.Partition,
		Message:   d.Message,
		At:        d.Message.DeliverAt,
	}
}

// position returns d's position in the order of Scheduled and Due.
func (d Delivery) position() string { return driver.ScheduledKey(d.Message.ID, d.Partition) }

// DeliveryPage is one page of Scheduled or Due.
type DeliveryPage struct {
	// Deliveries are in order of delivery time, then message ID, then
	// user: the copies of one message are together. A broadcast or group
	// message is one delivery, whatever its audience.
	Deliveries []Delivery
	// Cursor fetches the next page; "" when there are no more. A page may
	// be short, even empty, and still have one.
	Cursor string
}

// ScheduledOptions selects a page of Scheduled or Due.
type ScheduledOptions struct {
	// Limit is the most deliveries on the page: 1 to MaxPageSize, or 0
	// for DefaultPageSize.
	Limit int
	// Cursor continues from a previous page's DeliveryPage.Cursor; "" starts
	// at the earliest delivery time. A cursor is valid only with the call,
	// scope (and, for Due, window) it was issued for.
	Cursor string
}

// Scheduled returns a page of the messages of inbox s that are scheduled
// and not due yet, earliest delivery first, for an operator to see what
// will be delivered, and to cancel it with Redact: each copy of a message
// to users with its user (Redact with its ID and users), and each
// broadcast or group message once, with its shared partition (Redact
// with its ID and group). A delivery leaves the list when it comes due,
// and when it is redacted.
//
// It reads an index of the inbox's scheduled messages (the dynamo
// Store's scheduled index, a global secondary index): one request per
// page, at a cost that grows with the deliveries it returns, not with
// the inbox's messages or a broadcast's audience. Unlike List, it is
// eventually consistent: a message published or redacted within the
// index's lag (usually under a second on DynamoDB) may be missing from
// it or still in it. On a table without that index
// it returns an error matching ErrUnsupported; a bad scope, limit or
// cursor is ErrInvalidKey, ErrInvalidInput or ErrInvalidCursor.
func (ib *Inbox) Scheduled(ctx context.Context, s Scope, o ScheduledOptions) (_ DeliveryPage, err error) {
	defer ib.observe(&ctx, "Scheduled", s, "").end(&err)
	now := ib.now()
	binding := []byte("scheduled\x00" + s.Tenant + "\x00" + s.Inbox)
	keep := func(m Message) bool { return !m.Due(now) && now.Before(m.ExpiresAt) }
	return ib.deliveries(ctx, s, o, binding, idFloor(now.Add(time.Second)), "", now, keep)
}

// Due returns a page of the scheduled deliveries of inbox s whose
// delivery time is in [from, to) and has come (DeliverAt at or before
// now): each copy of a message to users with its user, and each
// broadcast or group message once, with its shared partition. It is
// what a host pushes when scheduled messages come due, which the table's
// stream does not tell (it reports a message when it is stored). A
// delivery that was redacted, a copy deleted by its user, or one that
// has expired is not returned; one that was read since it came due is
// (without its marks).
//
// It is meant for a worker that runs every minute or so (a ticker in a
// long-running process, or a Lambda function that EventBridge Scheduler
// invokes): each run asks for the window since the last run, pages
// through it, and pushes each delivery's event (Delivery.Event: a
// broadcast's or group message's is in its shared partition, to fan out
// to its audience as the stream's EventCreated of it). Like Scheduled,
// it reads an eventually consistent index: a message shows in it once
// DynamoDB has propagated its write to the index, usually well under a
// second after the publish returned, so one scheduled at least a few
// seconds ahead is there when it comes due, and one scheduled less than
// the index's lag ahead (or written while the index was throttled, when
// the lag can reach minutes) may show late. So that none is missed, let
// each window start some minutes before the last one ended (from =
// lastTo - overlap) and drop the deliveries already pushed, by
// Delivery.Event's ID: each is then pushed once, within the run after it
// came due (or after it reached the index, if later). A to after now is
// served up to now: the rest of the window comes due later.
//
// from and to must be set, from before to, from not after now and not
// more than MaxTTL before it (no message lives longer than MaxTTL after
// it came due); else ErrInvalidInput. Each page is one request; see
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

// deliveries returns a page of the scheduled deliveries of s whose
// positions (driver.ScheduledKey) lie above after and below before (""
// for no bound), and past the cursor of o (bound to binding), that keep
// keeps: one Store.Query of limit+1 records.
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
		if r.Receipt || !keep(r.Message) {
			continue
		}
		if len(page.Deliveries) == limit {
			// One more than the page holds: the next page starts after
			// the page's last delivery.
			next = page.Deliveries[limit-1].position()
			break
		}
		page.Deliveries = append(page.Deliveries, Delivery{Partition: r.Partition, Message: r.Message})
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

// ceilSecond returns t rounded up to a whole second: a scheduled message's
// delivery time, a whole second, is at or after t when it is at or after
// ceilSecond(t).
func ceilSecond(t time.Time) time.Time {
	if s := t.Truncate(time.Second); !s.Equal(t) {
		return s.Add(time.Second)
	}
	return t
}

// A position cursor (of Scheduled and Due) is base64url (no padding) of: a
// version byte, the 16-byte ULID of the delivery the next page starts
// after, the rest of its position after the ID and its '#' (the user of a
// copy, or '#' and the group of a shared record: see
// driver.ScheduledKey), and 16 bytes of HMAC-SHA256 over them and what
// the cursor is bound to (the call, the scope and the window). A user
// holds no '#', so a cursor of a copy is laid out as before shared
// records were listed, and one issued then still reads the same.
const positionCursorVersion = 2

// encodePosition returns the cursor of the page after position pos (a
// driver.ScheduledKey). A position that is not one (an item some other
// tool wrote) is ErrInvalidKey.
func (ib *Inbox) encodePosition(pos string, binding []byte) (string, error) {
	id, _, err := driver.ParseScheduledKey(pos)
	if err != nil {
		return "", err
	}
	u := ulid.MustParseStrict(id)
	body := append(append([]byte{positionCursorVersion}, u[:]...), pos[len(id)+1:]...)
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
	pos := id.String() + "#" + string(body[17:])
	if _, _, err := driver.ParseScheduledKey(pos); err != nil {
		return "", fmt.Errorf("%w: malformed", ErrInvalidCursor)
	}
	return pos, nil
}

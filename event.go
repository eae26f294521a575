package inbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stak/inbox/driver"
)

// EventKind says what changed in an inbox.
type EventKind string

// The kinds of Event.
const (
	// EventCreated: a message was stored. A direct message has one event
	// per recipient (each copy is a write of its own), in the user's
	// partition; a broadcast or group message has one event for its whole
	// audience, in the shared partition, which the host fans out. The
	// sender's copy of her own message in a thread is created read
	// (Message.ReadAt set); her read of her group message comes as
	// EventRead (see Draft.Sender).
	EventCreated EventKind = "created"
	// EventAggregated: an aggregated message joined its item (see
	// Draft.Aggregate), in the user's partition: Message is the item's new
	// newest message, with its Count, Senders and Members; the message it
	// took in, Members[0], leaves with an EventDeleted of its own, before
	// or after this one. A page replaces the item's row (its Thread is the
	// key) and moves it to the top. An aggregated message that starts an
	// item comes as EventCreated, with Count 1.
	EventAggregated EventKind = "aggregated"
	// EventRead: a user read a message, in the user's partition: a direct
	// copy marked read, or a read receipt of a broadcast or group message.
	EventRead EventKind = "read"
	// EventArchived and EventUnarchived: a user archived or unarchived a
	// message, in the user's partition. An unread broadcast's unarchive
	// (and unsnooze) removes the user's receipt: its removal makes the
	// event only if the broadcast stands, unexpired, when the handler
	// meets it (it reads it, 1 read unit, by key), so that Recount's
	// removal of the receipts of a broadcast removed before its expiry
	// makes none: the broadcast's EventRemoved spoke for every reader. So
	// an unarchive or unsnooze the handler meets after the broadcast's
	// removal (the stream lagged) makes none either.
	EventArchived   EventKind = "archived"
	EventUnarchived EventKind = "unarchived"
	// EventDeleted: a message left one user's inbox (Inbox.Delete, or a
	// Redact of a direct message, or any other delete of a user's copy):
	// the copy was removed, or the broadcast hidden for the user.
	EventDeleted EventKind = "deleted"
	// EventInteracted: a user acted on a message (Inbox.MarkInteracted),
	// in the user's partition.
	EventInteracted EventKind = "interacted"
	// EventSnoozed: a user snoozed a message (Inbox.Snooze), or moved its
	// return time; Message.SnoozedUntil is when it returns. No event
	// comes when it returns by itself: nothing runs at that instant.
	EventSnoozed EventKind = "snoozed"
	// EventUnsnoozed: a user put a snoozed message back before its time
	// (Inbox.Unsnooze).
	EventUnsnoozed EventKind = "unsnoozed"
	// EventSeen: a user marked their feed seen (Inbox.MarkSeen); Event.Seen
	// is the new watermark. Message is zero.
	EventSeen EventKind = "seen"
	// EventPreferences: a user changed their preferences
	// (Inbox.SetPreferences, Inbox.ResetPreferences), in the user's
	// partition; Event.Preferences holds them as set: her own (Own set),
	// or none with Own unset after a reset, when her inbox's defaults
	// apply (Inbox.Preferences returns them). Message is zero. A page that shows the user's
	// badge calls Counts again: the muted groups' unread left it, or came
	// back.
	EventPreferences EventKind = "preferences"
	// EventThreadRead: a user marked her direct messages of a thread, or
	// a group chat (Event.Group), read up to a message (Inbox.MarkAllRead
	// of a thread, by a read position: see Inbox.MarkAllRead), in her
	// partition; Event.Thread is the thread and Event.ReadUpTo the
	// exclusive bound of the IDs it reads. Message is zero. The EventRead
	// of each of her direct messages comes later, as the stream handler
	// writes the position out (which makes no EventThreadRead); a group
	// chat's position is never written out. A page shows the second tick
	// of every message of the thread below ReadUpTo at once.
	EventThreadRead EventKind = "thread-read"
	// EventRemoved: a broadcast or group message was deleted for its whole
	// audience (Redact, or any delete other than DynamoDB's TTL).
	EventRemoved EventKind = "removed"
	// EventExpired: DynamoDB's TTL deleted an expired message. The
	// message left List and Counts at its expiry; this event comes when
	// the item goes, minutes to days later.
	EventExpired EventKind = "expired"
)

// Event is one change in an inbox, derived from the table's stream by
// StreamHandler and delivered to the EventHandler set with WithEvents.
//
// Events are delivered at least once: Lambda redelivers a batch's failed
// records and those after them, and a record's events come again with the
// same ID, so a host can drop duplicates. An event does not carry the
// user's unread count: the counts of a user span the user's partition and
// every shared one the user sees, which a stream record does not hold, so a
// host that pushes a badge calls Counts (one round trip) for the user, or
// for each connected member of a group.
type Event struct {
	// ID is stable across redeliveries: the stream record's event ID and
	// the kind.
	ID   string
	Kind EventKind
	// Partition is where the change happened: a user's partition (a direct
	// message, or any read) or a shared one (a broadcast, Group
	// PublicGroup, or a group message) for the whole audience.
	Partition Partition
	// Message is the message as the item holds it: after the change for
	// created, read, archived and unarchived, before it for deleted,
	// removed and expired. A mark on a broadcast or group message carries
	// what the user's receipt holds: ID, Category, Thread, the marks,
	// ExpiresAt and Audience.Group. So a read of a thread's message, in the
	// reader's partition, tells a host which chat's pages to push the
	// second tick to (see Inbox.ReadBy).
	Message Message
	// At is when the change was made, to the second, as the stream
	// records it.
	At time.Time
	// Seen is the new seen watermark of an EventSeen: every message ID up
	// to it counts as seen.
	Seen string
	// Thread and ReadUpTo are, of an EventThreadRead, the thread and the
	// exclusive bound of the message IDs its read position reads; Group
	// is the group of a group chat's thread ("" for her direct messages).
	Thread   string
	Group    string
	ReadUpTo string
	// Preferences are the user's new preferences, of an EventPreferences.
	Preferences Preferences
}

// EventHandler receives the events StreamHandler derives. An error fails
// the stream record the event came from (see StreamHandler): its counter
// accounting, already applied, is not repeated when the record comes again,
// but its events are.
type EventHandler func(ctx context.Context, e Event) error

// WithEvents makes StreamHandler derive change events from the table's
// stream and pass them to h, after each record's accounting, in the order
// of the batch's records. The stream must carry new and old images
// (NEW_AND_OLD_IMAGES), and the event source mapping's filter must let
// INSERT and MODIFY records of kinds UM, SN, UP and RP through (see
// examples/template.yaml; without UP, no EventPreferences comes; without
// RP, no EventThreadRead, and read positions are written out only by a
// MarkAllRead past driver.MaxPositionSteps moves of one, or past the most
// threads with a position a user holds: until then, unread-only pages
// pass the messages they cover).
// nil turns events off.
func WithEvents(h EventHandler) Option { return func(ib *Inbox) { ib.events = h } }

// changeOf reads stream record r into a driver.Change: its kind UM images
// as records, or the new image of a kind SN item (a seen watermark) or of
// a kind UP item (a user's preferences), or a kind RP item (a user's read
// position in a thread: its new image, or, removed, the position dropped;
// read with or without strict, since the handler writes positions out
// whether events are on or not). Images of other kinds are left out. A REMOVE needs its old image (a
// stream configured KEYS_ONLY or NEW_IMAGE cannot be accounted); with
// strict (events on), an INSERT or MODIFY needs the images events are made
// of, and an image that does not decode fails the record. Without strict,
// an INSERT or MODIFY is read only for its new image's adoption, which
// skips what does not decode.
func changeOf(r events.DynamoDBEventRecord, strict bool) (driver.Change, error) {
	c := driver.Change{ID: r.EventID, Op: driver.ChangeOp(r.EventName), At: r.Change.ApproximateCreationDateTime.UTC(), ByTTL: byTTL(r)}
	switch c.Op {
	case driver.ChangeRemove:
		if len(r.Change.OldImage) == 0 {
			return driver.Change{}, fmt.Errorf("%w: REMOVE record %q without an old image: the table's stream must include old images", ErrInvalidInput, r.EventID)
		}
	case driver.ChangeInsert, driver.ChangeModify:
		if str(r.Change.NewImage, "kind") == "RD" && isReaderPosition(r.Change.Keys) {
			// A member's read position in a group's thread, in the
			// group's partition (see driver.Reader.Position).
			p, t, g, pos, err := readerPositionImage(r.Change.Keys, r.Change.NewImage)
			if err != nil {
				if !strict {
					return c, nil
				}
				return driver.Change{}, fmt.Errorf("stream record %q: %w", r.EventID, err)
			}
			c.Position, c.PositionOf, c.PositionThread, c.PositionGroup = &pos, p, t, g
			return c, nil
		}
		if str(r.Change.NewImage, "kind") == "RP" {
			p, t, g, pos, err := positionImage(r.Change.Keys, r.Change.NewImage)
			if err != nil {
				if !strict {
					return c, nil // not one: nothing to adopt either
				}
				return driver.Change{}, fmt.Errorf("stream record %q: %w", r.EventID, err)
			}
			c.Position, c.PositionOf, c.PositionThread, c.PositionGroup = &pos, p, t, g
			return c, nil
		}
		if !strict {
			if str(r.Change.NewImage, "kind") == "UM" {
				if rec, err := newImageRecord(r.Change.Keys, r.Change.NewImage); err == nil {
					c.New = &rec
				}
			}
			return c, nil
		}
		if len(r.Change.NewImage) == 0 || c.Op == driver.ChangeModify && len(r.Change.OldImage) == 0 {
			return driver.Change{}, fmt.Errorf("%w: %s record %q without new and old images: events need a NEW_AND_OLD_IMAGES stream", ErrInvalidInput, r.EventName, r.EventID)
		}
		if str(r.Change.NewImage, "kind") == "SN" {
			p, w, err := seenImage(r.Change.Keys, r.Change.NewImage)
			if err != nil {
				return driver.Change{}, fmt.Errorf("stream record %q: %w", r.EventID, err)
			}
			c.Seen, c.SeenOf = w, p
			return c, nil
		}
		if str(r.Change.NewImage, "kind") == "UP" {
			p, prefs, err := prefsImage(r.Change.Keys, r.Change.NewImage)
			if err != nil {
				return driver.Change{}, fmt.Errorf("stream record %q: %w", r.EventID, err)
			}
			c.Preferences, c.PreferencesOf = &prefs, p
			return c, nil
		}
	default:
		return driver.Change{}, nil // ignored
	}
	if c.Op == driver.ChangeRemove && str(r.Change.OldImage, "kind") == "RP" {
		// The position dropped.
		p, t, g, _, err := positionImage(r.Change.Keys, r.Change.OldImage)
		if err != nil {
			return driver.Change{}, fmt.Errorf("stream record %q: %w", r.EventID, err)
		}
		c.Position, c.PositionOf, c.PositionThread, c.PositionGroup = &driver.Position{}, p, t, g
		return c, nil
	}
	if c.Op == driver.ChangeRemove && str(r.Change.OldImage, "kind") == "TM" {
		p, id, sk, err := timerImage(r.Change.Keys, r.Change.OldImage)
		if err != nil {
			return driver.Change{}, fmt.Errorf("stream record %q: %w", r.EventID, err)
		}
		c.Timer, c.TimedKey = &driver.Record{Partition: p, Message: driver.Message{ID: id}}, sk
		return c, nil
	}
	for _, img := range []struct {
		from map[string]events.DynamoDBAttributeValue
		to   **driver.Record
		read func(keys, img map[string]events.DynamoDBAttributeValue) (driver.Record, error)
	}{{r.Change.OldImage, &c.Old, imageRecord}, {r.Change.NewImage, &c.New, newImageRecord}} {
		if str(img.from, "kind") != "UM" {
			continue
		}
		rec, err := img.read(r.Change.Keys, img.from)
		if err != nil {
			return driver.Change{}, fmt.Errorf("stream record %q: %w", r.EventID, err)
		}
		*img.to = &rec
	}
	return c, nil
}

// eventsOf returns the events of change c: one per mark that changed, or
// the message's creation or removal, or a new seen watermark.
func eventsOf(c driver.Change) []Event {
	var out []Event
	emit := func(kind EventKind, rec *driver.Record) {
		e := Event{ID: c.ID + "/" + string(kind), Kind: kind, At: c.At}
		if rec != nil {
			e.Partition, e.Message = rec.Partition, rec.Message
		}
		out = append(out, e)
	}
	switch c.Op {
	case driver.ChangeInsert, driver.ChangeModify:
		if c.Seen != "" {
			emit(EventSeen, nil)
			out[0].Partition, out[0].Seen = c.SeenOf, c.Seen
			return out
		}
		if c.Position != nil {
			if !c.Position.Done.IsZero() {
				return nil // its records marked read: their own events
			}
			emit(EventThreadRead, nil)
			out[0].Partition, out[0].Thread, out[0].Group, out[0].ReadUpTo = c.PositionOf, c.PositionThread, c.PositionGroup, c.Position.Bound
			return out
		}
		if c.Preferences != nil {
			emit(EventPreferences, nil)
			out[0].Partition, out[0].Preferences = c.PreferencesOf, c.Preferences.Clone()
			return out
		}
		if c.New == nil {
			return nil
		}
		if c.Old == nil && !c.New.Receipt {
			kind := EventCreated
			if c.New.Message.Count > 1 {
				kind = EventAggregated
			}
			emit(kind, c.New)
			return out
		}
		var before driver.State
		if c.Old != nil {
			before = c.Old.State()
		}
		after := c.New.State()
		if before.ReadAt.IsZero() && !after.ReadAt.IsZero() {
			emit(EventRead, c.New)
		}
		if before.InteractedAt.IsZero() && !after.InteractedAt.IsZero() {
			emit(EventInteracted, c.New)
		}
		switch {
		case before.ArchivedAt.IsZero() && !after.ArchivedAt.IsZero():
			emit(EventArchived, c.New)
		case !before.ArchivedAt.IsZero() && after.ArchivedAt.IsZero() && after.DeletedAt.IsZero():
			emit(EventUnarchived, c.New)
		}
		if before.DeletedAt.IsZero() && !after.DeletedAt.IsZero() {
			emit(EventDeleted, c.New)
		}
		switch {
		case !after.SnoozedUntil.IsZero() && !after.SnoozedUntil.Equal(before.SnoozedUntil):
			emit(EventSnoozed, c.New)
		case !before.SnoozedUntil.IsZero() && after.SnoozedUntil.IsZero() && after.DeletedAt.IsZero():
			emit(EventUnsnoozed, c.New)
		}
	case driver.ChangeRemove:
		switch {
		case c.Old == nil || c.ByTTL:
			if c.Old != nil && !c.Old.Receipt {
				emit(EventExpired, c.Old)
			}
			// A receipt expires with its message, whose own event speaks
			// for every reader.
		case c.Old.Receipt:
			// The user unarchived an unread broadcast: the receipt had no
			// other mark. (Recount's removal of the receipts of a removed
			// broadcast looks the same: applyChange drops its events.)
			st := c.Old.State()
			switch {
			case !st.ArchivedAt.IsZero() && st.ReadAt.IsZero() && st.DeletedAt.IsZero():
				emit(EventUnarchived, c.Old)
			case c.At.Before(st.SnoozedUntil) && st.Same(driver.State{}):
				// The user unsnoozed an unread broadcast before its time.
				emit(EventUnsnoozed, c.Old)
			}
		case c.Old.Partition.IsShared():
			emit(EventRemoved, c.Old)
		default:
			emit(EventDeleted, c.Old)
		}
	}
	return out
}

// timerImage reads a kind TM item (a timed entry's timer, removed at the
// entry's time): its partition, from the record's keys, the ID of the
// record whose entry it is, and the entry's key (its sort key without
// driver.TimerPrefix). Attributes that name another partition fail it.
func timerImage(keys, img map[string]events.DynamoDBAttributeValue) (Partition, string, string, error) {
	if len(keys) != 2 {
		return Partition{}, "", "", fmt.Errorf("%w: stream record keys %v: want a partition and a sort key", ErrInvalidInput, keys)
	}
	var pk, sk string
	for _, v := range keys {
		if v.DataType() != events.DataTypeString {
			return Partition{}, "", "", fmt.Errorf("%w: stream record key of type %v", ErrInvalidInput, v.DataType())
		}
		if k, ok := strings.CutPrefix(v.String(), driver.TimerPrefix); ok {
			sk = k
		} else {
			pk = v.String()
		}
	}
	p, err := driver.ParsePartitionKey(pk)
	if err != nil {
		return Partition{}, "", "", err
	}
	_, entry, _, err := driver.ParseTimedKey(sk, time.Time{})
	if err != nil {
		return Partition{}, "", "", err
	}
	_, id, err := driver.ParseLedgerSK(entry)
	if err != nil {
		return Partition{}, "", "", err
	}
	if t, i, u := str(img, "tenant_key"), str(img, "inbox_key"), str(img, "uid"); t != p.Tenant || i != p.Inbox || u != p.User+p.Group {
		return Partition{}, "", "", fmt.Errorf("%w: timer %s of %s names tenant %q, inbox %q, uid %q", ErrInvalidInput, sk, p.PK(), t, i, u)
	}
	return p, id, sk, nil
}

// seenImage reads a kind SN item (a user's seen watermark): the user's
// partition, from the record's keys, and the watermark.
func seenImage(keys, img map[string]events.DynamoDBAttributeValue) (Partition, string, error) {
	if len(keys) != 2 {
		return Partition{}, "", fmt.Errorf("%w: stream record keys %v: want a partition and a sort key", ErrInvalidInput, keys)
	}
	var pk string
	for _, v := range keys {
		if v.DataType() != events.DataTypeString {
			return Partition{}, "", fmt.Errorf("%w: stream record key of type %v", ErrInvalidInput, v.DataType())
		}
		if v.String() != driver.SeenSK {
			pk = v.String()
		}
	}
	p, err := driver.ParsePartitionKey(pk)
	if err != nil {
		return Partition{}, "", err
	}
	w := str(img, "seen")
	if p.IsShared() || w == "" || len(w) > 128 {
		return Partition{}, "", fmt.Errorf("%w: seen watermark %q of %s", ErrInvalidInput, w, p.PK())
	}
	return p, w, nil
}

// prefsImage reads a kind UP item (a user's preferences, as the dynamo
// Store writes them with every change, at driver.PreferencesSK): the
// user's partition, from the record's keys, and the preferences.
// Attributes that name another partition, or preferences a Store cannot
// keep, fail it.
func prefsImage(keys, img map[string]events.DynamoDBAttributeValue) (Partition, Preferences, error) {
	if len(keys) != 2 {
		return Partition{}, Preferences{}, fmt.Errorf("%w: stream record keys %v: want a partition and a sort key", ErrInvalidInput, keys)
	}
	var pk, sk string
	for _, v := range keys {
		if v.DataType() != events.DataTypeString {
			return Partition{}, Preferences{}, fmt.Errorf("%w: stream record key of type %v", ErrInvalidInput, v.DataType())
		}
		if v.String() == driver.PreferencesSK {
			sk = v.String()
		} else {
			pk = v.String()
		}
	}
	p, err := driver.ParsePartitionKey(pk)
	if err == nil && (sk == "" || p.IsShared()) {
		err = fmt.Errorf("%w: preferences item %q of %q", ErrInvalidInput, sk, pk)
	}
	if err != nil {
		return Partition{}, Preferences{}, err
	}
	if t, i, u := str(img, "tenant_key"), str(img, "inbox_key"), str(img, "uid"); t != p.Tenant || i != p.Inbox || u != p.User {
		return Partition{}, Preferences{}, fmt.Errorf("%w: preferences of %s name tenant %q, inbox %q, uid %q", ErrInvalidInput, p.PK(), t, i, u)
	}
	if v, ok := img["muted"]; ok && v.DataType() != events.DataTypeString {
		// Another program's value: not preferences, as the Stores read
		// c#*'s (a set holding an opt-out's token is none of them).
		return Partition{}, Preferences{}, fmt.Errorf("%w: preferences of %s of type %v, not a string", ErrInvalidInput, p.PK(), v.DataType())
	}
	prefs, err := driver.DecodePreferences(str(img, "muted"))
	if err != nil {
		return Partition{}, Preferences{}, fmt.Errorf("preferences of %s: %w", p.PK(), err)
	}
	_, prefs.Own = img["muted"] // her own, even if none; else the defaults
	return p, prefs, nil
}

// positionImage reads a kind RP item (a user's read position in a thread,
// as the dynamo Store writes it with every move, at driver.PositionSK):
// the user's partition, from the record's keys, the thread, and the
// position. Attributes that name another partition or thread, or a
// position a Store cannot keep, fail it.
func positionImage(keys, img map[string]events.DynamoDBAttributeValue) (Partition, string, string, driver.Position, error) {
	if len(keys) != 2 {
		return Partition{}, "", "", driver.Position{}, fmt.Errorf("%w: stream record keys %v: want a partition and a sort key", ErrInvalidInput, keys)
	}
	var pk, t string
	found := false
	for _, v := range keys {
		if v.DataType() != events.DataTypeString {
			return Partition{}, "", "", driver.Position{}, fmt.Errorf("%w: stream record key of type %v", ErrInvalidInput, v.DataType())
		}
		if rest, ok := strings.CutPrefix(v.String(), driver.PositionPrefix); ok && !found {
			t, found = rest, true
		} else {
			pk = v.String()
		}
	}
	t, g, _ := strings.Cut(t, "#") // a group's thread: rp#<thread>#<group>
	p, err := driver.ParsePartitionKey(pk)
	if err == nil && (!found || p.IsShared() || g != "" && (driver.ValidateGroup(g) != nil || g == driver.PublicGroup)) {
		err = fmt.Errorf("%w: read position item of thread %q of %q", ErrInvalidInput, t, pk)
	}
	if err != nil {
		return Partition{}, "", "", driver.Position{}, err
	}
	if tk, i, u, th, gr := str(img, "tenant_key"), str(img, "inbox_key"), str(img, "uid"), str(img, "thread"), str(img, "group"); tk != p.Tenant || i != p.Inbox || u != p.User || th != t || gr != g {
		return Partition{}, "", "", driver.Position{}, fmt.Errorf("%w: read position of %s, thread %q, names tenant %q, inbox %q, uid %q, thread %q", ErrInvalidInput, p.PK(), t, tk, i, u, th)
	}
	pos, err := positionOf(img, p, g, t)
	if err != nil {
		return Partition{}, "", "", driver.Position{}, err
	}
	return p, t, g, pos, nil
}

// positionOf decodes the read position an item's image img holds (bound,
// at, earlier, done), of thread t of group g's messages ("" for her
// direct ones) in user partition p: one a Store can keep, else
// ErrInvalidInput.
func positionOf(img map[string]events.DynamoDBAttributeValue, p Partition, g, t string) (driver.Position, error) {
	bad := func(what string) (driver.Position, error) {
		return driver.Position{}, fmt.Errorf("%w: read position of %s, thread %q, group %q: %s", ErrInvalidInput, p.PK(), t, g, what)
	}
	at, err := strconv.ParseInt(str(img, "at"), 10, 64)
	if err != nil {
		return bad(fmt.Sprintf("time %q", str(img, "at")))
	}
	pos := driver.Position{Bound: str(img, "bound"), At: time.Unix(at, 0).UTC(), Earlier: str(img, "earlier")}
	if d := str(img, "done"); d != "" {
		done, err := strconv.ParseInt(d, 10, 64)
		if err != nil {
			return bad(fmt.Sprintf("done %q", d))
		}
		pos.Done = time.Unix(done, 0).UTC()
	}
	if err := driver.ValidateCounter(driver.Counter{Partition: p, Group: g, Thread: t, Covered: true, Position: pos}); err != nil || pos.IsZero() {
		return bad(fmt.Sprintf("%+v", pos))
	}
	return pos, nil
}

// isReaderPosition reports whether keys are those of a member's position
// item in a group's partition (driver.ReaderPositionSK).
func isReaderPosition(keys map[string]events.DynamoDBAttributeValue) bool {
	for _, v := range keys {
		if v.DataType() == events.DataTypeString && strings.HasPrefix(v.String(), driver.ReaderPrefix) && strings.Contains(v.String(), "#~#") {
			return true
		}
	}
	return false
}

// readerPositionImage decodes a member's position item in a group's
// partition (driver.ReaderPositionSK, kind RD): her partition, the
// thread, the group and the position. Anything else is ErrInvalidInput.
func readerPositionImage(keys, img map[string]events.DynamoDBAttributeValue) (Partition, string, string, driver.Position, error) {
	bad := func(what string) (Partition, string, string, driver.Position, error) {
		return Partition{}, "", "", driver.Position{}, fmt.Errorf("%w: read position item: %s", ErrInvalidInput, what)
	}
	if len(keys) != 2 {
		return bad(fmt.Sprintf("keys %v", keys))
	}
	var pk, sk string
	for _, v := range keys {
		if v.DataType() != events.DataTypeString {
			return bad("a key that is not a string")
		}
		if strings.HasPrefix(v.String(), driver.ReaderPrefix) && sk == "" {
			sk = v.String()
		} else {
			pk = v.String()
		}
	}
	gp, err := driver.ParsePartitionKey(pk)
	if err != nil || !gp.IsShared() || gp.IsPublic() {
		return bad(fmt.Sprintf("partition %q", pk))
	}
	t, user := str(img, "thread"), str(img, "user")
	if driver.ValidateThread(t) != nil || t == "" || driver.ValidateUserID(user) != nil || sk != driver.ReaderPositionSK(t, user) {
		return bad(fmt.Sprintf("%q of thread %q, user %q", sk, t, user))
	}
	p := gp.Scope().User(user).Partition()
	pos, err := positionOf(img, p, gp.Group, t)
	if err != nil {
		return Partition{}, "", "", driver.Position{}, err
	}
	return p, t, gp.Group, pos, nil
}

// byTTL reports whether DynamoDB's TTL made r's deletion.
func byTTL(r events.DynamoDBEventRecord) bool {
	id := r.UserIdentity
	return id != nil && id.Type == "Service" && id.PrincipalID == "dynamodb.amazonaws.com"
}

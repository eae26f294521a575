package inbox

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// EventKind says what changed in an inbox.
type EventKind string

// The kinds of Event.
const (
	// EventCreated: a message was stored. A direct message has one event
	// per recipient (each copy is a write of its own), in the user's
	// partition; a broadcast or group message has one event for its whole
	// audience, in the shared partition, which the host fans out.
	EventCreated EventKind = "created"
	// EventRead: a user read a message, in the user's partition: a direct
	// copy marked read, or a read receipt of a broadcast or group message.
	EventRead EventKind = "read"
	// EventRemoved: a message was deleted (before its expiry, or by
	// anything other than DynamoDB's TTL): a user's direct copy, or a
	// broadcast or group message for its whole audience.
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
	// created and read, before it for removed and expired. A read of a
	// broadcast or group message carries what its receipt holds: ID,
	// Category, ReadAt, ExpiresAt and Audience.Group.
	Message Message
	// At is when the change was made, to the second, as the stream
	// records it.
	At time.Time
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
// INSERT and MODIFY records of kind UM through (see examples/template.yaml).
// nil turns events off.
func WithEvents(h EventHandler) Option { return func(ib *Inbox) { ib.events = h } }

// streamChange is a stream record's change of a kind UM item: the record
// before and after (nil where the image is missing, or not of kind UM).
type streamChange struct {
	old, new *Record
}

// changeOf reads the kind UM images of r. Images of other kinds are nil.
func changeOf(r events.DynamoDBEventRecord) (streamChange, error) {
	var c streamChange
	for _, img := range []struct {
		from map[string]events.DynamoDBAttributeValue
		to   **Record
	}{{r.Change.OldImage, &c.old}, {r.Change.NewImage, &c.new}} {
		if str(img.from, "kind") != "UM" {
			continue
		}
		rec, err := imageRecord(r.Change.Keys, img.from)
		if err != nil {
			return streamChange{}, fmt.Errorf("stream record %q: %w", r.EventID, err)
		}
		*img.to = &rec
	}
	return c, nil
}

// eventsOf returns the events of stream record r, whose change is c.
func eventsOf(r events.DynamoDBEventRecord, c streamChange) []Event {
	ev := Event{At: r.Change.ApproximateCreationDateTime.UTC()}
	switch events.DynamoDBOperationType(r.EventName) {
	case events.DynamoDBOperationTypeInsert, events.DynamoDBOperationTypeModify:
		if c.new == nil {
			return nil
		}
		ev.Partition, ev.Message = c.new.Partition, c.new.Message
		switch {
		case c.new.Message.IsRead() && (c.old == nil || !c.old.Message.IsRead()):
			ev.Kind = EventRead
		case c.old == nil && !c.new.Receipt:
			ev.Kind = EventCreated
		default:
			return nil
		}
	case events.DynamoDBOperationTypeRemove:
		if c.old == nil || c.old.Receipt {
			// A receipt goes with its message, whose own event speaks
			// for every reader.
			return nil
		}
		ev.Partition, ev.Message, ev.Kind = c.old.Partition, c.old.Message, EventRemoved
		if byTTL(r) {
			ev.Kind = EventExpired
		}
	default:
		return nil
	}
	ev.ID = r.EventID + "/" + string(ev.Kind)
	return []Event{ev}
}

// byTTL reports whether DynamoDB's TTL made r's deletion.
func byTTL(r events.DynamoDBEventRecord) bool {
	id := r.UserIdentity
	return id != nil && id.Type == "Service" && id.PrincipalID == "dynamodb.amazonaws.com"
}

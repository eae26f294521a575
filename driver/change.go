package driver

import "time"

// ChangeOp says what a Change did to an item, in DynamoDB Streams' words.
type ChangeOp string

// The operations of a Change.
const (
	ChangeInsert ChangeOp = "INSERT" // the item was created
	ChangeModify ChangeOp = "MODIFY" // the item was changed
	ChangeRemove ChangeOp = "REMOVE" // the item was deleted
)

// Change is one write to a Store's records or to a user's seen watermark,
// as a table's stream with new and old images reports it: the store-neutral
// form of a stream record, which inbox.Inbox.HandleChange accounts and
// turns into events. The dynamo package's stream records are read into
// it; memstore feeds its own (memstore.WithChanges).
//
// A Store that feeds changes feeds every write of a record (a message, a
// copy or a receipt), of a seen watermark, of a user's preferences and
// of a read position, each item's changes in the order they were made,
// at least once.
type Change struct {
	// ID names the change, the same each time it is delivered: a
	// removal's ID for Removal.EventID.
	ID string
	Op ChangeOp
	// At is when the change was made, to the second.
	At time.Time
	// ByTTL is set on a removal that expiry made (DynamoDB's TTL), rather
	// than a delete.
	ByTTL bool
	// Old and New are the record before and after the change; nil where
	// there is none (Old of an insert, New of a removal) or the item is
	// not a record.
	Old, New *Record
	// Seen is the new seen watermark of user partition SeenOf, for a
	// change to it (Old and New are then nil).
	Seen   string
	SeenOf Partition
	// Preferences are the new preferences of user partition
	// PreferencesOf, for a change to them (a preferences mark; Old and
	// New are then nil).
	Preferences   *Preferences
	PreferencesOf Partition
	// Position is the new read position (zero: dropped) of thread
	// PositionThread of user partition PositionOf (of group PositionGroup's
	// messages, "" for her direct messages), for a cover mark (Mark.Cover;
	// Old and New are then nil).
	Position       *Position
	PositionOf     Partition
	PositionThread string
	PositionGroup  string
	// Timer is, for the removal of a timed entry's timer (see TimerSK),
	// the record whose entry it is, by its key alone (Partition and
	// Message.ID set): the entry's time has come, and the handler folds it
	// (see Fold). Old and New are then nil.
	Timer *Record
	// TimedKey is, with Timer, the key of the timed entry the timer was
	// set for.
	TimedKey string
}

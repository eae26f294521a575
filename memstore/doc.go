// Package memstore is an in-memory driver.Store for unit tests of code that
// uses an inbox.Inbox: no DynamoDB, no network, deterministic with a fake
// clock (see WithClock).
//
// It keeps the production store's behaviour where a test can see it. Each
// method is one atomic unit with the same conditions and errors as the
// DynamoDB store, and values are deep-copied in and out, so a caller can
// never change stored state through a Message.Body map or a config it
// passed or got back.
//
// Expiry works as in production, but promptly: at the start of every
// method call (and on Sweep), every record whose ExpiresAt is not after the
// clock's time is deleted, as DynamoDB's TTL would, and its removal is
// accounted as the stream handler accounts DynamoDB's (driver.RemovalFor,
// applied with ApplyRemoval's own logic): at once, or, with WithStreamLag,
// when Deliver is called, as behind a lagging stream (handed to an Inbox's
// HandleChange with HandleRemovalsWith, as DynamoDB's to the
// StreamHandler). Counts are exact
// either way, as in production; the raw counters fall when the removal is
// accounted. Delete removes a record as a DynamoDB DeleteItem would, with
// the same accounting. Expired host-system-ID claims, removal markers and
// tombstones are dropped; ledger entries never expire.
//
// Like the DynamoDB store it checks every record, mark and counter change
// it writes with driver.ValidateRecord, ValidateMark and ValidateDeltas, so
// it refuses exactly the bodies, sizes and changes DynamoDB refuses. With
// WithStreamLag it is a storetest.Harness.
//
// With WithChanges it feeds its changes as a table's stream with new and
// old images does (driver.Change): DeliverChanges hands them to
// inbox.Inbox.HandleChange, and the Inbox's EventHandler gets the events
// StreamHandler would derive from DynamoDB's stream, so that a unit test
// of a service's push, or a demo, sees production's events without AWS.
//
// A Store is safe for concurrent use by multiple goroutines: one mutex
// guards all of its state.
package memstore

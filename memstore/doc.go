// Package memstore is an in-memory inbox.Store for unit tests of code that
// uses an inbox.Inbox: no DynamoDB, no network, deterministic with a fake
// clock (see WithClock).
//
// It keeps the production store's behaviour where a test can see it. Each
// method is one atomic unit with the same conditions and errors as the
// DynamoDB store, and values are deep-copied in and out, so a caller can
// never change stored state through a Message.Body map or a config it
// passed or got back.
//
// Expiry is accounted as in production, but promptly: at the start of every
// method call (and on Sweep), every record whose ExpiresAt is not after the
// clock's time is deleted and inbox.RemovalDeltas is applied to its
// counters, the same accounting the stream handler applies to DynamoDB's
// TTL deletions. DynamoDB deletes expired items late, up to days after
// they expire, so in production Counts fall later than here; List hides
// expired messages in both. Expired host-system-ID claims and removal
// markers are dropped without accounting. Delete removes a record as a
// DynamoDB DeleteItem would, with the same accounting.
//
// A Store is safe for concurrent use by multiple goroutines: one mutex
// guards all of its state.
package memstore

package inbox

import (
	"context"
	"time"
)

// Store persists an Inbox's records. It holds no logic of its own: the Inbox
// validates input, computes IDs, TTLs and counter changes, merges feeds and
// accounts removals, and a Store only carries out each method below as one
// atomic unit (on DynamoDB, one request or one transaction).
//
// Implementations must be safe for concurrent use. The storetest package is
// the conformance suite every Store must pass. The dynamo package is the
// production Store and the memstore package an in-memory one for tests.
//
// Counters are created at zero the first time a change touches them. Times
// are stored with one-second precision (epoch seconds on DynamoDB); the
// Inbox truncates every time it writes, so a Store returns what it was given.
type Store interface {
	// PutMessage creates rec, a message or broadcast (never a receipt), and
	// adds deltas to their counters, all or nothing. In this and every other
	// method deltas name each counter at most once. If a record with rec's
	// key already exists it returns an error matching ErrExists and changes
	// nothing. A retry of a PutMessage that succeeded (e.g. after a lost
	// response) must not apply twice.
	PutMessage(ctx context.Context, rec Record, deltas []Counter) error

	// GetRecords returns the records that exist at keys, expired or not, in
	// one round trip, in no particular order; missing keys are left out.
	// Reads are strongly consistent. At most 100 distinct keys.
	GetRecords(ctx context.Context, keys []Key) ([]Record, error)

	// Query returns records (messages, broadcasts and receipts) of one
	// partition in descending ID order, see Query. Counters and other
	// non-message items are never returned.
	Query(ctx context.Context, q Query) (QueryResult, error)

	// MarkRead applies every mark and adds deltas to their counters, all or
	// nothing, in one atomic unit. Callers pass at most MaxMarkBatch marks.
	//
	// For a mark with Receipt nil, the direct message at Key must exist,
	// have no ReadAt and expire after Now; its ReadAt is set. For a mark with
	// a Receipt, no record may exist at Key, and the broadcast with Key.ID in
	// Key.Partition's public partition must exist and expire after Now; a
	// receipt record is created at Key.
	//
	// If a condition fails nothing is applied and the error matches
	// ErrAlreadyRead (the message is already read, or the receipt exists) or
	// ErrNotFound (the message or broadcast is missing or expired). With
	// several marks the error may name either reason.
	MarkRead(ctx context.Context, marks []Mark, deltas []Counter) error

	// Counters returns every stats record of partition p in one round trip
	// (no records: an empty slice).
	Counters(ctx context.Context, p Partition) ([]Counter, error)

	// ApplyRemoval records that removal r.ID happened and adds r.Deltas to
	// their counters, all or nothing, unless r.ID was recorded before: then
	// it returns false and changes nothing. A removal ID is unique to one
	// removed record, so a store may keep its record of r.ID in
	// r.Partition; it may forget it after r.ExpiresAt.
	ApplyRemoval(ctx context.Context, r Removal) (applied bool, err error)

	// ResetCounters replaces every stats record of partition p with
	// counters (all of which are in p), deleting those not listed. It is the
	// repair path and need not be atomic with concurrent writes to p.
	ResetCounters(ctx context.Context, p Partition, counters []Counter) error

	// ClaimHostID returns the message ID claimed for c.HostSystemID in
	// c.Scope: c.ID if this call made the claim, or the ID of an earlier
	// claim that expires after c.Now (an expired one is replaced). The claim
	// may be forgotten after c.ExpiresAt.
	ClaimHostID(ctx context.Context, c HostClaim) (id string, err error)

	// Config returns the tenant settings and inbox config of s in one round
	// trip; a missing record leaves its field nil.
	Config(ctx context.Context, s Scope) (Config, error)

	// PutTenantSettings creates or replaces a tenant's settings.
	PutTenantSettings(ctx context.Context, tenant string, ts TenantSettings) error

	// PutInboxConfig creates or replaces an inbox's config.
	PutInboxConfig(ctx context.Context, s Scope, ic InboxConfig) error
}

// MaxMarkBatch is the most marks an Inbox passes to one Store.MarkRead, so
// that marks, conditions and counters fit in one DynamoDB transaction
// (100 items).
const MaxMarkBatch = 25

// Query selects records of one partition for Store.Query.
type Query struct {
	Partition Partition
	// Before is an exclusive upper bound on IDs; "" starts at the newest.
	Before string
	// Limit is the most records the store evaluates (before filtering), at
	// least 1. A store may evaluate fewer and return Next.
	Limit int
	// Category keeps only records of this category; "" keeps all.
	Category string
	// UnreadOnly drops messages that have ReadAt. Receipts are kept: the
	// Inbox needs them to know which broadcasts are read.
	UnreadOnly bool
	// Now drops records that expire at or before Now; zero keeps all.
	Now time.Time
}

// QueryResult is one page of Store.Query.
type QueryResult struct {
	// Records matched the query, in descending ID order.
	Records []Record
	// Next is the Before of the following page: the ID of the last record
	// evaluated, which may be lower than the last one returned when filters
	// dropped records. "" means no records remain below; a non-empty Next
	// may lead to an empty page.
	Next string
}

// Mark is one change of Store.MarkRead: a direct message to mark read, or a
// receipt to create for a broadcast.
type Mark struct {
	// Key is the direct message, or where the receipt goes: the user's
	// partition and the broadcast's ID.
	Key Key
	// ReadAt is the time to record.
	ReadAt time.Time
	// Now is the time the message or broadcast must expire after.
	Now time.Time
	// Receipt is nil for a direct message.
	Receipt *Receipt
}

// Receipt holds what a read receipt copies from its broadcast.
type Receipt struct {
	Category  string
	ExpiresAt time.Time
}

// Removal is the accounting of one removed record for Store.ApplyRemoval.
type Removal struct {
	// ID identifies the removal, e.g. a stream record's event ID; at most
	// 128 bytes.
	ID string
	// Partition is the removed record's partition, where the store may keep
	// its note of ID.
	Partition Partition
	// Deltas are the counter changes (negative).
	Deltas []Counter
	// ExpiresAt is when the note of ID may be forgotten.
	ExpiresAt time.Time
}

// HostClaim is the claim of a host system ID for Store.ClaimHostID.
type HostClaim struct {
	Scope        Scope
	HostSystemID string
	ID           string
	ExpiresAt    time.Time
	// Now is the time an earlier claim must expire after to stand.
	Now time.Time
}

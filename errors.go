package inbox

import (
	"errors"

	"github.com/stak/inbox/driver"
)

// Sentinel errors. Every error the package returns for bad input or a failed
// condition wraps one of these, so callers match them with errors.Is. They
// are the driver package's, so an error a Store returns matches them too.
var (
	// ErrInvalidKey reports a tenant, inbox, user, group, category or message key
	// that is empty, too long, contains '#', '*', '?' or a control character,
	// or uses a reserved name such as "$public" for a user.
	ErrInvalidKey = driver.ErrInvalidKey
	// ErrInvalidTTL reports a duration that is not a positive whole number
	// followed by one of d, h, m or s (for example "30d").
	ErrInvalidTTL = driver.ErrInvalidTTL
	// ErrInvalidCursor reports a cursor that was tampered with, is malformed,
	// or was issued for another user, inbox or filter.
	ErrInvalidCursor = driver.ErrInvalidCursor
	// ErrInvalidInput reports any other argument the call cannot accept, such
	// as a body that is not JSON-compatible or a negative page size.
	ErrInvalidInput = driver.ErrInvalidInput
	// ErrTooLarge reports a message whose item would exceed DynamoDB's
	// 400 KB item limit (MaxItemSize).
	ErrTooLarge = driver.ErrTooLarge
	// ErrNotFound reports a message that does not exist, or has expired.
	ErrNotFound = driver.ErrNotFound
	// ErrConflict reports a write that contradicts what is stored: a
	// HostSystemID reused for a message with other content or audience, or
	// a Recount overtaken by concurrent writes to the counters too often.
	ErrConflict = driver.ErrConflict
	// ErrThrottled reports a call the store refused for lack of capacity
	// (DynamoDB's throttling) after its client's retries: back off and try
	// again.
	ErrThrottled = driver.ErrThrottled
	// ErrUnsupported reports a call the store cannot serve as deployed:
	// Scheduled or Due on a table created without the scheduled index
	// (dynamo.WithScheduledIndex("")).
	ErrUnsupported = driver.ErrUnsupported
)

// ErrOutcomeUnknown reports a write that may or may not have been applied:
// ctx was cancelled or its deadline passed while the write was in flight,
// or the store failed in a way that does not say (a network or internal
// error). Such a write may still be applied after the call returns. Retry
// with the same Draft.HostSystemID, which stores the message once. A
// *PublishError matches it when some recipient's outcome is unknown
// (PublishResult.Unknown); Broadcast and BroadcastGroup wrap it. A
// change of marks (MarkRead, Archive, Delete, a bulk action's batch,
// MarkSeen, SetPreferences, ...) and Redact's removals wrap it alike: the change reported as not made
// (false, or a count of the batches before) may have been made; calling
// again is safe, as a change already made changes nothing. Stores do not
// return it.
var ErrOutcomeUnknown = errors.New("inbox: outcome unknown")

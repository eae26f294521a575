package driver

import "errors"

// Sentinel errors. Every error the package returns for bad input or a failed
// condition wraps one of these, so callers match them with errors.Is.
var (
	// ErrInvalidKey reports a tenant, inbox, user, group, category or message key
	// that is empty, too long, contains '#', '*', '?' or a control character,
	// or uses a reserved name such as "$public" for a user.
	ErrInvalidKey = errors.New("inbox: invalid key")
	// ErrInvalidTTL reports a duration that is not a positive whole number
	// followed by one of d, h, m or s (for example "30d").
	ErrInvalidTTL = errors.New("inbox: invalid ttl")
	// ErrInvalidCursor reports a cursor that was tampered with, is malformed,
	// or was issued for another user, inbox or filter.
	ErrInvalidCursor = errors.New("inbox: invalid cursor")
	// ErrInvalidInput reports any other argument the call cannot accept, such
	// as a body that is not JSON-compatible or a negative page size.
	ErrInvalidInput = errors.New("inbox: invalid input")
	// ErrTooLarge reports a message whose item would exceed DynamoDB's
	// 400 KB item limit.
	ErrTooLarge = errors.New("inbox: message too large")
	// ErrNotFound reports a message that does not exist, or has expired.
	ErrNotFound = errors.New("inbox: not found")
	// ErrExists is returned by Store.PutMessage when a record with the same
	// key already exists.
	ErrExists = errors.New("inbox: already exists")
	// ErrOptedOut is returned by Store.PutMessage when the record is a
	// user's copy of a message of a category the user opted out of
	// (Preferences.OptedOut): nothing was written.
	ErrOptedOut = errors.New("inbox: opted out")
	// ErrStateChanged is returned by Store.Mark when a record's marks are
	// not the mark's From (another writer changed them first), or a
	// watermark is not below the mark's. The Inbox reads again and
	// retries, or reports that nothing changed.
	ErrStateChanged = errors.New("inbox: state changed")
	// ErrConflict reports a write that contradicts what is stored: a
	// HostSystemID reused for a message with other content or audience, or
	// a Store.Repair overtaken by a concurrent change to the counters.
	ErrConflict = errors.New("inbox: conflict")
	// ErrThrottled reports a request the backend refused for lack of
	// capacity (DynamoDB's throttling, a transaction cancelled by it, or a
	// batch whose items stayed unprocessed) after the retries its client
	// makes. Trying again later may succeed.
	ErrThrottled = errors.New("inbox: throttled")
	// ErrUnsupported reports a call the store cannot serve as deployed: a
	// scheduled-messages query (Query.Scheduled) on a dynamo Store whose
	// table has no scheduled index, say. It is the deployment's fault,
	// not the caller's input.
	ErrUnsupported = errors.New("inbox: not supported by the store")
)

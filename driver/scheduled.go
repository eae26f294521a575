package driver

import (
	"fmt"
	"strings"
)

// This file holds what a Store needs for the scheduled-messages query
// (Query.Scheduled): the index key of a scheduled copy, and the checks of
// such a query.

// ScheduledPK returns the key of scope s in the dynamo Store's scheduled
// index: t#<tenant>S#<inbox>. Every scheduled direct message of the
// inbox (a copy in one user's partition, Message.DeliverAt set) carries
// it, so that one Query lists them. It begins like the inbox's partition
// keys, t#<tenant>, so that a policy on dynamodb:LeadingKeys written from
// the tenant key covers it with "t#<tenant>S#*".
func ScheduledPK(s Scope) string { return "t#" + s.Tenant + "S#" + s.Inbox }

// ScheduledKey returns the position of user's copy of scheduled message
// id in the order of a scheduled query (and the sort key of its index
// entry): <id>#<user>. IDs are minted at the delivery time and have one
// length, so positions sort by delivery time, then ID, then user. A bare
// message ID sorts below every position of that ID, and above every
// position of a smaller one: it is a bound between delivery times.
func ScheduledKey(id, user string) string { return id + "#" + user }

// ParseScheduledKey parses a position made by ScheduledKey into its
// message ID and user. Anything else is ErrInvalidKey.
func ParseScheduledKey(k string) (id, user string, err error) {
	id, user, ok := strings.Cut(k, "#")
	if !ok || ValidateMessageID(id) != nil || ValidateUserID(user) != nil {
		return "", "", fmt.Errorf("%w: scheduled position %q", ErrInvalidKey, k)
	}
	return id, user, nil
}

// validScheduledBound reports whether b can bound a scheduled query: "",
// a message ID or a ScheduledKey.
func validScheduledBound(b string) bool {
	if b == "" || ValidateMessageID(b) == nil {
		return true
	}
	_, _, err := ParseScheduledKey(b)
	return err == nil
}

// validateScheduledQuery checks a Query with Scheduled (see
// Query.Scheduled): a partition that names a scope alone, no other
// filter, bounds that are IDs or positions, After below Before (DynamoDB
// refuses a key range whose ends are reversed).
func validateScheduledQuery(q Query) error {
	bad := func(what string) error {
		return fmt.Errorf("%w: scheduled query of %s/%s: %s", ErrInvalidInput, q.Partition.Tenant, q.Partition.Inbox, what)
	}
	switch {
	case q.Partition.User != "" || q.Partition.Group != "":
		return bad("a partition that names a user or a group, not a scope alone")
	case q.Partition.Scope().Validate() != nil:
		return q.Partition.Scope().Validate()
	case q.Category != "" || q.Thread != "" || q.UnreadOnly || q.Archived != AnyArchived || q.Unseen:
		return bad("with other filters")
	case !validScheduledBound(q.After) || !validScheduledBound(q.Before):
		return bad(fmt.Sprintf("bounds %q and %q are not message IDs or positions", q.After, q.Before))
	case q.After != "" && q.Before != "" && q.After >= q.Before:
		return bad(fmt.Sprintf("After %q is not below Before %q", q.After, q.Before))
	}
	return nil
}

// InScheduledIndex reports whether rec is a scheduled copy that a
// scheduled query lists: a message (not a receipt) with DeliverAt, in a
// user's partition.
func InScheduledIndex(rec Record) bool {
	return !rec.Receipt && !rec.Partition.IsShared() && !rec.Message.DeliverAt.IsZero()
}

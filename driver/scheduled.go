package driver

import (
	"fmt"
	"strings"
)

// This file holds what a Store needs for the scheduled-messages query
// (Query.Scheduled): the index key of a scheduled record, and the checks
// of such a query.

// ScheduledPK returns the key of scope s in the dynamo Store's scheduled
// index: t#<tenant>S#<inbox>. Every scheduled message of the inbox
// (Message.DeliverAt set: each copy of a direct message, in its user's
// partition, and a broadcast or group message, once, in its shared
// partition) carries it, so that one Query lists them. It begins like
// the inbox's partition keys, t#<tenant>, so that a policy on
// dynamodb:LeadingKeys written from the tenant key covers it with
// "t#<tenant>S#*".
func ScheduledPK(s Scope) string { return "t#" + s.Tenant + "S#" + s.Inbox }

// ScheduledKey returns the position of the scheduled message id stored in
// partition p in the order of a scheduled query (and the sort key of its
// index entry): <id>#<user> for a user's copy, <id>##<group> for a
// broadcast (PublicGroup) or a group message, stored once in its shared
// partition. Only p's User or Group counts. IDs are minted at the
// delivery time and have one length, and users and groups hold no '#',
// so positions sort by delivery time, then ID, and one ID's positions
// lie together, none of them another's prefix. A bare message ID sorts
// below every position of that ID, and above every position of a smaller
// one: it is a bound between delivery times.
func ScheduledKey(id string, p Partition) string {
	if p.IsShared() {
		return id + "##" + p.Group
	}
	return id + "#" + p.User
}

// ParseScheduledKey parses a position made by ScheduledKey into its
// message ID and the partition it names: User set for a user's copy,
// Group for a shared record (Tenant and Inbox unset: a position lies in
// one inbox's index). Anything else is ErrInvalidKey.
func ParseScheduledKey(k string) (id string, p Partition, err error) {
	id, rest, ok := strings.Cut(k, "#")
	if g, shared := strings.CutPrefix(rest, "#"); shared {
		p.Group = g
	} else {
		p.User = rest
	}
	switch {
	case !ok || ValidateMessageID(id) != nil:
	case p.Group != "" && ValidateGroup(p.Group) == nil, p.Group == "" && ValidateUserID(p.User) == nil:
		return id, p, nil
	}
	return "", Partition{}, fmt.Errorf("%w: scheduled position %q", ErrInvalidKey, k)
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

// InScheduledIndex reports whether rec is a scheduled record that a
// scheduled query lists: a message (not a receipt) with DeliverAt, a
// user's copy or a broadcast or group message in its shared partition.
func InScheduledIndex(rec Record) bool {
	return !rec.Receipt && !rec.Message.DeliverAt.IsZero()
}

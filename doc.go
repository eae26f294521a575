// Package inbox gives a service a per-user notification inbox on DynamoDB,
// after the Stak single-table design.
//
// An Inbox holds the logic and a Store persists it: the dynamo package is
// the production Store, memstore an in-memory one for unit tests, and
// storetest the conformance suite any Store must pass.
//
//	ib := inbox.New(store)
//	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
//	ib.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{Title: "Disk full"})
//	ib.Broadcast(ctx, scope, inbox.Draft{Title: "Maintenance at 22:00"})
//	page, _ := ib.List(ctx, scope.User("ann"), inbox.ListOptions{})
//	ib.MarkRead(ctx, scope.User("ann"), page.Messages[0].ID)
//	counts, _ := ib.Counts(ctx, scope.User("ann"))
//
// Every method takes ctx first and validates its input before it writes:
// bad input returns an error wrapping one of the Err* sentinels (match with
// errors.Is) and writes nothing. An Inbox, and every Store in this module,
// is safe for concurrent use.
//
// # Cost
//
// Publish costs one transaction per recipient (bounded parallel); Broadcast
// one transaction whatever the audience; List and Counts one round trip
// each (two parallel queries); Get one; MarkRead two; MarkAllRead one list
// page and one transaction per MaxMarkBatch messages; StreamHandler one
// transaction per removed record.
//
// # Records
//
// A message published to users is copied into each user's partition
// (t#<tenant>U#<user>#<inbox>, sort key m#<id>); a broadcast is stored once
// in the inbox's public partition (t#<tenant>G#$public#<inbox>) and merged
// into every user's feed at read time. Reading a broadcast writes a small
// receipt in the user's partition under the broadcast's sort key. Each
// partition keeps stats records, c#* and c#<category>, with published and
// read counts, so Counts is one round trip and exact.
//
// # Counters
//
// A message and its counter increments are written in one atomic unit; a
// mark-read sets readat (or creates the receipt) only if absent, with the
// read increments in the same unit. Removals are accounted from the table's
// stream by StreamHandler, exactly once per removal. Once every removal is
// accounted, each counter equals a recount of the records it summarises;
// Recount rebuilds them for operators.
//
// # Decisions
//
// Where the design leaves a choice open, this package decides:
//
//   - Keys (tenant, inbox, user, category) are 1 to 128 bytes of printable
//     UTF-8 without '#'. "$public" is reserved as a user and "*" as a
//     category. Host system IDs may contain '#': they end their sort key.
//   - Times are stored in epoch seconds, so every time is truncated to the
//     second. A message expires at ExpiresAt: from that second on, List and
//     MarkRead treat it as gone, though DynamoDB may delete it hours later.
//   - A publish with a HostSystemID first claims the ID in the public
//     partition (sort key h#users:<host id>, or h#everyone:<host id> for a
//     broadcast), kept as long as the message lives; a retry within that
//     time, however much later, reuses the claimed message ID, and each
//     recipient's copy is written only if absent. A retry after the message
//     expired is a new message.
//   - A message's size is estimated as DynamoDB counts it (strings by
//     length, numbers by significant digits, per-element overhead for lists and
//     maps) plus 2 KB for keys and headers; over 400 KB is ErrTooLarge.
//   - Counts include expired messages until their deletion is accounted;
//     unread is never shown below zero.
//   - MarkAllRead marks everything unread in both partitions in pages of
//     MaxMarkBatch, each page one atomic unit.
//   - A removal's idempotency marker lives in the removed record's
//     partition (sort key x#<event id>) for RemovalMarkerTTL.
//   - List cursors are opaque, signed, and bound to the user and filters;
//     any other cursor is ErrInvalidCursor.
package inbox

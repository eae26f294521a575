// Package inbox gives a service a per-user notification inbox on DynamoDB,
// after the Stak single-table design.
//
// An Inbox holds the logic and a Store persists it: the dynamo package is
// the production Store, memstore an in-memory one for unit tests. It is a
// library, not a service: it runs in your process against one table in
// your own AWS account. The [Guides] explain each subject; this names them.
//
//	ib := inbox.New(store, inbox.WithCursorSecret(secret))
//	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
//	ib.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{Title: "Disk full"})
//	ib.Broadcast(ctx, scope, inbox.Draft{Title: "Maintenance at 22:00"})
//	ib.BroadcastGroup(ctx, scope, "admins", inbox.Draft{Title: "Deploy at 17:00"})
//	ann := scope.User("ann").InGroups("admins") // the same groups on every call
//	page, _ := ib.List(ctx, ann, inbox.ListOptions{})
//	ib.MarkRead(ctx, ann, page.Messages[0].ID)
//	counts, _ := ib.Counts(ctx, ann)
//
// Every method takes ctx first and validates its input before it writes:
// bad input returns an error wrapping one of the Err* sentinels (match with
// errors.Is) and writes nothing, not even a host system ID's claim. An
// Inbox, and every Store in this module, is safe for concurrent use, and
// every method has a runnable example. See [Getting started].
//
// # Messages, broadcasts and groups
//
// Publish copies a message into each recipient's partition: one
// transaction per recipient. Broadcast stores a message once for everyone
// in the inbox, and BroadcastGroup once for a group: one transaction for
// ten members or ten million, merged into each member's feed when it is
// read. Membership belongs to the host application: the caller says which
// groups a user is in on every read, with User.InGroups (at most
// MaxGroups). A user's marks on a broadcast live on a small receipt in the
// user's partition. A HostSystemID makes a retry safe: it stores the
// message once. See [Concepts].
//
// # Reading and per-user states
//
// List merges the user's partition, the public one and each named group's,
// newest first, a page at a time (ListOptions filters by category, thread,
// unread, archived or snoozed); Get reads one message. A message is unread
// or read (MarkRead, MarkAllRead), seen up to the user's watermark
// (MarkSeen), and may be archived (Archive, Unarchive, ArchiveAll),
// deleted for the user (Delete, DeleteAll), acted on (MarkInteracted) or
// snoozed (Snooze, Unsnooze); an operator removes one for everyone with
// Redact. Every state change is one atomic unit with the user's counters,
// and reports whether it changed anything. See [Concepts].
//
// # Counts are exact
//
// Counts equals what a full List shows at every instant: expired messages
// are left out the moment they expire, though DynamoDB's TTL deletes them
// hours or days later and the stream accounts the deletion later still.
// The mechanism is a ledger of what each record adds to the counters, kept
// in step with the records and never deleted by TTL: package driver
// describes it, with the records and key layout a Store keeps (see [Table]).
// Across processes, each shared partition is read through a snapshot
// (WithSharedCache, WithSharedBackend), and another process's changes
// show up to the freshness bound late, in List and Counts alike; the
// bounded exceptions are in [Consistency].
//
// # Cost
//
// A read costs what it returns, whatever the user's history holds
// besides: Counts is one round trip in the usual case, List one a page.
// [Costs] gives the round trips and the capacity units AWS bills for each
// call, with the benchmark that measured each figure
// (storetest.Benchmarks runs the read-cost cases on any Store).
//
// # Change events
//
// StreamHandler, on the table's stream (a Lambda function, or
// dynamo.StreamReader in a process), accounts removals and derives an
// Event from each change of a message, for the EventHandler set with
// WithEvents: at least once, with a stable ID, whichever process made the
// change. HandleChange makes the same events from memstore.WithChanges, so
// that unit tests need no DynamoDB. See [Events].
//
// # Scheduling, snooze and chat
//
// Draft.DeliverAt schedules a message: stored at once, it shows in List and
// Counts at that second, with nothing running then; Scheduled and Due list
// what is scheduled and what came due. Snooze is its mirror on the user's
// side. See [Scheduling]. Draft.Thread makes a conversation: ListThreads
// lists a user's, by last activity, each with exact counts. See [Chat].
// Draft.Aggregate collapses a key's messages into one item ("Ann and 3
// others liked your post"), counted once. See [Aggregation].
//
// # Preferences
//
// A user mutes groups, categories and one-to-one chats with
// SetPreferences (without her own, her inbox's or tenant's defaults
// apply, see InboxConfig). Their messages, stored once or not, stay in
// her feed, marked Message.Muted (chats Thread.Muted in ListThreads),
// but their unread leave Unread and Unseen for Tally.Muted. A category
// opted out of (Preferences.OptedOut) leaves the feed and counts, and
// Publish stores no copy for her. The preferences are read with her
// counters: the counts follow the instant the call returns, in every
// process. See [Preferences].
//
// # Operating it
//
// PutTenantSettings and PutInboxConfig set default TTLs; Recount and
// RecountPartition rebuild counters, safely while the inbox is in use.
// WithHooks reports each operation's duration, outcome and capacity units
// (LogHooks logs them; the module github.com/stak/inbox/otelinbox turns
// them into OpenTelemetry spans and metrics). The inbox command
// (cmd/inbox), the SAM template, the IAM policy and the upgrade steps are
// in [Operations].
//
// # Writing a Store
//
// Package driver is the Store contract, its records, validation rules and
// key layout; package storetest is the conformance suite every Store
// passes. See [Writing a Store].
//
// [Guides]: https://github.com/stak/inbox/blob/main/docs/README.md
// [Getting started]: https://github.com/stak/inbox/blob/main/docs/getting-started.md
// [Concepts]: https://github.com/stak/inbox/blob/main/docs/concepts.md
// [Table]: https://github.com/stak/inbox/blob/main/docs/table.md
// [Consistency]: https://github.com/stak/inbox/blob/main/docs/consistency.md
// [Costs]: https://github.com/stak/inbox/blob/main/docs/costs.md
// [Events]: https://github.com/stak/inbox/blob/main/docs/events.md
// [Scheduling]: https://github.com/stak/inbox/blob/main/docs/scheduling.md
// [Chat]: https://github.com/stak/inbox/blob/main/docs/chat.md
// [Aggregation]: https://github.com/stak/inbox/blob/main/docs/aggregation.md
// [Preferences]: https://github.com/stak/inbox/blob/main/docs/preferences.md
// [Operations]: https://github.com/stak/inbox/blob/main/docs/operations.md
// [Writing a Store]: https://github.com/stak/inbox/blob/main/docs/writing-a-store.md
package inbox

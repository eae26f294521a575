// Package inbox gives a service a per-user notification inbox on DynamoDB,
// after the Stak single-table design.
//
// An Inbox holds the logic and a Store persists it: the dynamo package is
// the production Store, memstore an in-memory one for unit tests.
//
// # Where to start
//
// A service reads this package: New and its Options; Publish, Broadcast
// and BroadcastGroup with a Draft; List with ListOptions (a Page of
// Message); Counts; MarkRead, MarkAllRead, MarkSeen, Archive, Delete and
// Redact; StreamHandler and WithEvents for change events (HandleChange for
// a store that feeds its own changes, as memstore.WithChanges does in unit
// tests). The quickstart (go run ./examples/quickstart) runs on the
// in-memory store, and examples/httpapi wraps an Inbox in an HTTP API with
// a live page, on either store. An
// operator reads the README's cost table and the inbox command
// (cmd/inbox). Whoever writes a Store, or writes items to the table from
// another program, reads package driver (the Store contract, its records,
// validation rules and key layout) and runs package storetest, its
// conformance suite.
//
//	ib := inbox.New(store)
//	scope := inbox.Scope{Tenant: "acme", Inbox: "alerts"}
//	ib.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{Title: "Disk full"})
//	ib.Broadcast(ctx, scope, inbox.Draft{Title: "Maintenance at 22:00"})
//	ib.BroadcastGroup(ctx, scope, "admins", inbox.Draft{Title: "Deploy at 17:00"})
//	page, _ := ib.List(ctx, scope.User("ann").InGroups("admins"), inbox.ListOptions{})
//	ib.MarkRead(ctx, scope.User("ann"), page.Messages[0].ID)
//	counts, _ := ib.Counts(ctx, scope.User("ann"))
//
// Every method takes ctx first and validates its input before it writes:
// bad input returns an error wrapping one of the Err* sentinels (match with
// errors.Is) and writes nothing, not even a host system ID's claim. An
// Inbox, and every Store in this module, is safe for concurrent use.
//
// # Cost
//
// Publish costs one transaction per recipient (bounded parallel);
// Broadcast and BroadcastGroup one transaction whatever the audience. A
// read costs what it returns, whatever the user's history holds besides:
//
//   - Counts: one round trip in the usual case, the stats of the user's
//     partition, the public one and each group's, in parallel. Every
//     figure is counter arithmetic: the user's counter keeps Above, her
//     unread messages above her seen watermark, with every write; each
//     shared partition counts its messages in time buckets (by day, and
//     by second within an hour), so the broadcasts above a watermark are
//     read from the buckets, not the messages; snoozed and scheduled
//     messages are tallied on the counters where they wait, and their
//     entries are read only once due. A second round trip reads the hour
//     bucket of the watermark when that hour holds broadcasts, the
//     user's receipts of a broadcast removed early the first time the
//     user meets it, or a snapshot the cache must renew.
//   - List: one round trip a page in the usual case (the user's
//     partition, the public one and each group's, in parallel, beside a
//     read of the user's counters for her latest receipts). Every read
//     starts below the ID of now (feed bound): a message scheduled ahead,
//     whose ID is its delivery time, is not read until it is due, so a
//     campaign scheduled ahead leaves the first page full. An unread-only
//     page takes two round trips and costs what it returns and the
//     broadcasts it passes, not the direct messages the user has read (the
//     dynamo Store keeps a sparse index of unread messages, and the user's
//     receipts of the broadcasts passed are read by key).
//   - ListThreads: two round trips a page: each partition's newest
//     threads by activity (an index of thread rows), then, by key, the
//     listed threads' user counters and previews.
//   - Get one round trip; MarkRead, Archive, Unarchive and Delete two (a
//     read, then one transaction); MarkSeen two (a read of the user's
//     counters and of the messages of the current second, then one small
//     write); MarkAllRead one unread-only page and one transaction per
//     MaxMarkBatch unread messages; Redact one transaction per record
//     removed; StreamHandler one transaction per removed record, and no
//     request for events.
//
// The README gives the capacity units AWS bills for each, as the
// benchmarks measure them (storetest.Benchmarks runs the read-cost cases
// on any Store).
//
// # Shared partitions
//
// The public partition and each group's are read by every user of an
// inbox. An Inbox serves their newest records and stats from a snapshot
// (WithSharedCache, default DefaultSharedFreshness, 0 off), one refresh
// for all concurrent readers: see WithSharedCache for what it guarantees.
//
// # Consistency across processes
//
// In every process, Counts equals what a full List made right after it
// shows: each call reads the user's partition fresh and each shared
// partition through one consistent view, which Counts reads again when
// the user's partition names a broadcast the view lacks. A process sees
// its own writes at once; another process's changes to a shared partition
// show up to the freshness bound late, in List and Counts alike; expiry is
// never late. The README's "Consistency across processes" lists the
// bounded exceptions (items of other programs before the stream adopts
// them; a broadcast below a snapshot's newest 21 removed by another
// process). storetest.RunFleetProperty checks the rest, step by step, with
// several processes, another program's items and a stream that lags and
// repeats.
// A fleet can share the snapshots through a SharedBackend
// (WithSharedBackend; package rediscache holds one on Redis). The table
// must have one writing region: see the README on global tables.
//
// # Groups
//
// A message to a group (a team, a segment, a plan tier) is stored once, in
// the group's partition, t#<tenant>G#<group>#<inbox>, with the group's own
// stats records: BroadcastGroup costs one transaction for ten members or
// ten million, where Publish writes a copy and a transaction per
// recipient. The public partition is the group of everyone, PublicGroup.
// Choose Publish for a handful of named users, or when each copy must be
// deleted on its own; choose a group whenever the host can name the
// audience.
//
// Membership belongs to the host application (its database, or the user's
// token): the caller says which groups a user is in on every read, with
// User.InGroups (at most MaxGroups, each a key). List merges the user's
// partition, the public one and each group's, newest first, in one round
// trip of parallel queries; its cursor is bound to the groups it was
// issued for. Counts adds each group's published counts in the same round
// trip.
//
// A receipt of a group message counts its read in the user's partition
// twice: in c#* and c#<category>, as every read does, and in the group's
// read counters c#*#<group> and c#<category>#<group>. Counts subtracts the
// reads of the groups a call does not name, so it stays exact when the
// caller's group list changes: leaving a group takes its messages and the
// user's reads of them out at once; joining shows the group's live
// messages, and the reads of them the user made while a member.
//
// # Traces and metrics
//
// WithHooks reports each operation (its duration, outcome class,
// OutcomeOf, Store calls, DynamoDB requests, round trips and capacity
// units; a stream batch's records, failures and lag; the counters a
// Recount repaired), each Store call and each shared-cache event to
// functions of the caller's (Hooks). This module imports no telemetry
// library: LogHooks logs the reports with log/slog, and the module
// github.com/stak/inbox/otelinbox, with a go.mod of its own, turns them
// into OpenTelemetry spans and metrics. A Store reports its requests with
// driver.StartRequest; the dynamo Store reports each DynamoDB call with
// the capacity units AWS bills for it (DynamoDB's figure, or AWS's rules'
// where DynamoDB Local reports less), and a dynamo.StreamReader passes
// its Streams API requests to StreamHandler with each batch they fetched
// (driver.WithBatchRequests), which reports them with the batch.
//
// # Change events
//
// StreamHandler also derives an Event from each change of a message item
// on the table's stream, and passes it to the EventHandler set with
// WithEvents: a message created (once per copy of a direct message; once
// for the whole audience of a broadcast or group message), read, removed,
// or expired. Because they come from the stream, they fire whichever
// process made the change. They are at least once, with an ID stable
// across redeliveries for the host to drop duplicates; an EventHandler
// error fails only that record (the counters are accounted once
// regardless). The stream must carry new and old images, and the event
// source mapping must pass INSERT and MODIFY records of kind UM (see
// examples/template.yaml). A read event does not carry the user's new
// unread count: that needs the user's and every shared partition's stats,
// which a stream record does not hold; the host calls Counts, one round
// trip, when it pushes a badge. The local dynamo.StreamReader delivers the
// same events, so development needs no AWS account; and the in-memory store
// feeds its own changes (memstore.WithChanges) to HandleChange, which makes
// the same events from them, so that unit tests need no DynamoDB (the
// conformance suite checks that both stores make the same events).
//
// # Threads
//
// A message may belong to a thread (Draft.Thread): a conversation. Threads
// are not a new kind of storage: a one-to-one chat is direct messages to
// both users with one thread, a group chat a group's messages with one
// thread, stored once, and a user's receipt of a thread's broadcast
// carries the thread too. A Store reads one thread's records apart from
// the rest of a partition (driver.Query.Thread; the dynamo Store from its
// thread index), so List and MarkAllRead with ListOptions.Thread cost what
// the thread holds (the user's receipts of its broadcasts are read by
// key), and read states, archive, delete, expiry and group membership
// apply as in the whole feed. A host system ID's retry must name the same
// thread.
//
// ListThreads lists a user's conversations, latest activity first, each
// with its newest visible message and exact counts. Decisions:
//
//   - A conversation is a thread key in one audience: the user's direct
//     messages of it, a group's, or everyone's. The same key used in two
//     audiences lists twice; List with the thread merges them.
//   - Its counts come from counters kept per thread, in the same atomic
//     unit as each message and mark, as the feed's are (driver.Counter):
//     in the partition that holds the thread's messages, and in the
//     user's partition for the user's receipts of a shared thread, so a
//     group chat's message is still one write, whatever the group's size.
//     Ledger entries and tombstones record the thread, so a message counts
//     out of its thread the instant it expires, and a removal, redaction,
//     archive, delete or group change is exact at once, as in Counts.
//     Counts does not read the user's: its reads of the user's partition
//     do not grow with threads (a shared partition's snapshot holds its
//     threads' counters, for ListThreads). A thread's counters stay when
//     its messages are gone, until a Recount drops those at zero.
//   - A table whose messages got threads before thread counters existed
//     (the unreleased first part of threads) needs a Recount of each
//     partition, which counts them into their threads.
//   - The order is by last activity: the latest message ever sent in the
//     thread (Thread.Activity), which a removal or expiry does not lower,
//     as a chat keeps its place when a message is deleted. Per-user marks
//     do not reorder (a group thread's order is shared by its members);
//     a thread with nothing left to show (Total 0: all expired, archived
//     or deleted for the user) leaves the list until its next message.
//   - Another program writing seed-shaped items counts no threads, so its
//     records are in none. Its receipt of a thread's broadcast joins the
//     thread when it is adopted (by the stream handler, a mark or
//     Recount), with a mark that moves its marks into the thread's
//     counters; until then ListThreads counts the broadcast as unread for
//     that user, though List shows it read. A receipt whose broadcast was
//     removed before its adoption is deleted instead (it no longer counts,
//     and its thread is gone), as Recount does with a dead receipt.
//
// # Per-user states
//
// A message in a user's feed is unread or read, and apart from that may be
// archived or deleted by the user; everything up to the user's seen
// watermark is seen. Every state change is one atomic unit with the user's
// counters, conditional on the state it read, so that repeated and
// concurrent calls move the counters once; each reports whether it changed
// anything, and each makes its change event.
//
//   - Seen: MarkSeen raises the user's watermark (cs#seen) to now: to
//     the last ID of the current second (SeenAt), so that a message
//     published in the same second by a clock a little behind is seen
//     too. Counts.Unseen is the unread, unarchived messages above it;
//     reading a message makes it seen. It is counter arithmetic: MarkSeen
//     sets the user's Above to what lies above the new watermark (the
//     messages of the current second, read with her counters), in the
//     one write that raises it, conditional on her counters' version;
//     every later write adds its change to Above if its message is above
//     the watermark; the broadcasts above it are counted from their
//     partitions' time buckets. So MarkSeen costs two round trips and
//     Counts one, whatever lies above the watermark.
//   - Read: MarkRead one message; MarkAllRead every unread message a List
//     with the same ListOptions shows (category, UpTo, archived), so a
//     tab's button marks that tab only. There is no read watermark: a
//     watermark would make the read state of each message depend on a
//     second record, and the per-category counts could then only be exact
//     by reading the messages under it. So MarkAllRead writes one mark per
//     unread message, MaxMarkBatch to a transaction, and its cost grows
//     with the unread messages, not the feed.
//   - Archived: Archive and Unarchive. An archived message leaves the
//     default List, Total, Read, Unread and Unseen, and counts in Archived;
//     ListOptions.Archived lists the archived ones. It keeps its read state.
//   - Deleted: Delete removes a direct message's copy (with its counters, so
//     the stream's later report of the removal changes nothing), and hides
//     a broadcast or group message for the user alone, by a mark on the
//     user's receipt, which expires with the broadcast.
//   - Interacted: MarkInteracted records that the user acted on the
//     message (clicked its action), apart from reading it, and marks it
//     read if it was not. It is not counted: no view filters by it, and a
//     tally on every counter would cost every write; the mark shows on the
//     message and in EventInteracted.
//   - Snoozed: see Snooze below.
//   - Redact removes a message for everyone: each named recipient's copy,
//     or a broadcast or group message once (its readers' counts follow at
//     once, through its tombstone), and retires its host system ID.
//
// For a broadcast or group message, every mark lives on the user's receipt
// in the user's partition, like a read.
//
// # Scheduled delivery
//
// Draft.DeliverAt schedules a message, to users, a group or everyone: it
// is stored at once (a broadcast or group message once, whatever its
// audience), and hidden from its recipients until that second (not in
// List, Get or Counts, not markable), then it is in its place in the feed,
// unread and unseen, in List and Counts at the same instant, with nothing
// running at that instant, as expiry works:
//
//   - Its ID is minted at DeliverAt, so it sorts by delivery time: a
//     message published meanwhile is below it. Its TTL counts from
//     DeliverAt.
//   - It is counted when stored, like any message, and in the same write
//     the Store keeps its pending entry (driver.TimedKey) in its
//     partition, tallied on the message's counters (Counter.Pending): so
//     Counts takes the messages not due out of its figures by counter
//     arithmetic, whatever their number, in the read of the counters
//     (one view, with the cache on too). The entry sorts with the ledger
//     by time: Counts reads only the entries whose time has come, and
//     counts them in. At the due time the entry's timer expires
//     (DynamoDB's TTL), and the stream function folds the entry back into
//     the counters; a mark of the message does the same. List reads below
//     the ID of now, so it never reads a message scheduled ahead.
//   - Redact cancels it before it is due (and removes it after). A retry
//     of its publish with the same HostSystemID is the same message, even
//     after it is due.
//
// Decisions: a delivery time must be after now and at most MaxTTL ahead.
// A message in a thread cannot be scheduled (ErrInvalidInput): the
// thread's last activity (ListThreads' order) would move before it is
// due.
//
// Scheduled lists what is scheduled in an inbox and not due yet, and Due
// what came due in a window of time, by delivery time, a page at a time:
// each copy of a message to users with its user, and each broadcast or
// group message once, with its shared partition (Delivery.Partition, as
// Event.Partition: PublicGroup's for everyone, else the group's):
//
//   - An operator reads Scheduled to see what will go out (and Redact, with
//     a copy's ID and users, or a broadcast's ID and group, cancels it).
//   - The stream reports a scheduled message when it is stored, not when
//     it comes due (nothing is written then). A host that pushes at the
//     due time runs a worker every minute or so (a ticker, or a Lambda
//     function EventBridge Scheduler invokes) that calls Due for the
//     window since its last run and pushes each delivery's
//     Delivery.Event (kind EventDue) as it pushes the stream's events: a
//     copy's to its user, a broadcast's or group message's, in its shared
//     partition, to its whole audience, as the stream's EventCreated of
//     it. Windows should overlap by a few minutes, the handler dropping
//     events it has seen (their IDs are stable): see Due for why.
//   - Both read one index of the inbox's scheduled messages: on DynamoDB a
//     sparse global secondary index (dynamo.WithScheduledIndex), keyed by
//     the inbox (t#<tenant>S#<inbox>) and sorted by position
//     (driver.ScheduledKey): the message's ID, then the copy's user or,
//     for a broadcast or group message, its group, so by delivery time
//     (the ID is minted then). Only scheduled messages carry its keys:
//     other messages cost nothing more. A scheduled copy costs one index
//     write (1 WCU) when published and one when it is removed; a
//     scheduled broadcast or group message, stored once, costs one index
//     write when published and one when removed, whatever its audience.
//     It projects the message, not the users' marks, so that a mark
//     writes nothing to it. A message stays in it, due, until it expires
//     or is removed, so Due can look back; a Redact drops it. A global
//     index is read eventually consistent: a message shows in it, or
//     leaves it, usually within a second of its write, and Scheduled and
//     Due are the only reads of this package that can lag a write of this
//     process. An inbox's scheduled messages share one index key, and a
//     partition of DynamoDB takes about 1,000 write units a second: an
//     inbox that schedules more copies a second than that may see its
//     scheduled publishes throttled (ErrThrottled), where a copy-per-user
//     publish is the wrong tool anyway (see Groups: a scheduled group
//     message is one entry).
//   - A table without the index (dynamo.WithScheduledIndex("")) still
//     schedules messages; Scheduled and Due then fail with
//     ErrUnsupported. Scheduled messages carry the index's keys either
//     way, so an index added later (a global index can be added to a
//     table, unlike a local one) lists those written before. Those an
//     earlier version wrote without them get them from
//     dynamo.Store.BackfillScheduled (`inbox backfill-scheduled`).
//
// # Snooze
//
// Inbox.Snooze hides a message from one user's feed and counts until a
// time, and puts it back at that second, read or unread, archived or not,
// as it was, in List and Counts at once, with nothing running at that
// instant: the mirror of scheduled delivery, on the user's side.
//
//   - The user's marks get SnoozedUntil, on the copy of a direct message
//     or on the user's receipt of a broadcast or group message (a receipt
//     is created for an unread one). No counter changes.
//   - In the same atomic unit the Store writes a snooze entry
//     (driver.TimedKey) in the user's partition: the message as its
//     ledger entry holds it, keyed by that entry's tag too, so that it
//     belongs to one record and not to another written later at its key,
//     and tallied on the message's counters (Counter.Snoozed): Counts
//     takes the snoozed messages out, and reports them as Counts.Snoozed,
//     by counter arithmetic, whatever their number. The entry sorts with
//     the ledger by time, so Counts reads it only once its time has come,
//     and counts the message back in; its timer's expiry (DynamoDB's TTL),
//     through the stream function, or the next mark of the message folds
//     it into the counters.
//   - List leaves snoozed messages out of every view but
//     ListOptions.Snoozed, which lists them from the entries (two round
//     trips). Marks on a snoozed message keep the snooze and write the
//     entry again (MarkRead while snoozed shows when it returns); Delete
//     and Redact end it; bulk actions (MarkAllRead, ArchiveAll, DeleteAll)
//     act on their view, which holds no snoozed message (the snoozed view
//     itself is ErrInvalidInput to them). Recount takes the snooze entry
//     of a record deleted behind the library's back with its ledger
//     entry. Another program's change to a snoozed message's marks shows
//     in Counts when the stream handler sees it (the item's MODIFY
//     record), a Recount runs, or the user marks the message: each
//     rewrites the snooze entry, which held the marks it had.
//   - Seen is by ID and is left alone: a message that returns unread above
//     the user's watermark is unseen again; one below it is not.
//   - Events: EventSnoozed and EventUnsnoozed when a user snoozes or
//     unsnoozes. A message that returns by itself makes no event: nothing
//     runs then.
//
// Decisions: the time must be after now, at most MaxTTL ahead and before
// the message expires; a message of a thread cannot be snoozed alone
// (ErrInvalidInput), since ListThreads shows a thread's unread count and
// activity as one.
//
// # Counts are exact
//
// Counts equals what a full List shows at every instant: expired messages
// are left out the moment they expire, though DynamoDB's TTL deletes them
// hours or days later and the stream accounts the deletion later still.
// The mechanism is a ledger of what each record adds to the counters, kept
// in step with the records and never deleted by TTL: package driver
// describes it, with the records and key layout a Store keeps.
//
// The one lag left is a delete made behind the library's back (by an
// operator, say) of a record that had not expired: List stops showing it
// at once, Counts when the stream delivers the removal.
//
// # Decisions
//
// Where the design leaves a choice open, this package decides:
//
//   - Keys (tenant, inbox, user, group, category) are 1 to 128 bytes of
//     printable UTF-8 without '#', '*' or '?', so that an IAM policy
//     written from a tenant key (dynamodb:LeadingKeys "t#<tenant>U#*" ...)
//     matches that tenant only. "$public" is reserved as a user; as a
//     group it is everyone (BroadcastGroup to it is Broadcast). Host
//     system IDs may contain '#': they end their sort key.
//   - Times are stored in epoch seconds, so every time is truncated to the
//     second, and a Draft.TTL is rounded up to a whole second. A message
//     expires at ExpiresAt: from that second on, List, Counts and MarkRead
//     treat it as gone, though DynamoDB may delete it days later.
//   - A publish or broadcast with a HostSystemID first claims the ID in a
//     partition of its own (ClaimPK, spread by a hash of the ID, so that
//     neither a fast publisher nor the readers of the public partition
//     share one partition's throughput; sort key h#<host id>), with the message ID, its
//     expiry and a digest of its audience (kind, group and label) and
//     content; the claim lives as long as the message. A retry within
//     that time reuses the ID and the expiry, so every copy made under one
//     claim expires together, and each copy is written only if absent; a
//     retry may name fewer or other recipients. A reuse with other content
//     or audience (a broadcast of a published message's ID, or a group
//     message's ID for another group, say) is ErrConflict. A retry after
//     the message expired is a new message.
//   - A write whose outcome is unknown (ctx was cancelled or its deadline
//     passed while it was in flight, or the store failed without saying
//     whether it applied) may be applied, even after the call returns:
//     Publish lists its user in PublishResult.Unknown, apart from the
//     users whose copy surely was not written (Failed), and Broadcast's
//     error matches ErrOutcomeUnknown. A retry with the same HostSystemID
//     is exact: it reuses the message ID, each copy is written only if
//     absent, and a late write of the first attempt finds the retry's copy
//     and changes nothing, so no user gets two copies and the counters
//     count one. Publish makes no key of its own when the caller gives
//     none, and a retry without one is a new message: a key it made up
//     would serve only a caller that holds the result, not one that
//     crashed or lost it (a job its queue delivers again), which needs a
//     key from its own data; and it would cost every publish a claim (1
//     WCU) and a round trip before the first copy. A caller that may retry
//     passes a HostSystemID: its job's ID, or a random one it makes before
//     the first attempt and keeps for the retries.
//   - A body is stored as native DynamoDB values and comes back as
//     encoding/json decodes it into an any. Numbers become float64: one
//     that float64 cannot hold exactly (an integer beyond 2^53) is
//     refused, not rounded; send it as a string. A body may nest objects
//     and arrays 30 deep (DynamoDB allows 32 levels in an item), its
//     numbers must lie within DynamoDB's range, and its object keys must
//     not be empty.
//   - A message's item size is computed as DynamoDB counts it, and must
//     leave 1 KB for what later marks add; over that is ErrTooLarge, on
//     every Store alike (see driver.ValidateRecord).
//   - MarkAllRead marks everything unread that the List of its options
//     shows (the user's, the public and the named groups' messages) in
//     pages of MaxMarkBatch, each page one atomic unit. UpTo bounds it to
//     the newest message the user saw, so a message that arrives while
//     the button is pressed stays unread. Like ArchiveAll and DeleteAll,
//     it changes what its view holds at the instant each message is
//     changed, never more: a message another call takes out of the view
//     meanwhile (archived, snoozed, moved back from the archive) is left
//     as that call left it.
//   - Redact cannot find a direct message's recipients: the inbox does not
//     keep a publish's recipient list (it would grow with the audience),
//     so the caller names them. A user's Delete of a direct message is
//     undone by a retried Publish with the same HostSystemID (the copy is
//     gone, so the retry writes it again); Redact retires the ID instead.
//   - Recount is safe while the inbox is in use: each of its changes is an
//     atomic unit of the ledger, and it replaces counters only if their
//     version has not moved since it read them, nor their tallies (another
//     program following the seeds moves no version). It records its time,
//     taken after it read the partition (plus 5 s for the clocks' skew),
//     on the partition (with the counters, or alone when they were
//     right), and the stream's late removal of another program's item
//     (never adopted: a recount adopts every item it reads) that left the
//     table by then, deleted or expired, is not counted out again (the
//     recount left it out). A removal timed that close to the recount may
//     be of an item written after the read, which the counters hold: the
//     stream handler then recounts the partition after the removal, so
//     both cases end exact (see StreamHandler).
//   - List cursors are opaque, signed, and bound to the user and filters;
//     any other cursor is ErrInvalidCursor. Pass WithCursorSecret: the
//     default key is public.
//   - Records another program wrote following the seeds are read as the
//     seeds lay them out: readat null is unread, and seed 000's headers at
//     the top level of an item are read like seed 001's nested ones. A
//     time attribute of an item that holds no epoch seconds from 1970 to
//     9999 (a string, a negative number, 1e30, milliseconds) reads as
//     absent, in reads, filters and conditions alike, and fails nothing
//     (see driver.ParseTimeAttr; expiredat: driver.ParseExpiryAttr). They
//     have no ledger entry, so their removal is accounted by the stream
//     event's ID; a mark, Recount, or the stream handler (when the stream
//     reports the item's INSERT or MODIFY) adopts them, after which their
//     expiry is exact. A Delete of one adopts it first, so that the
//     stream's later report of the deletion changes nothing. Such a
//     program's unread direct messages and receipts lack the dynamo
//     Store's unread index attribute, so an unread-only List misses them,
//     and Counts.Unseen misses them (an unread message not counted, a read
//     broadcast counted unseen), while Total, Read and Unread count them,
//     until they are adopted, about the stream's lag. A program that
//     writes to the table directly should give its items a ledger entry
//     as the library does, or leave them to the stream handler's
//     adoption.
//   - Such a program may also mark the library's records as the seeds do
//     (readat, and read +1 in the user's c#* and c#<category>). Each of
//     the library's records in a user's partition notes the marks its
//     ledger entry counts (driver.Record.Counted), so such a change is
//     told apart from the library's own: the stream handler, on the
//     item's MODIFY record, rewrites its ledger entry, its snooze entry
//     (or, not yet due, its pending entry) and adds what the seeds do not
//     count (a thread's counter, a group's, archivedread), in one Mark
//     that applies only if the item still stands as the record shows it;
//     Recount and the user's next mark of it do the same. Until then, for
//     the stream's lag, what the seeds do not count lags List (a thread's
//     or group's unread count, the archived tallies), and Counts takes a
//     snoozed message out with the marks it had; a record that expires
//     first is counted as its entry counts it until its removal is
//     accounted, which then takes out what the counters hold
//     (driver.RemovalDeltas). A deleted receipt counts as hidden alone,
//     whatever other marks such a program gives it: the handler takes its
//     read back (a receipt whose broadcast is gone goes, as Recount's
//     dead receipts do). A message not yet due keeps the read out of
//     Counts until it is due, as List does.
//   - Records written, or last marked, by a version of the library that
//     did not note the marks their entries count carry no note, or a
//     stale one. Recount notes each as its entry counts it (one Mark per
//     record, once, changing no counter); until then another program's
//     read of one is counted as the seeds count it (what they do not
//     count lags until a Recount), and while a fleet runs both versions
//     an earlier version's mark of a record this one wrote looks, to this
//     version's stream handler, like another program's, and can move a
//     thread's, a group's or the archived tallies twice. Once every
//     process and the stream handler run this version, recount every
//     inbox (cmd/inbox recount --all).
//   - A table written by a version before the counters kept Above, the
//     timed tallies, the time buckets and the threads' activity keys
//     works as it is, at the earlier costs where it lacks them: a user
//     whose watermark was set before (her c#* holds no seen) has her
//     unseen messages counted one by one until her next MarkSeen; a
//     shared partition not marked bkt has its broadcasts above a
//     watermark counted one by one; the snooze and pending entries of the
//     earlier layout (dz#, dq#) are read and taken out one by one; a
//     thread counter without its activity key is listed by ListThreads
//     once a message or a recount writes it. A Recount of each inbox
//     (cmd/inbox recount --all) brings all of it to this version's
//     costs: it rewrites the entries, tallies them, buckets the shared
//     partitions, keys the threads and drops the counters of threads
//     whose messages are all gone. The stream function's filter must let
//     the timers' removals through (kind TM: see examples/template.yaml).
package inbox

// Package dynamo is the production driver.Store: one DynamoDB table in the
// single-table design of the seeds, written through the AWS SDK for Go v2.
//
//	client := dynamodb.NewFromConfig(cfg)
//	ib := inbox.New(dynamo.New(client, "inbox"))
//
// # Items
//
// Keys are those of package driver (Partition.PK, MessageSK, CounterSK,
// TenantPK, ...), under the key attributes pk and sk. Times are epoch
// seconds (N) and read back as time.Unix(s, 0).UTC().
//
//   - message or broadcast (kind UM): headers {id, host_system_id (NULL
//     when empty), sender, audiences {kind, label, uids (a list, only for
//     users)}, received, delivered}, message {title, body, cta_uri (NULL
//     when empty)}, taxonomy {category} (absent without a category), readat
//     (absent while unread), expiredat, ledger (the sort key of its ledger
//     entry), tenant_key, inbox_key, uid (the user or $public). The body is
//     stored as a native DynamoDB value (a string as S, an object as M, a
//     number as N, ...) and read back as encoding/json would decode it into
//     an any. Items another program wrote are read in both layouts of the
//     seeds (seed 000 keeps the headers' fields at the top level) and with
//     readat NULL as unread; an item of another kind than UM at a
//     message's key, without a ledger entry, is none, as the stream
//     handler reads none.
//   - A user's marks: readat, archivedat (absent unless archived) on a
//     direct message; deletedat never (deleting a copy removes it). A
//     direct message also carries unread (its ID) while it has neither
//     readat nor archivedat: the sort key of the unread index, a local
//     secondary index projecting taxonomy and expiredat (see
//     WithUnreadIndex), which unread-only pages query.
//   - A thread: a message or receipt of a thread (driver.Message.Thread)
//     carries thread and tsk (the thread, '#' and its ID): the sort key of
//     the thread index, a local secondary index projecting taxonomy and
//     expiredat (see WithThreadIndex), which a thread's pages query; the
//     marks are filtered once the items are fetched (an index filter may
//     name only projected attributes).
//   - A scheduled message (driver.Message.DeliverAt: each copy of a
//     direct message, and a broadcast or group message, stored once)
//     carries deliverat, spk (driver.ScheduledPK: t#<tenant>S#<inbox>) and
//     ssk (driver.ScheduledKey: <id>#<user> for a copy, <id>##<group> for
//     a broadcast, $public, or a group message): the keys of the
//     scheduled index, a global secondary index projecting headers,
//     message, taxonomy, deliverat, ledger and expiredat (see
//     WithScheduledIndex), which Inbox.Scheduled and Inbox.Due query.
//   - read receipt (kind UM, in the user's partition under the broadcast's
//     sort key): readat, archivedat, deletedat (each absent until set),
//     expiredat and taxonomy copied from the broadcast, group (the
//     broadcast's group, absent for everyone), ledger, tenant_key,
//     inbox_key, uid, and no headers. A receipt holds any of the user's
//     marks on a broadcast, not only a read.
//   - seen watermark (kind SN, the user's partition, cs#seen): seen (a
//     message ID: everything up to it is seen), tenant_key, inbox_key, uid.
//   - preferences (kind UP, the user's partition, p#preferences): muted
//     (her preferences as on her c#*; absent when she has none of her
//     own), tenant_key, inbox_key, uid. Written with each change of
//     them, for the stream's EventPreferences; never read by the library.
//   - read position (kind RP, the user's partition, rp#<thread>,
//     driver.PositionSK): thread, bound, at (epoch seconds), earlier
//     (absent for none), done (epoch seconds, absent until it is written
//     out), tenant_key, inbox_key, uid: her read position in the thread
//     as on her c#*. Written with each change of it (a cover mark),
//     deleted when it is dropped, for the stream: the stream function
//     writes a moved position out, and emits EventThreadRead; never read
//     by the Store.
//   - ledger entry (kind LE, the record's partition, e#<expiry>#<id>#<tag>):
//     receipt (true for a receipt), taxonomy, readat; no TTL attribute, so
//     that only the accounting of its record's removal deletes it.
//   - stats (kind US, sort keys c#* and c#<category>, and in a user's
//     partition c#*#<group> and c#<category>#<group> for the marks on a
//     group's messages): published, read (not in a shared partition),
//     archived, archivedread and hidden (the user's archived, archived and
//     read, and deleted shared messages; absent until used), tenant_key,
//     inbox_key, uid; c#* also holds ver, the partition's counter version.
//     A counter also holds the tallies of the timed entries that hide its
//     messages (zp, zr, za, zar, zh for snoozes; qp, qr, qa, qar, qh for
//     messages not yet due: driver.Counter.Snoozed and Pending) and, on
//     a user's c#* and c#*#<group>, above (driver.Counter.Above: the
//     unread messages above the seen watermark, kept by every write).
//     A user's c#* holds seen, the watermark its above counts from
//     (driver.Stats.Fence), and muted, her own preferences
//     (driver.Preferences.Encode: groups, '?' categories muted, '*c*'
//     categories opted out of; "" for own preferences that set nothing,
//     absent for none of her own), mt#<thread> for each thread she muted
//     (see mutedAttr) and cv#<thread> for each thread of her direct
//     messages she has a read position in (see coveredAttr); her
//     c#*#<group> holds cv#<thread> for each thread of the group's
//     messages she has one in; a shared c#* holds bkh once the
//     partition's messages are counted in time buckets, by category and
//     thread too. A thread counter (b#<thread>)
//     carries unread ~t<latest>#<thread>: its key in the unread index,
//     above every message, so that the newest threads are one Query; and
//     rev (a random number each write sets anew) and a copy of its
//     tallies, tp, tr, ta, tar and th, which the index projects with
//     latest (an entry without rev or one of the copy is read by key).
//   - time bucket (kind UB, a shared partition): cd#<yyyymmdd> holds the
//     day's messages by hour (h00..h23), each category's
//     (h00#<category>..), each thread's by category (h00@<tag>.., the
//     pair in t#<tag>), and a version per hour (v00..v23);
//     k#<yyyymmddhh> the hour's by second (s0000..s3599), each category's
//     (s0000#<tag>..), each thread's (s0000@<tag>..), and its version (v)
//     (driver.DayBucket, driver.HourBucket). Counts reads them to count
//     the broadcasts above a user's watermark. They grow with the
//     categories and threads an hour's messages use: an attribute per
//     category, or thread, and second that holds its messages.
//   - timed entry (kind SZ for a snooze, SQ for a message not yet due, the
//     record's partition, driver.TimedKey: e#<time>#<id>#<tag>#z or #q):
//     the record as its ledger entry counts it, tallied on its counters
//     (see above); a snooze entry carries unread ~z<id> (the snoozed
//     view's key in the unread index). Its timer (kind TM, w#<entry's
//     key>) expires by TTL at the entry's time; the stream function, on
//     the timer's REMOVE, folds the entry back into its counters.
//     Entries of an earlier version (dz#..., dq#..., not tallied) are
//     still read, and Recount rewrites them.
//   - tombstone (kind TB, public partition, d#<id>): taxonomy, expiredat
//     (the removed broadcast's).
//   - reader item (kind RD, the shared partition of a thread's message,
//     r#<thread>#<id>#<user>, driver.ReaderSK): readat, ledger (the
//     receipt's entry), expiredat (the message's). Kept by Mark in step
//     with the user's receipt's read mark; Inbox.ReadBy reads a page's
//     in one Query of the range. A member's position item (kind RD, the
//     group's partition, r#<thread>#~#<user>, driver.ReaderPositionSK,
//     above the thread's reader items): thread, user, bound, at,
//     earlier, done (her read position in the thread, no TTL), put by
//     each cover mark of the thread with her c#*.
//   - tenant settings (kind TS, t#<tenant> / st#tenant_settings): title,
//     ttl, prefs (the default preferences, driver.Preferences.Encode;
//     absent for none), tenant_key, uid (who last changed it); inbox
//     config (kind IC, t#<tenant> / si#<inbox>): title, description, ttl
//     (a map), prefs, tenant_key, inbox_key, uid.
//   - host-system-ID claim (kind HC, driver.ClaimPK: t#<tenant>H#<shard>#<inbox>, h#<host id>): id,
//     digest, expiredat, tenant_key, inbox_key; applied-removal marker of a
//     record without a ledger entry (kind RX, the removed record's
//     partition, x#<event id>): expiredat.
//   - stream checkpoint (kind CP, pk s#stream, outside every tenant's keys,
//     sk cp#<consumer>#<stream ARN>#<shard ID>): seq (the sequence number
//     of the last record the consumer's handler accepted in the shard),
//     pos (seq zero-padded to 40 digits, so that a save moves it forward
//     only), saved, expiredat (48 hours after the last save). Written only
//     by a StreamReader with Store.Checkpoints; a reader skips the
//     records of these items, the inbox's StreamHandler ignores them.
//
// Store.Stats reads a partition's stats records, seen watermark,
// tombstones and the ledger entries expired by a time in one strongly
// consistent Query of the sort key range c# to e#<time>: nothing else
// sorts between them.
//
// Item structures are marshalled with the attributevalue package and every
// key, condition, update, filter and projection expression is built with
// the expression package.
//
// # Tables of earlier versions
//
// Three changes of the layout concern a table written by an earlier
// version of this package:
//
//   - The unread index is a local secondary index, which DynamoDB creates
//     only with its table. Keep such a table with WithUnreadIndex("")
//     (unread-only pages then filter the user's partition, at a cost that
//     grows with the read messages), or copy its items into a table made
//     by CreateTable, setting unread to the ID of every direct message
//     (kind UM, a user's partition, with headers) that has neither readat
//     nor archivedat (a thread's counter, without the copy of its tallies
//     the index holds, is read by key until the library writes it, which
//     sets the copy). A copy writes to the new table's stream: run it
//     before the stream function is attached, or with events off.
//   - Host-system-ID claims (kind HC, sort key h#<host id>) moved from the
//     inbox's public partition to ClaimPK. A retry of a publish claimed
//     before the upgrade is not recognized as one: within its message's
//     lifetime it publishes again. Drain retries before upgrading, or copy
//     each claim to its new key.
//   - The unread index also holds each receipt (unread: its ID and "r")
//     and each user's c#* (unread: "~"), which Counts reads for the
//     unseen count with the user's counter version. A user's c#* joins it
//     at the user's next write; until then Counts cannot check the unseen
//     records against the stats and takes them as they are. A receipt
//     written before the upgrade is not in it: a broadcast it marks, above
//     the user's seen watermark, counts as unseen until the user's next
//     MarkSeen. Copying the items as above, setting unread on receipts
//     too, avoids both.
//
// # Atomicity and retries
//
// Each Store method is one request or one transaction (see each method).
// Writes that change counters are TransactWriteItems calls with a
// ClientRequestToken that is random per call and kept across the SDK's
// retries of the call, so an attempt whose response was lost is not
// applied twice when the SDK sends it again. The Store adds no retry loop
// of its own: it uses the client's retryer, and for transactions also
// deems retryable a cancellation whose reasons are only throttling
// (ThrottlingError, ProvisionedThroughputExceeded), TransactionConflict or
// None, since DynamoDB reports throttling inside a transaction that way. Batch reads and
// writes resend unprocessed items after a backoff. Every request asks for
// ReturnConsumedCapacity TOTAL.
//
// # Consistency
//
// Every read is strongly consistent (GetRecords, Stats, Config and Query,
// the feed): a message shows in List, and a mark in List and Counts, as
// soon as the call that made it returns, in any process. It costs 1 read
// unit per 4 KB read where an eventually consistent read costs half. The
// one exception is a scheduled query (driver.Query.Scheduled), which
// reads a global secondary index: DynamoDB cannot read one strongly
// consistent, and updates it after the write returns (usually within a
// second, longer while the index is throttled).
//
// DynamoDB Local updates its global indexes with the write (the tests
// cannot see the lag); on AWS a copy written or removed within the lag
// may be missing from, or still in, Inbox.Scheduled and Inbox.Due.
//
// # Capacity
//
// The Store reports each request it makes, with the capacity units AWS
// bills for it, to the driver.RequestLog of the call's context
// (driver.StartRequest), which is how inbox.WithHooks sees the cost of
// each Store call and operation. The units are DynamoDB's ConsumedCapacity
// unless the least AWS's rules give for what the request holds is more:
// the size of each item it puts (and its entry in the unread or thread
// index, for a new item), 1 KB for each item it updates, deletes or
// checks, twice that in a transaction; one read for a query or for
// each key of a batch read, even one that finds nothing; and two reads
// per 4 KB of each item of a TransactGetItems (an isolated read of
// counters, driver.StatsQuery.Isolated), two for one found missing. On
// AWS that is DynamoDB's figure. On DynamoDB Local, which under-reports, it is AWS's
// for the Inbox's transactions, but for items over 1 KB that a transaction
// updates or deletes (a large message marked or deleted) and index entries
// that an update or delete changes. Each report also holds DynamoDB's own
// figure (driver.Request.ConsumedReadUnits and ConsumedWriteUnits). The
// benchmarks' figures follow the same rules with each written item's size
// read before and after the write.
//
// # DynamoDB Local
//
// The tests run against DynamoDB Local 3.3 (`make test`). The Store relies
// on nothing in which it was seen to differ from DynamoDB as documented:
//
//   - It never cancels a transaction for a TransactionConflict: concurrent
//     transactions on one item run one after another. The tests inject
//     conflict responses to check that they are retried.
//   - A transaction replayed with the same ClientRequestToken succeeds
//     without applying again, as on AWS, but reports the capacity of the
//     original write, where AWS reports read units for a replay.
//   - Transactions that write report the sum of the distinct per-item
//     amounts (and the same of each index's entries): three small items
//     report 2 units, where AWS bills 2 write units per KB of each item;
//     a read that finds nothing reports 0. The Store's request reports
//     correct both (see Capacity). A TransactGetItems reports what AWS
//     bills (2 units per 4 KB of each item, 2 for one missing).
//   - Tables are ACTIVE as soon as CreateTable returns; CreateTable waits
//     when they are not, as on AWS.
//   - Its TTL deletions reach the stream with eventName
//     UNKNOWN_TO_SDK_VERSION and no userIdentity; StreamReader delivers
//     them as the REMOVE records AWS sends.
//   - Its TTL deletes nothing in a table with a secondary index, local
//     (none of 4 expired items after 40 s; without the index all within a
//     second) or global (the scheduled index: 16 items left after 90 s,
//     where 7 were due to stay). The tests that wait for TTL deletions use
//     a table without the indexes.
//   - An item in a local secondary index counts, toward the 400 KB item
//     limit, its index entry (the partition key, the index key and the
//     projected attributes) once more; driver.ItemSize counts it so.
//   - A validation error inside TransactWriteItems (an item over 400 KB, a
//     number out of range, nesting too deep) is a ValidationException for
//     the whole call, not a cancellation reason; the Store maps both forms.
//   - A map key longer than 50,000 bytes fails the request with HTTP 500
//     (an internal error, which the client retries), where AWS takes
//     attribute names of less than 64 KB; driver.MaxBodyKeyLen refuses
//     such a key in a body before anything is written.
//
// Its limits were measured there: an item holds 409,600 bytes as
// driver.ItemSize counts them, and a message's body may nest 30 deep.
package dynamo

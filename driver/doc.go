// Package driver is the contract between an inbox.Inbox and the storage
// under it: the Store interface, the records a Store keeps, the rules every
// Store checks what it writes against, and the single-table key layout.
//
// Read it if you write a Store, operate the table by hand, or write items
// to it from another program. To use the library, read package inbox: it
// re-exports the few names of this package a caller needs (Store, Scope,
// User, Partition, Message, the errors), so a service never imports this
// one.
//
// # Where to start
//
//   - Store: one method per atomic unit, each with its contract. The
//     dynamo package is the production Store and memstore the in-memory
//     one; package storetest is the conformance suite a Store must pass
//     (storetest.Run, storetest.RunProperty).
//   - Record, State and Mark: what a Store persists of a message, a
//     broadcast and a user's read receipt, and how a user's marks move.
//   - Counter, Stats, Removal and Repair: the stats records and the ledger
//     that keep counts exact.
//   - ValidateRecord, ValidateMark, ValidateDeltas, ValidateQuery,
//     ValidatePutItems, ValidateRemovalItems: every Store calls them on
//     what it is asked to write, so that all of them refuse exactly what
//     DynamoDB refuses (a transaction of more than MaxTransactItems items
//     among it).
//   - The key layout below, and ParsePartitionKey, MessageSK, CounterSK,
//     LedgerSK, ClaimPK, TombstoneSK, TenantPK, InboxConfigSK, ScheduledPK,
//     ScheduledKey.
//
// # Key layout
//
// A message published to users is copied into each user's partition
// (t#<tenant>U#<user>#<inbox>, sort key m#<id>); a broadcast is stored once
// in the inbox's public partition (t#<tenant>G#$public#<inbox>), and a
// message to a group once in the group's (t#<tenant>G#<group>#<inbox>).
// Reading a broadcast writes a small receipt in the user's partition under
// the broadcast's sort key. Each partition keeps stats records, c#* and
// c#<category>, with published and read counts, as the seeds define them;
// a user's partition also keeps c#*#<group> and c#<category>#<group>, the
// marks on a group's messages; a user's c#* also holds her preferences
// (the groups she muted). Ledger entries are e#<expiry>#<id>#<tag>
// (LedgerSK), tombstones of broadcasts removed before they expired d#<id>,
// the seen watermark cs#seen, a host system ID's claim h#<host id> in a
// partition of its own (ClaimPK, spread by a hash of the ID), tenant
// settings and inbox configs under t#<tenant>. A user's read of a
// thread's broadcast also keeps a reader item beside the broadcast,
// r#<thread>#<id>#<user> (ReaderSK), for inbox.Inbox.ReadBy. A scheduled message also
// carries the keys of the dynamo Store's scheduled index, a global one:
// its inbox's t#<tenant>S#<inbox> (ScheduledPK) and its position
// (ScheduledKey), <id>#<user> for each user's copy, <id>##<group> for a
// broadcast ($public) or group message, stored and indexed once whatever
// its audience; Query.Scheduled reads them. The dynamo package's doc
// lists every attribute of every item.
//
// # The ledger
//
// Counts equals what a full List shows at every instant: expired messages
// are left out the moment they expire, though DynamoDB's TTL deletes them
// hours or days later and the stream accounts the deletion later still.
// The mechanism is the ledger (see Store): every message, broadcast and
// receipt has a ledger entry, written and changed in the same atomic unit
// as the record and its counters, and never deleted by TTL. Stats returns,
// with the counters, the entries that have expired by the time it is
// given, whether or not their record still stands, and the Inbox subtracts
// them; a removal the stream accounts deletes its entry together with the
// decrements, so it is counted out once, and its redelivery, or its late
// arrival after a Recount, finds no entry and changes nothing.
//
// A broadcast removed before it expired leaves a tombstone until its
// original expiry; while one stands, the Inbox reads the user's receipts of
// the tombstoned broadcasts and leaves them out of the read count.
//
// # Checked writes
//
// A message's item size is computed as DynamoDB counts it (ItemSize,
// checked against DynamoDB Local to the byte), and must leave 1 KB for what
// later marks add and for longer attribute names; over that is
// ErrTooLarge. Every Store checks what it writes with ValidateRecord,
// ValidateMark and ValidateDeltas, so the in-memory store refuses exactly
// what DynamoDB does.
//
// The package holds no global mutable state; its functions are safe for
// concurrent use, and a Store must be too.
package driver

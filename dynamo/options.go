package dynamo

import (
	"fmt"

	"github.com/stak/inbox/driver"
)

// Default attribute names, as in the seeds' design.
const (
	DefaultPKAttribute  = "pk"
	DefaultSKAttribute  = "sk"
	DefaultTTLAttribute = driver.TTLAttribute
)

// Option configures a Store (New) or the table helpers (CreateTable).
type Option func(*options)

type options struct {
	pk, sk, ttl string
	unread      string // the unread index's name, "" for none
	thread      string // the thread index's name, "" for none
	scheduled   string // the scheduled index's name, "" for none
	// untallied, for tests, has CreateTable make the unread index as an
	// earlier version did: without the counters' tallies.
	untallied bool
}

// DefaultUnreadIndex is the name of the unread index (see WithUnreadIndex).
const DefaultUnreadIndex = "unread"

// WithUnreadIndex sets the name of the table's unread index (default
// DefaultUnreadIndex): a local secondary index on the attribute "unread",
// which a direct message carries (its ID) while it is unread and not
// archived, projecting only the keys, the category and the expiry (so that
// its entries stay small whatever the message's size; DynamoDB fetches the
// items a query returns from the table). Query serves an unread-only page
// of a user's partition from it, so that the page costs what it returns
// rather than the user's read history. "" reads without it (filtering the
// partition), for a table created without the index: a local secondary
// index can only be created with its table.
func WithUnreadIndex(name string) Option {
	return func(o *options) { o.unread = name }
}

// DefaultThreadIndex is the name of the thread index (see WithThreadIndex).
const DefaultThreadIndex = "thread"

// WithThreadIndex sets the name of the table's thread index (default
// DefaultThreadIndex): a local secondary index on the attribute "tsk",
// which a message or receipt of a thread carries (the thread, '#' and its
// ID), projecting the keys, the category and the expiry, as the unread
// index does. Query serves a thread's page from it (driver.Query.Thread),
// so that a conversation's page costs what it returns, whatever the rest
// of the partition holds. "" reads without it (filtering the partition),
// for a table created without the index.
func WithThreadIndex(name string) Option {
	return func(o *options) { o.thread = name }
}

// DefaultScheduledIndex is the name of the scheduled index (see
// WithScheduledIndex).
const DefaultScheduledIndex = "scheduled"

// WithScheduledIndex sets the name of the table's scheduled index (default
// DefaultScheduledIndex): a global secondary index on the attributes "spk"
// (driver.ScheduledPK: t#<tenant>S#<inbox>) and "ssk"
// (driver.ScheduledKey: <message id>#<user> for a user's copy,
// <message id>##<group> for a broadcast or group message, one entry
// whatever its audience), which only a scheduled message carries, so
// that it costs nothing for the others. It projects what a message is
// (headers, message, taxonomy, deliverat, ledger and the expiry) and
// none of a user's marks, so that marking a message that was scheduled
// writes nothing to it. Query serves driver.Query.Scheduled from it
// (Inbox.Scheduled and Inbox.Due), eventually consistent, as every read
// of a global index is. "" is a table without it: those queries then
// fail with driver.ErrUnsupported, and nothing else changes. Scheduled
// messages carry the attributes either way, so that the index, which
// unlike a local one can be added to an existing table (UpdateTable),
// holds every one once it has backfilled.
func WithScheduledIndex(name string) Option {
	return func(o *options) { o.scheduled = name }
}

// WithKeyAttributes sets the names of the table's partition and sort key
// attributes (default "pk" and "sk").
func WithKeyAttributes(pk, sk string) Option {
	return func(o *options) { o.pk, o.sk = pk, sk }
}

// WithTTLAttribute sets the name of the table's TTL attribute, which holds
// every record's expiry in epoch seconds (default "expiredat").
func WithTTLAttribute(name string) Option {
	return func(o *options) { o.ttl = name }
}

// itemAttributes are the attribute names the Store writes besides the key
// and TTL attributes; none of them may be used as one of those.
var itemAttributes = []string{
	"kind", "headers", "message", "taxonomy", "readat", "tenant_key", "inbox_key", "uid",
	"published", "read", "title", "description", "ttl", "id", attrUnread, attrThread, attrTSK, attrSPK, attrSSK,
	attrTimed, attrAbove, attrFence, attrBucketed, "expires", "v",
	"tp", "tr", "ta", "tar", "th", attrLatest, attrRev, attrTop,
}

// resolve applies opts over the defaults and checks that the three
// configured names are distinct, non-empty and not used by the items.
func resolve(opts []Option) (options, error) {
	o := options{pk: DefaultPKAttribute, sk: DefaultSKAttribute, ttl: DefaultTTLAttribute, unread: DefaultUnreadIndex, thread: DefaultThreadIndex, scheduled: DefaultScheduledIndex}
	for _, opt := range opts {
		opt(&o)
	}
	names := map[string]string{}
	for _, n := range [][2]string{{"partition key", o.pk}, {"sort key", o.sk}, {"TTL", o.ttl}} {
		what, name := n[0], n[1]
		if name == "" {
			return o, fmt.Errorf("dynamo: empty %s attribute name", what)
		}
		if other, ok := names[name]; ok {
			return o, fmt.Errorf("dynamo: %s and %s attributes are both %q", other, what, name)
		}
		names[name] = what
		for _, a := range itemAttributes {
			if name == a {
				return o, fmt.Errorf("dynamo: %s attribute %q is an item attribute", what, name)
			}
		}
	}
	return o, nil
}

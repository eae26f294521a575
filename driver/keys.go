package driver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// PublicGroup is the reserved group of everyone in an inbox: a broadcast
// to everyone is stored once in its partition. It is not a user ID, and a
// User need not list it: everyone is in it.
const PublicGroup = "$public"

// MaxKeyLen is the longest tenant, inbox, user, group or category key, in
// bytes.
const MaxKeyLen = 128

// MaxGroups is the most groups a User may list.
const MaxGroups = 16

// MaxHostSystemIDLen is the longest inbox.Draft.HostSystemID, in bytes.
const MaxHostSystemIDLen = 256

// Scope names one inbox of one tenant. Its fields are named so that a tenant
// and an inbox cannot be swapped by position.
type Scope struct {
	Tenant string
	Inbox  string
}

// User returns the User with the given ID in this inbox, in no groups but
// everyone's.
func (s Scope) User(id string) User { return User{Scope: s, ID: id} }

// Validate reports whether both keys are valid, wrapping ErrInvalidKey.
func (s Scope) Validate() error {
	if err := ValidateKey("tenant", s.Tenant); err != nil {
		return err
	}
	return ValidateKey("inbox", s.Inbox)
}

// public returns the scope's public partition.
func (s Scope) Public() Partition { return s.Group(PublicGroup) }

// group returns the partition of group g of the scope.
func (s Scope) Group(g string) Partition {
	return Partition{Tenant: s.Tenant, Inbox: s.Inbox, Group: g}
}

// User is one user's inbox: a user ID within a Scope, and the groups the
// user is in.
//
// Group membership belongs to the host application (its own database, or
// the claims of the user's token): it passes the groups with every call
// that reads or marks the user's inbox, and the user's feed and counts
// include the messages of exactly those groups, and everyone's. Leaving a
// group takes its messages, and the user's reads of them, out of the feed
// and the counts; joining one brings its live messages in.
type User struct {
	Scope Scope
	ID    string
	// Groups are the user's groups: at most MaxGroups keys, in any order;
	// PublicGroup need not be listed.
	Groups []string
}

// InGroups returns u in groups (replacing u's groups).
func (u User) InGroups(groups ...string) User {
	u.Groups = groups
	return u
}

// Validate reports whether the scope, user ID and groups are valid,
// wrapping ErrInvalidKey: the reserved PublicGroup is not a user ID; more
// than MaxGroups groups is ErrInvalidInput.
func (u User) Validate() error {
	if err := u.Scope.Validate(); err != nil {
		return err
	}
	if err := ValidateUserID(u.ID); err != nil {
		return err
	}
	if len(u.Groups) > MaxGroups {
		return fmt.Errorf("%w: user %q in %d groups, at most %d", ErrInvalidInput, u.ID, len(u.Groups), MaxGroups)
	}
	for _, g := range u.Groups {
		if err := ValidateGroup(g); err != nil {
			return err
		}
	}
	return nil
}

func ValidateUserID(id string) error {
	if err := ValidateKey("user", id); err != nil {
		return err
	}
	if id == PublicGroup {
		return fmt.Errorf("%w: user %q is reserved", ErrInvalidKey, id)
	}
	return nil
}

// ValidateGroup accepts a group key or PublicGroup.
func ValidateGroup(g string) error {
	if g == PublicGroup {
		return nil
	}
	return ValidateKey("group", g)
}

// partition returns the user's partition.
func (u User) Partition() Partition {
	return Partition{Tenant: u.Scope.Tenant, Inbox: u.Scope.Inbox, User: u.ID}
}

// shared returns the partitions of everyone's messages and of u's groups'
// messages, the public one first, the groups' sorted, each once.
func (u User) Shared() []Partition {
	out := []Partition{u.Scope.Public()}
	groups := append([]string(nil), u.Groups...)
	slices.Sort(groups)
	for i, g := range groups {
		if g != PublicGroup && (i == 0 || groups[i-1] != g) {
			out = append(out, u.Scope.Group(g))
		}
	}
	return out
}

// Partition is a DynamoDB partition holding messages, receipts and stats:
// a user's (User set) or a shared one (Group set: a group's, or
// PublicGroup's, everyone's).
type Partition struct {
	Tenant string
	Inbox  string
	User   string
	Group  string
}

// IsShared reports whether p is a group's partition (everyone's too).
func (p Partition) IsShared() bool { return p.Group != "" }

// IsPublic reports whether p is an inbox's public partition, the group of
// everyone's.
func (p Partition) IsPublic() bool { return p.Group == PublicGroup }

// Scope returns the partition's tenant and inbox.
func (p Partition) Scope() Scope { return Scope{Tenant: p.Tenant, Inbox: p.Inbox} }

// PK returns the partition key: t#<tenant>U#<user>#<inbox> for a user and
// t#<tenant>G#<group>#<inbox> for a group, t#<tenant>G#$public#<inbox> for
// everyone's.
func (p Partition) PK() string {
	if p.IsShared() {
		return "t#" + p.Tenant + "G#" + p.Group + "#" + p.Inbox
	}
	return "t#" + p.Tenant + "U#" + p.User + "#" + p.Inbox
}

// Validate reports whether the partition's keys are valid: a user's or a
// group's, not both.
func (p Partition) Validate() error {
	if err := p.Scope().Validate(); err != nil {
		return err
	}
	switch {
	case p.IsShared() && p.User != "":
		return fmt.Errorf("%w: partition of user %q and group %q", ErrInvalidKey, p.User, p.Group)
	case p.IsShared():
		return ValidateGroup(p.Group)
	}
	return ValidateUserID(p.User)
}

// ParsePartitionKey parses a key made by Partition.PK.
func ParsePartitionKey(pk string) (Partition, error) {
	rest, ok := strings.CutPrefix(pk, "t#")
	if !ok {
		return Partition{}, fmt.Errorf("%w: partition key %q", ErrInvalidKey, pk)
	}
	tenant, rest, ok := strings.Cut(rest, "#")
	if !ok || len(tenant) < 2 {
		return Partition{}, fmt.Errorf("%w: partition key %q", ErrInvalidKey, pk)
	}
	// tenant holds "<tenant>U" or "<tenant>G": the kind letter ends it.
	kind := tenant[len(tenant)-1]
	tenant = tenant[:len(tenant)-1]
	name, inbox, ok := strings.Cut(rest, "#")
	if !ok {
		return Partition{}, fmt.Errorf("%w: partition key %q", ErrInvalidKey, pk)
	}
	p := Partition{Tenant: tenant, Inbox: inbox}
	switch kind {
	case 'U':
		p.User = name
	case 'G':
		p.Group = name
	default:
		return Partition{}, fmt.Errorf("%w: partition key %q", ErrInvalidKey, pk)
	}
	if err := p.Validate(); err != nil {
		return Partition{}, err
	}
	return p, nil
}

// ClaimPK returns the partition key of the claim of host system ID id in
// scope s: t#<tenant>H#<shard>#<inbox>, the shard being the first 8 hex
// digits of the ID's SHA-256. Claims are spread over 2^32 partitions by
// their ID, so a publisher's rate of claims is not bound by one
// partition's throughput (and no claim shares the public partition that
// every reader reads).
func ClaimPK(s Scope, id string) string {
	sum := sha256.Sum256([]byte(id))
	return "t#" + s.Tenant + "H#" + hex.EncodeToString(sum[:4]) + "#" + s.Inbox
}

// Key addresses one message, public message or read receipt.
type Key struct {
	Partition Partition
	ID        string
}

// Sort-key prefixes and fixed sort keys of the table.
const (
	MessagePrefix     = "m#"                 // messages and receipts: m#<id>
	ThreadStatsPrefix = "b#"                 // a thread's stats: b#<thread> and b#<thread>#<group>
	CounterPrefix     = "c#"                 // stats: c#* and c#<category>
	SeenSK            = "cs#seen"            // a user's seen watermark, in the user's partition
	AllCategories     = "*"                  // the category of the c#* total
	TombstonePrefix   = "d#"                 // tombstones of removed broadcasts: d#<id>
	PendingPrefix     = "dq#"                // pending entries of scheduled records: dq#<deliver at>#<id>#<tag>
	SnoozePrefix      = "dz#"                // snooze entries: dz#<until>#<id>#<tag>
	LedgerPrefix      = "e#"                 // ledger entries: e#<expiry>#<id>
	HostPrefix        = "h#"                 // host-system-id claims: h#<host id>, in ClaimPK
	RemovalPrefix     = "x#"                 // applied-removal markers
	TenantSettingsSK  = "st#tenant_settings" // tenant settings, in TenantPK
	InboxConfigPrefix = "si#"                // inbox configs: si#<inbox>, in TenantPK
)

// LedgerAttribute names the attribute of a message, broadcast or receipt
// item that holds the sort key of its ledger entry; an item without it has
// no entry (another program wrote it). inbox.Inbox.StreamHandler reads it from removed
// items' old images.
const LedgerAttribute = "ledger"

// CountedAttribute names the attribute of a message or receipt item of a
// user's partition, with a ledger entry, that holds the marks the entry
// counts (Record.Counted, a number); inbox.Inbox.StreamHandler reads it
// from images, to tell another program's change of the item's marks.
const CountedAttribute = "counted"

// TimedAttribute names the attribute of a message or receipt item that
// holds the key of its stored timed entry (Record.Timed); StreamHandler
// reads it from images, to fold the entry or take it out with the item.
const TimedAttribute = "timed"

// TTLAttribute is the seeds' TTL attribute, which holds an item's expiry in
// epoch seconds. A table may name it otherwise (see package dynamo); the
// stream handler reads it only from items without a ledger entry, whose
// expiry it cannot read from the entry's name.
const TTLAttribute = "expiredat"

// ledgerEpochDigits is how many digits the expiry of a ledger entry's sort
// key has, zero-padded so that entries sort by expiry (to the year 2286).
const ledgerEpochDigits = 10

// LedgerSK returns the sort key of a ledger entry of record id expiring at
// expires: e#<expiry in epoch seconds, 10 digits>#<id>#<tag>. Entries of a
// partition sort by expiry, so a store reads those expired by a time with
// one range query. The tag tells the entries of successive records at one
// key apart (a receipt deleted and written again while the stream has not
// yet accounted the deletion), so that a removal is only ever accounted
// against the entry of the record that was removed.
func LedgerSK(expires time.Time, id, tag string) string {
	return fmt.Sprintf("%s%0*d#%s#%s", LedgerPrefix, ledgerEpochDigits, ledgerEpoch(expires), id, tag)
}

// LedgerBound returns the sort key above every ledger entry expiring at or
// before t, for a range query of the entries expired by t.
func LedgerBound(t time.Time) string {
	return fmt.Sprintf("%s%0*d$", LedgerPrefix, ledgerEpochDigits, ledgerEpoch(t))
}

// maxLedgerEpoch is the largest expiry a ledger key can hold.
const maxLedgerEpoch = 9_999_999_999

// ledgerEpoch returns t in epoch seconds, within what a ledger key holds.
func ledgerEpoch(t time.Time) int64 { return min(max(t.Unix(), 0), maxLedgerEpoch) }

// ValidateEntry reports whether rec.Entry names a ledger entry of rec (a
// LedgerSK of its expiry and ID), wrapping ErrInvalidInput; a record
// without one is valid. Stores check what they are asked to write with it.
func ValidateEntry(rec Record) error {
	if !rec.Ledgered() {
		return nil
	}
	exp, id, err := ParseLedgerSK(rec.Entry)
	if err != nil || id != rec.Message.ID || exp.Unix() != ledgerEpoch(rec.Message.ExpiresAt) {
		return fmt.Errorf("%w: ledger entry %q is not one of record %s expiring at %v", ErrInvalidInput, rec.Entry, rec.Message.ID, rec.Message.ExpiresAt)
	}
	return nil
}

// maxLedgerTagLen bounds the tag of a ledger entry's sort key.
const maxLedgerTagLen = 32

// ParseLedgerSK parses a sort key made by LedgerSK into the record's expiry
// and ID. Anything else is ErrInvalidKey.
func ParseLedgerSK(sk string) (expires time.Time, id string, err error) {
	rest, ok := strings.CutPrefix(sk, LedgerPrefix)
	parts := strings.Split(rest, "#")
	if !ok || len(parts) != 3 || len(parts[0]) != ledgerEpochDigits || parts[2] == "" || len(parts[2]) > maxLedgerTagLen {
		return time.Time{}, "", fmt.Errorf("%w: ledger key %q", ErrInvalidKey, sk)
	}
	sec, err := strconv.ParseUint(parts[0], 10, 63)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("%w: ledger key %q", ErrInvalidKey, sk)
	}
	for _, r := range parts[2] {
		if !('0' <= r && r <= '9' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z') {
			return time.Time{}, "", fmt.Errorf("%w: ledger key %q", ErrInvalidKey, sk)
		}
	}
	if err := ValidateMessageID(parts[1]); err != nil {
		return time.Time{}, "", err
	}
	return time.Unix(int64(sec), 0).UTC(), parts[1], nil
}

// NewLedgerSK returns the sort key of a new ledger entry of the record
// with key id expiring at expires, with a random tag.
func NewLedgerSK(expires time.Time, id string) string {
	return LedgerSK(expires, id, rand.Text()[:12])
}

// SnoozeSK returns the sort key of the snooze entry of the record whose
// ledger entry is entry (a LedgerSK), snoozed until until: dz#<until in
// epoch seconds, 10 digits>#<id>#<tag>, the record's ID and its entry's
// tag, so that an entry belongs to one record, not to another written
// later at its key. It sorts between the tombstones and the ledger
// entries, so that Stats reads a partition's snooze entries with its
// counters, in the same Query.
func SnoozeSK(until time.Time, entry string) string { return timedSK(SnoozePrefix, until, entry) }

// PendingSK returns the sort key of the pending entry of the scheduled
// record whose ledger entry is entry, due at at: dq#<at in epoch seconds,
// 10 digits>#<id>#<tag>. Like a snooze entry it sorts between the
// tombstones and the ledger entries.
func PendingSK(at time.Time, entry string) string { return timedSK(PendingPrefix, at, entry) }

// ParseTimedSK parses a sort key made by SnoozeSK or PendingSK into its
// time and the ledger entry of its record, whose expiry is expires. Any
// other key is ErrInvalidKey.
func ParseTimedSK(sk string, expires time.Time) (at time.Time, entry string, err error) {
	prefix := SnoozePrefix
	if strings.HasPrefix(sk, PendingPrefix) {
		prefix = PendingPrefix
	}
	rest, ok := strings.CutPrefix(sk, prefix)
	epoch, idTag, ok2 := strings.Cut(rest, "#")
	if !ok || !ok2 || len(epoch) != ledgerEpochDigits {
		return time.Time{}, "", fmt.Errorf("%w: key %q", ErrInvalidKey, sk)
	}
	sec, err := strconv.ParseUint(epoch, 10, 63)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("%w: key %q", ErrInvalidKey, sk)
	}
	entry = fmt.Sprintf("%s%0*d#%s", LedgerPrefix, ledgerEpochDigits, ledgerEpoch(expires), idTag)
	if _, _, err := ParseLedgerSK(entry); err != nil {
		return time.Time{}, "", fmt.Errorf("%w: key %q", ErrInvalidKey, sk)
	}
	return time.Unix(int64(sec), 0).UTC(), entry, nil
}

// timedSK returns <prefix><t in epoch seconds, 10 digits>#<id>#<tag> of
// ledger entry entry.
func timedSK(prefix string, t time.Time, entry string) string {
	idTag := entry
	if rest, ok := strings.CutPrefix(entry, LedgerPrefix); ok {
		if _, after, ok := strings.Cut(rest, "#"); ok {
			idTag = after
		}
	}
	return fmt.Sprintf("%s%0*d#%s", prefix, ledgerEpochDigits, ledgerEpoch(t), idTag)
}

// TombstoneSK returns the sort key of the tombstone of broadcast id: d#<id>.
func TombstoneSK(id string) string { return TombstonePrefix + id }

// MessageSK returns the sort key of message id: m#<id>.
func MessageSK(id string) string { return MessagePrefix + id }

// CounterSK returns the sort key of a stats record: c#<category>, or c#*
// for the total (category ""); in a user's partition, the read counters of
// one group's messages add #<group> (c#*#<group>, c#<category>#<group>).
// A category has no '#', so the seed's c#* and c#<category> stand apart.
func CounterSK(category, group string) string {
	sk := CounterPrefix + AllCategories
	if category != "" {
		sk = CounterPrefix + category
	}
	if group != "" {
		sk += "#" + group
	}
	return sk
}

// MutedCounterSK returns the key of a muted thread's counter of category
// ("" for all) in a user's partition (see Counter.Muted): c#<category>#?<thread>
// (c#*#?<thread>), which no group counter has, since no key holds a '?'.
// The dynamo Store keeps these counters on the partition's c#* item, not
// as items of their own.
func MutedCounterSK(category, thread string) string {
	return CounterSK(category, "") + "#?" + thread
}

// CoveredCounterSK returns the key of a covered thread's counter of
// category ("" for all) in a user's partition (see Counter.Covered):
// c#<category>#??<thread> for a thread of her direct messages,
// c#<category>#<group>#??<thread> for a thread of a group's messages,
// which no other counter has, since no key holds a '?'.
func CoveredCounterSK(category, thread, group string) string {
	return CounterSK(category, group) + "#??" + thread
}

// ThreadCounterSK returns the sort key of a thread's stats record:
// b#<thread> for the thread's own records of the partition (a user's direct
// messages, a shared partition's broadcasts), b#<thread>#<group> for a
// user's receipts of the thread's messages to group (PublicGroup for
// everyone's). It sorts before every c# key, so that Stats reads the
// stats of a partition's threads with the same Query when asked (see
// StatsQuery.Threads) and leaves them out otherwise.
func ThreadCounterSK(thread, group string) string {
	sk := ThreadStatsPrefix + thread
	if group != "" {
		sk += "#" + group
	}
	return sk
}

// ParseCounterSK parses a sort key made by CounterSK or ThreadCounterSK into
// the key fields of a Counter (Category, Group, Thread); anything else is
// ErrInvalidKey.
func ParseCounterSK(sk string) (Counter, error) {
	bad := fmt.Errorf("%w: stats key %q", ErrInvalidKey, sk)
	if rest, ok := strings.CutPrefix(sk, ThreadStatsPrefix); ok {
		thread, group, hasGroup := strings.Cut(rest, "#")
		if thread == "" || ValidateThread(thread) != nil || hasGroup && ValidateGroup(group) != nil {
			return Counter{}, bad
		}
		return Counter{Thread: thread, Group: group}, nil
	}
	rest, ok := strings.CutPrefix(sk, CounterPrefix)
	category, group, hasGroup := strings.Cut(rest, "#")
	if hasGroup && group == "" {
		ok = false
	}
	if category == AllCategories {
		category = ""
	} else if err := ValidateCategory(category); err != nil || category == "" {
		ok = false
	}
	if group != "" && ValidateGroup(group) != nil {
		ok = false
	}
	if !ok {
		return Counter{}, bad
	}
	return Counter{Category: category, Group: group}, nil
}

// TenantPK returns the partition key of a tenant's settings and inbox
// configs: t#<tenant>.
func TenantPK(tenant string) string { return "t#" + tenant }

// InboxConfigSK returns the sort key of an inbox's config: si#<inbox>.
func InboxConfigSK(inbox string) string { return InboxConfigPrefix + inbox }

// ValidateKey reports whether s can be used as a key component (what names
// it, e.g. "tenant", appears in the error). A key is 1 to MaxKeyLen bytes of
// valid UTF-8 with no '#' (the separator of the table's keys), no '*' or
// '?' (IAM's wildcards, so that a policy written from a key matches that
// key only) and no control or other non-printing characters.
func ValidateKey(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: %s is empty", ErrInvalidKey, what)
	case len(s) > MaxKeyLen:
		return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrInvalidKey, what, len(s), MaxKeyLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidKey, what)
	case strings.ContainsAny(s, "#*?"):
		return fmt.Errorf("%w: %s %q contains '#', '*' or '?'", ErrInvalidKey, what, s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) && r != ' ' {
			return fmt.Errorf("%w: %s %q contains a non-printing character", ErrInvalidKey, what, s)
		}
	}
	return nil
}

// ValidateCategory accepts "" (uncategorised) or a key (never "*", the
// total's sort key, since keys have no '*').
func ValidateCategory(c string) error {
	if c == "" {
		return nil
	}
	return ValidateKey("category", c)
}

// ValidateThread accepts "" (no thread) or a key.
func ValidateThread(t string) error {
	if t == "" {
		return nil
	}
	return ValidateKey("thread", t)
}

// ThreadIndexKey is the key of a record of thread t in the dynamo Store's
// thread index: the thread, then the record's ID, so that a thread's
// records sort together by ID.
func ThreadIndexKey(t, id string) string { return t + "#" + id }

// ValidateMessageID reports whether id is a canonical ULID string.
func ValidateMessageID(id string) error {
	u, err := ulid.ParseStrict(id)
	if err != nil || u.String() != id {
		return fmt.Errorf("%w: message id %q is not a ULID", ErrInvalidKey, id)
	}
	return nil
}

package inbox

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// PublicUser is the reserved user of the public partition, where a broadcast
// is stored once for everyone in the inbox. It cannot be used as a user ID.
const PublicUser = "$public"

// MaxKeyLen is the longest tenant, inbox, user or category key, in bytes.
const MaxKeyLen = 128

// MaxHostSystemIDLen is the longest Draft.HostSystemID, in bytes.
const MaxHostSystemIDLen = 256

// Scope names one inbox of one tenant. Its fields are named so that a tenant
// and an inbox cannot be swapped by position.
type Scope struct {
	Tenant string
	Inbox  string
}

// User returns the User with the given ID in this inbox.
func (s Scope) User(id string) User { return User{Scope: s, ID: id} }

// Validate reports whether both keys are valid, wrapping ErrInvalidKey.
func (s Scope) Validate() error {
	if err := ValidateKey("tenant", s.Tenant); err != nil {
		return err
	}
	return ValidateKey("inbox", s.Inbox)
}

// public returns the scope's public partition.
func (s Scope) public() Partition {
	return Partition{Tenant: s.Tenant, Inbox: s.Inbox, User: PublicUser}
}

// User is one user's inbox: a user ID within a Scope.
type User struct {
	Scope Scope
	ID    string
}

// Validate reports whether the scope and user ID are valid, wrapping
// ErrInvalidKey. The reserved PublicUser is rejected.
func (u User) Validate() error {
	if err := u.Scope.Validate(); err != nil {
		return err
	}
	return validateUserID(u.ID)
}

func validateUserID(id string) error {
	if err := ValidateKey("user", id); err != nil {
		return err
	}
	if id == PublicUser {
		return fmt.Errorf("%w: user %q is reserved", ErrInvalidKey, id)
	}
	return nil
}

// partition returns the user's partition.
func (u User) partition() Partition {
	return Partition{Tenant: u.Scope.Tenant, Inbox: u.Scope.Inbox, User: u.ID}
}

// Partition is a DynamoDB partition holding messages, receipts and stats:
// a user's (User is the user ID) or an inbox's public one (User is
// PublicUser).
type Partition struct {
	Tenant string
	Inbox  string
	User   string
}

// IsPublic reports whether p is an inbox's public partition.
func (p Partition) IsPublic() bool { return p.User == PublicUser }

// Scope returns the partition's tenant and inbox.
func (p Partition) Scope() Scope { return Scope{Tenant: p.Tenant, Inbox: p.Inbox} }

// PK returns the partition key: t#<tenant>U#<user>#<inbox> for a user and
// t#<tenant>G#$public#<inbox> for the public partition.
func (p Partition) PK() string {
	if p.IsPublic() {
		return "t#" + p.Tenant + "G#" + PublicUser + "#" + p.Inbox
	}
	return "t#" + p.Tenant + "U#" + p.User + "#" + p.Inbox
}

// Validate reports whether the partition's keys are valid.
func (p Partition) Validate() error {
	if err := p.Scope().Validate(); err != nil {
		return err
	}
	if p.IsPublic() {
		return nil
	}
	return validateUserID(p.User)
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
	user, inbox, ok := strings.Cut(rest, "#")
	if !ok {
		return Partition{}, fmt.Errorf("%w: partition key %q", ErrInvalidKey, pk)
	}
	p := Partition{Tenant: tenant, Inbox: inbox, User: user}
	switch {
	case kind == 'G' && user == PublicUser, kind == 'U' && user != PublicUser:
	default:
		return Partition{}, fmt.Errorf("%w: partition key %q", ErrInvalidKey, pk)
	}
	if err := p.Validate(); err != nil {
		return Partition{}, err
	}
	return p, nil
}

// Key addresses one message, public message or read receipt.
type Key struct {
	Partition Partition
	ID        string
}

// Sort-key prefixes and fixed sort keys of the table.
const (
	MessagePrefix     = "m#"                 // messages and receipts: m#<id>
	CounterPrefix     = "c#"                 // stats: c#* and c#<category>
	AllCategories     = "*"                  // the category of the c#* total
	TombstonePrefix   = "d#"                 // tombstones of removed broadcasts: d#<id>
	LedgerPrefix      = "e#"                 // ledger entries: e#<expiry>#<id>
	HostPrefix        = "h#"                 // host-system-id claims, in the public partition
	RemovalPrefix     = "x#"                 // applied-removal markers
	TenantSettingsSK  = "st#tenant_settings" // tenant settings, in TenantPK
	InboxConfigPrefix = "si#"                // inbox configs: si#<inbox>, in TenantPK
)

// LedgerAttribute names the attribute of a message, broadcast or receipt
// item that holds the sort key of its ledger entry; an item without it has
// no entry (another program wrote it). StreamHandler reads it from removed
// items' old images.
const LedgerAttribute = "ledger"

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

// newLedgerSK returns the sort key of a new ledger entry of the record
// with key id expiring at expires, with a random tag.
func newLedgerSK(expires time.Time, id string) string {
	return LedgerSK(expires, id, rand.Text()[:12])
}

// TombstoneSK returns the sort key of the tombstone of broadcast id: d#<id>.
func TombstoneSK(id string) string { return TombstonePrefix + id }

// MessageSK returns the sort key of message id: m#<id>.
func MessageSK(id string) string { return MessagePrefix + id }

// CounterSK returns the sort key of a category's stats record: c#<category>,
// or c#* for the total (category "").
func CounterSK(category string) string {
	if category == "" {
		return CounterPrefix + AllCategories
	}
	return CounterPrefix + category
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

// validateCategory accepts "" (uncategorised) or a key (never "*", the
// total's sort key, since keys have no '*').
func validateCategory(c string) error {
	if c == "" {
		return nil
	}
	return ValidateKey("category", c)
}

// ValidateMessageID reports whether id is a canonical ULID string.
func ValidateMessageID(id string) error {
	u, err := ulid.ParseStrict(id)
	if err != nil || u.String() != id {
		return fmt.Errorf("%w: message id %q is not a ULID", ErrInvalidKey, id)
	}
	return nil
}

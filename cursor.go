package inbox

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/oklog/ulid/v2"
)

// A cursor is base64url (no padding) of: a version byte, the 16-byte ULID
// the next page starts below, and 16 bytes of HMAC-SHA256 over the version,
// the ULID and what the cursor is bound to (tenant, inbox, user and filters).
const (
	cursorVersion = 1
	cursorMACLen  = 16
	cursorLen     = 1 + 16 + cursorMACLen
)

// cursorBinding is what a cursor is valid for: the user, the groups whose
// messages the feed merges, and the filters.
func cursorBinding(u User, o ListOptions) []byte {
	b := []byte(u.Scope.Tenant + "\x00" + u.Scope.Inbox + "\x00" + u.ID + "\x00" + o.Category + "\x00" + strconv.FormatBool(o.UnreadOnly) +
		"\x00" + o.UpTo + "\x00" + strconv.FormatBool(o.Archived))
	for _, p := range u.Shared()[1:] {
		b = append(b, "\x00"+p.Group...)
	}
	if o.Thread != "" {
		// After the groups, behind a byte no key holds: the bindings of
		// views without a thread are those made before threads.
		b = append(b, "\x01"+o.Thread...)
	}
	if o.Snoozed {
		b = append(b, "\x02snoozed"...) // likewise
	}
	return b
}

func (ib *Inbox) cursorMAC(body, binding []byte) []byte {
	m := hmac.New(sha256.New, ib.cursorKey)
	m.Write(body)
	m.Write(binding)
	return m.Sum(nil)[:cursorMACLen]
}

// encodeCursor returns the cursor of the page below message ID before. An
// ID that is not a ULID (a record some other tool wrote) is ErrInvalidKey.
func (ib *Inbox) encodeCursor(before string, binding []byte) (string, error) {
	id, err := ulid.ParseStrict(before)
	if err != nil {
		return "", fmt.Errorf("%w: stored message id %q is not a ULID", ErrInvalidKey, before)
	}
	body := append([]byte{cursorVersion}, id[:]...)
	return base64.RawURLEncoding.EncodeToString(append(body, ib.cursorMAC(body, binding)...)), nil
}

// decodeCursor returns the ID a cursor starts below. A malformed, tampered
// or foreign cursor is ErrInvalidCursor.
func (ib *Inbox) decodeCursor(c string, binding []byte) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(raw) != cursorLen || raw[0] != cursorVersion {
		return "", fmt.Errorf("%w: malformed", ErrInvalidCursor)
	}
	body := raw[:1+16]
	if !hmac.Equal(raw[1+16:], ib.cursorMAC(body, binding)) {
		return "", fmt.Errorf("%w: not issued for this user and filter, or altered", ErrInvalidCursor)
	}
	var id ulid.ULID
	copy(id[:], raw[1:1+16])
	return id.String(), nil
}

// A threads cursor (ListThreads) is base64url (no padding) of: the version
// byte threadsCursorVersion, the 16-byte ULID of the activity the next
// page starts below, the counter version (8 bytes, big-endian) of the view
// the page read of each shared partition of its user, in the order of
// User.Shared, and the HMAC, as a cursor's.
const threadsCursorVersion = 2

// encodeThreadsCursor returns the cursor of the threads below activity
// before, read through views of the shared partitions at versions.
func (ib *Inbox) encodeThreadsCursor(before string, versions []int64, binding []byte) (string, error) {
	id, err := ulid.ParseStrict(before)
	if err != nil {
		return "", fmt.Errorf("%w: stored message id %q is not a ULID", ErrInvalidKey, before)
	}
	body := append([]byte{threadsCursorVersion}, id[:]...)
	for _, v := range versions {
		body = binary.BigEndian.AppendUint64(body, uint64(v))
	}
	return base64.RawURLEncoding.EncodeToString(append(body, ib.cursorMAC(body, binding)...)), nil
}

// decodeThreadsCursor returns the activity a threads cursor starts below
// and the versions of the views its page read, n of them. A malformed,
// tampered or foreign cursor is ErrInvalidCursor.
func (ib *Inbox) decodeThreadsCursor(c string, n int, binding []byte) (string, []int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	size := 1 + 16 + 8*n
	if err != nil || len(raw) != size+cursorMACLen || raw[0] != threadsCursorVersion {
		return "", nil, fmt.Errorf("%w: malformed", ErrInvalidCursor)
	}
	body := raw[:size]
	if !hmac.Equal(raw[size:], ib.cursorMAC(body, binding)) {
		return "", nil, fmt.Errorf("%w: not issued for this user and filter, or altered", ErrInvalidCursor)
	}
	var id ulid.ULID
	copy(id[:], raw[1:1+16])
	versions := make([]int64, n)
	for i := range versions {
		versions[i] = int64(binary.BigEndian.Uint64(raw[1+16+8*i:]))
	}
	return id.String(), versions, nil
}

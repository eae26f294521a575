package inbox

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
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

package inbox

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/stak/inbox/driver"
)

func TestCursorRoundTrip(t *testing.T) {
	ib := New(nil)
	u := driver.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	o := ListOptions{Category: "billing", UnreadOnly: true}
	id := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	c, _ := ib.encodeCursor(id, cursorBinding(u, o))
	got, err := ib.decodeCursor(c, cursorBinding(u, o))
	if err != nil || got != id {
		t.Fatalf("decode = %q, %v; want %q", got, err, id)
	}

	foreign := []struct {
		name string
		u    User
		o    ListOptions
	}{
		{"other user", u.Scope.User("bob"), o},
		{"other inbox", Scope{Tenant: "acme", Inbox: "news"}.User("ann"), o},
		{"other tenant", Scope{Tenant: "beta", Inbox: "alerts"}.User("ann"), o},
		{"other category", u, ListOptions{Category: "ops", UnreadOnly: true}},
		{"other unread filter", u, ListOptions{Category: "billing"}},
	}
	for _, f := range foreign {
		if _, err := ib.decodeCursor(c, cursorBinding(f.u, f.o)); !errors.Is(err, ErrInvalidCursor) {
			t.Errorf("%s: %v, want ErrInvalidCursor", f.name, err)
		}
	}
	if _, err := New(nil, WithCursorSecret([]byte("other"))).decodeCursor(c, cursorBinding(u, o)); !errors.Is(err, ErrInvalidCursor) {
		t.Errorf("other secret: %v, want ErrInvalidCursor", err)
	}

	raw, _ := base64.RawURLEncoding.DecodeString(c)
	for i := range raw {
		for _, bit := range []byte{1, 0x80} {
			tampered := append([]byte(nil), raw...)
			tampered[i] ^= bit
			if _, err := ib.decodeCursor(base64.RawURLEncoding.EncodeToString(tampered), cursorBinding(u, o)); !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("flipping bit %#x of byte %d: %v, want ErrInvalidCursor", bit, i, err)
			}
		}
	}
	for _, bad := range []string{"x", c[:len(c)-1], c + "A", c + "=", "!!!!", base64.RawURLEncoding.EncodeToString(raw[:cursorLen-1])} {
		if _, err := ib.decodeCursor(bad, cursorBinding(u, o)); !errors.Is(err, ErrInvalidCursor) {
			t.Errorf("decodeCursor(%q) = %v, want ErrInvalidCursor", bad, err)
		}
	}
}

// FuzzDecodeCursor checks that decoding never panics, that anything
// accepted is a valid message ID, and that it re-encodes to the same cursor.
func FuzzDecodeCursor(f *testing.F) {
	ib := New(nil)
	u := driver.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	binding := cursorBinding(u, ListOptions{})
	first, _ := ib.encodeCursor("01ARZ3NDEKTSV4RRFFQ69G5FAV", binding)
	f.Add(first)
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, c string) {
		id, err := ib.decodeCursor(c, binding)
		if err != nil {
			if !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("error %v does not match ErrInvalidCursor", err)
			}
			return
		}
		if err := driver.ValidateMessageID(id); err != nil {
			t.Fatalf("accepted cursor decodes to bad ID %q: %v", id, err)
		}
		if again, _ := ib.encodeCursor(id, binding); again != c {
			t.Fatalf("cursor %q decodes to %q which encodes to %q", c, id, again)
		}
	})
}

// TestPositionCursor: a cursor of Scheduled and Due carries the position
// it starts after, of a user's copy or of a broadcast or group message
// (driver.ScheduledKey's group tail), and nothing else decodes: another
// binding or secret, a flipped bit, a cut or a signed body whose tail is
// no user or group is ErrInvalidCursor.
func TestPositionCursor(t *testing.T) {
	ib := New(nil)
	id := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	scope := Scope{Tenant: "acme", Inbox: "alerts"}
	binding := []byte("scheduled\x00acme\x00alerts")
	for _, p := range []Partition{scope.User("ann").Partition(), scope.Public(), scope.Group("ops")} {
		pos := driver.ScheduledKey(id, p)
		c, err := ib.encodePosition(pos, binding)
		if err != nil {
			t.Fatalf("encodePosition(%q): %v", pos, err)
		}
		if got, err := ib.decodePosition(c, binding); err != nil || got != pos {
			t.Errorf("decodePosition of %q's cursor = %q, %v", pos, got, err)
		}
		if _, err := ib.decodePosition(c, []byte("scheduled\x00acme\x00news")); !errors.Is(err, ErrInvalidCursor) {
			t.Errorf("%q's cursor with another binding: %v, want ErrInvalidCursor", pos, err)
		}
		if _, err := New(nil, WithCursorSecret([]byte("other"))).decodePosition(c, binding); !errors.Is(err, ErrInvalidCursor) {
			t.Errorf("%q's cursor with another secret: %v, want ErrInvalidCursor", pos, err)
		}
		raw, _ := base64.RawURLEncoding.DecodeString(c)
		for i := range raw {
			for _, bit := range []byte{1, 0x80} {
				tampered := append([]byte(nil), raw...)
				tampered[i] ^= bit
				if _, err := ib.decodePosition(base64.RawURLEncoding.EncodeToString(tampered), binding); !errors.Is(err, ErrInvalidCursor) {
					t.Fatalf("%q's cursor with bit %#x of byte %d flipped: %v, want ErrInvalidCursor", pos, bit, i, err)
				}
			}
		}
		for _, bad := range []string{c[:len(c)-1], c + "A", base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1]), base64.RawURLEncoding.EncodeToString(raw[1:])} {
			if _, err := ib.decodePosition(bad, binding); !errors.Is(err, ErrInvalidCursor) {
				t.Errorf("decodePosition(%q), cut from %q's cursor: %v, want ErrInvalidCursor", bad, pos, err)
			}
		}
	}
	// Signed with the right key and binding, a tail that is no position's
	// is refused all the same.
	u := ulid.MustParseStrict(id)
	for _, tail := range []string{"", "#", "##ops", "#ops#", "ann#", "a*", "#o?s", PublicGroup} {
		body := append(append([]byte{positionCursorVersion}, u[:]...), tail...)
		c := base64.RawURLEncoding.EncodeToString(append(body, ib.cursorMAC(body, binding)...))
		if got, err := ib.decodePosition(c, binding); !errors.Is(err, ErrInvalidCursor) {
			t.Errorf("a signed cursor with tail %q = %q, %v; want ErrInvalidCursor", tail, got, err)
		}
	}
	for _, pos := range []string{id, id + "#", id + "##", id + "##o#ps", "nope#ann"} {
		if c, err := ib.encodePosition(pos, binding); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("encodePosition(%q) = %q, %v; want ErrInvalidKey", pos, c, err)
		}
	}
}

// FuzzDecodePosition checks that decoding a position cursor never
// panics, and that anything accepted is a position (of a user's copy or
// of a shared record) that encodes to the same cursor.
func FuzzDecodePosition(f *testing.F) {
	ib := New(nil)
	binding := []byte("due\x00acme\x00alerts\x001\x002")
	scope := Scope{Tenant: "acme", Inbox: "alerts"}
	for _, p := range []Partition{scope.User("ann").Partition(), scope.Public(), scope.Group("ops")} {
		c, err := ib.encodePosition(driver.ScheduledKey("01ARZ3NDEKTSV4RRFFQ69G5FAV", p), binding)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(c)
	}
	f.Add("")
	f.Add("Ag")
	f.Fuzz(func(t *testing.T, c string) {
		pos, err := ib.decodePosition(c, binding)
		if err != nil {
			if !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("error %v does not match ErrInvalidCursor", err)
			}
			return
		}
		if _, _, err := driver.ParseScheduledKey(pos); err != nil {
			t.Fatalf("accepted cursor decodes to bad position %q: %v", pos, err)
		}
		if again, err := ib.encodePosition(pos, binding); err != nil || again != c {
			t.Fatalf("cursor %q decodes to %q which encodes to %q, %v", c, pos, again, err)
		}
	})
}

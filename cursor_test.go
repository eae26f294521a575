package inbox

import (
	"encoding/base64"
	"errors"
	"testing"

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

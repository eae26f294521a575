package inbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// TestRefusedRedactionRetiresNothing: a redaction by host system ID that
// is refused (no users for a direct message, another group than the
// message's) writes nothing: the claim stands, and a retry of the original
// publish or broadcast is still a retry, not a conflict.
func TestRefusedRedactionRetiresNothing(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	ib := inbox.New(memstore.New(memstore.WithClock(clock.Now)), inbox.WithClock(clock.Now))
	direct := inbox.Draft{Title: "direct", HostSystemID: "h-direct"}
	res, err := ib.Publish(ctx, scope, []string{"ann"}, direct)
	if err != nil {
		t.Fatal(err)
	}
	group := inbox.Draft{Title: "group", HostSystemID: "h-group"}
	msg, err := ib.BroadcastGroup(ctx, scope, "admins", group)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]inbox.Redaction{
		"a direct message without users":   {HostSystemID: "h-direct"},
		"a group message of another group": {HostSystemID: "h-group", Group: "eu"},
		"a direct message as a broadcast":  {HostSystemID: "h-direct", Group: inbox.PublicGroup},
	} {
		if n, err := ib.Redact(ctx, scope, r); n != 0 || !errors.Is(err, inbox.ErrInvalidInput) {
			t.Errorf("Redact(%s) = %d, %v; want 0, ErrInvalidInput", name, n, err)
		}
	}
	again, err := ib.Publish(ctx, scope, []string{"ann"}, direct)
	if err != nil || len(again.Duplicates) != 1 || again.Message.ID != res.Message.ID {
		t.Errorf("retried Publish after refused redactions: %+v, %v; want a duplicate of %s", again, err, res.Message.ID)
	}
	if m, err := ib.BroadcastGroup(ctx, scope, "admins", group); err != nil || m.ID != msg.ID {
		t.Errorf("retried BroadcastGroup after a refused redaction: %s, %v; want %s", m.ID, err, msg.ID)
	}
	// The right redaction still works, and retires the ID.
	if n, err := ib.Redact(ctx, scope, inbox.Redaction{HostSystemID: "h-group"}); n != 1 || err != nil {
		t.Errorf("Redact(h-group) = %d, %v; want 1, nil", n, err)
	}
	if _, err := ib.BroadcastGroup(ctx, scope, "admins", group); !errors.Is(err, inbox.ErrConflict) {
		t.Errorf("BroadcastGroup after its redaction: %v, want ErrConflict", err)
	}
}

// TestRedactRefusesWhatPublishRefuses: a host system ID that Publish
// refuses (a control character, invalid UTF-8, too long) is refused by
// Redact with the same error, not taken for one no message stands for.
func TestRedactRefusesWhatPublishRefuses(t *testing.T) {
	ctx := context.Background()
	ib := inbox.New(memstore.New())
	for _, host := range []string{"bad\x01id", "bad\xffid", string(make([]byte, inbox.MaxHostSystemIDLen+1))} {
		_, perr := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "x", HostSystemID: host})
		if perr == nil {
			t.Fatalf("Publish with host id %q: no error", host)
		}
		n, err := ib.Redact(ctx, scope, inbox.Redaction{HostSystemID: host, Users: []string{"ann"}})
		if n != 0 || err == nil || err.Error() != perr.Error() {
			t.Errorf("Redact(host id %q) = %d, %v; want Publish's error %v", host, n, err, perr)
		}
		for _, sentinel := range []error{inbox.ErrInvalidKey, inbox.ErrInvalidInput} {
			if errors.Is(perr, sentinel) != errors.Is(err, sentinel) {
				t.Errorf("Redact(host id %q): errors.Is(%v) differs from Publish's", host, sentinel)
			}
		}
	}
}

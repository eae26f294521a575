package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stak/inbox"
)

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLogOps checks what -log-ops wires: the Inbox main serves logs each
// operation an API call makes, without the user's ID or the message.
func TestLogOps(t *testing.T) {
	b, err := openStore(context.Background(), "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	ib, hub := b.wire(testScope, inbox.WithHooks(inbox.LogHooks(slog.New(slog.NewTextHandler(&logs, nil)))))
	a := newAPIWithHub(t, ib, nil, hub)
	a.publish("ops", map[string]any{"users": []string{"user-5b1e"}, "title": "title-9d0c"})
	a.counts("user-5b1e")
	out := logs.String()
	for _, want := range []string{`msg="inbox: operation" op=Publish tenant=acme inbox=alerts`, `op=Counts`, `outcome=ok`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	for _, secret := range []string{"user-5b1e", "title-9d0c"} {
		if strings.Contains(out, secret) {
			t.Errorf("log holds %q:\n%s", secret, out)
		}
	}
}

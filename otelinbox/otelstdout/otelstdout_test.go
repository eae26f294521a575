package otelstdout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/otelinbox/otelstdout"
)

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written.
func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestNew checks what Telemetry writes for a Publish: its span and its
// Store calls' (JSON objects with the service's name), and at Shutdown the
// metrics, among them inbox.operation.duration; no user ID.
func TestNew(t *testing.T) {
	ctx := context.Background()
	var out lockedBuffer
	tel, err := otelstdout.New(&out, "otelstdout-test", 0)
	if err != nil {
		t.Fatal(err)
	}
	ib := inbox.New(memstore.New(), inbox.WithHooks(tel.Hooks))
	if _, err := ib.Publish(ctx, inbox.Scope{Tenant: "acme", Inbox: "alerts"}, []string{"user-7f3a"}, inbox.Draft{Title: "Disk full"}); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans, metrics := 0, map[string]bool{}
	dec := json.NewDecoder(strings.NewReader(out.String()))
	for {
		var obj struct {
			Name         string
			Resource     []struct{ Key string }
			ScopeMetrics []struct{ Metrics []struct{ Name string } }
		}
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("output is not JSON objects: %v\n%s", err, out.String())
		}
		if strings.HasPrefix(obj.Name, "inbox.") {
			spans++
		}
		for _, sm := range obj.ScopeMetrics {
			for _, m := range sm.Metrics {
				metrics[m.Name] = true
			}
		}
	}
	text := out.String()
	if spans != 3 || !strings.Contains(text, `"Name":"inbox.Publish"`) || !strings.Contains(text, `"Name":"inbox.store.PutMessage"`) {
		t.Errorf("%d inbox spans, want 3 (Publish, its Config and PutMessage calls):\n%s", spans, text)
	}
	if !metrics["inbox.operation.duration"] {
		t.Errorf("metrics %v, want inbox.operation.duration", metrics)
	}
	if !strings.Contains(text, `"Value":"otelstdout-test"`) {
		t.Errorf("no service.name otelstdout-test in the output:\n%s", text)
	}
	if strings.Contains(text, "user-7f3a") {
		t.Errorf("the output holds the user's ID:\n%s", text)
	}
}

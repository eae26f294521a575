package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestOTel runs the example as main does, with -otel, on the in-memory
// store: a publish and a counts call over HTTP, then a stop, leave on
// stdout the spans of the Publish (its Store calls under it) and of the
// Counts, and the metrics, among them inbox.operation.duration; no user ID
// or title.
func TestOTel(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", addr, "-tenant", "acme", "-inbox", "alerts", "-dynamodb-endpoint", "", "-table", "", "-otel"}, &out)
	}()
	call := func(method, path, user, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-User", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for start := time.Now(); call("GET", "/counts", "ops", "") != http.StatusOK; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the example does not serve")
		}
	}
	if code := call("POST", "/messages", "ops", `{"users":["user-5b1e"],"title":"title-9d0c"}`); code != http.StatusCreated {
		t.Fatalf("POST /messages: %d", code)
	}
	if code := call("GET", "/counts", "user-5b1e", ""); code != http.StatusOK {
		t.Fatalf("GET /counts: %d", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return")
	}

	spans := map[string]int{}
	var metrics []string
	dec := json.NewDecoder(strings.NewReader(out.String()))
	for {
		var obj struct {
			Name         string
			ScopeMetrics []struct{ Metrics []struct{ Name string } }
		}
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("stdout is not JSON objects: %v\n%s", err, out.String())
		}
		spans[obj.Name]++
		for _, sm := range obj.ScopeMetrics {
			for _, m := range sm.Metrics {
				metrics = append(metrics, m.Name)
			}
		}
	}
	if spans["inbox.Publish"] != 1 || spans["inbox.store.PutMessage"] != 1 || spans["inbox.Counts"] < 2 {
		t.Errorf("spans %v; want one inbox.Publish with its inbox.store.PutMessage, and the inbox.Counts calls", spans)
	}
	found := false
	for _, m := range metrics {
		found = found || m == "inbox.operation.duration"
	}
	if !found {
		t.Errorf("metrics %v; want inbox.operation.duration", metrics)
	}
	for _, secret := range []string{"user-5b1e", "title-9d0c"} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("stdout holds %q", secret)
		}
	}
}

// TestFlags checks that -log-ops and -otel do not go together, and that
// -h is no failure of main's.
func TestFlags(t *testing.T) {
	if err := run(context.Background(), []string{"-log-ops", "-otel"}, io.Discard); err == nil || !strings.Contains(err.Error(), "-log-ops and -otel") {
		t.Errorf("-log-ops -otel: %v", err)
	}
	if err := run(context.Background(), []string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}

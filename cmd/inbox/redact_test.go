package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stak/inbox"
)

// TestRedactPartial: a redaction that removes some copies and then fails
// says how many it removed, and exits 1; run again it removes the rest.
func TestRedactPartial(t *testing.T) {
	f := newFixture(t)
	id := f.publish(t, f.scope, []string{"ann", "bob"}, inbox.Draft{Title: "Leaked"})
	// DynamoDB refuses every write to bob's partition.
	bob := f.scope.User("bob").Partition().PK()
	proxy := localProxy(t, func(w http.ResponseWriter, r *http.Request) bool {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		op := r.Header.Get("X-Amz-Target")
		write := strings.HasSuffix(op, ".TransactWriteItems") || strings.HasSuffix(op, ".UpdateItem") || strings.HasSuffix(op, ".PutItem") || strings.HasSuffix(op, ".DeleteItem")
		if !write || !bytes.Contains(body, []byte(bob)) {
			return false
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"com.amazon.coral.service#AccessDeniedException","message":"refused by the test"}`)
		return true
	})
	args := []string{"redact", "--tenant", "acme", "--inbox", "alerts", "--id", id, "--user", "ann", "--user", "bob"}
	r := cli(t, with(with(f.g, "--endpoint-url", proxy), args...)...)
	if r.code != exitError || !strings.Contains(r.stderr, "removed 1 copy") {
		t.Errorf("redact that fails for bob: exit %d, stderr %q; want 1, and that it removed 1 copy", r.code, r.stderr)
	}
	if got := f.counts(t, f.scope.User("ann")).Total; got != 0 {
		t.Errorf("ann counts %d messages, want her copy gone", got)
	}
	var removed map[string]int
	cli(t, with(f.g, args...)...).ok(t).decode(t, &removed)
	if removed["removed"] != 1 {
		t.Errorf("redact run again = %v, want bob's copy removed", removed)
	}
}

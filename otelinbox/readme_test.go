package otelinbox_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeExampleCompiles type-checks the Go example under "## Traces
// and metrics" in the inbox module's README.md against this package as it
// is, as the inbox module's TestReadmeExampleCompiles does for "## Use":
// the example is wrapped in a function, with the service's providers and
// Store as its parameters, in a test file that exists only in a go build
// overlay of this package, and vetted there, so nothing is written to the
// repository.
func TestReadmeExampleCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	raw, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Traces and metrics\n")
	section, _, _ = strings.Cut(section, "\n## ")
	_, code, ok2 := strings.Cut(section, "```go\n")
	code, _, ok3 := strings.Cut(code, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no Go example under ## Traces and metrics")
	}
	src := `package otelinbox_test

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/stak/inbox"
	"github.com/stak/inbox/otelinbox"
)

func readmeTraces(tp trace.TracerProvider, mp metric.MeterProvider, store inbox.Store) error {
` + code + `	_ = ib
	return nil
}
`
	dir := t.TempDir()
	file := filepath.Join(dir, "readme.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(wd, "readme_example_test.go"): file}})
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "vet", "-overlay", overlayFile, ".").CombinedOutput()
	if err != nil {
		t.Errorf("the README's Traces and metrics example does not compile: %v\n%s\n%s", err, out, src)
	}
}

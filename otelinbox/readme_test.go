package otelinbox_test

import (
	"path/filepath"
	"testing"

	"github.com/stak/inbox/internal/readmecheck"
)

// TestReadmeExampleCompiles type-checks the Go example under "## Traces
// and metrics" in the inbox module's README.md against this package as it
// is, as the inbox module's TestReadmeExampleCompiles does for "## Use":
// the example is wrapped in a function, with the service's providers and
// Store as its parameters, in a test file that exists only in a go build
// overlay of this package, and vetted there, so nothing is written to the
// repository.
func TestReadmeExampleCompiles(t *testing.T) {
	code := readmecheck.Snippet(t, filepath.Join("..", "README.md"), "Traces and metrics")
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
	readmecheck.Vet(t, ".", "readme_example_test.go", src)
}

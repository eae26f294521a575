package otelinbox_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stak/inbox/internal/readmecheck"
)

// TestDocsGoBlocksCompile type-checks the Go blocks of the inbox module's
// README.md and docs/*.md that use otelinbox, which the inbox module
// cannot import (its go.mod names no OpenTelemetry), against this package
// as it is: the inbox module's TestDocsGoBlocksCompile compiles the
// others. Each block is a package of its own in a go build overlay, so
// nothing is written to the repository.
func TestDocsGoBlocksCompile(t *testing.T) {
	guides, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmecheck.Block
	for _, b := range readmecheck.Go(readmecheck.Blocks(t, append([]string{filepath.Join("..", "README.md")}, guides...)...)) {
		free, err := readmecheck.Free(b)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(free, "otelinbox") {
			blocks = append(blocks, b)
		}
	}
	if len(blocks) == 0 {
		t.Fatal("no Go block of the docs uses otelinbox: the guide on what to watch shows how to turn it on")
	}
	env := readmecheck.Env{
		Imports: map[string]string{
			"metric":    "go.opentelemetry.io/otel/metric",
			"trace":     "go.opentelemetry.io/otel/trace",
			"inbox":     "github.com/stak/inbox",
			"otelinbox": "github.com/stak/inbox/otelinbox",
		},
		Vars: map[string]string{
			"tp":    "trace.TracerProvider",
			"mp":    "metric.MeterProvider",
			"store": "inbox.Store",
		},
	}
	readmecheck.CompileT(t, "docblocks", blocks, env)
}

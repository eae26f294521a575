package inbox_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeExampleCompiles type-checks the Go example under "## Use" in
// README.md against the package as it is: it is wrapped in a function, in
// a file that exists only in a go build overlay of internal/ddblocal, and
// vetted there, so nothing is written to the repository.
func TestReadmeExampleCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, use, _ := strings.Cut(string(raw), "## Use")
	_, code, ok := strings.Cut(use, "```go\n")
	code, _, ok2 := strings.Cut(code, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no Go example under ## Use")
	}
	src := `package ddblocal

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
)

func readmeExample(ctx context.Context, secret []byte) error {
` + code + `	_, _, _ = page, changed, counts
	return err
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
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(wd, "internal", "ddblocal", "readme_example.go"): file}})
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "vet", "-overlay", overlayFile, "./internal/ddblocal").CombinedOutput()
	if err != nil {
		t.Errorf("the README example does not compile: %v\n%s\n%s", err, out, src)
	}
}

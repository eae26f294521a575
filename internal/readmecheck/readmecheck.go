// Package readmecheck type-checks the Go examples of the repository's
// README.md, for the tests of each module that a README example uses: the
// example is written into a package through a go build overlay and vetted
// there, so nothing is written to the repository.
package readmecheck

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Snippet returns the first Go code block of the README at path under
// the heading "## <heading>" (before the next one), or fails t.
func Snippet(t testing.TB, path, heading string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## "+heading+"\n")
	section, _, _ = strings.Cut(section, "\n## ")
	_, code, ok2 := strings.Cut(section, "```go\n")
	code, _, ok3 := strings.Cut(code, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("%s has no Go example under ## %s", path, heading)
	}
	return code
}

// Vet runs go vet on package dir (relative to the working directory) with
// src in place of the file at, which need not exist, and fails t with the
// output if it does not pass. It skips t in -short mode.
func Vet(t testing.TB, dir, at, src string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go vet")
	}
	tmp := t.TempDir()
	file := filepath.Join(tmp, "readme.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(at)
	if err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{abs: file}})
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "vet", "-overlay", overlayFile, dir).CombinedOutput(); err != nil {
		t.Errorf("the README example does not compile: %v\n%s\n%s", err, out, src)
	}
}

package racetest_test

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// skippers are the helpers with which a test of this module skips under
// the race detector (or runs a part of itself only), for make test to run
// it whole without it.
var skippers = map[string]bool{"SkipUnderRace": true, "RunSuite": true, "runSuite": true}

// makeVar returns the value of the Makefile's variable name (name := value).
func makeVar(t *testing.T, makefile, name string) string {
	t.Helper()
	f, err := os.Open(makefile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" := "); ok {
			return strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("%s sets no %s", makefile, name)
	return ""
}

// TestNoRaceLineRunsWhatSkips: every test of the module that skips under
// the race detector (it calls one of skippers) is one that the Makefile's
// line without -race runs: its package is in NORACE_PKGS and its name
// matches NORACE_RUN. Otherwise make test would run it nowhere.
func TestNoRaceLineRunsWhatSkips(t *testing.T) {
	root := filepath.Join("..", "..")
	makefile := filepath.Join(root, "Makefile")
	run, err := regexp.Compile(makeVar(t, makefile, "NORACE_RUN"))
	if err != nil {
		t.Fatalf("NORACE_RUN: %v", err)
	}
	pkgs := map[string]bool{}
	for _, p := range strings.Fields(makeVar(t, makefile, "NORACE_PKGS")) {
		pkgs[filepath.Clean(p)] = true
	}
	found := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module: it cannot import internal/racetest
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			skips := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					switch f := call.Fun.(type) {
					case *ast.Ident:
						skips = skips || skippers[f.Name]
					case *ast.SelectorExpr:
						skips = skips || skippers[f.Sel.Name]
					}
				}
				return !skips
			})
			if !skips {
				continue
			}
			found++
			if !pkgs[filepath.Clean(rel)] || !run.MatchString(fn.Name.Name) {
				t.Errorf("%s skips under the race detector, and the Makefile's line without it does not run it (NORACE_PKGS %q, NORACE_RUN %q)", filepath.Join(rel, fn.Name.Name), makeVar(t, makefile, "NORACE_PKGS"), run)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Error("found no test that skips under the race detector: has the helpers' name changed?")
	}
}

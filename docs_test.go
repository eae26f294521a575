package inbox_test

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stak/inbox"
	"github.com/stak/inbox/internal/readmecheck"
)

// docs returns README.md and the guides under docs/.
func docs(t testing.TB) []string {
	t.Helper()
	guides, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil || len(guides) == 0 {
		t.Fatalf("no guides in docs/: %v", err)
	}
	return append([]string{"README.md"}, guides...)
}

// docEnv is what a Go block of the docs may use without declaring it:
// the packages a service imports, and the values a snippet stands on.
var docEnv = readmecheck.Env{
	Imports: map[string]string{
		"context":         "context",
		"errors":          "errors",
		"fmt":             "fmt",
		"slog":            "log/slog",
		"testing":         "testing",
		"time":            "time",
		"inbox":           "github.com/stak/inbox",
		"driver":          "github.com/stak/inbox/driver",
		"dynamo":          "github.com/stak/inbox/dynamo",
		"memstore":        "github.com/stak/inbox/memstore",
		"rediscache":      "github.com/stak/inbox/rediscache",
		"storetest":       "github.com/stak/inbox/storetest",
		"config":          "github.com/aws/aws-sdk-go-v2/config",
		"dynamodb":        "github.com/aws/aws-sdk-go-v2/service/dynamodb",
		"dynamodbstreams": "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams",
		"lambda":          "github.com/aws/aws-lambda-go/lambda",
		"redis":           "github.com/redis/go-redis/v9",
	},
	Vars: map[string]string{
		"ctx":        "context.Context",
		"ib":         "*inbox.Inbox",
		"store":      "*dynamo.Store",
		"secret":     "[]byte",
		"alerts":     "inbox.Scope",
		"ann":        "inbox.User",
		"id":         "string",
		"push":       "func(context.Context, inbox.Event) error",
		"lastRun":    "time.Time",
		"streams":    "*dynamodbstreams.Client",
		"streamARN":  "string",
		"deadLetter": "func(context.Context, dynamo.Failure)",
		"client":     "*redis.Client",
		"logger":     "*slog.Logger",
	},
}

// nestedModule are the package names only a nested module can import:
// a block that uses one is compiled by that module's test.
var nestedModule = map[string]string{"otelinbox": "otelinbox"}

// packageDocBlocks returns the code blocks of the package doc (doc.go),
// as Go blocks at their lines in doc.go.
func packageDocBlocks(t testing.TB) []readmecheck.Block {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", src, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil || f.Doc == nil {
		t.Fatalf("doc.go has no package doc: %v", err)
	}
	lines := strings.Split(string(src), "\n")
	var out []readmecheck.Block
	var p comment.Parser
	for _, b := range p.Parse(f.Doc.Text()).Content {
		code, ok := b.(*comment.Code)
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(code.Text, "\n")
		line := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(strings.TrimPrefix(l, "//")) == first })
		out = append(out, readmecheck.Block{File: "doc.go", Line: line + 1, Lang: "go", Code: code.Text})
	}
	return out
}

// TestDocsGoBlocksCompile type-checks every Go block of README.md and
// docs/*.md, and every code block of the package doc, against the packages
// as they are (see readmecheck.Compile); the blocks that use otelinbox are
// compiled by otelinbox's test.
func TestDocsGoBlocksCompile(t *testing.T) {
	blocks := append(readmecheck.Go(readmecheck.Blocks(t, docs(t)...)), packageDocBlocks(t)...)
	var here []readmecheck.Block
	for _, b := range blocks {
		free, err := readmecheck.Free(b)
		if err != nil {
			t.Fatal(err)
		}
		nested := false
		for _, name := range free {
			if _, ok := nestedModule[name]; ok {
				nested = true
			}
		}
		if !nested {
			here = append(here, b)
		}
	}
	if len(here) < 10 {
		t.Fatalf("%d Go blocks in the docs, want 10 or more: is the parser broken?", len(here))
	}
	readmecheck.CompileT(t, filepath.Join("internal", "readmecheck", "docblocks"), here, docEnv)
}

// TestDocsLinks fails on a link of the docs, or of the package doc, to a
// file or a heading that does not exist.
func TestDocsLinks(t *testing.T) {
	broken, err := readmecheck.BrokenLinks(".", append(docs(t), "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// TestDocsLength keeps the front door short: the README under 200 lines,
// its cost table at most 10 rows, and the package doc an overview.
func TestDocsLength(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n >= 200 {
		t.Errorf("README.md has %d lines, want under 200: move the detail to a guide in docs/", n)
	}
	if rows := tableRows(string(raw), "## What it costs"); len(rows) == 0 || len(rows) > 10 {
		t.Errorf("README.md's cost table has %d rows, want 1 to 10", len(rows))
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(doc), "\n"); n > 130 {
		t.Errorf("doc.go has %d lines, want about 100: move the detail to a guide in docs/", n)
	}
}

// tableRows returns the body rows of the first table under heading in the
// Markdown text src.
func tableRows(src, heading string) []string {
	_, section, ok := strings.Cut(src, "\n"+heading+"\n")
	if !ok {
		return nil
	}
	var rows []string
	started := false
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(line, "|"):
			started = true
			rows = append(rows, line)
		case started:
			return rows[min(2, len(rows)):] // the header and its rule
		case strings.HasPrefix(line, "#"):
			return nil
		}
	}
	return rows[min(2, len(rows)):]
}

// removedBenchmarks are benchmarks the docs still name that no longer
// exist, each with why it is allowed. Remove an entry when the docs stop
// naming it: the test fails on an entry no doc names.
var removedBenchmarks = map[string]string{}

// TestDocsCostsNameBenchmarks fails when a row of a cost table (the
// README's and docs/costs.md's) names no benchmark, or says no benchmark
// measured it, and when a doc names a benchmark that does not exist.
func TestDocsCostsNameBenchmarks(t *testing.T) {
	for file, heading := range map[string]string{"README.md": "## What it costs", filepath.Join("docs", "costs.md"): "## Per operation"} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rows := tableRows(string(raw), heading)
		if len(rows) == 0 {
			t.Errorf("%s has no cost table under %s", file, heading)
		}
		for _, r := range rows {
			if len(readmecheck.Benchmarks(r)) == 0 && !strings.Contains(r, "no benchmark") {
				t.Errorf("%s: a cost row names no benchmark: %.80s...", file, r)
			}
		}
	}
	// Every benchmark of the repository, from its declarations.
	exists := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Benchmark[A-Z]\w*)\(`)
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		raw, err := os.ReadFile(path)
		for _, m := range decl.FindAllStringSubmatch(string(raw), -1) {
			exists[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, f := range append(docs(t), "doc.go") {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range readmecheck.Benchmarks(string(raw)) {
			named[b] = true
			if !exists[b] && removedBenchmarks[b] == "" {
				t.Errorf("%s names %s, which no _test.go declares", f, b)
			}
		}
	}
	for b, why := range removedBenchmarks {
		if exists[b] || !named[b] {
			t.Errorf("removedBenchmarks lists %s (%s), which exists or no doc names: remove the entry", b, why)
		}
	}
}

// TestEveryInboxMethodHasExample fails when an exported method of *Inbox
// has no runnable example (ExampleInbox_<Method>, with an Output comment)
// in this package's tests, for go doc and pkg.go.dev to show.
func TestEveryInboxMethodHasExample(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	withOutput := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "ExampleInbox_") {
				continue
			}
			for _, c := range file.Comments {
				if c.Pos() > fn.Body.Lbrace && c.End() < fn.Body.Rbrace && strings.Contains(c.Text(), "Output:") {
					method, _, _ := strings.Cut(strings.TrimPrefix(fn.Name.Name, "ExampleInbox_"), "_")
					withOutput[method] = true
				}
			}
		}
	}
	typ := reflect.TypeFor[*inbox.Inbox]()
	var missing []string
	for i := range typ.NumMethod() {
		if m := typ.Method(i).Name; !withOutput[m] {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Errorf("Inbox methods without an ExampleInbox_<Method> with // Output: %v", missing)
	}
}

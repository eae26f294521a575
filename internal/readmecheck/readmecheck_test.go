package readmecheck

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestBlocks(t *testing.T) {
	src := "# T\n\n```go\nx := 1\n```\n\ntext\n\n```sh\nmake test\n```\n"
	got, err := parseBlocks("a.md", src)
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{{File: "a.md", Line: 4, Lang: "go", Code: "x := 1\n"}, {File: "a.md", Line: 10, Lang: "sh", Code: "make test\n"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseBlocks = %+v, want %+v", got, want)
	}
	if _, err := parseBlocks("a.md", "```go\nx := 1\n"); err == nil {
		t.Error("parseBlocks of an unclosed block: no error")
	}
}

func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Where to go next":                  "where-to-go-next",
		"The `inbox` command":               "the-inbox-command",
		"Costs, and why: a table":           "costs-and-why-a-table",
		"Publish -> table -> stream":        "publish---table---stream",
		"[Linked](x.md) heading":            "linked-heading",
		"Snake_case and CamelCase 2":        "snake_case-and-camelcase-2",
		"Consistency across processes (1s)": "consistency-across-processes-1s",
	} {
		if got := Slug(text); got != want {
			t.Errorf("Slug(%q) = %q, want %q", text, got, want)
		}
	}
	a := Anchors("# A\n## A\n```\n# not a heading\n```\n<a id=\"custom\"></a>\n#not-a-heading\n")
	if !reflect.DeepEqual(a, map[string]bool{"a": true, "a-1": true, "custom": true}) {
		t.Errorf("Anchors = %v", a)
	}
}

// TestBrokenLinks checks that every kind of broken link is reported, and
// nothing else.
func TestBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("docs/guide.md", "# Guide\n\n## The `inbox` command\n\nBack to [the README](../README.md#try-it).\n")
	readme := write("README.md", strings.Join([]string{
		"# Title",
		"## Try it",
		"[guide](docs/guide.md), [its command](docs/guide.md#the-inbox-command), [here](#try-it), [dir](docs/)",
		"[gone](docs/gone.md) and [no heading](docs/guide.md#no-such-heading) and [self](#nowhere)",
		"[site](https://example.com/x.md#y) ![img](docs/pic.png) `[code](not/checked.md)`",
		"```",
		"[in code](not/checked.md)",
		"```",
		"[ref]: docs/missing.md",
		"[anchor in a file that is not Markdown](docs/)",
	}, "\n"))
	gofile := write("doc.go", "// See "+RepoURL+"blob/main/docs/guide.md and\n// "+RepoURL+"blob/main/docs/none.md.\npackage x\n")
	got, err := BrokenLinks(root, []string{readme, filepath.Join(root, "docs", "guide.md"), gofile})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		readme + ":4: docs/gone.md: no such file",
		readme + ":4: docs/guide.md#no-such-heading: no such heading",
		readme + ":4: #nowhere: no such heading",
		readme + ":5: docs/pic.png: no such file",
		readme + ":9: docs/missing.md: no such file",
		gofile + ":2: " + RepoURL + "blob/main/docs/none.md: no such file",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("BrokenLinks =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBenchmarks(t *testing.T) {
	got := Benchmarks("3 RCU (`BenchmarkStates/seen`; BenchmarkChat, and BenchmarkStates again; not Benchmarks)")
	if want := []string{"BenchmarkStates", "BenchmarkChat"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Benchmarks = %v, want %v", got, want)
	}
}

// TestCompile checks that blocks of each kind compile in an environment,
// and that a block that does not compile, or uses a name nothing gives,
// is reported at its file and line.
func TestCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	env := Env{
		Imports: map[string]string{"fmt": "fmt", "strings": "strings"},
		Vars:    map[string]string{"name": "string", "b": "*strings.Builder"},
	}
	good := []Block{
		{File: "docs/a.md", Line: 3, Lang: "go", Code: "upper := strings.ToUpper(name) // declared, not used\nfmt.Fprint(b, name)\n"},
		{File: "docs/a.md", Line: 9, Lang: "go", Code: "if n := len(name); n > 0 {\n\tshort := name[:1]\n}\nreturn fmt.Errorf(\"x\")\n"},
		{File: "docs/a.md", Line: 20, Lang: "go", Code: "// Greet greets.\nfunc Greet() string { return \"hi \" + name }\n"},
		{File: "docs/a.md", Line: 30, Lang: "go", Code: "package main\n\nfunc main() {}\n"},
	}
	if err := Compile("testblocks", good, env); err != nil {
		t.Fatal(err)
	}
	for _, b := range good {
		if k := KindOf(b); k != map[int]Kind{3: Body, 9: Body, 20: Decls, 30: File}[b.Line] {
			t.Errorf("KindOf(%s) = %v", b, k)
		}
	}
	bad := Block{File: "docs/a.md", Line: 40, Lang: "go", Code: "fmt.Println(name)\nvar n int = \"not a number\"\n"}
	err := Compile("testblocks", append(good, bad), env)
	if err == nil || !strings.Contains(err.Error(), "docs/a.md:41") {
		t.Errorf("Compile of a bad block = %v; want an error at docs/a.md:41", err)
	}
	unknown := Block{File: "docs/a.md", Line: 50, Lang: "go", Code: "fmt.Println(undeclared)\n"}
	err = Compile("testblocks", []Block{unknown}, env)
	if err == nil || !strings.Contains(err.Error(), "docs/a.md:50") || !strings.Contains(err.Error(), "undeclared") {
		t.Errorf("Compile of a block with an unknown name = %v; want an error naming it", err)
	}
}

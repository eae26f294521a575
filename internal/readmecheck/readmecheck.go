// Package readmecheck keeps the repository's Markdown docs (README.md and
// docs/*.md) from rotting, for the tests of each module:
//
//   - Compile type-checks every Go block of the docs against the module as
//     it is: each block is written into a package of its own through a go
//     build overlay, so nothing is written to the repository;
//   - BrokenLinks finds the links to files and headings that do not exist;
//   - Benchmarks lists the benchmarks a text names, for a test to check
//     that each exists.
package readmecheck

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Block is a fenced code block of a Markdown file.
type Block struct {
	File string // the Markdown file, as passed to Blocks
	Line int    // the line of the block's first line of code, from 1
	Lang string // the fence's info string: "go", "sh", ...
	Code string // the block's lines, each ending in "\n"
}

func (b Block) String() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Blocks returns the fenced code blocks (``` fences) of the Markdown files
// in order, or fails t.
func Blocks(t testing.TB, files ...string) []Block {
	t.Helper()
	var out []Block
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := parseBlocks(f, string(raw))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bs...)
	}
	return out
}

// parseBlocks returns the fenced blocks of the Markdown text src of file.
func parseBlocks(file, src string) ([]Block, error) {
	var out []Block
	var cur *Block
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.HasPrefix(strings.TrimLeft(line, " "), "```")
		switch {
		case cur == nil && fence:
			cur = &Block{File: file, Line: n + 1, Lang: strings.TrimSpace(strings.TrimLeft(line, " `"))}
		case cur != nil && fence:
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.Code += line + "\n"
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: a code block is not closed", file, cur.Line-1)
	}
	return out, sc.Err()
}

// Go returns the blocks of language go.
func Go(blocks []Block) []Block {
	var out []Block
	for _, b := range blocks {
		if b.Lang == "go" {
			out = append(out, b)
		}
	}
	return out
}

// benchRE matches a benchmark's name, without its sub-benchmarks.
var benchRE = regexp.MustCompile(`\bBenchmark[A-Z][A-Za-z0-9_]*`)

// Benchmarks returns the names of the benchmarks text names
// ("BenchmarkStates", for "BenchmarkStates/seen"), each once, in order.
func Benchmarks(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range benchRE.FindAllString(text, -1) {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

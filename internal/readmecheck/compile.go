package readmecheck

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Compile type-checks the Go blocks with go build, in the module of the
// working directory, and returns go build's output as an error if any
// does not compile; the output names each error by the block's file and
// line. Each block becomes a package of its own, in directory dir/bN
// (relative to the working directory, inside the module; it need not
// exist, as the files exist only in a go build overlay):
//
//   - a block that starts with a package clause is a whole file, as is
//     but for its package's name;
//   - a block of declarations (funcs, types, vars) gets the imports and
//     env.Vars it uses;
//   - any other block is the body of a function returning error, with the
//     imports and env.Vars it uses; a variable it declares and does not
//     use is not an error, as a block often ends with the value it shows.
//
// A block that uses a name it does not declare, which is neither in env
// nor predeclared, is an error.
func Compile(dir string, blocks []Block, env Env) error {
	if len(blocks) == 0 {
		return nil
	}
	tmp, err := os.MkdirTemp("", "readmecheck")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	replace := map[string]string{}
	var pkgs []string
	for i, b := range blocks {
		src, err := source(b, env)
		if err != nil {
			return err
		}
		file := filepath.Join(tmp, fmt.Sprintf("b%d.go", i))
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			return err
		}
		pkg := filepath.Join(dir, fmt.Sprintf("b%d", i))
		at, err := filepath.Abs(filepath.Join(pkg, "block.go"))
		if err != nil {
			return err
		}
		replace[at] = file
		pkgs = append(pkgs, "./"+filepath.ToSlash(pkg))
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return err
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		return err
	}
	// No package is main (see source), so go build writes nothing.
	out, err := exec.Command("go", append([]string{"build", "-overlay", overlayFile}, pkgs...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("a Go block of the docs does not compile: %v\n%s", err, out)
	}
	return nil
}

// CompileT runs Compile and fails t with its error; it skips t in -short
// mode, as go build takes seconds.
func CompileT(t testing.TB, dir string, blocks []Block, env Env) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go build")
	}
	if err := Compile(dir, blocks, env); err != nil {
		t.Error(err)
	}
}

// Env is what a Go block of the docs may use without declaring it.
type Env struct {
	// Vars maps a variable's name to its type, a Go type expression over
	// the packages of Imports: "ctx": "context.Context".
	Vars map[string]string
	// Imports maps a package's name to its import path: "inbox":
	// "github.com/stak/inbox".
	Imports map[string]string
}

// Kind is how Compile takes a block.
type Kind int

// The kinds of block.
const (
	Body  Kind = iota // statements: the body of a function returning error
	Decls             // declarations: funcs, types, vars, consts
	File              // a whole Go file, with its package clause
)

// KindOf returns how Compile takes the Go block b.
func KindOf(b Block) Kind {
	if _, err := parser.ParseFile(token.NewFileSet(), "", b.Code, parser.PackageClauseOnly); err == nil {
		return File
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+b.Code, 0); err == nil {
		return Decls
	}
	return Body
}

// Free returns the names block b uses and does not declare (package names
// included, predeclared ones left out), sorted; for a whole file, none.
func Free(b Block) ([]string, error) {
	_, free, _, err := parseBlock(b)
	return free, err
}

// bodyPrefix opens the function a Body block is parsed in.
const bodyPrefix = "package p\nfunc _() error {\n"

// parseBlock parses b and returns its kind, the free names it uses and,
// for a Body block, its code with a use (_ = x) after each statement that
// declares variables.
func parseBlock(b Block) (Kind, []string, string, error) {
	kind := KindOf(b)
	if kind == File {
		// Package main would be linked, and written: rename it.
		f, err := parser.ParseFile(token.NewFileSet(), b.File, b.Code, parser.PackageClauseOnly)
		if err != nil {
			return kind, nil, "", err
		}
		at := int(f.Name.Pos()) - 1 // the file's base is 1
		return kind, nil, b.Code[:at] + "blocks" + b.Code[at+len(f.Name.Name):], nil
	}
	prefix, suffix := "package p\n", ""
	if kind == Body {
		prefix, suffix = bodyPrefix, "\n}\n"
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, b.File, prefix+b.Code+suffix, 0)
	if err != nil {
		return kind, nil, "", fmt.Errorf("%s: %v", b, err)
	}
	seen := map[string]bool{}
	var free []string
	for _, id := range f.Unresolved {
		if !seen[id.Name] && types.Universe.Lookup(id.Name) == nil {
			seen[id.Name] = true
			free = append(free, id.Name)
		}
	}
	sort.Strings(free)
	if kind != Body {
		return kind, free, b.Code, nil
	}
	// Insert "; _ = x" after each statement of a statement list that
	// declares x, from the last to the first.
	type use struct {
		at    int
		names []string
	}
	var uses []use
	list := func(stmts []ast.Stmt) {
		for _, s := range stmts {
			var names []string
			switch s := s.(type) {
			case *ast.AssignStmt:
				if s.Tok == token.DEFINE {
					for _, e := range s.Lhs {
						if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
							names = append(names, id.Name)
						}
					}
				}
			case *ast.DeclStmt:
				if g, ok := s.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
					for _, sp := range g.Specs {
						for _, id := range sp.(*ast.ValueSpec).Names {
							if id.Name != "_" {
								names = append(names, id.Name)
							}
						}
					}
				}
			}
			if len(names) > 0 {
				uses = append(uses, use{fset.Position(s.End()).Offset - len(prefix), names})
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt:
			list(n.List)
		case *ast.CaseClause:
			list(n.Body)
		case *ast.CommClause:
			list(n.Body)
		}
		return true
	})
	code := b.Code
	sort.Slice(uses, func(i, j int) bool { return uses[i].at > uses[j].at })
	for _, u := range uses {
		if u.at < 0 || u.at > len(code) {
			continue
		}
		var ins strings.Builder
		for _, n := range u.names {
			ins.WriteString("; _ = " + n)
		}
		code = code[:u.at] + ins.String() + code[u.at:]
	}
	// The function needs a terminating statement unless the block ends
	// in a return.
	body := f.Decls[0].(*ast.FuncDecl).Body.List
	if len(body) == 0 {
		code += "return nil\n"
	} else if _, ok := body[len(body)-1].(*ast.ReturnStmt); !ok {
		code += "return nil\n"
	}
	return kind, free, code, nil
}

// source returns the Go file that compiles block b in env.
func source(b Block, env Env) (string, error) {
	kind, free, code, err := parseBlock(b)
	if err != nil {
		return "", err
	}
	directive := fmt.Sprintf("//line %s:%d\n", filepath.ToSlash(b.File), b.Line)
	if kind == File {
		return directive + code, nil
	}
	imports := map[string]bool{}
	var vars []string
	for _, name := range free {
		if _, ok := env.Imports[name]; ok {
			imports[name] = true
			continue
		}
		typ, ok := env.Vars[name]
		if !ok {
			return "", fmt.Errorf("%s: the block uses %s, which it does not declare and the test's environment does not give", b, name)
		}
		expr, err := parser.ParseExpr(typ)
		if err != nil {
			return "", fmt.Errorf("the type of %s, %q: %v", name, typ, err)
		}
		ast.Inspect(expr, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok {
					if _, known := env.Imports[id.Name]; !known {
						err = fmt.Errorf("the type of %s, %q, uses package %s, which the environment does not import", name, typ, id.Name)
					}
					imports[id.Name] = true
				}
			}
			return true
		})
		if err != nil {
			return "", err
		}
		vars = append(vars, fmt.Sprintf("var %s %s\n", name, typ))
	}
	var src strings.Builder
	src.WriteString("package blocks\n\n")
	names := make([]string, 0, len(imports))
	for n := range imports {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&src, "import %s %q\n", n, env.Imports[n])
	}
	for _, v := range vars {
		src.WriteString(v)
	}
	if kind == Body {
		src.WriteString("\nfunc _() error {\n" + directive + code + "}\n")
	} else {
		src.WriteString("\n" + directive + code)
	}
	return src.String(), nil
}

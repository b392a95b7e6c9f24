package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the most lines a function of the repository's code may
// take, from its func line to its closing brace; a longer one is cut where
// its logic has seams.
const maxFuncLines = 80

// TestFunctionsAreShort: no function outside a test file, in this module or
// in the modules beside it (examples, the zoo), is longer than
// maxFuncLines.
func TestFunctionsAreShort(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSpace(string(out))
	fset := token.NewFileSet()
	funcs := 0
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == "node_modules" || d.Name() == "testdata" || d.Name() == "build" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			funcs++
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s: %s is %d lines (at most %d)", rel, fd.Name.Name, n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if funcs < 1000 {
		t.Errorf("only %d functions read: the test no longer reads the code", funcs)
	}
}

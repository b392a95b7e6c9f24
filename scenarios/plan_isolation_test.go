package scenarios

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// compileSide are the functions allowed to hold a spec: Compile and its
// helpers (every function of plan.go), Run and runBounded (one compiles
// each attempt, and hands the outcome the spec as written for the run
// folder's copy and a replay; the other logs the spec's name), and
// RunMany's (runMany's) ordering of jobs by their specs' length before any plan exists,
// and a hunt's round (huntRound), which runs jobs as RunMany does and names
// the spec of one it could not run.
var compileSide = map[string]bool{"Run": true, "runBounded": true, "RunMany": true, "runMany": true, "expectedLength": true,
	"huntRound": true}

// collaborators are the packages the runner runs a plan with (its clients'
// connections, the topology, the observers): they too are the runner, and
// none of them may touch a spec, compiling side or not.
var collaborators = []string{"client", "observe", "topology"}

// TestRunnerNeverReadsTheSpec: the runner executes a plan and never looks
// at the spec. A test that zeroed a plan's spec and ran it would only see
// the code paths that one run takes (no Sentinel, no exploration...), so
// this one reads every path: it type-checks the package (its dependencies
// from `go list -export`) and fails on any expression, in any function
// outside the compiling side, whose type is the spec (Spec or *Spec,
// whatever it is called there): a field of run or of the plan that carries
// it, a parameter, a read of Outcome.Spec or Job.Spec, a call returning
// one. It checks types, not names, so no renaming gets past it; and it
// checks itself on a function planted to read the spec. The runner's
// collaborators (collaborators) are checked the same way.
func TestRunnerNeverReadsTheSpec(t *testing.T) {
	planted := `package scenarios

func plantedForTest(o *Outcome) int { return o.Spec.Keys }
`
	readers, allowed := specReaders(t, ".", planted)
	if allowed == 0 {
		t.Fatal("no spec in the compiling side either: the check sees nothing")
	}
	if !slices.ContainsFunc(readers, func(r string) bool { return strings.HasPrefix(r, "plantedForTest:") }) {
		t.Fatalf("the check must flag the planted reader, got %v", readers)
	}
	readers, _ = specReaders(t, ".", "")
	for _, dir := range collaborators {
		r, _ := specReaders(t, dir, "")
		readers = append(readers, r...)
	}
	for _, r := range readers {
		t.Errorf("the runner reads the spec in %s: give the plan the value it needs (Compile)", r)
	}
}

// specReaders type-checks the files of the package in dir (and extra, a
// file's source, when set) and returns the functions outside the compiling
// side (which only the runner's own package, dir ".", has) that touch a
// spec, each as "name: file:line", and how many spec expressions the
// compiling side has.
func specReaders(t *testing.T, dir, extra string) (readers []string, allowed int) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if extra != "" {
		f, err := parser.ParseFile(fset, "planted.go", extra, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: exportImporter(t, fset, dir)}
	if _, err := conf.Check(path.Join("github.com/lockstorm/lockstorm/scenarios", dir), fset, files, info); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		runner := dir == "."
		onCompileSide := runner && fset.Position(f.Pos()).Filename == "plan.go"
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			n := specExprs(fd, info)
			switch {
			case n == 0:
			case onCompileSide || runner && compileSide[fd.Name.Name]:
				allowed += n
			default:
				readers = append(readers, fd.Name.Name+": "+fset.Position(fd.Pos()).String())
			}
		}
	}
	sort.Strings(readers)
	return readers, allowed
}

// specExprs counts the expressions of fd (its signature included) whose
// type is the spec.
func specExprs(fd *ast.FuncDecl, info *types.Info) int {
	n := 0
	ast.Inspect(fd, func(node ast.Node) bool {
		if e, ok := node.(ast.Expr); ok {
			if tv, ok := info.Types[e]; ok && isSpec(tv.Type) {
				n++
			}
		}
		return true
	})
	return n
}

// isSpec says whether t is scenarios/spec's Spec or a pointer to it.
func isSpec(t types.Type) bool {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	named, ok := types.Unalias(t).(*types.Named)
	if !ok || named.Obj().Pkg() == nil {
		return false
	}
	return named.Obj().Name() == "Spec" && named.Obj().Pkg().Path() == "github.com/lockstorm/lockstorm/scenarios/spec"
}

// exportImporter imports the dependencies of the package in dir from the
// export data `go list -export` names (built, or found in the build cache).
func exportImporter(t *testing.T, fset *token.FileSet, dir string) types.Importer {
	t.Helper()
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", "./"+dir).Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, os.ErrNotExist
		}
		return os.Open(file)
	})
}

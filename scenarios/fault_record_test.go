package scenarios

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// TestFaultRecordReadByNothing: a fault's parameters are read through its
// kind's parameter struct alone (nemesis.Build, New, ParamText); the flat
// nemesis.Spec holds only the YAML's record of them. This type-checks the
// packages that use faults outside nemesis and fails on any use of a
// parameter field of nemesis.Spec (a read, a write, a key of a composite
// literal); it checks itself on a planted reader.
func TestFaultRecordReadByNothing(t *testing.T) {
	planted := `package scenarios

import "github.com/lockstorm/lockstorm/scenarios/nemesis"

func plantedForTest(s nemesis.Spec) bool { return s.Latency > 0 }
`
	if uses := recordUses(t, ".", planted); !slices.ContainsFunc(uses, func(u string) bool { return strings.HasPrefix(u, "planted.go") }) {
		t.Fatalf("the check must flag the planted reader, got %v", uses)
	}
	var uses []string
	for _, dir := range []string{".", "spec", "shrink", "client", "observe", "topology", "../cmd/lockstorm", "../internal/bench"} {
		uses = append(uses, recordUses(t, dir, "")...)
	}
	for _, u := range uses {
		t.Errorf("%s uses a fault parameter of nemesis.Spec: read it through the kind's parameter struct", u)
	}
}

// recordUses type-checks the package in dir (with extra, a file's source,
// when set) and returns where it names a parameter field of nemesis.Spec.
func recordUses(t *testing.T, dir, extra string) []string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
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
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: exportImporter(t, fset, dir)}
	pkg, err := conf.Check(path.Join("github.com/lockstorm/lockstorm/scenarios", dir), fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	params := paramFields(pkg)
	if params == nil {
		return nil // the package does not import nemesis
	}
	var out []string
	for id, obj := range info.Uses {
		if v, ok := obj.(*types.Var); ok && params[v] {
			out = append(out, fset.Position(id.Pos()).String()+": "+id.Name)
		}
	}
	slices.Sort(out)
	return out
}

// paramFields are the fields of nemesis.Spec, as pkg imported it, that hold
// parameters: every field but the timing and the targets.
func paramFields(pkg *types.Package) map[*types.Var]bool {
	notParams := append([]string{"hosts", "clients", "nodes", "pick"}, nemesis.TimingFields...)
	for _, imp := range pkg.Imports() {
		if imp.Path() != "github.com/lockstorm/lockstorm/scenarios/nemesis" {
			continue
		}
		st := imp.Scope().Lookup("Spec").Type().Underlying().(*types.Struct)
		out := map[*types.Var]bool{}
		for i := range st.NumFields() {
			key, _, _ := strings.Cut(reflect.StructTag(st.Tag(i)).Get("yaml"), ",")
			if !slices.Contains(notParams, key) {
				out[st.Field(i)] = true
			}
		}
		return out
	}
	return nil
}

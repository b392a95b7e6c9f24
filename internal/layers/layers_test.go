package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/lockstorm/lockstorm"

// TestImportsPointDown reads `go list` for every package of the module and
// fails on an import of a package of the same or a higher layer, and on a
// package that has no layer.
func TestImportsPointDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		layer, ok := Order[pkg]
		if !ok {
			t.Errorf("%s has no layer: give it one in Order (internal/layers/doc.go)", pkg)
			continue
		}
		seen++
		for _, imp := range f[1:] {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if l, ok := Order[dep]; ok && l >= layer {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must point down", pkg, layer, dep, l)
			}
		}
	}
	if seen < len(Order)-1 {
		t.Errorf("go list showed %d of the %d packages in Order: a package was moved or removed without updating Order", seen, len(Order))
	}
}

package layers

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureMapIsTrue: every package, folder and file that
// ARCHITECTURE.md names in backquotes exists, and every package of the
// module is in its layer table (the map stays true as the code moves).
func TestArchitectureMapIsTrue(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSpace(string(out))
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{} // base names of the module's files
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files[d.Name()] = true
		}
		return nil
	})
	named := 0
	for _, m := range regexp.MustCompile("`([a-z][a-z0-9_/.*-]*)`").FindAllStringSubmatch(string(doc), -1) {
		name := strings.TrimSuffix(m[1], "/")
		switch {
		case strings.Contains(name, "*"):
			dir := filepath.Dir(name)
			if matches, _ := filepath.Glob(filepath.Join(root, "scenarios", dir, "*")); len(matches) == 0 {
				if matches, _ := filepath.Glob(filepath.Join(root, name)); len(matches) == 0 {
					t.Errorf("ARCHITECTURE.md names %s: nothing matches", name)
				}
			}
		case strings.Contains(name, "/"):
			if _, err := os.Stat(filepath.Join(root, name)); err != nil {
				t.Errorf("ARCHITECTURE.md names %s, which does not exist", name)
			}
		case strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".md"):
			if !files[name] {
				t.Errorf("ARCHITECTURE.md names %s, which no folder holds", name)
			}
		default:
			continue
		}
		named++
	}
	if named < 30 {
		t.Errorf("only %d paths named: the test no longer reads the map", named)
	}
	for pkg := range Order {
		if !strings.Contains(string(doc), "`"+pkg+"`") {
			t.Errorf("package %s is not on the map", pkg)
		}
	}
}

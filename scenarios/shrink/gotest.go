package shrink

import (
	"bytes"
	"fmt"
	"go/format"
	"strconv"
	"strings"
	"unicode"
)

// GoTest is the minimal witness as a Go test file of package pkg: one
// test function that writes the spec (as File writes it, source naming
// where it came from) to a temporary file and runs it through
// locktest against lock, a Go expression of type lockimpl.Info (for a
// registered lock, "mustLookup(t, NAME)", which the file defines). The
// test passes while the lock fails as the witness says (the spec's
// expected verdict is the one kept): once the lock is fixed, set the
// spec's expected entry to safe and it guards the fix.
func (r *Result) GoTest(pkg, source, lock string) ([]byte, error) {
	spec, err := r.File(source, "")
	if err != nil {
		return nil, err
	}
	name := "TestWitness" + ident(strings.TrimSuffix(r.Original.Name, "-random")) + ident(r.Impl)
	registered := lock == ""
	if registered {
		lock = fmt.Sprintf("mustLookup(t, %q)", r.Impl)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code written by lockstorm shrink: the minimal witness of %s × %s, seed %d.\n\n", r.Original.Name, r.Impl, r.Seed)
	fmt.Fprintf(&b, "package %s\n\nimport (\n\t\"os\"\n\t\"path/filepath\"\n\t\"testing\"\n\n\t\"github.com/lockstorm/lockstorm/locktest\"\n", pkg)
	if registered {
		b.WriteString("\t\"github.com/lockstorm/lockstorm/lockimpl\"\n")
	}
	b.WriteString(")\n\n")
	fmt.Fprintf(&b, "// %s replays the witness: %s.\n", name, r.BeforeAfter())
	fmt.Fprintf(&b, "// It reproduced %s.\n", r.Rate())
	fmt.Fprintf(&b, "func %s(t *testing.T) {\n", name)
	b.WriteString("\tpath := filepath.Join(t.TempDir(), \"witness.yaml\")\n")
	b.WriteString("\tif err := os.WriteFile(path, []byte(witnessSpec), 0o644); err != nil {\n\t\tt.Fatal(err)\n\t}\n")
	fmt.Fprintf(&b, "\tlocktest.Run(t, %s, locktest.Battery{Scenarios: []string{path}})\n}\n\n", lock)
	if registered {
		b.WriteString("func mustLookup(t *testing.T, name string) lockimpl.Info {\n\tt.Helper()\n\tinfo, err := lockimpl.Lookup(name)\n\tif err != nil {\n\t\tt.Fatal(err)\n\t}\n\treturn info\n}\n\n")
	}
	fmt.Fprintf(&b, "const witnessSpec = %s\n", goString(string(spec)))
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("shrink: the witness test: %w", err)
	}
	return out, nil
}

// goString quotes s as a raw string when it can, else as an interpreted one.
func goString(s string) string {
	if !strings.Contains(s, "`") {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}

// ident makes a name CamelCase Go: del-race × set-nx-px → DelRace, SetNxPx.
func ident(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

package clock

import (
	"errors"
	"os"
	"testing"
)

func TestEnsureShimCaches(t *testing.T) {
	dir := t.TempDir()
	p1, err := EnsureShim(dir)
	if errors.Is(err, ErrNoGCC) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	st1, err := os.Stat(p1)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := EnsureShim(dir)
	if err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(p2)
	if p1 != p2 || !os.SameFile(st1, st2) || !st1.ModTime().Equal(st2.ModTime()) {
		t.Fatalf("second EnsureShim rebuilt: %s vs %s", p1, p2)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("cache dir holds %d entries, want just the shim", len(ents))
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// TestShrinkCommand: `lockstorm shrink` refuses bad input with exit 2
// before anything runs, refuses a safe run folder with exit 1 (nothing to
// shrink, nothing run), and shrinks a failing one (del-race × setnx-del)
// to a minimal.yaml that `lockstorm run --scenario` loads and that fails
// as expected on seeds the shrink never judged it on.
func TestShrinkCommand(t *testing.T) {
	cluster.RequireRedisServer(t)
	bin := buildBinary(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no input", []string{"shrink"}, "usage: lockstorm shrink"},
		{"two locks", []string{"shrink", "--impl", "getset", "--exec", "python3 x.py", "del-race"}, "name the lock twice"},
		{"no seeds", []string{"shrink", "--seeds", "0", "--impl", "getset", "del-race"}, "--seeds 0"},
		{"bad share", []string{"shrink", "--share", "1.5", "--impl", "getset", "del-race"}, "--share 1.5"},
		{"unknown impl", []string{"shrink", "--impl", "zookeeper", "del-race"}, "--impl zookeeper"},
		{"which lock", []string{"shrink", "del-race"}, "name one with --impl"},
		{"not a run folder", []string{"shrink", t.TempDir()}, "summary.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, bin, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "shrink: #0") {
				t.Errorf("exit %d, stderr %q; want 2 and %q, nothing run", code, stderr, tc.want)
			}
		})
	}
	out := t.TempDir()
	for _, impl := range []string{"set-nx-px", "setnx-del"} {
		if _, stderr, code := runCLI(t, bin, "run", "--scenario", "del-race", "--impl", impl, "--backend", "redis-server", "--keep", "all", "--out", out); code != 0 {
			t.Fatalf("run %s: exit %d: %s", impl, code, stderr)
		}
	}
	safe := runFolder(t, out, "set-nx-px")
	_, stderr, code := runCLI(t, bin, "shrink", safe)
	if code != 1 || !strings.Contains(stderr, "nothing to shrink") || !strings.Contains(stderr, "was safe") || strings.Contains(stderr, "shrink: #0") {
		t.Errorf("shrink of a safe run: exit %d, stderr %q; want 1, 'nothing to shrink ... was safe', nothing run", code, stderr)
	}
	failing := runFolder(t, out, "setnx-del")
	stdout, stderr, code := runCLI(t, bin, "shrink", "--seeds", "2", "--budget", "6s", failing)
	if code != 0 {
		t.Fatalf("shrink: exit %d\n%s%s", code, stdout, stderr)
	}
	minimal := filepath.Join(failing, "minimal.yaml")
	for _, want := range []string{"shrunk del-race × setnx-del (unsafe)", "clients 3 → ", "history 1", "minimal spec: " + minimal} {
		if !strings.Contains(stdout, want) {
			t.Errorf("shrink's output lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "shrink: #1 clients 3 → 2") {
		t.Errorf("no progress line per candidate on stderr:\n%s", stderr)
	}
	b, err := os.ReadFile(minimal)
	if err != nil || !strings.HasPrefix(string(b), "# Minimal witness written by lockstorm shrink, shrunk from del-race × setnx-del, seed 1 (run folder ") {
		t.Fatalf("minimal.yaml: %v\n%s", err, b)
	}
	stdout, stderr, code = runCLI(t, bin, "run", "--scenario", minimal, "--seed", "500", "--seeds", "2", "--keep", "none")
	if code != 0 || !strings.Contains(stdout, "del-race-min") || !strings.Contains(stdout, "unsafe×2") {
		t.Errorf("run --scenario minimal.yaml: exit %d\n%s%s\n%s", code, stdout, stderr, b)
	}
}

// runFolder is the one run folder of del-race × impl under out.
func runFolder(t *testing.T, out, impl string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(out, "*-del-race-"+impl+"-s1"))
	if len(dirs) != 1 {
		t.Fatalf("run folders of %s: %v", impl, dirs)
	}
	return dirs[0]
}

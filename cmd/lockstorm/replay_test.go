package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// TestReplayRunFolder: a kept run folder holds everything to run it again
// (the scenario as run, lock, seed, backend, version); `lockstorm replay`
// does, and a scheduled race (del-race × setnx-del) comes back.
func TestReplayRunFolder(t *testing.T) {
	cluster.StartForTest(t, 1)
	bin := buildBinary(t)
	out := t.TempDir()
	if _, stderr, code := runCLI(t, bin, "run", "--scenario", "del-race", "--impl", "setnx-del", "--backend", "redis-server", "--keep", "all", "--out", out); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-del-race-setnx-del-*"))
	if len(dirs) != 1 {
		t.Fatalf("run folders %v", dirs)
	}
	if b, _ := os.ReadFile(filepath.Join(dirs[0], "summary.json")); !strings.Contains(string(b), `"lockstorm_version"`) {
		t.Errorf("summary.json does not record the version")
	}
	stdout, stderr, code := runCLI(t, bin, "replay", dirs[0])
	if code != 0 || !strings.Contains(stdout, "unsafe reproduced 1 of 1") {
		t.Fatalf("replay: exit %d:\n%s%s", code, stdout, stderr)
	}
	if _, stderr, code := runCLI(t, bin, "replay", t.TempDir()); code != 2 || !strings.Contains(stderr, "summary.json") {
		t.Errorf("replay of an empty folder: exit %d: %s", code, stderr)
	}
}

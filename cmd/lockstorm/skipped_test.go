package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSkippedInOneLine: without redis-server on PATH, the scenarios the
// embedded backend cannot run take one line (how many, why, the command
// that installs redis-server), so the first screen shows results within
// its first five lines; -v names each, and so does the suite page.
func TestSkippedInOneLine(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	short := filepath.Join(dir, "short.yaml")
	os.WriteFile(short, []byte(`name: short
clients: 2
keys: 1
duration: 300ms
lock: {ttl: 500ms, retry_delay: 5ms, wait_timeout: 1s}
workload: {cs_min: 0ms, cs_max: 2ms}
impls: [set-nx-px]
expected: {set-nx-px: safe}
`), 0o644)
	skipped := []string{"cluster-failover", "cluster-reshard", "sentinel-kill", "sentinel-partition", "failover"}
	args := []string{"run", "--seeds", "2", "--out", filepath.Join(dir, "out")}
	for _, s := range skipped {
		args = append(args, "--scenario", s)
	}
	args = append(args, "--scenario", short)
	run := func(extra ...string) []string {
		cmd := exec.Command(bin, append(args, extra...)...)
		cmd.Env = append(os.Environ(), "PATH="+t.TempDir(), "LOCKSTORM_REDIS_SERVER=")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v:\n%s", err, out.String())
		}
		return strings.Split(out.String(), "\n")
	}
	lines := run()
	var skipLines []string
	for _, l := range lines {
		if strings.Contains(l, "skipping") {
			skipLines = append(skipLines, l)
		}
	}
	if len(skipLines) != 1 || !strings.Contains(skipLines[0], "skipping 5 scenarios") ||
		!strings.Contains(skipLines[0], "apt-get install -y redis-server") || !strings.Contains(skipLines[0], "Redis Cluster") {
		t.Errorf("want one line saying 5 scenarios skipped, why and how to install redis-server; got %q", skipLines)
	}
	if head := strings.Join(lines[:min(5, len(lines))], "\n"); !strings.Contains(head, "short × set-nx-px: safe") {
		t.Errorf("no result in the first five lines:\n%s", head)
	}
	page, err := os.ReadFile(filepath.Join(dir, "out", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	verbose := strings.Join(run("-v"), "\n")
	for _, s := range skipped {
		if !strings.Contains(string(page), s+": needs") {
			t.Errorf("the suite page does not name %s as skipped", s)
		}
		if !strings.Contains(verbose, "skipping "+s+" on the embedded backend: needs") {
			t.Errorf("-v does not name %s as skipped", s)
		}
	}
}

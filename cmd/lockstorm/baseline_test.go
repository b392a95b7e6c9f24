package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// TestBaselineGatesRun records a baseline with `lockstorm baseline`, gates
// a run on it (as recorded: exit 0), then changes the recorded verdict: the
// same run must now exit 1 with the pair marked DIFF against the baseline.
func TestBaselineGatesRun(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "short.yaml")
	// Gated, as contention is: an ungated random run that stays safe where
	// unsafe is expected is a miss (not found on this seed), not a DIFF.
	os.WriteFile(spec, []byte(`name: short-baseline
gated: true
clients: 4
keys: 1
duration: 500ms
lock: {ttl: 500ms, retry_delay: 5ms, wait_timeout: 1s}
workload: {cs_min: 0ms, cs_max: 2ms}
impls: [set-nx-px]
`), 0o644)
	base := filepath.Join(dir, "base.json")
	stdout, stderr, code := runCLI(t, bin, "baseline", "--impl", "set-nx-px", "--scenario", spec, "--seed", "3",
		"--backend", cluster.Embedded, "--out", base)
	if code != 0 {
		t.Fatalf("baseline: exit %d: %s%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	entries, _ := doc["entries"].([]any)
	if len(entries) != 1 {
		t.Fatalf("want one entry (short-baseline × set-nx-px), got %s", b)
	}
	entry := entries[0].(map[string]any)
	if entry["scenario"] != "short-baseline" || entry["impl"] != "set-nx-px" {
		t.Fatalf("entry %v", entry)
	}
	recorded, _ := entry["verdict"].(string)
	run := func() (string, int) {
		stdout, stderr, code := runCLI(t, bin, "run", "--scenario", spec, "--impl", "set-nx-px", "--seed", "3",
			"--backend", cluster.Embedded, "--baseline", base, "--keep", "none")
		// The summary line counts DIFFs ("0 DIFF"); only rows mark them.
		var rows []string
		for _, l := range strings.Split(stdout+stderr, "\n") {
			if !strings.HasPrefix(l, "summary: ") {
				rows = append(rows, l)
			}
		}
		return strings.Join(rows, "\n"), code
	}
	if out, code := run(); code != 0 || strings.Contains(out, "DIFF") {
		t.Fatalf("run against the baseline as recorded (%s): exit %d:\n%s", recorded, code, out)
	}
	changed := "unsafe"
	if recorded == changed {
		changed = "safe"
	}
	entry["verdict"] = changed
	b, _ = json.MarshalIndent(doc, "", "  ")
	if err := os.WriteFile(base, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := run()
	if code != 1 || !strings.Contains(out, "DIFF") || !strings.Contains(out, changed) {
		t.Fatalf("run against a baseline saying %s (the run gives %s): exit %d; want 1 and a DIFF row:\n%s", changed, recorded, code, out)
	}
}

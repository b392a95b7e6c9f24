package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/reports"
)

// TestShardsMergeLikeUnsharded: N = 4 local shards of a sweep, merged by
// `lockstorm report`, give the same cells as the unsharded sweep of the
// same seeds; the slices are disjoint and cover the sweep.
func TestShardsMergeLikeUnsharded(t *testing.T) {
	cluster.StartForTest(t, 1)
	bin := buildBinary(t)
	sweep := []string{"run", "--scenario", "foreign-unlock", "--scenario", "del-race", "--seeds", "2", "--seed", "11",
		"--backend", "redis-server", "--keep", "failures"}
	root := t.TempDir()
	whole := filepath.Join(root, "whole")
	if _, stderr, code := runCLI(t, bin, append(sweep, "--out", whole, "--shard", "0/1")...); code != 0 {
		t.Fatalf("unsharded: exit %d: %s", code, stderr)
	}
	var dirs []string
	for k := 0; k < 4; k++ {
		d := filepath.Join(root, fmt.Sprint("shard", k))
		dirs = append(dirs, d)
		if _, stderr, code := runCLI(t, bin, append(sweep, "--out", d, "--shard", fmt.Sprintf("%d/4", k))...); code != 0 {
			t.Fatalf("shard %d: exit %d: %s", k, code, stderr)
		}
	}
	want, err := readResults([]string{whole})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readResults(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 8 || len(got) != len(want) {
		t.Fatalf("the shards ran %d jobs, the whole sweep %d", len(got), len(want))
	}
	if a, b := cells(got), cells(want); a != b {
		t.Errorf("merged shards:\n%s\nunsharded:\n%s", a, b)
	}
	stdout, stderr, code := runCLI(t, bin, append([]string{"report", "-o", filepath.Join(root, "index.html")}, dirs...)...)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("merged: %d runs from 4 folder(s)", len(want))) {
		t.Errorf("report: exit %d:\n%s%s", code, stdout, stderr)
	}
	// The page shows every run, those whose folders the shards did not keep
	// (safe ones, here) from their results rows.
	if !strings.Contains(stdout, fmt.Sprintf("index.html (%d runs)", len(want))) {
		t.Errorf("the merged page does not hold the %d runs:\n%s", len(want), stdout)
	}
}

// cells is each (scenario, impl, seed) with its verdict, sorted.
func cells(rows []reports.Row) string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s × %s seed %d: %s", r.Scenario, r.Impl, r.Seed, r.Verdict))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

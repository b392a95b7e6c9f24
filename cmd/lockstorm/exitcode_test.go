package main

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/reports"
)

// A miss (an ungated exploratory run that did not find its failure on a
// seed) never fails a run, with one seed or many, as `report` merging the
// shards of a sweep does not count it; a DIFF always does.
func TestExitOnDiffNotMiss(t *testing.T) {
	found := reports.Row{Identity: history.Identity{Scenario: "s", Impl: "l", Mode: "random", Expected: checker.Unsafe}, Verdict: checker.Unsafe, AsExpected: true}
	miss := found
	miss.Verdict, miss.AsExpected, miss.Seed = checker.Safe, false, 2
	diff := found
	diff.Gated, diff.Verdict, diff.AsExpected, diff.Seed = true, checker.Safe, false, 3
	for _, tc := range []struct {
		name  string
		seeds int
		rows  []reports.Row
		fails bool
	}{
		{"one seed, miss", 1, []reports.Row{miss}, false},
		{"seeds, miss", 2, []reports.Row{found, miss}, false},
		{"one seed, diff", 1, []reports.Row{diff}, true},
		{"seeds, diff", 2, []reports.Row{found, diff}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mismatch, missed := 0, 0
			for _, r := range tc.rows {
				switch {
				case r.Missed():
					missed++
				case !r.AsExpected:
					mismatch++
				}
			}
			stdout := os.Stdout
			os.Stdout, _ = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			err := printVerdicts(io.Discard, &runFlags{seeds: tc.seeds, format: reports.FormatTable}, tc.rows, mismatch, missed)
			os.Stdout.Close()
			os.Stdout = stdout
			var ee *exitError
			if got := errors.As(err, &ee) && ee.code == 1; got != tc.fails {
				t.Fatalf("exit 1 = %v, want %v (err %v)", got, tc.fails, err)
			}
		})
	}
}

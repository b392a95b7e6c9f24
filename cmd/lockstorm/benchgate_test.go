package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/internal/bench"
)

// TestCompareBenchSelected: the bench gate compares the rows of the groups
// the run selected (a missing one of those is a regression), lists the
// others as not selected, and refuses a run that selected none.
func TestCompareBenchSelected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "baseline.json")
	base := `{"note": "test", "tolerance": 0.3, "rows": [
		{"name": "drive/direct", "ratio": 0.4, "better": "higher"},
		{"name": "recorder/add", "ratio": 0.5, "better": "lower"},
		{"name": "battery/set-nx-px", "ratio": 0.5, "better": "lower"}]}`
	if err := os.WriteFile(path, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := &bench.Report{Rows: []bench.Row{{Name: "drive/direct", Ratio: 0.41, Status: bench.Info},
		{Name: "battery/set-nx-px", Ratio: 0.8, Status: bench.Met}}}
	for _, tc := range []struct {
		groups  []string
		bad     int
		err     bool
		marks   []string
		noMarks []string
	}{
		{[]string{"drive"}, 0, false, []string{"recorder/add", "not selected", "ok"}, []string{"REGRESSED"}},
		{[]string{"drive", "recorder"}, 1, false, []string{"REGRESSED (not measured)"}, nil},
		{[]string{"battery"}, 1, false, []string{"battery/set-nx-px", "REGRESSED"}, nil},
		{[]string{"ttb"}, 0, true, nil, nil},
	} {
		sel := map[string]bool{}
		for _, g := range tc.groups {
			sel[g] = true
		}
		var out bytes.Buffer
		bad, err := compareBench(&out, rep, path, sel)
		if (err != nil) != tc.err || bad != tc.bad {
			t.Errorf("groups %v: %d regressed, error %v; want %d, error %v\n%s", tc.groups, bad, err, tc.bad, tc.err, out.String())
		}
		for _, m := range tc.marks {
			if !strings.Contains(out.String(), m) {
				t.Errorf("groups %v: output lacks %q:\n%s", tc.groups, m, out.String())
			}
		}
		for _, m := range tc.noMarks {
			if strings.Contains(out.String(), m) {
				t.Errorf("groups %v: output has %q:\n%s", tc.groups, m, out.String())
			}
		}
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lockstorm/lockstorm/internal/bench"
)

// benchBaseline is the committed reference of the bench gate: ratios, each
// measured within one bench run (lockstorm against raw porcupine on the
// same history, against redis-benchmark on the same server, proxied against
// direct, the recorder's bytes against sizeof(Op)), so that a shared, noisy
// machine moves both sides of each ratio together. Tolerance is how much
// worse than the baseline a ratio may get before the gate fails.
type benchBaseline struct {
	Note      string        `json:"note"`
	Tolerance float64       `json:"tolerance"`
	Rows      []baselineRow `json:"rows"`
}

type baselineRow struct {
	Name  string  `json:"name"`
	Ratio float64 `json:"ratio"`
	// Better is "higher" (a speed against a reference) or "lower" (a cost
	// against a reference).
	Better string `json:"better"`
	// Tolerance, when set, replaces the file's for this row.
	Tolerance float64 `json:"tolerance,omitempty"`
	Why       string  `json:"why,omitempty"`
}

// compareBench prints each guarded ratio against the baseline and returns
// how many regressed past the tolerance; a guarded row the run lacks, or
// whose measurement failed, counts as a regression (the gate must not pass
// by measuring nothing). A row of a group the run did not select (its name's
// prefix, e.g. battery/ for --only 6) is listed as not selected and left
// out, so that a slow group can be guarded apart; a run that selects no
// guarded row at all is an error.
func compareBench(w io.Writer, rep *bench.Report, path string, selected map[string]bool) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var base benchBaseline
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&base); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if base.Tolerance <= 0 || base.Tolerance >= 1 {
		return 0, fmt.Errorf("%s: tolerance %v: want a fraction in (0, 1)", path, base.Tolerance)
	}
	got := map[string]bench.Row{}
	for _, r := range rep.Rows {
		got[r.Name] = r
	}
	fmt.Fprintf(w, "\nbench gate against %s (tolerance %.0f%%):\n", path, 100*base.Tolerance)
	fmt.Fprintf(w, "  %-32s %10s %10s %8s  %s\n", "row (ratio)", "baseline", "now", "better", "mark")
	bad, compared := 0, 0
	for _, br := range base.Rows {
		if group, _, _ := strings.Cut(br.Name, "/"); !selected[group] {
			fmt.Fprintf(w, "  %-32s %10.3f %10s %8s  not selected (--only)\n", br.Name, br.Ratio, "-", "-")
			continue
		}
		compared++
		r, ok := got[br.Name]
		if !ok || r.Status == bench.Failed || r.Ratio <= 0 {
			fmt.Fprintf(w, "  %-32s %10.3f %10s %8s  REGRESSED (not measured)\n", br.Name, br.Ratio, "-", "-")
			bad++
			continue
		}
		// change > 0 is better, whichever way the ratio is read.
		change := r.Ratio/br.Ratio - 1
		if br.Better == "lower" {
			change = br.Ratio/r.Ratio - 1
		}
		tol := base.Tolerance
		if br.Tolerance > 0 {
			tol = br.Tolerance
		}
		mark := "ok"
		if change < -tol {
			mark = "REGRESSED"
			bad++
		}
		fmt.Fprintf(w, "  %-32s %10.3f %10.3f %+7.0f%%  %s\n", br.Name, br.Ratio, r.Ratio, 100*change, mark)
	}
	if compared == 0 {
		return 0, fmt.Errorf("%s: no guarded row in the groups this run selected", path)
	}
	return bad, nil
}

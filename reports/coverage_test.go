package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/scenarios"
)

// TestCoverageOnSuitePage: the battery's coverage is the union of its
// rows' combinations per lock, on the page's header and on each explored
// lock's section; a suite that explored nothing says nothing of it.
func TestCoverageOnSuitePage(t *testing.T) {
	sit := scenarios.Situation{Point: "cmd/*/SET/after", State: scenarios.StateWaiting, Contender: true}
	row := func(impl string, faults int) Row {
		return Row{Identity: history.Identity{Scenario: "explore-late-grant", Impl: impl, Mode: "random"}, Verdict: "safe",
			Combos: []scenarios.Combo{{Situation: sit, Fault: "pause", Faults: faults}, {Situation: sit, Fault: "delay"}}}
	}
	for _, tc := range []struct {
		name string
		rows []Row
		want []string
	}{
		{"one lock, two seeds", []Row{row("a", 0), row("a", 1)}, []string{"coverage: 1 of 2 combinations"}},
		{"two locks", []Row{row("a", 1), row("b", 0)}, []string{"coverage: 1 of 4 combinations", "coverage: 0 of 2 combinations"}},
		{"no exploration", []Row{{Identity: history.Identity{Scenario: "s", Impl: "a"}, Verdict: "safe"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs []SuiteRun
			for _, r := range tc.rows {
				runs = append(runs, RowSuiteRun(r))
			}
			var buf bytes.Buffer
			if err := WriteSuite(&buf, runs, SuiteInfo{}); err != nil {
				t.Fatal(err)
			}
			page := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			if tc.want == nil && strings.Contains(page, "coverage:") {
				t.Error("a suite without exploration speaks of coverage")
			}
		})
	}
}

package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
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

// TestPriorReplays: a run steered by the combinations earlier runs
// covered keeps them in its folder's summary, and on sim its seed with
// them gives the same history again (what lockstorm replay does).
func TestPriorReplays(t *testing.T) {
	sp, err := spec.Load("explore-late-release")
	if err != nil {
		t.Fatal(err)
	}
	run := func(prior []string) *scenarios.Outcome {
		t.Helper()
		o, err := scenarios.Run(context.Background(), sp, scenarios.Config{Impl: "setnx-expire", Seed: 2, Backend: cluster.Sim, Prior: prior})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	first := run(nil)
	set := scenarios.NewCoverageSet()
	set.Add(first.Impl, first.Points.Combos)
	steered := run(set.Covered())
	dir, err := WriteRunDir(t.TempDir(), steered, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var sum Summary
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err == nil {
		err = json.Unmarshal(b, &sum)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Row.Prior) == 0 || !slices.Equal(sum.Row.Prior, set.Covered()) {
		t.Fatalf("summary's prior %v, want %v", sum.Row.Prior, set.Covered())
	}
	again := run(sum.Row.Prior)
	var a, c bytes.Buffer
	if err := history.WriteJSONL(&a, steered.History); err != nil {
		t.Fatal(err)
	}
	if err := history.WriteJSONL(&c, again.History); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Error("the steered run and its replay with the summary's prior wrote two histories")
	}
}

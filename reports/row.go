// Package reports turns run outcomes into what people and CI read: a
// table (text, markdown), JSON rows, and summary files.
package reports

import (
	"fmt"
	"math"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/scenarios"
)

// Row is one scenario × implementation, flat, with the JSON names CI
// consumers rely on (snake_case, stable).
type Row struct {
	Scenario string `json:"scenario"`
	Impl     string `json:"impl"`
	Seed     uint64 `json:"seed"`
	Backend  string `json:"backend"`
	Mode     string `json:"mode"`
	// Client is the workload's client: careful or careless.
	Client           string   `json:"client,omitempty"`
	Gated            bool     `json:"gated"`
	Verdict          string   `json:"verdict"`
	Expected         string   `json:"expected"`
	AsExpected       bool     `json:"as_expected"`
	Reason           string   `json:"reason"`
	Acquired         int      `json:"acquired"`
	AcquiresPerSec   float64  `json:"acquires_per_sec"`
	AcquireP50Ms     float64  `json:"acquire_p50_ms"`
	AcquireP99Ms     float64  `json:"acquire_p99_ms"`
	HandoffP50Ms     float64  `json:"handoff_p50_ms"`
	Fairness         float64  `json:"fairness"`
	Overlaps         int      `json:"overlaps"`
	LostUpdates      int64    `json:"lost_updates"`
	StaleWrites      int      `json:"stale_writes"`
	FirstViolationMs *float64 `json:"first_violation_ms"`
	Witness          string   `json:"witness"`
	Replay           string   `json:"replay"`
	// PointsHit and PointsFaulted are the point coverage (distinct lock
	// points reached, and how many had a fault injected), when the run armed
	// its points.
	PointsHit     *int `json:"points_hit,omitempty"`
	PointsFaulted *int `json:"points_faulted,omitempty"`
	// RunDir is the run folder, when one was kept.
	RunDir string `json:"run_dir,omitempty"`
}

// FromOutcome flattens an outcome.
func FromOutcome(o *scenarios.Outcome) Row {
	r := o.Result
	row := Row{
		Scenario: o.Scenario, Impl: o.Impl, Seed: o.Seed, Backend: o.Backend, Mode: o.Mode, Gated: o.Gated,
		Verdict: r.Verdict, Expected: o.Expected, AsExpected: o.AsExpected(), Reason: r.Reason,
		Acquired: r.Acquired, AcquireP50Ms: round2(r.AcquireP50Ms), AcquireP99Ms: round2(r.AcquireP99Ms),
		HandoffP50Ms: round2(r.HandoffP50Ms), Fairness: round2(r.Fairness),
		Overlaps: r.Overlaps, LostUpdates: r.LostUpdates, StaleWrites: r.StaleWrites,
		Replay: ReplayCommand(o), Client: o.Client,
	}
	if o.Points != nil {
		hit, faulted := o.Points.Hit, o.Points.Faulted
		row.PointsHit, row.PointsFaulted = &hit, &faulted
	}
	if row.Expected == "" {
		row.Expected = checker.Safe
	}
	if s := o.Elapsed.Seconds(); s > 0 {
		row.AcquiresPerSec = round2(float64(r.Acquired) / s)
	}
	if r.FirstViolationNs >= 0 && r.Verdict != checker.Safe {
		ms := round2(float64(r.FirstViolationNs) / 1e6)
		row.FirstViolationMs = &ms
	}
	if r.Witness != nil {
		row.Witness = r.Witness.Text
	}
	return row
}

// Missed says the row is an exploratory (ungated) search that did not find
// its failure this time: expected unsafe or deadlock, got safe. Such a row is
// marked but does not fail a run, since exploratory modes are documented as
// not finding their bug on every seed; any other difference still does.
func (r Row) Missed() bool {
	return !r.AsExpected && !r.Gated && r.Verdict == checker.Safe &&
		(r.Expected == checker.Unsafe || r.Expected == checker.Deadlock)
}

// ReplayCommand is the one command that replays the run.
func ReplayCommand(o *scenarios.Outcome) string {
	scen := o.Scenario
	if o.Spec != nil && o.Spec.File != "" && !isEmbedded(o.Spec.File) {
		scen = o.Spec.File
	}
	return fmt.Sprintf("lockstorm run --scenario %s --impl %s --seed %d --backend %s", scen, o.Impl, o.Seed, o.Backend)
}

func isEmbedded(file string) bool { return len(file) > 6 && file[:6] == "specs/" }

// round2 rounds to 2 decimals, half away from zero (negative values too).
func round2(f float64) float64 { return math.Round(f*100) / 100 }

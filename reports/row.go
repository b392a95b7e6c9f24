// Package reports turns run outcomes into what people and CI read: a
// table (text, markdown), JSON rows, and summary files.
package reports

import (
	"fmt"
	"math"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/scenarios"
)

// Row is one scenario × implementation, flat, with the JSON names CI
// consumers rely on (snake_case, stable). FromOutcome and FromMeta build
// it, from the run's identity, and SetResult fills its figures.
type Row struct {
	// Identity is the run's; its Expected is "" when the run had no
	// expectation (a lock without claims on a spec that does not list
	// it): reported, never a DIFF.
	history.Identity
	Verdict string `json:"verdict"`
	// AsExpected is the outcome's (Outcome.AsExpected), or for `lockstorm
	// check` the result's against the header's expectation.
	AsExpected     bool    `json:"as_expected"`
	Reason         string  `json:"reason"`
	Acquired       int     `json:"acquired"`
	AcquiresPerSec float64 `json:"acquires_per_sec"`
	AcquireP50Ms   float64 `json:"acquire_p50_ms"`
	AcquireP99Ms   float64 `json:"acquire_p99_ms"`
	HandoffP50Ms   float64 `json:"handoff_p50_ms"`
	Fairness       float64 `json:"fairness"`
	// Overlaps counts pairs of overlapping holds; OverlapIntervals the
	// clusters of overlapping holds per key (one long stale hold across many
	// short ones is one), OverlapMs the time two or more held a key.
	Overlaps         int     `json:"overlaps"`
	OverlapIntervals int     `json:"overlap_intervals"`
	OverlapMs        float64 `json:"overlap_ms"`
	// NetLostUpdates is acknowledged writes minus the counter's final value;
	// LostUpdates is the same figure under its old name, kept for readers of
	// earlier JSON.
	NetLostUpdates int64 `json:"net_lost_updates"`
	LostUpdates    int64 `json:"lost_updates"`
	// StaleWrites counts acknowledged writes made with a stale view of the
	// resource (checker.Result.StaleWrites), one per event.
	StaleWrites      int `json:"stale_writes"`
	FenceRegressions int `json:"fence_regressions"`
	RejectedWrites   int `json:"rejected_writes"`
	// FirstViolationMs is when the first violation began (for a deadlock,
	// the first starvation past the bound), FirstViolation its kind.
	FirstViolationMs *float64 `json:"first_violation_ms"`
	FirstViolation   string   `json:"first_violation,omitempty"`
	LongestStarvedMs float64  `json:"longest_starved_ms"`
	StarvedKey       string   `json:"starved_key,omitempty"`
	StarvedFromMs    float64  `json:"starved_from_ms,omitempty"`
	Witness          string   `json:"witness"`
	// Evidence is the row's story in one sentence (the table's last column).
	Evidence string `json:"evidence"`
	Replay   string `json:"replay"`
	// StoppedAfterMs, when set, says the run stopped this long after its
	// first overlap instead of running its whole duration.
	StoppedAfterMs *float64 `json:"stopped_after_ms,omitempty"`
	// Rejudged is how many earlier runs of the job the harness's own
	// stalls left inconclusive before this one was judged.
	Rejudged int `json:"rejudged,omitempty"`
	// ElapsedS is the run's wall time in seconds.
	ElapsedS float64 `json:"elapsed_s,omitempty"`
	// PointsHit and PointsFaulted are the point coverage (distinct lock
	// points reached, and how many had a fault injected), when the run armed
	// its points.
	PointsHit     *int `json:"points_hit,omitempty"`
	PointsFaulted *int `json:"points_faulted,omitempty"`
	// CombosCovered of Combinations (point × fault × client state ×
	// contender) were faulted, when the run explored; Combos lists them
	// (scenarios.Coverage), so a battery's coverage is their union
	// (Coverage).
	CombosCovered *int              `json:"combos_covered,omitempty"`
	Combinations  *int              `json:"combinations,omitempty"`
	Combos        []scenarios.Combo `json:"combos,omitempty"`
	// Prior are the combinations that steered the run's explorer
	// (Outcome.Prior), which lockstorm replay hands the run again.
	Prior []string `json:"prior,omitempty"`
	// FalseSuccesses counts releases acknowledged ok on a lock no longer
	// the releaser's (by the servers' key events); FalseSuccessUnjudged the
	// releases the observers were too far behind to judge. ObserverLagMaxMs
	// is the observers' worst sync round trip.
	FalseSuccesses       int     `json:"false_successes"`
	FalseSuccessUnjudged int     `json:"false_success_unjudged,omitempty"`
	ObserverLagMaxMs     float64 `json:"observer_lag_max_ms,omitempty"`
	// HarnessStallMaxMs and HarnessStallTotalMs are the harness's own
	// stalls (its process not scheduled), which a starvation is judged net of.
	HarnessStallMaxMs   float64 `json:"harness_stall_max_ms,omitempty"`
	HarnessStallTotalMs float64 `json:"harness_stall_total_ms,omitempty"`
	// ClientLagMaxMs (of client ClientLagMaxClient) and ClientLagTotalMs
	// are the clients' own lags (one client late while the process ran),
	// which shorten that client's holds and waits as the stalls do.
	ClientLagMaxMs     float64 `json:"client_lag_max_ms,omitempty"`
	ClientLagMaxClient *int    `json:"client_lag_max_client,omitempty"`
	ClientLagTotalMs   float64 `json:"client_lag_total_ms,omitempty"`
	// ErrorReplies counts commands the server refused with an error reply;
	// HistoryProblems the history's problems (history.Validate).
	ErrorReplies    int `json:"error_replies"`
	HistoryProblems int `json:"history_problems,omitempty"`
	// Failover is when the Sentinels detected the fault and promoted a
	// replica (Sentinel scenarios only).
	Failover *scenarios.FailoverTimes `json:"failover,omitempty"`
	// RunDir is the run folder, when one was kept.
	RunDir string `json:"run_dir,omitempty"`
	// Phases is where the run's wall time went (set-up, traffic, drain,
	// check, teardown), in ns.
	Phases *scenarios.Phases `json:"phases,omitempty"`
	// Findings are the kinds of wrong the run showed, each marked permitted
	// or not by the run's expectation (checker.Finding).
	Findings []checker.Finding `json:"findings,omitempty"`
}

// Unpermitted are the row's findings its expectation does not allow.
func (r Row) Unpermitted() []checker.Finding {
	var out []checker.Finding
	for _, f := range r.Findings {
		if !f.Permitted {
			out = append(out, f)
		}
	}
	return out
}

// FromOutcome flattens an outcome.
func FromOutcome(o *scenarios.Outcome) Row {
	r := o.Result
	row := Row{Identity: o.Identity, Replay: ReplayCommand(o), Failover: o.Failover, Phases: o.Phases, Prior: o.Prior}
	if o.Points != nil {
		hit, faulted := o.Points.Hit, o.Points.Faulted
		row.PointsHit, row.PointsFaulted = &hit, &faulted
		if o.Points.Combinations > 0 {
			covered, total := o.Points.Covered, o.Points.Combinations
			row.CombosCovered, row.Combinations, row.Combos = &covered, &total, o.Points.Combos
		}
	}
	row.SetResult(r)
	row.AsExpected = o.AsExpected()
	if o.Points != nil && o.Points.Hit > 0 {
		// What the points said, beside what the run found: a safe row of
		// an exploration is worth as much as the points it reached.
		cov := fmt.Sprintf("points: %d hit, %d faulted", o.Points.Hit, o.Points.Faulted)
		if p := o.Points; p.Combinations > 0 {
			cov += fmt.Sprintf("; combinations: %d of %d faulted, %d near-misses (%d faulted)", p.Covered, p.Combinations,
				p.NearMisses, p.NearMissFaults)
		}
		if row.Evidence == NoEvidence || row.Evidence == "" {
			row.Evidence = cov
		} else {
			row.Evidence += "; " + cov
		}
	}
	if n := len(o.Rejudged); n > 0 {
		row.Rejudged = n
		row.Evidence += fmt.Sprintf("; run %d times: the harness's own stalls left %d run(s) before it inconclusive", n+1, n)
	}
	if o.StoppedAfter > 0 {
		ms := round2(float64(o.StoppedAfter) / 1e6)
		row.StoppedAfterMs = &ms
		row.Evidence += fmt.Sprintf("; stopped %s after the first overlap", span(int64(o.StoppedAfter)))
	}
	if s := o.Elapsed.Seconds(); s > 0 {
		row.ElapsedS = round2(s)
	}
	return row
}

// FromMeta is the row of a history's header, before any figure: what
// `lockstorm check` knows of a run from its history alone.
func FromMeta(m *history.Meta) Row { return Row{Identity: m.Identity, Replay: replay(m.Identity)} }

// SetResult fills every figure of the row that comes from a check result
// (verdict, reason, counts, times, witness, evidence), so `run` and
// `check` derive them the same way. AsExpected is the caller's to set:
// the outcome's (FromOutcome), or the result's against the header's
// expectation (`lockstorm check`).
func (row *Row) SetResult(r checker.Result) {
	row.Verdict, row.Reason = r.Verdict, r.Reason
	row.Findings = r.Findings
	row.Acquired = r.Acquired
	// Per second of the history (its end record is written once every
	// client stopped), so `run` and `check` give the same figure.
	row.AcquiresPerSec = 0
	if r.DurationNs > 0 {
		row.AcquiresPerSec = round2(float64(r.Acquired) / (float64(r.DurationNs) / 1e9))
	}
	row.ErrorReplies, row.HistoryProblems = r.ErrorReplies, r.Malformed
	row.FalseSuccesses, row.FalseSuccessUnjudged, row.ObserverLagMaxMs = r.FalseSuccesses, r.FalseSuccessUnjudged, round2(r.ObserverLagMaxMs)
	row.HarnessStallMaxMs, row.HarnessStallTotalMs = round2(r.HarnessStallMaxMs), round2(r.HarnessStallTotalMs)
	row.ClientLagMaxMs, row.ClientLagMaxClient, row.ClientLagTotalMs = round2(r.ClientLagMaxMs), r.ClientLagMaxClient, round2(r.ClientLagTotalMs)
	row.AcquireP50Ms, row.AcquireP99Ms = round2(r.AcquireP50Ms), round2(r.AcquireP99Ms)
	row.HandoffP50Ms, row.Fairness = round2(r.HandoffP50Ms), round2(r.Fairness)
	row.Overlaps, row.OverlapIntervals, row.OverlapMs = r.Overlaps, r.OverlapIntervals, round2(float64(r.OverlapNs)/1e6)
	row.NetLostUpdates, row.LostUpdates = r.NetLostUpdates, r.NetLostUpdates
	row.StaleWrites, row.FenceRegressions, row.RejectedWrites = r.StaleWrites, r.FenceRegressions, r.Rejected
	row.FirstViolationMs, row.FirstViolation = nil, ""
	if r.FirstViolationNs >= 0 && r.Verdict != checker.Safe {
		ms := round2(float64(r.FirstViolationNs) / 1e6)
		row.FirstViolationMs, row.FirstViolation = &ms, r.FirstViolation
	}
	row.LongestStarvedMs, row.StarvedKey = round2(r.LongestStarvedMs), r.StarvedKey
	row.StarvedFromMs = round2(float64(r.StarvedFromNs) / 1e6)
	row.Witness = ""
	if r.Witness != nil {
		row.Witness = r.Witness.Text
	}
	row.Evidence = Evidence(r)
	if row.TimeScale.Scaled() {
		// A verdict reached on a stretched schedule says so wherever it
		// is read (table, JSON, suite page), or a reader would compare its
		// times with the scenario's as written.
		if row.Evidence == NoEvidence {
			row.Evidence = row.TimeScale.Brief()
		} else {
			row.Evidence += "; " + row.TimeScale.Brief()
		}
	}
}

// Missed says the row is an exploratory (ungated) search that did not find
// its failure this time: expected unsafe or deadlock, got safe, or
// inconclusive (the run could not judge: its clients cut off by the faults
// it drew more often than not, the harness's own stalls). Such a row is
// marked but does not fail a run, since exploratory modes are documented as
// not finding their bug on every seed; any other difference still does (a
// forbidden finding, another verdict, and every difference of a gated
// scenario). An exploratory run can be inconclusive without any
// regression (its clients' commands timing out on a partitioned node).
func (r Row) Missed() bool {
	return !r.AsExpected && !r.Gated && (r.Verdict == checker.Safe || r.Verdict == checker.Inconclusive) &&
		len(r.Unpermitted()) == 0 && (r.Expected == checker.Unsafe || r.Expected == checker.Deadlock)
}

// ReplayCommand is the one command that replays the run.
func ReplayCommand(o *scenarios.Outcome) string {
	cmd := replay(o.Identity)
	if o.Spec != nil && len(o.Spec.Variants[o.Impl].Exec) > 0 {
		cmd += " --allow-exec" // the lock is the spec's client program
	}
	return cmd
}

// replay is the command that runs id's run again: its spec file, when it
// is not embedded, else its scenario's name.
func replay(id history.Identity) string {
	scen := id.Scenario
	if id.File != "" {
		scen = id.File
	}
	return fmt.Sprintf("lockstorm run --scenario %s --impl %s --seed %d --backend %s", scen, id.Impl, id.Seed, id.Backend)
}

// round2 rounds to 2 decimals, half away from zero (negative values too).
func round2(f float64) float64 { return math.Round(f*100) / 100 }

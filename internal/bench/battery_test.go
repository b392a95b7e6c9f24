package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestBreakdowns: each run's phases, the traffic its spec asked for (as
// stretched), its first violation, early stop and failover timers, slowest
// run first: the battery's critical path leads.
func TestBreakdowns(t *testing.T) {
	s := time.Second
	outs := []*scenarios.Outcome{
		{Identity: history.Identity{Scenario: "short"}, Result: checker.Result{Verdict: "safe", FirstViolationNs: -1},
			Spec: &spec.Spec{Duration: 2 * s}, Phases: &scenarios.Phases{Setup: s / 10, Traffic: 2 * s}},
		{Identity: history.Identity{Scenario: "failover"}, Result: checker.Result{Verdict: "unsafe", FirstViolationNs: int64(3500 * time.Millisecond)},
			Spec: &spec.Spec{Duration: 12 * s}, Phases: &scenarios.Phases{Setup: s, Traffic: 12 * s, Drain: 14 * s},
			Failover: &scenarios.FailoverTimes{FaultMs: 1500, PromotedMs: 3000}},
		{Identity: history.Identity{Scenario: "scaled", TimeScale: &history.TimeScale{Factor: 10}}, Result: checker.Result{Verdict: "unsafe", FirstViolationNs: int64(s)},
			Spec: &spec.Spec{Duration: s}, StoppedAfter: s,
			Phases: &scenarios.Phases{Traffic: 2 * s}},
	}
	bs := Breakdowns(outs)
	if got := []string{bs[0].Scenario, bs[1].Scenario, bs[2].Scenario}; strings.Join(got, ",") != "failover,short,scaled" {
		t.Fatalf("order %v, want the slowest first", got)
	}
	if bs[0].Promoted != 1500*time.Millisecond || bs[1].Promoted != -1 {
		t.Errorf("failover timers %v and %v, want 1.5s and -1", bs[0].Promoted, bs[1].Promoted)
	}
	if bs[2].Asked != 10*s || bs[1].FirstViolation != -1 || bs[2].FirstViolation != s {
		t.Errorf("scaled run asked %v (want 10s), first violations %v and %v", bs[2].Asked, bs[1].FirstViolation, bs[2].FirstViolation)
	}
	line := bs[0].String()
	for _, want := range []string{"failover (unsafe): 27.00 s", "drain 14.00", "asked 12.00 s", "first violation at 3.50 s", "failover timers 1.50 s"} {
		if !strings.Contains(line, want) {
			t.Errorf("breakdown %q lacks %q", line, want)
		}
	}
	if !strings.Contains(bs[2].String(), "stopped 1.00 s after it") {
		t.Errorf("breakdown %q lacks its early stop", bs[2].String())
	}
	if sum := sumPhases(bs); sum.Traffic != 16*s || sum.Total() != 31*s+s/10 {
		t.Errorf("summed phases %v", sum)
	}
}

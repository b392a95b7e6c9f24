package bench

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/lockstorm/lockstorm/internal/admission"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
	"github.com/lockstorm/lockstorm/scenarios"
)

// GoalBattery is the wall-time goal for the whole battery against one lock.
const GoalBattery = 15 * time.Second

// BatteryTime runs every embedded scenario against impl, as locktest.Run
// does for a user's lock (parallel 4), and reports the wall time, with how
// many verdicts matched their expectations beside it. Its ratio is the wall
// time over the traffic the specs ask for, summed: the specs' durations do
// not move with the machine or the harness, so the ratio is what the
// harness's set-up, drains and parallelism make of them. The row's Detail
// is the breakdown of every run (Breakdowns), slowest first: the battery's
// critical path is its first line.
func BatteryTime(ctx context.Context, impl string, progress Progress) Row {
	r := Row{Row: "6", Name: "battery/" + impl, Measure: "whole battery against one lock, wall time",
		Unit: "s", Goal: fmt.Sprintf("< %v", GoalBattery)}
	info, err := lockimpl.Lookup(impl)
	if err != nil {
		r.Status, r.Note = Failed, err.Error()
		return r
	}
	progress.say("battery: every scenario against %s", impl)
	cpu0 := cpuTime()
	rep, err := locktest.Check(ctx, info, locktest.Battery{Keep: "none"})
	if err != nil {
		r.Status, r.Note = Failed, err.Error()
		return r
	}
	cpu := cpuTime() - cpu0
	r.Figure = rep.Wall.Seconds()
	r.judge(rep.Wall < GoalBattery)
	bs := Breakdowns(rep.Outcomes)
	sum := sumPhases(bs)
	var asked time.Duration
	for _, b := range bs {
		asked += b.Asked
	}
	if asked > 0 {
		r.Reference, r.RefUnit, r.RefName = asked.Seconds(), "s", "the specs' durations, summed"
		r.Ratio = rep.Wall.Seconds() / asked.Seconds()
	}
	r.Extra = map[string]float64{"setup_s": sum.Setup.Seconds(), "clients_s": sum.Clients.Seconds(),
		"traffic_s": sum.Traffic.Seconds(), "drain_s": sum.Drain.Seconds(), "check_s": sum.Check.Seconds(),
		"teardown_s": sum.Teardown.Seconds(), "runs_s": sum.Total().Seconds()}
	fl := batteryFloor(bs, cpu)
	r.Extra["cpu_s"], r.Extra["floor_s"] = cpu.Seconds(), fl.Seconds()
	if len(bs) > 0 {
		r.Extra["critical_s"] = bs[0].Phases.Total().Seconds()
	}
	r.Note = fmt.Sprintf("%d scenarios (%d skipped by the backend): %d differ, %d inconclusive; runs summed: %s; "+
		"CPU %.1f s (lockstorm and its servers); floor %.1f s (the longest run, or the CPU time spread over %d CPUs at the admission's own budget, whichever is longer)",
		len(rep.Outcomes), len(rep.Skipped), len(rep.Failures()), len(rep.Unjudged()), sum,
		cpu.Seconds(), fl.Seconds(), runtime.NumCPU())
	for _, b := range bs {
		r.Detail = append(r.Detail, b.String())
	}
	return r
}

// batteryFloor is the least wall time the battery could take on this
// machine with the runs as they are: its longest run (nothing ends before
// it), or its CPU time at the share of the CPUs the runs may use without
// starving each other into harness stalls (admission.OwnBudget), whichever
// is longer. Below it, only shorter runs or cheaper ones help.
func batteryFloor(bs []Breakdown, cpu time.Duration) time.Duration {
	var longest time.Duration
	if len(bs) > 0 {
		longest = bs[0].Phases.Total()
	}
	share := time.Duration(float64(cpu) / (admission.OwnBudget * float64(runtime.NumCPU())))
	return max(longest, share)
}

// cpuTime is the CPU time used so far by this process and by its children
// that have ended (the servers and client processes of finished runs).
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// Breakdown is where one run of a battery spent its wall time.
type Breakdown struct {
	Scenario string `json:"scenario"`
	Verdict  string `json:"verdict"`
	// Phases are the run's phases (scenarios.Phases); zero when the run
	// did not measure them.
	Phases scenarios.Phases `json:"phases"`
	// Asked is the traffic the spec asks for: its duration, stretched as
	// the run stretched it.
	Asked time.Duration `json:"asked_ns"`
	// FirstViolation is when the first violation came into the traffic
	// (-1: none); StoppedAfter is how long after it the traffic ended, when
	// the run stopped early.
	FirstViolation time.Duration `json:"first_violation_ns"`
	StoppedAfter   time.Duration `json:"stopped_after_ns,omitempty"`
	// Promoted is the time spent on the topology's failover timers: from
	// the fault to the promotion (Sentinel's down-after, agreement and
	// election; -1: no failover was seen or the topology has none).
	Promoted time.Duration `json:"promoted_ns"`
}

// Breakdowns are the runs' breakdowns, slowest run first.
func Breakdowns(outs []*scenarios.Outcome) []Breakdown {
	bs := make([]Breakdown, 0, len(outs))
	for _, o := range outs {
		b := Breakdown{Scenario: o.Scenario, Verdict: o.Result.Verdict, FirstViolation: -1, Promoted: -1,
			StoppedAfter: o.StoppedAfter}
		if o.Phases != nil {
			b.Phases = *o.Phases
		}
		if o.Spec != nil {
			b.Asked = o.TimeScale.Of(o.Spec.Duration)
		}
		if o.Result.FirstViolationNs >= 0 {
			b.FirstViolation = time.Duration(o.Result.FirstViolationNs)
		}
		if f := o.Failover; f != nil && f.FaultMs >= 0 && f.PromotedMs >= 0 {
			b.Promoted = time.Duration((f.PromotedMs - f.FaultMs) * float64(time.Millisecond))
		}
		bs = append(bs, b)
	}
	slices.SortStableFunc(bs, func(a, b Breakdown) int { return cmp.Compare(b.Phases.Total(), a.Phases.Total()) })
	return bs
}

// String is the breakdown in one line, in seconds.
func (b Breakdown) String() string {
	s := fmt.Sprintf("%s (%s): %.2f s = %s; asked %.2f s", b.Scenario, b.Verdict, b.Phases.Total().Seconds(),
		b.Phases, b.Asked.Seconds())
	if b.FirstViolation >= 0 {
		s += fmt.Sprintf(", first violation at %.2f s", b.FirstViolation.Seconds())
	}
	if b.StoppedAfter > 0 {
		s += fmt.Sprintf(", stopped %.2f s after it", b.StoppedAfter.Seconds())
	}
	if b.Promoted >= 0 {
		s += fmt.Sprintf(", failover timers %.2f s (fault to promotion)", b.Promoted.Seconds())
	}
	return s
}

// sumPhases is the runs' phases summed.
func sumPhases(bs []Breakdown) scenarios.Phases {
	var sum scenarios.Phases
	for _, b := range bs {
		sum = sum.Add(b.Phases)
	}
	return sum
}

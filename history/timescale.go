package history

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// TimeScale says that every time of a run (TTL, duration, pauses, fault
// windows, failpoint sleeps, think times, the deadlock bound) was
// multiplied by Factor, so that a lock whose clock counts in coarse units
// (Granularity: a second for PHP time() or Python int(time.time()) stamps)
// faces the schedule the scenario was written for, in the same relative
// order, instead of one whose TTL is a fraction of its unit. TTL is the
// scenario's TTL before scaling. The zero value, or a Factor of 1, is an
// unscaled run.
type TimeScale struct {
	Factor      float64       `json:"factor"`
	Granularity time.Duration `json:"granularity_ns"`
	TTL         time.Duration `json:"scenario_ttl_ns"`
}

// Scaled says the run's times were stretched.
func (t *TimeScale) Scaled() bool { return t != nil && t.Factor > 1 }

// Of is d stretched by the factor, to the nanosecond (an unscaled run
// keeps d exactly).
func (t *TimeScale) Of(d time.Duration) time.Duration {
	if !t.Scaled() {
		return d
	}
	return time.Duration(math.Round(float64(d) * t.Factor))
}

// Brief is the sentence in the few words a table's evidence column has
// room for, e.g. "scaled ×10 for whole-second expiry: TTL 300ms → 3s".
func (t *TimeScale) Brief() string {
	if !t.Scaled() {
		return "not scaled"
	}
	what := "whole-second expiry"
	if t.Granularity != time.Second {
		what = fmt.Sprintf("%v expiry units", t.Granularity)
	}
	return fmt.Sprintf("scaled ×%s for %s: TTL %v → %v", t.factor(), what, t.TTL, t.Of(t.TTL))
}

func (t *TimeScale) factor() string { return strconv.FormatFloat(t.Factor, 'g', 4, 64) }

// String is the sentence the evidence and the plan carry, e.g. "scaled ×10
// for a lock with whole-second expiry (granularity 1s, scenario TTL 300ms)".
func (t *TimeScale) String() string {
	if !t.Scaled() {
		return "not scaled"
	}
	what := "whole-second expiry"
	if t.Granularity != time.Second {
		what = fmt.Sprintf("expiry in units of %v", t.Granularity)
	}
	return fmt.Sprintf("scaled ×%s for a lock with %s (granularity %v, scenario TTL %v)",
		t.factor(), what, t.Granularity, t.TTL)
}

package checker

import (
	"fmt"
	"sync"

	"github.com/lockstorm/lockstorm/history"
)

// A check is one analysis of a history, in the style of porcupine's Model:
// a value with a name and one function. It reads the pass's analysis (see
// analyze.go), which it must not change except through its own memoized
// fields, and returns its finding. Checks run concurrently; what several
// need (the overlap pass) is computed once on the analysis.
type check interface {
	name() string
	run(a *analysis) finding
}

// A finding is one check's typed result: it writes its figures on the
// Result. Findings that can name a violation also implement violator; the
// verdict is composed from the findings in one place (compose).
type finding interface {
	apply(r *Result)
}

// violator is a finding that may name the first violation: when it began
// (-1: none) and its kind (ViolationOverlap, ...).
type violator interface {
	firstViolation() (at int64, kind string)
}

// checks are every check Check runs, in the order their findings are
// applied and their violations compared (on a tie the earlier one names
// the first violation). Adding a check: its file and test, and a line here.
var checks = []check{
	validityCheck{},
	evidenceCheck{},
	overlapCheck{},
	mutexCheck{},
	resourceCheck{},
	falseSuccessCheck{},
	livenessCheck{},
	stallOverlapCheck{},
	leakCheck{},
	needlessWaitCheck{},
	lockstepCheck{},
	retryCadenceCheck{},
	extendGaveUpCheck{},
	earlyGiveUpCheck{},
	releaseRetriesCheck{},
	falseRefusalCheck{},
}

// runChecks runs every check on a, each in its own goroutine (the pass is
// read-only to them), and returns their findings in registry order.
func runChecks(a *analysis) []finding {
	fs := make([]finding, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fs[i] = c.run(a)
		}()
	}
	wg.Wait()
	return fs
}

// findingOf is the finding of type T among fs (its zero value if none).
func findingOf[T finding](fs []finding) T {
	for _, f := range fs {
		if t, ok := f.(T); ok {
			return t
		}
	}
	var zero T
	return zero
}

// compose is the one place the verdict is made: every finding writes its
// figures, the earliest violation any of them names becomes the first
// violation, and verdict weighs them (see Check for the order).
func compose(a *analysis, fs []finding) Result {
	res := Result{FirstViolationNs: -1, DurationNs: a.end}
	for _, f := range fs {
		f.apply(&res)
	}
	for _, f := range fs {
		if v, ok := f.(violator); ok {
			if at, kind := v.firstViolation(); at >= 0 && (res.FirstViolationNs < 0 || at < res.FirstViolationNs) {
				res.FirstViolationNs, res.FirstViolation = at, kind
			}
		}
	}
	lv := findingOf[livenessFinding](fs)
	d := verdict(&res, a.opts, len(a.keys), lv.livenessResult)
	res.Verdict, res.Reason, res.ByHarness = d.verdict, d.reason, d.byHarness
	if res.Verdict == Deadlock {
		res.FirstViolationNs, res.FirstViolation = lv.quietOver, ViolationStarvation
		// The starvation that decided: the longest net of the harness's
		// stalls (the longest one outright may have been mostly stall).
		res.LongestStarvedMs, res.StarvedKey, res.StarvedFromNs = lv.net+lv.netStall, lv.netKey, lv.netFrom
	}
	violationFindings(&res, fs)
	sortFindings(&res)
	res.Permit(a.opts.Permissions)
	return res
}

// violationFindings adds the findings of the verdict's own kinds (two
// holders, harm, starvation), none of them when the harness's own stalls
// explain the violation (ByHarness). The false successes were judged one
// by one against the stalls already (keyevents: falseThroughStalls).
func violationFindings(res *Result, fs []finding) {
	firstOf := map[string]int64{}
	for _, f := range fs {
		if v, ok := f.(violator); ok {
			if at, kind := v.firstViolation(); at >= 0 {
				if old, seen := firstOf[kind]; !seen || at < old {
					firstOf[kind] = at
				}
			}
		}
	}
	if n := res.OverlapsWithoutStalls; n > 0 && res.Witness != nil && !res.ByHarness {
		res.Findings = append(res.Findings, Finding{Kind: history.KindTwoHolders, Count: n, FirstNs: res.Witness.FromNs, Witness: res.Witness.Text})
	}
	if harmed := res.StaleWrites + res.FenceRegressions + res.DupFences; (harmed > 0 || res.NetLostUpdates > 0) && !res.ByHarness {
		at, ok := firstOf[ViolationHarm]
		if !ok {
			at = -1
		}
		w := res.Harm
		if w == "" {
			w = fmt.Sprintf("%d updates of the counter lost", res.NetLostUpdates)
		}
		res.Findings = append(res.Findings, Finding{Kind: history.KindHarm, Count: max(harmed, 1), FirstNs: at, Witness: w})
	}
	if res.Verdict == Deadlock {
		res.Findings = append(res.Findings, Finding{Kind: history.KindStarvation, Count: 1, FirstNs: res.FirstViolationNs, Witness: res.Reason})
	}
}

// overlaps is the overlap pass over every key, computed once for the
// checks that need it (overlap, mutex, stall overlap).
func (a *analysis) overlaps() []keyOverlaps {
	a.overlapOnce.Do(func() {
		a.ovs = make([]keyOverlaps, len(a.keys))
		for k, kd := range a.keys {
			a.ovs[k] = overlapPass(kd)
		}
	})
	return a.ovs
}

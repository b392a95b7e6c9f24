package checker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
)

// What a run must have exercised to be called safe. A run that falls short
// is inconclusive, with the reason; a violation found is still unsafe and a
// starvation still a deadlock: only "safe" needs the evidence.
const (
	// MinHoldsPerKey is how many holds (acquire ok to release; reentrant
	// acquisitions count once) every key needs. Two, because mutual
	// exclusion is about two holders: a key held once cannot show an
	// overlap however wrong the lock is, and a key held twice has at least
	// been released and granted again, the moment every documented race is
	// about.
	MinHoldsPerKey = 2
	// MaxErrorFraction is the largest fraction of acquire attempts that may
	// end with an unknown outcome. Above it, most of the run exercised the
	// client's error path, not the lock: a lock that cannot be reached
	// cannot overlap. Faults that cut links make some attempts fail by
	// design; a majority failing means the run tested the fault and little
	// else. Error replies (NOREPLICAS, READONLY, ...) are not counted: the
	// server said no, definitely, as to a SET NX on a held key, and a lock
	// that folds the reply into its own "not acquired" (redsync's
	// ErrFailed) must get the verdict of one that lets it through. A run of
	// refusals alone is still not exercised: its keys are not held twice.
	MaxErrorFraction = 0.5
)

// FailpointCount is how often one armed failpoint action of the spec fired.
type FailpointCount struct {
	Index  int    `json:"index"`
	Client int    `json:"client"`
	Point  string `json:"point"`
	// Want is what the run needed: "exactly N" (a scheduled action with
	// times: N for one client), "at least 1", or "inert" (a step of another
	// implementation).
	Want  string `json:"want"`
	Fired int    `json:"fired"`
}

// evidence is what the history says the run exercised.
type evidence struct {
	meta       *history.Meta
	acqUnknown int // acquire attempts that ended info
	// acqUnknownLate are those of acqUnknown during which the harness was
	// late (its stalls, the client's own lag) or no server answered: an
	// unknown outcome the machine may have made, a timeout that fired
	// while nobody could run.
	acqUnknownLate int
	// byHarness counts the gaps the harness's lateness alone explains.
	byHarness    int
	acqRefused   int // acquire attempts refused with an error reply
	errorReplies int // every error reply (acquire and release)
	firstReply   string
	firstUnknown string
	faultsFailed int
	healsFailed  int
	failpoints   []FailpointCount
	gaps         []string
}

// gatherEvidence reads the header, the error replies, the nemesis entries
// and the failpoint steps of h, and lists what the run did not exercise.
// holdsPerKey and keys come from the analysis of the same history.
func gatherEvidence(h history.History, a *analysis) evidence {
	var ev evidence
	fired := map[int]int{}
	invoked := map[int]int64{} // an acquire's invoke time, by process
	var firstFault, firstHeal string
	for i := range h {
		op := &h[i]
		switch {
		case op.F == history.FMeta && op.Meta != nil && ev.meta == nil:
			ev.meta = op.Meta
		case op.Process == history.NemesisProcess && op.F == history.FStart && (op.Type == history.Fail || op.Targets != nil && op.Targets.Count() == 0):
			// FStart's contract: Fail, or no target, is a fault the run
			// never faced.
			ev.faultsFailed++
			if firstFault == "" {
				why := op.Error
				if why == "" {
					why = "no target"
				}
				firstFault = fmt.Sprintf("fault %q at %s applied to nothing: %s", op.Value, ms(op.Time), why)
			}
		case op.Process == history.NemesisProcess && op.F == history.FStop && op.Type == history.Fail:
			ev.healsFailed++
			if firstHeal == "" {
				firstHeal = fmt.Sprintf("heal of %q at %s failed: %s", op.Value, ms(op.Time), op.Error)
			}
		case op.F == history.FStep:
			for _, id := range op.Fired {
				fired[id]++
			}
		case op.Type == history.Fail && op.ErrorReply:
			ev.errorReplies++
			if ev.firstReply == "" {
				ev.firstReply = op.Error
			}
			if op.F == history.FAcquire {
				ev.acqRefused++
			}
		case op.Type == history.Invoke && op.F == history.FAcquire:
			invoked[op.Process] = op.Time
		case op.Type == history.Info && op.F == history.FAcquire:
			ev.acqUnknown++
			if from, ok := invoked[op.Process]; ok && a.lateOrSilent(op.Client, from, op.Time) {
				ev.acqUnknownLate++
			}
			if ev.firstUnknown == "" {
				ev.firstUnknown = op.Error
			}
		}
	}

	ev.acquisitionGaps(a)
	ev.keyGaps(a)
	ev.faultGaps(firstFault, firstHeal)
	ev.failpointGaps(fired)
	return ev
}

// acquisitionGaps: some acquisitions, not drowned in errors.
func (ev *evidence) acquisitionGaps(a *analysis) {
	errs := ev.acqUnknown + ev.acqRefused
	why := func() string {
		var parts []string
		if ev.acqRefused > 0 {
			parts = append(parts, fmt.Sprintf("%d error replies: %s", ev.acqRefused, ev.firstReply))
		}
		if ev.acqUnknown > 0 {
			s := fmt.Sprintf("%d unknown outcomes", ev.acqUnknown)
			if ev.firstUnknown != "" {
				s += ": " + ev.firstUnknown
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, "; ")
	}
	switch {
	case a.attempts > 0 && a.acquired == 0:
		g := fmt.Sprintf("0 acquisitions in %d attempts", a.attempts)
		if errs > 0 {
			g = "0 acquisitions: " + why()
		}
		ev.gaps = append(ev.gaps, g)
	case a.attempts > 0 && float64(ev.acqUnknown) > MaxErrorFraction*float64(a.attempts):
		g := fmt.Sprintf("most acquire attempts ended in errors (%d of %d, more than %.0f%%): %s",
			ev.acqUnknown, a.attempts, 100*MaxErrorFraction, why())
		if float64(ev.acqUnknown-ev.acqUnknownLate) <= MaxErrorFraction*float64(a.attempts) {
			// Without the attempts the harness's lateness or the servers'
			// silence overlapped, the errors are no majority: the machine,
			// not the lock or the faults, may have drowned the run, and a
			// runner may run it again (Result.ByHarness).
			g += fmt.Sprintf(" (%d of them while the harness was late or no server answered)", ev.acqUnknownLate)
			ev.byHarness++
		}
		ev.gaps = append(ev.gaps, g)
	}
}

// lateOrSilent says whether, between from and to, client was late by the
// harness's doing (lateFor) or every server was silent (serversSilent).
func (a *analysis) lateOrSilent(client int, from, to int64) bool {
	return liveness.Covered(a.lateFor(client), from, to) > 0 || liveness.Covered(a.serversSilent(), from, to) > 0
}

// lateOrSilentFor is how long of [from, to] the client was late or every
// server silent. It merges the two lists on each call: asked once per
// resend, not per operation as lateOrSilent is.
func (a *analysis) lateOrSilentFor(client int, from, to int64) int64 {
	return liveness.Covered(liveness.Merge(append(slices.Clone(a.lateFor(client)), a.serversSilent()...)), from, to)
}

// keyGaps: every key held often enough to test exclusion.
func (ev *evidence) keyGaps(a *analysis) {
	// Per key only for a runner's history: its header lists the keys the
	// run was about (a hand-written history without one is judged as is).
	if a.acquired > 0 && ev.meta != nil {
		var few []string
		seen := map[string]bool{}
		check := func(name string, holds int) {
			if seen[name] {
				return
			}
			seen[name] = true
			if holds < MinHoldsPerKey {
				few = append(few, fmt.Sprintf("%s %d", name, holds))
			}
		}
		for _, k := range ev.meta.Keys {
			n := 0
			if i, ok := a.keyIdx[k]; ok {
				n = len(a.keys[i].holds)
			}
			check(k, n)
		}
		for _, kd := range a.keys {
			if len(kd.acquires) > 0 {
				check(kd.name, len(kd.holds))
			}
		}
		if len(few) > 0 {
			ev.gaps = append(ev.gaps, fmt.Sprintf("keys held fewer than %d times (two holders are needed to test exclusion): %s",
				MinHoldsPerKey, strings.Join(few, ", ")))
		}
	}

}

// faultGaps: each fault applied to something, each healed.
func (ev *evidence) faultGaps(firstFault, firstHeal string) {
	if ev.faultsFailed > 0 {
		g := firstFault
		if ev.faultsFailed > 1 {
			g += fmt.Sprintf(" (and %d more)", ev.faultsFailed-1)
		}
		ev.gaps = append(ev.gaps, g)
	}
	if ev.healsFailed > 0 {
		g := firstHeal
		if ev.healsFailed > 1 {
			g += fmt.Sprintf(" (and %d more)", ev.healsFailed-1)
		}
		ev.gaps = append(ev.gaps, g)
	}

}

// failpointGaps: a scheduled action for one client fires exactly as often
// as its times says (the interleaving it forces needs every hit); any other
// action (every client, every hit, a probability) at least once.
func (ev *evidence) failpointGaps(fired map[int]int) {
	if ev.meta != nil {
		var short []string
		for _, fp := range ev.meta.Failpoints {
			fc := FailpointCount{Index: fp.Index, Client: fp.Client, Point: fp.Point, Fired: fired[fp.Index]}
			exact := ev.meta.Mode == "scheduled" && fp.Times > 0 && fp.Prob == 0 && fp.Client >= 0
			who := fmt.Sprintf("c%d", fp.Client)
			if fp.Client < 0 {
				who = "every client"
			}
			switch {
			case fp.Inert:
				fc.Want = "inert"
			case exact:
				fc.Want = fmt.Sprintf("exactly %d", fp.Times)
				if fc.Fired != fp.Times {
					short = append(short, fmt.Sprintf("#%d %s at %s fired %d of %d times", fp.Index, who, fp.Point, fc.Fired, fp.Times))
				}
			default:
				fc.Want = "at least 1"
				if fc.Fired == 0 {
					short = append(short, fmt.Sprintf("#%d %s at %s never fired", fp.Index, who, fp.Point))
				}
			}
			ev.failpoints = append(ev.failpoints, fc)
		}
		if len(short) > 0 {
			ev.gaps = append(ev.gaps, "failpoints short of the schedule: "+strings.Join(short, "; "))
		}
	}
}

// firedSummary is the failpoints' counts in a few words, for a safe reason.
func firedSummary(fcs []FailpointCount) string {
	var parts []string
	for _, fc := range fcs {
		if fc.Want != "inert" {
			parts = append(parts, fmt.Sprintf("#%d %s ×%d", fc.Index, fc.Point, fc.Fired))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "failpoints fired: " + strings.Join(parts, ", ")
}

// evidenceCheck lists what the run did not exercise (see gatherEvidence).
type evidenceCheck struct{}

func (evidenceCheck) name() string { return "evidence" }

func (evidenceCheck) run(a *analysis) finding { return gatherEvidence(a.input, a) }

func (ev evidence) apply(r *Result) {
	r.ErrorReplies, r.FaultsFailed, r.HealsFailed = ev.errorReplies, ev.faultsFailed, ev.healsFailed
	r.Failpoints, r.Gaps = ev.failpoints, ev.gaps
	r.GapsByHarness = ev.byHarness
}

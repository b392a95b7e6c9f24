// Package checker turns a recorded history (package history) into
// verdicts: mutual exclusion (a porcupine mutex model partitioned per key,
// plus a linear overlap pass that names the witness), lost updates on the
// counter resource, fencing and liveness.
package checker

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockstorm/lockstorm/checker/mutex"
	"github.com/lockstorm/lockstorm/history"
)

// Defaults of Options.
const (
	DefaultDeadlockBound = 10 * time.Second
	DefaultTimeout       = 10 * time.Second
)

// withDefaults is o with every unset bound at its default.
func withDefaults(o history.Options) history.Options {
	if o.DeadlockBound <= 0 {
		o.DeadlockBound = DefaultDeadlockBound
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Porcupine's verdicts as Result.Linearizable spells them.
const (
	linOK      = "ok"
	linIllegal = "illegal"
	linUnknown = "unknown"
)

// Check runs every check on h. The verdict, in order:
//
//   - unsafe: the resource was harmed (NetLostUpdates > 0, StaleWrites > 0,
//     FenceRegressions > 0 or DupFences > 0), or holds overlapped and the implementation is not
//     fenced (o.Fenced false); also when the history is not linearizable for
//     porcupine although the overlap pass found nothing (a checker bug:
//     never call that safe);
//   - deadlock: else, a key was starved longer than o.DeadlockBound;
//   - inconclusive: else, porcupine ran out of time on a piece, no acquire
//     was attempted at all, or the history had malformed entries;
//   - safe: else. A fenced implementation whose holders overlapped but whose
//     resource stayed correct is safe; Overlaps still says how often.
//
// Before any of this the history is validated (see Validate): a history with
// problems (a completion without its invoke, a duplicated entry, no end
// record...) is judged on its well-formed part only. A violation found
// there is unsafe; anything else is inconclusive, with the problems by line.
// A safe verdict needs evidence as well (see gatherEvidence): holds on every
// key, not most attempts failing, every fault applied and healed, every
// failpoint fired as the spec asks; without it the run is inconclusive.
func Check(h history.History, o history.Options) Result {
	return CheckParsed(history.Parsed{History: h}, o)
}

// maxProblems is how many history problems a Result lists (Malformed counts
// them all).
const maxProblems = 50

// CheckParsed is Check on a history read by ReadChecked: its unreadable
// lines are problems too, and problems name the file's lines.
func CheckParsed(p history.Parsed, o history.Options) Result {
	o = withDefaults(o)
	// The pass runs beside the validation, on the whole history: a
	// history without problems (nearly every one) is its own well-formed
	// part, and one with problems is passed again on that part.
	whole := make(chan *analysis, 1)
	go func() { whole <- analyze(p.History) }()
	h, problems, sorted := history.Validate(p)
	a := <-whole
	if len(problems) > 0 {
		a = analyzeOrdered(h, sorted)
	}
	a.input, a.problems, a.opts, a.stampTokens = h, problems, o, o.StampTokens
	return compose(a, runChecks(a))
}

// ProblemText lists the first few of r's history problems by line, "" when
// the history had none: a report shows it beside a verdict reached on a
// damaged history's well-formed part.
func (r Result) ProblemText() string {
	if r.Malformed == 0 {
		return ""
	}
	return problemText(&r)
}

// problemText lists the first few problems.
func problemText(r *Result) string {
	const show = 3
	var parts []string
	for i, p := range r.Problems {
		if i == show {
			break
		}
		parts = append(parts, p.String())
	}
	s := fmt.Sprintf("%d history problems: %s", r.Malformed, strings.Join(parts, "; "))
	if r.Malformed > len(parts) {
		s += fmt.Sprintf("; and %d more", r.Malformed-len(parts))
	}
	return s
}

// decision is a verdict word, its reason and whether the harness's own
// stalls, not the lock, made it inconclusive (Result.ByHarness).
type decision struct {
	verdict, reason string
	byHarness       bool
}

// decide is a verdict of the lock's; harness is one the harness's own
// stalls made inconclusive.
func decide(v, reason string) decision { return decision{verdict: v, reason: reason} }
func harness(reason string) decision {
	return decision{verdict: Inconclusive, reason: reason, byHarness: true}
}

// verdict decides the run's verdict from the checks' figures on r, which it
// only reads.
func verdict(r *Result, o history.Options, keys int, lv livenessResult) decision {
	// A false success is a finding of its own kind (Result.Findings),
	// judged against what the lock's claims permit: it does not make the
	// verdict word, which says whether mutual exclusion and the resource
	// held. (It did, when it was the only way to fail a run for it: then a
	// lock whose plain DEL was documented, expected safe where its waiters
	// race, came out unsafe whenever a late release met an expired key.)
	harmed := r.NetLostUpdates > 0 || r.StaleWrites > 0 || r.FenceRegressions > 0 || r.DupFences > 0
	why := harms(r)
	overlap := overlapText(r)
	switch {
	case onlyThroughStalls(r, o):
		// Every overlap and false success (and the harm they did) goes
		// away with the holds shortened, and the releases moved earlier, by
		// the harness's own stalls and the holders' own lag: the lease ran
		// out while the harness, or that holder, was not running.
		return harness(fmt.Sprintf("%s; %s, but none without the harness's stalls%s inside the holds%s%s",
			lateText(r), stallExplained(r, o, overlap), ifLags(r, " and the holders' own lag"), cutText(r), staleText(r, o)))
	case harmed || r.Overlaps > 0 && !o.Fenced:
		if r.Overlaps > 0 {
			why = append([]string{overlap}, why...)
		}
		if r.Harm != "" {
			why = append(why, "first harm: "+r.Harm)
		}
		if r.Malformed > 0 {
			why = append(why, "found in the well-formed part of a history with "+problemText(r))
		}
		return decide(Unsafe, strings.Join(why, "; "))
	case r.Linearizable == linIllegal && r.Overlaps == 0:
		return decide(Unsafe, "porcupine found the history not linearizable but the overlap pass found no overlap (checker bug)")
	case r.Malformed > 0:
		// A cut or damaged history can fake a starvation (a lost release
		// leaves a key held to the end): only a violation survives it.
		return decide(Inconclusive, problemText(r))
	case lv.net > float64(o.DeadlockBound)/1e6 && lv.quiet <= float64(o.DeadlockBound)/1e6:
		// Over the bound, but not without the moments no server answered
		// anything: the starvation may be the servers', not the lock's.
		return decide(Inconclusive, fmt.Sprintf("%s had acquisitions pending and none granted for %.0f ms from %s, but no server answered anything for %.0f ms of it (the observers' syncs went unanswered; %.0f ms in all): at most %.0f ms without, within the bound %s",
			lv.netKey, lv.net+lv.netStall, ms(lv.netFrom), lv.silentIn, r.ServersSilentMs, lv.quiet, o.DeadlockBound))
	case lv.net > float64(o.DeadlockBound)/1e6:
		s := fmt.Sprintf("%s had acquisitions pending and none granted for %.0f ms from %s (bound %s)",
			lv.netKey, lv.net+lv.netStall, ms(lv.netFrom), o.DeadlockBound)
		if lv.netStall > 0 {
			s += fmt.Sprintf("; %.0f ms of it without the harness's own stalls", lv.net)
		}
		return decide(Deadlock, s)
	case r.LongestStarvedMs > float64(o.DeadlockBound)/1e6:
		// Over the bound only with the harness's own stalls counted: the
		// starvation may be the harness's, not the lock's.
		return harness(fmt.Sprintf("%s; %s starved %.0f ms from %s, but at most %.0f ms of it without the harness's stalls%s, within the bound %s",
			lateText(r), r.StarvedKey, r.LongestStarvedMs, ms(r.StarvedFromNs), lv.net,
			ifLags(r, " and the moments every client that wanted it was late"), o.DeadlockBound))
	case r.TimedOutPieces > 0:
		return decide(Inconclusive, fmt.Sprintf("porcupine ran out of time (%s) on %d of %d pieces", o.Timeout, r.TimedOutPieces, r.Pieces))
	case r.Attempts == 0:
		return decide(Inconclusive, "no acquire was attempted: the history tests nothing")
	case len(r.Gaps) > 0 && r.GapsByHarness == len(r.Gaps):
		return harness(fmt.Sprintf("not exercised: %s; %s", strings.Join(r.Gaps, "; "), lateOrSilentText(r)))
	case len(r.Gaps) > 0:
		return decide(Inconclusive, "not exercised: "+strings.Join(r.Gaps, "; "))
	case o.ScheduleLease > 0 && r.HarnessStallMaxMs >= float64(o.ScheduleLease)/1e6:
		return harness(fmt.Sprintf("no violation, but the harness stalled %.0f ms at once, as long as the %s lease the schedule is timed against: the interleaving it sets may not have happened",
			r.HarnessStallMaxMs, o.ScheduleLease))
	}
	return decide(Safe, safeReason(r, keys, overlap))
}

// lateText says how late the harness was: its whole process's stalls and
// its clients' own lags, those it recorded.
func lateText(r *Result) string {
	var parts []string
	if r.HarnessStalls > 0 {
		parts = append(parts, fmt.Sprintf("harness stalled %.0f ms in all (longest %.0f ms)", r.HarnessStallTotalMs, r.HarnessStallMaxMs))
	}
	if r.ClientLags > 0 && r.ClientLagMaxClient != nil {
		parts = append(parts, fmt.Sprintf("clients lagged %.0f ms in all (longest %.0f ms, c%d)", r.ClientLagTotalMs, r.ClientLagMaxMs, *r.ClientLagMaxClient))
	}
	return strings.Join(parts, "; ")
}

// lateOrSilentText is lateText, with the servers' silence when some.
func lateOrSilentText(r *Result) string {
	parts := []string{}
	if t := lateText(r); t != "" {
		parts = append(parts, t)
	}
	if r.ServersSilentMs > 0 {
		parts = append(parts, fmt.Sprintf("no server answered for %.0f ms in all", r.ServersSilentMs))
	}
	return strings.Join(parts, "; ")
}

// cutText names the holds counted only up to a renewal the harness may
// have made fail, "" when none.
func cutText(r *Result) string {
	if r.HoldsCutAtRenewal == 0 {
		return ""
	}
	return fmt.Sprintf(" or the renewals they delayed or spoiled (%d holds counted up to such a renewal)", r.HoldsCutAtRenewal)
}

// staleText names the overlaps only stale stamps explain, "" when none.
func staleText(r *Result, o history.Options) string {
	if r.OverlapsStaleStamps == 0 {
		return ""
	}
	return fmt.Sprintf(" or a stamp written after the harness was late for the rest of the %s lease since it was computed (%d pairs)",
		o.StampLease, r.OverlapsStaleStamps)
}

// ifLags is s when the clients' own lags were recorded, else "".
func ifLags(r *Result, s string) string {
	if r.ClientLags == 0 {
		return ""
	}
	return s
}

// onlyThroughStalls says whether every violation the run found (overlaps of
// an unfenced lock, false successes) goes away without the harness's own
// stalls, and nothing else (fences) was violated.
func onlyThroughStalls(r *Result, o history.Options) bool {
	if r.Overlaps == 0 || o.Fenced {
		return false
	}
	return r.OverlapsWithoutStalls == 0 && r.FenceRegressions == 0 && r.DupFences == 0
}

// stallExplained names what went away without the stalls.
func stallExplained(r *Result, o history.Options, overlap string) string {
	var what []string
	if r.Overlaps > 0 && !o.Fenced {
		what = append(what, overlap)
	}
	if r.FalseSuccesses > 0 {
		what = append(what, fmt.Sprintf("%d releases acknowledged on a lock no longer theirs (first: %s)", r.FalseSuccesses, r.FalseSuccess))
	}
	return strings.Join(what, "; ")
}

// harms lists what a run did wrong for its reason, first the false
// successes (told there, judged as findings of their own).
func harms(r *Result) []string {
	var why []string
	if r.FalseSuccesses > 0 {
		what := "releases"
		if r.ExtendFalseSuccesses > 0 {
			what = fmt.Sprintf("releases or extends (%d extends, %d foreign renewals)", r.ExtendFalseSuccesses, r.ForeignRenewals)
		}
		why = append(why, fmt.Sprintf("%d %s acknowledged on a lock no longer theirs; first: %s", r.FalseSuccesses, what, r.FalseSuccess))
	}
	if r.StaleWrites > 0 {
		why = append(why, fmt.Sprintf("%d stale writes accepted", r.StaleWrites))
	}
	if r.NetLostUpdates > 0 {
		why = append(why, fmt.Sprintf("%d updates lost net (%d writes acknowledged, final value %d)", r.NetLostUpdates, r.AckedWrites, r.FinalValue))
	}
	if r.FenceRegressions > 0 {
		why = append(why, fmt.Sprintf("%d writes accepted with a fence not above the last", r.FenceRegressions))
	}
	if r.DupFences > 0 {
		why = append(why, fmt.Sprintf("%d fencing tokens issued twice", r.DupFences))
	}
	return why
}

// overlapText is the first overlap in a few words ("" without one).
func overlapText(r *Result) string {
	if r.Witness == nil {
		return ""
	}
	w := r.Witness
	return fmt.Sprintf("%d overlapping holds; first: c%d and c%d both held %s from %s to %s",
		r.Overlaps, w.A.Client, w.B.Client, w.Key, ms(w.FromNs), ms(w.ToNs))
}

// safeReason says what a safe run showed: no overlap, or overlaps the fenced
// resource absorbed.
func safeReason(r *Result, keys int, overlap string) string {
	var s string
	if r.Overlaps > 0 {
		s = fmt.Sprintf("%s, but the fenced resource stayed correct (%d stale writes rejected)", overlap, r.Rejected)
	} else {
		s = fmt.Sprintf("no overlap among %d holds on %d keys; %d writes acknowledged, none lost", r.Holds, keys, r.AckedWrites)
	}
	if r.ErrorReplies > 0 {
		s += fmt.Sprintf("; %d error replies", r.ErrorReplies)
	}
	if f := firedSummary(r.Failpoints); f != "" {
		s += "; " + f
	}
	return s
}

// errNoViolation is returned by violation for a history in which no two
// holds overlap.
var errNoViolation = errors.New("no overlapping holds: nothing to visualize")

// violation checks, with porcupine's verbose checker, the piece of the
// failing key's history that contains the first overlap (reduced to the
// overlapping pair and the unknown acquires during it when the piece is
// large), and returns the model and linearization info for
// porcupine.Visualize. It returns errNoViolation when nothing overlaps.
func violation(h history.History, o history.Options) (porcupine.Model, porcupine.LinearizationInfo, porcupine.CheckResult, error) {
	o = withDefaults(o)
	a := analyze(h)
	var best *Witness
	bestKey := -1
	ovs := make([]keyOverlaps, len(a.keys))
	for k, kd := range a.keys {
		ovs[k] = overlapPass(kd)
		if w := ovs[k].witness; w != nil && (best == nil || w.FromNs < best.FromNs || w.FromNs == best.FromNs && w.Key < best.Key) {
			best, bestKey = w, k
		}
	}
	model := mutex.Model()
	if best == nil {
		return model, porcupine.LinearizationInfo{}, porcupine.Ok, errNoViolation
	}
	kd := a.keys[bestKey]
	var found *piece
	splitKey(bestKey, kd, &ovs[bestKey], func(p piece) {
		if found == nil && p.overlap && p.lo < p.hi && kd.holds[p.lo].From <= best.FromNs && best.FromNs < kd.holds[p.hi-1].To+1 {
			for i := p.lo; i < p.hi; i++ {
				if kd.holds[i].Process == best.B.Process && kd.holds[i].From == best.B.From {
					found = &p
					return
				}
			}
		}
	})
	if found == nil {
		return model, porcupine.LinearizationInfo{}, porcupine.Ok, fmt.Errorf("checker bug: no piece holds the overlap on %s", best.Key)
	}
	res, info := porcupine.CheckOperationsVerbose(model, pieceOps(kd, *found, clientIDs()), o.Timeout)
	return model, info, res, nil
}

// Visualize writes porcupine's HTML visualization of the piece of history
// around the first overlap (see violation), so the file stays small. A
// history without an overlap (a deadlock, an inconclusive run) is not an
// error: Visualize then draws the piece where the longest starvation began,
// or the first piece of the history, so the report always has the file.
func Visualize(h history.History, o history.Options, w io.Writer) error {
	model, info, _, err := violation(h, o)
	if errors.Is(err, errNoViolation) {
		model, info = contextPiece(h, withDefaults(o))
	} else if err != nil {
		return err
	}
	return porcupine.Visualize(model, info, w)
}

// contextPiece is the piece of the starved key that contains the start of
// its longest starvation, or the first piece of the first key with holds.
func contextPiece(h history.History, o history.Options) (porcupine.Model, porcupine.LinearizationInfo) {
	model := mutex.Model()
	a := analyze(h)
	lv := checkLiveness(a, int64(o.DeadlockBound))
	k := -1
	for i, kd := range a.keys {
		if kd.name == lv.starvedKey && len(kd.holds)+len(kd.unknowns) > 0 || k < 0 && len(kd.holds) > 0 {
			k = i
		}
	}
	if k < 0 {
		_, info := porcupine.CheckOperationsVerbose(model, nil, o.Timeout)
		return model, info
	}
	kd := a.keys[k]
	ov := overlapPass(kd)
	var chosen *piece
	splitKey(k, kd, &ov, func(p piece) {
		if chosen == nil || kd.name == lv.starvedKey && p.cutBefore <= lv.starvedFrom {
			chosen = &p
		}
	})
	_, info := porcupine.CheckOperationsVerbose(model, pieceOps(kd, *chosen, clientIDs()), o.Timeout)
	return model, info
}

// Holds returns every hold in h (the belief model's critical sections:
// definite acquire ok to release invoke, crash or end of the history),
// ordered by From, then key.
func Holds(h history.History) []Hold {
	a := analyze(h)
	var out []Hold
	for _, kd := range a.keys {
		for i := range kd.holds {
			out = append(out, kd.holds[i].Hold)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].From != out[j].From {
			return out[i].From < out[j].From
		}
		return out[i].Key < out[j].Key
	})
	return out
}

package reports

import (
	"fmt"
	"strings"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
)

// NoEvidence is the evidence of a row with nothing to tell.
const NoEvidence = "—"

// Evidence tells a check result's story in one sentence, for the table's
// evidence column and the suite page: who held what at the same time and for
// how long, how the resource was harmed, which key starved from when, or why
// the run proves nothing. A clean run has NoEvidence.
//
// Findings the run's expectation does not permit come first, the first of
// them with its witness: they fail the run whatever its verdict.
func Evidence(r checker.Result) string {
	parts := unpermittedWords(r)
	if w := r.Witness; w != nil {
		s := fmt.Sprintf("c%d and c%d both held %s at %s for %s", w.A.Client, w.B.Client, w.Key, when(w.FromNs), span(w.ToNs-w.FromNs))
		switch {
		case r.OverlapIntervals > 1:
			s += fmt.Sprintf("; 2+ holders for %s in all, %d intervals", span(r.OverlapNs), r.OverlapIntervals)
		case r.OverlapNs > w.ToNs-w.FromNs:
			s += fmt.Sprintf("; 2+ holders for %s in all", span(r.OverlapNs))
		}
		parts = append(parts, s)
	}
	parts = append(parts, harmWords(r)...)
	if r.Witness == nil && r.Harm != "" && r.Verdict == checker.Unsafe {
		parts = append(parts, "first: "+r.Harm)
	}
	switch r.Verdict {
	case checker.Deadlock:
		parts = append(parts, fmt.Sprintf("%s starved %s from %s", r.StarvedKey, span(int64(r.LongestStarvedMs*1e6)), when(r.StarvedFromNs)))
	case checker.Inconclusive:
		parts = append(parts, r.Reason)
	case checker.Safe:
		if r.Overlaps > 0 && r.Rejected > 0 {
			parts = append(parts, fmt.Sprintf("the fence refused %s", plural(r.Rejected, "write")))
		}
		if r.FalseSuccessUnjudged > 0 {
			// A safe that the false-success oracle could not fully back.
			parts = append(parts, fmt.Sprintf("%s not judged: observer behind", plural(r.FalseSuccessUnjudged, "release")))
		}
	}
	if p := r.ProblemText(); p != "" && r.Verdict != checker.Inconclusive {
		// The verdict rests on the well-formed part of a damaged history
		// (an inconclusive one already gives the problems as its reason).
		parts = append(parts, "found in a damaged history: "+p)
	}
	if len(parts) == 0 {
		return NoEvidence
	}
	return strings.Join(parts, "; ")
}

// unpermittedWords name the findings the expectation does not permit,
// the first with its witness, and the leaks it does permit (which no other
// figure tells).
func unpermittedWords(r checker.Result) []string {
	var out, kinds []string
	for _, f := range r.Unpermitted() {
		kinds = append(kinds, fmt.Sprintf("%s ×%d", f.Kind, f.Count))
	}
	if len(kinds) > 0 {
		out = append(out, "not permitted: "+strings.Join(kinds, ", ")+" (first: "+r.Unpermitted()[0].Witness+")")
	}
	var leaks []string
	for _, f := range r.Findings {
		switch f.Kind {
		case history.KindReleaseFalseSuccess, history.KindExtendFalseSuccess, history.KindReleaseNotFreed,
			history.KindLostAcquire, history.KindLostAcquireUnknown, history.KindOrphanedKey,
			history.KindNeedlessWait, history.KindLockstepRetries, history.KindRetryCadence, history.KindExtendGaveUp,
			history.KindReleaseRetries, history.KindFalseRefusal, history.KindEarlyGiveUp:
			if f.Permitted {
				leaks = append(leaks, fmt.Sprintf("%s ×%d", f.Kind, f.Count))
			}
		}
	}
	if len(leaks) > 0 {
		out = append(out, "permitted: "+strings.Join(leaks, ", "))
	}
	return out
}

// harmWords are the figures of harm to the resource, each with one meaning.
func harmWords(r checker.Result) []string {
	var out []string
	if r.StaleWrites > 0 {
		out = append(out, plural(r.StaleWrites, "stale write"))
	}
	if r.StaleWrites == 0 && r.NetLostUpdates > 0 {
		out = append(out, fmt.Sprintf("%d updates lost net", r.NetLostUpdates))
	}
	if r.FenceRegressions > 0 {
		out = append(out, plural(r.FenceRegressions, "fence regression"))
	}
	if r.DupFences > 0 {
		out = append(out, plural(r.DupFences, "fencing token")+" issued twice")
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// when is a time from the start of the run: milliseconds to 10 s, then
// seconds.
func when(ns int64) string {
	if ns >= 10e9 {
		return fmt.Sprintf("%.1f s", float64(ns)/1e9)
	}
	return fmt.Sprintf("%.1f ms", float64(ns)/1e6)
}

// span is a duration: milliseconds under a second, then seconds.
func span(ns int64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.1f s", float64(ns)/1e9)
	case ns >= 100e6:
		return fmt.Sprintf("%.0f ms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.1f ms", float64(ns)/1e6)
}

// FindingsBrief lists findings in a few words: each kind with its count,
// marked "!" when not permitted ("—" for none).
func FindingsBrief(fs []checker.Finding) string {
	if len(fs) == 0 {
		return NoEvidence
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		mark := ""
		if !f.Permitted {
			mark = "!"
		}
		parts[i] = fmt.Sprintf("%s%s×%d", mark, f.Kind, f.Count)
	}
	return strings.Join(parts, " ")
}

package zootest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
)

// quorumLocks are the locks of a release that declare a quorum.
func quorumLocks(locks []lockimpl.Info) []lockimpl.Info {
	var out []lockimpl.Info
	for _, l := range locks {
		if l.Claims.Topology == lockimpl.Quorum {
			out = append(out, l)
		}
	}
	return out
}

// retryScenario is the shipped scenario in which holders extend through
// blips on their links and waiters poll through each hold: where a lock's
// declared retries (backoff_growth, extend_retries) are judged.
const retryScenario = "extend-blips"

// enoughTries is how many tries one acquire must have made for a paced
// lock's silence to say something: more than the retry-cadence check's
// window of eight gaps.
const enoughTries = 9

// retries runs retryScenario on each seed for the first lock that
// declares backoff_growth (retry-cadence exactly when known says
// StuckBackoff) and the first that declares extend_retries
// (extend-gave-up exactly when known says ExtendNoRetry). Without the bug
// the run must still have asked the question: an acquire with enough
// tries, an extend that retried.
func retries(t *testing.T, locks []lockimpl.Info, seeds []uint64, known Known) {
	for _, l := range locks {
		if l.Claims.BackoffGrowth > 0 {
			t.Run("retry-cadence", func(t *testing.T) {
				assertKind(t, Run(t, l, seeds, []string{retryScenario}), history.KindRetryCadence, known.StuckBackoff, paced)
			})
			break
		}
	}
	for _, l := range locks {
		if l.Claims.ExtendRetries {
			t.Run("extend-gave-up", func(t *testing.T) {
				assertKind(t, Run(t, l, seeds, []string{retryScenario}), history.KindExtendGaveUp, known.ExtendNoRetry, retried)
			})
			break
		}
	}
}

// paced says some acquire made enough tries to judge its cadence.
func paced(h history.History) bool {
	for _, op := range h {
		if op.F == history.FAcquire && op.Type != history.Invoke && len(op.Tries) >= enoughTries {
			return true
		}
	}
	return false
}

// retried says some extend tried more than once.
func retried(h history.History) bool {
	for _, op := range h {
		if op.F == history.FExtend && op.Type != history.Invoke && len(op.Tries) > 1 {
			return true
		}
	}
	return false
}

// assertKind asserts kind on every run: shown and forbidden (failing the
// run) when want, absent otherwise, with asked true of the run's history
// so that an absence means the question came up. The run's other findings
// are the battery's business (a release with both bugs fails the run
// either way).
func assertKind(t *testing.T, reps []*locktest.Report, kind history.Kind, want bool, asked func(history.History) bool) {
	t.Helper()
	for _, rep := range reps {
		for _, o := range rep.Outcomes {
			r := o.Result
			f := r.Finding(kind)
			witness := "none"
			if f != nil {
				witness = f.Witness
			}
			t.Logf("seed %d: %s (expected %s), %s: %s; %s", o.Seed, r.Verdict, o.Expected, kind, witness, triesSeen(o.History))
			switch {
			case want && (f == nil || f.Permitted || o.AsExpected()):
				t.Errorf("seed %d: want a forbidden %s failing the run, got %s (as expected %v)", o.Seed, kind, witness, o.AsExpected())
			case !want && f != nil:
				t.Errorf("seed %d: %s on a release without the bug: %s", o.Seed, kind, f.Witness)
			case !want && !asked(o.History):
				t.Errorf("seed %d: no %s question came up (%s): its absence says nothing", o.Seed, kind, r.Reason)
			}
		}
	}
}

// triesSeen tells the tries a run's history shows: the acquire with the
// most and its first gaps, and the extends by their count of tries.
func triesSeen(h history.History) string {
	var most []int64
	extends := map[string]int{}
	for _, op := range h {
		switch {
		case op.Type == history.Invoke:
		case op.F == history.FAcquire && len(op.Tries) > len(most):
			most = op.Tries
		case op.F == history.FExtend:
			extends[fmt.Sprintf("%s/%d tries", op.Type, len(op.Tries))]++
		}
	}
	var gaps []string
	for i := 1; i < len(most) && i <= 12; i++ {
		gaps = append(gaps, fmt.Sprintf("%.0f", float64(most[i]-most[i-1])/1e6))
	}
	return fmt.Sprintf("most tries in one acquire %d (first gaps ms %s), extends %v", len(most), strings.Join(gaps, " "), extends)
}

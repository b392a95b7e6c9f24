package checker

import (
	"fmt"
	"slices"

	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
)

// cadenceGaps is how many consecutive gaps between one acquire's tries the
// retry-cadence check reads at once. A lock may hold its floor for a few
// tries before its delay grows (bsm/redislock's ExponentialBackoff gives
// 2 << n ms, so at its recommended 16 ms floor the first three delays are
// 16 ms); eight gaps leave six flat ones and still ask the delay to grow
// twice, to growth² times the smallest.
const cadenceGaps = 8

// flatWindow returns the start of the first window of cadenceGaps
// consecutive gaps of tries, none within excused, whose largest gap is
// under growth² times its smallest and under half the cap, with those
// gaps; ok false when every window grew (or met a fault or stall).
func flatWindow(tries []int64, excused []liveness.Interval, growth float64, capNs int64) (at int, least, most int64, ok bool) {
	for i := 0; i+cadenceGaps < len(tries); i++ {
		least, most = tries[i+1]-tries[i], int64(0)
		clean := true
		for j := i + 1; j <= i+cadenceGaps && clean; j++ {
			g := tries[j] - tries[j-1]
			least, most = min(least, g), max(most, g)
			clean = liveness.Covered(excused, tries[j-1], tries[j]) == 0
		}
		if clean && float64(most) < growth*growth*float64(least) && most < capNs/2 {
			return i, least, most, true
		}
	}
	return 0, 0, 0, false
}

// cadenceExcused are the spans in which client's tries may not have been
// sent when its lock chose: the harness's stalls, the client's own lag,
// and every fault that named it (its pauses, its links' faults). The
// servers' silences (an observer's sync not yet answered) are not among
// them: a try's send does not wait on a reply the observers missed, and
// a sync is in flight every 20 ms, which would leave no window of tries
// 16 ms apart unexcused.
func (a *analysis) cadenceExcused(client int) []liveness.Interval {
	return liveness.Merge(append(slices.Clone(a.lateFor(client)), a.faulted[client]...))
}

// retryCadenceCheck finds waiters whose tries within one acquire did not
// follow the pacing their lock declares (history.Options.BackoffGrowth).
// The tries are the sends the hooks on the client's connections saw
// (history.Op.Tries); gaps on a fault's path, the harness's stalls and the
// client's lag and pauses are not read, so a window is judged only where
// the lock alone chose when to ask again.
type retryCadenceCheck struct{}

func (retryCadenceCheck) name() string { return "retry-cadence" }

func (retryCadenceCheck) run(a *analysis) finding {
	growth, capNs := a.opts.BackoffGrowth, int64(a.opts.BackoffCap)
	f := witnessed{kind: history.KindRetryCadence}
	if growth <= 1 || capNs <= 0 {
		return f
	}
	for i := range a.h {
		op := &a.h[i]
		if op.F != history.FAcquire || op.Type == history.Invoke || op.Process < 0 || len(op.Tries) <= cadenceGaps {
			continue
		}
		excused := a.cadenceExcused(op.Client)
		at, least, most, ok := flatWindow(op.Tries, excused, growth, capNs)
		if ok {
			f.add(op.Tries[at], func() string {
				return fmt.Sprintf("client %d's acquire of %s made %d tries from %s; %d in a row from %s were %s to %s apart, never growing to %.3g times the smallest (the declared growth %.3g a try, squared) nor to half the %s cap, with no fault, stall or pause on their path",
					op.Client, op.Key, len(op.Tries), ms(op.Tries[0]), cadenceGaps+1, ms(op.Tries[at]), ms(least), ms(most), growth*growth, growth, ms(capNs))
			})
		}
	}
	return f
}

// witnessed is a finding of one kind told by its first occurrence; it
// does not change the verdict word.
type witnessed struct {
	kind    history.Kind
	count   int
	first   int64
	witness string
}

// add counts one occurrence at t, told by text if it is the first.
func (f *witnessed) add(t int64, text func() string) {
	if f.count == 0 {
		f.first, f.witness = t, text()
	}
	f.count++
}

func (f witnessed) apply(r *Result) {
	if f.count > 0 {
		r.Findings = append(r.Findings, Finding{Kind: f.kind, Count: f.count, FirstNs: f.first, Witness: f.witness})
	}
}

// extendGaveUpCheck finds extends that gave up after their first try
// while the lock declares it retries a try that got no definite answer
// (history.Options.ExtendRetryLease) and half the lease was left: the
// lease dated, as early as it can be, from the invoke of the grant or
// extend that set it (the command ran after it), so a key that lived
// longer leaves more room, never less. Crashed clients are not judged.
type extendGaveUpCheck struct{}

func (extendGaveUpCheck) name() string { return "extend-gave-up" }

func (extendGaveUpCheck) run(a *analysis) finding {
	lease := int64(a.opts.ExtendRetryLease)
	f := witnessed{kind: history.KindExtendGaveUp}
	if lease <= 0 {
		return f
	}
	type ck struct {
		client int
		key    string
	}
	from := map[ck]int64{}          // when the lease in force was asked for
	invoked := map[[2]int64]int64{} // extend (client, N) → its invoke
	acquiring := map[int]int64{}    // client → its acquire's invoke
	crashed := map[int]bool{}
	for i := range a.h {
		op := &a.h[i]
		if op.Process < 0 {
			continue
		}
		switch {
		case op.F == history.FCrash:
			crashed[op.Client] = true
		case op.F == history.FAcquire && op.Type == history.Invoke:
			acquiring[op.Client] = op.Time
		case op.F == history.FAcquire && op.Type == history.Ok:
			from[ck{op.Client, op.Key}] = acquiring[op.Client]
		case op.F == history.FExtend && op.Type == history.Invoke:
			invoked[[2]int64{int64(op.Client), op.N}] = op.Time
		case op.F == history.FExtend && op.Type == history.Ok:
			from[ck{op.Client, op.Key}] = invoked[[2]int64{int64(op.Client), op.N}]
		case op.F == history.FExtend && op.Type == history.Info && len(op.Tries) == 1 && !crashed[op.Client]:
			start, ok := from[ck{op.Client, op.Key}]
			if ok && op.Time < start+lease/2 {
				f.add(op.Time, func() string {
					return fmt.Sprintf("client %d's extend of %s, invoked at %s, gave up after one try at %s (%s), half its lease left until %s at the least (asked for at %s): the lock says it retries a try with no definite answer",
						op.Client, op.Key, ms(invoked[[2]int64{int64(op.Client), op.N}]), ms(op.Time), op.Error, ms(start+lease/2), ms(start))
				})
			}
		}
	}
	return f
}

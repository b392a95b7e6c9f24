package scenarios

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/lockstorm/lockstorm/checker"
)

// Hunt is a search for a forbidden finding: seed after seed, a round of
// jobs per seed, until a run shows what its expectation forbids or the
// budget is spent. The combinations covered so far steer each round's
// explorers to the others (Config.Prior): a round starts from what the
// seeds before it covered, so on sim a hunt from one seed replays.
type Hunt struct {
	// Budget bounds the search's wall time; the runs under way when it
	// ends are cut short and count for nothing.
	Budget time.Duration
	// FirstSeed is the first round's seed (0: 1).
	FirstSeed uint64
	// Parallel is RunMany's.
	Parallel int
	// Round makes one seed's jobs, each with prior as its Config.Prior.
	Round func(seed uint64, prior []string) []Job
	// Progress, when set, is told after each round that found nothing.
	Progress func(seed uint64, runs int, elapsed time.Duration)
}

// HuntResult is what a hunt found and reached.
type HuntResult struct {
	// Found is the first run that showed a forbidden finding, nil when
	// none did within the budget.
	Found *Outcome
	// Runs and Seeds count what was run; Elapsed the wall time.
	Runs, Seeds int
	Elapsed     time.Duration
	// Coverage is the union of the runs' combinations; Points the
	// distinct lock points they hit.
	Coverage *CoverageSet
	Points   int
}

// Line says what the hunt reached: its combinations and points.
func (r *HuntResult) Line() string {
	line := r.Coverage.Line()
	if line == "" {
		line = "coverage: no combination"
	}
	return fmt.Sprintf("%s, %d distinct points hit", line, r.Points)
}

// Run hunts until a forbidden finding, the budget or ctx's end. An error
// is a run that could not be carried out.
func (h Hunt) Run(ctx context.Context) (*HuntResult, error) {
	start := time.Now()
	deadline := start.Add(h.Budget)
	res := &HuntResult{Coverage: NewCoverageSet()}
	points := map[string]bool{}
	for seed := max(h.FirstSeed, 1); time.Now().Before(deadline) && ctx.Err() == nil; seed++ {
		jobs := h.Round(seed, res.Coverage.Covered())
		outs, done, err := h.huntRound(ctx, jobs, deadline)
		if err != nil {
			return res, fmt.Errorf("seed %d: %w", seed, err)
		}
		res.Seeds++
		for i, o := range outs {
			if !done[i] {
				continue
			}
			res.Runs++
			if o.Points != nil {
				for _, p := range o.Points.Points {
					points[p.Point] = true
				}
				res.Coverage.Add(o.Impl, o.Points.Combos)
			}
			if res.Found == nil && o.Forbidden() {
				res.Found = o
			}
		}
		res.Points = len(points)
		res.Elapsed = time.Since(start)
		if res.Found != nil {
			return res, nil
		}
		if h.Progress != nil {
			h.Progress(seed, res.Runs, res.Elapsed)
		}
	}
	res.Elapsed = time.Since(start)
	return res, ctx.Err()
}

// huntRound runs one seed's jobs until they end, the deadline passes or one
// shows a forbidden finding; done says which ran to their end before
// that (the others were cut short and say nothing). A hunt past its
// budget or with its finding stops at once, not at the end of a round of
// minutes. The jobs go in batches, shortest first: RunMany starts the
// longest first, which finishes a battery soonest, but a hunt wants its
// first finding soonest, and the short scheduled specs are the ones that
// force a bug class in one run.
func (h Hunt) huntRound(ctx context.Context, jobs []Job, deadline time.Time) ([]*Outcome, []bool, error) {
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var mu sync.Mutex
	stopped := false
	outs := make([]*Outcome, len(jobs))
	done := make([]bool, len(jobs))
	for _, batch := range shortestFirst(jobs, cmp.Or(h.Parallel, huntBatch)) {
		sub := make([]Job, len(batch))
		for k, i := range batch {
			sub[k] = jobs[i]
		}
		_, errs := RunMany(rctx, sub, h.Parallel, nil, func(k int, o *Outcome, err error) {
			mu.Lock()
			defer mu.Unlock()
			if stopped || err != nil || rctx.Err() != nil {
				return
			}
			outs[batch[k]], done[batch[k]] = o, true
			if o.Forbidden() {
				stopped = true
				cancel()
			}
		})
		for k, err := range errs {
			if err != nil && !done[batch[k]] && rctx.Err() == nil {
				return nil, nil, fmt.Errorf("%s: %w", sub[k].Spec.Name, err)
			}
		}
		if rctx.Err() != nil {
			break
		}
	}
	return outs, done, nil
}

// huntBatch is how many runs a hunt's batch holds when Parallel leaves it
// to the machine: RunMany's floor of three and one more.
const huntBatch = 4

// shortestFirst orders jobs by their expected length, shortest first, in
// batches of n (their indices).
func shortestFirst(jobs []Job, n int) [][]int {
	order := make([]int, len(jobs))
	lengths := make([]time.Duration, len(jobs))
	for i := range jobs {
		order[i], lengths[i] = i, expectedLength(jobs[i])
	}
	sort.SliceStable(order, func(a, b int) bool { return lengths[order[a]] < lengths[order[b]] })
	var out [][]int
	for len(order) > 0 {
		k := min(n, len(order))
		out = append(out, order[:k])
		order = order[k:]
	}
	return out
}

// Forbidden says whether o shows what its expectation does not allow: a
// verdict worse than expected, or a kind of finding its lock's claims do
// not permit. A lock can be unsafe where it is expected to be (setnx-del
// in del-race-random): that is no finding.
func (o *Outcome) Forbidden() bool {
	if o.AsExpected() || o.Expected == "" {
		return false
	}
	worse := o.Result.Verdict != o.Expected && slices.Contains([]string{checker.Unsafe, checker.Deadlock}, o.Result.Verdict)
	return worse || len(o.Result.Unpermitted()) > 0
}

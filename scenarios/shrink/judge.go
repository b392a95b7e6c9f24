package shrink

import (
	"context"
	"fmt"
	"sync"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// seedsOf are the seeds of the n-th step (0: the original): K to judge it
// on, then K spares. Every candidate runs on seeds of its own, never those
// another was judged on: on shared seeds a random spec's faults fall the
// same way for every candidate, and the search would fit the spec to those
// few schedules (a minimal spec that fails on its three seeds and on few
// others).
func (s *search) seedsOf(n int) (judge, spare []uint64) {
	k := s.opts.Seeds
	all := make([]uint64, 2*k)
	for i := range all {
		all[i] = s.base + uint64(n*2*k+i)
	}
	return all[:k], all[k:]
}

// freshSeeds are count seeds no trial ran on, and as many spares, after
// those of the current step; the steps they span are taken, so no later
// trial runs on them either.
func (s *search) freshSeeds(count int) (judge, spare []uint64) {
	k := s.opts.Seeds
	first := s.base + uint64(s.steps*2*k)
	all := make([]uint64, 2*count)
	for i := range all {
		all[i] = first + uint64(i)
	}
	s.steps += (2*count+2*k-1)/(2*k) - 1
	return all[:count], all[count:]
}

// run is one run of a trial.
type run struct {
	seed     uint64
	verdict  string
	late     bool // the verdict class, but its first violation too late
	unjudged bool // inconclusive for the harness's reasons, not the spec's
	history  int
	attempts int // acquire attempts (cycles started)
	canceled bool
	// other: the verdict class, but not the failure the schedule was
	// built from (search.same): judged, not counted as failing.
	other bool
}

// unjudged says whether o is inconclusive for a reason another seed may
// not share: the harness's own stalls inside the overlapping holds or the
// starvation, the checker out of time. A run that did not exercise what
// it should (a gap: its failpoints never fired, no acquire at all) or
// recorded a damaged history is inconclusive because of the spec itself:
// every seed would say the same, so it counts as a run that did not fail.
func unjudged(o *scenarios.Outcome) bool {
	r := o.Result
	return r.Verdict == checker.Inconclusive && len(r.Gaps) == 0 && r.Attempts > 0 && r.Malformed == 0
}

// trial is a candidate's runs and the runs that could not be carried out;
// wits are the first of its runs that gave the verdict class in time with
// a witness, kept (history and all) when the search builds schedules.
type trial struct {
	runs []run
	errs []error
	wits []witnessRun
	// quota is how many seeds the trial was to judge and how many of
	// them had to fail.
	quota quota
}

// quota is a trial's seeds (k) and how many of them must fail (need).
type quota struct{ k, need int }

// witnessRun is one failing run a schedule can be built from.
type witnessRun struct {
	seed    uint64
	history history.History
	witness *checker.Witness
	// within: the earlier holder's lease had not run out when the overlap
	// began (withinLease).
	within bool
	// removal is how the earlier holder's key changed before the later
	// one acquired (removal).
	removal string
	// overruns are the holds that outlasted their lease up to the
	// overlap (overruns).
	overruns int
}

// overruns counts the holds of o's history that began before its witness
// overlap and outlasted the lock's TTL (as the run scaled it) before they
// ended or the overlap began. In a spec that pauses nobody, such a hold is
// the machine holding a client up: a failure that needed one is the
// lease's, which every lock with a TTL shares, not the lock's own race.
func overruns(o *scenarios.Outcome) int {
	w := o.Result.Witness
	if w == nil || o.Spec == nil || o.Spec.Lock.TTL <= 0 {
		return 0
	}
	ttl := int64(o.Spec.Lock.TTL)
	if o.TimeScale.Scaled() {
		ttl = int64(float64(ttl) * o.TimeScale.Factor)
	}
	from := map[int]int64{} // process → its open hold's start
	n := 0
	for _, op := range o.History {
		if op.Time > w.FromNs {
			break
		}
		switch {
		case op.F == history.FAcquire && op.Type == history.Ok:
			from[op.Process] = op.Time
		case op.F == history.FRelease && op.Type == history.Invoke, op.F == history.FCrash, op.F == history.FAbandon:
			if t, ok := from[op.Process]; ok {
				if op.Time-t > ttl {
					n++
				}
				delete(from, op.Process)
			}
		}
	}
	for _, t := range from {
		if w.FromNs-t > ttl {
			n++
		}
	}
	return n
}

// removal says how the key changed between the earlier witness holder's
// acquire and the later one's, by the server's last key event in between
// (the later holder's own write aside) and what the clients had in flight
// then: "del/acquire" (a waiter deleted it), "del/release" (a release
// removed it), "expired/-", "set/acquire" (overwritten), "none". Two
// overlaps that differ in it are two bugs: a schedule that makes one from
// the other's history has slipped.
func removal(h history.History, w *checker.Witness) string {
	if w == nil {
		return "none"
	}
	e, l := w.A, w.B
	if l.From < e.From {
		e, l = l, e
	}
	var ev *history.Op
	for i, o := range h {
		if o.F == history.FServer && o.Key == w.Key && o.Time > e.From && o.Time < l.From && !(o.Owner != "" && o.Owner == l.Token) {
			ev = &h[i]
		}
	}
	if ev == nil {
		return "none"
	}
	open := map[int]string{} // process → its operation in flight
	for _, o := range h {
		if o.Time > ev.Time {
			break
		}
		if o.F != history.FAcquire && o.F != history.FRelease {
			continue
		}
		if o.Type == history.Invoke {
			open[o.Process] = o.F
		} else {
			delete(open, o.Process)
		}
	}
	what := "-"
	for _, f := range open {
		if f == history.FRelease {
			what = f
			break
		}
		what = f
	}
	return ev.Value + "/" + what
}

// withinLease says whether o's witness overlap began while the earlier
// holder was still within its lease (the lock's TTL, as the run scaled
// it, since its acquire returned): a race between live holders, where a
// schedule must not let the holder's lease run out. A holder that stayed
// past its TTL (a pause, a slow critical section) is another failure, of
// the lease; without a TTL there is no lease to run out, and every
// overlap is within it.
func withinLease(o *scenarios.Outcome) bool {
	w := o.Result.Witness
	if w == nil || o.Spec == nil || o.Spec.Lock.TTL <= 0 {
		return true
	}
	ttl := float64(o.Spec.Lock.TTL)
	if o.TimeScale.Scaled() {
		ttl *= o.TimeScale.Factor
	}
	return float64(w.FromNs-min(w.A.From, w.B.From)) < ttl
}

// maxWitnesses bounds the failing runs a trial keeps for schedules.
const maxWitnesses = 8

// tally is what a trial says about the verdict class: runs that gave it in
// time, runs judged (not inconclusive, not cancelled), inconclusive and
// late ones, and the history length and acquire attempts of the first (by
// seed) that gave it (-1: none).
type tally struct {
	failed, judged, inconclusive, late, history, attempts int
}

func (t trial) tally(verdict string) tally {
	c := tally{history: -1}
	for _, r := range t.runs {
		switch {
		case r.canceled:
		case r.unjudged:
			c.inconclusive++
		case r.verdict == verdict && r.other:
			c.judged++
		case r.verdict == verdict && r.late:
			c.judged++
			c.late++
		case r.verdict == verdict:
			c.judged++
			c.failed++
			if c.history < 0 {
				c.history, c.attempts = r.history, r.attempts
			}
		default:
			c.judged++
		}
	}
	return c
}

// seeds are the seeds of the runs carried out.
func (t trial) seeds() []uint64 { return carried(t, func(r run) uint64 { return r.seed }) }

// verdicts are the verdicts of the runs carried out, by seed.
func (t trial) verdicts() []string { return carried(t, func(r run) string { return r.verdict }) }

// carried is what field reads of each run carried out (not canceled).
func carried[T any](t trial, field func(run) T) []T {
	var out []T
	for _, r := range t.runs {
		if !r.canceled {
			out = append(out, field(r))
		}
	}
	return out
}

// headroom is the share of a run's duration within which its first
// violation must begin to count. A violation past the duration is found
// while the clients finish their last cycle (the runner lets them, within
// a grace): how that drain goes is not the schedule's, so a spec cut
// shorter than its witness would fail or not by chance. A violation in
// the last quarter would be lost to the first machine slower than this
// one. Shrinking the duration thus stops with the witness well inside it.
const headroom = 0.75

// late says whether o's first violation began too late in spec's run to
// count as a reproduction.
func late(o *scenarios.Outcome, spec *spec.Spec) bool {
	at := o.Result.FirstViolationNs
	return at >= 0 && float64(at) > headroom*float64(spec.Duration)
}

// judge runs spec on seeds, at most opts.Parallel at a time. A run the
// harness could not judge (unjudged) says nothing about the spec, so it is
// replaced by a run on the next spare seed while spares last. With stopEarly and a verdict class to keep, the
// runs stop as soon as the required share can no longer be reached (the
// rest are cancelled, not counted).
func (s *search) judge(ctx context.Context, spec *spec.Spec, seeds, spare []uint64, q quota, stopEarly bool) trial {
	t := trial{quota: q}
	for len(seeds) > 0 && ctx.Err() == nil {
		done := len(t.runs)
		s.round(ctx, spec, seeds, &t, stopEarly)
		redo := 0
		for _, r := range t.runs[done:] {
			if !r.canceled && r.unjudged {
				redo++
			}
		}
		redo = min(redo, len(spare))
		seeds, spare = spare[:redo], spare[redo:]
	}
	return t
}

// round runs one batch of a trial's seeds and appends their runs.
func (s *search) round(ctx context.Context, spec *spec.Spec, seeds []uint64, t *trial, stopEarly bool) {
	sub, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make([]scenarios.Job, len(seeds))
	runs := make([]run, len(seeds))
	for i, seed := range seeds {
		jobs[i] = scenarios.Job{Spec: spec, Config: s.config(seed)}
		runs[i] = run{seed: seed, canceled: true}
	}
	var mu sync.Mutex
	scenarios.RunMany(sub, jobs, s.opts.Parallel, nil, func(i int, o *scenarios.Outcome, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil && sub.Err() != nil:
			return // cancelled: not a run
		case err != nil:
			t.errs = append(t.errs, fmt.Errorf("seed %d: %w", seeds[i], err))
		default:
			runs[i] = run{seed: seeds[i], verdict: o.Result.Verdict, late: late(o, spec), unjudged: unjudged(o), history: len(o.History), attempts: o.Result.Attempts}
			runs[i].other = s.same != nil && runs[i].verdict == s.verdict && !s.same(o)
			if s.recordSteps && runs[i].verdict == s.verdict && !runs[i].late && o.Result.Witness != nil && len(t.wits) < maxWitnesses {
				t.wits = append(t.wits, witnessRun{seeds[i], o.History, o.Result.Witness, withinLease(o), removal(o.History, o.Result.Witness), overruns(o)})
			}
		}
		if !stopEarly || s.verdict == "" {
			return
		}
		c := (trial{runs: append(append([]run(nil), t.runs...), runs...)}).tally(s.verdict)
		if lost := c.judged - c.failed + len(t.errs); t.quota.k-lost < t.quota.need {
			cancel()
		}
	})
	t.runs = append(t.runs, runs...)
}

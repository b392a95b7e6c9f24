package shrink

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// Keeps are the sets of clients a schedule of w may replay, fewest first:
// the witness's two holders; with them the client that held the key last
// before them (whose crash or pause the race may have followed), or the
// last that crashed holding it (whose expired lock they may have read); or those
// that passed a step of the lock between the two acquires (a DEL that
// removed the first holder's key); or both. Which one a failure needs is
// for the runs to say, not for a rule per lock.
func Keeps(h history.History, w *checker.Witness) [][]int {
	pair := []int{w.A.Client, w.B.Client}
	first, second := min(w.A.From, w.B.From), max(w.A.From, w.B.From)
	var last, crashed *checker.Hold
	for _, hd := range checker.Holds(h) {
		if hd.Key != w.Key || hd.From >= first || slices.Contains(pair, hd.Client) {
			continue
		}
		if last == nil || hd.From > last.From {
			last = &hd
		}
		if hd.End == "crash" && (crashed == nil || hd.From > crashed.From) {
			crashed = &hd
		}
	}
	var prev, dead []int
	if last != nil {
		prev = []int{last.Client}
	}
	if crashed != nil && crashed != last && crashed.Client != last.Client {
		dead = []int{crashed.Client}
	}
	all := stepsByClient(h)
	from := raceFrom(all, w)
	var between []int
	for c, steps := range all {
		if !slices.Contains(pair, c) && !slices.Contains(prev, c) && !slices.Contains(dead, c) && onceStepIn(steps, from, second) {
			between = append(between, c)
		}
	}
	slices.Sort(between)
	var out [][]int
	extras := [][]int{nil, prev, dead}
	// One of those that acted between may be the one that mattered (a
	// DEL that removed the first holder's key); try each, alone and with
	// the holder before, then all of them.
	for _, x := range between {
		extras = append(extras, []int{x})
	}
	for _, p := range [][]int{prev, dead} {
		for _, x := range between {
			if len(p) > 0 {
				extras = append(extras, append(slices.Clone(p), x))
			}
		}
	}
	extras = append(extras, between, append(slices.Clone(prev), between...), append(slices.Clone(dead), between...))
	for _, extra := range extras {
		k := append(slices.Clone(extra), pair...)
		if len(k) <= maxScheduled && !slices.ContainsFunc(out, func(o []int) bool { return slices.Equal(o, k) }) {
			out = append(out, k)
		}
	}
	return out
}

// maxRuns bounds the failing runs schedules are built from.
const maxRuns = 24

// maxScheduled bounds the clients a schedule replays: a race that needs
// more is left random.
const maxScheduled = 6

// schedule replaces the minimal random spec (random, the result of the
// random search) by a schedule built from its failing confirmation runs,
// then shrinks and confirms that. It returns nil when no schedule built
// from those runs gave the verdict class on every one of its seeds, or the
// schedule found did not reproduce on fresh seeds at the share: the
// random result stands (Result.ScheduleNote says why).
func (s *search) schedule(ctx context.Context, random *Result) (*Result, string, error) {
	if len(s.wits) == 0 {
		return nil, "no failing run of the minimal spec named a witness to build a schedule from", nil
	}
	base := *random.Minimal
	base.Name = s.orig.Name
	tried := 0
	// Finding a schedule that reproduces gets half the budget; shrinking
	// it, the whole budget again.
	find, cancel := context.WithTimeout(ctx, s.opts.Budget/2)
	defer cancel()
	// Shrinking and confirming schedules share one deadline: a schedule
	// that passed its K seeds by the seeds' luck and fails its fresh ones
	// is rejected like any candidate, and the next is tried, within the
	// same bound as one shrink.
	shrinkBy := time.Now().Add(s.opts.Budget * 3 / 2)
	rejected := ""
	wits, runs := liveFirst(s.wits), len(s.wits)
	for len(wits) > 0 {
		wr := wits[0]
		wits = wits[1:]
		if len(wits) == 0 && runs < maxRuns {
			// More failing runs of the random spec, to build more
			// schedules from: their races differ, and a simpler one may
			// be among them.
			s.steps++
			t, _ := s.try(find, s.steps, random.Minimal, false)
			wits, runs = liveFirst(t.wits), runs+len(t.wits)
		}
		// A run counts only if it fails as this one did: an overlap of a
		// holder within its lease must not become one past it (a gate
		// holding a client in its critical section until its lease ran
		// out is a pause the history did not have), and the first
		// holder's key must change the same way (removal).
		within, how := wr.within, wr.removal
		s.same = func(o *scenarios.Outcome) bool {
			return (!within || withinLease(o)) && removal(o.History, o.Result.Witness) == how
		}
		for _, keep := range Keeps(wr.history, wr.witness) {
			cand := s.candidate(&base, wr, keep)
			if cand == nil {
				continue
			}
			s.steps++
			tried++
			t, elapsed := s.try(find, s.steps, cand, true)
			if err := ctx.Err(); err != nil {
				return nil, "", err
			}
			if find.Err() != nil {
				return nil, fmt.Sprintf("half the budget (%v) ran out after %d schedules built from %d failing runs%s", s.opts.Budget/2, tried, runs, rejected), nil
			}
			s.res.Candidates++
			change := fmt.Sprintf("schedule from seed %d's history: clients %v of %d, %d failpoints", wr.seed, keep, base.Clients, len(cand.Failpoints))
			c, st := s.stepOf(s.steps, change, t, elapsed)
			s.report(st)
			if st.Accepted {
				s.res.Accepted++
				s.cur = cand
				// The confirmation backs off among schedules only: the
				// random result is kept beside this one.
				s.accepted = []accepted{{cand, t.seeds(), c.history, c.attempts}}
				res, note, err := s.shrinkSchedule(ctx, random, shrinkBy)
				if err != nil || res != nil || !time.Now().Before(shrinkBy) {
					return res, note, err
				}
				rejected = "; the last accepted: " + note
				s.recordSteps = true
			}
		}
	}
	if find.Err() != nil {
		return nil, fmt.Sprintf("half the budget (%v) ran out after %d schedules built from %d failing runs%s", s.opts.Budget/2, tried, runs, rejected), nil
	}
	return nil, fmt.Sprintf("none of the %d schedules built from %d failing runs gave %s on every seed%s", tried, runs, s.verdict, rejected), nil
}

// candidate is the schedule of wr's failure replaying the clients keep,
// parsed as a candidate; nil when it cannot be built (the reason is
// reported) or was tried already.
func (s *search) candidate(base *spec.Spec, wr witnessRun, keep []int) *spec.Spec {
	sp, err := Schedule(base, wr.history, wr.witness, keep)
	if err == nil {
		sp, err = s.parse(sp)
	}
	if err != nil {
		s.report(Step{N: s.steps, Change: fmt.Sprintf("schedule from seed %d's history", wr.seed), Skipped: err.Error()})
		return nil
	}
	y := mustYAML(sp)
	if s.tried[y] {
		return nil
	}
	s.tried[y] = true
	return sp
}

// shrinkSchedule runs the search from the accepted schedule and confirms
// it on fresh seeds.
func (s *search) shrinkSchedule(ctx context.Context, random *Result, by time.Time) (*Result, string, error) {
	budget, cancel := context.WithDeadline(ctx, by)
	defer cancel()
	s.recordSteps = false
	s.run(budget)
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	res, err := s.confirm(ctx)
	if err != nil {
		return nil, "", err
	}
	if res.Confirmed < res.ConfirmNeed {
		return nil, fmt.Sprintf("the schedule gave %s on %d of %d fresh seeds judged, not on every one of %d", s.verdict, res.Confirmed, res.ConfirmJudged, res.ConfirmNeed), nil
	}
	res.BudgetSpent = res.BudgetSpent || budget.Err() != nil
	res.Random = random
	return res, "", nil
}

// onceStepIn says whether steps has, in (from, to], a step of the lock (not
// the runner's) that the client passed only once in that cycle: a step
// off its polling loop (a DEL of an expired lock, say), not one more turn.
func onceStepIn(steps []step, from, to int64) bool {
	for i, st := range steps {
		if st.t <= from || st.t > to || runnerStep(st.point) {
			continue
		}
		n := 0
		for j := i; j >= 0 && steps[j].point != spec.PointBeforeAcquire; j-- {
			if steps[j].point == st.point {
				n++
			}
		}
		for j := i + 1; j < len(steps) && steps[j].point != spec.PointBeforeAcquire; j++ {
			if steps[j].point == st.point {
				n++
			}
		}
		if n == 1 {
			return true
		}
	}
	return false
}

// liveFirst orders the failing runs to build schedules from: first those
// whose overlap began while the earlier holder was within its lease, then
// those with fewer holds that outlasted their lease before it (overruns).
// A race between live holders is the lock's own; one that needed a holder
// past its lease, in a spec that pauses nobody, is the machine holding a
// client up, and any lock with a TTL fails its schedule (del-race-random x
// setnx-del: a release of an overrun holder deleting the next one's key;
// getset failed that schedule too). The others are tried only when no run
// shows a live race (pause-past-ttl's runs all overrun).
func liveFirst(wits []witnessRun) []witnessRun {
	out := slices.Clone(wits)
	slices.SortStableFunc(out, func(a, b witnessRun) int {
		switch {
		case a.within != b.within && a.within:
			return -1
		case a.within != b.within:
			return 1
		}
		return cmp.Compare(a.overruns, b.overruns)
	})
	return out
}

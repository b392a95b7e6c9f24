// Package shrink reduces a failing scenario to a minimal one that still
// fails the same way: fewer clients, keys, nodes, faults and failpoints, a
// shorter run, narrower and later fault windows. lockstorm runs real Redis
// in real time, so no candidate is judged on one run: each is run on K
// seeds and accepted only when at least the required share of them gives
// the original's verdict class (unsafe stays unsafe, deadlock stays
// deadlock; an inconclusive run is not a failure).
//
// The search is greedy delta debugging over the spec's dimensions, to a
// fixpoint or until the time budget is spent: each dimension proposes
// smaller candidates of the current spec (remove a half, then a quarter, ...
// of the clients; halve the duration; remove a fault; ...), the first one
// that still fails replaces the current spec, and the dimension is asked
// again. A candidate is built as YAML and parsed back through the spec's own
// validation and the run's compilation, so one that does not validate is
// skipped, never run, and the minimal spec is by construction a file that
// `lockstorm run --scenario` loads.
//
// From Go (a lock given to locktest, or any registered one):
//
//	spec, _ := spec.Load("del-race")
//	res, err := shrink.Shrink(ctx, spec, scenarios.Config{Impl: "my-lock", Info: &myLockInfo}, shrink.Options{})
//	if err == nil {
//		b, _ := res.File("del-race × my-lock", "")
//		os.WriteFile("testdata/del-race-min.yaml", b, 0o644)
//	}
package shrink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// Options say how hard to look and how sure to be.
type Options struct {
	// Seeds is K, how many seeds each candidate runs on (default 3): seeds
	// Seed, Seed+1, ..., Seed+K-1, where Seed is the run's (Config.Seed, else
	// the spec's).
	Seeds int
	// Share is the share of the K seeds on which a candidate must give the
	// original's verdict class to be accepted (default 1: every seed, so
	// the minimal spec is a regression test that fails every time).
	Share float64
	// Confirm is how many fresh seeds the minimal spec is run on at the
	// end, every one of which must give the verdict class (default 20): a
	// witness reproduces each time, and a candidate accepted at the share
	// on K seeds may not. One that does not is given up for the spec
	// accepted before it.
	Confirm int
	// Parallel is how many runs of one candidate run at once (default 2:
	// each run has its own servers and proxies, and timing verdicts suffer
	// on an overloaded machine).
	Parallel int
	// Budget bounds the search's wall time (default 5 minutes); when it is
	// spent the smallest spec accepted so far is the result.
	Budget time.Duration
	// Limits validate every candidate (default spec.DefaultLimits()).
	Limits *spec.Limits
	// Verdict, when set, is the verdict class the original was seen to
	// give (a run folder's); the original is still run on the K seeds
	// first, and must give it at the required share.
	Verdict string
	// History is the length of the original's recorded history (a run
	// folder's) for the before/after figures; 0: that of the original's
	// first failing run here.
	History int
	// Progress, when set, is told every candidate as it is judged.
	Progress func(Step)
	// Log receives the runs' logs; nil discards them.
	Log *slog.Logger
	// NoSchedule keeps a random failure random: by default the minimal
	// random spec's failing runs are turned into a schedule (Schedule),
	// which is shrunk in turn, with a budget of its own, and replaces it
	// when it reproduces on fresh seeds at the share.
	NoSchedule bool
}

func (o Options) withDefaults() Options {
	if o.Seeds <= 0 {
		o.Seeds = 3
	}
	if o.Share <= 0 {
		o.Share = 1
	}
	if o.Confirm <= 0 {
		o.Confirm = 20
	}
	if o.Parallel <= 0 {
		o.Parallel = 2
	}
	if o.Budget <= 0 {
		o.Budget = 5 * time.Minute
	}
	if o.Limits == nil {
		l := spec.DefaultLimits()
		o.Limits = &l
	}
	return o
}

// need is how many of the K seeds must fail for a candidate to be accepted.
func (o Options) need() int {
	n := int(o.Share*float64(o.Seeds) + 0.999999)
	return min(max(n, 1), o.Seeds)
}

// Step is one candidate judged (or skipped).
type Step struct {
	// N numbers the candidates from 1; 0 is the original.
	N int
	// Change says what the candidate changed ("clients 3 → 2 (drop c0)").
	Change string
	// Seeds are the seeds it ran on.
	Seeds []uint64
	// Skipped, when set, is why the candidate was not run (it did not
	// validate, or it was judged before).
	Skipped string
	// Failed is how many of Ran runs judged gave the verdict class; Need
	// is how many had to. Inconclusive is how many runs the harness could
	// not judge (its own stalls, the checker out of time): not counted,
	// each replaced by a run on a spare seed while spares lasted. A run
	// inconclusive because of the spec (what it should exercise never
	// happened) is judged: it did not fail.
	Failed, Ran, Need, Inconclusive int
	// Late is how many runs gave the verdict class only past the share of
	// the duration a witness must lie within (headroom): not counted.
	Late int
	// Accepted says the candidate replaced the current spec.
	Accepted bool
	// Elapsed is the candidate's wall time.
	Elapsed time.Duration
	// Errors are runs that could not be carried out (set-up failures).
	Errors []error
}

func (s Step) String() string {
	if s.Skipped != "" {
		return fmt.Sprintf("#%d %s: skipped (%s)", s.N, s.Change, s.Skipped)
	}
	mark := "rejected"
	if s.Accepted {
		mark = "accepted"
	}
	line := fmt.Sprintf("#%d %s: failed %d of %d on seeds %s (need %d): %s, %.1f s", s.N, s.Change, s.Failed, s.Ran, seedList(s.Seeds), s.Need, mark, s.Elapsed.Seconds())
	if s.Inconclusive > 0 {
		line += fmt.Sprintf("; %d not judged by the harness (its stalls), not counted", s.Inconclusive)
	}
	if s.Late > 0 {
		line += fmt.Sprintf("; %d failed too late in the run to count", s.Late)
	}
	if len(s.Errors) > 0 {
		line += fmt.Sprintf("; %d run(s) could not be carried out: %v", len(s.Errors), s.Errors[0])
	}
	return line
}

// Result is what a shrink found.
type Result struct {
	// Impl is the lock as the runs named it; Verdict the class kept.
	Impl, Verdict string
	// Original and Minimal are the specs before and after; Minimal loads
	// with spec.Parse (File writes it with its header).
	Original, Minimal *spec.Spec
	// Before and After are their figures (After's history from the
	// minimal spec's confirmation runs).
	Before, After Figures
	// Seed is the original's seed, the first of its K seeds; every
	// candidate ran on K seeds of its own after them.
	Seed uint64
	// Seeds are the seeds the minimal spec was accepted on; Confirm the
	// fresh seeds it was run on at the end, and Confirmed how many of them
	// gave the verdict class in time; ConfirmNeed is how many had to (all:
	// Options.Confirm). Confirmed below ConfirmNeed means not even the
	// original reproduced on every one: the failure is rarer than a
	// witness needs.
	Seeds, Confirm []uint64
	Confirmed      int
	ConfirmNeed    int
	// ConfirmJudged is how many of the Confirm runs were judged (the
	// others the harness could not judge: its own stalls).
	ConfirmJudged int
	// Share is the required share of Seeds; Need its count.
	Share float64
	Need  int
	// Candidates judged (run), Accepted among them, Skipped without a run.
	Candidates, Accepted, Skipped int
	// BudgetSpent says the search stopped at its budget, not at a fixpoint.
	BudgetSpent bool
	// Wall is the whole shrink's wall time.
	Wall time.Duration
	// Random, when the minimal spec is a schedule built from a random
	// failure, is the random search's own result; ScheduleNote, when a
	// random failure did not end in a schedule, says why.
	Random       *Result
	ScheduleNote string
	// Nameable says the minimal spec names the lock under impls (a
	// registered lock or one the spec was loaded for): `lockstorm run
	// --scenario FILE` runs it without --impl or --exec.
	Nameable bool
}

// NotFailing is the error of a shrink whose input does not fail (safe or
// inconclusive), or fails on none of its K seeds: there is nothing to
// shrink.
var NotFailing = errors.New("nothing to shrink")

// Shrink reduces spec, run as cfg says, to a minimal spec that still fails
// with the same verdict class on at least opts.Share of opts.Seeds seeds.
// The original is run first on the K seeds; one that fails on none of them
// is refused with an error wrapping NotFailing. The minimal spec
// found is run again on opts.Confirm fresh seeds and given up for the spec
// accepted before it while it does not fail on every one. A returned error is
// otherwise a setup failure or the context's.
func Shrink(ctx context.Context, spec *spec.Spec, cfg scenarios.Config, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	start := time.Now()
	s, err := newSearch(spec, cfg, opts)
	if err != nil {
		return nil, err
	}
	s.recordSteps = !opts.NoSchedule && s.orig.Mode == "random"
	if err := s.establish(ctx); err != nil {
		return nil, err
	}
	budget, cancel := context.WithDeadline(ctx, start.Add(opts.Budget))
	defer cancel()
	s.run(budget)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := s.confirm(ctx)
	if err != nil {
		return nil, err
	}
	res.BudgetSpent = budget.Err() != nil
	if s.recordSteps {
		res.Wall = time.Since(start)
		sched, note, err := s.schedule(ctx, res)
		if err != nil {
			return nil, err
		}
		if sched != nil {
			res = sched
		}
		res.ScheduleNote = note
	}
	res.Wall = time.Since(start)
	return res, nil
}

// failing says whether a verdict is a failure a shrink keeps.
func failing(v string) bool { return v == checker.Unsafe || v == checker.Deadlock }

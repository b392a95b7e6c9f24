package shrink

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
)

// search is one shrink in progress: the current (smallest accepted) spec
// and what every candidate is judged against.
type search struct {
	cfg      scenarios.Config
	opts     Options
	name     string          // the lock as the runs name it
	locks    []lockimpl.Info // given to the parser: a lock the spec names
	nameable bool
	verdict  string
	base     uint64   // the original's seed
	seeds    []uint64 // the original's K seeds
	orig     *scenarios.Spec
	cur      *scenarios.Spec // the smallest spec accepted so far
	// accepted are the specs accepted so far, the original first, each
	// with the history length of its first failing run.
	accepted []accepted
	tried    map[string]bool // candidates' YAML, judged or skipped
	steps    int
	res      Result
	origHist int // entries of the original's history
}

type accepted struct {
	spec    *scenarios.Spec
	seeds   []uint64
	history int
}

// seedsOf are the K seeds of the n-th step (0: the original). Every
// candidate runs on seeds of its own, never those another was judged on:
// on shared seeds a random spec's faults fall the same way for every
// candidate, and the search would fit the spec to those few schedules
// (a minimal spec that fails on its three seeds and on few others).
func (s *search) seedsOf(n int) []uint64 {
	out := make([]uint64, s.opts.Seeds)
	for k := range out {
		out[k] = s.base + uint64(n*s.opts.Seeds+k)
	}
	return out
}

func newSearch(spec *scenarios.Spec, cfg scenarios.Config, opts Options) (*search, error) {
	s := &search{cfg: cfg, opts: opts, name: cfg.Impl, tried: map[string]bool{}}
	if s.name == "" && cfg.Info != nil {
		s.name = cfg.Info.Name
	}
	if s.name == "" {
		return nil, errors.New("shrink: no lock: set Config.Impl or Config.Info")
	}
	s.nameable = cfg.Info == nil || spec.Knows(cfg.Info.Name)
	if cfg.Info != nil && spec.Knows(cfg.Info.Name) {
		s.locks = []lockimpl.Info{*cfg.Info}
	}
	base := cfg.Seed
	if base == 0 {
		base = max(spec.Seed, 1)
	}
	s.base = base
	s.seeds = s.seedsOf(0)
	narrowed, err := s.narrow(spec)
	if err != nil {
		return nil, err
	}
	s.orig, s.cur = narrowed, narrowed
	s.tried[mustYAML(narrowed)] = true
	return s, nil
}

// narrow is spec for the one lock on trial: its impls, expected entry and
// variant only (the others' topologies must not stop a candidate from
// validating).
func (s *search) narrow(spec *scenarios.Spec) (*scenarios.Spec, error) {
	c, err := s.clone(spec)
	if err != nil {
		return nil, fmt.Errorf("shrink: the original spec does not round-trip: %w", err)
	}
	c.Impls, c.Expected, c.Variants = nil, nil, nil
	if s.nameable {
		c.Impls = []string{s.name}
		if v, ok := spec.Expected[s.name]; ok {
			c.Expected = map[string]string{s.name: v}
		}
		if v, ok := spec.Variants[s.name]; ok {
			c.Variants = map[string]scenarios.Variant{s.name: v}
		}
	}
	return s.parse(c)
}

// clone is a deep copy of spec, through its YAML.
func (s *search) clone(spec *scenarios.Spec) (*scenarios.Spec, error) { return s.parse(spec) }

// parse writes spec as YAML and reads it back through the spec's own
// validation: the one gate every candidate passes before it may run.
func (s *search) parse(spec *scenarios.Spec) (*scenarios.Spec, error) {
	b, err := spec.YAML()
	if err != nil {
		return nil, err
	}
	return scenarios.ParseFor(spec.Name+".yaml", b, *s.opts.Limits, s.locks...)
}

func mustYAML(spec *scenarios.Spec) string {
	b, err := spec.YAML()
	if err != nil {
		return ""
	}
	return string(b)
}

// config is the run of spec's lock on one seed.
func (s *search) config(seed uint64) scenarios.Config {
	c := s.cfg
	c.Seed = seed
	c.Progress = nil
	c.Log = s.opts.Log
	if s.nameable {
		c.Impl = s.name
	}
	return c
}

// trial is a candidate's runs: by seed, the verdict ("" for a run not
// carried out or cancelled), whether its first violation came too late
// to count, and the history's length; the runs that could not be carried
// out.
type trial struct {
	verdicts []string
	late     []bool
	history  []int
	errs     []error
}

// count is how many runs gave verdict in time, how many completed, and the
// history length of the first (by seed) that did (-1: none).
func (t trial) count(verdict string) (failed, ran, history int) {
	history = -1
	for i, v := range t.verdicts {
		if v == "" {
			continue
		}
		ran++
		if v == verdict && !t.late[i] {
			failed++
			if history < 0 {
				history = t.history[i]
			}
		}
	}
	return failed, ran, history
}

// lateCount is how many runs gave verdict too late to count.
func (t trial) lateCount(verdict string) int {
	n := 0
	for i, v := range t.verdicts {
		if v == verdict && t.late[i] {
			n++
		}
	}
	return n
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
func late(o *scenarios.Outcome, spec *scenarios.Spec) bool {
	at := o.Result.FirstViolationNs
	return at >= 0 && float64(at) > headroom*float64(spec.Duration)
}

// judge runs spec on seeds, at most opts.Parallel at a time. With
// stopEarly and a verdict class to keep, it stops as soon as the required
// share can no longer be reached (the remaining runs are cancelled, not
// counted).
func (s *search) judge(ctx context.Context, spec *scenarios.Spec, seeds []uint64, stopEarly bool) trial {
	sub, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make([]scenarios.Job, len(seeds))
	for i, seed := range seeds {
		jobs[i] = scenarios.Job{Spec: spec, Config: s.config(seed)}
	}
	var mu sync.Mutex
	t := trial{verdicts: make([]string, len(seeds)), late: make([]bool, len(seeds)), history: make([]int, len(seeds))}
	lost := 0 // runs that did not give the verdict class
	need := min(s.opts.need(), len(seeds))
	scenarios.RunMany(sub, jobs, s.opts.Parallel, nil, func(i int, o *scenarios.Outcome, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil && sub.Err() != nil:
			return // cancelled: not a run
		case err != nil:
			t.errs = append(t.errs, fmt.Errorf("seed %d: %w", seeds[i], err))
			lost++
		default:
			t.verdicts[i], t.late[i], t.history[i] = o.Result.Verdict, late(o, spec), len(o.History)
			if o.Result.Verdict != s.verdict || t.late[i] {
				lost++
			}
		}
		if stopEarly && s.verdict != "" && len(seeds)-lost < need {
			cancel()
		}
	})
	return t
}

// establish runs the original on the K seeds: it must fail, with the
// verdict class given (a run folder's) or the one it shows, on at least
// the required share of them.
func (s *search) establish(ctx context.Context) error {
	s.verdict = s.opts.Verdict
	if s.verdict != "" && !failing(s.verdict) {
		return fmt.Errorf("%w: %s × %s was %s (only an unsafe or deadlock run can be shrunk)", NotFailing, s.orig.Name, s.name, s.verdict)
	}
	start := time.Now()
	t := s.judge(ctx, s.orig, s.seeds, true)
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(t.errs) > 0 {
		return fmt.Errorf("shrink: the original could not be run: %w", errors.Join(t.errs...))
	}
	if s.verdict == "" {
		if s.verdict = t.commonFailing(); s.verdict == "" {
			return fmt.Errorf("%w: %s × %s gave %s on seeds %s (only an unsafe or deadlock run can be shrunk)", NotFailing, s.orig.Name, s.name, strings.Join(t.verdicts, ", "), seedList(s.seeds))
		}
	}
	failed, ran, history := t.count(s.verdict)
	need := s.opts.need()
	s.report(Step{N: 0, Change: "the original", Seeds: s.seeds, Failed: failed, Ran: ran, Need: need, Late: t.lateCount(s.verdict), Accepted: failed >= need, Elapsed: time.Since(start)})
	if failed < need {
		return fmt.Errorf("%w: %s × %s gave %s on %d of %d seeds (%s), below the required %d: raise --seeds or lower --share", NotFailing, s.orig.Name, s.name, s.verdict, failed, len(s.seeds), seedList(s.seeds), need)
	}
	s.accepted = append(s.accepted, accepted{s.orig, s.seeds, history})
	s.origHist = history
	if s.opts.History > 0 {
		s.origHist = s.opts.History
	}
	return nil
}

// commonFailing is the failing verdict class seen most often in time (""
// if none).
func (t trial) commonFailing() string {
	count := map[string]int{}
	best := ""
	for i, v := range t.verdicts {
		if !failing(v) || t.late[i] {
			continue
		}
		count[v]++
		if best == "" || count[v] > count[best] {
			best = v
		}
	}
	return best
}

// run is the greedy search: every dimension in turn, each asked again
// after it shrank the spec, the whole round again until none does (or the
// budget is spent).
func (s *search) run(ctx context.Context) {
	for progress := true; progress && ctx.Err() == nil; {
		progress = false
		for _, dim := range dimensions {
			// A change rejected while the dimension shrinks the spec is not
			// tried again in the same pass (the next round tries it on
			// whatever the other dimensions made of the spec).
			rejected := map[string]bool{}
			for ctx.Err() == nil && s.tryDimension(ctx, dim, rejected) {
				progress = true
			}
		}
	}
}

// tryDimension judges dim's candidates of the current spec in order and
// keeps the first that fails as the original did.
func (s *search) tryDimension(ctx context.Context, dim dimension, rejected map[string]bool) bool {
	for _, ch := range dim(s.cur) {
		if ctx.Err() != nil {
			return false
		}
		if rejected[ch.desc] {
			continue
		}
		cand, skip := s.build(ch)
		if cand == nil {
			if skip != "" {
				s.res.Skipped++
				s.steps++
				s.report(Step{N: s.steps, Change: ch.desc, Skipped: skip})
			}
			continue
		}
		s.steps++
		seeds := s.seedsOf(s.steps)
		start := time.Now()
		t := s.judge(ctx, cand, seeds, true)
		if ctx.Err() != nil {
			return false // the budget ran out mid-candidate: not judged
		}
		s.res.Candidates++
		failed, ran, history := t.count(s.verdict)
		st := Step{N: s.steps, Change: ch.desc, Seeds: seeds, Failed: failed, Ran: ran, Need: s.opts.need(), Late: t.lateCount(s.verdict), Elapsed: time.Since(start), Errors: t.errs}
		st.Accepted = failed >= st.Need
		s.report(st)
		rejected[ch.desc] = !st.Accepted
		if st.Accepted {
			s.cur = cand
			s.accepted = append(s.accepted, accepted{cand, seeds, history})
			s.res.Accepted++
			return true
		}
	}
	return false
}

// build applies a change to a copy of the current spec and validates it:
// nil and why when it does not apply ("" : silently), does not validate
// or compile, or was judged before.
func (s *search) build(ch change) (*scenarios.Spec, string) {
	c, err := s.clone(s.cur)
	if err != nil || !ch.apply(c) {
		return nil, ""
	}
	key := mustYAML(c)
	if s.tried[key] {
		return nil, ""
	}
	s.tried[key] = true
	cand, err := s.parse(c)
	if err != nil {
		return nil, "invalid: " + err.Error()
	}
	if _, err := scenarios.Compile(cand, s.config(s.seeds[0])); err != nil {
		return nil, "does not compile: " + err.Error()
	}
	return cand, ""
}

// confirm runs the minimal spec on K fresh seeds: the search chose it
// because it failed on its K seeds, so its rate there flatters it (a
// candidate that fails on three seeds in four passes three seeds four
// times in ten, and a search tries many). One that fails below the share
// on the fresh seeds is given up for the spec accepted before it, down to
// the original, so the minimal spec is one that reproduced twice.
func (s *search) confirm(ctx context.Context) (*Result, error) {
	r := s.res
	r.Impl, r.Verdict, r.Original, r.Nameable, r.Seed = s.name, s.verdict, s.orig, s.nameable, s.base
	r.Share, r.Need = s.opts.Share, s.opts.need()
	var after accepted
	for i := len(s.accepted) - 1; i >= 0; i-- {
		minimal, err := s.clone(s.accepted[i].spec)
		if err != nil {
			return nil, err
		}
		minimal.Name = strings.TrimSuffix(s.orig.Name, "-min") + "-min"
		minimal.Description = "shrunk by lockstorm shrink from " + s.orig.Name + ": " + s.orig.Description
		s.steps++
		seeds := s.seedsOf(s.steps)
		start := time.Now()
		t := s.judge(ctx, minimal, seeds, false)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		failed, ran, history := t.count(s.verdict)
		what := "the minimal spec on fresh seeds"
		if i < len(s.accepted)-1 {
			what = fmt.Sprintf("backed off to the spec accepted %d before, on fresh seeds", len(s.accepted)-1-i)
		}
		s.report(Step{N: s.steps, Change: what, Seeds: seeds, Failed: failed, Ran: ran, Need: r.Need,
			Late: t.lateCount(s.verdict), Accepted: failed >= r.Need, Elapsed: time.Since(start), Errors: t.errs})
		after = accepted{minimal, s.accepted[i].seeds, s.accepted[i].history}
		if history >= 0 {
			after.history = history
		}
		r.Minimal, r.Seeds, r.Confirm, r.Confirmed = minimal, after.seeds, seeds, failed
		if failed >= r.Need {
			break
		}
	}
	var err error
	if r.Before, err = s.figures(s.orig, s.origHist); err != nil {
		return nil, err
	}
	if r.After, err = s.figures(after.spec, after.history); err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *search) report(st Step) {
	if s.opts.Progress != nil {
		s.opts.Progress(st)
	}
}

func seedList(seeds []uint64) string {
	out := make([]string, len(seeds))
	sorted := append([]uint64(nil), seeds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for i, x := range sorted {
		out[i] = fmt.Sprint(x)
	}
	return strings.Join(out, ", ")
}

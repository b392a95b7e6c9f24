package shrink

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
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
	base     uint64 // the original's seed
	orig     *spec.Spec
	cur      *spec.Spec // the smallest spec accepted so far
	// accepted are the specs accepted so far, the original first, each
	// with the history length and acquire attempts of its first failing
	// run.
	accepted []accepted
	tried    map[string]bool // candidates' YAML, judged or skipped
	steps    int
	res      Result
	origHist int // entries of the original's history
	// recordSteps: the runs record their clients' steps, for a schedule
	// built from the minimal random spec's failing runs (wits: those of
	// its confirmation).
	recordSteps bool
	wits        []witnessRun
	// same, when set, says whether a run that gave the verdict class failed
	// as the run a schedule was built from did (same lease condition).
	same func(*scenarios.Outcome) bool
}

type accepted struct {
	spec              *spec.Spec
	seeds             []uint64
	history, attempts int
}

func newSearch(spec *spec.Spec, cfg scenarios.Config, opts Options) (*search, error) {
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
	s.base = cmp.Or(cfg.Seed, spec.Seed, 1)
	narrowed, err := s.narrow(spec)
	if err != nil {
		return nil, err
	}
	s.orig, s.cur = narrowed, narrowed
	s.tried[mustYAML(narrowed)] = true
	return s, nil
}

// narrow is sp for the one lock on trial: its impls, expected entry and
// variant only (the others' topologies must not stop a candidate from
// validating).
func (s *search) narrow(sp *spec.Spec) (*spec.Spec, error) {
	c, err := s.clone(sp)
	if err != nil {
		return nil, fmt.Errorf("shrink: the original spec does not round-trip: %w", err)
	}
	c.Impls, c.Expected, c.Variants = nil, nil, nil
	if s.nameable {
		c.Impls = []string{s.name}
		if v, ok := sp.Expected[s.name]; ok {
			c.Expected = map[string]string{s.name: v}
		}
		if v, ok := sp.Variants[s.name]; ok {
			c.Variants = map[string]spec.Variant{s.name: v}
		}
	}
	return s.parse(c)
}

// clone is a deep copy of spec, through its YAML.
func (s *search) clone(spec *spec.Spec) (*spec.Spec, error) { return s.parse(spec) }

// parse writes sp as YAML and reads it back through the spec's own
// validation: the one gate every candidate passes before it may run.
func (s *search) parse(sp *spec.Spec) (*spec.Spec, error) {
	b, err := sp.YAML()
	if err != nil {
		return nil, err
	}
	return spec.ParseFor(sp.Name+".yaml", b, *s.opts.Limits, s.locks...)
}

func mustYAML(spec *spec.Spec) string {
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
	c.RecordSteps = s.recordSteps
	if s.nameable {
		c.Impl = s.name
	}
	return c
}

// establish runs the original on its K seeds: it must fail, with the
// verdict class given (a run folder's) or the one it shows, on at least
// one of them. Its rate is reported, not required: a smaller spec may fail
// more often than the original (fewer clients for a pause to miss), and
// whatever is accepted must reach the share on its own seeds and again on
// fresh ones (confirm), the original included.
func (s *search) establish(ctx context.Context) error {
	s.verdict = s.opts.Verdict
	if s.verdict != "" && !failing(s.verdict) {
		return fmt.Errorf("%w: %s × %s was %s (only an unsafe or deadlock run can be shrunk)", NotFailing, s.orig.Name, s.name, s.verdict)
	}
	t, elapsed := s.try(ctx, 0, s.orig, false)
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(t.errs) > 0 {
		return fmt.Errorf("shrink: the original could not be run: %w", errors.Join(t.errs...))
	}
	if s.verdict == "" {
		if s.verdict = t.commonFailing(); s.verdict == "" {
			return fmt.Errorf("%w: %s × %s gave %s on seeds %s (only an unsafe or deadlock run can be shrunk)", NotFailing, s.orig.Name, s.name, strings.Join(t.verdicts(), ", "), seedList(t.seeds()))
		}
	}
	c, st := s.stepOf(0, "the original (its rate is told, not required)", t, elapsed)
	st.Accepted = c.failed > 0
	s.report(st)
	if c.failed == 0 {
		return fmt.Errorf("%w: %s × %s did not give %s again in time on any of seeds %s (it gave %s): raise --seeds", NotFailing, s.orig.Name, s.name, s.verdict, seedList(t.seeds()), strings.Join(t.verdicts(), ", "))
	}
	s.accepted = append(s.accepted, accepted{s.orig, t.seeds(), c.history, c.attempts})
	s.origHist = cmp.Or(s.opts.History, c.history)
	return nil
}

// try runs spec as step n on the step's seeds.
func (s *search) try(ctx context.Context, n int, spec *spec.Spec, stopEarly bool) (trial, time.Duration) {
	start := time.Now()
	seeds, spare := s.seedsOf(n)
	return s.judge(ctx, spec, seeds, spare, quota{s.opts.Seeds, s.opts.need()}, stopEarly), time.Since(start)
}

// stepOf is the tally and the progress step of a trial.
func (s *search) stepOf(n int, change string, t trial, elapsed time.Duration) (tally, Step) {
	c := t.tally(s.verdict)
	need := t.quota.need
	return c, Step{N: n, Change: change, Seeds: t.seeds(), Failed: c.failed, Ran: c.judged, Inconclusive: c.inconclusive, Late: c.late,
		Need: need, Accepted: c.failed >= need, Elapsed: elapsed, Errors: t.errs}
}

// commonFailing is the failing verdict class seen most often in time (""
// if none).
func (t trial) commonFailing() string {
	count := map[string]int{}
	best := ""
	for _, r := range t.runs {
		if r.canceled || !failing(r.verdict) || r.late {
			continue
		}
		count[r.verdict]++
		if best == "" || count[r.verdict] > count[best] {
			best = r.verdict
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
	for _, ch := range dim(s.cur, s.accepted[len(s.accepted)-1].attempts) {
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
		t, elapsed := s.try(ctx, s.steps, cand, true)
		if ctx.Err() != nil {
			return false // the budget ran out mid-candidate: not judged
		}
		s.res.Candidates++
		c, st := s.stepOf(s.steps, ch.desc, t, elapsed)
		s.report(st)
		rejected[ch.desc] = !st.Accepted
		if st.Accepted {
			s.cur = cand
			s.accepted = append(s.accepted, accepted{cand, t.seeds(), c.history, c.attempts})
			s.res.Accepted++
			return true
		}
	}
	return false
}

// build applies a change to a copy of the current spec and validates it:
// nil and why when it does not apply ("" : silently), does not validate
// or compile, or was judged before.
func (s *search) build(ch change) (*spec.Spec, string) {
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
	if _, err := scenarios.Compile(cand, s.config(s.base)); err != nil {
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
	r.Share, r.Need, r.ConfirmNeed = s.opts.Share, s.opts.need(), s.opts.Confirm
	var after accepted
	for i := len(s.accepted) - 1; i >= 0; i-- {
		minimal, err := s.clone(s.accepted[i].spec)
		if err != nil {
			return nil, err
		}
		minimal.Name = strings.TrimSuffix(s.orig.Name, "-min") + "-min"
		if minimal.Mode == s.orig.Mode {
			minimal.Description = "shrunk by lockstorm shrink from " + s.orig.Name + ": " + s.orig.Description
		} else {
			minimal.Description = "shrunk by lockstorm shrink: " + minimal.Description
		}
		start := time.Now()
		s.steps++
		n := s.steps
		seeds, spare := s.freshSeeds(s.opts.Confirm)
		// Every fresh seed must fail: a witness reproduces each time, not
		// at the share the search accepts candidates with.
		t := s.judge(ctx, minimal, seeds, spare, quota{s.opts.Confirm, s.opts.Confirm}, true)
		elapsed := time.Since(start)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		what := "the minimal spec on fresh seeds"
		if i < len(s.accepted)-1 {
			what = fmt.Sprintf("backed off to the spec accepted %d before, on fresh seeds", len(s.accepted)-1-i)
		}
		c, st := s.stepOf(n, what, t, elapsed)
		s.report(st)
		after = s.accepted[i]
		after.spec = minimal
		if c.history >= 0 {
			after.history = c.history
		}
		r.Minimal, r.Seeds, r.Confirm, r.Confirmed, r.ConfirmJudged = minimal, after.seeds, t.seeds(), c.failed, c.judged
		s.wits = t.wits
		if st.Accepted {
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

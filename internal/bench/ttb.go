package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TTBConfig sets up TimeToBug.
type TTBConfig struct {
	// Seeds is how many seeds (1..Seeds) each spec × impl runs (default 10).
	Seeds int
	// Specs overrides the choice of specs (default: RandomSpecs).
	Specs []string
	// Backend for the runs (default auto).
	Backend string
	// Parallel is how many runs go at once; 0 follows the machine
	// (scenarios.RunMany: three on two CPUs, more while they have room).
	// Each run has its own servers and ports; runs mostly wait on the
	// network and on scheduled sleeps, but more than the CPUs can serve
	// skews times, which the load-following gate is there to prevent.
	Parallel int
	Progress Progress
}

// RandomSpecs picks the specs TimeToBug runs: the embedded specs whose
// names end in "-random" (the random-mode variants of the documented
// cases); when there are none, every spec with mode random, and fallback
// says so.
func RandomSpecs() (names []string, fallback bool, err error) {
	for _, n := range spec.Names() {
		if strings.HasSuffix(n, "-random") {
			names = append(names, n)
		}
	}
	if len(names) > 0 {
		return names, false, nil
	}
	for _, n := range spec.Names() {
		s, err := spec.Load(n)
		if err != nil {
			return nil, true, err
		}
		if s.Mode == "random" {
			names = append(names, n)
		}
	}
	return names, true, nil
}

// TTBStats is one spec × impl over the seeds.
type TTBStats struct {
	Spec, Impl, Expected string
	Seeds, Found         int
	// Times to first violation, from the first acquire of the run, of the
	// seeds that found one (ms).
	TimesMs []float64
	// Verdicts per seed, in seed order.
	Verdicts []string
	// RunSeconds is the seeds' runs' wall times, summed (they run in one
	// batch with every other pair's).
	RunSeconds float64
}

// TimeToBug runs each random-mode spec against BuggyImpls for seeds 1..Seeds, and reports the median and
// worst time to the first violation (checker.Result.FirstViolationNs,
// measured from the run's first acquire invoke, so backend start-up is not
// counted) and how many seeds found one. A deadlock's violation time is the
// start of its first starvation past the bound.
func TimeToBug(ctx context.Context, cfg TTBConfig) ([]Row, error) {
	if cfg.Seeds <= 0 {
		cfg.Seeds = 10
	}
	if cfg.Backend == "" {
		cfg.Backend = cluster.Auto
	}
	backend, err := cluster.Resolve(cfg.Backend)
	if err != nil {
		return nil, err
	}
	names, fallback := cfg.Specs, false
	if len(names) == 0 {
		if names, fallback, err = RandomSpecs(); err != nil {
			return nil, err
		}
	}
	var rows []Row
	if len(names) == 0 {
		return []Row{{Row: "3", Name: "ttb", Measure: "time to bug", Status: NotRun, FigureText: "-",
			Note: "no spec has mode random"}}, nil
	}
	// Every spec × impl × seed goes into one batch: batches per spec waited
	// for their slowest seed before the next spec began, which left the
	// batch's other places idle (3 seeds, 11 specs: a third of --quick).
	var pairs []TTBStats
	var jobs []scenarios.Job
	for _, name := range names {
		spec, err := spec.Load(name)
		if err != nil {
			return nil, err
		}
		for _, impl := range BuggyImpls(spec) {
			pairs = append(pairs, TTBStats{Spec: spec.Name, Impl: impl, Expected: spec.Expect(impl), Seeds: cfg.Seeds})
			for i := 0; i < cfg.Seeds; i++ {
				jobs = append(jobs, scenarios.Job{Spec: spec, Config: scenarios.Config{Impl: impl, Seed: uint64(i + 1), Backend: backend}})
			}
		}
	}
	outs, errs := scenarios.RunMany(ctx, jobs, cfg.Parallel, func(i int) {
		cfg.Progress.say("time to bug: %s × %s seed %d/%d", jobs[i].Spec.Name, jobs[i].Config.Impl, jobs[i].Config.Seed, cfg.Seeds)
	}, nil)
	for n := range pairs {
		if err := pairs[n].add(outs[n*cfg.Seeds:(n+1)*cfg.Seeds], errs[n*cfg.Seeds:(n+1)*cfg.Seeds]); err != nil {
			return nil, err
		}
		rows = append(rows, ttbRow(fmt.Sprintf("3%s", letter(n+1)), pairs[n], fallback))
	}
	return rows, nil
}

// BuggyImpls are the implementations a spec expects to be unsafe; when
// none, those it expects to deadlock; when none either, every one it lists.
func BuggyImpls(spec *spec.Spec) []string {
	for _, want := range []string{checker.Unsafe, checker.Deadlock} {
		var out []string
		for _, impl := range spec.Impls {
			if spec.Expect(impl) == want {
				out = append(out, impl)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return spec.Impls
}

// add takes the outcomes of the pair's seeds, in seed order.
func (st *TTBStats) add(outs []*scenarios.Outcome, errs []error) error {
	for i, out := range outs {
		if errs[i] != nil {
			return fmt.Errorf("%s × %s seed %d: %w", st.Spec, st.Impl, i+1, errs[i])
		}
		st.RunSeconds += out.Elapsed.Seconds()
		st.Verdicts = append(st.Verdicts, out.Result.Verdict)
		switch {
		case out.Result.FirstViolationNs >= 0:
			st.Found++
			st.TimesMs = append(st.TimesMs, float64(out.Result.FirstViolationNs-trafficStart(out.History))/1e6)
		case st.Expected == checker.Deadlock && out.Result.Verdict == checker.Deadlock:
			st.Found++ // a deadlock without a time (histories checked before it had one)
		}
	}
	return nil
}

// trafficStart is the time of the first client acquire invoke (0 if none).
func trafficStart(h history.History) int64 {
	for _, op := range h {
		if op.Client >= 0 && op.F == history.FAcquire && op.Type == history.Invoke {
			return op.Time
		}
	}
	return 0
}

func ttbRow(id string, st TTBStats, fallback bool) Row {
	r := Row{Row: id, Name: "ttb/" + st.Spec + "/" + st.Impl,
		Measure: fmt.Sprintf("time to first violation: %s × %s, %d seeds (median)", st.Spec, st.Impl, st.Seeds),
		Unit:    "ms", Extra: map[string]float64{"found": float64(st.Found), "seeds": float64(st.Seeds), "run_s": st.RunSeconds}}
	worst := 0.0
	for _, t := range st.TimesMs {
		worst = max(worst, t)
	}
	med := median(append([]float64(nil), st.TimesMs...))
	if len(st.TimesMs) > 0 {
		r.Figure, r.Reference, r.RefUnit, r.RefName = med, worst, "ms", "worst"
		r.FigureText = num(med) + " ms"
		r.RefText = "worst " + num(worst) + " ms"
		r.Extra["worst_ms"] = worst
	} else {
		r.FigureText, r.RefText = "none found", "-"
		if st.Found > 0 {
			r.FigureText = "n/a (deadlock)"
		}
	}
	r.RatioText = fmt.Sprintf("found %d/%d", st.Found, st.Seeds)
	switch st.Expected {
	case checker.Unsafe, checker.Deadlock:
		r.Goal = "every seed"
		r.judge(st.Found == st.Seeds)
	case checker.Safe:
		r.Goal = "none (expected safe)"
		r.judge(st.Found == 0)
	default:
		r.Status = Info
	}
	r.Note = fmt.Sprintf("verdicts by seed %v; %.0f s for all seeds", st.Verdicts, st.RunSeconds)
	if fallback {
		r.Note += "; no \"-random\" specs exist yet: fell back to the specs with mode random"
	}
	return r
}

package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
	execlock "github.com/lockstorm/lockstorm/lockimpl/exec"
	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/shrink"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

type shrinkFlags struct {
	impl    string
	exec    string
	seed    uint64
	opts    shrink.Options
	backend string
	out     string
	verbose bool
	// allowExec is the user's consent to start a program the spec names.
	allowExec         bool
	input             string
	shrinkOf          string // what the original is, for the file's header
	goTest, goPackage string
}

const shrinkUsage = "usage: lockstorm shrink [--impl NAME | --exec CMD] [--seeds K] [--share S] [--budget D] [--out FILE] RUN_DIR|SCENARIO"

func parseShrinkFlags(args []string) (*shrinkFlags, error) {
	f := &shrinkFlags{}
	fs := flag.NewFlagSet("shrink", flag.ContinueOnError)
	fs.StringVar(&f.impl, "impl", "", "the lock (default: the run folder's, or the scenario's only impl)")
	fs.StringVar(&f.exec, "exec", "", "a lock client program speaking lockstorm's line protocol (the run folder's lock, when it was one)")
	fs.Uint64Var(&f.seed, "seed", 0, "the first of the K seeds (default: the run folder's, or the scenario's)")
	fs.IntVar(&f.opts.Seeds, "seeds", 3, "K: every candidate runs on this many seeds")
	fs.Float64Var(&f.opts.Share, "share", 1, "accept a candidate that fails on at least this share of the K seeds (1: every one)")
	fs.IntVar(&f.opts.Parallel, "parallel", 2, "runs of one candidate at once")
	fs.DurationVar(&f.opts.Budget, "budget", 5*time.Minute, "stop searching after this long and keep the smallest spec accepted")
	fs.StringVar(&f.backend, "backend", "", "auto, redis-server or embedded (default: the run folder's, else auto)")
	fs.StringVar(&f.out, "out", "", "where to write the minimal spec (default: RUN_DIR/minimal.yaml, or SCENARIO-IMPL-min.yaml here)")
	fs.StringVar(&f.goTest, "go-test", "", "where to write the witness as a go test through locktest, for a Go lock (default: the minimal spec's path, .yaml → _test.go; \"-\": none)")
	fs.StringVar(&f.goPackage, "go-package", "witness", "the go test file's package")
	fs.BoolVar(&f.opts.NoSchedule, "no-schedule", false, "keep a random failure random (default: end in a schedule built from its failing runs' histories)")
	fs.BoolVar(&f.allowExec, "allow-exec", false, "let the client program that the scenario names (exec:) start: a spec is data")
	fs.BoolVar(&f.verbose, "v", false, "verbose logging on stderr")
	operands, err := parseArgs(fs, args, shrinkUsage)
	if err != nil {
		return nil, err
	}
	if len(operands) != 1 {
		return nil, usage(shrinkUsage)
	}
	f.input = operands[0]
	switch {
	case f.impl != "" && f.exec != "":
		return nil, usage("shrink: --impl and --exec name the lock twice: give one")
	case f.opts.Seeds < 1 || f.opts.Seeds > 20:
		return nil, usage("shrink: --seeds %d: want 1..20", f.opts.Seeds)
	case f.opts.Share <= 0 || f.opts.Share > 1:
		return nil, usage("shrink: --share %g: want a share in (0, 1]", f.opts.Share)
	case f.opts.Parallel < 1:
		return nil, usage("shrink: --parallel must be at least 1")
	case f.opts.Budget <= 0:
		return nil, usage("shrink: --budget must be positive")
	}
	if f.backend != "" {
		if _, err := cluster.Resolve(f.backend); err != nil {
			return nil, usage("shrink: --backend: %v", err)
		}
	}
	return f, nil
}

// cmdShrink reduces a failing run (a run folder, or a scenario and a lock)
// to a minimal scenario that still fails with the same verdict class on
// the K seeds, and writes it as a spec file `lockstorm run --scenario`
// loads. Exit 0 when the minimal spec also reproduced on K fresh seeds; 1
// when the input does not fail (safe, inconclusive, or failing below the
// share: nothing to shrink) or the minimal spec did not reproduce on the
// fresh seeds (it is written all the same); 2 on bad input, before
// anything runs.
// limits are the spec limits shrink loads and validates every candidate
// with: the defaults, and the user's consent to start a spec's program.
func (f *shrinkFlags) limits() spec.Limits {
	lim := spec.DefaultLimits()
	lim.AllowExec = f.allowExec
	return lim
}

func cmdShrink(ctx context.Context, args []string) error {
	f, err := parseShrinkFlags(args)
	if err != nil {
		return err
	}
	spec, cfg, err := f.load(ctx)
	if err != nil {
		return err
	}
	if err := checkOutFile("shrink: --out", f.out); err != nil {
		return err
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	f.opts.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	f.opts.Progress = func(s shrink.Step) { fmt.Fprintln(os.Stderr, "shrink:", s) }
	fmt.Fprintf(os.Stderr, "shrink: %s × %s on seeds from %d, K=%d, share %g, budget %v\n", spec.Name, cfg.Impl, cmp.Or(cfg.Seed, spec.Seed, 1), f.opts.Seeds, f.opts.Share, f.opts.Budget)
	lim := f.limits()
	f.opts.Limits = &lim
	res, err := shrink.Shrink(ctx, spec, cfg, f.opts)
	if errors.Is(err, shrink.NotFailing) {
		return &exitError{1, fmt.Errorf("shrink: %w", err)}
	}
	if err != nil {
		return &exitError{2, fmt.Errorf("shrink: %w", err)}
	}
	if err := f.write(res); err != nil {
		return err
	}
	if res.Confirmed < res.ConfirmNeed {
		return &exitError{1, fmt.Errorf("shrink: not even the original reproduced %s on every one of %d fresh seeds: the failure is too rare for a witness", res.Verdict, res.ConfirmNeed)}
	}
	return nil
}

// write writes what the shrink found (the minimal spec, the random
// search's beside a schedule, the witness test) and says so.
func (f *shrinkFlags) write(res *shrink.Result) error {
	lock := ""
	if f.exec != "" {
		lock = "--exec '" + f.exec + "'"
	}
	b, err := res.File(f.shrinkOf, lock)
	if err == nil {
		err = os.WriteFile(f.out, b, 0o644)
	}
	if err != nil {
		return &exitError{2, fmt.Errorf("shrink: the minimal spec: %w", err)}
	}
	stop := "a fixpoint"
	if res.BudgetSpent {
		stop = "the budget"
	}
	fmt.Printf("shrunk %s × %s (%s) in %.1f s, stopped at %s: %d candidates run, %d accepted, %d skipped as invalid\n",
		res.Original.Name, res.Impl, res.Verdict, res.Wall.Seconds(), stop, res.Candidates, res.Accepted, res.Skipped)
	fmt.Println(res.BeforeAfter())
	fmt.Println("reproduces", res.Rate())
	if r := res.Random; r != nil {
		// The random search's own minimal spec, beside the schedule: what
		// the schedule was built from, and its rate to compare.
		path := strings.TrimSuffix(f.out, ".yaml") + "-random.yaml"
		b, err := r.File(f.shrinkOf, lock)
		if err == nil {
			err = os.WriteFile(path, b, 0o644)
		}
		if err != nil {
			return &exitError{2, fmt.Errorf("shrink: the random minimal spec: %w", err)}
		}
		fmt.Println("random minimal spec:", path)
		fmt.Printf("as a schedule, from the random search's minimal spec (%d clients, %v, %s on %d of %d fresh seeds judged)\n",
			r.After.Clients, r.After.Duration, r.Verdict, r.Confirmed, r.ConfirmJudged)
	} else if res.ScheduleNote != "" {
		fmt.Println("no schedule:", res.ScheduleNote)
	}
	fmt.Println("minimal spec:", f.out)
	if f.exec != "" {
		fmt.Printf("replay: lockstorm run --scenario %s --exec '%s'\n", f.out, f.exec)
	} else if path := cmp.Or(f.goTest, strings.TrimSuffix(f.out, ".yaml")+"_test.go"); path != "-" {
		src, err := res.GoTest(f.goPackage, f.shrinkOf, "")
		if err == nil {
			err = os.WriteFile(path, src, 0o644)
		}
		if err != nil {
			return &exitError{2, fmt.Errorf("shrink: the witness test: %w", err)}
		}
		fmt.Println("go test:", path)
	}
	return nil
}

// load reads the input: a run folder (its scenario as run, lock, seed,
// backend, verdict and history length) or a scenario and the lock flags.
func (f *shrinkFlags) load(ctx context.Context) (*spec.Spec, scenarios.Config, error) {
	var cfg scenarios.Config
	var sp *spec.Spec
	var err error
	impl, backend := f.impl, f.backend
	if st, serr := os.Stat(f.input); serr == nil && st.IsDir() {
		if _, err := os.Stat(filepath.Join(f.input, reports.SummaryFile)); err != nil {
			return nil, cfg, usage("shrink: %s has no %s: not a run folder lockstorm run kept (--keep all or failures)", f.input, reports.SummaryFile)
		}
		sum, hist, err := reports.ReadRunDir(f.input)
		if err != nil {
			return nil, cfg, &exitError{2, fmt.Errorf("shrink: %s: %w", f.input, err)}
		}
		if sp, err = spec.LoadWith(filepath.Join(f.input, reports.ScenarioFile), f.limits()); err != nil {
			return nil, cfg, &exitError{2, fmt.Errorf("shrink: %w", err)}
		}
		row := sum.Row
		f.opts.Verdict, f.opts.History = row.Verdict, len(hist)
		cfg.Seed = row.Seed
		impl = cmp.Or(impl, row.Impl)
		backend = cmp.Or(backend, row.Backend)
		f.shrinkOf = "run folder " + f.input
		f.out = cmp.Or(f.out, filepath.Join(f.input, "minimal.yaml"))
	} else {
		if sp, err = spec.LoadWith(f.input, f.limits()); err != nil {
			return nil, cfg, &exitError{2, fmt.Errorf("shrink: %w", err)}
		}
		if impl == "" && f.exec == "" {
			if len(sp.Impls) != 1 {
				return nil, cfg, usage("shrink: scenario %s runs %d locks (%s): name one with --impl or --exec", sp.Name, len(sp.Impls), strings.Join(sp.Impls, ", "))
			}
			impl = sp.Impls[0]
		}
		f.shrinkOf = "scenario " + f.input
	}
	if f.seed != 0 {
		cfg.Seed = f.seed
	}
	if cfg.Backend, err = cluster.Resolve(cmp.Or(backend, cluster.Auto)); err != nil {
		return nil, cfg, usage("shrink: --backend: %v", err)
	}
	if why := sp.Unsupported(cfg.Backend); why != "" {
		return nil, cfg, usage("shrink: %s cannot run on the %s backend: %s", sp.Name, cfg.Backend, why)
	}
	if err := f.lock(ctx, sp, &cfg, impl); err != nil {
		return nil, cfg, err
	}
	f.out = cmp.Or(f.out, strings.ReplaceAll(sp.Name+"-"+cfg.Impl, "/", "_")+"-min.yaml")
	return sp, cfg, nil
}

// lock sets the lock on trial: a client program (--exec) is given as the
// Info it declared, so the minimal spec does not name it under impls (a
// plain `lockstorm run --scenario` would not know the name).
func (f *shrinkFlags) lock(ctx context.Context, spec *spec.Spec, cfg *scenarios.Config, impl string) error {
	if f.exec != "" {
		argv, err := execlock.Split(f.exec)
		if err != nil {
			return usage("shrink: --exec: %v", err)
		}
		info, err := execlock.Describe(ctx, argv)
		if err != nil {
			return usage("shrink: --exec: %v", err)
		}
		cfg.Impl, cfg.Info = info.Name, &info
		return nil
	}
	if _, _, err := spec.Resolve(impl); err != nil {
		return usage("shrink: --impl %s: %v (a run of a client program needs its --exec again)", impl, err)
	}
	if err := spec.CheckImpl(impl); err != nil {
		return &exitError{2, fmt.Errorf("shrink: --impl %s: %w", impl, err)}
	}
	cfg.Impl = impl
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	execlock "github.com/lockstorm/lockstorm/lockimpl/exec"
	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, strings.Split(v, ",")...); return nil }

// cmds is a repeatable flag whose values are whole command lines.
type cmds []string

func (m *cmds) String() string     { return strings.Join(*m, "; ") }
func (m *cmds) Set(v string) error { *m = append(*m, v); return nil }

type runFlags struct {
	scenarios multi
	impls     multi
	execs     cmds
	allowExec bool
	all       bool
	seed      uint64
	seeds     int
	backend   string
	json      bool
	format    string
	wide      bool
	verbose   bool
	gatedOnly bool
	out       string
	keep      string
	junit     string
	parallel  int
	onlyDiff  bool
	baseline  string
	dryRun    bool
	full      bool
	rejudge   int
	shard     string
	limits    spec.Limits
}

// rejudgeConfig maps --rejudge (0: never) to scenarios.Config.Rejudge
// (0: the default, negative: never).
func rejudgeConfig(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

func parseRunFlags(args []string) (*runFlags, error) {
	f := &runFlags{}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.Var(&f.scenarios, "scenario", "scenario name or YAML file (repeatable)")
	fs.Var(&f.impls, "impl", "implementation (repeatable; default: the scenario's list)")
	fs.Var(&f.execs, "exec", "a lock client program speaking lockstorm's line protocol, e.g. 'python3 my_lock.py' (repeatable; see lockimpl/exec)")
	fs.BoolVar(&f.allowExec, "allow-exec", false, "let the client programs that a spec's variants name (exec:) start; a spec is data, and without this a run that needs one is refused (a program given with --exec needs no more consent)")
	fs.BoolVar(&f.all, "all", false, "run every embedded scenario")
	fs.BoolVar(&f.gatedOnly, "gated", false, "with --all: only gated scenarios")
	fs.Uint64Var(&f.seed, "seed", 0, "seed (0: the scenario's)")
	fs.IntVar(&f.seeds, "seeds", 1, "run every job with this many seeds (from --seed, default 1) and print how often each verdict was as expected")
	fs.StringVar(&f.backend, "backend", cluster.Auto, "auto, redis-server, embedded or sim (virtual time, in-process); a list such as sim,redis-server runs each job on the first that can run it")
	fs.BoolVar(&f.json, "json", false, "print JSON rows (same as --format json)")
	fs.StringVar(&f.format, "format", "table", "table, markdown or json")
	fs.BoolVar(&f.wide, "wide", false, "table and markdown: every figure in its own column instead of the evidence sentence")
	fs.BoolVar(&f.verbose, "v", false, "verbose logging on stderr")
	fs.StringVar(&f.out, "out", "out", "root folder for run folders")
	fs.StringVar(&f.keep, "keep", reports.KeepFailures, "which run folders to keep: failures, all or none")
	fs.StringVar(&f.junit, "junit", "", "also write JUnit XML to this file")
	fs.BoolVar(&f.onlyDiff, "only-diff", false, "print only the verdicts that differ from the expected ones (the gate's output)")
	fs.StringVar(&f.baseline, "baseline", "", "expect the verdicts recorded in this baseline file (lockstorm baseline) for the pairs it holds")
	fs.IntVar(&f.parallel, "parallel", 0, "scenario runs at once (each has its own servers and ports); 0: three, and more while other processes use under 20% of the CPUs and lockstorm with its servers under 90%")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print each run's compiled plan (lock and options, topology, workload, network, clocks, faults and what they apply to, failpoints, checker options, expectation, how the run stops) and start nothing")
	fs.BoolVar(&f.dryRun, "plan", false, "same as --dry-run")
	fs.StringVar(&f.shard, "shard", "", "run the K-th of N disjoint slices of the jobs (scenario × impl × seed), e.g. 0/4; also from JOB_COMPLETION_INDEX or LOCKSTORM_SHARD with LOCKSTORM_SHARDS; writes OUT/results.jsonl for lockstorm report")
	fs.IntVar(&f.rejudge, "rejudge", 2, "run again, up to this many more times, a run that the harness's own stalls (or its clients' own lag) left inconclusive (0: never)")
	fs.BoolVar(&f.full, "full-duration", false, "run every scenario its whole duration (by default an unsafe run stops two TTLs after its first overlap that holds without the harness's own lateness: its verdict is settled)")
	f.limits = spec.DefaultLimits()
	fs.IntVar(&f.limits.MaxNodes, "max-nodes", f.limits.MaxNodes, "refuse specs with more Redis nodes than this")
	fs.IntVar(&f.limits.MaxHosts, "max-hosts", f.limits.MaxHosts, "refuse specs with more client hosts than this")
	fs.DurationVar(&f.limits.MaxDuration, "max-duration", f.limits.MaxDuration, "refuse specs that run longer than this")
	fs.DurationVar(&f.limits.MinEvery, "min-every", f.limits.MinEvery, "refuse faults that repeat more often than this")
	fs.Int64Var(&f.limits.MaxHistory, "max-history", f.limits.MaxHistory, "refuse specs whose history could exceed this many entries")
	fs.IntVar(&f.limits.OpenFiles, "open-files", 0, "open files the run may use (0: this process's RLIMIT_NOFILE)")
	operands, err := parseArgs(fs, args, "usage: lockstorm run (--scenario NAME|FILE... | --all) [--impl NAME...] [--seed N] [flags]")
	if err != nil {
		return nil, err
	}
	if len(operands) > 0 {
		return nil, usage("run: unexpected argument %q", operands[0])
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

// check refuses flag values that cannot run and output paths that could not
// be written, before anything starts: a run must not be carried out only to
// lose its results. It expands --all into the scenario list.
func (f *runFlags) check() error {
	if f.json {
		f.format = reports.FormatJSON
	}
	switch f.format {
	case reports.FormatTable, reports.FormatMarkdown, reports.FormatJSON:
	default:
		return usage("run: --format %q: want table, markdown or json", f.format)
	}
	switch f.keep {
	case reports.KeepFailures, reports.KeepAll, reports.KeepNone:
	default:
		return usage("run: --keep %q: want failures, all or none", f.keep)
	}
	if f.seeds < 1 {
		return usage("run: --seeds must be at least 1")
	}
	if f.parallel < 0 {
		return usage("run: --parallel must not be negative")
	}
	for _, b := range strings.Split(f.backend, ",") {
		if _, err := cluster.Resolve(b); err != nil {
			return usage("run: --backend: %v", err)
		}
	}
	if f.limits.MaxNodes < 1 || f.limits.MaxHosts < 1 || f.limits.MaxDuration <= 0 || f.limits.MinEvery < 0 || f.limits.MaxHistory < 1 || f.limits.OpenFiles < 0 {
		return usage("run: --max-nodes, --max-hosts, --max-duration and --max-history must be positive, --min-every and --open-files not negative")
	}
	if f.keep != reports.KeepNone {
		if err := checkOutDir("run: --out", f.out); err != nil {
			return err
		}
	}
	if f.junit != "" {
		if err := checkOutFile("run: --junit", f.junit); err != nil {
			return err
		}
	}
	// A dry run starts nothing, programs allowed or not: it shows them.
	f.limits.AllowExec = f.allowExec && !f.dryRun
	if f.all {
		for _, n := range spec.Names() {
			f.scenarios = append(f.scenarios, n)
		}
	}
	if len(f.scenarios) == 0 {
		return usage("run: --scenario or --all is required (lockstorm list shows the scenarios)")
	}
	return nil
}

type job struct {
	spec    *spec.Spec
	impl    string
	seed    uint64
	backend string // the first of --backend's that can run it
}

func cmdRun(ctx context.Context, args []string) error {
	f, err := parseRunFlags(args)
	if err != nil {
		return err
	}
	started := time.Now()
	backends := resolveBackends(f.backend)
	backend := strings.Join(backends, ",")
	external, err := registerExecs(ctx, f)
	if err != nil {
		return err
	}
	// Everything is loaded and validated before anything starts.
	var base *spec.Baseline
	if f.baseline != "" {
		if base, err = spec.ReadBaseline(f.baseline); err != nil {
			return &exitError{2, err}
		}
	}
	jobs, skipped, err := loadJobs(f, backends, external)
	if err != nil {
		return err
	}
	log := runLogger(f, backends[0])
	printSkipped(os.Stderr, skipped, f, backend, len(jobs) == 0)
	sh, err := parseShard(f.shard)
	if err != nil {
		return usage("run: %v", err)
	}
	if jobs = sh.pick(jobs); sh.n > 1 {
		fmt.Fprintf(os.Stderr, "lockstorm: shard %d of %d: %d jobs\n", sh.k, sh.n, len(jobs))
	}
	if len(jobs) == 0 {
		if sh.n > 1 {
			return writeResults(f.out, nil) // an empty slice of a small sweep
		}
		return usage("run: nothing to run on the %s backend", backend)
	}
	if f.dryRun {
		return printPlans(os.Stdout, jobs, scenarios.Config{Backend: backend, Baseline: base, FullDuration: f.full}, f.format == "json" || f.json)
	}
	results, errs := runJobs(ctx, f, jobs, backend, base, log)
	// A run that could not run (its set-up failed, say a Sentinel that was
	// not ready on a loaded machine) is the harness's failure, not a
	// verdict: the others' verdicts are still printed and written, then the
	// failures, and the exit is 2. An interrupt (SIGINT, SIGTERM) cuts
	// short the runs in progress and starts no other: what finished is
	// reported as a whole suite would be (main exits 130).
	interrupted := ctx.Err() != nil
	var failed []error
	var ranJobs []job
	var ran []*scenarios.Outcome
	for i := range jobs {
		if errs[i] != nil {
			if !interrupted || !errors.Is(errs[i], context.Canceled) {
				failed = append(failed, fmt.Errorf("%s × %s seed %d: %w", jobs[i].spec.Name, jobs[i].impl, jobs[i].seed, errs[i]))
			}
			continue
		}
		ranJobs, ran = append(ranJobs, jobs[i]), append(ran, results[i])
	}
	note := ""
	if interrupted {
		note = fmt.Sprintf("interrupted after %d of %d runs", len(ran), len(jobs))
	}
	if len(ran) == 0 {
		if interrupted {
			failed = append([]error{errors.New(note)}, failed...)
		}
		return &exitError{2, errors.Join(failed...)}
	}
	err = report(f, ranJobs, ran, backend, started, sh, len(jobs) > 1, note, skipped)
	if len(failed) > 0 {
		return &exitError{2, fmt.Errorf("%d of %d runs could not run (the verdicts above are the others'):\n%w", len(failed), len(jobs), errors.Join(failed...))}
	}
	return err
}

// registerExecs asks each --exec client program its hello before anything
// starts: a broken one is bad input, and what it declares names it and sets
// its expectations. It returns the names of the locks that run as processes.
func registerExecs(ctx context.Context, f *runFlags) (map[string]bool, error) {
	external := map[string]bool{}
	for _, line := range f.execs {
		argv, err := execlock.Split(line)
		if err != nil {
			return nil, usage("run: --exec: %v", err)
		}
		if f.dryRun {
			// Not asked its hello: the plan shows the command line.
			name := execlock.DefaultName(argv)
			if _, err := lockimpl.Lookup(name); err == nil {
				return nil, usage("run: --exec %s: the name %s is taken", line, name)
			}
			lockimpl.Register(lockimpl.Unasked(name, argv))
			f.impls = append(f.impls, name)
			external[name] = true
			continue
		}
		info, err := execlock.Register(ctx, argv)
		if err != nil {
			return nil, usage("run: --exec: %v", err)
		}
		f.impls = append(f.impls, info.Name)
		external[info.Name] = true
	}
	return external, nil
}

// resolveBackends resolves each of --backend's list (checked already).
func resolveBackends(list string) []string {
	var out []string
	for _, b := range strings.Split(list, ",") {
		r, _ := cluster.Resolve(b)
		out = append(out, r)
	}
	return out
}

// backendFor is the first backend that can run spec × impl, or "" and why
// the last one cannot.
func backendFor(sp *spec.Spec, impl string, external bool, backends []string) (string, string) {
	why := ""
	for _, b := range backends {
		if why = sp.Unsupported(b); why != "" {
			continue
		}
		if why = sp.UnsupportedLock(b, impl, external); why != "" {
			continue
		}
		return b, ""
	}
	return "", why
}

// loadJobs loads and validates every scenario and crosses it with its locks
// and seeds; a job no backend of the list can run is skipped (skipped
// says which and why, for printSkipped and the suite page).
func loadJobs(f *runFlags, backends []string, external map[string]bool) (jobs []job, skipped []skip, err error) {
	for _, name := range f.scenarios {
		spec, err := spec.LoadWith(name, f.limits)
		if err != nil {
			return nil, nil, &exitError{2, err}
		}
		if f.gatedOnly && !spec.IsGated() {
			continue
		}
		if _, why := backendFor(spec, "", false, backends); why != "" {
			skipped = append(skipped, skip{spec.Name, why})
			continue
		}
		impls := f.impls
		if len(impls) == 0 {
			impls = spec.Impls
		}
		if len(impls) == 0 {
			return nil, nil, usage("run: scenario %s lists no impls; give --impl", spec.Name)
		}
		for _, impl := range impls {
			if !f.dryRun {
				if err := spec.NeedsConsent(impl); err != nil {
					return nil, nil, &exitError{2, err}
				}
			}
			// The client protocol hands a process node addresses
			// (LOCKSTORM_NODES), not Sentinels to ask: it cannot follow a
			// Sentinel failover, so the run would judge a connection
			// error, not the lock.
			if external[impl] && spec.Sentinel != nil {
				fmt.Fprintf(os.Stderr, "lockstorm: skipping %s × %s: a client process is given node addresses, not Sentinels (the protocol has no Sentinel discovery)\n", spec.Name, impl)
				continue
			}
			// Nor a cluster's slot map: a key on another master would be a
			// MOVED error, not the lock's answer.
			if external[impl] && spec.Cluster != nil {
				fmt.Fprintf(os.Stderr, "lockstorm: skipping %s × %s: a client process is given node addresses, not a cluster (the protocol has no cluster redirects)\n", spec.Name, impl)
				continue
			}
			if _, _, err := spec.Resolve(impl); err != nil {
				return nil, nil, usage("run: --impl: %v", err)
			}
			// An --impl the spec does not name was not checked at load:
			// its options and topology are checked here, before anything starts.
			if err := spec.CheckImpl(impl); err != nil {
				return nil, nil, &exitError{2, fmt.Errorf("run: --impl %s: %w", impl, err)}
			}
			b, why := backendFor(spec, impl, external[impl], backends)
			if b == "" {
				skipped = append(skipped, skip{spec.Name + " × " + impl, why})
				continue
			}
			for k := 0; k < f.seeds; k++ {
				seed := f.seed
				if f.seeds > 1 {
					seed = max(f.seed, 1) + uint64(k)
				}
				jobs = append(jobs, job{spec, impl, seed, b})
			}
		}
	}
	return jobs, skipped, nil
}

// runLogger is the runs' logger (warnings, or everything with -v); it also
// says when the embedded backend stands in for redis-server.
func runLogger(f *runFlags, backend string) *slog.Logger {
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	if backend == cluster.Embedded {
		if f.backend == cluster.Embedded {
			fmt.Fprintln(os.Stderr, "lockstorm: using the embedded backend (miniredis)")
		} else {
			fmt.Fprintln(os.Stderr, "lockstorm: no redis-server on PATH: using the embedded backend (miniredis); install redis-server for real servers")
		}
	} else if f.backend == cluster.Auto {
		// Chosen for the user: say which, as for the embedded one.
		path, _ := cluster.ServerBinary("")
		fmt.Fprintf(os.Stderr, "lockstorm: using redis-server (%s)\n", path)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// runJobs runs the jobs f.parallel at a time (0: as the load allows), with
// progress on stderr.
func runJobs(ctx context.Context, f *runFlags, jobs []job, backend string, base *spec.Baseline, log *slog.Logger) ([]*scenarios.Outcome, []error) {
	prog := newProgress(isTerminal(os.Stderr), len(jobs))
	runs := make([]scenarios.Job, len(jobs))
	for i, j := range jobs {
		runs[i] = scenarios.Job{Spec: j.spec, Config: scenarios.Config{Impl: j.impl, Seed: j.seed, Backend: j.backend, Log: log, Baseline: base, Progress: prog.update,
			FullDuration: f.full, Rejudge: rejudgeConfig(f.rejudge)}}
	}
	results, errs := scenarios.RunMany(ctx, runs, f.parallel, nil, func(i int, out *scenarios.Outcome, _ error) {
		prog.done(jobs[i].spec.Name, jobs[i].impl, out)
		if out != nil && !reports.ShouldKeep(f.keep, out) {
			// No folder will be written: only the suite page reads it now.
			out.History = reports.SuiteHistory(out.History)
		}
	})
	prog.clear()
	if afterRuns != nil {
		afterRuns()
	}
	return results, errs
}

// afterRuns, when set by a test, runs once every job has finished and
// before anything is printed or written (to make a write fail on purpose).
var afterRuns func()

// printPlans compiles every job with cfg (its backend, baseline and
// duration flag) and prints its plan (text, or one JSON object a line),
// starting nothing. A job that does not compile is an input error (exit
// 2), as it would be at the start of a run.
func printPlans(w io.Writer, jobs []job, cfg scenarios.Config, asJSON bool) error {
	enc := json.NewEncoder(w)
	for i, j := range jobs {
		cfg.Impl, cfg.Seed, cfg.Backend = j.impl, j.seed, j.backend
		p, err := scenarios.Compile(j.spec, cfg)
		if err != nil {
			return &exitError{2, fmt.Errorf("%s × %s: %w", j.spec.Name, j.impl, err)}
		}
		if asJSON {
			err = enc.Encode(p)
		} else {
			if i > 0 {
				fmt.Fprintln(w)
			}
			err = p.WriteText(w)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

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
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/lockstorm/lockstorm/checker"
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
	fs.StringVar(&f.backend, "backend", cluster.Auto, "auto, redis-server or embedded")
	fs.BoolVar(&f.json, "json", false, "print JSON rows (same as --format json)")
	fs.StringVar(&f.format, "format", "table", "table, markdown or json")
	fs.BoolVar(&f.wide, "wide", false, "table and markdown: every figure in its own column instead of the evidence sentence")
	fs.BoolVar(&f.verbose, "v", false, "verbose logging on stderr")
	fs.StringVar(&f.out, "out", "out", "root folder for run folders")
	fs.StringVar(&f.keep, "keep", reports.KeepFailures, "which run folders to keep: failures, all or none")
	fs.StringVar(&f.junit, "junit", "", "also write JUnit XML to this file")
	fs.BoolVar(&f.onlyDiff, "only-diff", false, "print only the verdicts that differ from the expected ones (the gate's output)")
	fs.StringVar(&f.baseline, "baseline", "", "expect the verdicts recorded in this baseline file (lockstorm baseline) for the pairs it holds")
	fs.IntVar(&f.parallel, "parallel", 0, "scenario runs at once (each has its own servers and ports); 0: three, and more while the CPUs were under 60% busy and lockstorm with its servers used under 35% of them")
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
	if _, err := cluster.Resolve(f.backend); err != nil {
		return usage("run: --backend: %v", err)
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
	spec *spec.Spec
	impl string
	seed uint64
}

func cmdRun(ctx context.Context, args []string) error {
	f, err := parseRunFlags(args)
	if err != nil {
		return err
	}
	started := time.Now()
	backend, _ := cluster.Resolve(f.backend)
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
	jobs, err := loadJobs(f, backend, external)
	if err != nil {
		return err
	}
	log := runLogger(f, backend)
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
	err = report(f, ranJobs, ran, backend, started, sh, len(jobs) > 1, note)
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

// loadJobs loads and validates every scenario and crosses it with its locks
// and seeds; a scenario the backend cannot run is skipped, saying why.
func loadJobs(f *runFlags, backend string, external map[string]bool) ([]job, error) {
	var jobs []job
	for _, name := range f.scenarios {
		spec, err := spec.LoadWith(name, f.limits)
		if err != nil {
			return nil, &exitError{2, err}
		}
		if f.gatedOnly && !spec.IsGated() {
			continue
		}
		if why := spec.Unsupported(backend); why != "" {
			fmt.Fprintf(os.Stderr, "lockstorm: skipping %s on the %s backend: %s\n", spec.Name, backend, why)
			continue
		}
		impls := f.impls
		if len(impls) == 0 {
			impls = spec.Impls
		}
		if len(impls) == 0 {
			return nil, usage("run: scenario %s lists no impls; give --impl", spec.Name)
		}
		for _, impl := range impls {
			if !f.dryRun {
				if err := spec.NeedsConsent(impl); err != nil {
					return nil, &exitError{2, err}
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
			if _, _, err := spec.Resolve(impl); err != nil {
				return nil, usage("run: --impl: %v", err)
			}
			// An --impl the spec does not name was not checked at load:
			// its options and topology are checked here, before anything starts.
			if err := spec.CheckImpl(impl); err != nil {
				return nil, &exitError{2, fmt.Errorf("run: --impl %s: %w", impl, err)}
			}
			for k := 0; k < f.seeds; k++ {
				seed := f.seed
				if f.seeds > 1 {
					seed = max(f.seed, 1) + uint64(k)
				}
				jobs = append(jobs, job{spec, impl, seed})
			}
		}
	}
	return jobs, nil
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
		runs[i] = scenarios.Job{Spec: j.spec, Config: scenarios.Config{Impl: j.impl, Seed: j.seed, Backend: backend, Log: log, Baseline: base, Progress: prog.update,
			FullDuration: f.full, Rejudge: rejudgeConfig(f.rejudge)}}
	}
	results, errs := scenarios.RunMany(ctx, runs, f.parallel, nil, func(i int, out *scenarios.Outcome, _ error) {
		prog.done(jobs[i].spec.Name, jobs[i].impl, out)
	})
	prog.clear()
	if afterRuns != nil {
		afterRuns()
	}
	return results, errs
}

// report prints the verdicts, then writes the suite page, the shard's
// results, the run folders and JUnit. The verdicts come first: a failed
// write is reported below the table (exit 2) instead of swallowing them.
// suite says more than one run was asked for (a page then links them);
// note, when set, says the suite was interrupted, above the summary and in
// the page's title.
func report(f *runFlags, jobs []job, results []*scenarios.Outcome, backend string, started time.Time, sh shard, suite bool, note string) error {
	now := time.Now()
	rows, cases, kept, mismatch, missed := collectRows(f, results, now)
	if suite && f.keep != reports.KeepNone {
		// A suite gets a page linking every run folder it kept.
		index, err := writeSuitePage(f, rows, results, backend, now, started, note)
		if err != nil {
			return &exitError{2, err}
		}
		if f.format != reports.FormatJSON {
			defer fmt.Fprintf(os.Stdout, "\nsuite page: %s\n", index)
		}
	}
	if sh.n > 1 || f.shard != "" {
		if err := writeResults(f.out, rows); err != nil {
			return &exitError{2, fmt.Errorf("--shard: %w", err)}
		}
	}
	verdictErr := printVerdicts(os.Stdout, f, rows, mismatch, missed)
	if f.format != reports.FormatJSON {
		printTail(os.Stdout, note, rows, time.Since(started), processStats(results, jobs))
		if len(jobs) == 1 && len(rows) == 1 {
			fmt.Fprintln(os.Stdout, runFolderLine(f, rows[0]))
		}
	} else if note != "" {
		fmt.Fprintln(os.Stderr, "lockstorm:", note) // stdout is the rows
	}
	writeErrs := writeRunDirs(f.out, jobs, results, kept, now)
	if f.junit != "" {
		if err := reports.WriteJUnitFile(f.junit, cases); err != nil {
			writeErrs = append(writeErrs, fmt.Errorf("--junit: %w", err))
		}
	}
	if len(writeErrs) > 0 {
		return &exitError{2, fmt.Errorf("the verdicts above were not all saved: %w", errors.Join(writeErrs...))}
	}
	return verdictErr
}

// writeRunDirs writes the kept runs' folders, NumCPU at a time: a folder
// with a violation renders its timeline and porcupine's page, CPU work
// that need not wait for the previous folder's disk writes.
func writeRunDirs(out string, jobs []job, results []*scenarios.Outcome, kept []int, now time.Time) []error {
	errs := make([]error, len(kept))
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	for k, i := range kept {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := reports.WriteRunDir(out, results[i], now); err != nil {
				errs[k] = fmt.Errorf("run folder for %s × %s: %w", jobs[i].spec.Name, jobs[i].impl, err)
			}
		}()
	}
	wg.Wait()
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	return failed
}

// collectRows turns outcomes into rows and JUnit cases, counts the
// unexpected verdicts (DIFF) and misses, and picks the run folders to keep.
func collectRows(f *runFlags, results []*scenarios.Outcome, now time.Time) (rows []reports.Row, cases []reports.JUnitCase, kept []int, mismatch, missed int) {
	for i, out := range results {
		row := reports.FromOutcome(out)
		switch {
		case row.Missed():
			missed++
		case row.Fails():
			mismatch++
		}
		if reports.ShouldKeep(f.keep, out) {
			row.RunDir = reports.RunDirPath(f.out, out, now)
			kept = append(kept, i)
		}
		rows = append(rows, row)
		cases = append(cases, reports.JUnitCase{Row: row, Seconds: out.Elapsed.Seconds()})
	}
	return rows, cases, kept, mismatch, missed
}

// writeSuitePage writes the suite page (index.html) linking every run.
func writeSuitePage(f *runFlags, rows []reports.Row, results []*scenarios.Outcome, backend string, now, started time.Time, note string) (string, error) {
	suite := make([]reports.SuiteRun, len(rows))
	for i, out := range results {
		suite[i] = reports.NewSuiteRun(rows[i], out.History, out.Result, f.out)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return "", err
	}
	index := filepath.Join(f.out, reports.IndexFile)
	info := reports.SuiteInfo{Backend: backend, Seeds: f.seeds, Date: now, Version: reports.LockstormVersion(), Wall: time.Since(started)}
	if note != "" {
		info.Title = "lockstorm suite: " + note
	}
	err := reports.WriteSuiteFile(index, suite, info)
	return index, err
}

// afterRuns, when set by a test, runs once every job has finished and
// before anything is printed or written (to make a write fail on purpose).
var afterRuns func()

// printVerdicts prints the table (or the per-seed aggregate) and the
// replay lines, and returns the exit error the verdicts call for.
func printVerdicts(w io.Writer, f *runFlags, rows []reports.Row, mismatch, missed int) error {
	if f.seeds > 1 {
		agg := reports.Aggregate(rows)
		if err := reports.WriteAggregate(w, agg, f.format); err != nil {
			return &exitError{2, err}
		}
		// As with one seed and as `report` merging shards: a DIFF fails the
		// run, a miss (an exploratory run that did not find its failure on
		// a seed) does not. A shard exited 1 on a miss that its merge
		// called as expected.
		if mismatch > 0 {
			return &exitError{1, errors.New("")}
		}
		return nil
	}
	shown := rows
	if f.onlyDiff {
		shown = nil
		for _, r := range rows {
			if !r.AsExpected {
				shown = append(shown, r)
			}
		}
		if len(shown) == 0 {
			fmt.Fprintf(w, "all %d verdicts as expected\n", len(rows))
		}
	}
	if len(shown) > 0 || !f.onlyDiff {
		if err := reports.WriteTable(w, shown, reports.TableOptions{Format: f.format, Wide: f.wide, Color: isTerminal(os.Stdout)}); err != nil {
			return &exitError{2, err}
		}
	}
	if missed > 0 && f.format != reports.FormatJSON {
		fmt.Fprintln(w, "\n"+foldLine(fmt.Sprintf("%d exploratory run(s) did not find their failure on this seed (marked miss; not a regression):", missed), ""))
		for _, r := range rows {
			if r.Missed() {
				fmt.Fprintln(w, foldCommand("  "+r.Replay, "      "))
			}
		}
	}
	if mismatch > 0 {
		if f.format != reports.FormatJSON {
			fmt.Fprintf(w, "\n%d of %d verdicts differ from the expected ones; replay with:\n", mismatch, len(rows))
			for _, r := range rows {
				if !r.AsExpected && !r.Missed() {
					fmt.Fprintln(w, foldCommand("  "+r.Replay, "      "))
					// A suite's page (named below the table) links every
					// folder it kept: their paths, longer than a line with
					// long names, are left to it. One run's folder is on a
					// line of its own.
					if r.RunDir != "" && len(rows) == 1 {
						fmt.Fprintf(w, "      # %s\n", r.RunDir)
					}
				}
			}
		}
		return &exitError{1, errors.New("")}
	}
	return nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// processStats says, for the table's tail, which requests client
// processes (--exec) left unknown by dying, breaking the protocol or not
// answering: each is an unknown outcome in the history, and a flaky client
// program must not pass for a flaky lock.
func processStats(results []*scenarios.Outcome, jobs []job) []string {
	var lines []string
	for i, out := range results {
		if out == nil || out.Processes == nil || out.Processes.Unknown() == 0 {
			continue
		}
		p := out.Processes
		lines = append(lines, fmt.Sprintf("client processes of %s × %s: %d started; %d requests unknown (%d died, %d malformed replies, %d timeouts)",
			jobs[i].spec.Name, jobs[i].impl, p.Starts, p.Unknown(), p.Deaths, p.Malformed, p.Timeouts))
	}
	return lines
}

// printTail prints the lines under the table: the note on an interrupted
// suite, the summary, where the time went and the client processes'
// unknown requests, each folded to the table's width.
func printTail(w io.Writer, note string, rows []reports.Row, wall time.Duration, stats []string) {
	lines := []string{summaryLine(rows, wall)}
	if note != "" {
		lines = append([]string{note}, lines...)
	}
	if l := timeLine(rows); l != "" {
		lines = append(lines, l)
	}
	for _, l := range append(lines, stats...) {
		fmt.Fprintln(w, foldLine(l, "    "))
	}
}

// printPlans compiles every job with cfg (its backend, baseline and
// duration flag) and prints its plan (text, or one JSON object a line),
// starting nothing. A job that does not compile is an input error (exit
// 2), as it would be at the start of a run.
func printPlans(w io.Writer, jobs []job, cfg scenarios.Config, asJSON bool) error {
	enc := json.NewEncoder(w)
	for i, j := range jobs {
		cfg.Impl, cfg.Seed = j.impl, j.seed
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

// summaryLine closes every table: how many runs, how they compare with
// their expectations, and the wall time, for a person and a CI log alike.
func summaryLine(rows []reports.Row, wall time.Duration) string {
	var ok, diff, miss, inconclusive, none int
	for _, r := range rows {
		switch {
		case r.Expected == "":
			none++
		case r.Missed():
			miss++
		case r.AsExpected:
			ok++
		default:
			diff++
		}
		if r.Verdict == checker.Inconclusive {
			inconclusive++
		}
	}
	s := fmt.Sprintf("summary: %d runs in %.1f s: %d as expected, %d DIFF, %d miss, %d inconclusive", len(rows), wall.Seconds(), ok, diff, miss, inconclusive)
	if none > 0 {
		s += fmt.Sprintf(", %d without expectation", none)
	}
	return s
}

// timeLine says where the runs' time went, summed over the runs: their
// traffic (the specs' durations, less the early stops) and the harness's
// overhead around it, phase by phase. The overhead is what a faster suite
// cuts, and it depends less on the machine's load than the wall time.
func timeLine(rows []reports.Row) string {
	var sum scenarios.Phases
	n := 0
	for _, r := range rows {
		if r.Phases != nil {
			sum = sum.Add(*r.Phases)
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("time: %d runs took %.1f s, traffic %.1f s, overhead %.1f s (%s)", n, sum.Total().Seconds(),
		sum.Traffic.Seconds(), sum.Overhead().Seconds(), sum)
}

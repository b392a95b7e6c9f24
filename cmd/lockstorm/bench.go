package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/internal/bench"
)

// benchGroups maps --only names (and row numbers) to row groups.
var benchGroups = map[string]string{
	"1": "drive", "drive": "drive",
	"2": "check", "check": "check",
	"3": "ttb", "ttb": "ttb", "bug": "ttb",
	"4": "suite", "suite": "suite",
	"5": "recorder", "recorder": "recorder",
	"6": "battery", "battery": "battery",
}

type benchFlags struct {
	json       bool
	compare    string
	quick      bool
	only       multi
	suite      bool
	root       string
	seeds      int
	parallel   int
	duration   time.Duration
	sizes      string
	cpuprofile string
	memprofile string
	groups     map[string]bool
}

func parseBenchFlags(args []string) (*benchFlags, error) {
	f := &benchFlags{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.BoolVar(&f.json, "json", false, "print the results as one JSON object instead of the table")
	fs.BoolVar(&f.quick, "quick", false, "shorter drive windows, 3 seeds for time to bug")
	fs.Var(&f.only, "only", "row groups to run, by number or name: 1 drive, 2 check, 3 ttb, 4 suite, 5 recorder, 6 battery (repeatable or comma-separated)")
	fs.BoolVar(&f.suite, "suite", false, "also time make scenarios and make gate (minutes)")
	fs.StringVar(&f.root, "root", ".", "repository root for the suite rows")
	fs.IntVar(&f.seeds, "seeds", 0, "seeds per spec for time to bug (0: 10, or 3 with --quick)")
	fs.IntVar(&f.parallel, "parallel", 0, "time-to-bug runs at once; 0: three, and more while the CPUs have room (as lockstorm run --parallel 0)")
	fs.DurationVar(&f.duration, "duration", 0, "drive window per measurement (0: 5s, or 2s with --quick)")
	fs.StringVar(&f.sizes, "sizes", "", "check-rate history sizes, comma-separated (default 10000,100000,1000000)")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole bench to this file")
	fs.StringVar(&f.memprofile, "memprofile", "", "write a heap (alloc) profile at the end to this file")
	fs.StringVar(&f.compare, "compare", "", "compare the ratios with this baseline file (.ci/bench-baseline.json) and exit 1 when one regressed past its tolerance (goals then only inform)")
	operands, err := parseArgs(fs, args, "usage: lockstorm bench [--json] [--quick] [--only rows] [--suite] [--root DIR]")
	if err != nil {
		return nil, err
	}
	if len(operands) > 0 {
		return nil, usage("bench: unexpected argument %q", operands[0])
	}
	for _, o := range []struct{ flag, path string }{{"--cpuprofile", f.cpuprofile}, {"--memprofile", f.memprofile}} {
		if o.path != "" {
			if err := checkOutFile("bench: "+o.flag, o.path); err != nil {
				return nil, err
			}
		}
	}
	if f.seeds < 0 || f.duration < 0 || f.parallel < 0 {
		return nil, usage("bench: --seeds, --duration and --parallel must not be negative")
	}
	f.groups = map[string]bool{}
	for _, o := range f.only {
		o = strings.TrimSpace(strings.ToLower(o))
		if o == "" {
			continue
		}
		g, ok := benchGroups[o]
		if !ok {
			return nil, usage("bench: --only %q: want 1-6 or drive, check, ttb, suite, recorder, battery", o)
		}
		f.groups[g] = true
	}
	if len(f.groups) == 0 {
		for _, g := range []string{"drive", "check", "ttb", "recorder", "battery"} {
			f.groups[g] = true
		}
	}
	if f.suite {
		f.groups["suite"] = true
	}
	return f, nil
}

func (f *benchFlags) checkSizes() ([]int, error) {
	if f.sizes == "" {
		return nil, nil
	}
	var out []int
	for _, s := range strings.Split(f.sizes, ",") {
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(s), "%d", &n); err != nil || n <= 0 {
			return nil, usage("bench: --sizes %q: want positive integers", f.sizes)
		}
		out = append(out, n)
	}
	return out, nil
}

// cmdBench measures lockstorm itself and prints one table (or JSON). Exit
// 1 when a goal is missed or a measurement failed, 2 on setup errors.
func cmdBench(ctx context.Context, args []string) error {
	f, err := parseBenchFlags(args)
	if err != nil {
		return err
	}
	sizes, err := f.checkSizes()
	if err != nil {
		return err
	}
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return &exitError{2, err}
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return &exitError{2, err}
		}
		defer pprof.StopCPUProfile()
	}
	progress := bench.Progress(func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	})
	rep := bench.NewReport(f.quick)
	start := time.Now()
	groups := f.plan(sizes, progress)
	announce(os.Stderr, groups)
	for i, g := range groups {
		gs := time.Now()
		rows, err := g.run(ctx)
		if ctx.Err() != nil {
			// Interrupted: the rows so far and this group marked, then the
			// output as if the bench had ended here.
			rep.Rows = append(rep.Rows, bench.Row{Row: g.id, Name: g.name, Measure: g.name, FigureText: "-",
				Status: bench.Failed, Note: fmt.Sprintf("interrupted after %.1f s", time.Since(gs).Seconds())})
			rep.ElapsedSec = time.Since(start).Seconds()
			if werr := writeBench(f, rep); werr != nil {
				return &exitError{2, werr}
			}
			return fmt.Errorf("bench: interrupted during %s; %d finished row(s) written", g.name, len(rep.Rows)-1)
		}
		if err != nil {
			rows = []bench.Row{{Row: g.id, Name: g.name, Measure: g.name, FigureText: "-", Status: bench.Failed, Note: err.Error()}}
		}
		rep.Rows = append(rep.Rows, rows...)
		progress("[%d/%d] %s done in %.1f s (expected ~%v): %s", i+1, len(groups), g.name,
			time.Since(gs).Seconds(), g.expect, rowStatuses(rows))
	}
	rep.ElapsedSec = time.Since(start).Seconds()

	if err := writeMemProfile(f.memprofile); err != nil {
		return &exitError{2, err}
	}
	if err := writeBench(f, rep); err != nil {
		return &exitError{2, err}
	}
	return benchOutcome(f, rep)
}

// writeMemProfile writes the allocations profile, after a collection, when
// --memprofile asks for one.
func writeMemProfile(path string) error {
	if path == "" {
		return nil
	}
	pf, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	err = pprof.Lookup("allocs").WriteTo(pf, 0)
	pf.Close()
	return err
}

// benchOutcome is the bench's exit: with --compare, 1 when a ratio regressed
// past the baseline's tolerance; without, 1 when a row missed its goal.
func benchOutcome(f *benchFlags, rep *bench.Report) error {
	if f.compare != "" {
		out := io.Writer(os.Stdout)
		if f.json {
			out = os.Stderr // keep stdout one JSON object
		}
		bad, err := compareBench(out, rep, f.compare, f.groups)
		if err != nil {
			return &exitError{2, fmt.Errorf("bench: --compare: %w", err)}
		}
		if bad > 0 {
			return &exitError{1, fmt.Errorf("bench: %d ratio(s) regressed past the baseline's tolerance", bad)}
		}
		return nil
	}
	if n := rep.Missed(); n > 0 {
		return &exitError{1, fmt.Errorf("bench: %d row(s) missed their goal or failed", n)}
	}
	return nil
}

// benchGroup is one row group of the bench, with the duration it is
// expected to take (stated up front: the full bench runs for minutes).
type benchGroup struct {
	id, name string
	expect   time.Duration
	run      func(context.Context) ([]bench.Row, error)
}

// plan lists the selected row groups in table order.
func (f *benchFlags) plan(sizes []int, progress bench.Progress) []benchGroup {
	quick := func(full, q time.Duration) time.Duration {
		if f.quick {
			return q
		}
		return full
	}
	var gs []benchGroup
	if f.groups["drive"] {
		// The exec row: redis-py's Lock (SET NX PX, compare-and-delete) in
		// client processes against set-nx-px, the same algorithm, in process.
		cfg := bench.DriveConfig{Duration: f.duration, Runner: true, Progress: progress,
			Exec: []string{"/usr/bin/python3", filepath.Join(f.root, "examples", "clients", "redis_py_lock.py")}, ExecSame: "set-nx-px"}
		if f.quick {
			if cfg.Duration == 0 {
				cfg.Duration = 2 * time.Second
			}
			cfg.SetRequests = 100_000
		}
		gs = append(gs, benchGroup{"1", "drive", quick(90*time.Second, 45*time.Second),
			func(ctx context.Context) ([]bench.Row, error) { return bench.DriveRate(ctx, cfg) }})
	}
	if f.groups["check"] {
		// About 50 ms per 1000 ops for the four measurements of a size
		// (0.5 s at 10k on the shared 2-core machine); a rough guide, since
		// porcupine's time grows faster than the history on violations.
		n, all := 0, sizes
		if len(all) == 0 {
			all = []int{10_000, 100_000, 1_000_000}
		}
		for _, s := range all {
			n += s
		}
		expect := max(time.Duration(n/1000)*50*time.Millisecond, 5*time.Second)
		gs = append(gs, benchGroup{"2", "check", expect, func(context.Context) ([]bench.Row, error) {
			return bench.CheckRate(bench.CheckConfig{Sizes: sizes, Progress: progress}), nil
		}})
	}
	if f.groups["ttb"] {
		seeds := f.seeds
		if seeds == 0 {
			seeds = 10
			if f.quick {
				seeds = 3
			}
		}
		gs = append(gs, benchGroup{"3", "ttb", time.Duration(seeds) * 25 * time.Second / time.Duration(max(f.parallel, 3)),
			func(ctx context.Context) ([]bench.Row, error) {
				return bench.TimeToBug(ctx, bench.TTBConfig{Seeds: seeds, Parallel: f.parallel, Progress: progress})
			}})
	}
	if f.groups["suite"] {
		gs = append(gs, benchGroup{"4", "suite", 4 * time.Minute, func(ctx context.Context) ([]bench.Row, error) {
			return bench.SuiteTime(ctx, f.root, progress), nil
		}})
	} else if len(f.only) == 0 {
		gs = append(gs, benchGroup{"4", "suite", 0, func(context.Context) ([]bench.Row, error) { return bench.SuiteNotRun(), nil }})
	}
	if f.groups["battery"] {
		gs = append(gs, benchGroup{"6", "battery", 2 * time.Minute, func(ctx context.Context) ([]bench.Row, error) {
			return []bench.Row{bench.BatteryTime(ctx, "set-nx-px", progress)}, nil
		}})
	}
	if f.groups["recorder"] {
		gs = append(gs, benchGroup{"5", "recorder", 5 * time.Second, func(context.Context) ([]bench.Row, error) {
			progress("recorder: Recorder.Add and Failpoints.Hit")
			return bench.RecorderCost(0), nil
		}})
	}
	return gs
}

// announce states each group's expected duration and the total.
func announce(w io.Writer, gs []benchGroup) {
	var total time.Duration
	parts := make([]string, 0, len(gs))
	for _, g := range gs {
		if g.expect == 0 {
			continue
		}
		total += g.expect
		parts = append(parts, fmt.Sprintf("%s %s ~%v", g.id, g.name, g.expect))
	}
	fmt.Fprintf(w, "bench: %d row group(s), expected ~%v on 2 CPUs: %s\n", len(parts), total, strings.Join(parts, ", "))
}

// rowStatuses is "1a met, 1b missed, ..." for the progress line.
func rowStatuses(rows []bench.Row) string {
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = r.Row + " " + r.Status
	}
	return strings.Join(parts, ", ")
}

// writeBench prints the report as the flags ask (JSON or table) on stdout.
func writeBench(f *benchFlags, rep *bench.Report) error {
	if f.json {
		return bench.WriteJSON(os.Stdout, rep)
	}
	return bench.WriteTable(os.Stdout, rep)
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/cmd/internal/bench"
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
	fs.SetOutput(io.Discard)
	fs.BoolVar(&f.json, "json", false, "print the results as one JSON object instead of the table")
	fs.BoolVar(&f.quick, "quick", false, "shorter drive windows, 3 seeds for time to bug")
	fs.Var(&f.only, "only", "row groups to run, by number or name: 1 drive, 2 check, 3 ttb, 4 suite, 5 recorder, 6 battery (repeatable or comma-separated)")
	fs.BoolVar(&f.suite, "suite", false, "also time make scenarios and make gate (minutes)")
	fs.StringVar(&f.root, "root", ".", "repository root for the suite rows")
	fs.IntVar(&f.seeds, "seeds", 0, "seeds per spec for time to bug (0: 10, or 3 with --quick)")
	fs.IntVar(&f.parallel, "parallel", 1, "time-to-bug runs at once")
	fs.DurationVar(&f.duration, "duration", 0, "drive window per measurement (0: 5s, or 2s with --quick)")
	fs.StringVar(&f.sizes, "sizes", "", "check-rate history sizes, comma-separated (default 10000,100000,1000000)")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole bench to this file")
	fs.StringVar(&f.memprofile, "memprofile", "", "write a heap (alloc) profile at the end to this file")
	fs.StringVar(&f.compare, "compare", "", "compare the ratios with this baseline file (.ci/bench-baseline.json) and exit 1 when one regressed past its tolerance (goals then only inform)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fmt.Println("usage: lockstorm bench [--json] [--quick] [--only rows] [--suite] [--root DIR]")
			fs.PrintDefaults()
			return nil, &exitError{0, errors.New("")}
		}
		return nil, usage("bench: %v", err)
	}
	if fs.NArg() > 0 {
		return nil, usage("bench: unexpected argument %q", fs.Arg(0))
	}
	for _, o := range []struct{ flag, path string }{{"--cpuprofile", f.cpuprofile}, {"--memprofile", f.memprofile}} {
		if o.path != "" {
			if err := checkOutFile("bench: "+o.flag, o.path); err != nil {
				return nil, err
			}
		}
	}
	if f.seeds < 0 || f.duration < 0 || f.parallel < 1 {
		return nil, usage("bench: --seeds and --duration must not be negative, --parallel at least 1")
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
		rows, err := bench.DriveRate(ctx, cfg)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rows = []bench.Row{{Row: "1", Name: "drive", Measure: "drive rate", FigureText: "-", Status: bench.Failed, Note: err.Error()}}
		}
		rep.Rows = append(rep.Rows, rows...)
	}
	if f.groups["check"] {
		rep.Rows = append(rep.Rows, bench.CheckRate(bench.CheckConfig{Sizes: sizes, Progress: progress})...)
	}
	if f.groups["ttb"] {
		seeds := f.seeds
		if seeds == 0 {
			seeds = 10
			if f.quick {
				seeds = 3
			}
		}
		rows, err := bench.TimeToBug(ctx, bench.TTBConfig{Seeds: seeds, Parallel: f.parallel, Progress: progress})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rows = []bench.Row{{Row: "3", Name: "ttb", Measure: "time to bug", FigureText: "-", Status: bench.Failed, Note: err.Error()}}
		}
		rep.Rows = append(rep.Rows, rows...)
	}
	if f.groups["suite"] {
		rep.Rows = append(rep.Rows, bench.SuiteTime(ctx, f.root, progress)...)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	} else if len(f.only) == 0 {
		rep.Rows = append(rep.Rows, bench.SuiteNotRun()...)
	}
	if f.groups["battery"] {
		rep.Rows = append(rep.Rows, bench.BatteryTime(ctx, "set-nx-px", progress))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if f.groups["recorder"] {
		progress("recorder: Recorder.Add and Failpoints.Hit")
		rep.Rows = append(rep.Rows, bench.RecorderCost(0)...)
	}
	rep.ElapsedSec = time.Since(start).Seconds()

	if f.memprofile != "" {
		pf, err := os.Create(f.memprofile)
		if err != nil {
			return &exitError{2, err}
		}
		runtime.GC()
		err = pprof.Lookup("allocs").WriteTo(pf, 0)
		pf.Close()
		if err != nil {
			return &exitError{2, err}
		}
	}
	if f.json {
		err = bench.WriteJSON(os.Stdout, rep)
	} else {
		err = bench.WriteTable(os.Stdout, rep)
	}
	if err != nil {
		return &exitError{2, err}
	}
	if f.compare != "" {
		out := io.Writer(os.Stdout)
		if f.json {
			out = os.Stderr // keep stdout one JSON object
		}
		bad, err := compareBench(out, rep, f.compare)
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

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/cluster"
)

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, strings.Split(v, ",")...); return nil }

type runFlags struct {
	scenarios multi
	impls     multi
	all       bool
	seed      uint64
	backend   string
	json      bool
	format    string
	verbose   bool
	gatedOnly bool
}

func parseRunFlags(args []string) (*runFlags, error) {
	f := &runFlags{}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&f.scenarios, "scenario", "scenario name or YAML file (repeatable)")
	fs.Var(&f.impls, "impl", "implementation (repeatable; default: the scenario's list)")
	fs.BoolVar(&f.all, "all", false, "run every embedded scenario")
	fs.BoolVar(&f.gatedOnly, "gated", false, "with --all: only gated scenarios")
	fs.Uint64Var(&f.seed, "seed", 0, "seed (0: the scenario's)")
	fs.StringVar(&f.backend, "backend", cluster.Auto, "auto, redis-server or embedded")
	fs.BoolVar(&f.json, "json", false, "print JSON rows (same as --format json)")
	fs.StringVar(&f.format, "format", "table", "table, markdown or json")
	fs.BoolVar(&f.verbose, "v", false, "verbose logging on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fs.PrintDefaults()
			return nil, &exitError{0, errors.New("")}
		}
		return nil, usage("run: %v", err)
	}
	if fs.NArg() > 0 {
		return nil, usage("run: unexpected argument %q", fs.Arg(0))
	}
	if f.json {
		f.format = reports.FormatJSON
	}
	switch f.format {
	case reports.FormatTable, reports.FormatMarkdown, reports.FormatJSON:
	default:
		return nil, usage("run: --format %q: want table, markdown or json", f.format)
	}
	if _, err := cluster.Resolve(f.backend); err != nil {
		return nil, usage("run: --backend: %v", err)
	}
	if f.all {
		for _, n := range scenarios.Names() {
			f.scenarios = append(f.scenarios, n)
		}
	}
	if len(f.scenarios) == 0 {
		return nil, usage("run: --scenario or --all is required (lockstorm list shows the scenarios)")
	}
	return f, nil
}

type job struct {
	spec *scenarios.Spec
	impl string
}

func cmdRun(ctx context.Context, args []string) error {
	f, err := parseRunFlags(args)
	if err != nil {
		return err
	}
	// Everything is loaded and validated before anything starts.
	var jobs []job
	for _, name := range f.scenarios {
		spec, err := scenarios.Load(name)
		if err != nil {
			return &exitError{2, err}
		}
		if f.gatedOnly && !spec.IsGated() {
			continue
		}
		impls := f.impls
		if len(impls) == 0 {
			impls = spec.Impls
		}
		if len(impls) == 0 {
			return usage("run: scenario %s lists no impls; give --impl", spec.Name)
		}
		for _, impl := range impls {
			if _, err := scenarioImpl(impl); err != nil {
				return usage("run: --impl: %v", err)
			}
			jobs = append(jobs, job{spec, impl})
		}
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	backend, _ := cluster.Resolve(f.backend)
	if backend == cluster.Embedded {
		fmt.Fprintln(os.Stderr, "lockstorm: no redis-server on PATH: using the embedded backend (miniredis); install redis-server for real servers")
	}
	tty := isTerminal(os.Stderr)
	var rows []reports.Row
	mismatch := 0
	for i, j := range jobs {
		cfg := scenarios.Config{Impl: j.impl, Seed: f.seed, Backend: backend, Log: log}
		if tty {
			cfg.Progress = func(p scenarios.Progress) {
				fmt.Fprintf(os.Stderr, "\r\x1b[K[%d/%d] %s × %s: %.0f/%.0fs, %d acquisitions", i+1, len(jobs),
					p.Scenario, p.Impl, p.Elapsed.Seconds(), p.Total.Seconds(), p.Acquired)
			}
		}
		out, err := scenarios.Run(ctx, j.spec, cfg)
		if tty {
			fmt.Fprint(os.Stderr, "\r\x1b[K")
		}
		if err != nil {
			return &exitError{2, fmt.Errorf("%s × %s: %w", j.spec.Name, j.impl, err)}
		}
		row := reports.FromOutcome(out)
		if !row.AsExpected {
			mismatch++
		}
		rows = append(rows, row)
		if !tty {
			log.Info("done", "scenario", row.Scenario, "impl", row.Impl, "verdict", row.Verdict)
		}
	}
	if err := reports.Write(os.Stdout, rows, f.format, isTerminal(os.Stdout)); err != nil {
		return &exitError{2, err}
	}
	if mismatch > 0 {
		if f.format != reports.FormatJSON {
			fmt.Fprintf(os.Stdout, "\n%d of %d verdicts differ from the expected ones; replay with:\n", mismatch, len(rows))
			for _, r := range rows {
				if !r.AsExpected {
					fmt.Fprintf(os.Stdout, "  %s\n", r.Replay)
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

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// cmdReplay runs a kept run folder again: its scenario as it ran
// (scenario.yaml, seed included), its lock, backend and seed (summary.json),
// and says whether the verdict class came back and how the first
// violation's time compares. A scheduled spec forces its interleaving, so
// it must reproduce; a random mode is replayed --n times and its rate told.
// Exit 0 when it reproduced (every replay of a scheduled run, at least one
// of a random one), 1 when not, 2 when the folder cannot be replayed.
func cmdReplay(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	n := fs.Int("n", 0, "replays (default 1 for a scheduled run, 5 for a random mode)")
	allowExec := fs.Bool("allow-exec", false, "let the client program that the folder's scenario names (exec:) start: a folder is data")
	operands, err := parseArgs(fs, args, "usage: lockstorm replay [--n N] RUN_DIR   (a run folder that lockstorm run kept)")
	if err != nil {
		return err
	}
	if len(operands) != 1 {
		return usage("usage: lockstorm replay [--n N] RUN_DIR")
	}
	dir := operands[0]
	var sum reports.Summary
	b, err := os.ReadFile(filepath.Join(dir, reports.SummaryFile))
	if err == nil {
		err = json.Unmarshal(b, &sum)
	}
	if err != nil {
		return &exitError{2, fmt.Errorf("replay: %s: %w", dir, err)}
	}
	lim := spec.DefaultLimits()
	lim.AllowExec = *allowExec
	spec, err := spec.LoadWith(filepath.Join(dir, reports.ScenarioFile), lim)
	if err == nil {
		err = spec.NeedsConsent(sum.Row.Impl)
	}
	if err != nil {
		return &exitError{2, fmt.Errorf("replay: %w", err)}
	}
	was := sum.Row
	times := *n
	if times <= 0 {
		times = 1
		if was.Mode == "random" {
			times = 5
		}
	}
	if v := reports.LockstormVersion(); sum.Version != "" && sum.Version != v {
		fmt.Printf("note: recorded by lockstorm %s, replayed by %s\n", sum.Version, v)
	}
	fmt.Printf("replaying %s × %s, seed %d, %s backend, %d time(s): was %s%s\n", was.Scenario, was.Impl, was.Seed, was.Backend, times, was.Verdict, firstAt(was.FirstViolationMs))
	same := 0
	for i := 0; i < times; i++ {
		// A hunt's run was steered by what the seeds before it covered:
		// the same prior, or its seed explores elsewhere.
		out, err := scenarios.Run(ctx, spec, scenarios.Config{Impl: was.Impl, Seed: was.Seed, Backend: was.Backend, Prior: was.Prior})
		if err != nil {
			return &exitError{2, fmt.Errorf("replay: %w", err)}
		}
		row := reports.FromOutcome(out)
		mark := "reproduced"
		if row.Verdict == was.Verdict {
			same++
		} else {
			mark = "NOT reproduced"
		}
		line := fmt.Sprintf("  #%d %s%s: %s", i+1, row.Verdict, firstAt(row.FirstViolationMs), mark)
		if row.FirstViolationMs != nil && was.FirstViolationMs != nil {
			line += fmt.Sprintf(" (first violation %+.1f ms from the original)", *row.FirstViolationMs-*was.FirstViolationMs)
		}
		fmt.Println(line)
	}
	fmt.Printf("%s reproduced %d of %d\n", was.Verdict, same, times)
	if same == 0 || was.Mode != "random" && same < times {
		return &exitError{1, errors.New("")}
	}
	return nil
}

func firstAt(ms *float64) string {
	if ms == nil {
		return ""
	}
	return fmt.Sprintf(" (first violation at %.1f ms)", *ms)
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/reports"
)

// cmdCheck re-runs every checker on saved histories, without Redis, and
// prints the verdicts as `run` would.
func cmdCheck(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := fs.String("format", reports.FormatTable, "table, markdown or json")
	wide := fs.Bool("wide", false, "table and markdown: every figure in its own column")
	fenced := fs.Bool("fenced", false, "for a bare history.jsonl: the resource was fenced")
	if err := fs.Parse(args); err != nil {
		return usage("check: %v", err)
	}
	if fs.NArg() == 0 {
		return usage("usage: lockstorm check RUN_DIR|history.jsonl ...")
	}
	var rows []reports.Row
	mismatch := 0
	for _, path := range fs.Args() {
		sum, h, err := reports.ReadRunDir(path)
		if err != nil {
			return &exitError{2, fmt.Errorf("check: %w", err)}
		}
		opts := checker.Options{Fenced: *fenced}
		row := reports.Row{Scenario: path, Impl: "-", Backend: "-", Expected: checker.Safe}
		if sum != nil {
			opts, row = sum.Options, sum.Row
		}
		row.SetResult(checker.Check(h, opts))
		if !row.AsExpected {
			mismatch++
		}
		rows = append(rows, row)
	}
	if err := reports.WriteTable(os.Stdout, rows, reports.TableOptions{Format: *format, Wide: *wide, Color: isTerminal(os.Stdout)}); err != nil {
		return &exitError{2, err}
	}
	if mismatch > 0 {
		return &exitError{1, errors.New("")}
	}
	return nil
}

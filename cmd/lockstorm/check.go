package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/reports"
)

// cmdCheck re-runs every checker on saved histories, without Redis, and
// prints the verdicts as `run` would, every figure recomputed from the
// history alone. A damaged history (bad lines, duplicates, lost lines, no
// end record) is inconclusive with its problems by line, unless its
// well-formed part shows a violation.
const checkUsage = "usage: lockstorm check [--format table|markdown|json] RUN_DIR|history.jsonl ..."

func cmdCheck(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	format := fs.String("format", reports.FormatTable, "table, markdown or json")
	asJSON := fs.Bool("json", false, "print JSON rows (same as --format json)")
	wide := fs.Bool("wide", false, "table and markdown: every figure in its own column")
	fenced := fs.Bool("fenced", false, "for a bare history.jsonl: the resource was fenced")
	paths, err := parseArgs(fs, args, checkUsage)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usage("%s", checkUsage)
	}
	if *asJSON {
		*format = reports.FormatJSON
	}
	var rows []reports.Row
	mismatch := 0
	for _, path := range paths {
		sum, p, err := reports.ReadRunDirChecked(path)
		if err != nil {
			return &exitError{2, fmt.Errorf("check: %w", err)}
		}
		// A file no line of which is an entry is not a damaged history but
		// the wrong file: bad input, not an inconclusive verdict.
		if len(p.History) == 0 {
			return &exitError{2, fmt.Errorf("check: %s: not a history (no line is a history entry%s)", path, firstProblem(p))}
		}
		// The history judges itself: its header says what the run was
		// and how to check it, and every figure is recomputed from its
		// entries. summary.json is read only for a history without a header
		// (written before headers existed), and then only for who ran what.
		opts := history.Options{Fenced: *fenced}
		row := reports.Row{Identity: history.Identity{Scenario: path, Impl: "-", Backend: "-", Expected: checker.Safe}}
		switch m := p.Meta(); {
		case m != nil:
			opts, row = m.Options, reports.FromMeta(m)
		case sum != nil:
			opts = sum.Options
			row = reports.Row{Identity: sum.Row.Identity, Replay: sum.Row.Replay}
		}
		if *fenced {
			opts.Fenced = true
		}
		row.RunDir = path
		res := checker.CheckParsed(p, opts)
		row.SetResult(res)
		row.AsExpected = res.AsExpected(row.Expected)
		if row.Fails() {
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

// firstProblem is the first unreadable line of p, for the error message.
func firstProblem(p history.Parsed) string {
	if len(p.Problems) == 0 {
		return ": the file is empty"
	}
	return "; " + p.Problems[0].String()
}

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios"
)

// report prints the verdicts, then writes the suite page, the shard's
// results, the run folders and JUnit. The verdicts come first: a failed
// write is reported below the table (exit 2) instead of swallowing them.
// suite says more than one run was asked for (a page then links them);
// note, when set, says the suite was interrupted, above the summary and in
// the page's title.
func report(f *runFlags, jobs []job, results []*scenarios.Outcome, backend string, started time.Time, sh shard, suite bool, note string, skipped []skip) error {
	now := time.Now()
	rows, cases, kept, mismatch, missed := collectRows(f, results, now)
	if suite && f.keep != reports.KeepNone {
		// A suite gets a page linking every run folder it kept.
		index, err := writeSuitePage(f, rows, results, backend, now, started, note, skipped)
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
func writeSuitePage(f *runFlags, rows []reports.Row, results []*scenarios.Outcome, backend string, now, started time.Time, note string, skipped []skip) (string, error) {
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
	for _, s := range skipped {
		info.Skipped = append(info.Skipped, s.String())
	}
	err := reports.WriteSuiteFile(index, suite, info)
	return index, err
}

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

package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/reports"
)

// cmdReport rebuilds the suite page from a folder of run folders (what `run
// --out DIR` kept): the matrix and, per implementation, where its
// violations began relative to the faults. It prints that last part too.
func cmdReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	out := fs.String("o", "", "write the page here (default DIR/index.html, the first DIR's)")
	format := fs.String("format", "table", "the merged table: table, markdown or json")
	zoo := fs.String("zoo", "", "also write the zoo page here: each implementation × scenario of the DIRs' results.jsonl, coloured by its worst verdict, linked to its witness (make zoo-page)")
	dirs, err := parseArgs(fs, args, "usage: lockstorm report [-o FILE] [--zoo FILE] DIR...   (DIRs hold run folders, as lockstorm run --out DIR keeps them; shards' results.jsonl are merged)")
	if err != nil {
		return err
	}
	if len(dirs) < 1 {
		return usage("usage: lockstorm report [-o FILE] [--zoo FILE] DIR...")
	}
	path := *out
	if path == "" {
		path = filepath.Join(dirs[0], reports.IndexFile)
	}
	var runs []reports.SuiteRun
	var info reports.SuiteInfo
	for _, dir := range dirs {
		r, in, err := loadRunFolders(dir, filepath.Dir(path))
		if err != nil {
			return &exitError{2, fmt.Errorf("report: %w", err)}
		}
		runs = append(runs, r...)
		info = mergeInfo(info, in, len(dirs) > 1)
	}
	// Shards write every row (kept folders or not): the merged table, found
	// k of N per cell, and an exit as the gate's; the page shows the runs
	// whose folders were not kept from their rows.
	rows, err := readResults(dirs)
	if err != nil {
		return &exitError{2, fmt.Errorf("report: %w", err)}
	}
	if *zoo != "" {
		if err := reports.WriteZooFile(*zoo, rows, "The zoo: libraries × scenarios"); err != nil {
			return &exitError{2, fmt.Errorf("report: %w", err)}
		}
		fmt.Printf("zoo page: %s (%d rows)\n", *zoo, len(rows))
	}
	runs, info = withResultRows(runs, info, rows)
	for _, d := range dirs {
		if st, err := os.Stat(filepath.Join(d, ResultsFile)); err == nil && st.ModTime().After(info.Date) {
			info.Date = st.ModTime() // a shard that kept no folder dates the page by its results
		}
	}
	if err := reports.WriteSuiteFile(path, runs, info); err != nil {
		return &exitError{2, fmt.Errorf("report: %w", err)}
	}
	if err := reports.WriteBreakdown(os.Stdout, runs); err != nil {
		return &exitError{2, err}
	}
	fmt.Printf("\nsuite page: %s (%d runs)\n", path, len(runs))
	if len(rows) == 0 {
		return nil
	}
	aggs := reports.Aggregate(rows)
	sort.SliceStable(aggs, func(i, j int) bool {
		if aggs[i].Scenario != aggs[j].Scenario {
			return aggs[i].Scenario < aggs[j].Scenario
		}
		return aggs[i].Impl < aggs[j].Impl
	})
	fmt.Println()
	if err := reports.WriteAggregate(os.Stdout, aggs, *format); err != nil {
		return &exitError{2, err}
	}
	unexpected := 0
	for _, r := range rows {
		if !r.AsExpected && !r.Missed() {
			unexpected++
		}
	}
	fmt.Printf("merged: %d runs from %d folder(s), %d cells, %d unexpected\n", len(rows), len(dirs), len(aggs), unexpected)
	if unexpected > 0 {
		return &exitError{1, errors.New("")}
	}
	return nil
}

// withResultRows adds to runs (from kept folders) every results row whose
// run has no folder among them, in the page's order (scenario, lock,
// seed), and completes info from the rows: the seeds per cell, the
// backends, the lockstorm version.
func withResultRows(runs []reports.SuiteRun, info reports.SuiteInfo, rows []reports.Row) ([]reports.SuiteRun, reports.SuiteInfo) {
	type key struct {
		scen, impl string
		seed       uint64
	}
	have := map[key]bool{}
	for _, r := range runs {
		have[key{r.Row.Scenario, r.Row.Impl, r.Row.Seed}] = true
	}
	seeds := map[[2]string]map[uint64]bool{}
	backends := map[string]bool{}
	for _, r := range runs {
		backends[r.Row.Backend] = true
	}
	for _, row := range rows {
		k := key{row.Scenario, row.Impl, row.Seed}
		if !have[k] {
			have[k] = true
			runs = append(runs, reports.RowSuiteRun(row))
		}
		c := [2]string{row.Scenario, row.Impl}
		if seeds[c] == nil {
			seeds[c] = map[uint64]bool{}
		}
		seeds[c][row.Seed] = true
		info.Seeds = max(info.Seeds, len(seeds[c]))
		backends[row.Backend] = true
	}
	var bs []string
	for b := range backends {
		if b != "" {
			bs = append(bs, b)
		}
	}
	sort.Strings(bs)
	if len(bs) > 0 {
		info.Backend = strings.Join(bs, ", ")
	}
	sortSuiteRuns(runs)
	return runs, info
}

// mergeInfo combines the suite facts of several folders.
func mergeInfo(a, b reports.SuiteInfo, many bool) reports.SuiteInfo {
	if a.Title == "" {
		a = b
		if many {
			a.Title = "lockstorm report: merged shards"
		}
		return a
	}
	a.Seeds = max(a.Seeds, b.Seeds)
	if b.Date.After(a.Date) {
		a.Date = b.Date
	}
	return a
}

// loadRunFolders reads every run folder directly under dir. A scenario ×
// implementation × seed run more than once keeps its latest folder (names
// begin with the time).
func loadRunFolders(dir, root string) ([]reports.SuiteRun, reports.SuiteInfo, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, reports.SuiteInfo{}, err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	type key struct {
		scen, impl string
		seed       uint64
	}
	idx := map[key]int{}
	var runs []reports.SuiteRun
	info := reports.SuiteInfo{Title: "lockstorm report: " + dir, Version: reports.LockstormVersion()}
	seeds := map[key]map[uint64]bool{}
	backends := map[string]bool{}
	for _, e := range ents {
		sub := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(sub, reports.SummaryFile)); err != nil {
			continue
		}
		sum, h, err := reports.ReadRunDir(sub)
		if err != nil {
			return nil, info, fmt.Errorf("%s: %w", sub, err)
		}
		res := sum.Result
		if res.Overlaps > 0 && len(res.OverlapSpans) == 0 {
			// A folder from before overlap clusters were recorded.
			res = checker.Check(h, sum.Options)
		}
		row := sum.Row
		row.RunDir = sub
		if st, err := e.Info(); err == nil && st.ModTime().After(info.Date) {
			info.Date = st.ModTime()
		}
		k := key{row.Scenario, row.Impl, row.Seed}
		sr := reports.NewSuiteRun(row, h, res, root)
		if i, ok := idx[k]; ok {
			runs[i] = sr
		} else {
			idx[k] = len(runs)
			runs = append(runs, sr)
		}
		ks := key{row.Scenario, row.Impl, 0}
		if seeds[ks] == nil {
			seeds[ks] = map[uint64]bool{}
		}
		seeds[ks][row.Seed] = true
		info.Seeds = max(info.Seeds, len(seeds[ks]))
		backends[row.Backend] = true
	}
	// Folder names begin with the time: order the page by scenario, then
	// implementation, then seed, as a suite is listed.
	sortSuiteRuns(runs)
	if len(runs) == 0 {
		if _, err := os.Stat(filepath.Join(dir, ResultsFile)); err == nil {
			return nil, info, nil // a shard whose runs were all as expected kept none
		}
		return nil, info, fmt.Errorf("%s has no run folders (folders with %s)", dir, reports.SummaryFile)
	}
	for b := range backends {
		if info.Backend != "" {
			info.Backend += ", "
		}
		info.Backend += b
	}
	return runs, info, nil
}

// sortSuiteRuns orders a page's runs as a suite is listed: by scenario,
// then implementation, then seed.
func sortSuiteRuns(runs []reports.SuiteRun) {
	sort.SliceStable(runs, func(i, j int) bool {
		a, b := runs[i].Row, runs[j].Row
		if a.Scenario != b.Scenario {
			return a.Scenario < b.Scenario
		}
		if a.Impl != b.Impl {
			return a.Impl < b.Impl
		}
		return a.Seed < b.Seed
	})
}

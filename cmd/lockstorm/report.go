package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/reports"
)

// cmdReport rebuilds the suite page from a folder of run folders (what `run
// --out DIR` kept): the matrix and, per implementation, where its
// violations began relative to the faults. It prints that last part too.
func cmdReport(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "write the page here (default DIR/index.html)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Println("usage: lockstorm report [-o FILE] DIR   (DIR holds run folders, as lockstorm run --out DIR keeps them)")
			return nil
		}
		return usage("report: %v", err)
	}
	if fs.NArg() != 1 {
		return usage("usage: lockstorm report [-o FILE] DIR")
	}
	dir := fs.Arg(0)
	path := *out
	if path == "" {
		path = filepath.Join(dir, reports.IndexFile)
	}
	runs, info, err := loadRunFolders(dir, filepath.Dir(path))
	if err != nil {
		return &exitError{2, fmt.Errorf("report: %w", err)}
	}
	if err := reports.WriteSuiteFile(path, runs, info); err != nil {
		return &exitError{2, fmt.Errorf("report: %w", err)}
	}
	if err := reports.WriteBreakdown(os.Stdout, runs); err != nil {
		return &exitError{2, err}
	}
	fmt.Printf("\nsuite page: %s (%d runs)\n", path, len(runs))
	return nil
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
	if len(runs) == 0 {
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

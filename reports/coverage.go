package reports

import "github.com/lockstorm/lockstorm/scenarios"

// Coverage is the battery's coverage: the union, per lock, of the
// combinations its rows explored (Row.Combos). Its Line is the summary's
// "coverage: 212 of 260 combinations", "" when no row explored.
func Coverage(rows []Row) *scenarios.CoverageSet {
	set := scenarios.NewCoverageSet()
	for _, r := range rows {
		if len(r.Combos) > 0 {
			set.Add(r.Impl, r.Combos)
		}
	}
	return set
}

// implCoverage is each lock's line of coverage on the suite page.
func implCoverage(runs []SuiteRun) map[string]string {
	by := map[string][]Row{}
	for _, r := range runs {
		by[r.Row.Impl] = append(by[r.Row.Impl], r.Row)
	}
	out := map[string]string{}
	for impl, rows := range by {
		out[impl] = Coverage(rows).Line()
	}
	return out
}

package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Agg is one scenario × implementation over many seeds: how often the
// verdict was the expected one, which is what decides whether a random
// mode can be gated.
type Agg struct {
	Scenario string         `json:"scenario"`
	Impl     string         `json:"impl"`
	Mode     string         `json:"mode"`
	Gated    bool           `json:"gated"`
	Expected string         `json:"expected"`
	Runs     int            `json:"runs"`
	Matched  int            `json:"matched"`
	Verdicts map[string]int `json:"verdicts"`
	// FirstViolationMs are the per-seed times to the first violation.
	FirstViolationMs []float64 `json:"first_violation_ms"`
	Seeds            []uint64  `json:"seeds"`
}

// Aggregate groups rows by scenario and implementation, in first-seen order.
func Aggregate(rows []Row) []Agg {
	idx := map[string]int{}
	var out []Agg
	for _, r := range rows {
		k := r.Scenario + "\x00" + r.Impl
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Agg{Scenario: r.Scenario, Impl: r.Impl, Mode: r.Mode, Gated: r.Gated, Expected: r.Expected, Verdicts: map[string]int{}})
		}
		a := &out[i]
		a.Runs++
		if r.AsExpected {
			a.Matched++
		}
		a.Verdicts[r.Verdict]++
		a.Seeds = append(a.Seeds, r.Seed)
		if r.FirstViolationMs != nil {
			a.FirstViolationMs = append(a.FirstViolationMs, *r.FirstViolationMs)
		}
	}
	return out
}

func medianMax(v []float64) (float64, float64) {
	if len(v) == 0 {
		return 0, 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2], s[len(s)-1]
}

// WriteAggregate prints aggregates as a table, markdown or JSON lines.
func WriteAggregate(w io.Writer, aggs []Agg, format string) error {
	if format == FormatJSON {
		enc := json.NewEncoder(w)
		for _, a := range aggs {
			if err := enc.Encode(a); err != nil {
				return err
			}
		}
		return nil
	}
	h := []string{"scenario / impl", "expected", "as expected", "first viol p50/max ms", "verdicts"}
	if format == FormatMarkdown {
		t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewMarkdown()),
			tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithRowAutoWrap(tw.WrapNone))
		t.Header(toAny(append([]string{"scenario", "mode", "impl"}, h[1:]...))...)
		for _, a := range aggs {
			c := aggCells(a)
			if err := t.Append(mdEscape(append([]string{a.Scenario, a.Mode}, c...))); err != nil {
				return err
			}
		}
		return t.Render()
	}
	// The text table has the verdict table's layout (grouped, see table.go).
	g := grouped{head: h}
	for _, a := range aggs {
		mark := "ok"
		if a.Matched < a.Runs {
			mark = "DIFF"
		}
		c := aggCells(a)
		g.rows = append(g.rows, groupedRow{group: scenarioGroup(a.Scenario, a.Mode), cells: c[:4],
			colors: []string{"", "", markColor(mark), ""}, last: c[4]})
	}
	return g.write(w, false)
}

// aggCells is an aggregate's impl, expected verdict, as-expected count,
// first-violation times and verdict counts.
func aggCells(a Agg) []string {
	var vs []string
	for v, n := range a.Verdicts {
		vs = append(vs, fmt.Sprintf("%s×%d", v, n))
	}
	sort.Strings(vs)
	fv := "-"
	if len(a.FirstViolationMs) > 0 {
		med, mx := medianMax(a.FirstViolationMs)
		fv = fmt.Sprintf("%.1f / %.1f", med, mx)
	}
	exp := a.Expected
	if exp == "" {
		exp = "—"
	}
	return []string{a.Impl, exp, fmt.Sprintf("%d/%d", a.Matched, a.Runs), fv, strings.Join(vs, " ")}
}

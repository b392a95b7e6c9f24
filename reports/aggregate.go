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
	opts := []tablewriter.Option{tablewriter.WithHeaderAutoFormat(tw.Off)}
	if format == FormatMarkdown {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
	}
	t := tablewriter.NewTable(w, opts...)
	t.Header("scenario", "impl", "mode", "expected", "as expected", "verdicts", "first viol p50 ms", "first viol max ms")
	for _, a := range aggs {
		var vs []string
		for v, n := range a.Verdicts {
			vs = append(vs, fmt.Sprintf("%s×%d", v, n))
		}
		sort.Strings(vs)
		med, mx := medianMax(a.FirstViolationMs)
		fv := func(x float64) string {
			if len(a.FirstViolationMs) == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f", x)
		}
		exp := a.Expected
		if exp == "" {
			exp = "—"
		}
		if err := t.Append([]string{a.Scenario, a.Impl, a.Mode, exp, fmt.Sprintf("%d/%d", a.Matched, a.Runs),
			strings.Join(vs, " "), fv(med), fv(mx)}); err != nil {
			return err
		}
	}
	return t.Render()
}

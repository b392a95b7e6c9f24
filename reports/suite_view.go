package reports

import (
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/checker"
)

// suitePage is what templates/suite.html draws.
type suitePage struct {
	CSS               template.CSS
	OnError, Rendered template.JS
	Title             string
	// Meta are the header's facts, "label <b>value</b>" each.
	Meta                 []metaItem
	Runs, OK, DIFF, Miss int
	NoExpectation        int
	// Coverage is the battery's coverage line (Coverage), "" without exploration.
	Coverage string
	// Skipped are the scenarios the backend could not run, and why.
	Skipped  []string
	Impls    []implView
	Rows     []matrixRow
	Sections []stripSection
}

type metaItem struct{ Label, Value string }

// implView is an implementation's column head and strip section, with
// its coverage line when it was explored.
type implView struct{ Name, Anchor, Coverage string }

type matrixRow struct {
	Scenario, Mode string
	// Cells has one cell per implementation, nil where it did not run.
	Cells []*cellView
}

// cellView is one scenario × implementation of the matrix.
type cellView struct {
	Verdict, MarkClass, Sym, Tip string
	Scale                        *scaleView
	// Link is the single run's page; Seeds lists the runs when there
	// are several, with Word, Found and N saying how many found the
	// expected verdict.
	Link     string
	Multi    bool
	Word     string
	Found, N int
	Seeds    []seedView
}

// scaleView says the cell's run was stretched to fit its lock's clock.
type scaleView struct{ Title, Factor string }

type seedView struct {
	Class, Link, Verdict string
	Seed                 uint64
}

type stripSection struct {
	implView
	Strips []stripView
}

// stripView is one scenario of one implementation: a line per seed over
// that run's time.
type stripView struct {
	Width, Height    float64
	Scenario         string
	LabelY, VerdictX float64
	VerdictClass     string
	VerdictText      string
	Lines            []stripLine
	AxisY, AxisX0    float64
	AxisX1           float64
	Duration, Why    string
}

type stripLine struct {
	Bg       box
	Faults   []box
	Starved  *box
	Overlaps []box
	First    *firstTick
}

// firstTick is the first violation's black tick, as a path.
type firstTick struct{ D, Title string }

// WriteSuite draws the suite page: a matrix of scenarios × implementations,
// each cell coloured by verdict and marked against the expectation, its
// evidence on hover, linking to the run's timeline (with several seeds: how
// many found the expected verdict, and a link per seed); then, per
// implementation, a strip per scenario with the fault windows and where the
// violations were. One self-contained file: inline CSS and SVG, a few lines
// of script that only mark the page as rendered, no network.
func WriteSuite(w io.Writer, runs []SuiteRun, info SuiteInfo) error {
	if info.Title == "" {
		info.Title = "lockstorm suite"
	}
	g := groupRuns(runs)
	p := suitePage{CSS: template.CSS(suiteCSS), OnError: template.JS(strings.TrimSpace(onErrorJS)), Rendered: template.JS(strings.TrimSpace(renderedJS)),
		Title: info.Title, Runs: len(runs), OK: g.counts["ok"], DIFF: g.counts["DIFF"], Miss: g.counts["miss"],
		NoExpectation: g.counts[NoExpectation], Skipped: info.Skipped}
	p.Meta = []metaItem{{"backend", orDash(info.Backend)}, {"seeds", strconv.Itoa(max(info.Seeds, 1))},
		{"date", info.Date.Format("2006-01-02 15:04:05 MST")}, {"lockstorm", orDash(info.Version)}}
	if info.Wall > 0 {
		p.Meta = append(p.Meta, metaItem{"wall time", info.Wall.Round(100 * time.Millisecond).String()})
	} else {
		p.Meta = append(p.Meta, metaItem{"runs' total time", fmt.Sprintf("%.1f s", g.total)})
	}
	rows := make([]Row, len(runs))
	for i, r := range runs {
		rows[i] = r.Row
	}
	p.Coverage = Coverage(rows).Line()
	icov := implCoverage(runs)
	for _, im := range g.impls {
		p.Impls = append(p.Impls, implView{im, anchor(im), icov[im]})
	}
	for _, sc := range g.scens {
		r := matrixRow{Scenario: sc, Mode: g.modes[sc]}
		for _, im := range g.impls {
			var cv *cellView
			if c := g.cells[[2]string{sc, im}]; c != nil {
				cv = c.view()
			}
			r.Cells = append(r.Cells, cv)
		}
		p.Rows = append(p.Rows, r)
	}
	for _, iv := range p.Impls {
		s := stripSection{implView: iv}
		for _, sc := range g.scens {
			if c := g.cells[[2]string{sc, iv.Name}]; c != nil {
				s.Strips = append(s.Strips, c.strip(sc))
			}
		}
		p.Sections = append(p.Sections, s)
	}
	return render(w, "suite.html", p)
}

// view is the cell's matrix entry: its worst verdict, its mark, each run's
// evidence as the tooltip, and its link or its seeds.
func (c *cell) view() *cellView {
	first := c.runs[0].Row
	m := c.mark()
	v := &cellView{Verdict: c.worst(), MarkClass: markClass(m), Sym: map[string]string{"ok": "✓", "DIFF": "✗", "miss": "?", NoExpectation: ""}[m]}
	var tip []string
	for _, r := range c.runs {
		t := fmt.Sprintf("%s: %s (expected %s)", r.Row.Verdict, evidenceOf(r.Row), expectedOf(r.Row))
		if len(c.runs) > 1 {
			t = fmt.Sprintf("seed %d: %s", r.Row.Seed, t)
		}
		tip = append(tip, t)
	}
	v.Tip = strings.Join(tip, "\n")
	if ts := first.TimeScale; ts.Scaled() {
		// Visible in the matrix, not only in the tooltip: the cell's run
		// was stretched to fit its lock's clock.
		v.Scale = &scaleView{ts.String(), strconv.FormatFloat(ts.Factor, 'g', 4, 64)}
	}
	if len(c.runs) == 1 {
		v.Link = c.runs[0].Link
		return v
	}
	v.Multi, v.Word, v.Found, v.N = true, "found", c.found(), len(c.runs)
	switch first.Expected {
	case checker.Safe:
		v.Word = "safe"
	case "":
		v.Word = "no expectation;"
	}
	for _, r := range c.runs {
		v.Seeds = append(v.Seeds, seedView{"s-" + r.Row.Verdict, r.Link, r.Row.Verdict, r.Row.Seed})
	}
	return v
}

// Strip geometry (px).
const (
	stLabelW = 290.0
	stPlotW  = 560.0
	stLineH  = 12.0
	stAxisH  = 13.0
)

// strip lays out one scenario of the cell's implementation: a line per
// seed over that run's time, fault windows, overlap clusters, the
// starvation of a deadlock and the first violation.
func (c *cell) strip(scen string) stripView {
	n := len(c.runs)
	var dur int64 = 1
	for _, r := range c.runs {
		dur = max(dur, r.DurationNs)
	}
	x := func(ns int64) float64 {
		return stLabelW + stPlotW*float64(min(max(ns, 0), dur))/float64(dur)
	}
	v, m := c.worst(), c.mark()
	s := stripView{Width: stLabelW + stPlotW + 10, Height: stLineH*float64(n) + stAxisH + 2, Scenario: scen,
		LabelY: stLineH*float64(n)/2 + 4, VerdictX: stLabelW - 8, VerdictClass: "t-" + v,
		VerdictText: v + map[string]string{"ok": "", "DIFF": " ✗", "miss": " ?"}[m],
		AxisY:       stLineH*float64(n) + stAxisH - 2, AxisX0: stLabelW, AxisX1: stLabelW + stPlotW, Duration: span(dur),
		Why: relativeToFaults(c.runs)}
	for i, r := range c.runs {
		y := stLineH * float64(i)
		l := stripLine{Bg: box{stLabelW, y + 1, x(r.DurationNs) - stLabelW, stLineH - 2, ""}}
		for _, f := range r.Faults {
			l.Faults = append(l.Faults, box{x(f.From), y, max(x(f.To)-x(f.From), 1.5), stLineH,
				fmt.Sprintf("fault: %s, %s – %s", f.Desc, ms(f.From), ms(f.To))})
		}
		if st := r.Starved; st != nil {
			l.Starved = &box{x(st.FromNs), y + 3, max(x(st.ToNs)-x(st.FromNs), 1.5), stLineH - 6,
				fmt.Sprintf("%s starved %s from %s", st.Key, span(st.ToNs-st.FromNs), ms(st.FromNs))}
		}
		for _, o := range r.Overlaps {
			l.Overlaps = append(l.Overlaps, box{x(o.FromNs), y + 2, max(x(o.ToNs)-x(o.FromNs), 2), stLineH - 4,
				fmt.Sprintf("%d holds of %s overlapped from %s to %s (%s with two holders)", o.Holds, o.Key, ms(o.FromNs), ms(o.ToNs), span(o.OverlapNs))})
		}
		if r.FirstNs >= 0 {
			l.First = &firstTick{fmt.Sprintf("M%.1f %.0f v%.0f", x(r.FirstNs), y, stLineH),
				fmt.Sprintf("first violation at %s: %s", ms(r.FirstNs), evidenceOf(r.Row))}
		}
		s.Lines = append(s.Lines, l)
	}
	return s
}

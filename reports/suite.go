package reports

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/checker"
)

// IndexFile is the suite page a multi-run --out DIR gets.
const IndexFile = "index.html"

// Version is lockstorm's version, set at build time with
// -ldflags "-X github.com/lockstorm/lockstorm/reports.Version=v1.2.3";
// empty, LockstormVersion reads the module's build information.
var Version string

// LockstormVersion is Version, or the module version and VCS revision Go
// stamped into the binary ("(devel)" under go run without VCS stamping).
func LockstormVersion() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " " + rev + modified
	}
	return v
}

// SuiteRun is one run of a suite as the page draws it: its row, and from its
// history the fault windows and where the violations were.
type SuiteRun struct {
	Row Row
	// Link is the run's page relative to the suite page (its timeline.html,
	// else its folder), empty when no folder was kept.
	Link string
	// DurationNs is the history's length; Faults its fault windows.
	DurationNs int64
	Faults     []faultWindow
	// Overlaps are the clusters of overlapping holds (the first
	// checker.MaxSpans); Starved the longest starvation of a deadlock.
	Overlaps []checker.Span
	Starved  *checker.Span
	// FirstNs is the first violation's time (-1: none).
	FirstNs int64
	// RowOnly: the run is known by its results row alone (RowSuiteRun); its
	// faults were not recorded, so nothing may be said of them.
	RowOnly bool
}

// NewSuiteRun gathers what the page draws of one run. root is the suite
// page's folder: the link is made relative to it.
func NewSuiteRun(row Row, h checker.History, res checker.Result, root string) SuiteRun {
	sr := SuiteRun{Row: row, Faults: faultWindows(h), Overlaps: res.OverlapSpans, FirstNs: res.FirstViolationNs,
		DurationNs: res.DurationNs}
	for _, op := range h {
		sr.DurationNs = max(sr.DurationNs, op.Time)
	}
	if res.Verdict == checker.Deadlock && res.StarvedKey != "" {
		sr.Starved = &checker.Span{Key: res.StarvedKey, FromNs: res.StarvedFromNs,
			ToNs: res.StarvedFromNs + int64(res.LongestStarvedMs*1e6)}
	}
	if row.Verdict == checker.Safe { // a fenced overlap the resource survived is no violation
		sr.FirstNs = -1
	}
	sr.Link = runLink(root, row.RunDir)
	return sr
}

// RowSuiteRun is a run known only by its results row: a shard's safe and
// as-expected runs, whose folders it did not keep. Its cell and first
// violation are on the page; its strip has no fault windows, none having
// been recorded outside the folder.
func RowSuiteRun(row Row) SuiteRun {
	sr := SuiteRun{Row: row, FirstNs: -1, DurationNs: int64(row.ElapsedS * 1e9), RowOnly: true}
	if row.FirstViolationMs != nil && row.Verdict != checker.Safe {
		sr.FirstNs = int64(*row.FirstViolationMs * 1e6)
		sr.DurationNs = max(sr.DurationNs, sr.FirstNs)
	}
	return sr
}

// runLink is dir's timeline.html (or dir itself) relative to root, as a URL
// path, so the page works from disk wherever the folder is moved.
func runLink(root, dir string) string {
	if dir == "" {
		return ""
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = dir
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	link := strings.Join(parts, "/")
	if _, err := os.Stat(filepath.Join(dir, TimelineFile)); err == nil {
		return link + "/" + TimelineFile
	}
	return link + "/"
}

// SuiteInfo is the suite page's header.
type SuiteInfo struct {
	Backend string
	Seeds   int
	Date    time.Time
	Version string
	// Wall is the suite's wall time (0: unknown, e.g. a page rebuilt from
	// run folders; the page then says the runs' total).
	Wall time.Duration
	// Title defaults to "lockstorm suite".
	Title string
}

// WriteSuiteFile writes the suite page to path.
func WriteSuiteFile(path string, runs []SuiteRun, info SuiteInfo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteSuite(f, runs, info); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cell is one scenario × implementation over its seeds.
type cell struct {
	runs []SuiteRun
}

// worst is the most serious verdict of the cell's runs.
func (c *cell) worst() string {
	rank := map[string]int{checker.Safe: 0, checker.Inconclusive: 1, checker.Deadlock: 2, checker.Unsafe: 3}
	w := ""
	for _, r := range c.runs {
		if w == "" || rank[r.Row.Verdict] > rank[w] {
			w = r.Row.Verdict
		}
	}
	return w
}

// mark is DIFF if any run is a regression, miss if any missed, — when the
// runs had no expectation, else ok.
func (c *cell) mark() string {
	m := "ok"
	for _, r := range c.runs {
		switch r.Row.Mark() {
		case "DIFF":
			return "DIFF"
		case "miss":
			m = "miss"
		case NoExpectation:
			if m == "ok" {
				m = NoExpectation
			}
		}
	}
	return m
}

// found counts the runs whose verdict is the expected one.
func (c *cell) found() int {
	n := 0
	for _, r := range c.runs {
		if r.Row.AsExpected {
			n++
		}
	}
	return n
}

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
	var b strings.Builder
	writeSuiteHeader(&b, runs, info, g)
	g.writeMatrix(&b)
	g.writeStrips(&b)
	b.WriteString(`<script>(function(){var t=document.querySelector('table.matrix');` +
		`var ok=t&&t.getBoundingClientRect().width>0&&document.querySelectorAll('svg.strip').length>0;` +
		`document.body.setAttribute('data-cells',String(document.querySelectorAll('td.cell').length));` +
		`document.body.setAttribute('data-strips',String(document.querySelectorAll('svg.strip').length));` +
		`if(ok&&!document.documentElement.hasAttribute('data-error'))document.body.setAttribute('data-rendered','ok');})();</script>` + "\n")
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// suiteGroups is the runs grouped into cells by (scenario, implementation),
// in the order they first appear.
type suiteGroups struct {
	scens, impls []string
	modes        map[string]string
	cells        map[[2]string]*cell
	total        float64        // the runs' summed time
	counts       map[string]int // runs by mark
}

func groupRuns(runs []SuiteRun) *suiteGroups {
	g := &suiteGroups{modes: map[string]string{}, cells: map[[2]string]*cell{}, counts: map[string]int{}}
	for _, r := range runs {
		k := [2]string{r.Row.Scenario, r.Row.Impl}
		c := g.cells[k]
		if c == nil {
			c = &cell{}
			g.cells[k] = c
		}
		c.runs = append(c.runs, r)
		if _, ok := g.modes[r.Row.Scenario]; !ok {
			g.modes[r.Row.Scenario] = r.Row.Mode
			g.scens = append(g.scens, r.Row.Scenario)
		}
		if !contains(g.impls, r.Row.Impl) {
			g.impls = append(g.impls, r.Row.Impl)
		}
		g.total += r.Row.ElapsedS
		g.counts[r.Row.Mark()]++
	}
	for _, c := range g.cells {
		sort.SliceStable(c.runs, func(i, j int) bool { return c.runs[i].Row.Seed < c.runs[j].Row.Seed })
	}
	return g
}

// writeSuiteHeader writes the head, the title, the run's facts, the counts
// by mark and the legend.
func writeSuiteHeader(b *strings.Builder, runs []SuiteRun, info SuiteInfo, g *suiteGroups) {
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n", esc(info.Title))
	// The first script records any page error, so a headless check sees it.
	b.WriteString("<script>window.addEventListener('error',function(e){document.documentElement.setAttribute('data-error',String(e.message||e))});</script>\n")
	b.WriteString(suiteCSS)
	b.WriteString("</head><body>\n")
	fmt.Fprintf(b, "<h1>%s</h1>\n<p class=\"meta\">", esc(info.Title))
	meta := []string{"backend <b>" + esc(orDash(info.Backend)) + "</b>",
		fmt.Sprintf("seeds <b>%d</b>", max(info.Seeds, 1)),
		"date <b>" + esc(info.Date.Format("2006-01-02 15:04:05 MST")) + "</b>",
		"lockstorm <b>" + esc(orDash(info.Version)) + "</b>"}
	if info.Wall > 0 {
		meta = append(meta, "wall time <b>"+esc(info.Wall.Round(100*time.Millisecond).String())+"</b>")
	} else {
		meta = append(meta, fmt.Sprintf("runs' total time <b>%.1f s</b>", g.total))
	}
	b.WriteString(strings.Join(meta, " · "))
	fmt.Fprintf(b, "</p>\n<p class=\"meta\">%d runs: <b>%d</b> as expected, <b class=\"diff\">%d DIFF</b>, %d miss (an exploratory run that did not find its failure on that seed), %d without an expectation</p>\n",
		len(runs), g.counts["ok"], g.counts["DIFF"], g.counts["miss"], g.counts[NoExpectation])
	b.WriteString(`<div class="legend"><span><i class="sw v-safe"></i>safe</span><span><i class="sw v-unsafe"></i>unsafe</span>` +
		`<span><i class="sw v-deadlock"></i>deadlock</span><span><i class="sw v-inconclusive"></i>inconclusive</span>` +
		`<span><i class="sw m-ok"></i>✓ as expected</span><span><i class="sw m-DIFF"></i>✗ DIFF: not as expected</span>` +
		`<span><i class="sw m-miss"></i>? miss</span><span>— no expectation</span><span>hover a cell for its evidence; click for its timeline</span></div>` + "\n")

}

// writeMatrix writes the table of cells, a row per scenario and a column
// per implementation.
func (g *suiteGroups) writeMatrix(b *strings.Builder) {
	b.WriteString("<table class=\"matrix\"><thead><tr><th>scenario</th><th>mode</th>")
	for _, im := range g.impls {
		fmt.Fprintf(b, "<th class=\"impl\"><a href=\"#impl-%s\">%s</a></th>", esc(anchor(im)), esc(im))
	}
	b.WriteString("</tr></thead><tbody>\n")
	for _, sc := range g.scens {
		fmt.Fprintf(b, "<tr><th class=\"scen\">%s</th><td class=\"mode\">%s</td>", esc(sc), esc(g.modes[sc]))
		for _, im := range g.impls {
			c := g.cells[[2]string{sc, im}]
			if c == nil {
				b.WriteString("<td class=\"none\">·</td>")
				continue
			}
			writeCell(b, c)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")

}

// writeStrips writes, per implementation, a strip per scenario over the
// run's time.
func (g *suiteGroups) writeStrips(b *strings.Builder) {
	b.WriteString("<h2>Where each lock broke</h2>\n<p class=\"note\">Per implementation, a strip per scenario (one line per seed) over the run's time: " +
		"fault windows shaded orange, two holders at once red, a starved key (deadlock) amber, the first violation a black tick. " +
		"The text says when the first violation began relative to the faults.</p>\n")
	for _, im := range g.impls {
		fmt.Fprintf(b, "<section class=\"impl\" id=\"impl-%s\"><h3>%s</h3>\n", esc(anchor(im)), esc(im))
		for _, sc := range g.scens {
			if c := g.cells[[2]string{sc, im}]; c != nil {
				writeStrip(b, sc, c)
			}
		}
		b.WriteString("</section>\n")
	}
}

func writeCell(b *strings.Builder, c *cell) {
	first := c.runs[0].Row
	v, m := c.worst(), c.mark()
	sym := map[string]string{"ok": "✓", "DIFF": "✗", "miss": "?", NoExpectation: ""}[m]
	var tip []string
	for _, r := range c.runs {
		t := fmt.Sprintf("%s: %s (expected %s)", r.Row.Verdict, evidenceOf(r.Row), expectedOf(r.Row))
		if len(c.runs) > 1 {
			t = fmt.Sprintf("seed %d: %s", r.Row.Seed, t)
		}
		tip = append(tip, t)
	}
	fmt.Fprintf(b, "<td class=\"cell v-%s m-%s\" title=\"%s\">", esc(v), esc(markClass(m)), esc(strings.Join(tip, "\n")))
	label := fmt.Sprintf("%s <span class=\"mk\">%s</span>", esc(v), sym)
	if ts := first.TimeScale; ts.Scaled() {
		// Visible in the matrix, not only in the tooltip: the cell's run
		// was stretched to fit its lock's clock.
		label += fmt.Sprintf(" <span class=\"k\" title=\"%s\">×%s time</span>", esc(ts.String()),
			strconv.FormatFloat(ts.Factor, 'g', 4, 64))
	}
	if len(c.runs) == 1 {
		if l := c.runs[0].Link; l != "" {
			fmt.Fprintf(b, "<a href=\"%s\">%s</a>", esc(l), label)
		} else {
			b.WriteString(label)
		}
	} else {
		word := "found"
		switch first.Expected {
		case checker.Safe:
			word = "safe"
		case "":
			word = "no expectation;"
		}
		fmt.Fprintf(b, "%s<br><span class=\"k\">%s %d/%d</span><br><span class=\"seeds\">", label, word, c.found(), len(c.runs))
		for _, r := range c.runs {
			cls := "s-" + r.Row.Verdict
			if r.Link != "" {
				fmt.Fprintf(b, "<a class=\"%s\" href=\"%s\" title=\"seed %d: %s\">%d</a> ", esc(cls), esc(r.Link), r.Row.Seed, esc(r.Row.Verdict), r.Row.Seed)
			} else {
				fmt.Fprintf(b, "<span class=\"%s\" title=\"seed %d: %s (no run folder kept)\">%d</span> ", esc(cls), r.Row.Seed, esc(r.Row.Verdict), r.Row.Seed)
			}
		}
		b.WriteString("</span>")
	}
	b.WriteString("</td>")
}

// Strip geometry (px).
const (
	stLabelW = 290.0
	stPlotW  = 560.0
	stLineH  = 12.0
	stAxisH  = 13.0
)

// writeStrip draws one scenario of one implementation: a line per seed over
// that run's time, fault windows, overlap clusters, the starvation of a
// deadlock and the first violation.
func writeStrip(b *strings.Builder, scen string, c *cell) {
	n := len(c.runs)
	h := stLineH*float64(n) + stAxisH + 2
	wd := stLabelW + stPlotW + 10
	var dur int64 = 1
	for _, r := range c.runs {
		dur = max(dur, r.DurationNs)
	}
	x := func(ns int64) float64 {
		return stLabelW + stPlotW*float64(min(max(ns, 0), dur))/float64(dur)
	}
	v, m := c.worst(), c.mark()
	fmt.Fprintf(b, "<div class=\"strip\"><svg class=\"strip\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">", wd, h, wd, h)
	fmt.Fprintf(b, "<text class=\"sl\" x=\"0\" y=\"%.0f\">%s</text>", stLineH*float64(n)/2+4, esc(scen))
	fmt.Fprintf(b, "<text class=\"sv t-%s\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s%s</text>", esc(v), stLabelW-8, stLineH*float64(n)/2+4,
		esc(v), map[string]string{"ok": "", "DIFF": " ✗", "miss": " ?"}[m])
	for i, r := range c.runs {
		y := stLineH * float64(i)
		fmt.Fprintf(b, "<rect class=\"bg\" x=\"%.0f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\"/>", stLabelW, y+1, x(r.DurationNs)-stLabelW, stLineH-2)
		for _, f := range r.Faults {
			fmt.Fprintf(b, "<rect class=\"sf\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\"><title>fault: %s, %s – %s</title></rect>",
				x(f.From), y, max(x(f.To)-x(f.From), 1.5), stLineH, esc(f.Desc), ms(f.From), ms(f.To))
		}
		if s := r.Starved; s != nil {
			fmt.Fprintf(b, "<rect class=\"ss\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\"><title>%s starved %s from %s</title></rect>",
				x(s.FromNs), y+3, max(x(s.ToNs)-x(s.FromNs), 1.5), stLineH-6, esc(s.Key), span(s.ToNs-s.FromNs), ms(s.FromNs))
		}
		for _, o := range r.Overlaps {
			fmt.Fprintf(b, "<rect class=\"so\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\"><title>%d holds of %s overlapped from %s to %s (%s with two holders)</title></rect>",
				x(o.FromNs), y+2, max(x(o.ToNs)-x(o.FromNs), 2), stLineH-4, o.Holds, esc(o.Key), ms(o.FromNs), ms(o.ToNs), span(o.OverlapNs))
		}
		if r.FirstNs >= 0 {
			fx := x(r.FirstNs)
			fmt.Fprintf(b, "<path class=\"fv\" d=\"M%.1f %.0f v%.0f\"><title>first violation at %s: %s</title></path>", fx, y, stLineH, ms(r.FirstNs), esc(evidenceOf(r.Row)))
		}
	}
	ay := stLineH*float64(n) + stAxisH - 2
	fmt.Fprintf(b, "<text class=\"ax\" x=\"%.0f\" y=\"%.0f\">0</text><text class=\"ax\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>",
		stLabelW, ay, stLabelW+stPlotW, ay, span(dur))
	b.WriteString("</svg><span class=\"why\">")
	b.WriteString(esc(relativeToFaults(c.runs)))
	b.WriteString("</span></div>\n")
}

// relativeToFaults says, for the first seed with a violation, when it began
// relative to the faults: during one, some time after one began, or with no
// fault before it.
func relativeToFaults(runs []SuiteRun) string {
	for _, r := range runs {
		if r.FirstNs < 0 {
			continue
		}
		t := r.FirstNs
		var during, before *faultWindow
		for i := range r.Faults {
			f := &r.Faults[i]
			if f.From <= t && t <= f.To {
				during = f
			}
			if f.From <= t && (before == nil || f.From > before.From) {
				before = f
			}
		}
		prefix := ""
		if len(runs) > 1 {
			prefix = fmt.Sprintf("seed %d: ", r.Row.Seed)
		}
		switch {
		case r.RowOnly:
			return fmt.Sprintf("%sfirst violation at %s (its faults are in its run folder, which was not kept)", prefix, when(t))
		case during != nil:
			return fmt.Sprintf("%sfirst violation at %s, %s into fault %q", prefix, when(t), span(t-during.From), during.Desc)
		case before != nil:
			return fmt.Sprintf("%sfirst violation at %s, %s after fault %q healed", prefix, when(t), span(t-before.To), before.Desc)
		case len(r.Faults) > 0:
			return fmt.Sprintf("%sfirst violation at %s, before any fault", prefix, when(t))
		}
		return fmt.Sprintf("%sfirst violation at %s, with no fault (the schedule or contention alone)", prefix, when(t))
	}
	return "no violation"
}

// markClass is a CSS class name for a mark (— has none).
func markClass(m string) string {
	if m == NoExpectation {
		return "none"
	}
	return m
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func anchor(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

const suiteCSS = `<style>
body{font:14px/1.4 system-ui,sans-serif;margin:16px 20px;color:#222}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 4px}h3{font-size:14px;margin:14px 0 2px}
.meta{margin:2px 0;color:#444}.diff{color:#b71c1c}
.legend{display:flex;flex-wrap:wrap;gap:16px;margin:10px 0;font-size:12px}
.legend span{display:inline-flex;align-items:center;gap:5px}
.sw{display:inline-block;width:18px;height:12px;border-radius:2px;border:1px solid #999}
.matrix{border-collapse:collapse;font-size:12px}
.matrix th,.matrix td{border:1px solid #ccc;padding:3px 6px;text-align:center}
.matrix thead th{background:#f4f4f4;position:sticky;top:0}
.matrix th.scen{text-align:left;font-weight:600;white-space:nowrap}
.matrix td.mode{color:#666}
.matrix td.none{color:#bbb}
.matrix td.cell{min-width:64px;white-space:nowrap}
.matrix td.cell a{color:inherit;text-decoration:none;display:block}
.matrix td.cell a:hover{text-decoration:underline}
.v-safe{background:#c8e6c9}.v-unsafe{background:#ef9a9a}.v-deadlock{background:#ffcc80}.v-inconclusive{background:#e0e0e0}
.m-ok{}.m-DIFF{outline:3px solid #b71c1c;outline-offset:-3px;font-weight:bold}.m-miss{outline:2px dashed #6d4c41;outline-offset:-3px}
.sw.m-ok{background:#fff}.sw.m-DIFF{background:#fff}.sw.m-miss{background:#fff}
.mk{font-weight:bold}
.k{font-size:11px}.seeds{font-size:10px}.seeds a,.seeds span{padding:0 1px}
.s-unsafe{color:#b71c1c}.s-deadlock{color:#e65100}.s-safe{color:#1b5e20}.s-inconclusive{color:#555}
.note{color:#666;font-size:12px;max-width:1000px}
.strip{display:flex;align-items:center;gap:10px;margin:1px 0}.strip svg{flex:none}
.why{font-size:12px;color:#444}
svg text{font:11px system-ui,sans-serif;fill:#333}
svg .sl{font-weight:600}svg .ax{fill:#888;font-size:10px}
svg .t-unsafe{fill:#b71c1c}svg .t-deadlock{fill:#e65100}svg .t-safe{fill:#1b5e20}svg .t-inconclusive{fill:#555}
.bg{fill:#f2f2f2}
.sf{fill:#f5b041;fill-opacity:.45;stroke:#d68910;stroke-width:.8}
.so{fill:#e53935;fill-opacity:.85}
.ss{fill:#ffb300;fill-opacity:.9}
.fv{stroke:#000;stroke-width:2}
</style>
`

// WriteBreakdown prints, per implementation, for each scenario where it
// broke, when its first violation began relative to the faults: the text of
// the suite page's strips, for a terminal.
func WriteBreakdown(w io.Writer, runs []SuiteRun) error {
	var impls, scens []string
	cells := map[[2]string]*cell{}
	for _, r := range runs {
		k := [2]string{r.Row.Scenario, r.Row.Impl}
		if cells[k] == nil {
			cells[k] = &cell{}
		}
		cells[k].runs = append(cells[k].runs, r)
		if !contains(impls, r.Row.Impl) {
			impls = append(impls, r.Row.Impl)
		}
		if !contains(scens, r.Row.Scenario) {
			scens = append(scens, r.Row.Scenario)
		}
	}
	sw := 0
	for _, s := range scens {
		sw = max(sw, width(s))
	}
	var b strings.Builder
	for _, im := range impls {
		fmt.Fprintf(&b, "%s\n", im)
		broke := false
		for _, sc := range scens {
			c := cells[[2]string{sc, im}]
			if c == nil || c.worst() == checker.Safe {
				continue
			}
			broke = true
			lead := "  " + pad(sc, sw) + "  " + pad(c.worst(), 12) + "  "
			lines := wrap(relativeToFaults(c.runs), max(30, TableWidth-width(lead)), 3)
			b.WriteString(lead + lines[0] + "\n")
			for _, l := range lines[1:] {
				b.WriteString(strings.Repeat(" ", width(lead)) + l + "\n")
			}
		}
		if !broke {
			b.WriteString("  safe in every scenario it ran\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

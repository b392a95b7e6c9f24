package reports

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
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
func NewSuiteRun(row Row, h history.History, res checker.Result, root string) SuiteRun {
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

// SuiteHistory is all of h that NewSuiteRun reads: the nemesis process's
// entries (its fault windows and stalls, in order) and the latest entry
// (the strip's length). A run whose folder is not written needs no more
// of its history once judged, and `lockstorm run --seeds N` holds every
// outcome until the table is printed: whole histories (megabytes for a
// run of 24 contending clients) grew the heap each collection marks with
// every run, and the memory with N.
func SuiteHistory(h history.History) history.History {
	var out history.History
	last := -1
	for i, op := range h {
		if last < 0 || op.Time >= h[last].Time {
			last = i
		}
		if op.Process == history.NemesisProcess {
			out = append(out, op)
		}
	}
	if last >= 0 && h[last].Process != history.NemesisProcess {
		out = append(out, h[last])
	}
	return out
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
	// Skipped are the scenarios the backend could not run, each with why
	// ("name: reason").
	Skipped []string
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
		if !slices.Contains(g.impls, r.Row.Impl) {
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
		if !slices.Contains(impls, r.Row.Impl) {
			impls = append(impls, r.Row.Impl)
		}
		if !slices.Contains(scens, r.Row.Scenario) {
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

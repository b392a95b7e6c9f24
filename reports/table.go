package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Formats for Write.
const (
	FormatTable    = "table"
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
)

// TableWidth is what the default table fits in: a terminal of 100 columns.
const TableWidth = 100

// header is the default (narrow) table's columns; wideHeader every figure.
var (
	header     = []string{"scenario", "impl", "mode", "verdict", "expected", "mark", "evidence"}
	wideHeader = []string{"scenario", "impl", "mode", "seed", "backend", "verdict", "expected", "", "acquired", "acq/s",
		"acq p50 ms", "acq p99 ms", "overlaps", "ovl intervals", "ovl ms", "net lost", "stale wr", "handoff p50 ms",
		"fairness", "first viol ms"}
)

// TableOptions choose how Write prints rows.
type TableOptions struct {
	// Format is table (the default), markdown or json.
	Format string
	// Color adds ANSI colour to verdicts and marks (only when the output is
	// a terminal; the caller decides).
	Color bool
	// Wide prints every figure in its own column instead of the evidence
	// sentence (table and markdown; JSON always has every field).
	Wide bool
	// Width is the text table's width (0: TableWidth).
	Width int
}

// Write prints rows in format: the narrow table (see WriteTable).
func Write(w io.Writer, rows []Row, format string, color bool) error {
	return WriteTable(w, rows, TableOptions{Format: format, Color: color})
}

// WriteTable prints rows. The default text table fits o.Width columns: rows
// grouped by scenario (its name and mode on a line of their own), then per
// implementation its verdict, the expected one, the mark and the evidence
// sentence, wrapped to the room left. Markdown has the same columns, one
// row per line; Wide prints every figure instead; JSON has every field.
func WriteTable(w io.Writer, rows []Row, o TableOptions) error {
	switch o.Format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	case FormatMarkdown:
		t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewMarkdown()),
			tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithRowAutoWrap(tw.WrapNone))
		h, cf := header, narrowCells
		if o.Wide {
			h, cf = wideHeader, wideCells
		}
		t.Header(toAny(h)...)
		for _, r := range rows {
			if err := t.Append(mdEscape(cf(r, false))); err != nil {
				return err
			}
		}
		return t.Render()
	case FormatTable, "":
		if !o.Wide {
			return writeNarrow(w, rows, o)
		}
		t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off),
			tablewriter.WithRowAlignment(tw.AlignRight))
		t.Header(toAny(wideHeader)...)
		for _, r := range rows {
			if err := t.Append(wideCells(r, o.Color)); err != nil {
				return err
			}
		}
		return t.Render()
	}
	return fmt.Errorf("unknown format %q (want table, markdown or json)", o.Format)
}

// mdEscape keeps a cell inside its column: a bare | would end it and a
// newline would end the row.
func mdEscape(cs []string) []string {
	r := strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ", "\r", " ")
	for i, c := range cs {
		cs[i] = r.Replace(c)
	}
	return cs
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Mark is the row's mark: ok (as expected), DIFF (a regression) or miss
// (an exploratory run that did not find its failure this time).
func (r Row) Mark() string {
	switch {
	case r.Expected == "":
		return NoExpectation
	case r.Missed():
		return "miss"
	case !r.AsExpected:
		return "DIFF"
	}
	return "ok"
}

// Fails says the row fails a run: its mark is DIFF. The exit code, the
// JUnit file and the table's mark all read it, so they agree on every mark:
// ok, miss (exploratory, not found on this seed) and no expectation never
// fail.
func (r Row) Fails() bool { return r.Mark() == "DIFF" }

func paint(s, code string, color bool) string {
	if !color || code == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func verdictColor(v string) string {
	switch v {
	case "unsafe":
		return "31" // red
	case "deadlock", "inconclusive":
		return "33" // yellow
	case "safe":
		return "32" // green
	}
	return ""
}

func markColor(m string) string {
	switch m {
	case "DIFF":
		return "1;31"
	case "miss":
		return "33"
	}
	return ""
}

// NoExpectation is shown in the expected and mark columns of a run that
// had no expectation.
const NoExpectation = "—"

func expectedOf(r Row) string {
	if r.Expected == "" {
		return NoExpectation
	}
	return r.Expected
}

func evidenceOf(r Row) string {
	if r.Evidence == "" {
		return NoEvidence
	}
	return r.Evidence
}

func narrowCells(r Row, color bool) []string {
	return []string{r.Scenario, r.Impl, r.Mode, paint(r.Verdict, verdictColor(r.Verdict), color), expectedOf(r),
		paint(r.Mark(), markColor(r.Mark()), color), evidenceOf(r)}
}

func wideCells(r Row, color bool) []string {
	fv := "-"
	if r.FirstViolationMs != nil {
		fv = strconv.FormatFloat(*r.FirstViolationMs, 'f', 1, 64)
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
	return []string{r.Scenario, r.Impl, r.Mode, strconv.FormatUint(r.Seed, 10), r.Backend,
		paint(r.Verdict, verdictColor(r.Verdict), color), expectedOf(r), paint(r.Mark(), markColor(r.Mark()), color),
		strconv.Itoa(r.Acquired), strconv.FormatFloat(r.AcquiresPerSec, 'f', 1, 64), f(r.AcquireP50Ms), f(r.AcquireP99Ms),
		strconv.Itoa(r.Overlaps), strconv.Itoa(r.OverlapIntervals), strconv.FormatFloat(r.OverlapMs, 'f', 1, 64),
		strconv.FormatInt(r.NetLostUpdates, 10), strconv.Itoa(r.StaleWrites),
		f(r.HandoffP50Ms), f(r.Fairness), fv}
}

// Narrow table geometry: two spaces between columns, implementations
// indented under their scenario's line, evidence never narrower than
// minEvidence and at most maxEvidenceLines lines.
const (
	gap              = "  "
	indent           = "  "
	minEvidence      = 24
	maxEvidenceLines = 4
)

func width(s string) int { return utf8.RuneCountInString(s) }

func pad(s string, n int) string {
	if d := n - width(s); d > 0 {
		return s + strings.Repeat(" ", d)
	}
	return s
}

// writeNarrow prints the default table:
//
//	scenario / impl  verdict  expected  mark  evidence
//	del-race (scheduled)
//	  setnx-del      unsafe   unsafe    ok    c1 and c2 both held lock:0 at …
func writeNarrow(w io.Writer, rows []Row, o TableOptions) error {
	g := grouped{head: []string{"scenario / impl", "verdict", "expected", "mark", "evidence"}, width: o.Width}
	for _, r := range rows {
		mark := r.Mark()
		g.rows = append(g.rows, groupedRow{group: scenarioGroup(r.Scenario, r.Mode),
			cells:  []string{r.Impl, r.Verdict, expectedOf(r), mark},
			colors: []string{"", verdictColor(r.Verdict), "", markColor(mark)}, last: evidenceOf(r)})
	}
	return g.write(w, o.Color)
}

// scenarioGroup is a scenario's heading in the text tables.
func scenarioGroup(scenario, mode string) string {
	if mode != "" {
		return scenario + " (" + mode + ")"
	}
	return scenario
}

// grouped is the text tables' layout (the verdict table and the per-seed
// aggregate alike): a header line, rows grouped under their scenario's name
// on a line of its own, each row's name indented, columns padded, and the
// last column wrapped to the room left of width.
type grouped struct {
	head  []string
	rows  []groupedRow
	width int
}

type groupedRow struct {
	group  string
	cells  []string // every column but the last; cells[0] is indented
	colors []string // ANSI colour per cell ("" none)
	last   string
}

func (g grouped) write(w io.Writer, color bool) error {
	total := g.width
	if total <= 0 {
		total = TableWidth
	}
	n := len(g.head) - 1
	cw := make([]int, n)
	for i := range cw {
		cw[i] = width(g.head[i])
	}
	for _, r := range g.rows {
		for i, c := range r.cells {
			if i == 0 {
				c = indent + c
			}
			cw[i] = max(cw[i], width(c))
		}
	}
	// A name too long to leave the evidence its minimum goes on a line of
	// its own above its row, so that no line passes the width.
	others := 0
	for _, c := range cw[1:] {
		others += c + len(gap)
	}
	cw[0] = min(cw[0], max(width(g.head[0]), total-minEvidence-others-len(gap)))
	fixed := others + cw[0] + len(gap)
	ew := max(minEvidence, total-fixed)

	var b strings.Builder
	line := func(cells, colors []string, last string) {
		s := ""
		for i, c := range cells {
			// Colour after padding, so escape codes do not count as width.
			code := ""
			if colors != nil {
				code = colors[i]
			}
			s += paint(c, code, color) + strings.Repeat(" ", cw[i]-width(c)) + gap
		}
		b.WriteString(strings.TrimRight(s+last, " ") + "\n")
	}
	line(g.head[:n], nil, g.head[n])
	prev := "\x00"
	blank := make([]string, n)
	for _, r := range g.rows {
		if r.group != prev {
			prev = r.group
			for _, l := range wrap(r.group, total, maxEvidenceLines) {
				b.WriteString(paint(l, "1", color) + "\n")
			}
		}
		cells := append([]string{indent + r.cells[0]}, r.cells[1:]...)
		if width(cells[0]) > cw[0] {
			for _, l := range wrap(r.cells[0], total-len(indent), maxEvidenceLines) {
				b.WriteString(indent + l + "\n")
			}
			cells[0] = ""
		}
		ev := wrap(r.last, ew, maxEvidenceLines)
		line(cells, r.colors, ev[0])
		for _, l := range ev[1:] {
			line(blank, nil, l)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrap breaks s into lines of at most n characters, keeping the clauses of
// an evidence sentence ("; "-separated) whole where they fit, else breaking
// at spaces (a longer word is cut), and abbreviates with … past maxLines.
func wrap(s string, n, maxLines int) []string {
	var lines []string
	cur := ""
	clauses := strings.Split(s, "; ")
	for i, cl := range clauses {
		if i < len(clauses)-1 {
			cl += ";"
		}
		switch {
		case cur == "" && width(cl) <= n:
			cur = cl
			continue
		case cur != "" && width(cur)+1+width(cl) <= n:
			cur += " " + cl
			continue
		case width(cl) <= n:
			lines = append(lines, cur)
			cur = cl
			continue
		}
		// A clause longer than a line: by words, from where the line is.
		for _, word := range strings.Fields(cl) {
			for width(word) > n {
				if cur != "" {
					lines = append(lines, cur)
					cur = ""
				}
				r := []rune(word)
				lines = append(lines, string(r[:n]))
				word = string(r[n:])
			}
			switch {
			case cur == "":
				cur = word
			case width(cur)+1+width(word) <= n:
				cur += " " + word
			default:
				lines = append(lines, cur)
				cur = word
			}
		}
	}
	if cur != "" || len(lines) == 0 {
		lines = append(lines, cur)
	}
	if len(lines) > maxLines {
		lines = lines[:maxLines]
		last := []rune(lines[maxLines-1])
		if len(last) >= n {
			last = last[:n-1]
		}
		lines[maxLines-1] = string(last) + "…"
	}
	return lines
}

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
	total := o.Width
	if total <= 0 {
		total = TableWidth
	}
	head := []string{"scenario / impl", "verdict", "expected", "mark", "evidence"}
	cw := []int{width(head[0]), width(head[1]), width(head[2]), width(head[3])}
	for _, r := range rows {
		cw[0] = max(cw[0], width(indent+r.Impl))
		cw[1] = max(cw[1], width(r.Verdict))
		cw[2] = max(cw[2], width(expectedOf(r)))
		cw[3] = max(cw[3], width(r.Mark()))
	}
	fixed := 0
	for _, c := range cw {
		fixed += c + len(gap)
	}
	ew := max(minEvidence, total-fixed)

	var b strings.Builder
	line := func(cells []string, ev string) {
		s := ""
		for i, c := range cells {
			s += pad(c, cw[i]) + gap
		}
		b.WriteString(strings.TrimRight(s+ev, " ") + "\n")
	}
	line(head[:4], head[4])
	prev := "\x00"
	for _, r := range rows {
		if g := r.Scenario + " (" + r.Mode + ")"; g != prev {
			prev = g
			name := r.Scenario
			if r.Mode != "" {
				name += " (" + r.Mode + ")"
			}
			b.WriteString(paint(name, "1", o.Color) + "\n")
		}
		mark := r.Mark()
		ev := wrap(evidenceOf(r), ew, maxEvidenceLines)
		cells := []string{indent + r.Impl, r.Verdict, expectedOf(r), mark}
		// Colour after padding, so escape codes do not count as width.
		s := pad(cells[0], cw[0]) + gap + paint(r.Verdict, verdictColor(r.Verdict), o.Color) +
			strings.Repeat(" ", cw[1]-width(r.Verdict)) + gap + pad(expectedOf(r), cw[2]) + gap +
			paint(mark, markColor(mark), o.Color) + strings.Repeat(" ", cw[3]-width(mark)) + gap
		b.WriteString(strings.TrimRight(s+ev[0], " ") + "\n")
		for _, l := range ev[1:] {
			line([]string{"", "", "", ""}, l)
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

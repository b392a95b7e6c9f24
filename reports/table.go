package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

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

var header = []string{"scenario", "impl", "mode", "seed", "backend", "verdict", "expected", "", "acquired", "acq/s",
	"acq p50 ms", "acq p99 ms", "overlaps", "lost upd", "stale wr", "handoff p50 ms", "fairness", "first viol ms"}

// Write prints rows in format. color adds ANSI colour to verdicts (only
// when the output is a terminal; the caller decides).
func Write(w io.Writer, rows []Row, format string, color bool) error {
	switch format {
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
			tablewriter.WithHeaderAutoFormat(tw.Off))
		t.Header(toAny(header)...)
		for _, r := range rows {
			if err := t.Append(mdEscape(cells(r, false))); err != nil {
				return err
			}
		}
		return t.Render()
	case FormatTable, "":
		t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off),
			tablewriter.WithRowAlignment(tw.AlignRight))
		t.Header(toAny(header)...)
		for _, r := range rows {
			if err := t.Append(cells(r, color)); err != nil {
				return err
			}
		}
		return t.Render()
	}
	return fmt.Errorf("unknown format %q (want table, markdown or json)", format)
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

func cells(r Row, color bool) []string {
	verdict := r.Verdict
	mark := "ok"
	expected := r.Expected
	switch {
	case r.Expected == "":
		expected, mark = "—", "—"
	case r.Missed():
		mark = "miss"
	case !r.AsExpected:
		mark = "DIFF"
	}
	if color {
		c := "32" // green
		switch r.Verdict {
		case "unsafe":
			c = "31"
		case "deadlock", "inconclusive":
			c = "33"
		}
		verdict = "\x1b[" + c + "m" + verdict + "\x1b[0m"
		if mark == "DIFF" {
			mark = "\x1b[1;31mDIFF\x1b[0m"
		}
	}
	fv := "-"
	if r.FirstViolationMs != nil {
		fv = strconv.FormatFloat(*r.FirstViolationMs, 'f', 1, 64)
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
	return []string{r.Scenario, r.Impl, r.Mode, strconv.FormatUint(r.Seed, 10), r.Backend, verdict, expected, mark,
		strconv.Itoa(r.Acquired), strconv.FormatFloat(r.AcquiresPerSec, 'f', 1, 64), f(r.AcquireP50Ms), f(r.AcquireP99Ms),
		strconv.Itoa(r.Overlaps), strconv.FormatInt(r.LostUpdates, 10), strconv.Itoa(r.StaleWrites),
		f(r.HandoffP50Ms), f(r.Fairness), fv}
}

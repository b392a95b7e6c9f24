package reports

import (
	"fmt"
	"html"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/lockstorm/lockstorm/checker"
)

// faultWindow is one nemesis fault from its start to its stop.
type faultWindow struct {
	Desc     string
	From, To int64
}

// faultWindows pairs nemesis start/stop entries by fault id; a fault with no
// stop lasts to the end of the history.
func faultWindows(h checker.History) []faultWindow {
	open := map[int64]int{}
	var out []faultWindow
	var end int64
	for _, op := range h {
		end = max(end, op.Time)
		if op.Process != checker.NemesisProcess || op.Type != checker.Ok {
			continue
		}
		switch op.F {
		case checker.FStart:
			open[op.N] = len(out)
			out = append(out, faultWindow{Desc: op.Value, From: op.Time, To: -1})
		case checker.FStop:
			if i, ok := open[op.N]; ok {
				out[i].To = op.Time
				delete(open, op.N)
			}
		}
	}
	for i := range out {
		if out[i].To < 0 {
			out[i].To = end
		}
	}
	return out
}

// WriteTimelineFile writes timeline.html.
func WriteTimelineFile(path string, h checker.History, res checker.Result, title string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteTimeline(f, h, res, title); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteTimeline draws holders per key over time as a self-contained HTML
// page (inline SVG, no scripts, no network): one lane per client, critical
// sections as bars, fault windows shaded and labelled, the violating overlap
// in red. Only the neighbourhood of the violation is drawn when there is
// one, so the file stays small on long runs.
func WriteTimeline(w io.Writer, h checker.History, res checker.Result, title string) error {
	holds := checker.Holds(h)
	faults := faultWindows(h)
	var lo, hi int64
	for _, op := range h {
		hi = max(hi, op.Time)
	}
	if wt := res.Witness; wt != nil {
		span := max(wt.ToNs-wt.FromNs, int64(200e6))
		lo = max(0, min(wt.A.From, wt.B.From)-span)
		hi = min(hi, max(wt.A.To, wt.B.To)+span)
	}
	if hi <= lo {
		hi = lo + 1
	}
	// Lanes: per key, one per client that held it in the window.
	type lane struct {
		key    string
		client int
	}
	laneIdx := map[lane]int{}
	var lanes []lane
	var shown []checker.Hold
	for _, hd := range holds {
		if hd.To < lo || hd.From > hi {
			continue
		}
		shown = append(shown, hd)
		l := lane{hd.Key, hd.Client}
		if _, ok := laneIdx[l]; !ok {
			laneIdx[l] = -1
			lanes = append(lanes, l)
		}
	}
	sort.Slice(lanes, func(i, j int) bool {
		if lanes[i].key != lanes[j].key {
			return lanes[i].key < lanes[j].key
		}
		return lanes[i].client < lanes[j].client
	})
	for i, l := range lanes {
		laneIdx[l] = i
	}
	const left, width, laneH, top = 150.0, 1000.0, 22.0, 40.0
	height := top + laneH*float64(len(lanes)) + 40 + 16*float64(len(faults))
	x := func(t int64) float64 { return left + width*float64(t-lo)/float64(hi-lo) }
	ms := func(t int64) string { return fmt.Sprintf("%.1f ms", float64(t)/1e6) }

	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>\n", html.EscapeString(title))
	b.WriteString(`<style>body{font:13px sans-serif;margin:16px}.hold{fill:#4a7bd0}.hold.witness{fill:#d04a4a}.fault{fill:#f0c040;fill-opacity:.25}.ov{fill:#ff0000;fill-opacity:.35}text{font:11px monospace}</style></head><body>` + "\n")
	fmt.Fprintf(&b, "<h2>%s</h2>\n<p>verdict <b>%s</b>: %s</p>\n", html.EscapeString(title), html.EscapeString(res.Verdict), html.EscapeString(res.Reason))
	if res.Witness != nil {
		fmt.Fprintf(&b, "<p id=\"witness\">%s</p>\n", html.EscapeString(res.Witness.Text))
	}
	b.WriteString(`<p><svg width="14" height="10"><rect class="hold" width="14" height="10"/></svg> critical section (acquire ok → release) ` +
		`<svg width="14" height="10"><rect class="hold witness" width="14" height="10"/></svg> the two holders of the witness ` +
		`<svg width="14" height="10"><rect class="ov" width="14" height="10"/></svg> overlap ` +
		`<svg width="14" height="10"><rect class="fault" width="14" height="10" stroke="#c90"/></svg> fault window</p>` + "\n")
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\">\n", left+width+20, height)
	for i, f := range faults {
		if f.To < lo || f.From > hi {
			continue
		}
		x0, x1 := x(max(f.From, lo)), x(min(f.To, hi))
		fmt.Fprintf(&b, "<rect class=\"fault\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\"><title>%s %s–%s</title></rect>\n",
			x0, top, max(x1-x0, 1), laneH*float64(len(lanes)), html.EscapeString(f.Desc), ms(f.From), ms(f.To))
		fmt.Fprintf(&b, "<text x=\"%.1f\" y=\"%.0f\">fault: %s (%s – %s)</text>\n", x0, top+laneH*float64(len(lanes))+30+16*float64(i),
			html.EscapeString(f.Desc), ms(f.From), ms(f.To))
	}
	for i, l := range lanes {
		fmt.Fprintf(&b, "<text x=\"4\" y=\"%.0f\">%s c%d</text>\n", top+laneH*float64(i)+15, html.EscapeString(l.key), l.client)
	}
	wt := res.Witness
	for _, hd := range shown {
		cls := "hold"
		if wt != nil && hd.Key == wt.Key && ((hd.Process == wt.A.Process && hd.From == wt.A.From) || (hd.Process == wt.B.Process && hd.From == wt.B.From)) {
			cls += " witness"
		}
		i := laneIdx[lane{hd.Key, hd.Client}]
		x0, x1 := x(max(hd.From, lo)), x(min(hd.To, hi))
		fmt.Fprintf(&b, "<rect class=\"%s\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\"><title>c%d p%d %s %s–%s fence %d</title></rect>\n",
			cls, x0, top+laneH*float64(i)+3, max(x1-x0, 1), laneH-6, hd.Client, hd.Process, html.EscapeString(hd.Key), ms(hd.From), ms(hd.To), hd.Fence)
	}
	if wt != nil {
		x0, x1 := x(wt.FromNs), x(wt.ToNs)
		fmt.Fprintf(&b, "<rect class=\"ov\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\"><title>overlap %s–%s</title></rect>\n",
			x0, top-10, max(x1-x0, 2), laneH*float64(len(lanes))+10, ms(wt.FromNs), ms(wt.ToNs))
		fmt.Fprintf(&b, "<text x=\"%.1f\" y=\"%.0f\" fill=\"#c00\">overlap %s – %s</text>\n", x0, top-14, ms(wt.FromNs), ms(wt.ToNs))
	}
	// Time axis: five ticks across the drawn window.
	axisY := top + laneH*float64(len(lanes)) + 14
	for k := 0; k <= 4; k++ {
		t := lo + (hi-lo)*int64(k)/4
		anchor := "middle"
		switch k {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		fmt.Fprintf(&b, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#999\"/><text x=\"%.1f\" y=\"%.0f\" text-anchor=\"%s\">%s</text>\n",
			x(t), axisY-12, x(t), axisY-8, x(t), axisY, anchor, ms(t))
	}
	b.WriteString("</svg>\n</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

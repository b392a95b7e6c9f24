package reports

import (
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/checker"
)

// faultWindow is one nemesis fault from its start to its stop.
type faultWindow struct {
	ID       int64
	Desc     string
	From, To int64
	// Open says the fault never healed: it lasts to the end of the history.
	Open bool
}

// timelineStallMin: shorter harness stalls and client lags are counted in
// the result but not drawn (a busy machine has many of 10-50 ms).
const timelineStallMin = 50 * time.Millisecond

// faultWindows pairs nemesis start/stop entries by fault id; a fault with no
// stop lasts to the end of the history.
func faultWindows(h checker.History) []faultWindow {
	open := map[int64]int{}
	var out []faultWindow
	var end int64
	for _, op := range h {
		end = max(end, op.Time)
		if op.Process == checker.NemesisProcess && op.F == checker.FStall && op.N >= int64(timelineStallMin) {
			// The harness's own stall, drawn like a fault: nothing it
			// recorded in that stretch is timed finer than the stall.
			// One client's lag is drawn the same way, naming the client.
			desc := fmt.Sprintf("harness stalled %.0f ms", float64(op.N)/1e6)
			if op.Client >= 0 {
				desc = fmt.Sprintf("c%d late %.0f ms", op.Client, float64(op.N)/1e6)
			}
			out = append(out, faultWindow{ID: -1, Desc: desc, From: op.Time - op.N, To: op.Time})
			continue
		}
		if op.Process != checker.NemesisProcess || op.Type != checker.Ok {
			continue
		}
		switch op.F {
		case checker.FStart:
			open[op.N] = len(out)
			out = append(out, faultWindow{ID: op.N, Desc: op.Value, From: op.Time, To: -1})
		case checker.FStop:
			if i, ok := open[op.N]; ok {
				out[i].To = op.Time
				delete(open, op.N)
			}
		}
	}
	for i := range out {
		if out[i].To < 0 {
			out[i].To, out[i].Open = end, true
		}
	}
	return out
}

// sentinelMark is one Sentinel event drawn on the timeline.
type sentinelMark struct {
	At   int64
	Text string
}

// sentinelKinds are the Sentinel events worth a mark: detection, agreement,
// the failover's steps, and the old master's return.
var sentinelKinds = []string{"+sdown master", "-sdown master", "+odown", "-odown", "+try-failover", "+elected-leader",
	"+promoted-slave", "+failover-end", "+switch-master", "+convert-to-slave", "-failover-abort",
	// A Redis Cluster's, as the run's watcher reports them (rediscluster.go).
	"+fail", "-fail", "+cluster-down", "-cluster-down"}

// sentinelMarks picks the Sentinel events (checker.FSentinel, "s1 +odown
// master n1 ...") worth a mark; an event several Sentinels report is
// marked once, when the first does.
func sentinelMarks(h checker.History) []sentinelMark {
	seen := map[string]bool{}
	var out []sentinelMark
	for _, op := range h {
		if op.F != checker.FSentinel {
			continue
		}
		who, ev, _ := strings.Cut(op.Value, " ")
		for _, k := range sentinelKinds {
			if strings.HasPrefix(ev, k) {
				if !seen[ev] {
					seen[ev] = true
					out = append(out, sentinelMark{op.Time, ev + " (" + who + ")"})
				}
				break
			}
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

// maxBars caps the critical sections drawn, so the page stays small on long
// runs and with many clients.
const maxBars = 300

// Geometry of the SVG panels (px).
const (
	tlLabelW = 120.0 // lane labels
	tlPlotW  = 1090.0
	tlRight  = 20.0
	tlAxisH  = 26.0 // tick labels above the plot
	tlRowH   = 16.0 // a fault or overlap label row
	tlKeyH   = 18.0 // a key's header row
	tlLaneH  = 20.0
	tlBottom = 24.0 // tick labels below the plot
)

type tlLane struct {
	key    string
	client int
}

// timeline is what both panels draw.
type timeline struct {
	holds   []checker.Hold // clipped to the history's end, within the view
	faults  []faultWindow
	marks   []sentinelMark
	server  []checker.Op // the servers' key events (FServer), drawn on key rows
	lanes   []tlLane
	laneIdx map[tlLane]int
	keys    []string
	wt      *checker.Witness
	end     int64
}

// WriteTimeline draws holders per key over time as a self-contained HTML
// page (inline SVG and CSS, no scripts, no network): one lane per client per
// key, critical sections as bars, fault windows shaded and labelled, the
// violating overlap in red, a time axis, a legend. Only the neighbourhood of
// the violation is drawn when there is one, and at most maxBars critical
// sections, so the file stays small on long runs; when the overlap is too
// short to see at that scale a second panel zooms on it.
func WriteTimeline(w io.Writer, h checker.History, res checker.Result, title string) error {
	t, lo, hi, omitted := newTimeline(h, res)
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>\n", esc(title))
	b.WriteString(tlCSS)
	b.WriteString("</head><body>\n")
	fmt.Fprintf(&b, "<h1>%s <span class=\"verdict v-%s\">%s</span></h1>\n", esc(title), esc(res.Verdict), esc(res.Verdict))
	fmt.Fprintf(&b, "<p class=\"reason\">%s</p>\n", esc(res.Reason))
	wt := t.wt
	if wt != nil {
		fmt.Fprintf(&b, "<p class=\"witness\" id=\"witness\">%s</p>\n", esc(wt.Text))
	}
	writeFindings(&b, res)
	writeLegend(&b, t)

	if wt != nil {
		fmt.Fprintf(&b, "<h2>Around the violation: %s – %s of %s</h2>\n", ms(lo), ms(hi), ms(t.end))
	} else {
		fmt.Fprintf(&b, "<h2>%s – %s of %s</h2>\n", ms(lo), ms(hi), ms(t.end))
	}
	t.panel(&b, "overview", lo, hi)
	if wt != nil && (wt.ToNs-wt.FromNs)*40 < hi-lo {
		pad := max((wt.ToNs-wt.FromNs)*2, (hi-lo)/200, 1000)
		zlo, zhi := max(0, wt.FromNs-pad), wt.ToNs+pad
		fmt.Fprintf(&b, "<h2>Zoom on the overlap: %s – %s</h2>\n", ms(zlo), ms(zhi))
		t.panel(&b, "zoom", zlo, zhi)
	}
	fmt.Fprintf(&b, "<p class=\"note\">%d critical sections drawn", len(t.holds))
	if omitted > 0 {
		fmt.Fprintf(&b, "; %d more in this window omitted (the ones farthest from the violation)", omitted)
	}
	fmt.Fprintf(&b, ". Times are from the start of the run. Hover a bar for its details.</p>\n")
	writeTables(&b, t)
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// newTimeline gathers what the panels draw: the holds in the view window
// [lo, hi] (at most maxBars, omitted says how many more), the fault windows,
// Sentinel marks, server events, and one lane per (key, client).
func newTimeline(h checker.History, res checker.Result) (t *timeline, lo, hi int64, omitted int) {
	var end int64
	for _, op := range h {
		end = max(end, op.Time)
	}
	all := checker.Holds(h)
	for i := range all {
		all[i].To = min(max(all[i].To, all[i].From), max(end, all[i].From))
	}
	wt := res.Witness
	lo, hi, c0, c1 := viewWindow(all, res, end)
	shown, omitted := nearestHolds(all, wt, lo, hi, c0, c1)

	t = &timeline{holds: shown, faults: faultWindows(h), marks: sentinelMarks(h), laneIdx: map[tlLane]int{}, wt: wt, end: end}
	for _, op := range h {
		if op.Process == checker.ServerProcess && op.F == checker.FServer {
			t.server = append(t.server, op)
		}
	}
	t.layLanes()
	return t, lo, hi, omitted
}

// nearestHolds keeps the holds that reach into [lo, hi]; past maxBars it
// keeps the witness and the holds nearest the violation [c0, c1].
func nearestHolds(all []checker.Hold, wt *checker.Witness, lo, hi, c0, c1 int64) (shown []checker.Hold, omitted int) {
	for _, hd := range all {
		if hd.To >= lo && hd.From <= hi {
			shown = append(shown, hd)
		}
	}
	if len(shown) <= maxBars {
		return shown, 0
	}
	dist := func(hd checker.Hold) int64 {
		if isWitness(wt, hd) {
			return -1
		}
		switch {
		case hd.To < c0:
			return c0 - hd.To
		case hd.From > c1:
			return hd.From - c1
		}
		return 0
	}
	sort.SliceStable(shown, func(i, j int) bool { return dist(shown[i]) < dist(shown[j]) })
	omitted = len(shown) - maxBars
	shown = shown[:maxBars]
	sort.SliceStable(shown, func(i, j int) bool { return shown[i].From < shown[j].From })
	return shown, omitted
}

// layLanes gives each (key, client) of the shown holds and of the witness a
// lane (the witness lanes exist even if a hold was clipped away), sorted by
// key then client, and lists the keys in lane order.
func (t *timeline) layLanes() {
	add := func(l tlLane) {
		if _, ok := t.laneIdx[l]; !ok {
			t.laneIdx[l] = -1
			t.lanes = append(t.lanes, l)
		}
	}
	for _, hd := range t.holds {
		add(tlLane{hd.Key, hd.Client})
	}
	if wt := t.wt; wt != nil {
		add(tlLane{wt.Key, wt.A.Client})
		add(tlLane{wt.Key, wt.B.Client})
	}
	sort.Slice(t.lanes, func(i, j int) bool {
		if t.lanes[i].key != t.lanes[j].key {
			return keyLess(t.lanes[i].key, t.lanes[j].key)
		}
		return t.lanes[i].client < t.lanes[j].client
	})
	for i, l := range t.lanes {
		t.laneIdx[l] = i
		if i == 0 || t.lanes[i-1].key != l.key {
			t.keys = append(t.keys, l.key)
		}
	}
}

const tlCSS = `<style>
body{font:14px/1.4 system-ui,sans-serif;margin:16px 20px;color:#222;max-width:1260px}
h1{font-size:20px;margin:0 0 6px}h2{font-size:15px;margin:16px 0 4px}
.verdict{font-size:13px;padding:2px 8px;border-radius:10px;color:#fff;background:#2e7d32;vertical-align:middle}
.v-unsafe{background:#c62828}.v-deadlock,.v-inconclusive{background:#ef6c00}
.reason{margin:4px 0}
.witness{margin:6px 0;padding:6px 10px;border-left:4px solid #c62828;background:#fdecea;max-height:4.2em;overflow:auto;font-size:13px}
.legend{display:flex;flex-wrap:wrap;gap:18px;margin:8px 0;font-size:13px}
.legend span{display:inline-flex;align-items:center;gap:6px}
.sw{display:inline-block;width:22px;height:12px;border-radius:2px}
.note{color:#666;font-size:12px}
table{border-collapse:collapse;font-size:12px;margin:6px 0}
td,th{border:1px solid #ddd;padding:2px 8px;text-align:left}th{background:#f4f4f4}
svg text{font:11px ui-monospace,monospace;fill:#333}
svg .lbl{font:12px system-ui,sans-serif}
svg .key{font:bold 12px system-ui,sans-serif;fill:#000}
svg .wl{fill:#c62828;font-weight:bold}
.grid{stroke:#e4e4e4}.axis{stroke:#888}
.lane0{fill:#fafafa}.lane1{fill:#f0f0f0}
.hold{fill:#5b8def}.hold.w{fill:#1a3e8c;stroke:#000;stroke-width:.8}
.fault{fill:url(#hatch);stroke:#d68910;stroke-width:1}
.sent line{stroke:#1f618d;stroke-width:1;stroke-dasharray:2 3}.sent text{fill:#1f618d;font-size:10px}
.flbl{fill:#9c5b00}
.ov{fill:#e53935;fill-opacity:.55;stroke:#b71c1c;stroke-width:1.5}
.ovl{stroke:#e53935;stroke-width:1.2;stroke-dasharray:4 3}
.ovt{fill:#b71c1c;font-weight:bold}
</style>
`

func writeLegend(b *strings.Builder, t *timeline) {
	b.WriteString(`<div class="legend">` +
		`<span><i class="sw" style="background:#5b8def"></i>critical section (acquire ok → release)</span>`)
	if t.wt != nil {
		b.WriteString(`<span><i class="sw" style="background:#1a3e8c;outline:1px solid #000"></i>the two witness holds</span>` +
			`<span><i class="sw" style="background:rgba(229,57,53,.55);outline:1.5px solid #b71c1c"></i>overlap: both held the key</span>`)
	}
	if len(t.faults) > 0 {
		b.WriteString(`<span><i class="sw" style="background:repeating-linear-gradient(45deg,rgba(245,176,65,.55) 0 3px,rgba(245,176,65,.2) 3px 6px);outline:1px solid #d68910"></i>fault window</span>`)
	}
	if len(t.marks) > 0 {
		b.WriteString(`<span style="color:#1f618d">▲ Sentinel event (hover; listed below)</span>`)
	}
	if len(t.server) > 0 {
		b.WriteString(`<span><i class="sw" style="background:#2e7d32;width:3px"></i><i class="sw" style="background:#757575;width:3px"></i><i class="sw" style="background:#ef6c00;width:3px"></i>` +
			`server events on the key's row: set, del, expired (times are when the harness received them)</span>`)
	}
	for _, hd := range t.holds {
		if hd.End == "crash" {
			b.WriteString(`<span>✕ client crashed holding it</span>`)
			break
		}
	}
	b.WriteString("</div>\n")
}

// panel draws the lanes over [lo, hi] as one SVG: the lanes and keys, the
// time axis, fault windows, Sentinel events, the servers' key events, the
// critical sections and the overlap, in that order (later layers on top).
func (t *timeline) panel(b *strings.Builder, id string, lo, hi int64) {
	g := t.geometry(id, lo, hi)
	fmt.Fprintf(b, "<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
		id, g.width, g.height, g.width, g.height)
	if id == "overview" {
		b.WriteString(`<defs><pattern id="hatch" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
			`<rect width="8" height="8" fill="#f5b041" fill-opacity=".22"/><rect width="3" height="8" fill="#f5b041" fill-opacity=".5"/></pattern></defs>` + "\n")
	}
	g.drawLanes(b)
	g.drawAxis(b)
	g.drawFaultWindows(b)
	g.drawSentinelEvents(b)
	g.drawServerEvents(b)
	g.drawHolds(b)
	g.drawOverlap(b)
	b.WriteString("</svg>\n")
}

// panelGeom is one panel's layout: where each lane, row and time falls.
type panelGeom struct {
	*timeline
	id            string
	lo, hi        int64
	faults        []faultWindow // the windows that reach into [lo, hi]
	frows         int           // fault label rows above the plot
	plotTop       float64
	plotBottom    float64
	width, height float64
	keyIdx        map[string]int
}

func (t *timeline) geometry(id string, lo, hi int64) *panelGeom {
	if hi <= lo {
		hi = lo + 1
	}
	g := &panelGeom{timeline: t, id: id, lo: lo, hi: hi, keyIdx: make(map[string]int, len(t.keys))}
	for _, f := range t.faults {
		if f.To >= lo && f.From <= hi {
			g.faults = append(g.faults, f)
		}
	}
	const maxFaultRows = 6
	g.frows = min(len(g.faults), maxFaultRows)
	ovRow := 0.0
	if t.wt != nil {
		ovRow = tlRowH
	}
	g.plotTop = tlAxisH + tlRowH*float64(g.frows) + ovRow
	for k, key := range t.keys {
		g.keyIdx[key] = k
	}
	g.plotBottom = g.plotTop + tlKeyH*float64(len(t.keys)) + tlLaneH*float64(len(t.lanes))
	g.height = g.plotBottom + tlBottom
	g.width = tlLabelW + tlPlotW + tlRight
	return g
}

// laneY is the top of lane i, below its key's header.
func (g *panelGeom) laneY(i int) float64 {
	return g.plotTop + tlKeyH*float64(g.keyIdx[g.timeline.lanes[i].key]+1) + tlLaneH*float64(i)
}

// x places a time on the plot, clamped to the panel's window.
func (g *panelGeom) x(ns int64) float64 {
	ns = min(max(ns, g.lo), g.hi)
	return tlLabelW + tlPlotW*float64(ns-g.lo)/float64(g.hi-g.lo)
}

// drawLanes draws the key headers, the lane backgrounds and their labels.
func (g *panelGeom) drawLanes(b *strings.Builder) {
	ls := g.timeline.lanes
	for i, l := range ls {
		if i > 0 && ls[i-1].key == l.key {
			continue
		}
		key, y := l.key, g.laneY(i)-tlKeyH
		fmt.Fprintf(b, "<text class=\"key\" x=\"4\" y=\"%.0f\">%s</text><line class=\"axis\" x1=\"0\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\"/>\n",
			y+13, esc(key), g.width-tlRight, y+tlKeyH-1, y+tlKeyH-1)
	}
	for i, l := range ls {
		y := g.laneY(i)
		cls := "lbl"
		if g.wt != nil && l.key == g.wt.Key && (l.client == g.wt.A.Client || l.client == g.wt.B.Client) {
			cls += " wl"
		}
		fmt.Fprintf(b, "<rect class=\"lane%d\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\"/><text class=\"%s\" x=\"16\" y=\"%.0f\">client c%d</text>\n",
			i%2, tlLabelW, y, tlPlotW, tlLaneH, cls, y+14, l.client)
	}
}

// drawAxis draws the grid lines and tick labels above and below the plot.
func (g *panelGeom) drawAxis(b *strings.Builder) {
	step := niceStep(g.hi - g.lo)
	dec := max(0, int(math.Ceil(-math.Log10(float64(step)/1e6))))
	for tk := (g.lo + step - 1) / step * step; tk <= g.hi; tk += step {
		xx := g.x(tk)
		lbl := fmt.Sprintf("%.*f ms", dec, float64(tk)/1e6)
		fmt.Fprintf(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\"/>", xx, xx, tlAxisH-4, g.plotBottom)
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text><text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n",
			xx, tlAxisH-8, lbl, xx, g.plotBottom+15, lbl)
	}
	fmt.Fprintf(b, "<line class=\"axis\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\"/>\n", tlLabelW, tlLabelW+tlPlotW, tlAxisH-4, tlAxisH-4)
}

// drawFaultWindows shades each fault window over every lane, with a label row
// each for the first few.
func (g *panelGeom) drawFaultWindows(b *strings.Builder) {
	for i, f := range g.faults {
		x0, x1 := g.x(f.From), g.x(f.To)
		top := g.plotTop
		if i < g.frows {
			top = tlAxisH + tlRowH*float64(i)
		}
		to := ms(f.To)
		if f.Open {
			to = "end (never healed)"
		}
		fmt.Fprintf(b, "<rect class=\"fault\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\"><title>fault %d: %s, %s – %s</title></rect>\n",
			x0, top, max(x1-x0, 2), g.plotBottom-top, f.ID, esc(f.Desc), ms(f.From), to)
		if i < g.frows {
			lbl := fmt.Sprintf("fault %d: %s (%s – %s)", f.ID, f.Desc, ms(f.From), to)
			anchor, lx := "start", x0+4
			if x0 > tlLabelW+tlPlotW*0.6 {
				anchor, lx = "end", x1-4
			}
			fmt.Fprintf(b, "<text class=\"flbl\" x=\"%.1f\" y=\"%.0f\" text-anchor=\"%s\">%s</text>\n", lx, top+12, anchor, esc(lbl))
		}
	}
}

// drawSentinelEvents draws a dashed line down the plot and a triangle on top
// for each Sentinel event in the window.
func (g *panelGeom) drawSentinelEvents(b *strings.Builder) {
	for _, m := range g.marks {
		if m.At < g.lo || m.At > g.hi {
			continue
		}
		xx := g.x(m.At)
		fmt.Fprintf(b, "<g class=\"sent\"><title>%s: %s</title><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\"/><text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">▲</text></g>\n",
			ms(m.At), esc(m.Text), xx, xx, g.plotTop, g.plotBottom, xx, g.plotTop+10)
	}
}

// drawServerEvents draws the servers' key events, a tick each on the key's
// header row, at most maxServerTicks so a long run stays drawable.
func (g *panelGeom) drawServerEvents(b *strings.Builder) {
	const maxServerTicks = 3000
	ticks := 0
	for _, op := range g.server {
		if op.Time < g.lo || op.Time > g.hi || ticks >= maxServerTicks {
			continue
		}
		first := slices.IndexFunc(g.timeline.lanes, func(l tlLane) bool { return l.key == op.Key })
		if first < 0 {
			continue
		}
		ticks++
		col := "#757575"
		switch op.Value {
		case "set", "hset", "hincrby":
			col = "#2e7d32"
		case "expired", "evicted":
			col = "#ef6c00"
		case "expire":
			col = "#90a4ae"
		}
		owner := ""
		if op.Owner != "" {
			owner = ", value " + op.Owner
		}
		y := g.laneY(first) - tlKeyH
		fmt.Fprintf(b, `<rect x="%.1f" y="%.0f" width="2" height="%.0f" fill="%s"><title>%s: %s %s at %s%s</title></rect>`+"\n",
			g.x(op.Time)-1, y+3, tlKeyH-6, col, esc(op.Node), esc(op.Value), esc(op.Key), ms(op.Time), esc(owner))
	}
}

// drawHolds draws the critical sections, the witness's two darker, and a cross
// where a client crashed holding the lock.
func (g *panelGeom) drawHolds(b *strings.Builder) {
	for _, hd := range g.timeline.holds {
		if hd.To < g.lo || hd.From > g.hi {
			continue
		}
		i, ok := g.laneIdx[tlLane{hd.Key, hd.Client}]
		if !ok {
			continue
		}
		cls := "hold"
		if isWitness(g.wt, hd) {
			cls += " w"
		}
		x0, x1 := g.x(hd.From), g.x(hd.To)
		y := g.laneY(i)
		fence := ""
		if hd.Fence != 0 {
			fence = fmt.Sprintf(", fence %d", hd.Fence)
		}
		fmt.Fprintf(b, "<rect class=\"%s\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\"><title>c%d (p%d) held %s %s – %s, ended by %s%s</title></rect>\n",
			cls, x0, y+4, max(x1-x0, 1.5), tlLaneH-8, hd.Client, hd.Process, esc(hd.Key), ms(hd.From), ms(hd.To), esc(hd.End), fence)
		if hd.End == "crash" && hd.To <= g.hi {
			fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.0f\" fill=\"#000\">✕</text>\n", x1+1, y+14)
		}
	}
}

// drawOverlap draws the violation: a red box over the two witness lanes, dashed
// lines down the whole panel, and its label.
func (g *panelGeom) drawOverlap(b *strings.Builder) {
	wt := g.wt
	if wt == nil {
		return
	}
	ia, oka := g.laneIdx[tlLane{wt.Key, wt.A.Client}]
	ib, okb := g.laneIdx[tlLane{wt.Key, wt.B.Client}]
	if !oka || !okb {
		return
	}
	x0, x1 := g.x(wt.FromNs), g.x(wt.ToNs)
	if x1-x0 < 4 { // too short to see: widen around its centre
		c := (x0 + x1) / 2
		x0, x1 = c-2, c+2
	}
	ya, yb := g.laneY(min(ia, ib)), g.laneY(max(ia, ib))+tlLaneH
	oy := tlAxisH + tlRowH*float64(g.frows)
	fmt.Fprintf(b, "<line class=\"ovl\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\"/><line class=\"ovl\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\"/>\n",
		x0, x0, oy+tlRowH-2, g.plotBottom, x1, x1, oy+tlRowH-2, g.plotBottom)
	fmt.Fprintf(b, "<rect class=\"ov\" id=\"overlap-%s\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\"><title>overlap on %s: %s – %s</title></rect>\n",
		g.id, x0, ya+1, x1-x0, yb-ya-2, esc(wt.Key), ms(wt.FromNs), ms(wt.ToNs))
	lbl := fmt.Sprintf("▼ overlap: c%d and c%d both held %s, %s – %s (%s)", wt.A.Client, wt.B.Client, wt.Key,
		ms(wt.FromNs), ms(wt.ToNs), ms(wt.ToNs-wt.FromNs))
	anchor, lx := "start", x0-5
	if x0 > tlLabelW+tlPlotW*0.55 {
		anchor, lx = "end", x1+5
	}
	fmt.Fprintf(b, "<text class=\"ovt\" x=\"%.1f\" y=\"%.0f\" text-anchor=\"%s\">%s</text>\n", lx, oy+12, anchor, esc(lbl))
}

func writeTables(b *strings.Builder, t *timeline) {
	if wt := t.wt; wt != nil {
		b.WriteString("<h2>Witness</h2>\n<table><tr><th></th><th>client</th><th>process</th><th>key</th><th>held from</th><th>to</th><th>ended by</th><th>fence</th><th>token</th></tr>\n")
		for _, r := range []struct {
			n string
			h checker.Hold
		}{{"A", wt.A}, {"B", wt.B}} {
			fmt.Fprintf(b, "<tr><td>%s</td><td>c%d</td><td>p%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td></tr>\n",
				r.n, r.h.Client, r.h.Process, esc(r.h.Key), ms(r.h.From), ms(r.h.To), esc(r.h.End), r.h.Fence, esc(r.h.Token))
		}
		masters := ""
		if wt.A.Master != "" || wt.B.Master != "" {
			masters = fmt.Sprintf("; c%d was talking to %s, c%d to %s", wt.A.Client, wt.A.Master, wt.B.Client, wt.B.Master)
		}
		fmt.Fprintf(b, "<tr><td colspan=\"9\">overlap %s – %s (%s)%s</td></tr></table>\n", ms(wt.FromNs), ms(wt.ToNs), ms(wt.ToNs-wt.FromNs), esc(masters))
	}
	if len(t.marks) > 0 {
		b.WriteString("<h2>Sentinel events</h2>\n<table><tr><th>at</th><th>event (first Sentinel to report it)</th></tr>\n")
		for _, m := range t.marks {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td></tr>\n", ms(m.At), esc(m.Text))
		}
		b.WriteString("</table>\n")
	}
	if len(t.faults) > 0 {
		b.WriteString("<h2>Faults</h2>\n<table><tr><th>id</th><th>fault</th><th>from</th><th>to</th></tr>\n")
		for i, f := range t.faults {
			if i == 50 {
				fmt.Fprintf(b, "<tr><td colspan=\"4\">… %d more</td></tr>\n", len(t.faults)-i)
				break
			}
			to := ms(f.To)
			if f.Open {
				to = "never healed"
			}
			fmt.Fprintf(b, "<tr><td>%d</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", f.ID, esc(f.Desc), ms(f.From), to)
		}
		b.WriteString("</table>\n")
	}
}

// viewWindow chooses the time window to draw, [lo, hi], and the interval of
// interest [c0, c1] it narrows towards when too many holds fall in it.
func viewWindow(holds []checker.Hold, res checker.Result, end int64) (lo, hi, c0, c1 int64) {
	lo, hi = 0, max(end, 1)
	switch wt := res.Witness; {
	case wt != nil:
		c0, c1 = wt.FromNs, min(wt.ToNs, max(end, wt.FromNs))
		span := max(c1-c0, int64(200e6))
		lo = max(0, min(wt.A.From, wt.B.From)-span)
		hi = min(hi, max(wt.A.To, wt.B.To, c1)+span)
	case res.FirstViolationNs >= 0:
		c0, c1 = res.FirstViolationNs, res.FirstViolationNs
	default:
		c0, c1 = 0, 0
	}
	count := func(lo, hi int64) int {
		n := 0
		for _, hd := range holds {
			if hd.To >= lo && hd.From <= hi {
				n++
			}
		}
		return n
	}
	for count(lo, hi) > maxBars {
		nlo, nhi := lo+(min(c0, hi)-lo)/2, hi-(hi-max(c1, lo))/2
		if nlo == lo && nhi == hi {
			break
		}
		lo, hi = nlo, nhi
	}
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi, c0, c1
}

// niceStep is a tick step of 1, 2 or 5 × 10^k ns giving about 8 ticks.
func niceStep(span int64) int64 {
	raw := float64(span) / 8
	if raw < 1 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return int64(m * mag)
		}
	}
	return int64(10 * mag)
}

func isWitness(wt *checker.Witness, hd checker.Hold) bool {
	return wt != nil && hd.Key == wt.Key &&
		((hd.Process == wt.A.Process && hd.From == wt.A.From) || (hd.Process == wt.B.Process && hd.From == wt.B.From))
}

// keyLess orders keys naturally: lock:2 before lock:10.
func keyLess(a, b string) bool {
	ta, tb := strings.TrimRight(a, "0123456789"), strings.TrimRight(b, "0123456789")
	if ta == tb && len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func ms(ns int64) string { return fmt.Sprintf("%.1f ms", float64(ns)/1e6) }

func esc(s string) string { return html.EscapeString(s) }

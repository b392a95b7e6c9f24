package reports

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
)

// timelinePage is what templates/timeline.html draws.
type timelinePage struct {
	CSS                    template.CSS
	Title, Verdict, Reason string
	// HasWitness says the run has a witness; Witness is its text.
	HasWitness bool
	Witness    string
	Findings   []findingView
	Legend     legendView
	// Heading names the overview's window; ZoomHeading and Zoom are set
	// when the overlap is too short to see at the overview's scale.
	Heading, ZoomHeading string
	Overview             panelView
	Zoom                 *panelView
	Drawn, Omitted       int
	WitnessRows          []witnessRow
	// OverlapNote closes the witness table: the overlap and the masters.
	OverlapNote string
	Marks       []markRow
	Faults      []faultRow
	// FaultsMore counts the faults past the table's first 50.
	FaultsMore int
}

// legendView says which legend entries the page needs.
type legendView struct {
	Witness, Faults, Marks, Server, Crash bool
}

type witnessRow struct {
	Name               string
	Client, Process    int
	Key, From, To, End string
	Fence              int64
	Token              string
}

type markRow struct{ At, Text string }

type faultRow struct {
	ID             int64
	Desc, From, To string
}

// WriteTimeline draws holders per key over time as a self-contained HTML
// page (inline SVG and CSS, no scripts, no network): one lane per client per
// key, critical sections as bars, fault windows shaded and labelled, the
// violating overlap in red, a time axis, a legend. Only the neighbourhood of
// the violation is drawn when there is one, and at most maxBars critical
// sections, so the file stays small on long runs; when the overlap is too
// short to see at that scale a second panel zooms on it.
func WriteTimeline(w io.Writer, h history.History, res checker.Result, title string) error {
	t, lo, hi, omitted := newTimeline(h, res)
	wt := t.wt
	p := timelinePage{CSS: template.CSS(timelineCSS), Title: title, Verdict: res.Verdict, Reason: res.Reason,
		Findings: findingViews(res), Legend: t.legend(), Drawn: len(t.holds), Omitted: omitted}
	p.Heading = fmt.Sprintf("%s – %s of %s", ms(lo), ms(hi), ms(t.end))
	if wt != nil {
		p.HasWitness, p.Witness = true, wt.Text
		p.Heading = "Around the violation: " + p.Heading
	}
	p.Overview = t.geometry("overview", lo, hi).view()
	if wt != nil && (wt.ToNs-wt.FromNs)*40 < hi-lo {
		pad := max((wt.ToNs-wt.FromNs)*2, (hi-lo)/200, 1000)
		zlo, zhi := max(0, wt.FromNs-pad), wt.ToNs+pad
		p.ZoomHeading = fmt.Sprintf("Zoom on the overlap: %s – %s", ms(zlo), ms(zhi))
		z := t.geometry("zoom", zlo, zhi).view()
		p.Zoom = &z
	}
	t.tables(&p)
	return render(w, "timeline.html", p)
}

func (t *timeline) legend() legendView {
	l := legendView{Witness: t.wt != nil, Faults: len(t.faults) > 0, Marks: len(t.marks) > 0, Server: len(t.server) > 0}
	l.Crash = slices.ContainsFunc(t.holds, func(hd checker.Hold) bool { return hd.End == "crash" })
	return l
}

// tables fills the witness, Sentinel event and fault tables under the
// panels; the fault table lists the first 50.
func (t *timeline) tables(p *timelinePage) {
	if wt := t.wt; wt != nil {
		for _, r := range []struct {
			n string
			h checker.Hold
		}{{"A", wt.A}, {"B", wt.B}} {
			p.WitnessRows = append(p.WitnessRows, witnessRow{r.n, r.h.Client, r.h.Process, r.h.Key, ms(r.h.From), ms(r.h.To),
				r.h.End, r.h.Fence, r.h.Token})
		}
		masters := ""
		if wt.A.Master != "" || wt.B.Master != "" {
			masters = fmt.Sprintf("; c%d was talking to %s, c%d to %s", wt.A.Client, wt.A.Master, wt.B.Client, wt.B.Master)
		}
		p.OverlapNote = fmt.Sprintf("overlap %s – %s (%s)%s", ms(wt.FromNs), ms(wt.ToNs), ms(wt.ToNs-wt.FromNs), masters)
	}
	for _, m := range t.marks {
		p.Marks = append(p.Marks, markRow{ms(m.At), m.Text})
	}
	for i, f := range t.faults {
		if i == 50 {
			p.FaultsMore = len(t.faults) - i
			break
		}
		to := ms(f.To)
		if f.Open {
			to = "never healed"
		}
		p.Faults = append(p.Faults, faultRow{f.ID, f.Desc, ms(f.From), to})
	}
}

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

// panelView is one SVG panel: the lanes and keys, the time axis, fault
// windows, Sentinel events, the servers' key events, the critical sections
// and the overlap, drawn in that order (later layers on top).
type panelView struct {
	ID            string
	Width, Height float64
	// Hatch defines the fault windows' pattern (once per page).
	Hatch   bool
	Keys    []keyView
	Lanes   []laneView
	Axis    axisView
	Faults  []faultView
	Marks   []sentView
	Server  []serverTick
	Holds   []holdBar
	Overlap *overlapView
}

type keyView struct {
	Key                  string
	TextY, LineX2, LineY float64
}

type laneView struct {
	Class      string
	X, Y, W, H float64
	TextY      float64
	LabelClass string
	Client     int
}

type axisView struct {
	Ticks                 []tickView
	GridY1, GridY2        float64
	TopY, BottomY         float64
	LineX1, LineX2, LineY float64
}

type tickView struct {
	X     float64
	Label string
}

// box is a rectangle and its hover text.
type box struct {
	X, Y, W, H float64
	Title      string
}

type faultView struct {
	box
	// Label is the window's label row, nil past the first few.
	Label *labelView
}

type labelView struct {
	X, Y   float64
	Anchor string
	Text   string
}

type sentView struct {
	Title            string
	X, Y1, Y2, TextY float64
}

type serverTick struct {
	box
	Fill string
}

type holdBar struct {
	box
	Class string
	// Crash places the cross of a client that crashed holding it.
	Crash *labelView
}

type overlapView struct {
	X0, X1, LineY1, LineY2 float64
	ID                     string
	Box                    box
	Label                  labelView
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

// view lays out everything the panel draws.
func (g *panelGeom) view() panelView {
	return panelView{ID: g.id, Width: g.width, Height: g.height, Hatch: g.id == "overview",
		Keys: g.keys(), Lanes: g.laneViews(), Axis: g.axis(), Faults: g.faultViews(), Marks: g.sentinelEvents(),
		Server: g.serverEvents(), Holds: g.holdBars(), Overlap: g.overlap()}
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

// keys are the key headers, one above each key's first lane.
func (g *panelGeom) keys() []keyView {
	var out []keyView
	ls := g.timeline.lanes
	for i, l := range ls {
		if i > 0 && ls[i-1].key == l.key {
			continue
		}
		y := g.laneY(i) - tlKeyH
		out = append(out, keyView{Key: l.key, TextY: y + 13, LineX2: g.width - tlRight, LineY: y + tlKeyH - 1})
	}
	return out
}

// laneViews are the lane backgrounds, alternating, and their labels; the
// witness's two lanes are labelled in red.
func (g *panelGeom) laneViews() []laneView {
	var out []laneView
	for i, l := range g.timeline.lanes {
		y := g.laneY(i)
		cls := "lbl"
		if g.wt != nil && l.key == g.wt.Key && (l.client == g.wt.A.Client || l.client == g.wt.B.Client) {
			cls += " wl"
		}
		out = append(out, laneView{Class: fmt.Sprintf("lane%d", i%2), X: tlLabelW, Y: y, W: tlPlotW, H: tlLaneH, TextY: y + 14, LabelClass: cls, Client: l.client})
	}
	return out
}

// axis is the grid lines and the tick labels above and below the plot.
func (g *panelGeom) axis() axisView {
	a := axisView{GridY1: tlAxisH - 4, GridY2: g.plotBottom, TopY: tlAxisH - 8, BottomY: g.plotBottom + 15,
		LineX1: tlLabelW, LineX2: tlLabelW + tlPlotW, LineY: tlAxisH - 4}
	step := niceStep(g.hi - g.lo)
	dec := max(0, int(math.Ceil(-math.Log10(float64(step)/1e6))))
	for tk := (g.lo + step - 1) / step * step; tk <= g.hi; tk += step {
		a.Ticks = append(a.Ticks, tickView{g.x(tk), fmt.Sprintf("%.*f ms", dec, float64(tk)/1e6)})
	}
	return a
}

// faultViews shade each fault window over every lane, with a label row
// each for the first few.
func (g *panelGeom) faultViews() []faultView {
	var out []faultView
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
		v := faultView{box: box{x0, top, max(x1-x0, 2), g.plotBottom - top,
			fmt.Sprintf("fault %d: %s, %s – %s", f.ID, f.Desc, ms(f.From), to)}}
		if i < g.frows {
			l := labelView{X: x0 + 4, Y: top + 12, Anchor: "start", Text: fmt.Sprintf("fault %d: %s (%s – %s)", f.ID, f.Desc, ms(f.From), to)}
			if x0 > tlLabelW+tlPlotW*0.6 {
				l.Anchor, l.X = "end", x1-4
			}
			v.Label = &l
		}
		out = append(out, v)
	}
	return out
}

// sentinelEvents are a dashed line down the plot and a triangle on top for
// each Sentinel event in the window.
func (g *panelGeom) sentinelEvents() []sentView {
	var out []sentView
	for _, m := range g.marks {
		if m.At < g.lo || m.At > g.hi {
			continue
		}
		out = append(out, sentView{Title: ms(m.At) + ": " + m.Text, X: g.x(m.At), Y1: g.plotTop, Y2: g.plotBottom, TextY: g.plotTop + 10})
	}
	return out
}

// serverEvents are the servers' key events, a tick each on the key's
// header row, at most maxServerTicks so a long run stays drawable.
func (g *panelGeom) serverEvents() []serverTick {
	const maxServerTicks = 3000
	var out []serverTick
	for _, op := range g.server {
		if op.Time < g.lo || op.Time > g.hi || len(out) >= maxServerTicks {
			continue
		}
		first := slices.IndexFunc(g.timeline.lanes, func(l tlLane) bool { return l.key == op.Key })
		if first < 0 {
			continue
		}
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
		out = append(out, serverTick{box{g.x(op.Time) - 1, y + 3, 2, tlKeyH - 6,
			fmt.Sprintf("%s: %s %s at %s%s", op.Node, op.Value, op.Key, ms(op.Time), owner)}, col})
	}
	return out
}

// holdBars are the critical sections, the witness's two darker, and a
// cross where a client crashed holding the lock.
func (g *panelGeom) holdBars() []holdBar {
	var out []holdBar
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
		b := holdBar{box: box{x0, y + 4, max(x1-x0, 1.5), tlLaneH - 8,
			fmt.Sprintf("c%d (p%d) held %s %s – %s, ended by %s%s", hd.Client, hd.Process, hd.Key, ms(hd.From), ms(hd.To), hd.End, fence)}, Class: cls}
		if hd.End == "crash" && hd.To <= g.hi {
			b.Crash = &labelView{X: x1 + 1, Y: y + 14, Text: "✕"}
		}
		out = append(out, b)
	}
	return out
}

// overlap is the violation: a red box over the two witness lanes, dashed
// lines down the whole panel, and its label.
func (g *panelGeom) overlap() *overlapView {
	wt := g.wt
	if wt == nil {
		return nil
	}
	ia, oka := g.laneIdx[tlLane{wt.Key, wt.A.Client}]
	ib, okb := g.laneIdx[tlLane{wt.Key, wt.B.Client}]
	if !oka || !okb {
		return nil
	}
	x0, x1 := g.x(wt.FromNs), g.x(wt.ToNs)
	if x1-x0 < 4 { // too short to see: widen around its centre
		c := (x0 + x1) / 2
		x0, x1 = c-2, c+2
	}
	ya, yb := g.laneY(min(ia, ib)), g.laneY(max(ia, ib))+tlLaneH
	oy := tlAxisH + tlRowH*float64(g.frows)
	o := &overlapView{X0: x0, X1: x1, LineY1: oy + tlRowH - 2, LineY2: g.plotBottom, ID: "overlap-" + g.id,
		Box: box{x0, ya + 1, x1 - x0, yb - ya - 2, fmt.Sprintf("overlap on %s: %s – %s", wt.Key, ms(wt.FromNs), ms(wt.ToNs))}}
	o.Label = labelView{X: x0 - 5, Y: oy + 12, Anchor: "start", Text: fmt.Sprintf("▼ overlap: c%d and c%d both held %s, %s – %s (%s)",
		wt.A.Client, wt.B.Client, wt.Key, ms(wt.FromNs), ms(wt.ToNs), ms(wt.ToNs-wt.FromNs))}
	if x0 > tlLabelW+tlPlotW*0.55 {
		o.Label.Anchor, o.Label.X = "end", x1+5
	}
	return o
}

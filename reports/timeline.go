package reports

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
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
func faultWindows(h history.History) []faultWindow {
	open := map[int64]int{}
	var out []faultWindow
	var end int64
	for _, op := range h {
		end = max(end, op.Time)
		if op.Process == history.NemesisProcess && op.F == history.FStall && op.N >= int64(timelineStallMin) {
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
		if op.Process != history.NemesisProcess || op.Type != history.Ok {
			continue
		}
		switch op.F {
		case history.FStart:
			open[op.N] = len(out)
			out = append(out, faultWindow{ID: op.N, Desc: op.Value, From: op.Time, To: -1})
		case history.FStop:
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

// sentinelMarks picks the Sentinel events (history.FSentinel, "s1 +odown
// master n1 ...") worth a mark; an event several Sentinels report is
// marked once, when the first does.
func sentinelMarks(h history.History) []sentinelMark {
	seen := map[string]bool{}
	var out []sentinelMark
	for _, op := range h {
		if op.F != history.FSentinel {
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
func WriteTimelineFile(path string, h history.History, res checker.Result, title string) error {
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

type tlLane struct {
	key    string
	client int
}

// timeline is what both panels draw.
type timeline struct {
	holds   []checker.Hold // clipped to the history's end, within the view
	faults  []faultWindow
	marks   []sentinelMark
	server  []history.Op // the servers' key events (FServer), drawn on key rows
	lanes   []tlLane
	laneIdx map[tlLane]int
	keys    []string
	wt      *checker.Witness
	end     int64
}

// newTimeline gathers what the panels draw: the holds in the view window
// [lo, hi] (at most maxBars, omitted says how many more), the fault windows,
// Sentinel marks, server events, and one lane per (key, client).
func newTimeline(h history.History, res checker.Result) (t *timeline, lo, hi int64, omitted int) {
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
		if op.Process == history.ServerProcess && op.F == history.FServer {
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

// Package bench measures lockstorm itself: how fast it drives a lock, how
// fast it checks a history, how soon a random run finds a documented bug,
// how long the suites take, and what recording costs. Every figure is
// measured beside a reference taken in the same run on the same machine,
// so a ratio stays comparable on a shared, noisy host where absolute
// figures are not.
//
// Each row group has its own exported function (DriveRate, CheckRate,
// TimeToBug, SuiteTime, RecorderCost) returning Rows; WriteTable and
// WriteJSON print them. `lockstorm bench` is the command-line front end.
package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// Statuses of a Row.
const (
	Met    = "met"
	Missed = "missed"
	Info   = "info"    // no goal: the figure is for comparison between commits
	NotRun = "not run" // skipped (e.g. the suite rows without --suite)
	Failed = "error"   // the measurement itself failed; Note says why
)

// Row is one measured figure with its reference and goal.
type Row struct {
	// Row is the table's row label: group number and letter, e.g. "1a".
	Row string `json:"row"`
	// Name is a stable identifier for comparing commits, e.g. "drive/direct".
	Name string `json:"name"`
	// Measure says in words what was measured.
	Measure string `json:"measure"`
	// Figure is the measured value in Unit.
	Figure float64 `json:"figure"`
	Unit   string  `json:"unit"`
	// Reference is what Figure is compared with (0: none), in RefUnit.
	Reference float64 `json:"reference"`
	RefUnit   string  `json:"reference_unit,omitempty"`
	// RefName says what the reference is.
	RefName string `json:"reference_name,omitempty"`
	// Ratio is Figure ÷ Reference, or another ratio the Goal is stated in
	// (0: none).
	Ratio float64 `json:"ratio"`
	// Goal states the target, e.g. "ratio ≥ 0.35" ("" : none).
	Goal string `json:"goal,omitempty"`
	// Met says whether the goal was met; nil when there is no goal or the
	// row was not run.
	Met *bool `json:"met"`
	// Status is met, missed, info, not run or error.
	Status string `json:"status"`
	// Extra holds further figures of the row (peak heap, allocations...).
	Extra map[string]float64 `json:"extra,omitempty"`
	// Note explains the row: how it was measured, what limited it.
	Note string `json:"note,omitempty"`
	// Detail are further lines under the note: the parts a figure is made
	// of (the battery's runs, each with its phases).
	Detail []string `json:"detail,omitempty"`

	// Display texts for the table (derived from the figures when empty).
	FigureText string `json:"-"`
	RefText    string `json:"-"`
	RatioText  string `json:"-"`
}

// judge sets Met and Status from ok.
func (r *Row) judge(ok bool) {
	r.Met = &ok
	if ok {
		r.Status = Met
	} else {
		r.Status = Missed
	}
}

// Report is everything one bench run measured.
type Report struct {
	Started    time.Time `json:"started"`
	GoVersion  string    `json:"go_version"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	NumCPU     int       `json:"num_cpu"`
	Quick      bool      `json:"quick"`
	ElapsedSec float64   `json:"elapsed_s"`
	Rows       []Row     `json:"rows"`
}

// NewReport starts a report stamped with the host's facts.
func NewReport(quick bool) *Report {
	return &Report{Started: time.Now(), GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU: runtime.NumCPU(), Quick: quick}
}

// Missed counts rows whose goal was missed or whose measurement failed.
func (r *Report) Missed() int {
	n := 0
	for _, row := range r.Rows {
		if row.Status == Missed || row.Status == Failed {
			n++
		}
	}
	return n
}

// WriteJSON writes the report as one indented JSON object.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// TableHeader is the table's header row.
var TableHeader = []string{"row", "measure", "figure", "reference", "ratio/goal", "verdict"}

// Cells is a row as the table prints it.
func Cells(r Row) []string {
	fig := r.FigureText
	if fig == "" {
		fig = num(r.Figure) + " " + r.Unit
	}
	ref := r.RefText
	if ref == "" {
		ref = "-"
		if r.Reference != 0 {
			ref = num(r.Reference) + " " + r.RefUnit
			if r.RefName != "" {
				ref += " (" + r.RefName + ")"
			}
		}
	}
	ratio := r.RatioText
	if ratio == "" && r.Ratio != 0 {
		ratio = strconv.FormatFloat(r.Ratio, 'f', 3, 64)
	}
	if r.Goal != "" {
		if ratio != "" {
			ratio += " / "
		}
		ratio += "goal " + r.Goal
	}
	if ratio == "" {
		ratio = "-"
	}
	return []string{r.Row, r.Measure, strings.TrimSpace(fig), ref, ratio, r.Status}
}

// WriteTable prints the rows as one table, then each row's note.
func WriteTable(w io.Writer, r *Report) error {
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header(toAny(TableHeader)...)
	for _, row := range r.Rows {
		if err := t.Append(Cells(row)); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "host: %d CPUs, GOMAXPROCS %d, %s; bench took %.1f s\n", r.NumCPU, r.GOMAXPROCS, r.GoVersion, r.ElapsedSec)
	for _, row := range r.Rows {
		if row.Note != "" {
			fmt.Fprintf(w, "  [%s] %s\n", row.Row, row.Note)
		}
		for _, d := range row.Detail {
			fmt.Fprintf(w, "      %s\n", d)
		}
	}
	return nil
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// num prints a figure with about three significant digits.
func num(x float64) string {
	switch ax := math.Abs(x); {
	case ax == 0:
		return "0"
	case ax >= 1000:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case ax >= 100:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case ax >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	default:
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
}

// Progress receives one line per step of a long measurement; nil is silent.
type Progress func(format string, args ...any)

func (p Progress) say(format string, args ...any) {
	if p != nil {
		p(format, args...)
	}
}

// heapSample is the metric PeakHeap samples: bytes in live and not yet
// swept heap objects (what a GC cycle would have to scan), the part of the
// heap a checker's data structures occupy.
const heapSample = "/memory/classes/heap/objects:bytes"

// PeakHeap runs f while a goroutine samples the heap every 2 ms, and
// returns f's wall time and the peak heap seen (bytes, including whatever
// was live before f started, e.g. the history under check).
func PeakHeap(f func()) (time.Duration, uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		s := []metrics.Sample{{Name: heapSample}}
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			v := s[0].Value.Uint64()
			if v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	f()
	el := time.Since(start)
	close(done)
	<-stopped
	// One last read: a short f may end between two samples.
	s := []metrics.Sample{{Name: heapSample}}
	metrics.Read(s)
	return el, max(peak.Load(), s[0].Value.Uint64())
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// median of xs (sorted in place); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func yes(b bool) *bool { return &b }

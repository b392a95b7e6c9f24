package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// LoopStats is the cost of one call, averaged over a loop.
type LoopStats struct {
	N           int
	NsPerOp     float64
	BytesPerOp  float64
	AllocsPerOp float64
}

// MeasureLoop runs f n times (split over par goroutines when par > 1) and
// returns the average wall time, heap bytes and allocations per call, read
// from runtime.MemStats as testing.B does.
func MeasureLoop(n, par int, f func()) LoopStats {
	par = max(par, 1)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	if par == 1 {
		for range n {
			f()
		}
	} else {
		var wg sync.WaitGroup
		for g := range par {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < n; i += par {
					f()
				}
			}()
		}
		wg.Wait()
	}
	el := time.Since(start)
	runtime.ReadMemStats(&m1)
	return LoopStats{N: n, NsPerOp: float64(el.Nanoseconds()) / float64(n),
		BytesPerOp:  float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n),
		AllocsPerOp: float64(m1.Mallocs-m0.Mallocs) / float64(n)}
}

// sampleOp is a typical recorded entry: an acquire ok with a token.
var sampleOp = history.Op{Type: history.Ok, Process: 17, Client: 17, F: history.FAcquire, Key: "lock:3",
	Value: "17-0123456789abcdef0123456789abcdef", Fence: 0}

// RecorderCost measures history.Recorder.Add (n entries into one recorder,
// from one goroutine and from 64) and lockimpl.Failpoints.Hit on a hub with
// nothing attached (the cost every implementation step pays in a run
// without failpoints). The recorder's reference is the size of one Op: it
// keeps each entry in a compact form with no pointer (56 bytes; strings in
// blocks, rarely used fields in a side list), plus the blocks' and chunks'
// growth.
func RecorderCost(n int) []Row {
	if n <= 0 {
		n = 1_000_000
	}
	opSize := float64(unsafe.Sizeof(history.Op{}))

	rec := history.NewRecorder()
	one := MeasureLoop(n, 1, func() { rec.Add(sampleOp) })
	rec = history.NewRecorder()
	par := MeasureLoop(n, 64, func() { rec.Add(sampleOp) })
	allocs := testingAllocs(rec)

	hub := lockimpl.NewHub()
	fp := lockimpl.NewFailpoints(hub, 0)
	ctx := context.Background()
	fpn := n * 10
	fps := MeasureLoop(fpn, 1, func() { _ = fp.Hit(ctx, "set-nx-px/before-set") })

	return []Row{
		{Row: "5a", Name: "recorder/add", Measure: "checker.Recorder.Add, 1 goroutine: heap bytes per op",
			Figure: one.BytesPerOp, Unit: "B/op", Reference: opSize, RefUnit: "B", RefName: "sizeof(Op)", Ratio: one.BytesPerOp / opSize,
			FigureText: fmt.Sprintf("%.0f B/op, %.3f allocs/op, %.0f ns/op", one.BytesPerOp, one.AllocsPerOp, one.NsPerOp),
			Status:     Info, Extra: map[string]float64{"allocs_per_op": one.AllocsPerOp, "ns_per_op": one.NsPerOp, "n": float64(n),
				"allocs_per_run_steady": allocs},
			Note: fmt.Sprintf("%d Adds into one recorder; bytes are the compact entries kept plus their chunks' growth (ratio to sizeof(Op)); "+
				"testing.AllocsPerRun of one Add into a warm recorder: %.2f", n, allocs)},
		{Row: "5b", Name: "recorder/add-64", Measure: "checker.Recorder.Add, 64 goroutines: ns per op",
			Figure: par.NsPerOp, Unit: "ns/op", Reference: one.NsPerOp, RefUnit: "ns/op", RefName: "1 goroutine", Ratio: par.NsPerOp / one.NsPerOp,
			FigureText: fmt.Sprintf("%.0f ns/op, %.0f B/op", par.NsPerOp, par.BytesPerOp),
			Status:     Info, Extra: map[string]float64{"bytes_per_op": par.BytesPerOp, "allocs_per_op": par.AllocsPerOp}},
		{Row: "5c", Name: "failpoint/unattached", Measure: "lockimpl.Failpoints.Hit, unarmed hub",
			Figure: fps.NsPerOp, Unit: "ns/op", FigureText: fmt.Sprintf("%.2f ns/op, %.0f allocs/op", fps.NsPerOp, fps.AllocsPerOp),
			Status: Info, Extra: map[string]float64{"allocs_per_op": fps.AllocsPerOp},
			Note: fmt.Sprintf("%d hits", fpn)},
	}
}

// testingAllocs is testing.AllocsPerRun of one Add into rec (already warm).
func testingAllocs(rec *history.Recorder) float64 {
	return testing.AllocsPerRun(1000, func() { rec.Add(sampleOp) })
}

package checker

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
)

// peakHeap samples the live heap while f runs and returns its peak in MB.
func peakHeap(f func()) float64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		s := make([]metrics.Sample, 1)
		copy(s, sample)
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	<-stopped
	return float64(peak.Load()) / (1 << 20)
}

// BenchmarkCheck: Check on synthetic histories (1% unknown outcomes), with
// and without one violation. peak-heap-MB includes the history itself.
func BenchmarkCheck(b *testing.B) {
	for _, ops := range []int{10_000, 100_000} {
		for _, keys := range []int{1, 100} {
			for _, viol := range []bool{false, true} {
				benchCheck(b, history.SynthConfig{Ops: ops, Keys: keys, Unknown: 0.01, Violation: viol, Seed: 1})
			}
		}
	}
}

// BenchmarkCheckLarge: the goals — 1M operations on 100 keys, and 100k
// (and 1M) on one hot key with a violation.
func BenchmarkCheckLarge(b *testing.B) {
	benchCheck(b, history.SynthConfig{Ops: 1_000_000, Keys: 100, Unknown: 0.01, Seed: 1})
	benchCheck(b, history.SynthConfig{Ops: 1_000_000, Keys: 100, Unknown: 0.01, Violation: true, Seed: 1})
	benchCheck(b, history.SynthConfig{Ops: 100_000, Keys: 1, Unknown: 0.01, Violation: true, Seed: 1})
	benchCheck(b, history.SynthConfig{Ops: 1_000_000, Keys: 1, Unknown: 0.01, Violation: true, Seed: 1})
}

func benchCheck(b *testing.B, cfg history.SynthConfig) {
	name := fmt.Sprintf("ops=%d/keys=%d/violation=%v", cfg.Ops, cfg.Keys, cfg.Violation)
	b.Run(name, func(b *testing.B) {
		h := history.Synthetic(cfg)
		want := Safe
		if cfg.Violation {
			want = Unsafe
		}
		runtime.GC()
		b.ReportAllocs()
		b.ResetTimer()
		var peak float64
		for b.Loop() {
			peak = max(peak, peakHeap(func() {
				if r := Check(h, history.Options{}); r.Verdict != want || r.Disagreements != 0 {
					b.Fatalf("verdict %s (%s), disagreements %d", r.Verdict, r.Reason, r.Disagreements)
				}
			}))
		}
		b.ReportMetric(peak, "peak-heap-MB")
	})
}

// BenchmarkUnsplit is raw porcupine on the whole history, for comparison
// (small sizes only: it is what does not scale).
func BenchmarkUnsplit(b *testing.B) {
	for _, cfg := range []history.SynthConfig{
		{Ops: 2_000, Keys: 1, Unknown: 0.01, Seed: 1},
		{Ops: 2_000, Keys: 1, Unknown: 0.01, Violation: true, Seed: 1},
	} {
		b.Run(fmt.Sprintf("ops=%d/keys=%d/violation=%v", cfg.Ops, cfg.Keys, cfg.Violation), func(b *testing.B) {
			h := history.Synthetic(cfg)
			b.ReportAllocs()
			for b.Loop() {
				unsplit(b, h)
			}
		})
	}
}

// BenchmarkRecorderAdd: one typical entry (an acquire ok with a token)
// into one recorder, from one goroutine; B/op is what the recorder keeps
// per entry (its chunks' share).
func BenchmarkRecorderAdd(b *testing.B) {
	op := history.Op{Type: history.Ok, Process: 17, Client: 17, F: history.FAcquire, Key: "lock:3", Value: "17-0123456789abcdef0123456789abcdef"}
	rec := history.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		rec.Add(op)
	}
}

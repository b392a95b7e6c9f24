package checker

import (
	"fmt"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/lockstorm/lockstorm/checker/mutex"
	"github.com/lockstorm/lockstorm/history"
)

// BenchmarkCheckVsPorcupine: Check and raw porcupine (MutexOperations and
// CheckOperations on the whole history) on the same 1M-op, 100-key
// history, correct and with a violation; the ratio of their medians is the
// checker's speed against porcupine's.
func BenchmarkCheckVsPorcupine(b *testing.B) {
	for _, viol := range []bool{false, true} {
		cfg := history.SynthConfig{Ops: 1_000_000, Keys: 100, Unknown: 0.01, Violation: viol, Seed: 1}
		h := history.Synthetic(cfg)
		want, raw := Safe, porcupine.Ok
		if viol {
			want, raw = Unsafe, porcupine.Illegal
		}
		b.Run(fmt.Sprintf("check/violation=%v", viol), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := Check(h, history.Options{}); r.Verdict != want || r.Disagreements != 0 {
					b.Fatalf("verdict %s (%s), disagreements %d", r.Verdict, r.Reason, r.Disagreements)
				}
			}
		})
		b.Run(fmt.Sprintf("porcupine/violation=%v", viol), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := porcupine.CheckOperationsTimeout(mutex.Model(), MutexOperations(h), 0); r != raw {
					b.Fatalf("porcupine says %v", r)
				}
			}
		})
	}
}

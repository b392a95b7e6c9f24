package checker

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockstorm/lockstorm/history"
)

const k0 = "lock:0"

func TestCheckSemantics(t *testing.T) {
	cases := []struct {
		name     string
		opts     history.Options
		hist     func(b *builder)
		verdict  string
		overlaps int
		check    func(t *testing.T, r Result)
	}{
		{
			name: "adjacent holds are a clean hand-off",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(5, 6, history.Ok, 1, 1, history.FRelease, k0)
				b.op(2, 5, history.Ok, 2, 2, history.FAcquire, k0) // ok exactly at the release invoke
				b.op(8, 9, history.Ok, 2, 2, history.FRelease, k0)
			},
			verdict: Safe,
		},
		{
			name: "reentrant hold ends when the count returns to zero",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(2, 3, history.Ok, 1, 1, history.FAcquire, k0) // nested
				b.op(4, 5, history.Ok, 1, 1, history.FRelease, k0) // count 1: still held
				b.op(4.5, 6, history.Ok, 2, 2, history.FAcquire, k0)
				b.op(7, 8, history.Ok, 1, 1, history.FRelease, k0) // count 0: the hold ends at 7
				b.op(9, 10, history.Ok, 2, 2, history.FRelease, k0)
			},
			verdict: Unsafe, overlaps: 1,
			check: func(t *testing.T, r Result) {
				expect(t, r.Holds, 2, "holds")
				expect(t, r.Acquired, 3, "acquired")
				expect(t, r.Witness.A.To, msT(7), "A's end")
				expect(t, [2]int64{r.Witness.FromNs, r.Witness.ToNs}, [2]int64{msT(6), msT(7)}, "overlap")
			},
		},
		{
			name: "a careful client's abandonment ends its hold there",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(1.1, 1.2, history.Ok, 1, 1, history.FRead, k0, n(0))
				b.add(4, history.Ok, 1, 1, history.FAbandon, k0, errs("validity 3ms over"))
				b.op(5, 6, history.Ok, 2, 2, history.FAcquire, k0)
				b.op(6.1, 6.2, history.Ok, 2, 2, history.FRead, k0, n(0))
				b.op(7, 7.1, history.Fail, 1, 1, history.FRelease, k0, errs("not held")) // released after the other took it
				b.op(8, 8.1, history.Ok, 2, 2, history.FWrite, k0, n(1))
				b.op(9, 10, history.Ok, 2, 2, history.FRelease, k0)
				b.final(11, k0, 1)
			},
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				expect(t, r.Holds, 2, "holds")
				expect(t, r.NetLostUpdates, int64(0), "lost updates")
			},
		},
		{
			name: "the same client without the abandonment overlaps",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(1.1, 1.2, history.Ok, 1, 1, history.FRead, k0, n(0))
				b.op(5, 6, history.Ok, 2, 2, history.FAcquire, k0)
				b.op(6.1, 6.2, history.Ok, 2, 2, history.FRead, k0, n(0))
				b.op(7, 7.1, history.Fail, 1, 1, history.FRelease, k0, errs("not held"))
				b.op(8, 8.1, history.Ok, 2, 2, history.FWrite, k0, n(1))
				b.op(9, 10, history.Ok, 2, 2, history.FRelease, k0)
				b.final(11, k0, 1)
			},
			verdict: Unsafe, overlaps: 1,
		},
		{
			name: "a release that fails still ends the critical section at its invoke",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(5, 6, history.Fail, 1, 1, history.FRelease, k0, errs("not held"))
				b.op(2, 5.5, history.Ok, 2, 2, history.FAcquire, k0)
				b.op(8, 9, history.Ok, 2, 2, history.FRelease, k0)
			},
			verdict: Safe,
		},
		{
			name: "a crash ends the hold",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.add(3, history.Ok, 1, 1, history.FCrash, "")
				b.op(2, 4, history.Ok, 2, 2, history.FAcquire, k0)
				b.op(8, 9, history.Ok, 2, 2, history.FRelease, k0)
			},
			verdict: Safe,
		},
		{
			name: "a hold never released lasts to the end of the history",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(2, 4, history.Ok, 2, 2, history.FAcquire, k0)
				b.op(8, 9, history.Ok, 2, 2, history.FRelease, k0)
			},
			verdict: Unsafe, overlaps: 1,
			check: func(t *testing.T, r Result) {
				expect(t, r.Witness.A.End, "end", "A's end")
				expect(t, r.Witness.A.To, msT(9), "A's To")
			},
		},
		{
			name: "an ok after the client crashed is no hold",
			hist: func(b *builder) {
				b.add(0, history.Invoke, 1, 1, history.FAcquire, k0)
				b.add(1, history.Ok, 1, 1, history.FCrash, "")
				b.add(2, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(3, 4, history.Ok, 2, 2, history.FAcquire, k0)
				b.op(8, 9, history.Ok, 2, 2, history.FRelease, k0)
			},
			verdict: Safe,
		},
		{
			name: "an unknown write inside the section: the client releases under its new process",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(2, 3, history.Info, 1, 1, history.FWrite, k0, n(1))
				b.op(4, 5, history.Ok, 3, 1, history.FRelease, k0) // process 3 is client 1 again
				b.op(2, 6, history.Ok, 2, 2, history.FAcquire, k0)
				b.op(8, 9, history.Ok, 2, 2, history.FRelease, k0)
				b.final(10, k0, 1) // the unknown write landed
			},
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				expect(t, r.Unknown, 1, "unknown")
				expect(t, r.NetLostUpdates, int64(-1), "lost updates, negative as is")
			},
		},
		{
			name: "an acquire still in flight at the end is unknown, a no-op",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.add(2, history.Invoke, 2, 2, history.FAcquire, k0)
				b.op(5, 6, history.Ok, 1, 1, history.FRelease, k0)
			},
			verdict: Safe,
		},
		{
			name: "overlap across two keys is none",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, "lock:0")
				b.op(0, 1, history.Ok, 2, 2, history.FAcquire, "lock:1")
				b.op(5, 6, history.Ok, 1, 1, history.FRelease, "lock:0")
				b.op(5, 6, history.Ok, 2, 2, history.FRelease, "lock:1")
			},
			verdict: Safe,
		},
		{
			name: "the earliest overlap is the witness, over keys",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, "lock:1")
				b.op(0, 3, history.Ok, 2, 2, history.FAcquire, "lock:1")
				b.op(0, 1, history.Ok, 3, 3, history.FAcquire, "lock:0")
				b.op(0, 2, history.Ok, 4, 4, history.FAcquire, "lock:0")
				b.op(0, 2.5, history.Ok, 5, 5, history.FAcquire, "lock:0")
				for p := 1; p <= 5; p++ {
					b.op(10, 11, history.Ok, p, p, history.FRelease, map[bool]string{true: "lock:1", false: "lock:0"}[p <= 2])
				}
			},
			verdict: Unsafe, overlaps: 4,
			check: func(t *testing.T, r Result) {
				expect(t, r.Witness.Key, "lock:0", "key")
				expect(t, [2]int{r.Witness.A.Process, r.Witness.B.Process}, [2]int{3, 4}, "processes")
				expect(t, r.FirstViolationNs, msT(2), "first violation")
			},
		},
		{
			name: "fenced: overlap with the resource intact is safe",
			opts: history.Options{Fenced: true},
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, fence(1))
				b.op(2, 3, history.Ok, 2, 2, history.FAcquire, k0, fence(2))
				b.op(4, 5, history.Ok, 2, 2, history.FWrite, k0, nf(1, 2))
				b.op(6, 7, history.Fail, 1, 1, history.FWrite, k0, nf(1, 1))
				b.op(8, 9, history.Ok, 1, 1, history.FRelease, k0)
				b.op(8, 9, history.Ok, 2, 2, history.FRelease, k0)
			},
			verdict: Safe, overlaps: 1,
			check: func(t *testing.T, r Result) { expect(t, r.Rejected, 1, "rejected") },
		},
		{
			name: "unfenced writes are not stale, a repeat of one fence by its holder neither",
			hist: func(b *builder) {
				b.cycle(1, 1, k0, 0, 1, 5, 0, 0)
				b.cycle(2, 2, k0, 6, 7, 10, 1, 0)
				b.op(11, 12, history.Ok, 3, 3, history.FAcquire, k0, fence(7))
				b.op(13, 14, history.Ok, 3, 3, history.FWrite, k0, nf(3, 7))
				b.op(15, 16, history.Ok, 3, 3, history.FWrite, k0, nf(4, 7))
				b.op(17, 18, history.Ok, 3, 3, history.FRelease, k0)
			},
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				expect(t, r.StaleWrites, 0, "stale")
				expect(t, r.FinalValue, int64(4), "final value = last acked write without a final read")
				expect(t, r.NetLostUpdates, int64(0), "lost")
			},
		},
		{
			name: "a fence issued to two processes",
			opts: history.Options{Fenced: true},
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, fence(5))
				b.op(2, 3, history.Ok, 1, 1, history.FRelease, k0)
				b.op(4, 5, history.Ok, 2, 2, history.FAcquire, k0, fence(5))
				b.op(6, 7, history.Ok, 2, 2, history.FRelease, k0)
			},
			verdict: Unsafe,
			check: func(t *testing.T, r Result) {
				expect(t, r.DupFences, 1, "dup fences")
				expect(t, r.FirstViolationNs, msT(5), "first violation")
			},
		},
		{
			name: "a stale write accepted",
			opts: history.Options{Fenced: true},
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 2, 2, history.FAcquire, k0, fence(2))
				b.op(2, 3, history.Ok, 2, 2, history.FWrite, k0, nf(1, 2))
				b.op(4, 5, history.Ok, 2, 2, history.FRelease, k0)
				b.op(6, 7, history.Ok, 1, 1, history.FAcquire, k0, fence(1))
				b.op(8, 9, history.Ok, 1, 1, history.FWrite, k0, nf(2, 1))
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0)
			},
			verdict: Unsafe,
			check: func(t *testing.T, r Result) {
				expect(t, r.FenceRegressions, 1, "fence regressions")
				expect(t, r.FirstViolationNs, msT(8), "first violation")
			},
		},
		{
			name: "deadlock: the holder crashed, the others retry for 20 s",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.add(1000, history.Ok, 1, 1, history.FCrash, "")
				for s := 2.0; s < 22; s++ {
					b.op(s*1000, s*1000+5, history.Fail, 2, 2, history.FAcquire, k0)
				}
			},
			verdict: Deadlock,
			check: func(t *testing.T, r Result) {
				expect(t, r.LongestStarvedMs, 21005-2000.0, "starved")
				expect(t, r.StarvedKey, k0, "starved key")
				expect(t, r.StarvedFromNs, msT(2000), "starved from")
				expect(t, r.FirstViolationNs, msT(2000), "first violation: the starvation's start")
				expect(t, r.FirstViolation, ViolationStarvation, "first violation kind")
			},
		},
		{
			name: "deadlock: the first violation is the first starvation past the bound, not the longest",
			hist: func(b *builder) {
				// lock:1 starves 11 s from 1 s; lock:0 starves 15 s from 3 s
				// after a 1 s starvation (under the bound) from 0.
				b.op(0, 1000, history.Ok, 1, 1, history.FAcquire, k0)
				b.add(2000, history.Ok, 1, 1, history.FCrash, "")
				for s := 3.0; s < 18; s++ {
					b.op(s*1000, s*1000+5, history.Fail, 2, 2, history.FAcquire, k0)
				}
				b.op(1000, 12000, history.Ok, 3, 3, history.FAcquire, "lock:1")
				b.op(12001, 12002, history.Ok, 3, 3, history.FRelease, "lock:1")
			},
			verdict: Deadlock,
			check: func(t *testing.T, r Result) {
				expect(t, r.StarvedKey, k0, "longest starvation's key")
				expect(t, r.FirstViolationNs, msT(1000), "first violation: lock:1's starvation")
			},
		},
		{
			name: "no acquisition, every attempt unknown for 20 s: not exercised, not a deadlock",
			hist: func(b *builder) {
				for s := 0.0; s < 20; s++ {
					pid := 10 + int(s) // after an unknown outcome the client goes on as a new process
					b.op(s*1000, s*1000+5, history.Info, pid, 2, history.FAcquire, k0)
				}
			},
			verdict: Inconclusive,
			check:   func(t *testing.T, r Result) { expect(t, r.LongestStarvedMs, 0.0, "starved") },
		},
		{
			name: "unknown attempts then definite refusals: starved up to the last refusal",
			hist: func(b *builder) {
				for s := 0.0; s < 5; s++ {
					b.op(s*1000, s*1000+5, history.Info, 10+int(s), 2, history.FAcquire, k0)
				}
				for s := 5.0; s < 15; s++ {
					b.op(s*1000, s*1000+5, history.Fail, 20, 2, history.FAcquire, k0)
				}
				for s := 15.0; s < 25; s++ {
					b.op(s*1000, s*1000+5, history.Info, 20+int(s), 2, history.FAcquire, k0)
				}
			},
			verdict: Deadlock,
			check:   func(t *testing.T, r Result) { expect(t, r.LongestStarvedMs, 14005.0, "starved") },
		},
		{
			name: "attempts that are not retried do not starve a key",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(2, 3, history.Fail, 2, 2, history.FAcquire, k0)
				b.op(4, 5, history.Ok, 2, 2, history.FRead, "other")
				b.op(15000, 15001, history.Ok, 1, 1, history.FRelease, k0)
				b.op(30000, 30001, history.Ok, 3, 3, history.FRead, "other")
			},
			verdict: Safe,
			// only c1's own first acquire (0 → 1 ms) waited on a free key
			check: func(t *testing.T, r Result) { expect(t, r.LongestStarvedMs, 1.0, "starved") },
		},
		{
			name: "deadlock bound is an option",
			opts: history.Options{DeadlockBound: time.Second},
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.add(2, history.Ok, 1, 1, history.FCrash, "")
				b.op(3, 1500, history.Fail, 2, 2, history.FAcquire, k0)
			},
			verdict: Deadlock,
		},
		{
			name: "liveness figures",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(1.5, 4, history.Ok, 2, 2, history.FAcquire, k0) // waits; hand-off 4 - 3.5
				b.op(3, 3.5, history.Ok, 1, 1, history.FRelease, k0)
				b.op(5, 6, history.Ok, 2, 2, history.FRelease, k0)
				b.op(7, 8, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(9, 10, history.Ok, 1, 1, history.FRelease, k0)
				b.op(11, 12, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(13, 14, history.Ok, 1, 1, history.FRelease, k0)
				b.op(7.5, 20, history.Fail, 3, 3, history.FAcquire, k0)
			},
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				expect(t, r.Acquired, 4, "acquired")
				expect(t, r.Attempts, 5, "attempts")
				expect(t, r.HandoffP50Ms, 0.5, "hand-off p50")
				expect(t, r.HandoffMaxMs, 2.0, "hand-off max") // c3 waits at the release at 9 (ok 10): 12 - 10
				expect(t, r.AcquireP50Ms, 1.0, "acquire p50")
				expect(t, r.AcquireP99Ms, 2.5, "acquire p99")
				expect(t, r.LongestWaitMs, 12.5, "longest wait")
				// clients 1, 2, 3 got 3, 1, 0: (4)² / (3 · 10)
				expect(t, math.Round(r.Fairness*1000)/1000, math.Round(16.0/30*1000)/1000, "fairness")
			},
		},
		{
			name:    "an empty history tests nothing",
			hist:    func(b *builder) {},
			verdict: Inconclusive,
		},
		{
			name: "malformed history is never safe",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(2, 3, history.Ok, 1, 1, history.FRelease, k0)
				b.add(4, history.Ok, 2, 2, history.FAcquire, k0) // completion without invoke
			},
			verdict: Inconclusive,
			check:   func(t *testing.T, r Result) { expect(t, r.Malformed, 1, "malformed") },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &builder{}
			tc.hist(b)
			h := b.sorted()
			r := Check(h, tc.opts)
			t.Logf("%s: %s", r.Verdict, r.Reason)
			expect(t, r.Verdict, tc.verdict, "verdict")
			expect(t, r.Overlaps, tc.overlaps, "overlaps")
			expect(t, r.Disagreements, 0, "disagreements")
			if r.Overlaps > 0 && r.Witness == nil {
				t.Fatal("overlap without witness")
			}
			if tc.check != nil {
				tc.check(t, r)
			}
			assertSplitAgrees(t, h)
		})
	}
}

// TestTimeoutIsInconclusive: a piece porcupine could not finish makes a
// clean history inconclusive, never safe. Every piece goes to porcupine
// here, the clean ones the replay would accept too.
func TestTimeoutIsInconclusive(t *testing.T) {
	old, oldReplay := checkPiece, replayPiece
	checkPiece = func(porcupine.Model, []porcupine.Operation, time.Duration) porcupine.CheckResult {
		return porcupine.Unknown
	}
	replayPiece = func(*keyData, piece) bool { return false }
	defer func() { checkPiece, replayPiece = old, oldReplay }()
	h, err := history.ReadFile(goldenPath("good"))
	if err != nil {
		t.Fatal(err)
	}
	r := Check(h, history.Options{})
	expect(t, r.Verdict, Inconclusive, "verdict")
	expect(t, r.Linearizable, linUnknown, "linearizable")
	h, _ = history.ReadFile(goldenPath("overlap"))
	expect(t, Check(h, history.Options{}).Verdict, Unsafe, "an overlap is unsafe whatever porcupine says")
}

func TestVisualize(t *testing.T) {
	h, err := history.ReadFile(goldenPath("overlap"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, res, err := violation(h, history.Options{})
	if err != nil || res != porcupine.Illegal {
		t.Fatalf("Violation: %v, %v", res, err)
	}
	// a long history: only the violating piece is drawn
	big := history.Synthetic(history.SynthConfig{Ops: 20000, Keys: 1, Violation: true, Seed: 9})
	var buf bytes.Buffer
	if err := Visualize(big, history.Options{}, &buf); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 200_000 {
		t.Errorf("visualization of one piece is %d bytes", buf.Len())
	}
	if !strings.Contains(buf.String(), "end of critical section") {
		t.Errorf("visualization lacks the model's descriptions")
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	h := history.Synthetic(history.SynthConfig{Ops: 500, Keys: 2, Unknown: 0.05, Seed: 2})
	var buf bytes.Buffer
	if err := history.WriteJSONL(&buf, h); err != nil {
		t.Fatal(err)
	}
	got, err := history.ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, len(got), len(h), "entries")
	expect(t, Check(got, history.Options{}), Check(h, history.Options{}), "result after a round trip")
}

func TestSynthetic(t *testing.T) {
	for _, tc := range []struct {
		cfg     history.SynthConfig
		verdict string
	}{
		{history.SynthConfig{Ops: 5000, Keys: 1, Unknown: 0.01, Seed: 1}, Safe},
		{history.SynthConfig{Ops: 5000, Keys: 10, Unknown: 0.01, Seed: 1}, Safe},
		{history.SynthConfig{Ops: 5000, Keys: 1, Unknown: 0.01, Violation: true, Seed: 1}, Unsafe},
		{history.SynthConfig{Ops: 5000, Keys: 10, Violation: true, Seed: 2}, Unsafe},
	} {
		r := Check(history.Synthetic(tc.cfg), history.Options{})
		expect(t, r.Verdict, tc.verdict, "verdict")
		if tc.cfg.Violation {
			expect(t, r.Overlaps, 1, "overlaps")
			expect(t, r.NetLostUpdates, int64(1), "lost updates")
		}
		if r.Unknown == 0 && tc.cfg.Unknown > 0 {
			t.Errorf("no unknown outcome in %+v", tc.cfg)
		}
	}
}

// TestVisualizeWithoutOverlap: a deadlock or an empty history still gets a
// visualization.
func TestVisualizeWithoutOverlap(t *testing.T) {
	b := &builder{}
	b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
	b.add(1000, history.Ok, 1, 1, history.FCrash, "")
	for s := 2.0; s < 22; s++ {
		b.op(s*1000, s*1000+5, history.Fail, 2, 2, history.FAcquire, k0)
	}
	for _, h := range []history.History{b.sorted(), nil} {
		var buf bytes.Buffer
		if err := Visualize(h, history.Options{}, &buf); err != nil || !strings.Contains(buf.String(), "<html") {
			t.Errorf("Visualize: %v", err)
		}
	}
}

package checker

import (
	"bytes"
	"flag"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/history"
)

var update = flag.Bool("update", false, "rewrite the golden histories in testdata")

// golden is a committed history with what Check must say about it.
type golden struct {
	name  string
	opts  history.Options
	hist  func() history.History
	check func(t *testing.T, r Result)
}

var goldens = []golden{
	{name: "good", hist: goodHistory, check: func(t *testing.T, r Result) {
		expect(t, r.Verdict, Safe, "verdict")
		expect(t, r.Overlaps, 0, "overlaps")
		expect(t, r.NetLostUpdates, int64(0), "lost updates")
		expect(t, r.AckedWrites, int64(4), "acked writes")
		expect(t, r.FinalValue, int64(4), "final value")
		expect(t, r.Acquired, 4, "acquired")
		expect(t, r.Attempts, 6, "attempts")
		expect(t, r.Unknown, 1, "unknown")
		expect(t, r.FirstViolationNs, int64(-1), "first violation")
		expect(t, r.StaleWrites, 0, "stale writes")
		expect(t, r.OverlapIntervals, 0, "overlap intervals")
		expect(t, r.OverlapNs, int64(0), "overlap time")
	}},
	{name: "overlap", hist: overlapHistory, check: func(t *testing.T, r Result) {
		expect(t, r.Verdict, Unsafe, "verdict")
		expect(t, r.Linearizable, linIllegal, "linearizable")
		expect(t, r.Overlaps, 1, "overlaps")
		expect(t, r.NetLostUpdates, int64(1), "lost updates")
		w := r.Witness
		if w == nil {
			t.Fatal("no witness")
		}
		expect(t, w.Key, "lock:0", "witness key")
		expect(t, [2]int{w.A.Client, w.A.Process}, [2]int{1, 1}, "witness A")
		expect(t, [2]int{w.B.Client, w.B.Process}, [2]int{2, 2}, "witness B")
		expect(t, [2]int64{w.A.From, w.A.To}, [2]int64{msT(805.1), msT(930.0)}, "A's hold")
		expect(t, [2]int64{w.B.From, w.B.To}, [2]int64{msT(812.3), msT(900.0)}, "B's hold")
		expect(t, [2]int64{w.FromNs, w.ToNs}, [2]int64{msT(812.3), msT(900.0)}, "overlap")
		expect(t, w.B.Steps, []string{"setnx-del/after-get", "setnx-del/after-del"}, "B's steps")
		expect(t, r.FirstViolationNs, msT(812.3), "first violation")
		expect(t, r.FirstViolation, ViolationOverlap, "first violation kind")
		expect(t, r.StaleWrites, 1, "stale writes: c1 wrote 1 over c2's 1")
		expect(t, r.OverlapIntervals, 1, "overlap intervals")
		expect(t, r.OverlapNs, msT(900)-msT(812.3), "overlap time")
		for _, s := range []string{"c1 (p1)", "c2 (p2)", "lock:0", "805.1 ms", "812.3 ms", "900.0 ms", "930.0 ms",
			"setnx-del/after-get → setnx-del/after-del"} {
			if !strings.Contains(w.Text, s) {
				t.Errorf("witness text lacks %q: %s", s, w.Text)
			}
		}
	}},
	{name: "unknown-late", hist: unknownLateHistory, check: func(t *testing.T, r Result) {
		expect(t, r.Verdict, Safe, "verdict")
		expect(t, r.Linearizable, linOK, "linearizable")
		expect(t, r.Overlaps, 0, "overlaps")
		expect(t, r.Unknown, 1, "unknown")
	}},
	{name: "fenced", opts: history.Options{Fenced: true}, hist: fencedHistory, check: func(t *testing.T, r Result) {
		expect(t, r.Verdict, Safe, "verdict")
		expect(t, r.Overlaps, 1, "overlaps")
		expect(t, r.Linearizable, linIllegal, "linearizable")
		expect(t, r.Rejected, 1, "rejected")
		expect(t, r.StaleWrites, 0, "stale writes: the stale one was rejected")
		expect(t, r.NetLostUpdates, int64(0), "lost updates")
		expect(t, r.FirstViolationNs, msT(50), "first violation (the overlap)")
		expect(t, r.OverlapIntervals, 1, "overlap intervals")
		expect(t, r.OverlapNs, msT(70)-msT(50), "overlap time: c2's whole hold")
	}},
	{name: "lost-update", opts: history.Options{Fenced: true}, hist: lostUpdateHistory, check: func(t *testing.T, r Result) {
		expect(t, r.Verdict, Unsafe, "verdict")
		expect(t, r.NetLostUpdates, int64(1), "lost updates")
		expect(t, r.StaleWrites, 1, "stale writes")
		expect(t, r.FenceRegressions, 1, "fence regressions")
		expect(t, r.AckedWrites, int64(2), "acked")
		expect(t, r.FinalValue, int64(1), "final")
		expect(t, r.FirstViolationNs, msT(50), "first violation")
	}},
	{name: "stale-hold", hist: staleHoldHistory, check: func(t *testing.T, r Result) {
		expect(t, r.Verdict, Unsafe, "verdict")
		expect(t, r.Overlaps, 61, "overlapping pairs")
		expect(t, r.OverlapIntervals, 2, "overlap intervals: the long hold's cluster and the late pair")
		expect(t, r.OverlapNs, 60*msT(3)+msT(510)-msT(505), "overlap time")
		expect(t, r.StaleWrites, 2, "stale writes: c1's 1 over 60, c3's 2 over 2")
		expect(t, r.NetLostUpdates, int64(61), "net lost updates: 63 acknowledged, final 2")
		expect(t, r.FirstViolationNs, msT(21), "first violation")
		expect(t, len(r.OverlapSpans), 2, "spans")
		expect(t, r.OverlapSpans[0], Span{Key: "lock:0", FromNs: msT(21), ToNs: msT(378), OverlapNs: 60 * msT(3), Holds: 61}, "first span")
		expect(t, r.OverlapSpans[1], Span{Key: "lock:0", FromNs: msT(505), ToNs: msT(510), OverlapNs: msT(5), Holds: 2}, "second span")
	}},
	{name: "client-lag", hist: func() history.History { return clientLagHistory(1) }, check: func(t *testing.T, r Result) {
		expect(t, r.Verdict, Inconclusive, "verdict")
		expect(t, r.Overlaps, 1, "overlaps")
		expect(t, r.OverlapsWithoutStalls, 0, "overlaps without c1's lag")
		expect(t, r.StaleWrites, 1, "stale writes: c1 wrote 1 over c2's 1")
		expect(t, [3]float64{float64(r.ClientLags), r.ClientLagMaxMs, r.ClientLagTotalMs}, [3]float64{1, 290, 290}, "lags")
		expect(t, r.HarnessStalls, 0, "harness stalls")
		if !strings.Contains(r.Reason, "clients lagged 290 ms in all (longest 290 ms, c1)") {
			t.Errorf("reason %q", r.Reason)
		}
	}},
	{name: "client-lag-other", hist: func() history.History { return clientLagHistory(2) }, check: func(t *testing.T, r Result) {
		expect(t, r.Verdict, Unsafe, "verdict")
		expect(t, r.Overlaps, 1, "overlaps")
		expect(t, r.OverlapsWithoutStalls, 1, "overlaps without c2's lag")
		expect(t, r.ClientLags, 1, "lags")
		expect(t, r.FirstViolationNs, msT(215), "first violation")
	}},
}

// clientLagHistory: c1's hold sleep was due at 16 ms and woke at 306 ms
// (the lag of client lagged, 290 ms), while the rest of the harness ran:
// c2 retried every 50 ms, was granted the expired lock at 215 ms, read 0
// and wrote 1; c1 then wrote 1 over it and released. Lagged 1: the overlap
// and the stale write are the harness's doing (c1's hold, short by the
// lock's measure, was made long by c1's lateness). Lagged 2: c2's lag is
// not in the hold that outlived its lease, and excuses nothing.
func clientLagHistory(lagged int) history.History {
	b := &builder{}
	b.op(10, 11, history.Ok, 1, 1, history.FAcquire, k0, val("t1"))
	b.op(11.1, 11.2, history.Ok, 1, 1, history.FRead, k0, n(0))
	b.add(306, history.Ok, history.NemesisProcess, -1, history.FStall, "", func(o *history.Op) { o.Client, o.N = lagged, msT(290) })
	b.op(306.1, 306.2, history.Ok, 1, 1, history.FWrite, k0, n(1))
	b.op(306.5, 306.9, history.Ok, 1, 1, history.FRelease, k0, val("t1"))
	for at := 50.0; at < 215; at += 50 {
		b.op(at, at+1, history.Fail, 2, 2, history.FAcquire, k0, errs("not acquired"))
	}
	b.op(214, 215, history.Ok, 2, 2, history.FAcquire, k0, val("t2"))
	b.op(215.1, 215.2, history.Ok, 2, 2, history.FRead, k0, n(0))
	b.op(219.8, 219.9, history.Ok, 2, 2, history.FWrite, k0, n(1))
	b.op(220, 220.4, history.Ok, 2, 2, history.FRelease, k0, val("t2"))
	b.cycle(2, 2, k0, 400, 401, 405, 1, 0)
	b.final(500, k0, 2)
	return b.sorted()
}

func expect[T any](t *testing.T, got, exp T, what string) {
	t.Helper()
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("%s: got %v, want %v", what, got, exp)
	}
}

// goodHistory: three clients take turns on one key, one of them waiting
// while another holds it; one attempt fails, one ends unknown and never
// lands.
func goodHistory() history.History {
	b := &builder{}
	b.cycle(1, 1, "lock:0", 0, 1, 3, 0, 1)
	b.op(0.5, 3.4, history.Ok, 2, 2, history.FAcquire, "lock:0", fence(2)) // waited for c1
	b.op(3.5, 3.6, history.Ok, 2, 2, history.FRead, "lock:0", n(1))
	b.op(5.0, 5.1, history.Ok, 2, 2, history.FWrite, "lock:0", nf(2, 2))
	b.op(5.2, 5.3, history.Ok, 2, 2, history.FRelease, "lock:0")
	b.op(2.0, 2.5, history.Fail, 3, 3, history.FAcquire, "lock:0", errs("not acquired"))
	b.op(2.6, 12.6, history.Info, 3, 3, history.FAcquire, "lock:0", errs("i/o timeout"))
	b.cycle(4, 3, "lock:0", 13, 13.5, 15, 2, 3)
	b.cycle(1, 1, "lock:0", 16, 16.2, 18, 3, 4)
	b.final(20, "lock:0", 4)
	return b.sorted()
}

// overlapHistory: the DEL race of setnx-del. c2 passed after-get and
// after-del and got the lock while c1 still held it; both wrote 1.
func overlapHistory() history.History {
	b := &builder{}
	b.op(800.0, 805.1, history.Ok, 1, 1, history.FAcquire, "lock:0", val("t1"))
	b.add(801.0, history.Invoke, 2, 2, history.FAcquire, "lock:0")
	b.step(806.0, 2, 2, "setnx-del/after-get")
	b.step(810.0, 2, 2, "setnx-del/after-del")
	b.add(812.3, history.Ok, 2, 2, history.FAcquire, "lock:0", val("t2"))
	b.op(806.0, 806.1, history.Ok, 1, 1, history.FRead, "lock:0", n(0))
	b.op(813.0, 813.1, history.Ok, 2, 2, history.FRead, "lock:0", n(0))
	b.op(899.0, 899.5, history.Ok, 2, 2, history.FWrite, "lock:0", n(1))
	b.op(900.0, 900.2, history.Ok, 2, 2, history.FRelease, "lock:0", val("t2"))
	b.op(929.0, 929.5, history.Ok, 1, 1, history.FWrite, "lock:0", n(1))
	b.op(930.0, 930.3, history.Ok, 1, 1, history.FRelease, "lock:0", val("t1"))
	b.final(1000, "lock:0", 1)
	return b.sorted()
}

// unknownLateHistory: c1's SET NX times out (info at 60 ms) but lands at
// about 110 ms; c2, whose acquire was invoked after c1's, gets the lock at
// 70 ms. c3 is refused while the ghost SET holds the key, and gets it once
// it expires. Only definite oks count: safe.
func unknownLateHistory() history.History {
	b := &builder{}
	b.op(10, 60, history.Info, 1, 1, history.FAcquire, "lock:0", errs("i/o timeout"))
	b.op(20, 70, history.Ok, 2, 2, history.FAcquire, "lock:0", fence(1))
	b.op(71, 72, history.Ok, 2, 2, history.FRead, "lock:0", n(0))
	b.op(98, 99, history.Ok, 2, 2, history.FWrite, "lock:0", nf(1, 1))
	b.op(100, 101, history.Ok, 2, 2, history.FRelease, "lock:0")
	b.op(120, 121, history.Fail, 3, 3, history.FAcquire, "lock:0", errs("not acquired"))
	b.op(130, 200, history.Ok, 3, 3, history.FAcquire, "lock:0", fence(3))
	b.op(201, 202, history.Ok, 3, 3, history.FRead, "lock:0", n(1))
	b.op(210, 211, history.Ok, 3, 3, history.FWrite, "lock:0", nf(2, 3))
	b.op(212, 213, history.Ok, 3, 3, history.FRelease, "lock:0")
	b.cycle(4, 1, "lock:0", 240, 250, 260, 2, 4) // c1 again, as a new process
	b.final(300, "lock:0", 3)
	return b.sorted()
}

// fencedHistory: c1 pauses past the TTL; c2 takes the lock with a higher
// fence and writes; c1 wakes and writes with its stale fence, which the
// resource rejects. Holders overlapped, the resource stayed correct.
func fencedHistory() history.History {
	b := &builder{}
	b.op(9, 10, history.Ok, 1, 1, history.FAcquire, "lock:0", tokf("t1", 1))
	b.op(11, 12, history.Ok, 1, 1, history.FRead, "lock:0", n(0))
	b.add(15, history.Ok, history.NemesisProcess, -1, history.FStart, "", val("pause c1"))
	b.op(40, 50, history.Ok, 2, 2, history.FAcquire, "lock:0", tokf("t2", 2))
	b.op(51, 52, history.Ok, 2, 2, history.FRead, "lock:0", n(0))
	b.op(60, 61, history.Ok, 2, 2, history.FWrite, "lock:0", nf(1, 2))
	b.op(70, 71, history.Ok, 2, 2, history.FRelease, "lock:0", val("t2"))
	b.add(75, history.Ok, history.NemesisProcess, -1, history.FStop, "", val("pause c1"))
	b.op(80, 81, history.Fail, 1, 1, history.FWrite, "lock:0", nf(1, 1), errs("stale fencing token"))
	b.op(90, 91, history.Fail, 1, 1, history.FRelease, "lock:0", val("t1"), errs("not held"))
	b.final(100, "lock:0", 1)
	return b.sorted()
}

// lostUpdateHistory is fencedHistory with a resource that forgot to check
// the fence: c1's stale write is accepted and c2's increment is lost.
func lostUpdateHistory() history.History {
	b := &builder{}
	b.op(9, 10, history.Ok, 1, 1, history.FAcquire, "lock:0", tokf("t1", 1))
	b.op(11, 12, history.Ok, 1, 1, history.FRead, "lock:0", n(0))
	b.op(40, 50, history.Ok, 2, 2, history.FAcquire, "lock:0", tokf("t2", 2))
	b.op(51, 52, history.Ok, 2, 2, history.FRead, "lock:0", n(0))
	b.op(60, 61, history.Ok, 2, 2, history.FWrite, "lock:0", nf(1, 2))
	b.op(70, 71, history.Ok, 2, 2, history.FRelease, "lock:0", val("t2"))
	b.op(80, 81, history.Ok, 1, 1, history.FWrite, "lock:0", nf(1, 1))
	b.op(90, 91, history.Fail, 1, 1, history.FRelease, "lock:0", val("t1"), errs("not held"))
	b.final(100, "lock:0", 1)
	return b.sorted()
}

// staleHoldHistory: c1 takes the lock at 11 ms, reads 0 and stalls; c2 and
// c3 take it in turn 60 times (each writing the next value) while c1 still
// holds it; c1 wakes at 400 ms and writes 1 over 60. Later c2 and c3
// overlap once more (505 to 510 ms), both writing 2. One long stale hold
// is 60 pairs but one interval, and one stale write loses 60 updates net.
func staleHoldHistory() history.History {
	b := &builder{}
	b.op(10, 11, history.Ok, 1, 1, history.FAcquire, "lock:0", val("t1"))
	b.op(12, 13, history.Ok, 1, 1, history.FRead, "lock:0", n(0))
	for k := 0; k < 60; k++ {
		p := 2 + k%2
		at := 20 + 6*float64(k)
		b.cycle(p, p, "lock:0", at, at+1, at+4, int64(k), 0)
	}
	b.op(399.8, 399.9, history.Ok, 1, 1, history.FWrite, "lock:0", n(1))
	b.op(400, 400.1, history.Ok, 1, 1, history.FRelease, "lock:0", val("t1"))
	b.op(500, 501, history.Ok, 2, 2, history.FAcquire, "lock:0")
	b.op(501.1, 501.2, history.Ok, 2, 2, history.FRead, "lock:0", n(1))
	b.op(504, 505, history.Ok, 3, 3, history.FAcquire, "lock:0")
	b.op(505.1, 505.2, history.Ok, 3, 3, history.FRead, "lock:0", n(1))
	b.op(509.8, 509.9, history.Ok, 2, 2, history.FWrite, "lock:0", n(2))
	b.op(510, 510.1, history.Ok, 2, 2, history.FRelease, "lock:0")
	b.op(511.8, 511.9, history.Ok, 3, 3, history.FWrite, "lock:0", n(2))
	b.op(512, 512.1, history.Ok, 3, 3, history.FRelease, "lock:0")
	b.final(600, "lock:0", 2)
	return b.sorted()
}

func goldenPath(name string) string { return filepath.Join("testdata", name+".jsonl") }

// TestGenerateGolden rewrites testdata with -update; otherwise it checks
// that the committed files are what the generators produce.
func TestGenerateGolden(t *testing.T) {
	for _, g := range goldens {
		h := g.hist()
		if *update {
			if err := history.WriteFile(goldenPath(g.name), h); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := history.ReadFile(goldenPath(g.name))
		if err != nil {
			t.Fatalf("%v (run go test -run TestGenerateGolden -update)", err)
		}
		if !reflect.DeepEqual(got, h) {
			t.Errorf("%s is stale: run go test -run TestGenerateGolden -update", goldenPath(g.name))
		}
	}
}

func TestGolden(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			h, err := history.ReadFile(goldenPath(g.name))
			if err != nil {
				t.Fatal(err)
			}
			r := Check(h, g.opts)
			t.Logf("%s: %s", r.Verdict, r.Reason)
			expect(t, r.Disagreements, 0, "disagreements")
			expect(t, r.Malformed, 0, "malformed")
			g.check(t, r)
			assertSplitAgrees(t, h)
			var buf bytes.Buffer
			err = Visualize(h, g.opts, &buf)
			if err != nil || !bytes.Contains(buf.Bytes(), []byte("<html")) {
				t.Errorf("Visualize: %v, %d bytes", err, buf.Len())
			}
			if _, _, _, err := violation(h, g.opts); (err == errNoViolation) != (r.Overlaps == 0) {
				t.Errorf("Violation: %v with %d overlaps", err, r.Overlaps)
			}
			holds := Holds(h)
			expect(t, len(holds), r.Holds, "Holds")
		})
	}
}

func BenchmarkGolden(b *testing.B) {
	for _, g := range goldens {
		h, err := history.ReadFile(goldenPath(g.name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(g.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Check(h, g.opts)
			}
		})
	}
}

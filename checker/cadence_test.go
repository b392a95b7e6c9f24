package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
)

// cadenceHistory: c1 holds lock:0 from 1 ms to 1 s; c2's acquire,
// invoked at 5 ms, tries at each of gaps' ends (from 5 ms) and is granted
// after c1's release. fault, when set, is a fault naming c2 over those ms;
// stall, a harness stall of that many ms ending at 200 ms.
func cadenceHistory(gaps []float64, fault [2]float64, stall ...float64) history.History {
	b := &builder{}
	b.op(0.5, 1, history.Ok, 1, 1, history.FAcquire, k0, val("t1"))
	srvEv(b, 0.8, "n1", "set", "t1")
	b.op(1000, 1001, history.Ok, 1, 1, history.FRelease, k0, val("t1"))
	srvEv(b, 1000.5, "n1", "del", "")
	at, tries := 5.0, []int64{msT(5)}
	for _, g := range gaps {
		at += g
		tries = append(tries, msT(at))
	}
	b.op(5, at+0.5, history.Ok, 2, 2, history.FAcquire, k0, val("t2"), func(o *history.Op) {
		if o.Type != history.Invoke {
			o.Tries = tries
		}
	})
	srvEv(b, at, "n1", "set", "t2")
	b.op(at+1, at+2, history.Ok, 2, 2, history.FRelease, k0, val("t2"))
	srvEv(b, at+1.5, "n1", "del", "")
	if fault[1] > 0 {
		faultOn(b, fault, 2)
	}
	for _, d := range stall {
		b.add(200, history.Ok, history.NemesisProcess, -1, history.FStall, "", n(msT(d)))
	}
	// Every other sync is answered 3 ms late, past the node's usual
	// 0.2 ms: a silence every 40 ms, as a loaded machine leaves them.
	for t, i := 0.0, 0; t < at+20; t, i = t+20, i+1 {
		rtt := []float64{0.2, 3}[i%2]
		b.add(t+rtt, history.Ok, history.ServerProcess, -1, history.FSync, "", func(o *history.Op) { o.Node, o.N = "n1", msT(t) })
	}
	return b.sorted()
}

// faultOn records a latency fault on client c's links over span (ms).
func faultOn(b *builder, span [2]float64, c int) {
	targets := &history.FaultTargets{Clients: []int{c}}
	b.add(span[0], history.Ok, history.NemesisProcess, -1, history.FStart, "", func(o *history.Op) { o.Value, o.N, o.Targets = "latency", 7, targets })
	b.add(span[1], history.Ok, history.NemesisProcess, -1, history.FStop, "", func(o *history.Op) { o.Value, o.N = "latency", 7 })
}

func repeat(g float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = g
	}
	return out
}

func TestRetryCadence(t *testing.T) {
	exp := history.Options{BackoffGrowth: 2, BackoffCap: 300 * time.Millisecond}
	// bsm/redislock's ExponentialBackoff(16 ms, 300 ms): 2 << n ms, at
	// least 16.
	doubling := []float64{16, 16, 16, 32, 64, 128, 256, 300, 300, 300}
	for _, tc := range []struct {
		name string
		h    history.History
		opts history.Options
		want bool
	}{
		{"stuck at its floor (v0.8.2's ticker)", cadenceHistory(repeat(16, 40), [2]float64{}), exp, true},
		{"stuck, a tick skipped now and then", cadenceHistory([]float64{16, 32, 16, 16, 48, 16, 16, 16, 32, 16}, [2]float64{}), exp, true},
		{"doubling from its floor to its cap", cadenceHistory(doubling, [2]float64{}), exp, false},
		{"at its cap", cadenceHistory(repeat(300, 10), [2]float64{}), exp, false},
		{"stuck, but too few tries to judge", cadenceHistory(repeat(16, cadenceGaps-1), [2]float64{}), exp, false},
		{"stuck only under a fault", cadenceHistory(repeat(16, 12), [2]float64{20, 150}), exp, false},
		{"stuck, a fault over part of it", cadenceHistory(repeat(16, 30), [2]float64{20, 150}), exp, true},
		{"stuck only within a harness stall", cadenceHistory(repeat(16, 12), [2]float64{}, 196), exp, false},
		{"stuck, the observers' syncs in flight", cadenceHistory(repeat(16, 40), [2]float64{}), exp, true},
		{"stuck, no pacing declared", cadenceHistory(repeat(16, 40), [2]float64{}), history.Options{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.h, tc.opts)
			f := r.Finding(history.KindRetryCadence)
			if (f != nil) != tc.want {
				t.Fatalf("retry-cadence %v, want %v (%s)", f, tc.want, r.Reason)
			}
			if f != nil && !strings.Contains(f.Witness, "client 2's acquire of lock:0") {
				t.Errorf("witness %q", f.Witness)
			}
		})
	}
}

// gaveUpHistory: c1 acquires lock:0 at 10 ms (invoked at 0) with a TTL of
// 1 s and extends it at ext ms; the extend ends typ after tries (one
// send each 100 ms from ext), 100 ms after its last.
func gaveUpHistory(ext float64, typ history.Type, tries int, crash bool) history.History {
	b := &builder{}
	b.op(0, 10, history.Ok, 1, 1, history.FAcquire, k0, val("t1"))
	var sent []int64
	for i := range tries {
		sent = append(sent, msT(ext+100*float64(i)))
	}
	end := ext + 100*float64(tries)
	if crash {
		b.add(end-1, history.Ok, 1, 1, history.FCrash, "")
	}
	b.add(ext, history.Invoke, 1, 1, history.FExtend, k0, val("t1"), n(1))
	b.add(end, typ, 1, 1, history.FExtend, k0, n(1), func(o *history.Op) { o.Tries, o.Error = sent, "i/o timeout" })
	if !crash {
		b.op(end+10, end+11, history.Ok, 1, 1, history.FRelease, k0, val("t1"))
	}
	return b.sorted()
}

func TestExtendGaveUp(t *testing.T) {
	retries := history.Options{ExtendRetryLease: time.Second}
	for _, tc := range []struct {
		name string
		h    history.History
		opts history.Options
		want bool
	}{
		{"one try, unknown, lease with room (v0.9.1's Refresh)", gaveUpHistory(300, history.Info, 1, false), retries, true},
		{"retried, then unknown", gaveUpHistory(300, history.Info, 3, false), retries, false},
		{"one try, a definite no", gaveUpHistory(300, history.Fail, 1, false), retries, false},
		{"one try, ok", gaveUpHistory(300, history.Ok, 1, false), retries, false},
		{"one try, past half the lease", gaveUpHistory(450, history.Info, 1, false), retries, false},
		{"one try, the client crashed", gaveUpHistory(300, history.Info, 1, true), retries, false},
		{"one try, no retry declared", gaveUpHistory(300, history.Info, 1, false), history.Options{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.h, tc.opts)
			f := r.Finding(history.KindExtendGaveUp)
			if (f != nil) != tc.want {
				t.Fatalf("extend-gave-up %v, want %v (%s)", f, tc.want, r.Reason)
			}
		})
	}
}

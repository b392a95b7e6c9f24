package checker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
)

// TestStarvationNetOfHarnessStalls: a starvation proves a deadlock only
// net of the harness's own stalls inside it (issue 17: a deadlock once rested
// on a 530 ms stall of the harness against a 500 ms bound).
func TestStarvationNetOfHarnessStalls(t *testing.T) {
	starve := func(b *builder) {
		// c1 holds and crashes; c2 retries from 100 ms and is not granted
		// until 801 ms (its acquire's ok): a 701 ms starvation.
		b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
		b.add(50, history.Ok, 1, 1, history.FCrash, "")
		for at := 100.0; at < 800; at += 50 {
			b.op(at, at+5, history.Fail, 2, 2, history.FAcquire, k0)
		}
		b.op(800, 801, history.Ok, 2, 2, history.FAcquire, k0)
		b.op(802, 803, history.Ok, 2, 2, history.FRelease, k0)
	}
	stall := func(endMs, lenMs float64) func(*builder) {
		return func(b *builder) {
			b.add(endMs, history.Ok, history.NemesisProcess, -1, history.FStall, "", func(o *history.Op) { o.N = msT(lenMs) })
		}
	}
	for _, tc := range []struct {
		name    string
		stalls  []func(*builder)
		verdict string
		reason  string
	}{
		{"no stall: a deadlock", nil, Deadlock, "none granted for 701 ms from 100.0 ms (bound 500ms)"},
		{"a 100 ms stall inside: still over the bound", []func(*builder){stall(400, 100)}, Deadlock, "601 ms of it without the harness's own stalls"},
		{"a 300 ms stall inside: within the bound", []func(*builder){stall(500, 300)}, Inconclusive, "harness stalled 300 ms in all (longest 300 ms); lock:0 starved 701 ms from 100.0 ms, but at most 401 ms of it without the harness's stalls"},
		{"two stalls adding up", []func(*builder){stall(300, 120), stall(600, 120)}, Inconclusive, "at most 461 ms"},
		{"a stall outside the starvation counts for nothing", []func(*builder){stall(1000, 150)}, Deadlock, "none granted for 701 ms"},
		{"a stall straddling the start counts for its part inside", []func(*builder){stall(350, 400)}, Inconclusive, "at most 451 ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			starve(&b)
			for _, s := range tc.stalls {
				s(&b)
			}
			r := Check(b.sorted(), history.Options{DeadlockBound: 500 * time.Millisecond})
			if r.Verdict != tc.verdict || !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("verdict %s: %s\nwant %s: ...%s...", r.Verdict, r.Reason, tc.verdict, tc.reason)
			}
			if r.HarnessStalls != len(tc.stalls) {
				t.Errorf("%d stalls counted, want %d", r.HarnessStalls, len(tc.stalls))
			}
			if r.ByHarness != (tc.verdict == Inconclusive) {
				t.Errorf("ByHarness %v with verdict %s", r.ByHarness, r.Verdict)
			}
		})
	}
}

// TestOverlapOnlyThroughHarnessStalls: an overlap that disappears when the
// holds are shortened by the harness's own stalls inside them proves
// nothing about the lock (a correct lock's 5 ms critical section outlived
// its lease only because the harness was not running).
func TestOverlapOnlyThroughHarnessStalls(t *testing.T) {
	hist := func(b *builder) {
		// c1 holds from 1 ms to 405 ms; c2 acquires at 250 ms, after c1's
		// lease expired.
		b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, val("t1"))
		b.op(405, 406, history.Ok, 1, 1, history.FRelease, k0, val("t1"))
		b.op(240, 250, history.Ok, 2, 2, history.FAcquire, k0, val("t2"))
		b.op(260, 261, history.Ok, 2, 2, history.FRelease, k0, val("t2"))
	}
	for _, tc := range []struct {
		name    string
		stall   [2]float64 // end, length (ms); zero: none
		pause   [2]float64 // a nemesis pause of c1: start, heal (ms); zero: none
		verdict string
	}{
		{"no stall: unsafe", [2]float64{}, [2]float64{}, Unsafe},
		{"a 350 ms stall inside c1's hold: inconclusive", [2]float64{380, 350}, [2]float64{}, Inconclusive},
		{"a 100 ms stall: still an overlap without it", [2]float64{380, 100}, [2]float64{}, Unsafe},
		// c1 was paused on purpose from 5 ms to 400 ms: the stall inside
		// the pause lengthened nothing, the pause outlived the lease.
		{"the stall inside a pause of c1: unsafe", [2]float64{380, 350}, [2]float64{5, 400}, Unsafe},
		// The stall reaches the pause's heal, which it may have delayed.
		{"a stall reaching the pause's heal counts", [2]float64{395, 350}, [2]float64{5, 400}, Inconclusive},
		// Another client's pause does not excuse the stall in c1's hold.
		{"a pause of another client: inconclusive", [2]float64{380, 350}, [2]float64{5, -400}, Inconclusive},
		// c1's acquire was in flight from 0 to 400 ms: its SET may have run
		// before the stall and its lease expired while the reply waited.
		{"in flight: no stall: unsafe", [2]float64{}, [2]float64{}, Unsafe},
		{"in flight: a 390 ms stall while the grant was in flight: inconclusive", [2]float64{399, 390}, [2]float64{}, Inconclusive},
		{"in flight: a 50 ms stall: still an overlap without it", [2]float64{399, 50}, [2]float64{}, Unsafe},
		// c2's acquire was in flight from 0 to 200 ms, its grant received
		// inside c1's hold: its SET may have run at once and its lease run
		// out while the reply waited out the stall (seen: del-race-random
		// × getset under load, every client's stamp taken 140 ms before
		// its first reply).
		{"late grant: no stall: unsafe", [2]float64{}, [2]float64{}, Unsafe},
		{"late grant: a 180 ms stall while the grant was in flight: inconclusive", [2]float64{190, 180}, [2]float64{}, Inconclusive},
		{"late grant: a 5 ms stall: still an overlap without it", [2]float64{190, 5}, [2]float64{}, Unsafe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			if strings.HasPrefix(tc.name, "late grant") {
				b.op(99, 100, history.Ok, 1, 1, history.FAcquire, k0, val("t1"))
				b.op(300, 301, history.Ok, 1, 1, history.FRelease, k0, val("t1"))
				b.op(0, 200, history.Ok, 2, 2, history.FAcquire, k0, val("t2"))
				b.op(210, 211, history.Ok, 2, 2, history.FRelease, k0, val("t2"))
			} else if strings.HasPrefix(tc.name, "in flight") {
				b.op(0, 400, history.Ok, 1, 1, history.FAcquire, k0, val("t1"))
				b.op(500, 501, history.Ok, 1, 1, history.FRelease, k0, val("t1"))
				b.op(399.5, 402, history.Ok, 2, 2, history.FAcquire, k0, val("t2"))
				b.op(430, 431, history.Ok, 2, 2, history.FRelease, k0, val("t2"))
			} else {
				hist(&b)
			}
			if tc.stall[1] > 0 {
				b.add(tc.stall[0], history.Ok, history.NemesisProcess, -1, history.FStall, "", func(o *history.Op) { o.N = msT(tc.stall[1]) })
			}
			if tc.pause[1] != 0 {
				c := 1
				if tc.pause[1] < 0 {
					c, tc.pause[1] = 3, -tc.pause[1]
				}
				b.add(tc.pause[0], history.Ok, history.NemesisProcess, -1, history.FStart, "", func(o *history.Op) {
					o.Value, o.N, o.Targets = fmt.Sprintf("pause clients=[%d]", c), 1, &history.FaultTargets{Clients: []int{c}}
				})
				b.add(tc.pause[1], history.Ok, history.NemesisProcess, -1, history.FStop, "", func(o *history.Op) { o.Value, o.N = "pause", 1 })
			}
			r := Check(b.sorted(), history.Options{})
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s: %s", r.Verdict, r.Reason)
			}
			if tc.verdict == Inconclusive && !strings.Contains(r.Reason, "none without the harness's stalls") {
				t.Errorf("reason %q", r.Reason)
			}
			if r.ByHarness != (tc.verdict == Inconclusive) {
				t.Errorf("ByHarness %v with verdict %s", r.ByHarness, r.Verdict)
			}
		})
	}
}

// A scheduled run's safe verdict is earned only if the harness never
// stalled as long as the lease its schedule is timed against: seen at load
// 14, foreign-unlock × getset stalled 787 ms against its 600 ms TTL, the
// holder's delayed release and the waiters' takeover fell due in the same
// stall, the release went first, and the run came out safe (expected
// unsafe). A violation found through such a stall is judged as before.
func TestScheduleLeaseStall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lease   time.Duration
		stallMs float64
		verdict string
	}{
		{"no schedule: safe", 0, 787, Safe},
		{"stall shorter than the lease: safe", 600 * time.Millisecond, 300, Safe},
		{"stall as long as the lease: not earned", 600 * time.Millisecond, 787, Inconclusive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			b.cycle(1, 1, k0, 0, 1, 20, 0, 0)
			b.cycle(2, 2, k0, 21, 22, 40, 1, 0)
			b.add(900, history.Ok, history.NemesisProcess, -1, history.FStall, "", func(o *history.Op) { o.N = msT(tc.stallMs) })
			b.cycle(1, 1, k0, 1000, 1001, 1020, 2, 0)
			r := Check(b.sorted(), history.Options{ScheduleLease: tc.lease})
			if r.Verdict != tc.verdict || r.ByHarness != (tc.verdict == Inconclusive) {
				t.Errorf("verdict %s (by harness %v): %s", r.Verdict, r.ByHarness, r.Reason)
			}
		})
	}
}

// TestRenewalCut: a renewing holder's lapse rests on its renewals, and a
// renewal that the harness's lateness may have made fail (sent late, or
// its outcome unknown while the harness was late for most of its flight)
// leaves the hold certain only up to it. Shapes seen at load 10 on
// renewal-blips × a correct watchdog (seed 7: a renewal sent 272 ms late
// into a blackhole healed 233 ms late; seed 9: a renewal sent 251 ms late
// found the key gone, 10 ms before the next grant).
func TestRenewalCut(t *testing.T) {
	type span = [2]float64 // end, length (ms)
	for _, tc := range []struct {
		name          string
		stalls, lags  []span // the process's stalls; c1's lags
		renewAt, took float64
		renewed       history.Type
		grant         float64 // c2's grant
		fault         span    // a blackhole of c1's links: its heal, its length (ms); zero: none
		verdict       string
	}{
		{"no lateness: unsafe", nil, nil, 974, 2.7, history.Info, 1210, span{}, Unsafe},
		{"seed 7: sent late into a fault healed late: inconclusive", []span{{975.1, 272.6}}, []span{{976.7, 232.7}}, 974, 2.7, history.Info, 1210, span{976.66, 976.66 - 393}, Inconclusive},
		{"seed 9: sent late, the key gone: inconclusive", []span{{1634.2, 251.7}}, nil, 1634, 13, history.Fail, 1644, span{}, Inconclusive},
		{"late by less than the renewal missed the grant by: unsafe", []span{{1634.2, 5}}, nil, 1634, 13, history.Fail, 1610, span{}, Unsafe},
		{"late before the renewal that landed: unsafe", []span{{190, 150}}, nil, 1634, 13, history.Fail, 1644, span{}, Unsafe},
		{"spoiled: timed out in a stall from its send: inconclusive", []span{{1102, 100}}, nil, 1002, 100, history.Info, 1210, span{}, Inconclusive},
		{"a refusal in a stall from its send: unsafe", []span{{1102, 100}}, nil, 1002, 100, history.Fail, 1210, span{}, Unsafe},
		{"a renewal cut by a fault the spec asked for, in a stall: unsafe", []span{{1102, 100}}, nil, 1002, 100, history.Info, 1210, span{1340, 350}, Unsafe},
		{"spoiled after the next grant: unsafe", []span{{1252.5, 3}}, nil, 1250, 2.7, history.Info, 1210, span{}, Unsafe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ext := func(n int64) func(*history.Op) { return func(o *history.Op) { o.N, o.Value = n, "t1" } }
			var b builder
			b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, val("t1"))
			b.op(200, 201, history.Ok, 1, 1, history.FExtend, k0, ext(1))
			b.op(600, 705, history.Info, 1, 1, history.FExtend, k0, ext(2)) // a blip the spec asked for
			b.op(tc.renewAt, tc.renewAt+tc.took, tc.renewed, 1, 1, history.FExtend, k0, ext(3))
			b.op(2126, 2130, history.Fail, 1, 1, history.FRelease, k0, val("t1"))
			b.op(tc.grant-2, tc.grant, history.Ok, 2, 2, history.FAcquire, k0, val("t2"))
			b.op(2200, 2201, history.Ok, 2, 2, history.FRelease, k0, val("t2"))
			for _, s := range tc.stalls {
				b.add(s[0], history.Ok, history.NemesisProcess, -1, history.FStall, "", func(o *history.Op) { o.N = msT(s[1]) })
			}
			if tc.fault[1] > 0 {
				b.add(tc.fault[0]-tc.fault[1], history.Ok, history.NemesisProcess, -1, history.FStart, "", func(o *history.Op) {
					o.Value, o.N, o.Targets = "blackhole pick=holder", 1, &history.FaultTargets{Clients: []int{1}, Links: []string{"h2>n1"}}
				})
				b.add(tc.fault[0], history.Ok, history.NemesisProcess, -1, history.FStop, "", func(o *history.Op) { o.Value, o.N = "blackhole pick=holder", 1 })
			}
			for _, s := range tc.lags {
				b.add(s[0], history.Ok, history.NemesisProcess, 1, history.FStall, "", func(o *history.Op) { o.N = msT(s[1]) })
			}
			r := Check(b.sorted(), history.Options{})
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s: %s", r.Verdict, r.Reason)
			}
			if r.ByHarness != (tc.verdict == Inconclusive) {
				t.Errorf("ByHarness %v with verdict %s", r.ByHarness, r.Verdict)
			}
		})
	}
}

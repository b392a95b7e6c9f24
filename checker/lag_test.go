package checker

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
)

// late is one lateness of the harness for a test history: client -1 for
// the whole process's stall, c >= 0 for client c's own lag, ending at end
// ms and lasting ms.
type late struct {
	client   int
	end, len float64
}

func (l late) add(b *builder) {
	b.add(l.end, history.Ok, history.NemesisProcess, -1, history.FStall, "", func(o *history.Op) { o.Client, o.N = l.client, msT(l.len) })
}

// TestOverlapOnlyThroughClientLag: a client's own lag shortens only its own
// holds. c1 holds lock:0 from 1 ms to 405 ms; c2 is granted it at 250 ms
// and releases at 260 ms. Only something that lengthened c1's hold can
// explain the overlap: c1's lag inside its hold. c2's lag can only shorten
// c2's hold, which began inside c1's: the overlap stays (a hold shortened to
// nothing that began inside another still overlaps it). Removing the
// overlap needs c1's hold cut by 155 ms or more.
func TestOverlapOnlyThroughClientLag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		late    []late
		pause   [2]float64 // a nemesis pause of c1: start, heal (ms); zero: none
		verdict string
		reason  string
	}{
		{"no lag: unsafe", nil, [2]float64{}, Unsafe, "c1 and c2 both held"},
		{"c1's 350 ms lag in its hold: inconclusive", []late{{1, 380, 350}}, [2]float64{}, Inconclusive,
			"clients lagged 350 ms in all (longest 350 ms, c1); 1 overlapping holds; first: c1 and c2 both held lock:0 from 250.0 ms to 260.0 ms, but none without the harness's stalls and the holders' own lag inside the holds"},
		{"the same lag of c2: unsafe", []late{{2, 380, 350}}, [2]float64{}, Unsafe, "c1 and c2 both held"},
		{"the same lag of c3, who holds nothing: unsafe", []late{{3, 380, 350}}, [2]float64{}, Unsafe, "c1 and c2 both held"},
		{"c1's 100 ms lag: still an overlap without it", []late{{1, 380, 100}}, [2]float64{}, Unsafe, "c1 and c2 both held"},
		{"c1's lag after its release: unsafe", []late{{1, 800, 350}}, [2]float64{}, Unsafe, "c1 and c2 both held"},
		// 150 ms of c1's lag and 100 ms of the process's stall add up to
		// more than the 155 ms needed; neither alone does.
		{"c1's 150 ms lag alone: unsafe", []late{{1, 200, 150}}, [2]float64{}, Unsafe, "c1 and c2 both held"},
		{"the process's 100 ms stall alone: unsafe", []late{{-1, 350, 100}}, [2]float64{}, Unsafe, "c1 and c2 both held"},
		{"c1's lag and the process's stall add up: inconclusive", []late{{1, 200, 150}, {-1, 350, 100}}, [2]float64{}, Inconclusive,
			"harness stalled 100 ms in all (longest 100 ms); clients lagged 150 ms in all (longest 150 ms, c1)"},
		// The same 150 ms twice (the process stalled while c1 was late)
		// is 150 ms of c1's hold, not 300.
		{"c1's lag inside the process's stall counts once: unsafe", []late{{1, 200, 150}, {-1, 200, 150}}, [2]float64{}, Unsafe, "c1 and c2 both held"},
		// c1 paused on purpose from 5 ms to 400 ms: the lag inside the
		// pause lengthened nothing, the pause outlived the lease.
		{"c1's lag inside a pause of c1: unsafe", []late{{1, 380, 350}}, [2]float64{5, 400}, Unsafe, "c1 and c2 both held"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, val("t1"))
			b.op(405, 406, history.Ok, 1, 1, history.FRelease, k0, val("t1"))
			b.op(240, 250, history.Ok, 2, 2, history.FAcquire, k0, val("t2"))
			b.op(260, 261, history.Ok, 2, 2, history.FRelease, k0, val("t2"))
			for _, l := range tc.late {
				l.add(&b)
			}
			if tc.pause[1] != 0 {
				b.add(tc.pause[0], history.Ok, history.NemesisProcess, -1, history.FStart, "", func(o *history.Op) {
					o.Value, o.N, o.Targets = "pause clients=[1]", 1, &history.FaultTargets{Clients: []int{1}}
				})
				b.add(tc.pause[1], history.Ok, history.NemesisProcess, -1, history.FStop, "", func(o *history.Op) { o.Value, o.N = "pause", 1 })
			}
			r := Check(b.sorted(), history.Options{})
			if r.Verdict != tc.verdict || !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("verdict %s: %s\nwant %s: ...%s...", r.Verdict, r.Reason, tc.verdict, tc.reason)
			}
			if r.Overlaps != 1 {
				t.Errorf("%d overlaps, want 1 (the lag changes the verdict, not the overlap)", r.Overlaps)
			}
		})
	}
}

// TestFalseSuccessOnlyThroughClientLag: c1's release is false (its key
// expired at 320 ms and c2 took it at 330 ms) unless moved earlier by the
// lateness in c1's own hold; c2's lag moves nothing of c1's.
func TestFalseSuccessOnlyThroughClientLag(t *testing.T) {
	srv := func(b *builder, at float64, ev, owner string) {
		b.add(at, history.Ok, history.ServerProcess, -1, history.FServer, k0, func(o *history.Op) { o.Value, o.Node, o.Owner = ev, "n1", owner })
	}
	for _, tc := range []struct {
		name    string
		late    []late
		verdict string
		without int
	}{
		{"no lag: unsafe", nil, Unsafe, 1},
		{"c1's 290 ms lag in its hold: inconclusive", []late{{1, 330, 290}}, Inconclusive, 0},
		{"the same lag of c2: unsafe", []late{{2, 330, 290}}, Unsafe, 1},
		{"c1's 20 ms lag: still false without it", []late{{1, 60, 20}}, Inconclusive, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, val("t1"))
			srv(&b, 1.5, "set", "t1")
			srv(&b, 320, "expired", "")
			b.op(325, 330, history.Ok, 2, 2, history.FAcquire, k0, val("t2"))
			srv(&b, 330.2, "set", "t2")
			b.op(340.1, 341, history.Ok, 1, 1, history.FRelease, k0, val("t1"))
			srv(&b, 341.5, "del", "")
			for _, l := range tc.late {
				l.add(&b)
			}
			syncAll(&b, 999, 1000)
			r := Check(b.sorted(), history.Options{})
			if r.FalseSuccesses != 1 || r.FalseSuccessesWithoutStalls != tc.without {
				t.Errorf("false successes %d, %d without the lateness; want 1, %d", r.FalseSuccesses, r.FalseSuccessesWithoutStalls, tc.without)
			}
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s: %s", r.Verdict, r.Reason)
			}
			if n := findingCount(r, history.KindReleaseFalseSuccess); n != tc.without {
				t.Errorf("release false success findings %d, want %d", n, tc.without)
			}
		})
	}
}

// TestStarvationNetOfClientLag: c1 holds lock:0 and crashes; c2 asks from
// 100 ms and is granted at 801 ms, a 701 ms starvation against a 500 ms
// bound. c2 asks every 50 ms except while it was late (its think time woke
// 300 ms late, from 155 to 455 ms): nobody could be granted then. A
// moment counts as the lock's when any client that wanted the key was on
// time, so c3 wanting it throughout keeps the deadlock, and c3's lag
// excuses nothing of c2's wait.
func TestStarvationNetOfClientLag(t *testing.T) {
	for _, tc := range []struct {
		name     string
		late     []late
		c3       bool // c3 wants the key from 100 ms to the end, refused
		verdict  string
		reason   string
		starved  float64 // StarvedNetMs
		lagTotal float64
	}{
		{"no lag: a deadlock", nil, false, Deadlock, "none granted for 701 ms from 100.0 ms", 701, 0},
		{"c2's 300 ms lag: within the bound", []late{{2, 455, 300}}, false, Inconclusive,
			"clients lagged 300 ms in all (longest 300 ms, c2); lock:0 starved 701 ms from 100.0 ms, but at most 401 ms of it without the harness's stalls and the moments every client that wanted it was late", 401, 300},
		{"c3's lag excuses nothing of c2's wait", []late{{3, 455, 300}}, false, Deadlock, "none granted for 701 ms", 701, 300},
		{"c3 on time while c2 was late: a deadlock", []late{{2, 455, 300}}, true, Deadlock, "none granted for 701 ms", 701, 300},
		{"c2 and c3 both late: within the bound", []late{{2, 455, 300}, {3, 405, 250}}, true, Inconclusive, "at most 451 ms", 451, 550},
		// The process stalled inside c2's lag: the union counts once.
		{"c2's lag and the process's stall overlapping", []late{{2, 455, 300}, {-1, 355, 100}}, false, Inconclusive, "at most 401 ms", 401, 300},
		{"c2's lag and the process's stall apart", []late{{2, 355, 200}, {-1, 600, 100}}, false, Inconclusive, "at most 401 ms", 401, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
			b.add(50, history.Ok, 1, 1, history.FCrash, "")
			var lag2 *late
			for i := range tc.late {
				if tc.late[i].client == 2 {
					lag2 = &tc.late[i]
				}
				tc.late[i].add(&b)
			}
			for at := 100.0; at < 800; at += 50 {
				if lag2 != nil && at+5 > lag2.end-lag2.len && at < lag2.end {
					continue // c2 was late: it asked nothing
				}
				b.op(at, at+5, history.Fail, 2, 2, history.FAcquire, k0)
			}
			b.op(800, 801, history.Ok, 2, 2, history.FAcquire, k0)
			b.op(802, 803, history.Ok, 2, 2, history.FRelease, k0)
			if tc.c3 {
				for at := 102.0; at < 900; at += 50 {
					b.op(at, at+5, history.Fail, 3, 3, history.FAcquire, k0)
				}
			}
			r := Check(b.sorted(), history.Options{DeadlockBound: 500 * time.Millisecond})
			if r.Verdict != tc.verdict || !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("verdict %s: %s\nwant %s: ...%s...", r.Verdict, r.Reason, tc.verdict, tc.reason)
			}
			if r.StarvedNetMs != tc.starved {
				t.Errorf("net starvation %.1f ms, want %.0f", r.StarvedNetMs, tc.starved)
			}
			if r.ClientLagTotalMs != tc.lagTotal {
				t.Errorf("client lag %.1f ms in all, want %.0f", r.ClientLagTotalMs, tc.lagTotal)
			}
		})
	}
}

// TestClientLagFigures: the result counts the clients' lags apart from the
// process's stalls, names the longest, and says so in JSON.
func TestClientLagFigures(t *testing.T) {
	var b builder
	b.cycle(1, 1, k0, 0, 1, 100, 0, 1)
	b.cycle(2, 2, k0, 101, 102, 200, 1, 2)
	for _, l := range []late{{-1, 50, 20}, {1, 90, 40}, {2, 150, 30}, {2, 190, 15}} {
		l.add(&b)
	}
	r := Check(b.sorted(), history.Options{})
	expect(t, r.HarnessStalls, 1, "harness stalls")
	expect(t, r.HarnessStallTotalMs, 20.0, "harness stall total")
	expect(t, r.ClientLags, 3, "client lags")
	expect(t, r.ClientLagMaxMs, 40.0, "longest lag")
	expect(t, r.ClientLagTotalMs, 85.0, "lag total")
	if r.ClientLagMaxClient == nil || *r.ClientLagMaxClient != 1 {
		t.Errorf("longest lag's client %v, want 1", r.ClientLagMaxClient)
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"client_lags":3`, `"client_lag_max_ms":40`, `"client_lag_max_client":1`, `"client_lag_total_ms":85`} {
		if !strings.Contains(string(js), s) {
			t.Errorf("JSON lacks %s: %s", s, js)
		}
	}
	var quiet builder
	quiet.cycle(1, 1, k0, 0, 1, 100, 0, 1)
	if js, _ := json.Marshal(Check(quiet.sorted(), history.Options{})); strings.Contains(string(js), "client_lag") {
		t.Errorf("a run without lags says %s", js)
	}
}

// TestStallValidation: a stall names the process (-1) or a client, and
// lasts; anything else is a history problem, never an excuse.
func TestStallValidation(t *testing.T) {
	for _, tc := range []struct {
		client   int
		n        int64
		problems int
	}{{-1, 5, 0}, {3, 5, 0}, {-2, 5, 1}, {1, 0, 1}, {1, -5, 1}} {
		t.Run(fmt.Sprintf("client %d n %d", tc.client, tc.n), func(t *testing.T) {
			var b builder
			b.cycle(1, 1, k0, 0, 1, 100, 0, 1)
			b.add(50, history.Ok, history.NemesisProcess, -1, history.FStall, "", func(o *history.Op) { o.Client, o.N = tc.client, tc.n })
			r := Check(b.sorted(), history.Options{})
			expect(t, r.Malformed, tc.problems, "problems")
		})
	}
}

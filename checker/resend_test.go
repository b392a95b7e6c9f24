package checker

import (
	"testing"

	"github.com/lockstorm/lockstorm/history"
)

// resendHistory: c1 holds lock:0 from 10 ms and releases at 100 ms; its
// release sends the same script to n1 at sent, is answered at answered and
// sends it again at again (one FResend), then fails at 300 ms.
func resendHistory(sent, answered, again float64) history.History {
	b := &builder{}
	tok := val("t1")
	b.op(9, 10, history.Ok, 1, 1, history.FAcquire, k0, tok)
	b.add(100, history.Invoke, 1, 1, history.FRelease, k0, tok)
	b.add(again, history.Ok, 1, 1, history.FResend, k0, func(o *history.Op) {
		o.Node, o.Value, o.Fence, o.N = "n1", "SCRIPT:e4612211", msT(sent), msT(answered)
	})
	b.add(300, history.Fail, 1, 1, history.FRelease, k0, errs("quorum not reached"))
	return b.sorted()
}

// TestReleaseRetries: a resend after a definite answer is a finding unless
// a fault named the client or the node from the command's send to the
// resend, or the resend followed the answer sooner than the answer its
// command (the client may have stopped waiting before it came).
func TestReleaseRetries(t *testing.T) {
	nodeFault := func(h history.History, from, to float64) history.History {
		b := &builder{h: append(history.History(nil), h...)}
		tg := &history.FaultTargets{Nodes: []string{"n1"}}
		b.add(from, history.Ok, history.NemesisProcess, -1, history.FStart, "", func(o *history.Op) { o.Value, o.N, o.Targets = "pause-server n1", 2, tg })
		if to >= 0 {
			b.add(to, history.Ok, history.NemesisProcess, -1, history.FStop, "", func(o *history.Op) { o.Value, o.N = "pause-server n1", 2 })
		}
		return b.sorted()
	}
	stall := func(h history.History, client int, at, d float64) history.History {
		b := &builder{h: append(history.History(nil), h...)}
		b.add(at, history.Ok, history.NemesisProcess, -1, history.FStall, "", func(o *history.Op) { o.Client, o.N = client, msT(d) })
		return b.sorted()
	}
	// silent: n1's observer syncs every 10 ms, answered in 0.1 ms, but one
	// sent at from and answered at to (a silence from from + 0.1 ms).
	silent := func(h history.History, from, to float64) history.History {
		b := &builder{h: append(history.History(nil), h...)}
		b.add(to, history.Ok, history.ServerProcess, -1, history.FSync, "", func(o *history.Op) { o.Node, o.N = "n1", msT(from) })
		for at := 0.0; at < 300; at += 10 {
			b.add(at+0.1, history.Ok, history.ServerProcess, -1, history.FSync, "", func(o *history.Op) { o.Node, o.N = "n1", msT(at) })
		}
		return b.sorted()
	}
	for _, tc := range []struct {
		name          string
		h             history.History
		found, excuse int
	}{
		// The lock's node timeout may fire in a stall before the reply it
		// would have read: an answer the hook saw is not one the lock had.
		// A stall of at least half the answer's wait (31 of 62 ms).
		{"the harness stalled while the answer came", stall(resendHistory(101, 163, 228), -1, 150, 31), 0, 1},
		{"the client lagged while the answer came", stall(resendHistory(101, 163, 228), 1, 150, 31), 0, 1},
		{"stalls split over the answer's wait", stall(stall(resendHistory(101, 163, 228), -1, 120, 16), 1, 160, 16), 0, 1},
		{"the harness stalled less than half the wait", stall(resendHistory(101, 163, 228), -1, 150, 30), 1, 0},
		{"the harness stalled after the answer", stall(resendHistory(101, 163, 228), -1, 200, 31), 1, 0},
		{"another client lagged", stall(resendHistory(101, 163, 228), 2, 150, 31), 1, 0},
		// Every server silent (a sync past its node's usual round trip)
		// for most of the wait, or for a sliver of it.
		{"the server silent while the answer came", silent(resendHistory(101, 163, 228), 110, 160), 0, 1},
		{"the server slow by a sliver", silent(resendHistory(101, 103.8, 136), 101.5, 101.7), 1, 0},
		{"resent 200 ms after a 2 ms answer", resendHistory(101, 103, 303-100), 1, 0},
		{"resent as the late answer came (the client's own timeout)", resendHistory(101, 151, 151.1), 0, 1},
		{"resent exactly one round trip after the answer", resendHistory(101, 103, 105), 1, 0},
		{"a fault on the client's links between", withFault(resendHistory(101, 103, 203), 1, 150, 160), 0, 1},
		{"a fault on the client before the command", withFault(resendHistory(101, 103, 203), 1, 20, 30), 1, 0},
		{"a fault on another client", withFault(resendHistory(101, 103, 203), 2, 150, 160), 1, 0},
		{"a fault on the node between", nodeFault(resendHistory(101, 103, 203), 102, 104), 0, 1},
		{"a fault on the node that outlasts the release", nodeFault(resendHistory(101, 103, 203), 102, 1000), 0, 1},
		{"a fault on the node never healed", nodeFault(resendHistory(101, 103, 203), 102, -1), 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.h, history.Options{})
			f := r.Finding(history.KindReleaseRetries)
			got := 0
			if f != nil {
				got = f.Count
			}
			if got != tc.found || r.ReleaseResends != tc.found || r.ReleaseResendsExcused != tc.excuse {
				t.Errorf("found %d (resends %d, excused %d), want %d and %d excused; problems %v", got, r.ReleaseResends, r.ReleaseResendsExcused, tc.found, tc.excuse, r.Problems)
			}
			if f != nil && f.Witness == "" {
				t.Error("no witness")
			}
		})
	}
}

package checker

import (
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
)

// TestEarlyGiveUp: a definite refusal before the declared wait timeout is
// a finding; at or after it, with an error reply, with a fault on the
// client while it waited, or on a lock that declares nothing, it is not.
func TestEarlyGiveUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		waitOut time.Duration
		refused float64 // the refusal's completion (ms); the acquire is invoked at 100 ms
		reply   bool    // an error reply
		fault   bool    // a pause of c2 from 150 to 180 ms
		want    int
	}{
		{"refused 200 ms into a 1 s wait", time.Second, 300, false, false, 1},
		{"refused after the wait", time.Second, 1100, false, false, 0},
		{"an error reply", time.Second, 300, true, false, 0},
		{"a fault on the client while it waited", time.Second, 300, false, true, 0},
		{"no claim", 0, 300, false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, val("t1"))
			b.op(2000, 2001, history.Ok, 1, 1, history.FRelease, k0, val("t1"))
			b.op(100, tc.refused, history.Fail, 2, 2, history.FAcquire, k0, func(o *history.Op) {
				if o.Type == history.Fail {
					o.Error, o.ErrorReply = "lock not acquired", tc.reply
				}
			})
			if tc.fault {
				b.add(150, history.Ok, history.NemesisProcess, -1, history.FStart, "", func(o *history.Op) {
					o.Value, o.N, o.Targets = "pause clients=[2]", 1, &history.FaultTargets{Clients: []int{2}}
				})
				b.add(180, history.Ok, history.NemesisProcess, -1, history.FStop, "", func(o *history.Op) { o.Value, o.N = "pause", 1 })
			}
			r := Check(b.sorted(), history.Options{WaitOut: tc.waitOut})
			got := 0
			if f := r.Finding(history.KindEarlyGiveUp); f != nil {
				got = f.Count
			}
			if got != tc.want {
				t.Errorf("%d early give-ups, want %d (findings %+v)", got, tc.want, r.Findings)
			}
		})
	}
}

package checker

import (
	"testing"

	"github.com/lockstorm/lockstorm/history"
)

// refusalHistory: c1 holds lock:0 (t1, set on n1 at 9.5 ms) and its
// release at 100 ms completes with typ (its extend at 50 ms with extend);
// the key expires at 600 ms, and n1's observer syncs every 20 ms.
func refusalHistory(typ, extend history.Type, errorReply bool) history.History {
	b := &builder{}
	tok := val("t1")
	b.op(9, 10, history.Ok, 1, 1, history.FAcquire, k0, tok)
	srvEv(b, 9.5, "n1", "set", "t1")
	b.add(50, history.Invoke, 1, 1, history.FExtend, k0, func(o *history.Op) { o.Value, o.N = "t1", 1 })
	b.add(51, extend, 1, 1, history.FExtend, k0, func(o *history.Op) { o.N = 1 })
	b.add(100, history.Invoke, 1, 1, history.FRelease, k0, tok)
	b.add(101, typ, 1, 1, history.FRelease, k0, func(o *history.Op) { o.Error, o.ErrorReply = "not held", errorReply })
	srvEv(b, 600, "n1", "expired", "")
	syncsTo(b, "n1", 700)
	return b.sorted()
}

// TestFalseRefusalCheck: the pass hands keyevents the releases and extends
// answered with a definite "not held" (Fail without an error reply), and
// only those.
func TestFalseRefusalCheck(t *testing.T) {
	for _, tc := range []struct {
		name      string
		h         history.History
		refusals  int
		witnessed bool
	}{
		{"a release refused on the holder's key", refusalHistory(history.Fail, history.Ok, false), 1, true},
		{"a release and an extend refused", refusalHistory(history.Fail, history.Fail, false), 2, true},
		{"an error reply is no refusal", refusalHistory(history.Fail, history.Ok, true), 0, false},
		{"an unknown outcome is no refusal", refusalHistory(history.Info, history.Info, false), 0, false},
		{"an ok release", refusalHistory(history.Ok, history.Ok, false), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.h, history.Options{})
			f := r.Finding(history.KindFalseRefusal)
			if r.FalseRefusals != tc.refusals || (f != nil) != tc.witnessed {
				t.Errorf("false refusals %d (finding %+v), want %d; problems %v", r.FalseRefusals, f, tc.refusals, r.Problems)
			}
		})
	}
}

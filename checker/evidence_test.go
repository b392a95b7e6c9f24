package checker

import (
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/history"
)

// runnerHist is a history as the runner writes it: the header first (at
// time 0), the entries fill adds, the final reads and the end record last,
// ordered by time and numbered.
func runnerHist(m history.Meta, fill func(b *builder)) history.History {
	b := &builder{}
	fill(b)
	h := b.sorted()
	end := int64(0)
	if len(h) > 0 {
		end = h[len(h)-1].Time
	}
	last := map[string]int64{} // the counter's value: its last acknowledged write
	for _, op := range h {
		if op.F == history.FWrite && op.Type == history.Ok {
			last[op.Key] = op.N
		}
	}
	out := history.History{{Type: history.Ok, Process: history.FinalProcess, Client: -1, F: history.FMeta, Meta: &m}}
	out = append(out, h...)
	for _, k := range m.Keys {
		out = append(out, history.Op{Type: history.Invoke, Process: history.FinalProcess, Client: -1, F: history.FRead, Key: k, Time: end + 1},
			history.Op{Type: history.Ok, Process: history.FinalProcess, Client: -1, F: history.FRead, Key: k, N: last[k], Time: end + 2})
	}
	out = append(out, history.Op{Type: history.Ok, Process: history.FinalProcess, Client: -1, F: history.FEnd, Time: end + 3})
	for i := range out {
		out[i].Index = i
	}
	return out
}

func fired(ids ...int) func(*history.Op) { return func(o *history.Op) { o.Fired = ids } }

func refused(e string) func(*history.Op) {
	return func(o *history.Op) { o.Error, o.ErrorReply = e, true }
}

// nemesis adds a fault entry of the nemesis process.
func (b *builder) nemesis(t float64, typ history.Type, f, desc, err string) *builder {
	return b.add(t, typ, history.NemesisProcess, -1, f, "", val(desc), errs(err))
}

// twoHolds is a clean run on one key: two holds, one after the other.
func twoHolds(b *builder) {
	b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
	b.op(2, 3, history.Ok, 1, 1, history.FRelease, k0)
	b.op(4, 5, history.Ok, 2, 2, history.FAcquire, k0)
	b.op(6, 7, history.Ok, 2, 2, history.FRelease, k0)
}

// TestEvidence: a run is safe only when it exercised what the scenario is
// about; otherwise inconclusive with the reason. A violation stays unsafe
// and a starvation stays a deadlock, whatever else the run missed.
func TestEvidence(t *testing.T) {
	one := []string{k0}
	sched := func(fps ...history.Armed) history.Meta {
		return history.Meta{Identity: history.Identity{Mode: "scheduled"}, Keys: one, Failpoints: fps}
	}
	cases := []struct {
		name    string
		meta    history.Meta
		opts    history.Options
		hist    func(b *builder)
		verdict string
		reason  []string // substrings of the reason
		check   func(t *testing.T, r Result)
	}{
		{
			name: "two holds on the only key: safe", meta: history.Meta{Keys: one}, hist: twoHolds,
			verdict: Safe,
		},
		{
			name: "zero acquisitions",
			meta: history.Meta{Keys: one},
			hist: func(b *builder) {
				b.op(0, 1, history.Fail, 1, 1, history.FAcquire, k0, errs("lock not acquired"))
				b.op(2, 3, history.Fail, 2, 2, history.FAcquire, k0, errs("lock not acquired"))
			},
			verdict: Inconclusive, reason: []string{"0 acquisitions in 2 attempts"},
		},
		{
			name: "every acquire refused with an error reply",
			meta: history.Meta{Keys: one},
			hist: func(b *builder) {
				for i := 0; i < 5; i++ {
					b.op(float64(2*i), float64(2*i+1), history.Fail, 1, 1, history.FAcquire, k0, refused("ERR invalid expire time in 'set' command"))
				}
			},
			verdict: Inconclusive, reason: []string{"0 acquisitions: 5 error replies: ERR invalid expire time"},
			check: func(t *testing.T, r Result) { expect(t, r.ErrorReplies, 5, "error replies") },
		},
		{
			name: "most attempts unknown",
			meta: history.Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.op(10, 11, history.Info, 3, 3, history.FAcquire, k0, errs("i/o timeout"))
				b.op(12, 13, history.Info, 4, 4, history.FAcquire, k0, errs("i/o timeout"))
				b.op(14, 15, history.Info, 5, 5, history.FAcquire, k0, errs("i/o timeout"))
			},
			verdict: Inconclusive, reason: []string{"most acquire attempts ended in errors (3 of 5", "3 unknown outcomes: i/o timeout"},
		},
		{
			// The timeouts fired while the whole process stood still (a
			// loaded machine): the run says nothing, and a runner may run
			// it again.
			name: "most attempts unknown, each while the harness stalled: the harness's",
			meta: history.Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.add(15.5, history.Ok, history.NemesisProcess, -1, history.FStall, "", func(o *history.Op) { o.N = msT(6) })
				b.op(10, 11, history.Info, 3, 3, history.FAcquire, k0, errs("i/o timeout"))
				b.op(12, 13, history.Info, 4, 4, history.FAcquire, k0, errs("i/o timeout"))
				b.op(14, 15, history.Info, 5, 5, history.FAcquire, k0, errs("i/o timeout"))
			},
			verdict: Inconclusive, reason: []string{"most acquire attempts ended in errors (3 of 5", "(3 of them while the harness was late", "harness stalled 6 ms"},
			check: func(t *testing.T, r Result) {
				if !r.ByHarness || r.GapsByHarness != 1 {
					t.Errorf("by harness %v, gaps by harness %d: want true, 1", r.ByHarness, r.GapsByHarness)
				}
			},
		},
		{
			// One timeout the stall explains leaves four of seven: still
			// most, and the run is not the harness's to run again.
			name: "most attempts unknown, one while the harness stalled: still most without it",
			meta: history.Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.add(11, history.Ok, history.NemesisProcess, -1, history.FStall, "", func(o *history.Op) { o.N = msT(1) })
				for i := 0; i < 5; i++ {
					b.op(float64(10+2*i), float64(11+2*i), history.Info, 3+i, 3+i, history.FAcquire, k0, errs("i/o timeout"))
				}
			},
			verdict: Inconclusive, reason: []string{"most acquire attempts ended in errors (5 of 7"},
			check: func(t *testing.T, r Result) {
				if r.ByHarness || r.GapsByHarness != 0 {
					t.Errorf("by harness %v, gaps by harness %d: want false, 0", r.ByHarness, r.GapsByHarness)
				}
			},
		},
		{
			// A refusal is a definite no, as a failed SET NX is: a lock
			// that folds it into its own "not acquired" (redsync's
			// ErrFailed) and one that lets the reply through must be
			// judged alike on the same server behaviour.
			name: "most attempts refused after two holds: refusals are definite, not errors",
			meta: history.Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				for i := 0; i < 5; i++ {
					b.op(float64(10+2*i), float64(11+2*i), history.Fail, 3+i, 3+i, history.FAcquire, k0, refused("NOREPLICAS Not enough good replicas to write."))
				}
			},
			verdict: Safe,
			check:   func(t *testing.T, r Result) { expect(t, r.ErrorReplies, 5, "error replies") },
		},
		{
			name: "half the attempts unknown is not most",
			meta: history.Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.op(10, 11, history.Info, 3, 3, history.FAcquire, k0, errs("i/o timeout"))
				b.op(12, 13, history.Info, 4, 4, history.FAcquire, k0, errs("i/o timeout"))
			},
			verdict: Safe,
		},
		{
			name: "a key held once",
			meta: history.Meta{Keys: []string{k0, "lock:1"}},
			hist: func(b *builder) {
				twoHolds(b)
				b.op(8, 9, history.Ok, 3, 3, history.FAcquire, "lock:1")
				b.op(10, 11, history.Ok, 3, 3, history.FRelease, "lock:1")
			},
			verdict: Inconclusive, reason: []string{"keys held fewer than 2 times", "lock:1 1"},
		},
		{
			name:    "a key never tried",
			meta:    history.Meta{Keys: []string{k0, "lock:1"}},
			hist:    twoHolds,
			verdict: Inconclusive, reason: []string{"lock:1 0"},
		},
		{
			name: "a fault that applied to nothing",
			meta: history.Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.nemesis(0.5, history.Fail, history.FStart, "partition clients=[9]", "no link of client 9")
			},
			verdict: Inconclusive, reason: []string{`fault "partition clients=[9]" at 0.5 ms applied to nothing: no link of client 9`},
			check: func(t *testing.T, r Result) { expect(t, r.FaultsFailed, 1, "faults failed") },
		},
		{
			name: "a fault recorded ok but with no target",
			meta: history.Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.add(0.5, history.Ok, history.NemesisProcess, -1, history.FStart, "", val("latency"), func(o *history.Op) { o.Targets = &history.FaultTargets{} })
			},
			verdict: Inconclusive, reason: []string{`fault "latency" at 0.5 ms applied to nothing: no target`},
		},
		{
			name: "a fault with a target is evidence",
			meta: history.Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.add(0.5, history.Ok, history.NemesisProcess, -1, history.FStart, "", val("pause"), func(o *history.Op) { o.Targets = &history.FaultTargets{Clients: []int{1}} })
			},
			verdict: Safe,
		},
		{
			name: "a heal that failed",
			meta: history.Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.nemesis(0.5, history.Ok, history.FStart, "kill nodes=[0]", "")
				b.nemesis(3.5, history.Fail, history.FStop, "kill nodes=[0]", "restart n1: address in use")
			},
			verdict: Inconclusive, reason: []string{`heal of "kill nodes=[0]" at 3.5 ms failed: restart n1: address in use`},
			check: func(t *testing.T, r Result) { expect(t, r.HealsFailed, 1, "heals failed") },
		},
		{
			name: "a scheduled failpoint that never fired",
			meta: sched(history.Armed{Index: 0, Client: 1, Point: "setnx-del/before-del", Times: 1}),
			hist: func(b *builder) {
				twoHolds(b)
				b.add(0.5, history.Ok, 1, 1, history.FStep, "", val("setnx-del/after-get")) // reached, but not the armed point
			},
			verdict: Inconclusive, reason: []string{"#0 c1 at setnx-del/before-del fired 0 of 1 times"},
			check: func(t *testing.T, r Result) {
				expect(t, r.Failpoints, []FailpointCount{{Index: 0, Client: 1, Point: "setnx-del/before-del", Want: "exactly 1"}}, "failpoints")
			},
		},
		{
			name: "a scheduled failpoint short of its times",
			meta: sched(history.Armed{Index: 0, Client: 1, Point: "cs/hold", Times: 2}),
			hist: func(b *builder) {
				twoHolds(b)
				b.add(1.5, history.Ok, 1, 1, history.FStep, "", val("cs/hold"), fired(0))
			},
			verdict: Inconclusive, reason: []string{"#0 c1 at cs/hold fired 1 of 2 times"},
		},
		{
			name: "a scheduled failpoint that fired as asked",
			meta: sched(history.Armed{Index: 0, Client: 1, Point: "cs/hold", Times: 1}, history.Armed{Index: 1, Client: 2, Point: "cs/hold", Times: 1}),
			hist: func(b *builder) {
				twoHolds(b)
				b.add(1.5, history.Ok, 1, 1, history.FStep, "", val("cs/hold"), fired(0))
				b.add(5.5, history.Ok, 2, 2, history.FStep, "", val("cs/hold"), fired(1))
			},
			verdict: Safe, reason: []string{"failpoints fired: #0 cs/hold ×1, #1 cs/hold ×1"},
		},
		{
			name:    "an inert failpoint (another implementation's step) need not fire",
			meta:    sched(history.Armed{Index: 0, Client: 1, Point: "getset/after-get", Times: 1, Inert: true}),
			hist:    twoHolds,
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				expect(t, r.Failpoints, []FailpointCount{{Index: 0, Client: 1, Point: "getset/after-get", Want: "inert"}}, "failpoints")
			},
		},
		{
			name:    "a random failpoint that never fired",
			meta:    history.Meta{Identity: history.Identity{Mode: "random"}, Keys: one, Failpoints: []history.Armed{{Index: 0, Client: -1, Point: "cs/hold", Prob: 0.02}}},
			hist:    twoHolds,
			verdict: Inconclusive, reason: []string{"#0 every client at cs/hold never fired"},
		},
		{
			name: "a random failpoint reports how often it fired",
			meta: history.Meta{Identity: history.Identity{Mode: "random"}, Keys: one, Failpoints: []history.Armed{{Index: 0, Client: -1, Point: "cs/hold", Prob: 0.02}}},
			hist: func(b *builder) {
				twoHolds(b)
				b.add(1.5, history.Ok, 1, 1, history.FStep, "", val("cs/hold"), fired(0))
				b.add(5.5, history.Ok, 2, 2, history.FStep, "", val("cs/hold"), fired(0))
			},
			verdict: Safe, reason: []string{"#0 cs/hold ×2"},
		},
		{
			name: "an overlap stays unsafe though a fault applied to nothing",
			meta: history.Meta{Keys: one},
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.op(2, 3, history.Ok, 2, 2, history.FAcquire, k0)
				b.op(4, 5, history.Ok, 1, 1, history.FRelease, k0)
				b.op(6, 7, history.Ok, 2, 2, history.FRelease, k0)
				b.nemesis(0.5, history.Fail, history.FStart, "pause clients=[7]", "no client 7")
			},
			verdict: Unsafe,
		},
		{
			name: "a starvation stays a deadlock though the key was held once",
			meta: history.Meta{Keys: one},
			opts: history.Options{DeadlockBound: 100e6},
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
				b.add(2, history.Ok, 1, 1, history.FCrash, "")
				for i := 0; i < 10; i++ {
					b.op(float64(3+30*i), float64(3+30*i+25), history.Fail, 2, 2, history.FAcquire, k0, errs("lock not acquired"))
				}
			},
			verdict: Deadlock,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := runnerHist(tc.meta, tc.hist)
			if _, problems, _ := history.Validate(history.Parsed{History: h}); len(problems) > 0 {
				t.Fatalf("the test's history is not well-formed: %v", problems)
			}
			r := Check(h, tc.opts)
			t.Logf("%s: %s", r.Verdict, r.Reason)
			expect(t, r.Verdict, tc.verdict, "verdict")
			for _, want := range tc.reason {
				if !strings.Contains(r.Reason, want) {
					t.Errorf("reason %q does not say %q", r.Reason, want)
				}
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

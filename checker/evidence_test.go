package checker

import (
	"strings"
	"testing"
)

// runnerHist is a history as the runner writes it: the header first (at
// time 0), the entries fill adds, the final reads and the end record last,
// ordered by time and numbered.
func runnerHist(m Meta, fill func(b *builder)) History {
	b := &builder{}
	fill(b)
	h := b.sorted()
	end := int64(0)
	if len(h) > 0 {
		end = h[len(h)-1].Time
	}
	last := map[string]int64{} // the counter's value: its last acknowledged write
	for _, op := range h {
		if op.F == FWrite && op.Type == Ok {
			last[op.Key] = op.N
		}
	}
	out := History{{Type: Ok, Process: FinalProcess, Client: -1, F: FMeta, Meta: &m}}
	out = append(out, h...)
	for _, k := range m.Keys {
		out = append(out, Op{Type: Invoke, Process: FinalProcess, Client: -1, F: FRead, Key: k, Time: end + 1},
			Op{Type: Ok, Process: FinalProcess, Client: -1, F: FRead, Key: k, N: last[k], Time: end + 2})
	}
	out = append(out, Op{Type: Ok, Process: FinalProcess, Client: -1, F: FEnd, Time: end + 3})
	for i := range out {
		out[i].Index = i
	}
	return out
}

func fired(ids ...int) func(*Op) { return func(o *Op) { o.Fired = ids } }

func refused(e string) func(*Op) { return func(o *Op) { o.Error, o.ErrorReply = e, true } }

// nemesis adds a fault entry of the nemesis process.
func (b *builder) nemesis(t float64, typ Type, f, desc, err string) *builder {
	return b.add(t, typ, NemesisProcess, -1, f, "", val(desc), errs(err))
}

// twoHolds is a clean run on one key: two holds, one after the other.
func twoHolds(b *builder) {
	b.op(0, 1, Ok, 1, 1, FAcquire, k0)
	b.op(2, 3, Ok, 1, 1, FRelease, k0)
	b.op(4, 5, Ok, 2, 2, FAcquire, k0)
	b.op(6, 7, Ok, 2, 2, FRelease, k0)
}

// TestEvidence: a run is safe only when it exercised what the scenario is
// about; otherwise inconclusive with the reason. A violation stays unsafe
// and a starvation stays a deadlock, whatever else the run missed.
func TestEvidence(t *testing.T) {
	one := []string{k0}
	sched := func(fps ...Armed) Meta { return Meta{Mode: "scheduled", Keys: one, Failpoints: fps} }
	cases := []struct {
		name    string
		meta    Meta
		opts    Options
		hist    func(b *builder)
		verdict string
		reason  []string // substrings of the reason
		check   func(t *testing.T, r Result)
	}{
		{
			name: "two holds on the only key: safe", meta: Meta{Keys: one}, hist: twoHolds,
			verdict: Safe,
		},
		{
			name: "zero acquisitions",
			meta: Meta{Keys: one},
			hist: func(b *builder) {
				b.op(0, 1, Fail, 1, 1, FAcquire, k0, errs("lock not acquired"))
				b.op(2, 3, Fail, 2, 2, FAcquire, k0, errs("lock not acquired"))
			},
			verdict: Inconclusive, reason: []string{"0 acquisitions in 2 attempts"},
		},
		{
			name: "every acquire refused with an error reply",
			meta: Meta{Keys: one},
			hist: func(b *builder) {
				for i := 0; i < 5; i++ {
					b.op(float64(2*i), float64(2*i+1), Fail, 1, 1, FAcquire, k0, refused("ERR invalid expire time in 'set' command"))
				}
			},
			verdict: Inconclusive, reason: []string{"0 acquisitions: 5 error replies: ERR invalid expire time"},
			check: func(t *testing.T, r Result) { expect(t, r.ErrorReplies, 5, "error replies") },
		},
		{
			name: "most attempts unknown",
			meta: Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.op(10, 11, Info, 3, 3, FAcquire, k0, errs("i/o timeout"))
				b.op(12, 13, Info, 4, 4, FAcquire, k0, errs("i/o timeout"))
				b.op(14, 15, Info, 5, 5, FAcquire, k0, errs("i/o timeout"))
			},
			verdict: Inconclusive, reason: []string{"most acquire attempts ended in errors (3 of 5", "3 unknown outcomes: i/o timeout"},
		},
		{
			// A refusal is a definite no, as a failed SET NX is: a lock
			// that folds it into its own "not acquired" (redsync's
			// ErrFailed) and one that lets the reply through must be
			// judged alike on the same server behaviour.
			name: "most attempts refused after two holds: refusals are definite, not errors",
			meta: Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				for i := 0; i < 5; i++ {
					b.op(float64(10+2*i), float64(11+2*i), Fail, 3+i, 3+i, FAcquire, k0, refused("NOREPLICAS Not enough good replicas to write."))
				}
			},
			verdict: Safe,
			check:   func(t *testing.T, r Result) { expect(t, r.ErrorReplies, 5, "error replies") },
		},
		{
			name: "half the attempts unknown is not most",
			meta: Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.op(10, 11, Info, 3, 3, FAcquire, k0, errs("i/o timeout"))
				b.op(12, 13, Info, 4, 4, FAcquire, k0, errs("i/o timeout"))
			},
			verdict: Safe,
		},
		{
			name: "a key held once",
			meta: Meta{Keys: []string{k0, "lock:1"}},
			hist: func(b *builder) {
				twoHolds(b)
				b.op(8, 9, Ok, 3, 3, FAcquire, "lock:1")
				b.op(10, 11, Ok, 3, 3, FRelease, "lock:1")
			},
			verdict: Inconclusive, reason: []string{"keys held fewer than 2 times", "lock:1 1"},
		},
		{
			name:    "a key never tried",
			meta:    Meta{Keys: []string{k0, "lock:1"}},
			hist:    twoHolds,
			verdict: Inconclusive, reason: []string{"lock:1 0"},
		},
		{
			name: "a fault that applied to nothing",
			meta: Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.nemesis(0.5, Fail, FStart, "partition clients=[9]", "no link of client 9")
			},
			verdict: Inconclusive, reason: []string{`fault "partition clients=[9]" at 0.5 ms applied to nothing: no link of client 9`},
			check: func(t *testing.T, r Result) { expect(t, r.FaultsFailed, 1, "faults failed") },
		},
		{
			name: "a fault recorded ok but with no target",
			meta: Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.add(0.5, Ok, NemesisProcess, -1, FStart, "", val("latency"), func(o *Op) { o.Targets = &FaultTargets{} })
			},
			verdict: Inconclusive, reason: []string{`fault "latency" at 0.5 ms applied to nothing: no target`},
		},
		{
			name: "a fault with a target is evidence",
			meta: Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.add(0.5, Ok, NemesisProcess, -1, FStart, "", val("pause"), func(o *Op) { o.Targets = &FaultTargets{Clients: []int{1}} })
			},
			verdict: Safe,
		},
		{
			name: "a heal that failed",
			meta: Meta{Keys: one},
			hist: func(b *builder) {
				twoHolds(b)
				b.nemesis(0.5, Ok, FStart, "kill nodes=[0]", "")
				b.nemesis(3.5, Fail, FStop, "kill nodes=[0]", "restart n1: address in use")
			},
			verdict: Inconclusive, reason: []string{`heal of "kill nodes=[0]" at 3.5 ms failed: restart n1: address in use`},
			check: func(t *testing.T, r Result) { expect(t, r.HealsFailed, 1, "heals failed") },
		},
		{
			name: "a scheduled failpoint that never fired",
			meta: sched(Armed{Index: 0, Client: 1, Point: "setnx-del/before-del", Times: 1}),
			hist: func(b *builder) {
				twoHolds(b)
				b.add(0.5, Ok, 1, 1, FStep, "", val("setnx-del/after-get")) // reached, but not the armed point
			},
			verdict: Inconclusive, reason: []string{"#0 c1 at setnx-del/before-del fired 0 of 1 times"},
			check: func(t *testing.T, r Result) {
				expect(t, r.Failpoints, []FailpointCount{{Index: 0, Client: 1, Point: "setnx-del/before-del", Want: "exactly 1"}}, "failpoints")
			},
		},
		{
			name: "a scheduled failpoint short of its times",
			meta: sched(Armed{Index: 0, Client: 1, Point: "cs/hold", Times: 2}),
			hist: func(b *builder) {
				twoHolds(b)
				b.add(1.5, Ok, 1, 1, FStep, "", val("cs/hold"), fired(0))
			},
			verdict: Inconclusive, reason: []string{"#0 c1 at cs/hold fired 1 of 2 times"},
		},
		{
			name: "a scheduled failpoint that fired as asked",
			meta: sched(Armed{Index: 0, Client: 1, Point: "cs/hold", Times: 1}, Armed{Index: 1, Client: 2, Point: "cs/hold", Times: 1}),
			hist: func(b *builder) {
				twoHolds(b)
				b.add(1.5, Ok, 1, 1, FStep, "", val("cs/hold"), fired(0))
				b.add(5.5, Ok, 2, 2, FStep, "", val("cs/hold"), fired(1))
			},
			verdict: Safe, reason: []string{"failpoints fired: #0 cs/hold ×1, #1 cs/hold ×1"},
		},
		{
			name:    "an inert failpoint (another implementation's step) need not fire",
			meta:    sched(Armed{Index: 0, Client: 1, Point: "getset/after-get", Times: 1, Inert: true}),
			hist:    twoHolds,
			verdict: Safe,
			check: func(t *testing.T, r Result) {
				expect(t, r.Failpoints, []FailpointCount{{Index: 0, Client: 1, Point: "getset/after-get", Want: "inert"}}, "failpoints")
			},
		},
		{
			name:    "a random failpoint that never fired",
			meta:    Meta{Mode: "random", Keys: one, Failpoints: []Armed{{Index: 0, Client: -1, Point: "cs/hold", Prob: 0.02}}},
			hist:    twoHolds,
			verdict: Inconclusive, reason: []string{"#0 every client at cs/hold never fired"},
		},
		{
			name: "a random failpoint reports how often it fired",
			meta: Meta{Mode: "random", Keys: one, Failpoints: []Armed{{Index: 0, Client: -1, Point: "cs/hold", Prob: 0.02}}},
			hist: func(b *builder) {
				twoHolds(b)
				b.add(1.5, Ok, 1, 1, FStep, "", val("cs/hold"), fired(0))
				b.add(5.5, Ok, 2, 2, FStep, "", val("cs/hold"), fired(0))
			},
			verdict: Safe, reason: []string{"#0 cs/hold ×2"},
		},
		{
			name: "an overlap stays unsafe though a fault applied to nothing",
			meta: Meta{Keys: one},
			hist: func(b *builder) {
				b.op(0, 1, Ok, 1, 1, FAcquire, k0)
				b.op(2, 3, Ok, 2, 2, FAcquire, k0)
				b.op(4, 5, Ok, 1, 1, FRelease, k0)
				b.op(6, 7, Ok, 2, 2, FRelease, k0)
				b.nemesis(0.5, Fail, FStart, "pause clients=[7]", "no client 7")
			},
			verdict: Unsafe,
		},
		{
			name: "a starvation stays a deadlock though the key was held once",
			meta: Meta{Keys: one},
			opts: Options{DeadlockBound: 100e6},
			hist: func(b *builder) {
				b.op(0, 1, Ok, 1, 1, FAcquire, k0)
				b.add(2, Ok, 1, 1, FCrash, "")
				for i := 0; i < 10; i++ {
					b.op(float64(3+30*i), float64(3+30*i+25), Fail, 2, 2, FAcquire, k0, errs("lock not acquired"))
				}
			},
			verdict: Deadlock,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := runnerHist(tc.meta, tc.hist)
			if _, problems := Validate(Parsed{History: h}); len(problems) > 0 {
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

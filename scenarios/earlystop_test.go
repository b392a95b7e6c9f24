package scenarios_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios"
)

// TestEarlyStop: an unsafe run stops a grace after its first overlap and
// says so; with FullDuration it runs its whole time; a fenced resource's
// overlaps (which may be safe) never stop a run. The verdicts are the same.
func TestEarlyStop(t *testing.T) {
	cluster.RequireRedisServer(t)
	spec, err := scenarios.Load("pause-past-ttl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		impl    string
		full    bool
		stopped bool
		verdict string
	}{
		{"set-nx-px", false, true, checker.Unsafe},
		{"set-nx-px", true, false, checker.Unsafe},
		{"fenced", false, false, checker.Safe},
	} {
		out, err := scenarios.Run(context.Background(), spec, scenarios.Config{Impl: tc.impl, Backend: cluster.RedisServer, FullDuration: tc.full})
		if err != nil {
			t.Fatal(err)
		}
		r := out.Result
		if r.Verdict != tc.verdict {
			t.Errorf("%s full=%v: verdict %s: %s", tc.impl, tc.full, r.Verdict, r.Reason)
		}
		if got := out.StoppedAfter > 0; got != tc.stopped {
			t.Errorf("%s full=%v: stopped early %v (after %v), want %v", tc.impl, tc.full, got, out.StoppedAfter, tc.stopped)
		}
		if tc.stopped && out.Elapsed >= spec.Duration {
			t.Errorf("%s: stopped early yet ran %v of %v", tc.impl, out.Elapsed, spec.Duration)
		}
		if tc.stopped && (r.FirstViolationNs < 0 || r.DurationNs-r.FirstViolationNs < int64(out.StoppedAfter)) {
			t.Errorf("%s: the history ends %v after the first violation, before the %v grace", tc.impl, r.DurationNs-r.FirstViolationNs, out.StoppedAfter)
		}
		t.Logf("%s full=%v: %s in %v (stopped after %v; duration %v)", tc.impl, tc.full, r.Verdict, out.Elapsed, out.StoppedAfter, spec.Duration)
	}
}

// TestEarlyStopFinal: holds of 2 s past a 200 ms TTL overlap at once. A run
// expected safe fails on that verdict whatever comes next (final): it stops
// soon after the overlap and its clients are cut short instead of finishing
// their 2 s holds. The same run expected unsafe may still owe a forbidden
// finding from those holds' releases: it keeps today's early stop (two TTLs
// after the overlap) and drains, every client finishing its cycle. The
// verdict is unsafe either way.
func TestEarlyStopFinal(t *testing.T) {
	cluster.StartForTest(t, 1)
	for _, expect := range []string{checker.Safe, checker.Unsafe} {
		spec, err := scenarios.Parse("holds-past-ttl.yaml", []byte(`name: holds-past-ttl
clients: 2
keys: 1
duration: 6s
lock: {ttl: 200ms, retry_delay: 5ms, wait_timeout: 3s}
workload: {cs_min: 2s, cs_max: 2s}
impls: [set-nx-px]
expected: {set-nx-px: `+expect+`}
`))
		if err != nil {
			t.Fatal(err)
		}
		out, err := scenarios.Run(context.Background(), spec, scenarios.Config{Impl: "set-nx-px", Backend: cluster.RedisServer})
		if err != nil {
			t.Fatal(err)
		}
		r, ph := out.Result, out.Phases
		t.Logf("expected %s: %s, stopped after %v, %s", expect, r.Verdict, out.StoppedAfter, ph)
		if r.Verdict != checker.Unsafe {
			t.Errorf("expected %s: verdict %s: %s", expect, r.Verdict, r.Reason)
			continue
		}
		if out.StoppedAfter <= 0 || ph.Traffic >= spec.Duration {
			t.Errorf("expected %s: not stopped early (traffic %v)", expect, ph.Traffic)
		}
		cycles := 0
		for _, op := range out.History {
			if op.F == checker.FRelease && op.Type == checker.Invoke {
				cycles++
			}
		}
		switch expect {
		case checker.Safe:
			// Cut short: the drain does not wait out a 2 s hold.
			if ph.Drain >= time.Second {
				t.Errorf("final run drained %v: its clients finished their holds", ph.Drain)
			}
		case checker.Unsafe:
			if out.StoppedAfter != 400*time.Millisecond {
				t.Errorf("run expected unsafe stopped %v after its overlap, want two TTLs", out.StoppedAfter)
			}
			// Drained: both overlapping holders released.
			if cycles < 2 {
				t.Errorf("run expected unsafe: %d releases, want both holders' (drained)", cycles)
			}
		}
	}
}

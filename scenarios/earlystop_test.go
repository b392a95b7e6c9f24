package scenarios_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestEarlyStop: an unsafe run stops a grace after its first overlap and
// says so; with FullDuration it runs its whole time; a fenced resource's
// overlaps (which may be safe) never stop a run. The verdicts are the same.
func TestEarlyStop(t *testing.T) {
	cluster.RequireRedisServer(t)
	spec, err := spec.Load("pause-past-ttl")
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

// TestEarlyStopFinal: holds of 2 s past a 1 s TTL overlap. A run expected
// safe fails on that verdict whatever comes next (final): its traffic ends
// soon after the overlap, not two TTLs after. The same run expected unsafe
// may still owe a forbidden finding: it keeps the two TTLs. Either way the
// verdict is unsafe and the clients finish their cycles, both overlapping
// holders releasing.
func TestEarlyStopFinal(t *testing.T) {
	cluster.StartForTest(t, 1)
	for _, expect := range []string{checker.Safe, checker.Unsafe} {
		spec, err := spec.Parse("holds-past-ttl.yaml", []byte(`name: holds-past-ttl
clients: 2
keys: 1
duration: 8s
lock: {ttl: 1s, retry_delay: 5ms, wait_timeout: 3s}
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
		releases := map[int]bool{}
		for _, op := range out.History {
			if op.F == history.FRelease && op.Type == history.Invoke {
				releases[op.Client] = true
			}
		}
		if len(releases) < 2 {
			t.Errorf("expected %s: releases by %v, want both holders' (their cycles finished)", expect, releases)
		}
		switch expect {
		case checker.Safe:
			if out.StoppedAfter >= time.Second {
				t.Errorf("final run stopped %v after its overlap, want soon after", out.StoppedAfter)
			}
		case checker.Unsafe:
			if out.StoppedAfter != 2*time.Second {
				t.Errorf("run expected unsafe stopped %v after its overlap, want two TTLs", out.StoppedAfter)
			}
		}
	}
}

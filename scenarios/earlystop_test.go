package scenarios_test

import (
	"context"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
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

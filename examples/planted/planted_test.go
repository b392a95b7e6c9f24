package planted

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/lockimpl/exec"
	"github.com/lockstorm/lockstorm/locktest"
	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// trial is one lock on trial: want is the class its planted bug must be
// flagged with (a verdict, or a kind of finding its claims forbid), "" for
// a correct lock (no verdict may differ from its expectation).
type trial struct {
	lock lockimpl.Info
	part string // which part of the algorithm the bug is in
	want string
}

// pyClient describes examples/clients/planted_lock.py with the variation
// bug ("" for the correct one) as an --exec lock.
func pyClient(t *testing.T, bug string) lockimpl.Info {
	t.Helper()
	script, err := filepath.Abs("../clients/planted_lock.py")
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{"python3", script}
	if bug != "" {
		argv = append(argv, bug)
	}
	info, err := exec.Describe(t.Context(), argv)
	if err != nil {
		t.Fatalf("planted_lock.py %s: %v", bug, err)
	}
	return info
}

// trials are the locks on trial: every one, or those LOCKSTORM_TEST_LOCKS
// names (comma-separated), to look again at a few.
func trials(t *testing.T) []trial {
	all := allTrials(t)
	only := os.Getenv("LOCKSTORM_TEST_LOCKS")
	if only == "" {
		return all
	}
	var out []trial
	for _, tr := range all {
		if slices.Contains(strings.Split(only, ","), tr.lock.Name) {
			out = append(out, tr)
		}
	}
	if len(out) == 0 {
		t.Fatalf("LOCKSTORM_TEST_LOCKS=%q names none of the locks on trial", only)
	}
	return out
}

func allTrials(t *testing.T) []trial {
	return []trial{
		{Single, "correct", ""},
		{SingleWatchdog, "correct", ""},
		{Quorum, "correct", ""},
		{pyClient(t, ""), "correct (exec)", ""},
		{SetnxThenPexpire, "acquire", checker.Deadlock},
		{TTLMicros, "expiry", checker.Deadlock},
		{PIDToken, "token", checker.Unsafe},
		{GetThenDel, "release", checker.Unsafe},
		{PlainDel, "release", checker.Unsafe},
		{ScriptNeq, "server-side script", checker.Unsafe},
		{RenewSeconds, "renewal", checker.Unsafe},
		{HalfQuorum, "quorum counting", checker.Unsafe},
		{NoValidity, "validity", checker.Unsafe},
		{pyClient(t, "get-then-del"), "release (exec)", checker.Unsafe},
		{pyClient(t, "time-token"), "token (exec)", checker.Unsafe},
		{LyingRelease, "release reply", string(history.KindReleaseFalseSuccess)},
		{BareExtend, "extend", string(history.KindExtendFalseSuccess)},
		{DelToken, "release script", string(history.KindReleaseNotFreed)},
		{ErrIsNo, "acquire errors", string(history.KindLostAcquire)},
		// The catalogue's entries of libraries not reachable here
		// (shared/catalogue.md), each with the kind its class implies.
		{ForceUnlock, "release (catalogue 10, Redisson)", checker.Unsafe},
		{RenewBare, "renewal (catalogue 11, Redisson)", string(history.KindExtendFalseSuccess)},
		{RenewAfterFailedRelease, "release (catalogue 12, Redisson)", checker.Deadlock},
		{RenewStaleEntry, "renewal (catalogue 13, Redisson)", checker.Unsafe},
		{RenewDiesOnError, "renewal (catalogue 20, python-redis-lock)", checker.Unsafe},
		{RenewRecreate, "renewal (catalogue 25, RedLock.net)", string(history.KindExtendFalseSuccess)},
		{WallElapsed, "validity (catalogue 24, RedLock.net)", checker.Unsafe},
		{Signal, "correct", ""},
		{HashQuorum, "correct", ""},
		{SignalDeleted, "release (catalogue 19, python-redis-lock)", string(history.KindNeedlessWait)},
		{SignalGivesUp, "acquire (catalogue 23, Spring)", string(history.KindEarlyGiveUp)},
		{LeaseFromWait, "acquire (catalogue 14, Redisson)", checker.Unsafe},
		{LockedIndex, "validity (catalogue 21, pottery)", checker.Unsafe},
		{SingleWatchdogAwait, "correct", ""},
		{RenewAfterAbandon, "acquire (catalogue 15, Redisson)", checker.Deadlock},
	}
}

// keep is which run folders to keep: LOCKSTORM_TEST_KEEP (failures, all
// or none), failures by default.
func keep() string {
	if k := os.Getenv("LOCKSTORM_TEST_KEEP"); k != "" {
		return k
	}
	return reports.KeepFailures
}

// seeds are 1..LOCKSTORM_TEST_SEEDS (default 1).
func seeds(t *testing.T) []uint64 {
	n := 1
	if s := os.Getenv("LOCKSTORM_TEST_SEEDS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("LOCKSTORM_TEST_SEEDS=%q: want a positive number", s)
		}
		n = v
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// battery is every shipped scenario but the real-Sentinel and Redis
// Cluster ones (which examples/battery_test.go leaves out for the reasons
// it gives): no scenario is chosen for any lock here. LOCKSTORM_TEST_SCENARIOS
// (comma-separated) narrows it to those it names, to look again at a few
// without the whole battery's fifteen minutes a seed.
func battery(t *testing.T) []string {
	only := os.Getenv("LOCKSTORM_TEST_SCENARIOS")
	var names []string
	for _, n := range spec.Names() {
		if strings.HasPrefix(n, "sentinel-") || strings.HasPrefix(n, "cluster-") {
			continue
		}
		if only == "" || slices.Contains(strings.Split(only, ","), n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		t.Fatalf("LOCKSTORM_TEST_SCENARIOS=%q names none of the battery's scenarios", only)
	}
	return names
}

// TestPlanted runs the shipped battery against each planted lock and its
// correct originals, on seeds 1..LOCKSTORM_TEST_SEEDS: each planted lock
// must be flagged with its class by some scenario (a verdict that differs
// from what its claims lead the scenario to expect), each correct lock by
// none. Nothing here names a scenario for a lock: the expectations come
// from the claims, the same for a lock and its planted variation.
//
// Thirty batteries take about fifteen minutes a seed on a busy two-core
// machine (issue 41: twenty-five of them, seeds 1-3, in 2664 s),
// past what the default go test may add to CI: the test runs when
// LOCKSTORM_TEST_PLANTED=1 (make planted).
func TestPlanted(t *testing.T) {
	if os.Getenv("LOCKSTORM_TEST_PLANTED") != "1" {
		t.Skip("thirty batteries, about fifteen minutes a seed: set LOCKSTORM_TEST_PLANTED=1 (make planted)")
	}
	all := trials(t)
	names := battery(t)
	type cell struct {
		caught []string // scenario: verdict, for the differing runs
		rep    *locktest.Report
	}
	table := map[string]map[uint64]*cell{}
	for _, seed := range seeds(t) {
		// One lock at a time, each battery four scenarios at a time: more
		// at once on a small shared machine stalls the harness, and a
		// stalled harness is judged inconclusive, which hides what a lock
		// does.
		for _, tr := range all {
			rep, err := locktest.Check(context.Background(), tr.lock, locktest.Battery{Scenarios: names, Seed: seed, Parallel: 4, Keep: keep(),
				Backend: os.Getenv("LOCKSTORM_TEST_BACKEND")})
			if err != nil {
				t.Errorf("%s seed %d: %v", tr.lock.Name, seed, err)
				continue
			}
			c := &cell{rep: rep}
			for _, o := range rep.Failures() {
				s := fmt.Sprintf("%s: %s (expected %s)", o.Scenario, o.Result.Verdict, o.Expected)
				if un := o.Result.Unpermitted(); len(un) > 0 {
					s += " " + reports.FindingsBrief(un)
				}
				c.caught = append(c.caught, s)
			}
			sort.Strings(c.caught)
			if table[tr.lock.Name] == nil {
				table[tr.lock.Name] = map[uint64]*cell{}
			}
			table[tr.lock.Name][seed] = c
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| lock | part | want | seed | caught by (scenario: verdict) | battery wall |\n|---|---|---|---|---|---|\n")
	for _, tr := range all {
		for _, seed := range seeds(t) {
			c := table[tr.lock.Name][seed]
			if c == nil {
				continue
			}
			want := tr.want
			if want == "" {
				want = "no flag"
			}
			caught := strings.Join(c.caught, "; ")
			if caught == "" {
				caught = "—"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %.1f s |\n", tr.lock.Name, tr.part, want, seed, caught, c.rep.Wall.Seconds())
			judgeTrial(t, tr, seed, c.rep)
		}
	}
	t.Logf("planted locks × seeds:\n%s", b.String())
}

// judgeTrial fails t when a planted lock was not flagged with its class on
// seed, or a correct one was flagged at all (with its matrix, for the why).
func judgeTrial(t *testing.T, tr trial, seed uint64, rep *locktest.Report) {
	t.Helper()
	fails := rep.Failures()
	var m strings.Builder
	_ = rep.WriteMatrix(&m)
	if tr.want == "" {
		for _, o := range fails {
			t.Errorf("correct %s, seed %d: %s × %s: verdict %s, expected %s: %s; run folder %s",
				tr.lock.Name, seed, o.Scenario, o.Impl, o.Result.Verdict, o.Expected, o.Result.Reason, rep.RunDirs[o.Scenario])
		}
		return
	}
	for _, o := range fails {
		if o.Result.Verdict == tr.want {
			return
		}
		for _, f := range o.Result.Unpermitted() {
			if string(f.Kind) == tr.want {
				return
			}
		}
	}
	t.Errorf("planted %s (%s), seed %d: no scenario flagged it %s; matrix:\n%s", tr.lock.Name, tr.part, seed, tr.want, m.String())
}

// TestOneScenarioEach keeps, inside the default go test, the scenarios
// through which alone the battery reaches a planted bug (TestPlanted needs
// minutes): each lock must be judged as its trial says there, the planted
// one flagged with its class, its correct original not at all. Each pair
// of runs takes a few seconds.
func TestOneScenarioEach(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		trials   []trial
	}{
		// A lock that reads a lost reply as a definite no: lost-acquire.
		{"lost-grant-reply", []trial{
			{Single, "correct", ""},
			{ErrIsNo, "acquire errors", string(history.KindLostAcquire)},
		}},
		// A late grant's callback renewing a try the acquire gave up on
		// (catalogue 15).
		{"abandoned-try", []trial{
			{SingleWatchdog, "correct", ""},
			{SingleWatchdogAwait, "correct", ""},
			{RenewAfterAbandon, "acquire (catalogue 15, Redisson)", checker.Deadlock},
		}},
		// A holder trusting the later key of a bare majority (catalogue 21).
		{"quorum-late-key", []trial{
			{Quorum, "correct", ""},
			{LockedIndex, "validity (catalogue 21, pottery)", checker.Unsafe},
		}},
	} {
		for _, tr := range tc.trials {
			t.Run(tc.scenario+"/"+tr.lock.Name, func(t *testing.T) {
				rep, err := locktest.Check(t.Context(), tr.lock, locktest.Battery{Scenarios: []string{tc.scenario}, Seed: 1, Keep: keep()})
				if err != nil {
					t.Fatal(err)
				}
				judgeTrial(t, tr, 1, rep)
			})
		}
	}
}

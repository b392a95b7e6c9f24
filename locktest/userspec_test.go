package locktest_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
)

// recordingTB is a testing.TB that records what a subtest would report
// instead of reporting it, so a test can see a subtest fail.
type recordingTB struct {
	testing.TB
	errors, skips []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Skipf(format string, args ...any) {
	r.skips = append(r.skips, fmt.Sprintf(format, args...))
}

// TestUserSpecNamesTheLock: a user's scenario file names a lock given in
// code (declaring no claims) under impls, expected and variants. Its
// expected safe applies: the lock whose release is a plain DEL fails its
// subtests, the owner-checked one passes them; the variant's options reach
// New. Without a spec naming it, the same lock has no expectation and its
// subtest is skipped as such, never passed.
func TestUserSpecNamesTheLock(t *testing.T) {
	cluster.StartForTest(t, 1)
	t.Parallel()
	const spec = "testdata/my-lock-late-release.yaml"
	for _, tc := range []struct {
		name     string
		careless bool
		spec     string
		verdict  string
		fails    bool
		source   string
	}{
		{"plain DEL", true, spec, checker.Unsafe, true, "spec"},
		{"compare-and-delete", false, spec, checker.Safe, false, "spec"},
		{"not named: no expectation", true, "foreign-unlock", checker.Unsafe, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			tags := map[string]bool{}
			info := lockimpl.Info{Name: "my-lock", New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
				mu.Lock()
				tags[o.Extra["tag"]] = true
				mu.Unlock()
				return tokenInfo("my-lock", lockimpl.Claims{}, tc.careless).New(env, o)
			}}
			rep, err := locktest.Check(t.Context(), info, locktest.Battery{Scenarios: []string{tc.spec},
				Backend: cluster.RedisServer, Keep: "none"})
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if tc.spec == spec {
				want = 2 // my-lock and its variant my-lock-tagged
				if !tags["from-variant"] || !tags[""] {
					t.Errorf("options seen by New: %v; want the variant's tag and the plain run's none", tags)
				}
			}
			if len(rep.Outcomes) != want {
				t.Fatalf("%d runs, want %d", len(rep.Outcomes), want)
			}
			for _, o := range rep.Outcomes {
				if o.Result.Verdict != tc.verdict || o.ExpectedSource != tc.source {
					t.Errorf("%s × %s: verdict %s expected %q from %q; want verdict %s from %q (%s)", o.Scenario, o.Impl,
						o.Result.Verdict, o.Expected, o.ExpectedSource, tc.verdict, tc.source, o.Result.Reason)
				}
				sub := &recordingTB{TB: t}
				locktest.Judge(sub, rep, o)
				if failed := len(sub.errors) > 0; failed != tc.fails {
					t.Errorf("%s × %s: subtest failed=%v (%v), want %v", o.Scenario, o.Impl, failed, sub.errors, tc.fails)
				}
				if tc.source == "" && len(sub.skips) == 0 {
					t.Errorf("%s × %s: a run without an expectation was not skipped as such", o.Scenario, o.Impl)
				}
			}
		})
	}
}

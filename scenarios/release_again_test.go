package scenarios_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// forgetful is shortLease whose release forgets its token before the round
// trip, as redis-py 4.3.4's Lock.release does (the catalogue's entry 27):
// asked again after a lost reply, it says "not held" without asking.
type forgetful struct {
	shortLease
	mu   sync.Mutex
	gone map[string]bool // tokens released, whatever came back
}

func (l *forgetful) Release(ctx context.Context, lease *lockimpl.Lease) error {
	l.mu.Lock()
	forgot := l.gone[lease.Token]
	l.gone[lease.Token] = true
	l.mu.Unlock()
	if forgot {
		return lockimpl.ErrNotHeld
	}
	return l.shortLease.Release(ctx, lease)
}

// TestReleaseAgain: release-asked-again on a real redis-server. Its spec
// (workload.release_again) has C0 release again after its first release
// met a blackhole: a compare-and-delete's second release frees the key
// (no finding); a release that forgot its token says "not held" while the
// key stands (false-refusal). Without release_again, C0 releases once.
func TestReleaseAgain(t *testing.T) {
	text, err := os.ReadFile("spec/specs/release-asked-again.yaml")
	if err != nil {
		t.Fatal(err)
	}
	once := strings.Replace(string(text), "release_again: true", "release_again: false", 1)
	plain := lockimpl.Info{Name: "short-lease", New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		return &shortLease{env: env, o: o}, nil
	}}
	forgets := lockimpl.Info{Name: "forgetful", New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		return &forgetful{shortLease: shortLease{env: env, o: o}, gone: map[string]bool{}}, nil
	}}
	for _, tc := range []struct {
		name     string
		info     *lockimpl.Info
		text     string
		releases int // C0's releases of its first lease
		refusal  bool
	}{
		{"compare-and-delete asked again", &plain, string(text), 2, false},
		{"a release that forgot its token", &forgets, string(text), 2, true},
		{"asked once", &forgets, once, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runSpec(t, tc.info, "release-asked-again.yaml", tc.text, 1)
			first, releases := "", 0
			for _, op := range out.History {
				if op.Client == 0 && op.F == history.FAcquire && op.Type == history.Ok && first == "" {
					first = op.Value
				}
				if op.Client == 0 && op.F == history.FRelease && op.Type == history.Invoke && op.Value == first {
					releases++
				}
			}
			if releases != tc.releases {
				t.Errorf("c0 released its first lease %d times, want %d", releases, tc.releases)
			}
			if f := out.Result.Finding(history.KindFalseRefusal); (f != nil) != tc.refusal {
				t.Errorf("false refusal %+v, want %v: %s", f, tc.refusal, out.Result.Reason)
			}
		})
	}
}

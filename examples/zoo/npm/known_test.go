package npm

import (
	"os"
	"sort"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
	"github.com/lockstorm/lockstorm/history"
)

// General schedules that name no library and reach these bugs on every
// seed, where the random specs reach them on some (lua-unlock-stall,
// lua-unlock-stall-random and explore-crash deadlock when the contenders
// happen to split the nodes; explore-late-grant is unsafe when a random
// pause happens to fall after a grant). Both are shipped: the battery runs
// them on every lock, with expectations from the claims (grant-after-ttl's
// from grant_checked and grant_confirmed for a single-instance lock).
const (
	// splitFirstTry: three clients' first tries split five nodes 2-2-1.
	splitFirstTry = "split-first-try"
	// grantAfterTTL: a quorum lock's votes all come back after the TTL.
	grantAfterTTL = "grant-after-ttl"
	// lapsedLease: the holder's lease lapses in a pause; its release then
	// finds the key gone, on a healthy link.
	lapsedLease = "lapsed-lease"
)

// known are the npm redlock releases on five nodes with the verdict each
// must give per zoo scenario on every seed; zoo says the release runs only
// under LOCKSTORM_ZOO=1 (make zoo), to keep `go test` near a minute.
//
// redlock 5.0.0-beta.2 (the npm `next` tag): _execute retries an acquire
// with the same value and frees nothing in between, and ACQUIRE_SCRIPT
// refuses a key that exists even when it holds that value: a failed try
// keeps the nodes it won and blocks its own retries, so contenders that
// split the nodes block each other until their keys expire (node-redlock
// issue 296; PR 369 names the self-blocking). acquire never compares the
// expiration it computes (start + duration - drift, dist/cjs/index.js)
// with the time the grant came back, so a grant whose votes arrived after
// the TTL is returned as a lock (issue 299: the fixes, PRs 274/276, were
// merged and never released). 4.2.0 releases a failed try's nodes before
// retrying and grants only while `lock.expiration > Date.now()`
// (redlock.js, _lock). @sesamecare-oss/redlock 1.4.0, the maintained
// fork, has both bugs (build/index.js: _execute, acquire; build/scripts.js:
// ACQUIRE_SCRIPT), its start taken per try rather than once.
//
// On one node, 5.0.0-beta.2's release counts the release script's 0 (the
// key already gone) as a vote against and retries it retryCount times
// before it throws (node-redlock issue 313; dist/cjs/index.js, release
// through _execute); 4.2.0 (PR 75) sends it once and throws at once. The
// battery's release-retries kind finds the first on lapsed-lease, whose
// release meets a lapsed key on a healthy link (the catalogue's entry 18).
var known = []struct {
	argv []string
	zoo  bool
	want map[string]string
	// retries: the scenarios whose every run must show release-retries
	// (true) or must not (false).
	retries map[string]bool
}{
	{[]string{"node", "redlock-v5.js", "redlock-5.0.0-beta.2", "5"}, false,
		map[string]string{splitFirstTry: checker.Deadlock, grantAfterTTL: checker.Unsafe}, nil},
	{[]string{"node", "redlock-v4.js", "5"}, false,
		map[string]string{splitFirstTry: checker.Safe, grantAfterTTL: checker.Safe}, nil},
	{[]string{"node", "redlock-v5.js", "@sesamecare-oss/redlock", "5"}, true,
		map[string]string{splitFirstTry: checker.Deadlock, grantAfterTTL: checker.Unsafe}, nil},
	{[]string{"node", "redlock-v5.js", "redlock-5.0.0-beta.2"}, false,
		map[string]string{lapsedLease: checker.Safe}, map[string]bool{lapsedLease: true}},
	{[]string{"node", "redlock-v4.js"}, false,
		map[string]string{lapsedLease: checker.Safe}, map[string]bool{lapsedLease: false}},
}

// TestKnownBugs asserts the npm redlock bugs at their releases and their
// absence where they were fixed, on each of the zoo's seeds (1-3): the
// verdicts, and the release retries of entry 18.
func TestKnownBugs(t *testing.T) {
	seeds := installed(t)
	for _, k := range known {
		var paths []string
		for p := range k.want {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		info := describe(t, k.argv)
		t.Run(info.Name, func(t *testing.T) {
			if k.zoo && os.Getenv("LOCKSTORM_ZOO") == "" {
				t.Skip("runs under make zoo (LOCKSTORM_ZOO=1)")
			}
			zootest.SkipUnlessMine(t, info.Name)
			t.Parallel()
			for _, rep := range zootest.Run(t, info, seeds, paths) {
				for _, o := range rep.Outcomes {
					r, want := o.Result, k.want[o.Scenario]
					t.Logf("%s seed %d: %s (want %s; the claims expect %s): %s", o.Scenario, o.Seed, r.Verdict, want, o.Expected, r.Reason)
					if string(r.Verdict) != want {
						t.Errorf("%s seed %d: %s, want %s: %s", o.Scenario, o.Seed, r.Verdict, want, r.Reason)
					}
					if shows, ok := k.retries[o.Scenario]; ok && (r.Finding(history.KindReleaseRetries) != nil) != shows {
						t.Errorf("%s seed %d: release-retries %v, want %v (findings %+v)", o.Scenario, o.Seed, !shows, shows, r.Findings)
					}
				}
			}
		})
	}
}

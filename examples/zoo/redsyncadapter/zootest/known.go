package zootest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
)

// Known are the published bugs a release is known to have (true) or to
// have fixed (false); the zoo asserts each, present or absent, on every
// seed. They are facts about releases, from the libraries' trackers, and
// the scenarios that find them name no library.
type Known struct {
	// ReleaseFalseSuccess: a release acknowledged on a lock that had
	// expired (redsync before v4.0.4, its PR 61). The battery finds it
	// wherever a lease expires under its holder.
	ReleaseFalseSuccess bool
	// ExtendLateYes: an extend's yes says nothing of when the extended
	// lease began, so a holder dates it from the yes and trusts it longer
	// than the key lives (redsync before v4.4.0: Extend neither recomputes
	// the validity nor has Until; PR 71, issue 72). Found by the shipped
	// extend-reply-late, which names no library (its claims expect safe
	// of a lock that declares extend_checked, as redsync's do).
	ExtendLateYes bool
	// NoNodeTimeout: a try waits for every node until the client's own
	// command timeout, with no per-node timeout (redsync before v4.5.0,
	// its PR 80): with one of five masters dead and that timeout longer
	// than the TTL, no try keeps any validity and the lock starves. Found
	// by the shipped quorum-dead-node, which names no library.
	NoNodeTimeout bool
	// FixedRetryDelay: the default delay between tries is a constant
	// (redsync before v4.3.0: 500 ms whatever the try, redsync.go 27 at
	// v4.0.3 and v4.0.4; PR 66 draws 50-250 ms), so contenders whose tries
	// split the nodes retry together and split them again. Found by the
	// shipped quorum-lockstep, which names no library and leaves each
	// lock's retries to its library (no retry_delay).
	FixedRetryDelay bool
	// StuckBackoff: a waiter paced by the library's exponential backoff
	// polls at the backoff's floor for ever (bsm/redislock v0.8.2: a
	// time.Ticker made from the first backoff, never reset; PR 58, v0.9.1).
	// Found by the shipped extend-blips on the release's lock that
	// declares backoff_growth (retry-cadence), which names no library.
	StuckBackoff bool
	// ExtendNoRetry: an extend handed a retry strategy returns its first
	// transient error (bsm/redislock before v0.10.0: Refresh ignores its
	// Options; PRs 83/88). Found by the shipped extend-blips on a lock
	// that declares extend_retries (extend-gave-up), which names no
	// library.
	ExtendNoRetry bool
}

// Zoo is one release's trial; module is the library's module path
// (its version must be the one the test's go.mod selects). Under
// LOCKSTORM_ZOO=1 (make zoo) every lock runs the battery on the zoo's
// seeds, its matrix row and rows are written (Write), and the first lock
// (one node) must show the release false successes exactly when known
// says so. Always, on the seeds, the first lock runs extend-reply-late
// and must come out unsafe exactly when known says ExtendLateYes, and runs
// expiredReleases, which must show release false successes exactly when
// known says ReleaseFalseSuccess, and the first quorum lock runs
// quorum-dead-node, which must starve exactly when known says
// NoNodeTimeout, and quorum-lockstep, which must show lockstep retries
// exactly when known says FixedRetryDelay (the subtests make zoo-ci
// runs); every quorum lock runs quorumScenarios.
func Zoo(t *testing.T, module, version string, known Known, locks ...lockimpl.Info) {
	// A release's locks stay on one machine of a sharded zoo (its first
	// lock's), known bugs with them.
	SkipUnlessMine(t, locks[0].Name)
	seeds, err := Seeds()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := built(module); err != nil || got != version {
		t.Fatalf("%s: go list -m says %q (%v), the test declares %s: its go.mod pins another release", module, got, err, version)
	}
	library := strings.TrimPrefix(module, "github.com/")
	if i := strings.LastIndex(library, "/v"); i > 0 && strings.Trim(library[i+2:], "0123456789") == "" {
		library = library[:i]
	}
	t.Run("extend-reply-late", func(t *testing.T) {
		lateReply(t, locks[0], seeds, known.ExtendLateYes)
	})
	t.Run("expired-release", func(t *testing.T) {
		expiredRelease(t, locks[0], seeds, known.ReleaseFalseSuccess)
	})
	quorum := quorumLocks(locks)
	if len(quorum) > 0 {
		t.Run("dead-node", func(t *testing.T) {
			deadNode(t, quorum[0], seeds, known.NoNodeTimeout)
		})
		t.Run("lockstep", func(t *testing.T) {
			lockstep(t, quorum[0], seeds, known.FixedRetryDelay)
		})
	}
	retries(t, locks, seeds, known)
	for _, lock := range quorum {
		for _, sc := range quorumScenarios {
			t.Run(lock.Name+"/"+sc, func(t *testing.T) {
				asDerived(t, lock, seeds, sc)
			})
		}
	}
	if os.Getenv("LOCKSTORM_ZOO") == "" {
		t.Log("the battery runs under make zoo (LOCKSTORM_ZOO=1)")
		return
	}
	for i, lock := range locks {
		t.Run(lock.Name, func(t *testing.T) {
			reps := Run(t, lock, seeds, Battery())
			Write(t, library, version, lock, reps)
			for _, rep := range reps {
				t.Logf("%s seed %d: %d runs in %v", lock.Name, rep.Outcomes[0].Seed, len(rep.Outcomes), rep.Wall.Round(1e6))
			}
			if i == 0 {
				releaseFalse(t, reps, known.ReleaseFalseSuccess)
			}
		})
	}
}

// expiredReleases are the shipped scheduled scenarios whose schedule has
// a holder release a lock that expired under it (its release delayed past
// the TTL; its client paused past the TTL): the release false success is
// asserted on them on every seed, cheaply, and over the whole battery
// under make zoo.
var expiredReleases = []string{"foreign-unlock", "pause-past-ttl"}

// expiredRelease runs expiredReleases on each seed: release false
// successes when the release has the bug, none when it does not. Without
// the bug the release of the expired lock must still have happened and
// been refused, or the absence would say nothing.
func expiredRelease(t *testing.T, lock lockimpl.Info, seeds []uint64, want bool) {
	t.Helper()
	reps := Run(t, lock, seeds, expiredReleases)
	releaseFalse(t, reps, want)
	for _, rep := range reps {
		refused := 0
		for _, o := range rep.Outcomes {
			n := refusedReleases(o.History)
			refused += n
			t.Logf("%s seed %d: %s (expected %s), false successes %d, releases refused %d", o.Scenario, o.Seed, o.Result.Verdict, o.Expected, o.Result.FalseSuccesses, n)
		}
		if !want && refused == 0 {
			t.Errorf("seed %d: no release was refused: the scenarios did not have a holder release an expired lock", rep.Outcomes[0].Seed)
		}
	}
}

// refusedReleases counts the releases the lock answered with a definite
// no.
func refusedReleases(h history.History) int {
	n := 0
	for _, op := range h {
		if op.F == history.FRelease && op.Type == history.Fail {
			n++
		}
	}
	return n
}

// quorumScenarios are the shipped scenarios every quorum lock of the zoo
// runs on every seed, each verdict the one its claims derive, with no
// finding they forbid. quorum-slow-extend: only two of five nodes extend in
// time, and every release must pass it (a careful holder gives the extend
// no more than its lease has left, so even v4.0.3, whose extend counts a
// node's "not yours" as a yes, has its late answer cut off before it could
// mislead). quorum-rolling-restarts: three of five nodes restart empty one
// after another while the holder extends (catalogue entry 5, redsync PRs
// 147/149): unsafe for every release by default, safe with
// WithSetNXOnExtend (extend_recreates).
var quorumScenarios = []string{"quorum-slow-extend", "quorum-rolling-restarts"}

// asDerived runs scenario against a quorum lock on every seed: the
// verdict its claims derive, no forbidden finding, and extends made (both
// scenarios are about them).
func asDerived(t *testing.T, lock lockimpl.Info, seeds []uint64, scenario string) {
	t.Helper()
	for _, rep := range Run(t, lock, seeds, []string{scenario}) {
		for _, o := range rep.Outcomes {
			r := o.Result
			t.Logf("seed %d: %s (expected %s): extends %d (ok %d, failed %d), overlaps %d",
				o.Seed, r.Verdict, o.Expected, r.Extends, r.ExtendsOK, r.ExtendsFailed, r.Overlaps)
			if r.Extends == 0 || r.Verdict == checker.Inconclusive {
				t.Errorf("seed %d: %s with %d extends: the scenario did not reach its question (%s)", o.Seed, r.Verdict, r.Extends, r.Reason)
			}
			if string(r.Verdict) != o.Expected || len(r.Unpermitted()) > 0 {
				t.Errorf("seed %d: %s, expected %s: %s", o.Seed, r.Verdict, o.Expected, r.Reason)
			}
		}
	}
}

// deadNode runs quorum-dead-node on each seed: a starvation (deadlock,
// its finding unpermitted) when the release has no per-node timeout;
// safe, with holds, when it has one.
func deadNode(t *testing.T, lock lockimpl.Info, seeds []uint64, want bool) {
	t.Helper()
	for _, rep := range Run(t, lock, seeds, []string{"quorum-dead-node"}) {
		for _, o := range rep.Outcomes {
			r := o.Result
			t.Logf("seed %d: %s (expected %s): %s", o.Seed, r.Verdict, o.Expected, r.Reason)
			starved := r.Verdict == checker.Deadlock && r.Finding(history.KindStarvation) != nil
			switch {
			case want && !starved:
				t.Errorf("seed %d: %s, want a starvation: the release waits for the dead node (%s)", o.Seed, r.Verdict, r.Reason)
			case !want && (r.Verdict != checker.Safe || r.Acquired < 2):
				t.Errorf("seed %d: %s with %d acquisitions, want safe with holds: the release bounds each node's wait (%s)", o.Seed, r.Verdict, r.Acquired, r.Reason)
			}
		}
	}
}

// lockstep runs quorum-lockstep on each seed: lockstep retries, which the
// release's claims (distlock's random delay) do not permit, when its
// default delay is fixed; none, and a grant, when it is drawn at random.
// It runs on the sim backend: in virtual time a fixed delay keeps the
// contenders' tries together round after round, where on redis-server a
// loaded machine's jitter parts them by the 50 ms window on some seeds
// (docs/catalogue.md, entry 4); make zoo runs it there with the battery.
func lockstep(t *testing.T, lock lockimpl.Info, seeds []uint64, want bool) {
	t.Helper()
	for _, rep := range RunOn(t, "sim", lock, seeds, []string{"quorum-lockstep"}) {
		for _, o := range rep.Outcomes {
			r := o.Result
			f := r.Finding(history.KindLockstepRetries)
			witness := "none"
			if f != nil {
				witness = f.Witness
			}
			t.Logf("seed %d: %s (expected %s), %d acquisitions: lockstep-retries %s", o.Seed, r.Verdict, o.Expected, r.Acquired, witness)
			switch {
			case want && (f == nil || f.Permitted):
				t.Errorf("seed %d: no unpermitted lockstep-retries (%s): this release's fixed delay keeps split contenders together", o.Seed, witness)
			case !want && f != nil:
				t.Errorf("seed %d: lockstep-retries on a release whose delay is random: %s", o.Seed, f.Witness)
			case !want && (r.Verdict != checker.Safe || r.Acquired == 0):
				t.Errorf("seed %d: %s with %d acquisitions, want safe with holds: %s", o.Seed, r.Verdict, r.Acquired, r.Reason)
			}
		}
	}
}

// built is the version of module that the test's own module selects
// (test binaries carry no dependency versions in their build info).
func built(module string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", module, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// releaseFalse asserts the release false successes over the battery, seed
// by seed: some on every seed when the release has the bug, none on any
// when it does not.
func releaseFalse(t *testing.T, reps []*locktest.Report, want bool) {
	t.Helper()
	for _, rep := range reps {
		n, where := 0, map[string]int{}
		failed := 0 // runs the false successes failed: their claims forbid them
		for _, o := range rep.Outcomes {
			if f := o.Result.Finding(history.KindReleaseFalseSuccess); f != nil {
				n += f.Count
				where[o.Scenario] += f.Count
				if !f.Permitted && !o.AsExpected() {
					failed++
				}
			}
		}
		seed := rep.Outcomes[0].Seed
		switch {
		case want && (n == 0 || failed == 0):
			t.Errorf("seed %d: %d release false successes failing %d runs over the battery; this release acknowledges releases of expired locks, which its owner-checked claims forbid", seed, n, failed)
		case !want && n > 0:
			t.Errorf("seed %d: %d release false successes (%v) on a release that checks its unlock's answer", seed, n, where)
		default:
			t.Logf("seed %d: %d release false successes %v", seed, n, where)
		}
	}
}

// lateReply runs the shipped extend-reply-late on each seed: unsafe (two
// holders) when the release trusts a late yes, safe when it does not.
func lateReply(t *testing.T, lock lockimpl.Info, seeds []uint64, want bool) {
	t.Helper()
	reps := Run(t, lock, seeds, []string{"extend-reply-late"})
	for _, rep := range reps {
		for _, o := range rep.Outcomes {
			r := o.Result
			t.Logf("seed %d: %s (expected %s): extends %d (ok %d, failed %d, unknown %d), overlaps %d, stale writes %d",
				o.Seed, r.Verdict, o.Expected, r.Extends, r.ExtendsOK, r.ExtendsFailed, r.ExtendsUnknown, r.Overlaps, r.StaleWrites)
			if r.Extends == 0 || r.Verdict == checker.Inconclusive {
				t.Errorf("seed %d: %s with %d extends: the scenario did not reach its question (%s)", o.Seed, r.Verdict, r.Extends, r.Reason)
			}
			switch unsafe := r.Verdict == checker.Unsafe; {
			case want && !unsafe:
				t.Errorf("seed %d: %s, want unsafe: the holder trusted a late extend yet nothing overlapped (%s)", o.Seed, r.Verdict, r.Reason)
			case !want && unsafe:
				t.Errorf("seed %d: unsafe on a release that refuses a late extend: %s", o.Seed, r.Reason)
			}
		}
	}
}

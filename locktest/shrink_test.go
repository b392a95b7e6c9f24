package locktest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/locktest"
	"github.com/lockstorm/lockstorm/scenarios/shrink"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestShrinkAUserLock: a battery's failing run of a lock given in code
// (a release that DELs whatever holds the key, on foreign-unlock) shrinks
// through locktest.Shrink; the minimal spec does not name the lock (no
// lockstorm run knows it) and says how to run it; a safe run is refused
// before anything runs.
func TestShrinkAUserLock(t *testing.T) {
	cluster.StartForTest(t, 1)
	lock := tokenInfo("my-careless-lock", tokenClaims, true)
	rep, err := locktest.Check(context.Background(), lock, locktest.Battery{Scenarios: []string{"foreign-unlock"}, Backend: cluster.RedisServer, Keep: "none"})
	if err != nil {
		t.Fatal(err)
	}
	o := rep.Outcomes[0]
	if o.Result.Verdict != checker.Unsafe {
		t.Fatalf("foreign-unlock × a careless release: %s, want unsafe: %s", o.Result.Verdict, o.Result.Reason)
	}
	res, err := locktest.Shrink(context.Background(), lock, o, shrink.Options{Seeds: 1, Budget: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Unsafe || res.Nameable || res.Before.History != len(o.History) {
		t.Errorf("verdict %s, nameable %v, history before %d (the run's: %d)", res.Verdict, res.Nameable, res.Before.History, len(o.History))
	}
	b, err := res.File("locktest", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Run it with the lock it was shrunk on (my-careless-lock)") {
		t.Errorf("the header does not say how to run it:\n%s", b)
	}
	if _, err := spec.Parse("min.yaml", b); err != nil {
		t.Errorf("the minimal spec does not load: %v\n%s", err, b)
	}
	safe := *o
	safe.Result.Verdict = checker.Safe
	steps := 0
	_, err = locktest.Shrink(context.Background(), lock, &safe, shrink.Options{Progress: func(shrink.Step) { steps++ }})
	if !errors.Is(err, shrink.NotFailing) || steps != 0 {
		t.Errorf("a safe run: %v after %d steps, want shrink.NotFailing before any", err, steps)
	}
}

package locktest_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// A program's own main: the battery against a lock it was never told about.
// The lock declares its claims; each scenario derives the expected verdict
// and the reason from them.
func ExampleCheck() {
	lock := lockimpl.Info{
		Name: "my-lock",
		// One Redis master, SET NX PX, compare-and-delete on release.
		Claims: lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry,
			Release: lockimpl.OwnerCheckedRelease},
		New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
			return &tokenLock{env: env, o: o}, nil
		},
	}
	rep, err := locktest.Check(context.Background(), lock, locktest.Battery{
		Scenarios: []string{"pause-past-ttl", "crash-before-expire"}, Keep: "none"})
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range rep.Outcomes {
		fmt.Printf("%s: %s, expected %s (from %s)\n", o.Scenario, o.Result.Verdict, o.Expected, o.ExpectedSource)
	}
	fmt.Println("failures:", len(rep.Failures()))
	// Output:
	// pause-past-ttl: unsafe, expected unsafe (from claims)
	// crash-before-expire: safe, expected safe (from claims)
	// failures: 0
}

// From go test: every scenario a subtest, failing on an unexpected verdict.
func ExampleRun() {
	_ = func(t *testing.T) {
		locktest.Run(t, lockimpl.Info{
			Name:   "my-lock",
			Claims: lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease},
			New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
				return &tokenLock{env: env, o: o}, nil
			},
		}, locktest.Battery{})
	}
}

// Regression gating without hand-written expectations: record the
// verdicts once, then gate later runs against them (a lock that declares no
// claims has no other expectation).
func ExampleReport_Baseline() {
	lock := lockimpl.Info{Name: "my-lock", New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		return &tokenLock{env: env, o: o}, nil
	}}
	b := locktest.Battery{Scenarios: []string{"contention"}, Keep: "none"}
	rep, err := locktest.Check(context.Background(), lock, b)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "baseline")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "my-lock.json")
	if err := rep.Baseline().WriteFile(path); err != nil {
		log.Fatal(err)
	}

	// Later (in CI): the recorded verdicts are the expectations.
	if b.Baseline, err = spec.ReadBaseline(path); err != nil {
		log.Fatal(err)
	}
	rep, err = locktest.Check(context.Background(), lock, b)
	if err != nil {
		log.Fatal(err)
	}
	o := rep.Outcomes[0]
	fmt.Printf("%s: %s, expected %s (from %s); failures: %d\n", o.Scenario, o.Result.Verdict, o.Expected, o.ExpectedSource, len(rep.Failures()))
	// Output: contention: safe, expected safe (from baseline); failures: 0
}

package locktest

import (
	"context"
	"errors"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/shrink"
)

// Shrink reduces a failing run of lock (an unsafe or deadlock one of a
// Report's Outcomes) to the smallest scenario that still fails the same way
// on opts.Seeds seeds from the run's own (package scenarios/shrink says
// how). Write the result beside the test and run it as a regression
// scenario:
//
//	rep, _ := locktest.Check(ctx, myLock, locktest.Battery{Scenarios: []string{"pause-past-ttl-random"}})
//	for _, o := range rep.Failures() {
//		res, err := locktest.Shrink(ctx, myLock, o, shrink.Options{Budget: 2 * time.Minute})
//		if err != nil {
//			return err // errors.Is(err, shrink.NotFailing): nothing to shrink
//		}
//		b, _ := res.File(o.Scenario+" × "+myLock.Name, "")
//		os.WriteFile("testdata/"+o.Scenario+"-min.yaml", b, 0o644) // Battery{Scenarios: []string{that file}}
//	}
//
// The run's verdict is the class kept; a safe or inconclusive run is
// refused (shrink.NotFailing) before anything runs.
func Shrink(ctx context.Context, lock lockimpl.Info, o *scenarios.Outcome, opts shrink.Options) (*shrink.Result, error) {
	if o == nil || o.Spec == nil {
		return nil, errors.New("locktest: Shrink needs a run's outcome with its spec (one of a Report's Outcomes)")
	}
	if opts.Verdict == "" {
		opts.Verdict = o.Result.Verdict
	}
	if opts.History == 0 {
		opts.History = len(o.History)
	}
	info := lock
	return shrink.Shrink(ctx, o.Spec, scenarios.Config{Impl: o.Impl, Info: &info, Seed: o.Seed, Backend: o.Backend}, opts)
}

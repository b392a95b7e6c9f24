package locktest

import (
	"context"
	"log/slog"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// HuntOptions says where and how long Hunt searches.
type HuntOptions struct {
	// Scenarios are embedded names or YAML paths; empty: every embedded
	// scenario the backend can run against the lock.
	Scenarios []string
	// Backend is where the runs run (default sim: many seeds, virtual
	// time, the same history for the same seed).
	Backend string
	// Budget bounds the search (default one minute); the runs under way
	// when it ends are cut short and count for nothing.
	Budget time.Duration
	// Seed is the first seed (default 1); each round takes the next.
	Seed uint64
	// Parallel is how many runs at once (0: as Battery's).
	Parallel int
	// Log receives the runs' logs; nil discards them.
	Log *slog.Logger
}

// Hunt searches lock for a bug within a budget: a round of every scenario
// per seed, seed after seed, each round's explorers steered to the
// combinations (point × fault × client state × contender) the rounds
// before it did not cover, until a run shows what the lock's claims
// forbid (a verdict worse than they lead a scenario to expect, or a kind
// of finding they do not permit). The result's Found is that run (nil:
// nothing within the budget), with what the search covered; Shrink turns
// Found into a witness scenario.
//
//	res, err := locktest.Hunt(ctx, myLock, locktest.HuntOptions{Budget: 5 * time.Minute})
//	if err == nil && res.Found != nil {
//		w, _ := locktest.Shrink(ctx, myLock, res.Found, shrink.Options{Budget: time.Minute})
//		...
//	}
func Hunt(ctx context.Context, lock lockimpl.Info, o HuntOptions) (*scenarios.HuntResult, error) {
	if err := lock.Check(); err != nil {
		return nil, err
	}
	backend, err := cluster.Resolve(orDefault(o.Backend, cluster.Sim))
	if err != nil {
		return nil, err
	}
	names := o.Scenarios
	if len(names) == 0 {
		names = spec.Names()
	}
	var specs []*spec.Spec
	for _, n := range names {
		sp, err := load(n, lock)
		if err != nil {
			return nil, err
		}
		if unsupported(sp, lock, backend) == "" {
			specs = append(specs, sp)
		}
	}
	h := scenarios.Hunt{Budget: orDefault(o.Budget, time.Minute), FirstSeed: o.Seed, Parallel: max(o.Parallel, 0),
		Round: func(seed uint64, prior []string) []scenarios.Job {
			var jobs []scenarios.Job
			for _, sp := range specs {
				for _, impl := range runsOf(sp, lock.Name) {
					info := lock
					jobs = append(jobs, scenarios.Job{Spec: sp, Config: scenarios.Config{Impl: impl, Info: &info, Seed: seed,
						Backend: backend, Log: o.Log, Prior: prior}})
				}
			}
			return jobs
		}}
	return h.Run(ctx)
}

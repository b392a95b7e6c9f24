package scenarios

import (
	"context"
	"sort"
	"time"

	"github.com/lockstorm/lockstorm/internal/admission"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// Job is one scenario run: a spec and how to run it.
type Job struct {
	Spec   *spec.Spec
	Config Config
}

// RunMany runs jobs and returns their outcomes and errors in job order; each
// has its own servers, proxies and ports. parallel > 0 runs at most that
// many at a time; parallel ≤ 0 starts jobs while the suite's own CPU use
// leaves room (internal/admission). before, when set, is called as each job starts; after as
// it ends.
//
// Jobs start longest first (by expectedLength): a batch's wall time is at
// least its longest run, so a long run started last would run alone at the
// end while the others are done.
//
// Jobs in real time run first, and the sim backend's after them, never
// side by side: a sim run uses all the CPU it is given, and a run in real
// time beside it would be judged on a starved machine (the gate's Sentinel
// runs, mixed with sim runs, came out inconclusive on errors and an
// observer behind; apart, as expected).
func RunMany(ctx context.Context, jobs []Job, parallel int, before func(i int), after func(i int, o *Outcome, err error)) ([]*Outcome, []error) {
	var real, sim []int
	for i, j := range jobs {
		if j.Config.Backend == cluster.Sim {
			sim = append(sim, i)
		} else {
			real = append(real, i)
		}
	}
	if len(real) == 0 || len(sim) == 0 {
		return runMany(ctx, jobs, parallel, before, after)
	}
	outs := make([]*Outcome, len(jobs))
	errs := make([]error, len(jobs))
	for _, part := range [][]int{real, sim} {
		sub := make([]Job, len(part))
		for k, i := range part {
			sub[k] = jobs[i]
		}
		o, e := runMany(ctx, sub, parallel, func(k int) {
			if before != nil {
				before(part[k])
			}
		}, func(k int, out *Outcome, err error) {
			if after != nil {
				after(part[k], out, err)
			}
		})
		for k, i := range part {
			outs[i], errs[i] = o[k], e[k]
		}
	}
	return outs, errs
}

// runMany is RunMany on jobs of one kind (all in real time, or all sim).
func runMany(ctx context.Context, jobs []Job, parallel int, before func(i int), after func(i int, o *Outcome, err error)) ([]*Outcome, []error) {
	outs := make([]*Outcome, len(jobs))
	errs := make([]error, len(jobs))
	order := make([]int, len(jobs))
	lengths := make([]time.Duration, len(jobs))
	for i := range order {
		order[i] = i
		lengths[i] = expectedLength(jobs[i])
	}
	sort.SliceStable(order, func(a, b int) bool {
		return lengths[order[a]] > lengths[order[b]]
	})
	g := admission.New(parallel)
	defer g.Close()
	finished := make(chan struct{}, len(jobs))
	tick := time.NewTicker(admission.Every / 5)
	defer tick.Stop()
	running := 0
	for n, i := range order {
		for ctx.Err() == nil && !g.Admit(running) {
			select {
			case <-finished:
				running--
			case <-tick.C:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			for _, j := range order[n:] {
				errs[j] = ctx.Err()
			}
			break
		}
		running++
		go func() {
			defer func() { finished <- struct{}{} }()
			if before != nil {
				before(i)
			}
			outs[i], errs[i] = Run(ctx, jobs[i].Spec, jobs[i].Config)
			if after != nil {
				after(i, outs[i], errs[i])
			}
		}()
	}
	for ; running > 0; running-- {
		<-finished
	}
	return outs, errs
}

// sentinelStartUp is about what a Sentinel topology adds to a run before
// its traffic (replicas, three Sentinels up and linked), as seen in the
// suite's run phases: 0.2 s alone, up to 2 s on a loaded machine.
const sentinelStartUp = time.Second

// clusterStartUp is what a Redis Cluster adds: a master that has just
// started refuses writes (CLUSTERDOWN) for CLUSTER_WRITABLE_DELAY, 2 s
// from its start, a constant of Redis's source that no setting shortens;
// the nodes' meeting and the replicas' syncs fit inside it.
const clusterStartUp = 2 * time.Second

// expectedLength is a job's expected wall time, for ordering only: its
// plan's duration (a lock with whole-second expiry runs the scenario
// stretched: lua-getset's 5 s spec runs 15 s), plus the Sentinel or
// Cluster topology's start-up; the spec's duration when it does not compile (the
// run will say why).
func expectedLength(j Job) time.Duration {
	d := j.Spec.Duration
	if p, err := Compile(j.Spec, j.Config); err == nil {
		d = p.Duration
	}
	if j.Spec.Sentinel != nil {
		d += sentinelStartUp
	}
	if j.Spec.Cluster != nil {
		d += clusterStartUp
	}
	return d
}

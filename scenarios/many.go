package scenarios

import (
	"context"
	"sync"
)

// Job is one scenario run: a spec and how to run it.
type Job struct {
	Spec   *Spec
	Config Config
}

// RunMany runs jobs, at most parallel at a time (each has its own servers,
// proxies and ports), and returns their outcomes and errors in job order.
// before, when set, is called as each job starts; after as it ends.
func RunMany(ctx context.Context, jobs []Job, parallel int, before func(i int), after func(i int, o *Outcome, err error)) ([]*Outcome, []error) {
	outs := make([]*Outcome, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			if before != nil {
				before(i)
			}
			outs[i], errs[i] = Run(ctx, j.Spec, j.Config)
			if after != nil {
				after(i, outs[i], errs[i])
			}
		}()
	}
	wg.Wait()
	return outs, errs
}

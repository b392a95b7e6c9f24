package scenarios

import (
	"context"
	"testing"
	"time"
)

// BatchForTest runs the jobs that parallel subtests register at once,
// through RunMany's admission gate and longest first, as make gate's runs
// go: with a parallel subtest per run, -parallel (GOMAXPROCS, 2 on two
// cores) would hold them to two at a time while each mostly waits on its
// timers. Only the subtests -run selects register, so only they run.
//
// The parent defers Start before its first t.Run; each subtest calls Add,
// then Wait.
type BatchForTest struct {
	jobs []Job
	outs []*Outcome
	errs []error
	done chan struct{}
}

// NewBatchForTest is an empty batch.
func NewBatchForTest() *BatchForTest { return &BatchForTest{done: make(chan struct{})} }

// Add registers job and returns its index for Wait. A subtest calls it
// before Wait, while its parent's loop is blocked on it.
func (b *BatchForTest) Add(job Job) int {
	b.jobs = append(b.jobs, job)
	return len(b.jobs) - 1
}

// Start runs the registered jobs in the background, within timeout.
// Deferred by the parent, it runs once every selected subtest has
// registered and paused in Wait's t.Parallel, a t.Fatal of the parent's
// included (or those subtests would wait for ever).
func (b *BatchForTest) Start(timeout time.Duration) {
	go func() {
		defer close(b.done)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		b.outs, b.errs = RunMany(ctx, b.jobs, 0, nil, nil)
	}()
}

// Wait marks t parallel, which lets the parent go on registering, and
// returns job i's outcome once the batch is done; the run's error fails t.
func (b *BatchForTest) Wait(t *testing.T, i int) *Outcome {
	t.Helper()
	t.Parallel()
	<-b.done
	if b.errs[i] != nil {
		t.Fatal(b.errs[i])
	}
	return b.outs[i]
}

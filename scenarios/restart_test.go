package scenarios

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// dyingLocker is set-nx-px run as lockimpl/exec runs a client process: its
// first acquire dies mid-request (an unknown outcome), and the process is
// started again on the next call, Ready or a request, whichever comes
// first, taking startup to load its runtime.
type dyingLocker struct {
	lockimpl.Locker
	startup time.Duration
	mu      sync.Mutex
	calls   int
	dead    bool
}

func (d *dyingLocker) respawn() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		time.Sleep(d.startup)
		d.dead = false
	}
}

func (d *dyingLocker) Ready(context.Context) error { d.respawn(); return nil }

func (d *dyingLocker) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	d.respawn()
	d.mu.Lock()
	d.calls++
	first := d.calls == 1
	d.dead = first
	d.mu.Unlock()
	if first {
		return nil, errors.New("client process died (outcome unknown)")
	}
	return d.Locker.Acquire(ctx, key)
}

// TestRestartOutsideAcquire: a client process that died is started again
// before the next acquire is recorded, not inside it, and its start-up is
// recorded as that client's lag. The start-up is the harness's time, not
// a wait for the lock: counted as one, a key free all along reads as
// starved, and a run whose other clients had stopped asking comes out
// deadlock while the only clients wanting the key are starting.
func TestRestartOutsideAcquire(t *testing.T) {
	cluster.StartForTest(t, 1)
	const startup = 1200 * time.Millisecond
	sp, err := spec.Parse("restart.yaml", []byte(`name: restart
clients: 1
keys: 1
duration: 2s
deadlock_bound: 500ms
lock: {ttl: 200ms, retry_delay: 5ms, wait_timeout: 500ms}
workload: {cs_min: 1ms, cs_max: 2ms}
impls: [set-nx-px]
`))
	if err != nil {
		t.Fatal(err)
	}
	info := wrapSetNXPX(t, "dying", func(_ lockimpl.Env, l lockimpl.Locker) lockimpl.Locker {
		return &dyingLocker{Locker: l, startup: startup}
	})
	out, err := Run(context.Background(), sp, Config{Info: &info, Backend: cluster.RedisServer})
	if err != nil {
		t.Fatal(err)
	}
	// The key was free all along: safe, or inconclusive by the harness's
	// own lag when the start-up outlasts the deadlock bound (a run the
	// zoo's rejudging runs again), never deadlock.
	switch r := out.Result; {
	case r.Verdict == checker.Inconclusive && r.ByHarness && r.ClientLagMaxMs >= float64(startup.Milliseconds()):
	case r.Verdict != checker.Safe:
		t.Errorf("verdict %s (by the harness: %v, client lag %.0f ms), want safe or inconclusive by the start-up's lag: %s",
			r.Verdict, r.ByHarness, r.ClientLagMaxMs, r.Reason)
	}
	t.Logf("%s: %s; phases %+v", out.Result.Verdict, out.Result.Reason, out.Phases)
	invoked := map[int]int64{}
	acquires := 0
	for _, op := range out.History {
		if op.F != history.FAcquire {
			continue
		}
		if op.Type == history.Invoke {
			invoked[op.Process] = op.Time
			continue
		}
		acquires++
		if d := time.Duration(op.Time - invoked[op.Process]); d >= startup {
			t.Errorf("acquire %d (%s) took %v: the restart's %v start-up was recorded as a wait for the lock", op.Index, op.Type, d, startup)
		}
	}
	if acquires < 2 {
		t.Errorf("%d acquires: the client never came back after its death", acquires)
	}
}

package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	lockexec "github.com/lockstorm/lockstorm/lockimpl/exec"
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

// diesOnce is a client program (examples/clients/PROTOCOL.md) that takes
// argv[2] seconds to start, as a runtime loading does, and exits on its
// client's first acquire (marked in the folder argv[1]), as a library that
// dies of an unhandled error does; after that, SET NX PX with a
// compare-and-delete release.
const diesOnce = `import os, sys, time
sys.path.append('/usr/lib/python3/dist-packages')
import redis
time.sleep(float(sys.argv[2]))
node = os.environ.get('LOCKSTORM_NODES', '').split(',')[0]
r = redis.Redis(host=node.rsplit(':', 1)[0], port=int(node.rsplit(':', 1)[1])) if node else None
ttl = int(os.environ.get('LOCKSTORM_TTL_MS') or 1000)
wait = int(os.environ.get('LOCKSTORM_WAIT_TIMEOUT_MS') or 1000) / 1000.0
delay = int(os.environ.get('LOCKSTORM_RETRY_DELAY_MS') or 5) / 1000.0
unlock = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
n = 0
for line in sys.stdin:
    f = line.split()
    if f[0] == 'hello':
        print('hello 1 name=dies-once topology=single expiry=server release=owner-checked', flush=True)
    elif f[0] == 'acquire':
        mark = os.path.join(sys.argv[1], os.environ['LOCKSTORM_CLIENT'])
        if not os.path.exists(mark):
            open(mark, 'w').close()
            os._exit(1)
        n += 1
        token, end = '%d-%d' % (os.getpid(), n), time.monotonic() + wait
        while not r.set(f[1], token, nx=True, px=ttl) and time.monotonic() < end:
            time.sleep(delay)
        print('ok ' + token if r.get(f[1]) == token.encode() else 'fail held', flush=True)
    elif f[0] == 'release':
        print('ok' if r.eval(unlock, 1, f[1], f[2]) == 1 else 'fail not ours', flush=True)
`

// TestRestartOutsideAcquire: a client process that died is started again
// before the next acquire is recorded, not inside it, and its start-up is
// recorded as that client's lag. The start-up is the harness's time, not
// a wait for the lock: counted as one, a key free all along reads as
// starved, and a run whose other clients had stopped asking comes out
// deadlock while the only clients wanting the key are starting. Both a Go
// Locker that restarts as lockimpl/exec does and a real client process.
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
	cases := []struct {
		name string
		lock func(t *testing.T) lockimpl.Info
	}{
		{"go", func(t *testing.T) lockimpl.Info {
			return wrapSetNXPX(t, "dying", func(_ lockimpl.Env, l lockimpl.Locker) lockimpl.Locker {
				return &dyingLocker{Locker: l, startup: startup}
			})
		}},
		{"process", func(t *testing.T) lockimpl.Info {
			needPythonRedis(t)
			dir := t.TempDir()
			prog := filepath.Join(dir, "dies_once.py")
			if err := os.WriteFile(prog, []byte(diesOnce), 0o644); err != nil {
				t.Fatal(err)
			}
			info, err := lockexec.Describe(context.Background(), []string{"/usr/bin/python3", prog, dir, fmt.Sprint(startup.Seconds())})
			if err != nil {
				t.Fatal(err)
			}
			return info
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info := tc.lock(t)
			// Rejudge -1: the first run is the one whose client dies (a
			// rejudged run of a program would find its mark and not die).
			out, err := Run(context.Background(), sp, Config{Info: &info, Backend: cluster.RedisServer, Rejudge: -1})
			if err != nil {
				t.Fatal(err)
			}
			restarted(t, out, startup)
		})
	}
}

// restarted checks a run whose one client died on its first acquire and
// took startup to come back. The key was free all along: safe, or
// inconclusive by the harness's own lag when the start-up outlasts the
// deadlock bound (a run the zoo's rejudging runs again), never deadlock;
// and no acquire lasted the start-up.
func restarted(t *testing.T, out *Outcome, startup time.Duration) {
	t.Helper()
	r := out.Result
	t.Logf("%s: %s; processes %+v", r.Verdict, r.Reason, out.Processes)
	switch {
	case r.Verdict == checker.Inconclusive && r.ByHarness && r.ClientLagMaxMs >= float64(startup.Milliseconds()):
	case r.Verdict != checker.Safe:
		t.Errorf("verdict %s (by the harness: %v, client lag %.0f ms), want safe or inconclusive by the start-up's lag: %s",
			r.Verdict, r.ByHarness, r.ClientLagMaxMs, r.Reason)
	}
	invoked := map[int]int64{}
	died, back := false, false
	for _, op := range out.History {
		if op.F != history.FAcquire {
			continue
		}
		switch op.Type {
		case history.Invoke:
			invoked[op.Process] = op.Time
			continue
		case history.Info:
			died = true
		case history.Ok:
			back = back || died
		}
		if d := time.Duration(op.Time - invoked[op.Process]); d >= startup {
			t.Errorf("acquire %d (%s) took %v: the restart's %v start-up was recorded as a wait for the lock", op.Index, op.Type, d, startup)
		}
	}
	if !back {
		t.Errorf("no acquire died and was followed by a grant (died: %v): the run did not restart a client", died)
	}
}

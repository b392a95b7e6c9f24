package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	lockexec "github.com/lockstorm/lockstorm/lockimpl/exec"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// pingsAtHello is a client program (examples/clients/PROTOCOL.md) whose
// library sends a command of its own set-up before its hello is answered,
// as ioredis sends INFO on every connection it opens: a PING on its node,
// then the hello; after that SET NX PX with a compare-and-delete release,
// and never a PING again.
const pingsAtHello = `import os, sys
sys.path.append('/usr/lib/python3/dist-packages')
import redis
node = os.environ.get('LOCKSTORM_NODES', '').split(',')[0]
r = redis.Redis(host=node.rsplit(':', 1)[0], port=int(node.rsplit(':', 1)[1])) if node else None
ttl = int(os.environ.get('LOCKSTORM_TTL_MS') or 1000)
unlock = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
n = 0
for line in sys.stdin:
    f = line.split()
    if f[0] == 'hello':
        if r:
            r.ping()
        print('hello 1 name=pings-at-hello topology=single expiry=server release=owner-checked', flush=True)
    elif f[0] == 'acquire':
        n += 1
        token = '%d-%d' % (os.getpid(), n)
        print('ok ' + token if r.set(f[1], token, nx=True, px=ttl) else 'fail held', flush=True)
    elif f[0] == 'release':
        print('ok' if r.eval(unlock, 1, f[1], f[2]) == 1 else 'fail not ours', flush=True)
`

// pingsAtReady is set-nx-px whose first Ready sends a PING of its own
// set-up on its node and goes on whatever the PING met, as a library that
// connects in the background does.
type pingsAtReady struct {
	lockimpl.Locker
	node redis.UniversalClient
	once sync.Once
}

func (p *pingsAtReady) Ready(ctx context.Context) error {
	p.once.Do(func() { _ = p.node.Ping(ctx).Err() })
	return nil
}

// TestNoFaultBeforeTheClock: a client's command sent while the run is set
// up (after its points are armed, before the clock starts) passes its
// command points untouched. A crash there used to kill the client before
// its run began: a client process died inside its hello and the run ended
// in an error ("client process killed", the npm zoo's five-node locks on
// explore-crash), and a client that went on crashed in silence, its crash
// recorded in no history and its place in the run empty (half the clients
// of every explore-crash run of an ioredis client). A fault named by a
// failpoint and one drawn by the explorer, on a client process and on a Go
// lock: the run ends without error, every client asks for the lock, and
// no crash is recorded (the lock never sends the command in the run). And
// a crash in the run, at a command point or by a crash fault, is the
// recorded crash of its client, not a run error at its next Ready.
func TestNoFaultBeforeTheClock(t *testing.T) {
	cluster.StartForTest(t, 1)
	faults := []struct {
		name, yaml string
		crashed    []int // the clients whose crash the history must record
	}{
		{"failpoint", `failpoints:
  - {client: -1, point: cmd/*/PING/before, crash: true}`, nil},
		{"explore", `explore: {actions: [crash], rate: 1, points: ["cmd/*/PING/*"]}`, nil},
		// In the run, a crash stays a recorded crash: never a run error at
		// the next Ready (the runner's readyAgain before each acquire).
		{"in-run-failpoint", `failpoints:
  - {client: 0, point: cmd/*/SET/before, times: 1, crash: true}`, []int{0}},
		{"in-run-fault", `faults:
  - {at: 300ms, kind: crash, clients: [1]}`, []int{1}},
	}
	locks := []struct {
		name string
		lock func(t *testing.T) lockimpl.Info
	}{
		{"process", func(t *testing.T) lockimpl.Info {
			needPythonRedis(t)
			prog := filepath.Join(t.TempDir(), "pings_at_hello.py")
			if err := os.WriteFile(prog, []byte(pingsAtHello), 0o644); err != nil {
				t.Fatal(err)
			}
			info, err := lockexec.Describe(context.Background(), []string{"/usr/bin/python3", prog})
			if err != nil {
				t.Fatal(err)
			}
			return info
		}},
		{"go", func(t *testing.T) lockimpl.Info {
			return wrapSetNXPX(t, "pings-at-ready", func(env lockimpl.Env, l lockimpl.Locker) lockimpl.Locker {
				return &pingsAtReady{Locker: l, node: env.Nodes[0]}
			})
		}},
	}
	for _, f := range faults {
		for _, l := range locks {
			t.Run(f.name+"/"+l.name, func(t *testing.T) {
				info := l.lock(t)
				sp, err := spec.Parse("prestart.yaml", []byte(fmt.Sprintf(`name: prestart
mode: random
clients: 2
keys: 1
duration: 1s
lock: {ttl: 200ms, retry_delay: 5ms, wait_timeout: 500ms}
workload: {cs_min: 1ms, cs_max: 2ms}
%s
impls: [set-nx-px]
`, f.yaml)))
				if err != nil {
					t.Fatal(err)
				}
				out, err := Run(context.Background(), sp, Config{Info: &info, Backend: cluster.RedisServer, Rejudge: -1})
				if err != nil {
					t.Fatalf("run error: %v", err)
				}
				asked, crashed := map[int]bool{}, []int{}
				for _, op := range out.History {
					switch {
					case op.F == history.FCrash:
						crashed = append(crashed, op.Client)
					case op.F == history.FAcquire && op.Type == history.Invoke:
						asked[op.Client] = true
					}
				}
				if !slices.Equal(crashed, f.crashed) {
					t.Errorf("crashes recorded of clients %v, want %v", crashed, f.crashed)
				}
				for c := range sp.Clients {
					if !asked[c] {
						t.Errorf("client %d never asked for the lock: it died before the run began", c)
					}
				}
			})
		}
	}
}

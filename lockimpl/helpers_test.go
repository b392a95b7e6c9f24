package lockimpl_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/redis/go-redis/v9"
)

// quiet drops go-redis's own log lines (dial retries to stopped servers).
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quiet{}) }

// rig is one test's Redis servers and failpoint hub.
type rig struct {
	t   *testing.T
	s   *cluster.Servers
	hub *lockimpl.Hub
	// dialOnce makes a refused connection fail at once instead of after
	// go-redis's five dial attempts, so it is seen as "never sent".
	dialOnce bool
}

// newRig starts n redis-server processes for t. Its hub is armed and
// reports every failpoint hit to seenPoints, so TestMain can check that the
// points the implementations declare are exactly those they hit.
func newRig(t *testing.T, n int) *rig {
	t.Helper()
	hub := lockimpl.NewHub()
	hub.OnHit = func(_ int, point string, _ []int) {
		seenMu.Lock()
		seenPoints[point] = true
		seenMu.Unlock()
	}
	hub.Arm()
	return &rig{t: t, s: cluster.StartForTest(t, n), hub: hub}
}

// conn is a fresh client to node i, closed when the test ends.
func (r *rig) conn(i int) *redis.Client {
	o := &redis.Options{Addr: r.s.Nodes()[i].Addr, MaxRetries: -1}
	if r.dialOnce {
		o.DialerRetries = 1
	}
	c := redis.NewClient(o)
	r.t.Cleanup(func() { c.Close() })
	return c
}

// env is client's environment: its own connections to every node, a true
// clock, its failpoints on the shared hub, a seeded random source.
func (r *rig) env(client int) lockimpl.Env {
	var nodes []redis.UniversalClient
	for i := range r.s.Nodes() {
		nodes = append(nodes, r.conn(i))
	}
	return lockimpl.Env{
		Client: client,
		Nodes:  nodes,
		Clock:  lockimpl.NewSkewClock(0),
		FP:     lockimpl.NewFailpoints(r.hub, client),
		Rand:   rand.New(rand.NewPCG(42, uint64(client))),
	}
}

// locker builds client's Locker for the named implementation.
func (r *rig) locker(client int, name string, o lockimpl.Options) (lockimpl.Locker, lockimpl.Env) {
	r.t.Helper()
	env := r.env(client)
	return r.lockerWith(env, name, o), env
}

// lockerWith builds a Locker on a given environment.
func (r *rig) lockerWith(env lockimpl.Env, name string, o lockimpl.Options) lockimpl.Locker {
	r.t.Helper()
	info, err := lockimpl.Lookup(name)
	if err != nil {
		r.t.Fatal(err)
	}
	l, err := info.New(env, o)
	if err != nil {
		r.t.Fatalf("%s: New: %v", name, err)
	}
	if c, ok := l.(interface{ Close() error }); ok {
		r.t.Cleanup(func() { c.Close() })
	}
	return l
}

// pauser is a client sleeper that can be stopped the world, as a GC pause
// or SIGSTOP would: sleeps that end while paused block until resumed.
type pauser struct {
	mu   sync.Mutex
	gate chan struct{} // non-nil while paused
}

func (p *pauser) pause() {
	p.mu.Lock()
	p.gate = make(chan struct{})
	p.mu.Unlock()
}

func (p *pauser) resume() {
	p.mu.Lock()
	close(p.gate)
	p.gate = nil
	p.mu.Unlock()
}

func (p *pauser) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	p.mu.Lock()
	g := p.gate
	p.mu.Unlock()
	if g != nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-g:
		}
	}
	return nil
}

// ctx is a context bounded so a broken barrier fails the test, not hangs it.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustAcquire acquires or fails the test.
func mustAcquire(t *testing.T, ctx context.Context, l lockimpl.Locker, key string) *lockimpl.Lease {
	t.Helper()
	lease, err := l.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("acquire %s: %v", key, err)
	}
	return lease
}

package exec

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// NeedRuntime checks that a client runtime is installed (the program, and
// what probe prints when run with args). Without it the test is skipped,
// except under CI=true, where a missing runtime is a failure: make test
// installs them.
func needRuntime(t *testing.T, prog string, args ...string) {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("CI") == "true" {
		fail = t.Fatalf
	}
	if _, err := exec.LookPath(prog); err != nil {
		fail("%s is not installed (make test installs the client runtimes): %v", prog, err)
		return
	}
	if len(args) > 0 {
		if out, err := exec.Command(prog, args...).CombinedOutput(); err != nil {
			fail("%s %v: %v: %s (make test installs the client runtimes)", prog, args, err, out)
		}
	}
}

// redisEnv is a client environment on a real redis-server the test started.
func redisEnv(t *testing.T, clock lockimpl.Clock) (lockimpl.Env, *redis.Client) {
	s := cluster.StartForTest(t, 1)
	rdb := redis.NewClient(&redis.Options{Addr: s.Nodes()[0].Addr})
	t.Cleanup(func() { rdb.Close() })
	if clock == nil {
		clock = lockimpl.NewSkewClock(0)
	}
	return lockimpl.Env{Client: 0, Nodes: []redis.UniversalClient{rdb}, Clock: clock, Rand: rand.New(rand.NewPCG(1, 2))}, rdb
}

func newLocker(t *testing.T, env lockimpl.Env, o lockimpl.Options, argv ...string) *Locker {
	t.Helper()
	l, err := New(env, o, argv, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := l.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l
}

func testdata(name string) string {
	p, _ := filepath.Abs(filepath.Join("testdata", name))
	return p
}

func example(name string) string {
	p, _ := filepath.Abs(filepath.Join("..", "..", "examples", "clients", name))
	return p
}

// A paused client is a stopped process: /proc says T, and its renewal
// thread stops with it, so its lock expires; after SIGCONT it runs again.
func TestPauseStopsProcess(t *testing.T) {
	needRuntime(t, "/usr/bin/python3", "-c", "import redis")
	env, rdb := redisEnv(t, nil)
	ttl := 600 * time.Millisecond
	l := newLocker(t, env, lockimpl.Options{TTL: ttl}, "/usr/bin/python3", testdata("renew.py"))
	ctx := context.Background()
	if _, err := l.Acquire(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	// Renewal works while it runs: the key outlives two TTLs.
	time.Sleep(2 * ttl)
	if n, _ := rdb.Exists(ctx, "k").Result(); n != 1 {
		t.Fatal("the renewal thread did not keep the key alive")
	}
	pid := l.PID()
	if err := l.Stop(); err != nil {
		t.Fatal(err)
	}
	// SIGSTOP is delivered asynchronously: the state turns T within moments.
	st, err := stateOf(pid)
	for end := time.Now().Add(time.Second); st != "T" && err == nil && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		st, err = stateOf(pid)
	}
	if st != "T" {
		t.Fatalf("paused client process %d: state %q (%v), want T (stopped)", pid, st, err)
	}
	// Stopped, nothing renews: the key expires on the server's clock.
	deadline := time.Now().Add(3 * ttl)
	for rdb.Exists(ctx, "k").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatal("the key outlived a stopped client's TTL: renewal kept running")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := l.Cont(); err != nil {
		t.Fatal(err)
	}
	if st, _ := stateOf(pid); st == "T" {
		t.Fatalf("client process %d still stopped after Cont", pid)
	}
	if _, err := l.Acquire(ctx, "k"); err != nil {
		t.Fatalf("the resumed client does not serve: %v", err)
	}
}

// A crashed client is gone, and the lock it held stays held until its TTL.
func TestCrashLeavesLockUntilTTL(t *testing.T) {
	needRuntime(t, "/usr/bin/python3", "-c", "import redis")
	env, rdb := redisEnv(t, nil)
	ttl := 800 * time.Millisecond
	l := newLocker(t, env, lockimpl.Options{TTL: ttl}, "/usr/bin/python3", example("redis_py_lock.py"))
	ctx := context.Background()
	lease, err := l.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	pid := l.PID()
	start := time.Now()
	if err := l.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Fatalf("crashed client process %d still exists", pid)
	}
	if v := rdb.Get(ctx, "k").Val(); v != lease.Token {
		t.Fatalf("right after the crash the key holds %q, want the crashed client's token %q", v, lease.Token)
	}
	for rdb.Exists(ctx, "k").Val() == 1 {
		time.Sleep(10 * time.Millisecond)
	}
	if held := time.Since(start); held < ttl-100*time.Millisecond {
		t.Fatalf("the crashed client's lock went after %v, before its TTL %v", held, ttl)
	}
	if _, err := l.Acquire(ctx, "k"); err == nil {
		t.Fatal("a crashed client served again")
	}
}

// The client's runtime reads the skewed clock: an offset from the start, a
// jump later, in each runtime the shipped clients use.
func TestClientClock(t *testing.T) {
	for _, tc := range []struct {
		name string
		argv []string
		tol  time.Duration
	}{
		{"python time.time", []string{"python3", testdata("clock.py")}, 300 * time.Millisecond},
		{"php time", []string{"php", testdata("clock.php")}, 1300 * time.Millisecond},
		{"node Date.now", []string{"node", testdata("clock.js")}, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			needRuntime(t, tc.argv[0], "--version")
			clock := lockimpl.NewSkewClock(time.Hour)
			env := testEnv(t, nil)
			env.Clock = clock
			l := newLocker(t, env, lockimpl.Options{}, tc.argv...)
			read := func() time.Duration {
				lease, err := l.Acquire(context.Background(), "k")
				if err != nil {
					t.Fatal(err)
				}
				ms, err := strconv.ParseInt(lease.Token, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return time.UnixMilli(ms).Sub(time.Now())
			}
			if off := read(); off < time.Hour-tc.tol || off > time.Hour+tc.tol {
				t.Fatalf("client reads an offset of %v, want 1h", off)
			}
			clock.Jump(-3 * time.Hour)
			l.SyncClock()
			if off := read(); off < -2*time.Hour-tc.tol || off > -2*time.Hour+tc.tol {
				t.Fatalf("after a jump of -3h the client reads an offset of %v, want -2h", off)
			}
		})
	}
}

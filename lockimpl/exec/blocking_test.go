package exec

import (
	"context"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// TestPythonBlockingLock: a Python lock that waits on the server (BLPOP)
// longer than a second gets its grant only when it connects with
// blocking=True; with the helper's default socket timeout (1 s, how a
// lock learns a reply was lost) the wait ends as a lost reply.
func TestPythonBlockingLock(t *testing.T) {
	needRuntime(t, "/usr/bin/python3", "-c", "import redis")
	for _, tc := range []struct {
		blocking string
		granted  bool
	}{{"1", true}, {"0", false}} {
		t.Run("blocking="+tc.blocking, func(t *testing.T) {
			t.Setenv("LOCKSTORM_TEST_BLOCKING", tc.blocking)
			env, rdb := redisEnv(t, nil)
			l := newLocker(t, env, lockimpl.Options{WaitTimeout: 3 * time.Second}, "/usr/bin/python3", testdata("blpop_lock.py"))
			grant := time.AfterFunc(1500*time.Millisecond, func() { rdb.RPush(context.Background(), "q:k", "tok-1") })
			defer grant.Stop()
			lease, err := l.Acquire(context.Background(), "k")
			if got := err == nil && lease.Token == "tok-1"; got != tc.granted {
				t.Fatalf("granted %v (%v), want %v", got, err, tc.granted)
			}
		})
	}
}

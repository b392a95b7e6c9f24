package zoo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// locker is the adapter's lock on one miniredis node.
func locker(t *testing.T, o lockimpl.Options) (*miniredis.Miniredis, lockimpl.Locker) {
	t.Helper()
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	env := lockimpl.Env{Nodes: []redis.UniversalClient{c}, Clock: lockimpl.NewSkewClock(0)}
	l, err := release.Info().New(env, o)
	if err != nil {
		t.Fatal(err)
	}
	return m, l
}

// TestZooAdapter tests the adapter's judgements (make zoo-ci runs it).
func TestZooAdapter(t *testing.T) {
	t.Run("error-reply-is-no", errorReplyIsNo)
	t.Run("validity-from-the-winning-try", validityFromTheWinningTry)
}

// errorReplyIsNo: an error reply to Obtain (the server refused the
// command: CLUSTERDOWN in cluster-minority-partition-random) is a
// definite no, not an unknown outcome.
func errorReplyIsNo(t *testing.T) {
	m, l := locker(t, lockimpl.Options{TTL: time.Second, WaitTimeout: 100 * time.Millisecond, RetryDelay: 10 * time.Millisecond})
	m.SetError("CLUSTERDOWN The cluster is down")
	_, err := l.Acquire(context.Background(), "k")
	if !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("acquire on an error reply: %v, want ErrNotAcquired", err)
	}
}

// validityFromTheWinningTry: a lease won after waiting is dated from
// the try that won, less the 1 % drift: its validity is at most the TTL
// less the drift, and more than the TTL less the drift less the time the
// acquire took after that try.
func validityFromTheWinningTry(t *testing.T) {
	ttl := time.Second
	m, l := locker(t, lockimpl.Options{TTL: ttl, WaitTimeout: 2 * time.Second, RetryDelay: 10 * time.Millisecond})
	if err := m.Set("k", "someone else's"); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, func() { m.Del("k") })
	start := time.Now()
	lease, err := l.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	most := ttl - ttl/100
	if lease.Validity > most || lease.Validity < most-took+80*time.Millisecond {
		t.Fatalf("validity %v after an acquire of %v (the key freed at 100 ms): want at most %v, dated from the winning try", lease.Validity, took, most)
	}
}

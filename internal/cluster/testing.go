package cluster

import (
	"context"
	"errors"
	"github.com/lockstorm/lockstorm/internal/clock"
	"os"
	"testing"
)

// StartForTest starts n real redis-server processes for a test and stops them
// when it ends. Without redis-server the test is skipped, except under CI=true
// where a missing server is a failure: CI must not go green by skipping.
func StartForTest(t testing.TB, n int) *Servers {
	t.Helper()
	return StartForTestWith(t, Options{Nodes: n})
}

// StartForTestWith is StartForTest with full options, e.g. ServerClock for
// tests of server clock faults. A missing gcc (needed to build the clock
// shim) is treated like a missing redis-server: skip, or fail under CI=true.
func StartForTestWith(t testing.TB, o Options) *Servers {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	if _, err := ServerBinary(o.Server); err != nil {
		if ci {
			t.Fatalf("redis-server is required under CI=true: %v", err)
		}
		t.Skip("redis-server not installed (make test installs it)")
	}
	s, err := StartRedisServers(context.Background(), o)
	if errors.Is(err, clock.ErrNoGCC) && !ci {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// RequireRedisServer skips a test that starts its own servers (through a
// scenario run) when redis-server is missing, except under CI=true where
// that is a failure.
func RequireRedisServer(t testing.TB) {
	t.Helper()
	if _, err := ServerBinary(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is required under CI=true: %v", err)
		}
		t.Skip("redis-server not installed (make test installs it)")
	}
}

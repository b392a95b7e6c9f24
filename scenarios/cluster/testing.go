package cluster

import (
	"context"
	"os"
	"os/exec"
	"testing"
)

// StartForTest starts n real redis-server processes for a test and stops them
// when it ends. Without redis-server the test is skipped, except under CI=true
// where a missing server is a failure: CI must not go green by skipping.
func StartForTest(t testing.TB, n int) *Servers {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is required under CI=true: %v", err)
		}
		t.Skip("redis-server not installed (make test installs it)")
	}
	s, err := StartRedisServers(context.Background(), Options{Nodes: n})
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

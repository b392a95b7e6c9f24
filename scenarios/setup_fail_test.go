package scenarios_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestSetupFailureClosesCleanly makes each start-up stage fail in turn
// (issue 17: a Sentinel set-up that failed once panicked in Close and lost
// its error): the run returns the stage's error, wrapped, and leaves no
// server or Sentinel process behind.
func TestSetupFailureClosesCleanly(t *testing.T) {
	cluster.RequireRedisServer(t)
	injected := errors.New("injected set-up failure")
	for _, tc := range []struct {
		scenario string
		stages   []string
	}{
		{"failover", []string{"backend", "servers", "replicas"}},
		{"sentinel-kill", []string{"backend", "servers", "replicas", "sentinels", "subscribe", "ready"}},
	} {
		spec, err := spec.Load(tc.scenario)
		if err != nil {
			t.Fatal(err)
		}
		for _, stage := range tc.stages {
			t.Run(tc.scenario+"/"+stage, func(t *testing.T) {
				scenarios.SetSetupFaultForTest(func(s string) error {
					if s == stage {
						return injected
					}
					return nil
				})
				defer scenarios.SetSetupFaultForTest(nil)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				out, err := scenarios.Run(ctx, spec, scenarios.Config{Impl: "set-nx-px", Backend: cluster.RedisServer})
				if !errors.Is(err, injected) || !strings.Contains(err.Error(), stage+": ") {
					t.Fatalf("outcome %v, error %v; want the %s stage's error", out, err, stage)
				}
				if left := redisChildren(t); len(left) > 0 {
					t.Errorf("processes left after a failed %s stage: %v", stage, left)
				}
			})
		}
	}
}

// redisChildren lists this process's child processes that are Redis
// servers or Sentinels.
func redisChildren(t *testing.T) []string {
	t.Helper()
	me := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		comm := s[strings.IndexByte(s, '(')+1 : i]
		if len(fields) > 1 && fields[1] == me && strings.Contains(comm, "redis") {
			out = append(out, strings.Fields(s)[0]+" "+comm)
		}
	}
	return out
}

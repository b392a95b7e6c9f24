package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// A run that cannot run (its set-up fails: here the first redis-server
// start is refused by a wrapper) is reported after the others' verdicts,
// which are still printed, and the exit is 2: one failed set-up on a loaded
// machine must not swallow a suite's table.
func TestSetupFailureKeepsOtherVerdicts(t *testing.T) {
	cluster.RequireRedisServer(t)
	real, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "redis-server-once-refused")
	script := "#!/bin/sh\nif [ ! -e " + filepath.Join(dir, "refused") + " ]; then touch " + filepath.Join(dir, "refused") +
		"; echo 'refused once' >&2; exit 1; fi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(cluster.ServerEnv, wrapper)
	spec := filepath.Join(dir, "short.yaml")
	os.WriteFile(spec, []byte(shortSpec), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	printed := captureStdout(t, func() {
		err = run(ctx, []string{"run", "--scenario", spec, "--backend", "redis-server", "--seeds", "2", "--parallel", "1",
			"--keep", "none", "--out", filepath.Join(dir, "out")})
	})
	if !strings.Contains(printed, "short-out") || !strings.Contains(printed, "summary: 1 runs") {
		t.Errorf("the run that ran is not in the table:\n%s", printed)
	}
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "1 of 2 runs could not run") {
		t.Errorf("err = %v; want exit 2 naming the run that could not run", err)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// TestHarnessStallMakesDeadlockInconclusive stops the lockstorm process
// itself (SIGSTOP, SIGCONT from outside) for 3 s in the middle of a run
// whose lock deadlocks by design (crash-before-expire × setnx-expire: a
// 3.3 s starvation against a 1.5 s bound). The run measures its own stall,
// and the starvation net of it is within the bound: inconclusive, with the
// reason. The same run left alone stays a deadlock.
func TestHarnessStallMakesDeadlockInconclusive(t *testing.T) {
	cluster.StartForTest(t, 1) // a CI failure without redis-server, a skip elsewhere
	bin := buildBinary(t)
	run := func(stop bool) map[string]any {
		// --rejudge 0: the stalled run is judged as it is, not run again.
		cmd := exec.Command(bin, "run", "--scenario", "crash-before-expire", "--impl", "setnx-expire",
			"--backend", "redis-server", "--format", "json", "--keep", "none", "--rejudge", "0")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if stop {
			// Set-up (one redis-server) takes well under a second; the
			// starvation runs from the start of the traffic to its end.
			time.Sleep(time.Second)
			cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(3 * time.Second)
			cmd.Process.Signal(syscall.SIGCONT)
		}
		cmd.Wait()
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(line, "{") {
				var row map[string]any
				if err := json.Unmarshal([]byte(line), &row); err != nil {
					t.Fatal(err)
				}
				return row
			}
		}
		t.Fatalf("no JSON row; stderr: %s", errb.String())
		return nil
	}
	calm := run(false)
	if calm["verdict"] != "deadlock" {
		t.Errorf("without a stall: verdict %v (%v)", calm["verdict"], calm["reason"])
	}
	stalled := run(true)
	reason, _ := stalled["reason"].(string)
	maxStall, _ := stalled["harness_stall_max_ms"].(float64)
	// Inconclusive either way the stall falls: in the starvation ("harness
	// stalled ... within the bound"), or across an in-flight SETNX whose
	// reply then timed out (an unknown outcome ends the starvation early,
	// and the run is not exercised). Never deadlock.
	if stalled["verdict"] != "inconclusive" || maxStall < 2500 {
		t.Errorf("with a 3 s stall: verdict %v, longest stall %.0f ms: %s", stalled["verdict"], maxStall, reason)
	}
	t.Logf("calm: %v: %v", calm["verdict"], calm["reason"])
	t.Logf("stalled: %v: %s", stalled["verdict"], reason)
}

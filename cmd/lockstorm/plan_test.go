package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDryRunPrintsPlansStartsNothing: --dry-run compiles every job (the
// variant's lock and options, the derived or written expectation, the
// failpoints) and starts nothing: no servers, no run folder.
func TestDryRunPrintsPlansStartsNothing(t *testing.T) {
	bin := buildBinary(t)
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := runCLI(t, bin, "run", "--dry-run", "--out", out, "--scenario", "foreign-unlock", "--impl", "getset", "--impl", "set-nx-px", "--seed", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"plan: foreign-unlock (specs/foreign-unlock.yaml) × getset, seed 7, scheduled",
		"claims       {topology: single, expiry: client-clock, release: unconditional}",
		"failpoint #2 c0 at cycle/before-release: {times: 1, sleep: 800ms}",
		"expected     unsafe (spec): unlock() DELs unconditionally",
		"workload     careless client(s), counter resource; hold 1ms..5ms, think 0s, backoff 10ms after an unknown outcome",
		"network      latency 1ms, jitter 0s on every link (the lock is told a round trip takes 2ms); every command times out after 1s",
		"stop         after 2s; the clients then have 6.005s to finish their cycle; a first overlap ends the traffic 1.2s later",
		"plan: foreign-unlock (specs/foreign-unlock.yaml) × set-nx-px, seed 7",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, stdout)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a dry run made %s (err %v)", out, err)
	}
	stdout, _, code = runCLI(t, bin, "run", "--plan", "--format", "json", "--scenario", "pause-past-ttl-random", "--impl", "fenced")
	var p struct {
		Impl        string
		Nodes       int
		Expectation struct{ Verdict, Source string }
		Check       struct{ Fenced bool } `json:"checker_options"`
		Workload    struct{ Resource string }
		Stop        struct {
			EarlyStop int64 `json:"early_stop_ns"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &p); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, stdout)
	}
	// A fenced resource's overlaps may be safe: such a run never stops early.
	if p.Impl != "fenced" || p.Nodes != 1 || !p.Check.Fenced || p.Expectation.Verdict != "safe" ||
		p.Workload.Resource != "fenced" || p.Stop.EarlyStop != 0 {
		t.Errorf("plan %+v", p)
	}
	if _, stderr, code := runCLI(t, bin, "run", "--dry-run", "--scenario", "contention", "--impl", "nope"); code != 2 || !strings.Contains(stderr, "unknown implementation") {
		t.Errorf("unknown impl: exit %d, %s", code, stderr)
	}
}

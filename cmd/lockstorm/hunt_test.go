package main

import (
	"strings"
	"testing"
)

// TestHunt: on sim, hunt finds what a lock's expectation forbids and
// leaves a run folder, and stays quiet on a lock that keeps it. Sim runs
// are the same for the same seed, so neither side depends on the machine.
func TestHunt(t *testing.T) {
	bin := buildBinary(t)
	for _, tc := range []struct {
		name, impl, scenario, want string
		code                       int
	}{
		// crash-before-expire-random's rules expect setnx-del safe from its
		// claims; its DEL race (seed 001) overlaps two waiters.
		{"finds", "setnx-del", "crash-before-expire-random", "hunt: found after", 1},
		{"quiet", "set-nx-px", "del-race-random", "hunt: nothing found", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, bin, "hunt", "--impl", tc.impl, "--scenario", tc.scenario,
				"--budget", "3s", "--shrink-budget", "1s", "--out", t.TempDir())
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Fatalf("hunt --impl %s: exit %d, want %d; stdout:\n%s\nstderr:\n%s", tc.impl, code, tc.code, out, errOut)
			}
		})
	}
}

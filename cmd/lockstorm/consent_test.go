package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// markerClient is a client program that leaves a marker file as soon as it
// starts, then speaks the line protocol (its lock says yes to everything).
const markerClient = `#!/bin/sh
touch '%s'
n=0
while read cmd rest; do
  case "$cmd" in
    hello) echo "hello 1 name=marker-lock" ;;
    acquire) n=$((n+1)); echo "ok t$n" ;;
    *) echo ok ;;
  esac
done
`

// markerSpec runs the marker client as its only lock (line 9: its exec).
const markerSpec = `name: spec-program
clients: 2
keys: 1
duration: 300ms
lock: {ttl: 2s, retry_delay: 5ms, wait_timeout: 1s}
impls: [marker]
variants:
  marker:
    exec: ['%s']
`

// TestSpecProgramNeedsConsent: a spec is data. A program a spec names
// starts only with --allow-exec: without it the run is refused at the
// variant's exec line, naming the flag (exit 2), and a dry run, allowed or
// not, starts nothing and shows the program. With it the program runs.
func TestSpecProgramNeedsConsent(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	client := filepath.Join(dir, "marker client.sh")
	if err := os.WriteFile(client, []byte(fmt.Sprintf(markerClient, marker)), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(markerSpec, client)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := []string{"run", "--scenario", spec, "--backend", "embedded", "--keep", "none", "--seed", "1"}
	for _, tc := range []struct {
		name    string
		args    []string
		code    int    // -1: any but 2 (the verdict is the marker lock's)
		stdout  string // in the output, "" for nothing
		stderr  string
		started bool
	}{
		{"refused", run, 2, "", spec + ":9: variants.marker.exec: runs the program", false},
		{"refused names the flag", run, 2, "", "add --allow-exec", false},
		{"dry run", append([]string{"run", "--dry-run"}, run[1:]...), 0, "program      '" + client + "', started once per client", "", false},
		{"dry run says how", append([]string{"run", "--dry-run"}, run[1:]...), 0, "starts only with\n               --allow-exec", "", false},
		{"dry run allowed", append([]string{"run", "--dry-run", "--allow-exec"}, run[1:]...), 0, "not asked its hello", "", false},
		{"allowed", append(run, "--allow-exec"), -1, "spec-program", "", true},
		// A program given with --exec is the user's: it needs no more
		// consent, and a dry run does not start it either.
		{"--exec", append(run, "--exec", "'"+client+"'"), -1, "marker-lock", "", true},
		{"--exec dry run", append([]string{"run", "--dry-run", "--exec", "'" + client + "'"}, run[1:]...), 0, "program      '" + client + "'", "", false},
		// shrink loads the spec, and every candidate, with the same consent.
		{"shrink refused", []string{"shrink", "--impl", "marker", "--backend", "embedded", "--budget", "5s", "--out", filepath.Join(dir, "min.yaml"), spec}, 2, "", "add --allow-exec", false},
		{"shrink allowed", []string{"shrink", "--allow-exec", "--impl", "marker", "--backend", "embedded", "--budget", "5s", "--out", filepath.Join(dir, "min.yaml"), spec}, -1, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(marker)
			stdout, stderr, code := runCLI(t, bin, tc.args...)
			if tc.code >= 0 && code != tc.code || tc.code < 0 && code == 2 {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stdout lacks %q or stderr %q\nstdout: %s\nstderr: %s", tc.stdout, tc.stderr, stdout, stderr)
			}
			_, err := os.Stat(marker)
			if started := err == nil; started != tc.started {
				t.Errorf("program started: %v, want %v", started, tc.started)
			}
		})
	}
}

// TestClientProcessSkipsTopologies: a client process is handed node
// addresses, so the scenarios that need Sentinel discovery or a cluster's
// redirects are skipped for it, each named (the program is asked only its
// hello); the rest of the run goes on (nothing is left here: exit 2).
func TestClientProcessSkipsTopologies(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	client := filepath.Join(dir, "client.sh")
	if err := os.WriteFile(client, []byte(fmt.Sprintf(markerClient, marker)), 0o755); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, bin, "run", "--scenario", "cluster-failover", "--scenario", "sentinel-kill", "--exec", client, "--keep", "none")
	for _, want := range []string{"skipping cluster-failover × marker-lock", "not a cluster", "skipping sentinel-kill × marker-lock", "not Sentinels"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code != 2 {
		t.Errorf("exit %d, want 2 (nothing left to run)", code)
	}
}

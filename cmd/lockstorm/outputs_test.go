package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const shortSpec = `name: short-out
clients: 2
duration: 300ms
lock: {ttl: 200ms, retry_delay: 5ms, wait_timeout: 100ms}
impls: [set-nx-px]
expected: {set-nx-px: safe}
`

// captureStdout runs f with os.Stdout going to a pipe and returns what it printed.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stdout = old }()
	f()
	w.Close()
	os.Stdout = old
	return <-done
}

// TestUnwritableOutputsRefusedBeforeRun: --out and --junit that cannot be
// written are refused with the path and the reason, exit 2, before any
// server starts.
func TestUnwritableOutputsRefusedBeforeRun(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "short.yaml")
	os.WriteFile(spec, []byte(shortSpec), 0o644)
	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, []byte("x"), 0o644)
	base := observe()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"out under a file", []string{"--out", filepath.Join(file, "runs")}, "--out " + filepath.Join(file, "runs") + ": not a directory"},
		{"out is a file", []string{"--out", file}, "--out " + file + ": not a directory"},
		{"junit is a directory", []string{"--junit", dir}, "--junit " + dir + ": is a directory"},
		{"junit in a missing folder", []string{"--junit", filepath.Join(dir, "no", "j.xml")}, "--junit " + filepath.Join(dir, "no", "j.xml") + ": folder " + filepath.Join(dir, "no") + ": no such file or directory"},
		{"junit under a file", []string{"--junit", filepath.Join(file, "j.xml")}, "--junit " + filepath.Join(file, "j.xml") + ": not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := watch(base)
			err := run(context.Background(), append([]string{"run", "--scenario", spec, "--backend", "embedded", "--keep", "all"}, tc.args...))
			if seen := w.stop(); seen != "" {
				t.Errorf("started something: %s", seen)
			}
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want exit 2 with %q", err, tc.want)
			}
		})
	}
}

// TestFailedWriteReportedAfterVerdicts: when a file cannot be written
// after the run (the JUnit path became a folder meanwhile), the verdicts
// are printed anyway and the failure comes after them, with exit 2.
func TestFailedWriteReportedAfterVerdicts(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "short.yaml")
	os.WriteFile(spec, []byte(shortSpec), 0o644)
	junit := filepath.Join(dir, "junit.xml")
	out := filepath.Join(dir, "out")
	afterRuns = func() {
		// The checks passed at start; now the path cannot be a file.
		os.Remove(junit)
		os.Mkdir(junit, 0o755)
	}
	defer func() { afterRuns = nil }()
	var err error
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	printed := captureStdout(t, func() {
		err = run(ctx, []string{"run", "--scenario", spec, "--backend", "embedded", "--keep", "all", "--out", out, "--junit", junit})
	})
	if !strings.Contains(printed, "short-out") || !strings.Contains(printed, "set-nx-px") {
		t.Fatalf("verdict table not printed; stdout:\n%s", printed)
	}
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "not all saved") || !strings.Contains(err.Error(), "--junit") {
		t.Fatalf("err = %v; want exit 2 reporting the failed --junit write", err)
	}
	// The run folder, which could be written, was.
	if m, _ := filepath.Glob(filepath.Join(out, "*short-out*", "history.jsonl")); len(m) != 1 {
		t.Errorf("run folder not written: %v", m)
	}
}

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// skip is a scenario the backend cannot run, and why.
type skip struct{ Scenario, Why string }

func (s skip) String() string { return s.Scenario + ": " + s.Why }

// printSkipped says in one line how many scenarios (or scenario × lock
// pairs) the backends cannot run, why, and what runs them, so the first
// screen is results, not what did not run; every one is named under -v,
// when nothing is left to run, and on the suite page. backend is the
// --backend list, resolved.
func printSkipped(w io.Writer, skipped []skip, f *runFlags, backend string, nothingLeft bool) {
	if len(skipped) == 0 {
		return
	}
	if f.verbose || nothingLeft {
		for _, s := range skipped {
			fmt.Fprintf(w, "lockstorm: skipping %s on the %s backend: %s\n", s.Scenario, backend, s.Why)
		}
		return
	}
	what := "scenarios"
	for _, s := range skipped {
		if strings.Contains(s.Scenario, " × ") {
			what = "scenarios or scenario × lock pairs"
		}
	}
	fix := "--backend redis-server runs them"
	switch {
	case strings.Contains(backend, cluster.RedisServer):
		fix = "no backend of the list can run them"
	case func() bool { _, err := cluster.ServerBinary(""); return err != nil }():
		fix = "to run them: sudo apt-get install -y redis-server"
	case strings.Contains(backend, ","):
		fix = "redis-server in --backend's list runs them"
	}
	fmt.Fprintf(w, "lockstorm: skipping %d %s the %s backend cannot run (%s); %s (-v lists them)\n",
		len(skipped), what, backend, reasons(skipped), fix)
}

// reasons counts the skips by the head of their reason ("needs a Redis
// Cluster ×7, needs replicas ×2"): the reason up to its first comma,
// colon or semicolon.
func reasons(skipped []skip) string {
	var order []string
	count := map[string]int{}
	for _, s := range skipped {
		head := s.Why
		if i := strings.IndexAny(head, ",:;"); i > 0 {
			head = head[:i]
		}
		if count[head] == 0 {
			order = append(order, head)
		}
		count[head]++
	}
	parts := make([]string, len(order))
	for i, head := range order {
		parts[i] = fmt.Sprintf("%s ×%d", head, count[head])
	}
	return strings.Join(parts, ", ")
}

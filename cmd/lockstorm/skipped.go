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

// printSkipped says in one line how many scenarios the backend cannot run,
// why, and what runs them, so the first screen is results, not what did
// not run; every one is named under -v, when nothing is left to run, and
// on the suite page.
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
	fix := "to run them: sudo apt-get install -y redis-server"
	if _, err := cluster.ServerBinary(""); err == nil {
		fix = "--backend redis-server runs them"
	}
	fmt.Fprintf(w, "lockstorm: skipping %d scenarios the %s backend cannot run (%s); %s (-v lists them)\n",
		len(skipped), backend, needs(skipped), fix)
}

// needs counts the skipped scenarios by what they need ("7 need a Redis
// Cluster, 2 replicas"), read from the reason's head ("needs X, which ...").
func needs(skipped []skip) string {
	var order []string
	count := map[string]int{}
	for _, s := range skipped {
		what, _, _ := strings.Cut(s.Why, ", which")
		what = strings.TrimPrefix(what, "needs ")
		if count[what] == 0 {
			order = append(order, what)
		}
		count[what]++
	}
	parts := make([]string, len(order))
	for i, what := range order {
		parts[i] = fmt.Sprintf("%d %s", count[what], what)
	}
	if len(parts) > 0 {
		parts[0] = strings.Replace(parts[0], " ", " need ", 1)
	}
	return strings.Join(parts, ", ")
}

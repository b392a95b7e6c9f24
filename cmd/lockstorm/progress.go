package main

import (
	"fmt"
	"os"
	"sync"

	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios"
)

// progress prints one status line on a terminal while runs go on; when
// stderr is not a terminal (a CI log) it prints one line per finished run
// instead, so a long suite is never minutes of silence.
type progress struct {
	tty      bool
	mu       sync.Mutex
	total    int
	finished int
	unsafe   int
	running  map[string]scenarios.Progress
}

func newProgress(tty bool, total int) *progress {
	return &progress{tty: tty, total: total, running: map[string]scenarios.Progress{}}
}

func (p *progress) update(s scenarios.Progress) {
	if !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[s.Scenario+"/"+s.Impl] = s
	p.printLocked()
}

func (p *progress) done(scen, impl string, out *scenarios.Outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, scen+"/"+impl)
	p.finished++
	if out != nil && !out.AsExpected() {
		p.unsafe++
	}
	if p.tty {
		p.printLocked()
		return
	}
	line := fmt.Sprintf("[%d/%d] %s × %s", p.finished, p.total, scen, impl)
	if out != nil {
		// The table's mark: an exploratory run that missed its failure
		// is a miss there, not a DIFF.
		mark := "ok"
		switch {
		case out.Expected == "":
			mark = "no expectation"
		case !out.AsExpected():
			mark = reports.FromOutcome(out).Mark() + ", expected " + out.Expected
		}
		line += fmt.Sprintf(": %s (%s) in %.1f s", out.Result.Verdict, mark, out.Elapsed.Seconds())
	}
	fmt.Fprintln(os.Stderr, line)
}

func (p *progress) printLocked() {
	line := fmt.Sprintf("[%d/%d done, %d unexpected]", p.finished, p.total, p.unsafe)
	for k, s := range p.running {
		line += fmt.Sprintf(" %s %.0f/%.0fs", k, s.Elapsed.Seconds(), s.Total.Seconds())
	}
	fmt.Fprintf(os.Stderr, "\r\x1b[K%s", line)
}

func (p *progress) clear() {
	if p.tty {
		fmt.Fprint(os.Stderr, "\r\x1b[K")
	}
}

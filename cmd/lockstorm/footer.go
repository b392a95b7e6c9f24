package main

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios"
)

// The lines printed around the table (summary, time, replay commands,
// client process counts) fit the table's width too: a CI log or a terminal
// of 100 columns shows every one whole.

// foldLine breaks s at spaces into lines of at most reports.TableWidth
// columns, the later ones indented by hang: a sentence that reads on.
func foldLine(s, hang string) string {
	return strings.Join(fold(s, hang, ""), "\n")
}

// foldCommand breaks a shell command as foldLine does, each broken line
// ending in a backslash: the lines still paste as one command.
func foldCommand(s, hang string) string {
	return strings.Join(fold(s, hang, " \\"), "\n")
}

// fold fills lines greedily with s's words, each at most TableWidth
// columns with cont appended (a word longer than a line stays whole: a
// path is not cut). Every line but the first starts with hang.
func fold(s, hang, cont string) []string {
	var lines []string
	// An indented line keeps its indent: Fields drops it.
	cur := s[:len(s)-len(strings.TrimLeft(s, " "))]
	empty := true
	for _, word := range strings.Fields(s) {
		switch {
		case empty:
			cur += word
		case cols(cur)+1+cols(word)+cols(cont) <= reports.TableWidth:
			cur += " " + word
		default:
			lines = append(lines, cur+cont)
			cur = hang + word
		}
		empty = false
	}
	return append(lines, cur)
}

func cols(s string) int { return utf8.RuneCountInString(s) }

// processStats says, for the table's tail, which requests client
// processes (--exec) left unknown by dying, breaking the protocol or not
// answering: each is an unknown outcome in the history, and a flaky client
// program must not pass for a flaky lock.
func processStats(results []*scenarios.Outcome, jobs []job) []string {
	var lines []string
	for i, out := range results {
		if out == nil || out.Processes == nil || out.Processes.Unknown() == 0 {
			continue
		}
		p := out.Processes
		lines = append(lines, fmt.Sprintf("client processes of %s × %s: %d started; %d requests unknown (%d died, %d malformed replies, %d timeouts)",
			jobs[i].spec.Name, jobs[i].impl, p.Starts, p.Unknown(), p.Deaths, p.Malformed, p.Timeouts))
	}
	return lines
}

// printTail prints the lines under the table: the note on an interrupted
// suite, the summary, where the time went and the client processes'
// unknown requests, each folded to the table's width.
func printTail(w io.Writer, note string, rows []reports.Row, wall time.Duration, stats []string) {
	lines := []string{summaryLine(rows, wall)}
	if note != "" {
		lines = append([]string{note}, lines...)
	}
	if l := timeLine(rows); l != "" {
		lines = append(lines, l)
	}
	for _, l := range append(lines, stats...) {
		fmt.Fprintln(w, foldLine(l, "    "))
	}
}

// summaryLine closes every table: how many runs, how they compare with
// their expectations, and the wall time, for a person and a CI log alike.
func summaryLine(rows []reports.Row, wall time.Duration) string {
	var ok, diff, miss, inconclusive, none int
	for _, r := range rows {
		switch {
		case r.Expected == "":
			none++
		case r.Missed():
			miss++
		case r.AsExpected:
			ok++
		default:
			diff++
		}
		if r.Verdict == checker.Inconclusive {
			inconclusive++
		}
	}
	s := fmt.Sprintf("summary: %d runs in %.1f s: %d as expected, %d DIFF, %d miss, %d inconclusive", len(rows), wall.Seconds(), ok, diff, miss, inconclusive)
	if none > 0 {
		s += fmt.Sprintf(", %d without expectation", none)
	}
	if c := reports.Coverage(rows).Line(); c != "" {
		s += "; " + c
	}
	return s + backendsNote(rows)
}

// backendsNote says which backend ran how many runs, when more than one
// did (a --backend list: sim where it can, real servers for the rest).
func backendsNote(rows []reports.Row) string {
	n := map[string]int{}
	var order []string
	for _, r := range rows {
		if n[r.Backend] == 0 {
			order = append(order, r.Backend)
		}
		n[r.Backend]++
	}
	if len(order) < 2 {
		return ""
	}
	parts := make([]string, len(order))
	for i, b := range order {
		parts[i] = fmt.Sprintf("%d on %s", n[b], b)
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// timeLine says where the runs' time went, summed over the runs: their
// traffic (the specs' durations, less the early stops) and the harness's
// overhead around it, phase by phase. The overhead is what a faster suite
// cuts, and it depends less on the machine's load than the wall time.
func timeLine(rows []reports.Row) string {
	var sum scenarios.Phases
	n := 0
	for _, r := range rows {
		if r.Phases != nil {
			sum = sum.Add(*r.Phases)
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("time: %d runs took %.1f s, traffic %.1f s, overhead %.1f s (%s)", n, sum.Total().Seconds(),
		sum.Traffic.Seconds(), sum.Overhead().Seconds(), sum)
}

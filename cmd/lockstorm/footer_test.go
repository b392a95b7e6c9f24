package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios"
)

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// wideRows are rows as long as real ones get: every mark, evidence of
// several clauses, a scenario name longer than any shipped one's (38) and
// variant names past the table's name column, five-digit seeds, a spec
// file's path in the replay commands, kept folders.
func wideRows() []reports.Row {
	ph := &scenarios.Phases{Setup: 1234567 * time.Millisecond, Clients: 98765 * time.Millisecond, Traffic: 9876543 * time.Millisecond,
		Drain: 87654 * time.Millisecond, Check: 765432 * time.Millisecond, Teardown: 65432 * time.Millisecond}
	evidence := "c1 and c2 both held lock:0 at 812.3 ms for 40.1 ms (3 overlaps, 121.9 ms in all); " +
		"c3's write of 17 lost (net lost updates 2); stale writes 4; first at 1.2 s after partition-primary; " +
		"the harness's own stalls reached 30.5 ms (below the TTL)"
	long := "sentinel-partition-min-replicas-random-with-watchdog"
	base := reports.Row{Identity: history.Identity{Scenario: long, Mode: "random", Seed: 18446744073709551615, Backend: "redis-server"}, Evidence: evidence, Phases: ph}
	var rows []reports.Row
	for i, tc := range []struct {
		impl, verdict, expected string
		asExpected, gated       bool
	}{
		{"set-nx-px", checker.Unsafe, checker.Unsafe, true, false},
		{"redlock-majority-retry-with-watchdog-and-fencing-tokens-v2", checker.Safe, checker.Unsafe, false, false}, // miss
		{"lua-getset", checker.Safe, checker.Unsafe, false, true},                                                  // DIFF
		{"exec:seed003_getset_with_a_long_script_name.py", checker.Inconclusive, "", true, false},                  // no expectation
		{"setnx-del", checker.Deadlock, checker.Safe, false, true},
	} {
		r := base
		r.Impl, r.Verdict, r.Expected, r.AsExpected, r.Gated = tc.impl, tc.verdict, tc.expected, tc.asExpected, tc.gated
		r.Seed = uint64(10000 + i)
		r.Replay = fmt.Sprintf("lockstorm run --scenario examples/specs/%s.yaml --impl %s --seed %d --backend redis-server", long, tc.impl, r.Seed)
		r.RunDir = "out/20261125-181958.123-" + long + "-" + tc.impl + "-s" + fmt.Sprint(r.Seed)
		rows = append(rows, r)
	}
	rows = append(rows, reports.Row{Identity: history.Identity{Scenario: "del-race", Mode: "scheduled", Impl: "setnx-del", Expected: checker.Unsafe, Gated: true}, Verdict: checker.Unsafe,
		AsExpected: true, Evidence: "c1 and c2 both held lock:0 at 12.0 ms for 3.0 ms"})
	return rows
}

// TestOutputFits: every line of run's default output (the table, the
// aggregate of several seeds, the miss and DIFF replay commands and the
// lines under the table) fits the table's 100 columns of display width,
// in colour or not.
func TestOutputFits(t *testing.T) {
	rows := wideRows()
	mismatch, missed := 0, 0
	for _, r := range rows {
		switch {
		case r.Missed():
			missed++
		case !r.AsExpected:
			mismatch++
		}
	}
	if missed == 0 || mismatch == 0 {
		t.Fatalf("the rows lack a miss (%d) or a DIFF (%d)", missed, mismatch)
	}
	stats := []string{fmt.Sprintf("client processes of %s × %s: %d started; %d requests unknown (%d died, %d malformed replies, %d timeouts)",
		rows[3].Scenario, rows[3].Impl, 12345, 6789, 1234, 2345, 3210)}
	for _, tc := range []struct {
		name  string
		flags runFlags
	}{
		{"table", runFlags{seeds: 1, format: reports.FormatTable}},
		{"only-diff", runFlags{seeds: 1, format: reports.FormatTable, onlyDiff: true}},
		{"seeds", runFlags{seeds: 20, format: reports.FormatTable}},
		{"one run", runFlags{seeds: 1, format: reports.FormatTable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, mismatch, missed := rows, mismatch, missed
			if tc.name == "one run" {
				// One run's folder is printed under its replay command.
				one := rows[2]
				one.Scenario, one.Impl = "pause-past-ttl-random", "redlock-majority-retry"
				one.RunDir = "out/20261125-181958.123-pause-past-ttl-random-redlock-majority-retry-s10002"
				rows, mismatch, missed = []reports.Row{one}, 1, 0
			}
			var buf bytes.Buffer
			printVerdicts(&buf, &tc.flags, rows, mismatch, missed)
			printTail(&buf, "interrupted after 1234 of 5678 runs (a second interrupt stops at once)", rows, 98765*time.Second, stats)
			out := ansi.ReplaceAllString(buf.String(), "")
			for i, l := range strings.Split(out, "\n") {
				if n := runewidth.StringWidth(l); n > reports.TableWidth {
					t.Errorf("line %d is %d columns: %q", i+1, n, l)
				}
			}
			// Folding loses nothing: every figure is still there.
			flat := strings.Join(strings.Fields(strings.ReplaceAll(out, " \\\n", " ")), " ")
			for _, s := range []string{"summary: ", "98765.0 s", "teardown ", "6789 requests unknown", "3210 timeouts)",
				"interrupted after 1234 of 5678 runs"} {
				if !strings.Contains(flat, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			if tc.flags.seeds == 1 {
				for _, r := range rows {
					if !r.AsExpected && !strings.Contains(flat, r.Replay) {
						t.Errorf("output lacks the replay command %q:\n%s", r.Replay, out)
					}
					if len(rows) == 1 && !strings.Contains(flat, "# "+r.RunDir) {
						t.Errorf("output lacks the run folder %q:\n%s", r.RunDir, out)
					}
				}
			}
			t.Logf("\n%s", out)
		})
	}
}

func TestFold(t *testing.T) {
	word := strings.Repeat("x", 30)
	for _, tc := range []struct {
		name, s, cont string
		want          []string
	}{
		{"short", "  a b c", " \\", []string{"  a b c"}},
		{"empty", "", "", []string{""}},
		{"folds", strings.Repeat(word+" ", 4), "", []string{word + " " + word + " " + word, "    " + word}},
		{"continues", strings.Repeat(word+" ", 4), " \\", []string{word + " " + word + " " + word + " \\", "    " + word}},
		{"long word whole", strings.Repeat("y", 120) + " z", "", []string{strings.Repeat("y", 120), "    z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fold(tc.s, "    ", tc.cont)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("fold(%q) =\n%q\nwant\n%q", tc.s, got, tc.want)
			}
		})
	}
}

// TestSummaryCoverage: the summary line ends with the battery's coverage
// when some row explored, and says nothing of it otherwise.
func TestSummaryCoverage(t *testing.T) {
	sit := scenarios.Situation{Point: "p", State: scenarios.StateHolding}
	explored := reports.Row{Identity: history.Identity{Impl: "a", Expected: "safe"}, Verdict: "safe", AsExpected: true,
		Combos: []scenarios.Combo{{Situation: sit, Fault: "pause", Faults: 1}, {Situation: sit, Fault: "crash"}}}
	plain := reports.Row{Identity: history.Identity{Impl: "a", Expected: "safe"}, Verdict: "safe", AsExpected: true}
	for _, tc := range []struct {
		rows []reports.Row
		want string
	}{
		{[]reports.Row{explored, plain}, "; coverage: 1 of 2 combinations"},
		{[]reports.Row{plain}, ""},
	} {
		line := summaryLine(tc.rows, time.Second)
		if tc.want != "" && !strings.HasSuffix(line, tc.want) || tc.want == "" && strings.Contains(line, "coverage") {
			t.Errorf("summary %q, want it to end in %q", line, tc.want)
		}
	}
}

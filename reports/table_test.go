package reports

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// deadlockHistory: c1 takes lock:0 at 51 ms and crashes holding it; c2
// retries every 100 ms for 6.1 s.
func deadlockHistory() history.History {
	var h history.History
	add := func(ms float64, typ history.Type, p, c int, f string) {
		h = append(h, history.Op{Index: len(h), Type: typ, Process: p, Client: c, F: f, Key: "lock:0", Time: int64(ms * 1e6)})
	}
	add(50, history.Invoke, 1, 1, history.FAcquire)
	add(51, history.Ok, 1, 1, history.FAcquire)
	add(60, history.Ok, 1, 1, history.FCrash)
	for t := 51.0; t < 6151; t += 100 {
		add(t, history.Invoke, 2, 2, history.FAcquire)
		add(t+1, history.Fail, 2, 2, history.FAcquire)
	}
	return h
}

// suiteResults are check results of every verdict class, from the golden
// histories, with the evidence sentences the code writes for them.
func suiteResults(t *testing.T) map[string]checker.Result {
	t.Helper()
	opts := history.Options{DeadlockBound: time.Second, Timeout: 5 * time.Second}
	out := map[string]checker.Result{
		"overlap":      checker.Check(readGolden(t, "overlap.jsonl"), opts),
		"stale-hold":   checker.Check(readGolden(t, "stale-hold.jsonl"), opts),
		"good":         checker.Check(readGolden(t, "good.jsonl"), opts),
		"deadlock":     checker.Check(deadlockHistory(), opts),
		"inconclusive": checker.Check(history.History{{Type: history.Ok, Process: history.NemesisProcess, F: history.FStart, Time: 1}}, opts),
	}
	fopts := opts
	fopts.Fenced = true
	out["fenced"] = checker.Check(readGolden(t, "fenced.jsonl"), fopts)
	want := map[string]string{"overlap": checker.Unsafe, "stale-hold": checker.Unsafe, "good": checker.Safe,
		"deadlock": checker.Deadlock, "inconclusive": checker.Inconclusive, "fenced": checker.Safe}
	for k, r := range out {
		if r.Verdict != want[k] {
			t.Fatalf("%s judged %s (%s), want %s", k, r.Verdict, r.Reason, want[k])
		}
	}
	return out
}

func TestEvidenceSentences(t *testing.T) {
	rs := suiteResults(t)
	for _, tc := range []struct{ name, want string }{
		{"overlap", "c1 and c2 both held lock:0 at 812.3 ms for 87.7 ms; 1 stale write"},
		{"stale-hold", "c1 and c2 both held lock:0 at 21.0 ms for 3.0 ms; 2+ holders for 185 ms in all, 2 intervals; 2 stale writes"},
		{"good", NoEvidence},
		{"deadlock", "lock:0 starved 6.0 s from 60.0 ms"},
		{"inconclusive", "no acquire was attempted: the history tests nothing"},
		{"fenced", "c1 and c2 both held lock:0 at 50.0 ms for 20.0 ms; the fence refused 1 write"},
	} {
		if got := Evidence(rs[tc.name]); got != tc.want {
			t.Errorf("%s: evidence %q, want %q", tc.name, got, tc.want)
		}
	}
}

// shippedSuiteRows is every shipped scenario × implementation, once with
// each kind of result, so every verdict meets every expectation and mark.
func shippedSuiteRows(t *testing.T) []Row {
	t.Helper()
	rs := suiteResults(t)
	var rows []Row
	for _, name := range spec.Names() {
		spec, err := spec.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, impl := range spec.Impls {
			for _, k := range []string{"overlap", "stale-hold", "good", "deadlock", "inconclusive", "fenced"} {
				o := &scenarios.Outcome{Identity: history.Identity{Scenario: spec.Name, Impl: impl, Seed: spec.Seed, Backend: "redis-server", Mode: spec.Mode, Gated: spec.IsGated(), Expected: spec.Expect(impl)}, Result: rs[k],
					Elapsed: 3 * time.Second, Spec: spec}
				rows = append(rows, FromOutcome(o))
			}
		}
	}
	if len(rows) < 40 {
		t.Fatalf("only %d rows: is the suite embedded?", len(rows))
	}
	return rows
}

// TestShippedSuiteTableFits: the default table of every shipped scenario ×
// implementation fits 100 columns, in colour too once the escape codes are
// taken out, and tells each row's story.
func TestShippedSuiteTableFits(t *testing.T) {
	rows := shippedSuiteRows(t)
	for _, color := range []bool{false, true} {
		var buf bytes.Buffer
		if err := WriteTable(&buf, rows, TableOptions{Format: FormatTable, Color: color}); err != nil {
			t.Fatal(err)
		}
		out := ansiRE.ReplaceAllString(buf.String(), "")
		widest := 0
		for i, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if n := width(l); n > TableWidth {
				t.Errorf("line %d is %d columns: %q", i, n, l)
			}
			widest = max(widest, width(l))
		}
		if !color {
			t.Logf("%d rows, widest line %d columns; the first rows:\n%s", len(rows), widest, strings.Join(strings.SplitN(out, "\n", 16)[:15], "\n"))
		}
		for _, s := range []string{"c1 and c2 both held lock:0 at 812.3 ms for", "lock:0 starved 6.0 s from 60.0 ms", "DIFF", NoEvidence} {
			if !strings.Contains(strings.ReplaceAll(out, "\n", " "), s) && !containsWrapped(out, s) {
				t.Errorf("table lacks %q", s)
			}
		}
	}
	// The wide table keeps today's columns: far wider.
	var buf bytes.Buffer
	if err := WriteTable(&buf, rows[:6], TableOptions{Format: FormatTable, Wide: true}); err != nil {
		t.Fatal(err)
	}
	if l := strings.SplitN(buf.String(), "\n", 2)[0]; width(l) <= TableWidth || !strings.Contains(buf.String(), "net lost") {
		t.Errorf("wide table header is %d columns: %s", width(l), l)
	}
}

// containsWrapped finds s in the evidence column across its wrapped lines.
func containsWrapped(out, s string) bool {
	var ev []string
	for _, l := range strings.Split(out, "\n") {
		ev = append(ev, strings.TrimSpace(l))
	}
	return strings.Contains(strings.Join(ev, " "), s)
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		in    string
		n, mx int
		want  []string
	}{
		{"a bb ccc", 4, 3, []string{"a bb", "ccc"}},
		{"", 4, 3, []string{""}},
		{"abcdefghij", 4, 3, []string{"abcd", "efgh", "ij"}},
		{"aa bb cc dd ee", 5, 2, []string{"aa bb", "cc d…"}},
		{"— x", 3, 1, []string{"— x"}},
		{"c1 and c2 held k; 1 stale write", 20, 3, []string{"c1 and c2 held k;", "1 stale write"}},
		{"a; b; c", 10, 3, []string{"a; b; c"}},
	} {
		got := wrap(tc.in, tc.n, tc.mx)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrap(%q, %d, %d) = %q, want %q", tc.in, tc.n, tc.mx, got, tc.want)
		}
		for _, l := range got {
			if width(l) > tc.n {
				t.Errorf("wrap(%q): line %q wider than %d", tc.in, l, tc.n)
			}
		}
	}
}

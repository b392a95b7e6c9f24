package checker

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/history"
)

// cleanRun is a runner history of two full cycles on one key, then a third
// acquire: header on line 1, end record on the last line.
func cleanRun() history.History {
	return runnerHist(history.Meta{Keys: []string{k0}}, func(b *builder) {
		b.cycle(1, 1, k0, 0, 1, 5, 0, 0)  // lines 2-9
		b.cycle(2, 2, k0, 6, 7, 10, 1, 0) // lines 10-17
	})
}

func jsonl(t *testing.T, h history.History) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := history.WriteJSONL(&buf, h); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// lineOf finds the line (1-based) of the first entry matching typ, process
// and f.
func lineOf(t *testing.T, h history.History, typ history.Type, p int, f string) int {
	t.Helper()
	for i, op := range h {
		if op.Type == typ && op.Process == p && op.F == f {
			return i + 1
		}
	}
	t.Fatalf("no %s %s of process %d", typ, f, p)
	return 0
}

// TestValidateCorruptions: each way a history file can be damaged is found
// and named by line, and makes the verdict inconclusive, not safe and not
// (for a lost release) a false unsafe.
func TestValidateCorruptions(t *testing.T) {
	h := cleanRun()
	relInv := lineOf(t, h, history.Invoke, 1, history.FRelease)
	relOk := relInv + 1
	acqOk := lineOf(t, h, history.Ok, 2, history.FAcquire)
	cases := []struct {
		name    string
		damage  func(lines []string) []string
		verdict string
		reason  []string
	}{
		{
			name:    "intact",
			damage:  func(l []string) []string { return l },
			verdict: Safe,
		},
		{
			// Without its invoke, process 1's hold would run on into process
			// 2's: a false overlap. The broken process is left out instead.
			name:    "a release invoke removed",
			damage:  func(l []string) []string { return append(l[:relInv-1:relInv-1], l[relInv:]...) },
			verdict: Inconclusive,
			reason: []string{fmt.Sprintf("line %d: entry %d is missing before this line", relInv, relInv-1),
				fmt.Sprintf("line %d: release lock:0 of process 1 completes (ok) without its invoke", relOk-1)},
		},
		{
			name:    "cut at a line boundary",
			damage:  func(l []string) []string { return l[:len(l)/2] },
			verdict: Inconclusive,
			reason:  []string{fmt.Sprintf("line %d: the history ends here without the end record", len(h)/2)},
		},
		{
			name:    "a line duplicated",
			damage:  func(l []string) []string { return append(l[:acqOk:acqOk], l[acqOk-1:]...) },
			verdict: Inconclusive,
			reason:  []string{fmt.Sprintf("line %d: duplicate of line %d", acqOk+1, acqOk)},
		},
		{
			name:    "a malformed line",
			damage:  func(l []string) []string { l[acqOk-1] = `{"index": 11, "type": "ok", "proc`; return l },
			verdict: Inconclusive,
			reason:  []string{fmt.Sprintf("line %d: not a history entry", acqOk)},
		},
		{
			// Process 2 goes on (reads) though its acquire never completed.
			name:    "a completion removed: an invoke without completion for a process that went on",
			damage:  func(l []string) []string { return append(l[:acqOk-1:acqOk-1], l[acqOk:]...) },
			verdict: Inconclusive,
			reason: []string{fmt.Sprintf("line %d: process 2 invokes read lock:0, but its acquire lock:0 invoked at line %d never completed",
				acqOk, acqOk-1)},
		},
		{
			name:    "the start cut off",
			damage:  func(l []string) []string { return l[3:] },
			verdict: Inconclusive,
			reason:  []string{"line 1: the history starts at index 3"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := tc.damage(jsonl(t, h))
			p, err := history.ReadChecked(strings.NewReader(strings.Join(lines, "\n") + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			r := CheckParsed(p, history.Options{})
			t.Logf("%s: %s", r.Verdict, r.Reason)
			expect(t, r.Verdict, tc.verdict, "verdict")
			for _, want := range tc.reason {
				if !strings.Contains(r.Reason, want) {
					t.Errorf("reason %q does not say %q", r.Reason, want)
				}
			}
			if tc.verdict == Safe && r.Malformed != 0 {
				t.Errorf("problems in an intact history: %v", r.Problems)
			}
		})
	}
}

// TestValidateInMemory: the runner's own history is validated the same way
// (lines are positions + 1), a completion without its invoke included.
func TestValidateInMemory(t *testing.T) {
	h := cleanRun()
	at := lineOf(t, h, history.Ok, 2, history.FRelease)
	// A harness bug: a second release completion, numbered as the recorder would.
	bad := append(append(history.History(nil), h[:at]...), history.Op{Type: history.Ok, Process: 2, Client: 2, F: history.FRelease, Key: k0, Time: h[at-1].Time})
	bad = append(bad, h[at:]...)
	for i := range bad {
		bad[i].Index = i
	}
	_, problems, _ := history.Validate(history.Parsed{History: bad})
	want := history.Problem{Line: at + 1, Msg: "release lock:0 of process 2 completes (ok) without its invoke"}
	if len(problems) != 1 || problems[0] != want {
		t.Fatalf("problems %v, want [%v]", problems, want)
	}
	if r := Check(bad, history.Options{}); r.Verdict != Inconclusive || !strings.Contains(r.Reason, want.String()) {
		t.Errorf("%s: %s", r.Verdict, r.Reason)
	}
}

// TestValidateKeepsViolations: a violation in the well-formed part of a
// damaged history is unsafe, with the problems named beside it.
func TestValidateKeepsViolations(t *testing.T) {
	h := runnerHist(history.Meta{Keys: []string{k0}}, func(b *builder) {
		b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
		b.op(2, 3, history.Ok, 2, 2, history.FAcquire, k0)
		b.op(4, 5, history.Ok, 1, 1, history.FRelease, k0)
		b.op(6, 7, history.Ok, 2, 2, history.FRelease, k0)
	})
	lines := jsonl(t, h)
	p, err := history.ReadChecked(strings.NewReader(strings.Join(lines[:len(lines)-1], "\n")))
	if err != nil {
		t.Fatal(err)
	}
	r := CheckParsed(p, history.Options{})
	expect(t, r.Verdict, Unsafe, "verdict")
	if !strings.Contains(r.Reason, "without the end record") {
		t.Errorf("reason %q does not name the truncation", r.Reason)
	}
}

package checker

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// cleanRun is a runner history of two full cycles on one key, then a third
// acquire: header on line 1, end record on the last line.
func cleanRun() History {
	return runnerHist(Meta{Keys: []string{k0}}, func(b *builder) {
		b.cycle(1, 1, k0, 0, 1, 5, 0, 0)  // lines 2-9
		b.cycle(2, 2, k0, 6, 7, 10, 1, 0) // lines 10-17
	})
}

func jsonl(t *testing.T, h History) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, h); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// lineOf finds the line (1-based) of the first entry matching typ, process
// and f.
func lineOf(t *testing.T, h History, typ Type, p int, f string) int {
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
	relInv := lineOf(t, h, Invoke, 1, FRelease)
	relOk := relInv + 1
	acqOk := lineOf(t, h, Ok, 2, FAcquire)
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
			p, err := ReadChecked(strings.NewReader(strings.Join(lines, "\n") + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			r := CheckParsed(p, Options{})
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
	at := lineOf(t, h, Ok, 2, FRelease)
	// A harness bug: a second release completion, numbered as the recorder would.
	bad := append(append(History(nil), h[:at]...), Op{Type: Ok, Process: 2, Client: 2, F: FRelease, Key: k0, Time: h[at-1].Time})
	bad = append(bad, h[at:]...)
	for i := range bad {
		bad[i].Index = i
	}
	_, problems := Validate(Parsed{History: bad})
	want := Problem{at + 1, "release lock:0 of process 2 completes (ok) without its invoke"}
	if len(problems) != 1 || problems[0] != want {
		t.Fatalf("problems %v, want [%v]", problems, want)
	}
	if r := Check(bad, Options{}); r.Verdict != Inconclusive || !strings.Contains(r.Reason, want.String()) {
		t.Errorf("%s: %s", r.Verdict, r.Reason)
	}
}

// TestValidateKeepsViolations: a violation in the well-formed part of a
// damaged history is unsafe, with the problems named beside it.
func TestValidateKeepsViolations(t *testing.T) {
	h := runnerHist(Meta{Keys: []string{k0}}, func(b *builder) {
		b.op(0, 1, Ok, 1, 1, FAcquire, k0)
		b.op(2, 3, Ok, 2, 2, FAcquire, k0)
		b.op(4, 5, Ok, 1, 1, FRelease, k0)
		b.op(6, 7, Ok, 2, 2, FRelease, k0)
	})
	lines := jsonl(t, h)
	p, err := ReadChecked(strings.NewReader(strings.Join(lines[:len(lines)-1], "\n")))
	if err != nil {
		t.Fatal(err)
	}
	r := CheckParsed(p, Options{})
	expect(t, r.Verdict, Unsafe, "verdict")
	if !strings.Contains(r.Reason, "without the end record") {
		t.Errorf("reason %q does not name the truncation", r.Reason)
	}
}

// TestDupFinder: the duplicate finder (a chain per process and time on a
// history ordered by time, a hash table otherwise) names, for every entry,
// the same first earlier equal as a map keyed by every field (the former
// implementation): on synthetic histories with entries repeated next to
// themselves, later at the same time, and out of time order.
func TestDupFinder(t *testing.T) {
	type full struct {
		index, process, client int
		typ                    Type
		f, key, value, err     string
		n, fence, time         int64
	}
	reference := func(h History) []int {
		seen := map[full]int{}
		out := make([]int, len(h))
		for i := range h {
			op := &h[i]
			k := full{op.Index, op.Process, op.Client, op.Type, op.F, op.Key, op.Value, op.Error, op.N, op.Fence, op.Time}
			if j, ok := seen[k]; ok {
				out[i] = j
				continue
			}
			seen[k], out[i] = i, -1
		}
		return out
	}
	base := Synthetic(SynthConfig{Ops: 3000, Keys: 3, Unknown: 0.05, Seed: 7})
	withDups := func(sorted bool) History {
		var h History
		for i, op := range base {
			h = append(h, op)
			switch i % 97 {
			case 5: // the same entry twice in a row
				h = append(h, op)
			case 7: // three times: the first is the one named
				h = append(h, op, op)
			case 11: // a near copy at the same time: not a duplicate
				op.Value += "x"
				h = append(h, op)
			case 13: // a copy after another entry of the same time
				if i+1 < len(base) && base[i+1].Time == op.Time {
					h = append(h, base[i+1], op)
				}
			}
		}
		if !sorted {
			h = append(h, h[100:140]...) // replayed lines: out of time order
		}
		return h
	}
	for _, tc := range []struct {
		name  string
		h     History
		table bool
	}{
		{"sorted, no duplicates", base, false},
		{"sorted, duplicates", withDups(true), false},
		{"unsorted, duplicates", withDups(false), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDupFinder(tc.h, ordered(tc.h))
			if got := d.slots != nil; got != tc.table {
				t.Fatalf("hash table used: %v, want %v", got, tc.table)
			}
			want := reference(tc.h)
			dups := 0
			for i := range tc.h {
				if got := d.firstOrAdd(i); got != want[i] {
					t.Fatalf("entry %d: first equal %d, want %d", i, got, want[i])
				}
				if want[i] >= 0 {
					dups++
				}
			}
			if tc.name != "sorted, no duplicates" && dups == 0 {
				t.Fatal("the history has no duplicates to find")
			}
		})
	}
}

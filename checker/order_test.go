package checker

import (
	"reflect"
	"testing"
)

// TestOutOfOrderHistoryJudgedAsSorted: the pass checks the order as it
// reads and starts again on a sorted copy at the first entry out of order,
// so a history with entries swapped is judged as the ordered one, whether
// the swap is near its start, in its middle or at its end.
func TestOutOfOrderHistoryJudgedAsSorted(t *testing.T) {
	for _, viol := range []bool{false, true} {
		h := Synthetic(SynthConfig{Ops: 5000, Keys: 3, Unknown: 0.05, Violation: viol, Seed: 7})
		want := Check(h, Options{})
		for _, at := range []int{1, len(h) / 2, len(h) - 2} {
			i := at
			for h[i].Time == h[i+1].Time {
				i-- // toward the start: the final reads share one time
			}
			swapped := append(History(nil), h...)
			swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
			if ordered(swapped) {
				t.Fatalf("swap at %d left the history ordered", i)
			}
			if got := Check(swapped, Options{}); !reflect.DeepEqual(got, want) {
				t.Errorf("violation %v, swap at %d: %s (%s), want %s (%s)", viol, i, got.Verdict, got.Reason, want.Verdict, want.Reason)
			}
			if got, want := Holds(swapped), Holds(h); !reflect.DeepEqual(got, want) {
				t.Errorf("violation %v, swap at %d: %d holds differ from the ordered history's %d", viol, i, len(got), len(want))
			}
		}
	}
}

// TestValidateLearnsRunnerAndOrderAsItWalks: validate guesses from the
// first and last entries whether the history is a runner's and walks it as
// ordered, starting again when an entry says otherwise; its result is the
// walk's with both facts known from the start.
func TestValidateLearnsRunnerAndOrderAsItWalks(t *testing.T) {
	base := Synthetic(SynthConfig{Ops: 400, Keys: 2, Unknown: 0.05, Seed: 3})
	meta := Op{Type: Ok, Process: FinalProcess, F: FMeta, Meta: &Meta{Scenario: "x"}}
	end := Op{Type: Ok, Process: FinalProcess, F: FEnd}
	with := func(f func(h History) History) History { return f(append(History(nil), base...)) }
	swap := func(h History, i int) History {
		for h[i].Time == h[i+1].Time {
			i++
		}
		h[i], h[i+1] = h[i+1], h[i]
		return h
	}
	mid := len(base) / 2
	for _, tc := range []struct {
		name string
		h    History
	}{
		{"no runner, ordered", base},
		{"runner, ordered", with(func(h History) History {
			end.Time = h[len(h)-1].Time
			return append(append(History{meta}, h...), end)
		})},
		{"header in the middle only", with(func(h History) History {
			m := meta
			m.Time = h[mid].Time
			return append(h[:mid:mid], append(History{m}, h[mid:]...)...)
		})},
		{"no runner, out of order", with(func(h History) History { return swap(h, mid) })},
		{"end record in the middle, out of order after it", with(func(h History) History {
			e := end
			e.Time = h[10].Time
			h = append(h[:10:10], append(History{e}, h[10:]...)...)
			return swap(h, mid)
		})},
		{"out of order, then a header", with(func(h History) History {
			h = swap(h, 5)
			m := meta
			m.Time = h[mid].Time
			return append(h[:mid:mid], append(History{m}, h[mid:]...)...)
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.h {
				tc.h[i].Index = i
			}
			p := Parsed{History: tc.h}
			wantWell, wantProblems, wantSorted, redo := validateAs(p, anyRunnerRecord(tc.h), ordered(tc.h))
			if redo {
				t.Fatal("a walk that knows both facts started again")
			}
			well, problems, sorted := validate(p)
			if sorted != wantSorted || !reflect.DeepEqual(problems, wantProblems) || len(well) != len(wantWell) {
				t.Errorf("validate: sorted %v, %d problems, %d well-formed; want %v, %d (%v), %d",
					sorted, len(problems), len(well), wantSorted, len(wantProblems), wantProblems, len(wantWell))
			}
		})
	}
}

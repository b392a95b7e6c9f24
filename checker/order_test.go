package checker

import (
	"reflect"
	"testing"

	"github.com/lockstorm/lockstorm/history"
)

// TestOutOfOrderHistoryJudgedAsSorted: the pass checks the order as it
// reads and starts again on a sorted copy at the first entry out of order,
// so a history with entries swapped is judged as the ordered one, whether
// the swap is near its start, in its middle or at its end.
func TestOutOfOrderHistoryJudgedAsSorted(t *testing.T) {
	for _, viol := range []bool{false, true} {
		h := history.Synthetic(history.SynthConfig{Ops: 5000, Keys: 3, Unknown: 0.05, Violation: viol, Seed: 7})
		want := Check(h, history.Options{})
		for _, at := range []int{1, len(h) / 2, len(h) - 2} {
			i := at
			for h[i].Time == h[i+1].Time {
				i-- // toward the start: the final reads share one time
			}
			swapped := append(history.History(nil), h...)
			swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
			if ordered(swapped) {
				t.Fatalf("swap at %d left the history ordered", i)
			}
			if got := Check(swapped, history.Options{}); !reflect.DeepEqual(got, want) {
				t.Errorf("violation %v, swap at %d: %s (%s), want %s (%s)", viol, i, got.Verdict, got.Reason, want.Verdict, want.Reason)
			}
			if got, want := Holds(swapped), Holds(h); !reflect.DeepEqual(got, want) {
				t.Errorf("violation %v, swap at %d: %d holds differ from the ordered history's %d", viol, i, len(got), len(want))
			}
		}
	}
}

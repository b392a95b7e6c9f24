package history

import (
	"reflect"
	"testing"
)

// TestValidateLearnsRunnerAndOrderAsItWalks: validate guesses from the
// first and last entries whether the history is a runner's and walks it as
// ordered, starting again when an entry says otherwise; its result is the
// walk's with both facts known from the start.
func TestValidateLearnsRunnerAndOrderAsItWalks(t *testing.T) {
	base := Synthetic(SynthConfig{Ops: 400, Keys: 2, Unknown: 0.05, Seed: 3})
	meta := Op{Type: Ok, Process: FinalProcess, F: FMeta, Meta: &Meta{Identity: Identity{Scenario: "x"}}}
	end := Op{Type: Ok, Process: FinalProcess, F: FEnd}
	with := func(f func(h History) History) History {
		return f(append(History(nil), base...))
	}
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
			well, problems, sorted := Validate(p)
			if sorted != wantSorted || !reflect.DeepEqual(problems, wantProblems) || len(well) != len(wantWell) {
				t.Errorf("validate: sorted %v, %d problems, %d well-formed; want %v, %d (%v), %d",
					sorted, len(problems), len(well), wantSorted, len(wantProblems), wantProblems, len(wantWell))
			}
		})
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

// ordered says h is ordered by time.
func ordered(h History) bool {
	for i := 1; i < len(h); i++ {
		if h[i].Time < h[i-1].Time {
			return false
		}
	}
	return true
}

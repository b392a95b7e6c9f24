package liveness

import (
	"slices"
	"testing"
)

// TestMergeAndMinus: Merge joins what overlaps or touches, in order;
// AppendMinus keeps what no cut covers; Covered counts the covered part.
func TestMergeAndMinus(t *testing.T) {
	got := Merge([]Interval{{8, 9}, {1, 3}, {3, 5}, {2, 4}, {10, 12}, {11, 11}})
	if want := []Interval{{1, 5}, {8, 9}, {10, 12}}; !slices.Equal(got, want) {
		t.Errorf("Merge: %v, want %v", got, want)
	}
	got = AppendMinus(nil, Interval{0, 20}, []Interval{{-5, 2}, {4, 6}, {5, 8}, {19, 30}})
	if want := []Interval{{2, 4}, {8, 19}}; !slices.Equal(got, want) {
		t.Errorf("AppendMinus: %v, want %v", got, want)
	}
	if got := Covered([]Interval{{0, 4}, {6, 10}}, 2, 8); got != 4 {
		t.Errorf("Covered: %d, want 4", got)
	}
	if n, maxMs, totalMs := Figures([]Interval{{0, 2e6}, {5e6, 6e6}}); n != 2 || maxMs != 2 || totalMs != 3 {
		t.Errorf("Figures: %d, %v, %v", n, maxMs, totalMs)
	}
	if p := Percentile([]int64{1, 2, 3, 4}, 0.5); p != 2 {
		t.Errorf("Percentile: %d, want 2", p)
	}
}

// TestStarvation: a key wanted while no hold is open is starved from the
// want (or the last hold's end) to the next grant or the end, net of the
// excused time; FirstOver is the first interval whose net passes the bound.
func TestStarvation(t *testing.T) {
	// A hold [0, 10]; a want from 5 to 40, granted at 40 (hold [40, 50]);
	// a want from 60 never granted up to the end at 100.
	s := Streams{WantFrom: []int64{5, 60}, WantTo: []int64{40, 100}, HoldFrom: []int64{0, 40}, HoldTo: []int64{10, 50}}
	r := Starvation(s, 100, 35, []Interval{{15, 25}})
	want := Starved{Longest: 40, From: 60, Net: 40, NetStall: 0, NetFrom: 60, FirstOver: 60}
	if r != want {
		t.Errorf("Starvation: %+v, want %+v", r, want)
	}
	if r := Starvation(Streams{}, 100, 35, nil); r != (Starved{FirstOver: -1}) {
		t.Errorf("no wants: %+v", r)
	}
}

func TestIntersect(t *testing.T) {
	a := []Interval{{0, 10}, {20, 30}, {40, 50}}
	b := []Interval{{5, 25}, {30, 45}}
	got := Intersect(a, b)
	want := []Interval{{5, 10}, {20, 25}, {40, 45}}
	if !slices.Equal(got, want) {
		t.Errorf("Intersect = %v, want %v", got, want)
	}
	if got := Intersect(a, nil); len(got) != 0 {
		t.Errorf("Intersect with nothing = %v, want none", got)
	}
}

package ids

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// TestMapIsAMap: Map answers what a Go map answers, for dense ids, ids
// past its slice and negative ones, through sets, deletes and Each.
func TestMapIsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var m Map[int]
	want := map[int]int{}
	for k := range 20000 {
		id := rng.IntN(200) - 20
		if rng.IntN(8) == 0 {
			id = denseProcesses + rng.IntN(5) // beyond the slice
		}
		switch rng.IntN(3) {
		case 0, 1:
			m.Set(id, k)
			want[id] = k
		default:
			m.Del(id)
			delete(want, id)
		}
		v, ok := m.Get(id)
		if w, wok := want[id]; v != w || ok != wok {
			t.Fatalf("Get(%d) = %d, %v; want %d, %v", id, v, ok, w, wok)
		}
	}
	got := map[int]int{}
	m.Each(func(id, v int) { got[id] = v })
	if !maps.Equal(got, want) {
		t.Fatalf("Each saw %d ids, want %d", len(got), len(want))
	}
}

// TestPositions: the first use of an index, in its slice or past it.
func TestPositions(t *testing.T) {
	p := NewPositions(4)
	for _, idx := range []int{0, 3, 4, -1} {
		if _, ok := p.Get(idx); ok {
			t.Fatalf("index %d used before any Set", idx)
		}
		p.Set(idx, idx+10)
		if i, ok := p.Get(idx); !ok || i != idx+10 {
			t.Fatalf("Get(%d) = %d, %v", idx, i, ok)
		}
	}
}

package liveness

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCursorAgreesWithBinarySearch: the liveness cursor answers what a
// binary search answers, for times that rise, fall back, jump and repeat.
func TestCursorAgreesWithBinarySearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 9, 100, 3000} {
		ts := make([]int64, n)
		for i := range ts {
			ts[i] = rng.Int64N(int64(n)*3 + 1) // duplicates too
		}
		slices.Sort(ts)
		c := NewCursor(ts)
		q := int64(-2)
		for k := 0; k < 4*n+20; k++ {
			switch r := rng.IntN(10); {
			case r < 6:
				q += rng.Int64N(4) // mostly rising, by small steps
			case r < 8:
				q = rng.Int64N(int64(n)*3+4) - 2 // anywhere
			default: // the same time again
			}
			want, _ := slices.BinarySearch(ts, q)
			if got := c.AtOrAfter(q); got != want {
				t.Fatalf("n %d: AtOrAfter(%d) = %d, want %d", n, q, got, want)
			}
		}
	}
}

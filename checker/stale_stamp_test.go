package checker

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
)

// TestOverlapOnlyThroughStaleStamp: c1 holds lock:0 from 501 ms to 505 ms,
// c2 is granted it at 503 ms: an overlap no lateness inside either hold or
// its acquire explains. c3's acquire of the key was in flight from 0 ms to
// 502 ms and lost; the harness stalls end by 490 ms, before c1 and c2 ask. With a lock whose values are its clients' stamps and a
// 200 ms lease, c3 may have computed its stamp before a stall and written
// it after, already past for c2 (foreign-unlock-random × getset-py, seeds
// 10, 11 and 18 at load 12-24): the overlap needs c3 late for the 196 ms
// c1's lease had left after its 4 ms hold, with c3's own time in that
// stretch under 196 ms. Nothing else excuses it: a stall too short, spread
// too thin, of a client with no acquire in flight, over before an acquire
// that ended in it, or a lock whose server expires the key.
func TestOverlapOnlyThroughStaleStamp(t *testing.T) {
	stamps := history.Options{StampTokens: true, StampLease: 200 * time.Millisecond}
	noLease := history.Options{StampTokens: true}
	server := history.Options{StampLease: 200 * time.Millisecond}
	for _, tc := range []struct {
		name    string
		late    []late
		c3Done  float64 // c3's acquire fails then
		o       history.Options
		verdict string
		reason  string
	}{
		{"no stall: unsafe", nil, 502, stamps, Unsafe, "c1 and c2 both held"},
		{"a 250 ms stall in c3's acquire: inconclusive", []late{{-1, 490, 250}}, 502, stamps, Inconclusive,
			"but none without the harness's stalls inside the holds or a stamp written after the harness was late for the rest of the 200ms lease since it was computed (1 pairs)"},
		{"c3's own 250 ms lag: inconclusive", []late{{3, 490, 250}}, 502, stamps, Inconclusive, "(1 pairs)"},
		{"the same stall, no lease known: unsafe", []late{{-1, 490, 250}}, 502, noLease, Unsafe, "c1 and c2 both held"},
		{"the same stall, server expiry: unsafe", []late{{-1, 490, 250}}, 502, server, Unsafe, "c1 and c2 both held"},
		{"a 150 ms stall: unsafe", []late{{-1, 490, 150}}, 502, stamps, Unsafe, "c1 and c2 both held"},
		{"c4's lag, no acquire in flight: unsafe", []late{{4, 490, 250}}, 502, stamps, Unsafe, "c1 and c2 both held"},
		// Written 240 ms after the stall: c3's own time made it stale.
		{"the stall long before the grant: unsafe", []late{{-1, 260, 250}}, 502, stamps, Unsafe, "c1 and c2 both held"},
		{"c3 gave up inside the stall: unsafe", []late{{-1, 490, 250}}, 400, stamps, Unsafe, "c1 and c2 both held"},
		// 100 + 100 ms with c3's own 150 ms between: the stamp was 350 ms
		// old, 150 ms without the stalls: they made it stale.
		{"two stalls, 150 ms apart: inconclusive", []late{{-1, 240, 100}, {-1, 490, 100}}, 502, stamps, Inconclusive, "(1 pairs)"},
		// The same with 200 ms between: 200 ms of c3's own would have
		// made it stale without them.
		{"two stalls, 200 ms apart: unsafe", []late{{-1, 190, 100}, {-1, 490, 100}}, 502, stamps, Unsafe, "c1 and c2 both held"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			b.op(500, 501, history.Ok, 1, 1, history.FAcquire, k0, val("t1"))
			b.op(505, 506, history.Ok, 1, 1, history.FRelease, k0, val("t1"))
			b.op(502, 503, history.Ok, 2, 2, history.FAcquire, k0, val("t2"))
			b.op(507, 508, history.Ok, 2, 2, history.FRelease, k0, val("t2"))
			b.op(0, tc.c3Done, history.Fail, 3, 3, history.FAcquire, k0)
			for _, l := range tc.late {
				l.add(&b)
			}
			r := Check(b.sorted(), tc.o)
			if r.Verdict != tc.verdict || !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("verdict %s: %s\nwant %s: ...%s...", r.Verdict, r.Reason, tc.verdict, tc.reason)
			}
			if r.Overlaps != 1 {
				t.Errorf("%d overlaps, want 1 (a stale stamp changes the verdict, not the overlap)", r.Overlaps)
			}
		})
	}
}

// TestStaleStampPairsPartition: with a stamp lease the overlapping pairs
// are enumerated one by one (withoutStaleStamps) instead of counted by the
// overlap pass; what is left plus what stale stamps excuse must be the
// pairs the count finds without a lease, on histories with vague,
// shortened, zero-length and untouched holds.
func TestStaleStampPairsPartition(t *testing.T) {
	pairs, stale := 0, 0
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var b builder
		at := 0.0
		for p := 0; p < 40; p++ {
			c := rng.IntN(6)
			inv := at + rng.Float64()*5
			ok := inv + rng.Float64()*30
			rel := ok + rng.Float64()*float64(rng.IntN(3))*4 // zero-length now and then
			b.op(inv, ok, history.Ok, 100+p, c, history.FAcquire, k0, val(fmt.Sprint("t", p)))
			b.op(rel, rel+0.5, history.Ok, 100+p, c, history.FRelease, k0, val(fmt.Sprint("t", p)))
			if rng.IntN(4) == 0 {
				b.op(inv, inv+rng.Float64()*60, history.Fail, 200+p, 6+c, history.FAcquire, k0)
			}
			at += rng.Float64() * 6
		}
		for s := 0; s < 8; s++ {
			late{rng.IntN(13) - 1, rng.Float64() * 300, 10 + rng.Float64()*60}.add(&b)
		}
		h := b.sorted()
		plain := Check(h, history.Options{StampTokens: true})
		leased := Check(h, history.Options{StampTokens: true, StampLease: 50 * time.Millisecond})
		if got, want := leased.OverlapsWithoutStalls+leased.OverlapsStaleStamps, plain.OverlapsWithoutStalls; got != want {
			t.Fatalf("seed %d: %d left + %d stale = %d pairs with a lease, %d without", seed,
				leased.OverlapsWithoutStalls, leased.OverlapsStaleStamps, got, want)
		}
		pairs, stale = pairs+plain.OverlapsWithoutStalls, stale+leased.OverlapsStaleStamps
	}
	if pairs == 0 || stale == 0 || stale == pairs {
		t.Errorf("%d pairs, %d of them stale: the histories test nothing", pairs, stale)
	}
	t.Logf("%d pairs, %d excused by stale stamps", pairs, stale)
}

package checker

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockstorm/lockstorm/checker/mutex"
	"github.com/lockstorm/lockstorm/history"
)

// unsplit checks the whole history with porcupine, intervals as recorded.
func unsplit(t testing.TB, h history.History) string {
	t.Helper()
	switch porcupine.CheckOperationsTimeout(mutex.Model(), MutexOperations(h), 20*time.Second) {
	case porcupine.Ok:
		return linOK
	case porcupine.Illegal:
		return linIllegal
	}
	t.Fatalf("unsplit porcupine timed out")
	return ""
}

// pieceSize is a setting of the split's sizes.
type pieceSize struct{ min, max, unknowns int }

// withPieces runs f with other piece sizes.
func withPieces(ps pieceSize, f func()) {
	oldMin, oldMax, oldU := minPieceOps, maxPieceOps, maxOverlapUnknowns
	minPieceOps, maxPieceOps, maxOverlapUnknowns = ps.min, ps.max, ps.unknowns
	defer func() { minPieceOps, maxPieceOps, maxOverlapUnknowns = oldMin, oldMax, oldU }()
	f()
}

// pieceSizes are the settings the split is tested under: the default, a cut
// at every cluster, and every overlapping piece reduced to its first pair
// without unknown acquires.
var pieceSizes = []pieceSize{{64, 400, 8}, {1, 400, 8}, {1, 2, 0}}

// assertSplitAgrees checks that the split check, the unsplit check and the
// overlap pass say the same about h, under every piece size.
func assertSplitAgrees(t *testing.T, h history.History) {
	t.Helper()
	whole := unsplit(t, h)
	for _, ps := range pieceSizes {
		withPieces(ps, func() {
			r := Check(h, history.Options{})
			if r.Linearizable != whole {
				t.Errorf("pieces %v: split says %s, unsplit %s", ps, r.Linearizable, whole)
			}
			if (r.Overlaps > 0) != (whole == linIllegal) {
				t.Errorf("pieces %v: %d overlaps, unsplit porcupine %s", ps, r.Overlaps, whole)
			}
			if r.Disagreements != 0 {
				t.Errorf("pieces %v: %d pieces where porcupine and the overlap pass disagree", ps, r.Disagreements)
			}
		})
	}
}

// randomHistory makes a small history of clients that misbehave at random:
// overlapping grants, unknown outcomes (the client continues under a new
// process), reentrant acquires, crashes, failed releases, ties in time.
func randomHistory(seed uint64, overlapP float64, maxUnknown int) history.History {
	rng := rand.New(rand.NewPCG(seed, 7))
	keys := []string{"lock:0", "lock:1"}[:1+rng.IntN(2)]
	type client struct {
		id, pid int
		busy    *history.Op // in flight
		holds   map[string]int
		dead    bool
	}
	nClients := 2 + rng.IntN(3)
	cls := make([]*client, nClients)
	for i := range cls {
		cls[i] = &client{id: i, pid: i, holds: map[string]int{}}
	}
	nextPID := nClients
	held := map[string]int{} // believed holders per key
	var h history.History
	var now int64
	unknowns := 0
	add := func(op history.Op) *history.Op {
		op.Time = now
		op.Index = len(h)
		h = append(h, op)
		return &h[len(h)-1]
	}
	steps := 12 + rng.IntN(40)
	for s := 0; s < steps; s++ {
		now += int64(rng.IntN(3)) // 0: a tie
		c := cls[rng.IntN(len(cls))]
		if c.dead {
			continue
		}
		base := history.Op{Process: c.pid, Client: c.id}
		if c.busy == nil {
			if rng.IntN(30) == 0 {
				o := base
				o.Type, o.F = history.Ok, history.FCrash
				add(o)
				c.dead = true
				for k, n := range c.holds {
					if n > 0 {
						held[k]--
					}
				}
				continue
			}
			var heldKeys []string
			for k, n := range c.holds {
				if n > 0 {
					heldKeys = append(heldKeys, k)
				}
			}
			o := base
			o.Type = history.Invoke
			switch r := rng.IntN(10); {
			case len(heldKeys) > 0 && r < 4:
				o.F, o.Key = history.FRelease, heldKeys[rng.IntN(len(heldKeys))]
				if c.holds[o.Key] == 1 {
					held[o.Key]--
				}
				c.holds[o.Key]--
			case len(heldKeys) > 0 && r < 6:
				o.F, o.Key, o.N = history.FWrite, heldKeys[rng.IntN(len(heldKeys))], int64(rng.IntN(5))
			default:
				o.F, o.Key = history.FAcquire, keys[rng.IntN(len(keys))]
			}
			op := add(o)
			c.busy = &history.Op{F: op.F, Key: op.Key, N: op.N}
			continue
		}
		if c.busy.F == history.FAcquire && rng.IntN(3) == 0 {
			o := base
			o.Type, o.F, o.Value = history.Ok, history.FStep, fmt.Sprintf("alg/step%d", rng.IntN(3))
			add(o)
			continue
		}
		o := base
		o.F, o.Key, o.N = c.busy.F, c.busy.Key, c.busy.N
		r := rng.Float64()
		switch {
		case r < 0.12 && unknowns < maxUnknown:
			o.Type = history.Info
			unknowns++
		case c.busy.F == history.FAcquire:
			reentrant := c.holds[o.Key] > 0
			free := held[o.Key] == 0
			if reentrant || free && r < 0.8 || !free && r < overlapP {
				o.Type = history.Ok
				if !reentrant {
					held[o.Key]++
				}
				c.holds[o.Key]++
			} else {
				o.Type = history.Fail
			}
		case r < 0.85:
			o.Type = history.Ok
		default:
			o.Type = history.Fail
		}
		add(o)
		c.busy = nil
		if o.Type == history.Info {
			c.pid, nextPID = nextPID, nextPID+1
		}
	}
	if rng.IntN(2) == 0 {
		for _, k := range keys {
			now++
			add(history.Op{Type: history.Invoke, Process: history.FinalProcess, Client: -1, F: history.FRead, Key: k})
			add(history.Op{Type: history.Ok, Process: history.FinalProcess, Client: -1, F: history.FRead, Key: k, N: int64(rng.IntN(4))})
		}
	}
	return h
}

// TestSplitMatchesUnsplit: on many small random histories, with and without
// overlaps and unknown outcomes, the split check, the unsplit check and the
// overlap pass agree under every piece size.
func TestSplitMatchesUnsplit(t *testing.T) {
	cases := []struct {
		name       string
		overlapP   float64
		maxUnknown int
		n          int
	}{
		{"clean", 0, 0, 1000},
		{"unknowns", 0, 4, 1000},
		{"overlaps", 0.3, 0, 1000},
		{"overlaps+unknowns", 0.3, 4, 1500},
		{"many overlaps", 0.9, 2, 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			illegal := 0
			for i := range tc.n {
				seed := uint64(i)*7919 + uint64(len(tc.name))
				h := randomHistory(seed, tc.overlapP, tc.maxUnknown)
				whole := unsplit(t, h)
				if whole == linIllegal {
					illegal++
				}
				for _, ps := range pieceSizes {
					withPieces(ps, func() {
						r := Check(h, history.Options{})
						if r.Linearizable != whole || (r.Overlaps > 0) != (whole == linIllegal) || r.Disagreements != 0 {
							t.Fatalf("seed %d, pieces %v: split %s, unsplit %s, overlaps %d, disagreements %d",
								seed, ps, r.Linearizable, whole, r.Overlaps, r.Disagreements)
						}
					})
				}
			}
			if tc.overlapP > 0 && illegal == 0 {
				t.Errorf("no history had an overlap: the generator is broken")
			}
			if tc.overlapP == 0 && illegal > 0 {
				t.Errorf("%d histories without injected overlaps were illegal", illegal)
			}
			t.Logf("%d of %d histories illegal", illegal, tc.n)
		})
	}
}

// TestSplitSynthetic: synthetic contended histories (a waiting acquire is
// almost always in flight) still split into many pieces, and the split
// verdict matches the unsplit one.
func TestSplitSynthetic(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  history.SynthConfig
		want string
	}{
		{"clean", history.SynthConfig{Ops: 3000, Keys: 2, Unknown: 0.01, Seed: 3}, linOK},
		{"violation", history.SynthConfig{Ops: 3000, Keys: 1, Unknown: 0.01, Violation: true, Seed: 4}, linIllegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := history.Synthetic(tc.cfg)
			r := Check(h, history.Options{})
			expect(t, r.Linearizable, tc.want, "split")
			expect(t, unsplit(t, h), tc.want, "unsplit")
			expect(t, r.Disagreements, 0, "disagreements")
			if r.Pieces < 10 {
				t.Errorf("only %d pieces", r.Pieces)
			}
		})
	}
}

// TestPiecesCover: every hold and every unknown acquire of a key is in
// exactly one piece, narrowed intervals stay valid, and pieces are ordered
// without overlap of their cut windows.
func TestPiecesCover(t *testing.T) {
	for i := range 200 {
		h := randomHistory(uint64(i), 0.3, 4)
		for _, ps := range pieceSizes {
			withPieces(ps, func() {
				a := analyze(h)
				for k, kd := range a.keys {
					ov := overlapPass(kd)
					nextHold, nextUnk := 0, 0
					last := int64(-1 << 63)
					splitKey(k, kd, &ov, func(p piece) {
						if p.lo != nextHold || p.ulo != nextUnk || p.hi < p.lo || p.uhi < p.ulo {
							t.Fatalf("seed %d: piece %+v after holds %d unknowns %d", i, p, nextHold, nextUnk)
						}
						if p.cutBefore != last || p.cutAfter < p.cutBefore {
							t.Fatalf("seed %d: cuts %d..%d after %d", i, p.cutBefore, p.cutAfter, last)
						}
						for j := p.lo; j < p.hi; j++ {
							if hr := kd.holds[j]; hr.From < p.cutBefore || hr.To > p.cutAfter {
								t.Fatalf("seed %d: hold [%d,%d] outside cuts [%d,%d]", i, hr.From, hr.To, p.cutBefore, p.cutAfter)
							}
						}
						for _, op := range pieceOps(kd, p, nil) {
							if op.Call > op.Return {
								t.Fatalf("seed %d: narrowed op %+v has call after return", i, op)
							}
						}
						nextHold, nextUnk, last = p.hi, p.uhi, p.cutAfter
					})
					if nextHold != len(kd.holds) || nextUnk != len(kd.unknowns) {
						t.Fatalf("seed %d: pieces cover %d/%d holds, %d/%d unknowns", i, nextHold, len(kd.holds), nextUnk, len(kd.unknowns))
					}
				}
			})
		}
	}
}

// TestOverlapWithManyUnknowns: unknown acquires during an overlap would make
// porcupine explore 2^u placements; the piece keeps only a few of them.
func TestOverlapWithManyUnknowns(t *testing.T) {
	b := &builder{}
	b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0)
	b.op(2, 3, history.Ok, 2, 2, history.FAcquire, k0)
	for i := range 40 {
		b.op(1.5+float64(i)*0.01, 1.6+float64(i)*0.01, history.Info, 100+i, 100+i, history.FAcquire, k0)
	}
	b.op(9, 10, history.Ok, 1, 1, history.FRelease, k0)
	b.op(9, 10, history.Ok, 2, 2, history.FRelease, k0)
	start := time.Now()
	h := b.sorted()
	r := Check(h, history.Options{Timeout: 20 * time.Second})
	expect(t, r.Linearizable, linIllegal, "linearizable")
	expect(t, r.Disagreements, 0, "disagreements")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s", d)
	}
	var buf bytes.Buffer
	if err := Visualize(h, history.Options{}, &buf); err != nil || !strings.Contains(buf.String(), "unknown") {
		t.Errorf("Visualize with unknown acquires: %v", err)
	}
}

// TestReplayMatchesPorcupine: on many small random histories, linearizable
// and not, under every piece size, the sequential replay of a piece never
// says linearizable where porcupine says otherwise (also on the pieces with
// an overlap, which Check never replays), and it finds the linearization of
// every piece without an overlap that porcupine accepts, so porcupine's
// search is left only to the pieces with an overlap.
func TestReplayMatchesPorcupine(t *testing.T) {
	model := mutex.Model()
	model.Partition = nil
	replayed, illegal := 0, 0
	for i := range 1500 {
		h := randomHistory(uint64(i)*104729+3, []float64{0, 0.3, 0.9}[i%3], i%5)
		for _, ps := range pieceSizes {
			withPieces(ps, func() {
				a := analyze(h)
				for k, kd := range a.keys {
					ov := overlapPass(kd)
					splitKey(k, kd, &ov, func(p piece) {
						fast := replay(kd, p)
						cr := porcupine.CheckOperationsTimeout(model, pieceOps(kd, p, nil), 20*time.Second)
						if cr == porcupine.Unknown {
							t.Fatalf("history %d, pieces %v: porcupine timed out on piece %+v", i, ps, p)
						}
						if fast && cr != porcupine.Ok {
							t.Fatalf("history %d, pieces %v: replay accepts piece %+v, porcupine says illegal", i, ps, p)
						}
						if !p.overlap && cr == porcupine.Ok && !fast {
							t.Fatalf("history %d, pieces %v: replay misses the linearization of piece %+v", i, ps, p)
						}
						if fast {
							replayed++
						}
						if cr == porcupine.Illegal {
							illegal++
						}
					})
				}
			})
		}
	}
	if replayed == 0 || illegal == 0 {
		t.Fatalf("%d pieces replayed, %d illegal: the generator is broken", replayed, illegal)
	}
	t.Logf("%d pieces replayed, %d illegal", replayed, illegal)
}

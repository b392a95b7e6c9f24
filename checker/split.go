package checker

import (
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockstorm/lockstorm/checker/mutex"
)

// Splitting. Porcupine's search is exponential in the worst case and a
// violation makes it explore everything before it gives up: one hot key
// with 100k operations and one violation exhausted 24 GB. So each key's
// operations are cut into pieces at instants where the lock is free by
// every belief, and the pieces are checked on their own, in parallel.
//
// A cut is an instant t that no hold spans: every hold has To <= t or
// From >= t. Operations that straddle t are narrowed to it — an acquire of
// a later hold gets the call max(invoke, t) <= From, a release of an
// earlier hold the return min(return, t) >= To — which by the theorem in
// checker/mutex (only From and To decide) changes no verdict. After narrowing,
// every operation of the earlier piece returns no later than every
// operation of the later piece is called, and every hold of the earlier
// piece is released in it, so a linearization of the whole is one of the
// earlier piece (ending free) followed by one of the later piece (starting
// free), and conversely: the whole is linearizable iff every piece is.
// This is the quiescence the design asks for, made reachable on a hot key
// where some acquire is always waiting: a waiting acquire is in flight, but
// until its ok it cannot have taken the lock in the belief model, so its
// call may move up to the cut.
//
// Unknown acquires have an open return (infinity) and are in flight forever;
// counted as in flight they would forbid every later cut. They are no-ops in
// every state, so a linearization may place one anywhere after its call —
// including inside the piece its call falls in — and removing one changes
// no verdict. Each is therefore checked in the piece its call falls in (as
// the open operation it is) and is absent from the pieces after it. Left in
// the later pieces they would only double porcupine's work per unknown.
//
// In a piece without an overlap porcupine's search never backtracks (each
// unknown acquire is a no-op it linearizes at once), but in a piece with an
// overlap it explores every placement of every unknown acquire before it
// gives up: about 2^u states for u of them. Since removing a no-op changes
// no verdict, a piece with an overlap keeps only its first
// maxOverlapUnknowns unknown acquires.
//
// A piece without an overlap is first replayed (replay): if it is
// linearizable, one linearization is known in advance, every acquire at its
// hold's From and every release at its To in the order of the holds, so
// that order is stepped through the model and each point checked against
// its operation's interval. A replay that succeeds is a linearization, the
// proof porcupine's Ok stands on, found without its search or the
// operations it builds; one that fails proves nothing and the piece goes to
// porcupine as before. So no verdict depends on the replay.
//
// Pieces without any overlap are merged up to minPieceOps operations so
// that porcupine is not called once per hold; a piece with an overlap is
// checked alone. A piece with an overlap and more than maxPieceOps
// operations (a hold that runs to the end of the history under many others)
// is reduced to the first overlapping pair and the unknown acquires called
// during it: a subhistory made of whole holds that is not linearizable
// proves the whole is not, and the pair is enough to show it.

// Piece sizes, in porcupine operations (variables so that tests can force
// a cut at every cluster and the reduction of every overlapping piece).
var (
	minPieceOps        = 64
	maxPieceOps        = 400
	maxOverlapUnknowns = 8
)

// checkPiece checks one piece (a variable so that tests can time it out).
var checkPiece = porcupine.CheckOperationsTimeout

// replayPiece is replay (a variable so that tests can send every piece to
// porcupine).
var replayPiece = replay

// piece is one contiguous run of a key's holds checked on its own.
type piece struct {
	key                 int
	lo, hi              int // holds [lo, hi)
	ulo, uhi            int // unknown acquires [ulo, uhi)
	cutBefore, cutAfter int64
	overlap             bool // the overlap pass found an overlap in it
}

// splitKey calls emit with the pieces of one key in time order.
func splitKey(k int, kd *keyData, ov *keyOverlaps, emit func(piece)) {
	hs, us := kd.holds, kd.unknowns
	cur := piece{key: k, cutBefore: math.MinInt64}
	u := 0
	flush := func(next int, cut int64) {
		cur.hi = next
		cur.ulo = u
		for u < len(us) && us[u].invoke < cut {
			u++
		}
		cur.uhi = u
		cur.cutAfter = cut
		if cur.hi > cur.lo || cur.uhi > cur.ulo {
			emit(cur)
		}
		cur = piece{key: k, lo: next, cutBefore: cut}
	}
	for j := 0; j < len(hs); {
		// one cluster: holds chained by strict overlap of (From, To)
		end, maxTo, flagged := j+1, hs[j].To, ov.flagged != nil && ov.flagged[j]
		for end < len(hs) && hs[end].From < maxTo {
			maxTo = max(maxTo, hs[end].To)
			flagged = flagged || ov.flagged != nil && ov.flagged[end]
			end++
		}
		if flagged && j > cur.lo {
			flush(j, hs[j].From) // close the clean run before it
		}
		if flagged {
			cur.overlap = true
			flush(end, maxTo)
		} else if 2*(end-cur.lo) >= minPieceOps {
			flush(end, maxTo)
		}
		j = end
	}
	flush(len(hs), infinity)
}

// pieceOps builds porcupine's operations for one piece; client numbers
// processes for a visualization (nil: none).
func pieceOps(kd *keyData, p piece, client func(int) int) []porcupine.Operation {
	ob := newOpsBuilder(0, client)
	ob.piece(kd, p)
	return ob.ops
}

// piece builds the operations of one piece in b, reusing its arrays.
func (b *opsBuilder) piece(kd *keyData, p piece) {
	lo, hi := p.lo, p.hi
	if p.overlap && 2*(hi-lo)+(p.uhi-p.ulo) > maxPieceOps {
		if a, bi, ok := firstPair(kd.holds[lo:hi]); ok {
			a, bi = a+lo, bi+lo
			ha, hb := &kd.holds[a], &kd.holds[bi]
			wlo, whi := min(ha.invoke, hb.invoke), max(ha.To, hb.To)
			b.reset(4 + maxOverlapUnknowns)
			for _, i := range []int{a, bi} {
				hr := &kd.holds[i]
				b.hold(hr, max(hr.invoke, p.cutBefore), min(max(hr.relDone, hr.To), p.cutAfter))
			}
			for i, n := p.ulo, 0; i < p.uhi && n < maxOverlapUnknowns; i++ {
				if u := &kd.unknowns[i]; u.invoke >= wlo && u.invoke <= whi {
					b.unknown(u, kd.name)
					n++
				}
			}
			return
		}
	}
	uhi := p.uhi
	if p.overlap {
		uhi = min(uhi, p.ulo+maxOverlapUnknowns)
	}
	b.reset(2*(hi-lo) + (uhi - p.ulo))
	for i := lo; i < hi; i++ {
		hr := &kd.holds[i]
		b.hold(hr, max(hr.invoke, p.cutBefore), min(max(hr.relDone, hr.To), p.cutAfter))
	}
	for i := p.ulo; i < uhi; i++ {
		b.unknown(&kd.unknowns[i], kd.name)
	}
}

// replay steps the mutex model through the one linearization a piece
// without an overlap has if it has any: its holds in order of (From, To),
// each acquire at its hold's From and each release at its To, on the
// intervals piece would give porcupine (narrowed to the cuts). The unknown
// acquires are no-ops whose return is open: each is placed at its call and
// needs no check. True means the order is a linearization of the piece
// (what porcupine answers Ok on); false only that this order is not one.
func replay(kd *keyData, p piece) bool {
	state, last := mutex.Free, int64(math.MinInt64)
	step := func(hr *holdRec) bool {
		call, ret := max(hr.invoke, p.cutBefore), min(max(hr.relDone, hr.To), p.cutAfter)
		// The acquire [call, From] at From, then the release [To, ret] at
		// To, no earlier than the point before.
		if hr.From < last || call > hr.From || hr.From > hr.To || hr.To > ret {
			return false
		}
		ok, s := mutex.Step(state, mutex.Acquire, hr.Process)
		if !ok {
			return false
		}
		if ok, state = mutex.Step(s, mutex.Release, hr.Process); !ok {
			return false
		}
		last = hr.To
		return true
	}
	// The holds are in order of From only: among those beginning at the
	// same instant the ones that end there too come first.
	for i := p.lo; i < p.hi; {
		j := i + 1
		for j < p.hi && kd.holds[j].From == kd.holds[i].From {
			j++
		}
		for _, zero := range [2]bool{true, false} {
			for g := i; g < j; g++ {
				if hr := &kd.holds[g]; (hr.To == hr.From) == zero && !step(hr) {
					return false
				}
			}
		}
		i = j
	}
	return true
}

// firstPair finds the first overlapping pair of holds sorted by From.
func firstPair(hs []holdRec) (int, int, bool) {
	for j := 1; j < len(hs); j++ {
		for i := 0; i < j; i++ {
			if overlaps(&hs[i].Hold, &hs[j].Hold) {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}

// linResult is what porcupine said over all pieces.
type linResult struct {
	pieces, illegal, timedOut int
	disagree                  int // pieces where porcupine and the overlap pass differ
}

// checkPieces checks every key's pieces with porcupine on a bounded worker
// pool (GOMAXPROCS). Pieces are produced lazily and each worker builds its
// piece's operations only while checking it, so memory holds the per-key
// holds plus one piece per worker.
func checkPieces(a *analysis, ovs []keyOverlaps, timeout time.Duration) linResult {
	model := mutex.Model()
	model.Partition = nil // a piece is one key
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan piece, 4*workers)
	var mu sync.Mutex
	var res linResult
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r linResult
			ob := newOpsBuilder(0, nil) // reused piece after piece
			for p := range jobs {
				if !p.overlap && replayPiece(a.keys[p.key], p) {
					r.pieces++
					continue
				}
				ob.piece(a.keys[p.key], p)
				cr := checkPiece(model, ob.ops, timeout)
				if cr == porcupine.Unknown {
					// Porcupine returns on its timeout without waiting
					// for its search, which may still read the inputs.
					ob = newOpsBuilder(0, nil)
				}
				r.pieces++
				switch cr {
				case porcupine.Illegal:
					r.illegal++
				case porcupine.Unknown:
					r.timedOut++
				}
				if cr != porcupine.Unknown && (cr == porcupine.Illegal) != p.overlap {
					r.disagree++
				}
			}
			mu.Lock()
			res.pieces += r.pieces
			res.illegal += r.illegal
			res.timedOut += r.timedOut
			res.disagree += r.disagree
			mu.Unlock()
		}()
	}
	for k, kd := range a.keys {
		splitKey(k, kd, &ovs[k], func(p piece) { jobs <- p })
	}
	close(jobs)
	wg.Wait()
	return res
}

// mutexCheck is porcupine's verdict on the mutex model, piece by piece.
type mutexCheck struct{}

func (mutexCheck) name() string { return "mutual exclusion (porcupine)" }

func (mutexCheck) run(a *analysis) finding { return checkPieces(a, a.overlaps(), a.opts.Timeout) }

func (lin linResult) apply(r *Result) {
	r.Pieces, r.TimedOutPieces, r.Disagreements = lin.pieces, lin.timedOut, lin.disagree
	switch {
	case lin.illegal > 0:
		r.Linearizable = linIllegal
	case lin.timedOut > 0:
		r.Linearizable = linUnknown
	default:
		r.Linearizable = linOK
	}
}

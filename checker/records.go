package checker

import (
	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
)

// The records the pass (analyze.go) keeps per key and per process: what
// every check reads, the history's own entries aside.

// holdRec is a Hold with what the model and the liveness checks need besides.
type holdRec struct {
	Hold
	invoke  int64 // invoke time of the outermost acquire
	relDone int64 // completion of the release that ended the hold (ok or fail); To otherwise
	relOK   bool  // the hold ended with a release that completed ok
}

// extendFlight is one completed extend or renewal of a client: its key,
// flight and outcome.
type extendFlight struct {
	key          string
	invoke, done int64
	outcome      history.Type
}

// acqRec is one acquire operation: the liveness checks read its times
// and the needless-wait check its client. (Its process and outcome were
// kept too, never read: with the outcome a string, 48 bytes the collector
// had to scan per attempt.)
type acqRec struct {
	invoke, done int64 // done < 0: never completed
	client       int
}

// unknownAcq is an acquire whose outcome is unknown: an info completion, no
// completion at all, or an in-flight acquire of a crashed client.
type unknownAcq struct {
	process, client int
	invoke          int64
}

// writeRec is one completed write of the counter resource. Its outcome is
// a typeCode, so that the writes hold no pointer for the collector to scan.
type writeRec struct {
	process, client  int
	invoke, n, fence int64
	typ              uint8
}

// wantRec is one client's want of a key (see want), closed.
type wantRec struct {
	liveness.Interval
	client int
}

// keyData is everything the checks need about one key.
type keyData struct {
	name     string
	holds    []holdRec // in order of From
	unknowns []unknownAcq
	acquires []acqRec
	writes   []writeRec // in completion order
	wants    []wantRec  // per client: first attempt → grant (or giving up)
	hasFinal bool
	final    int64
	dupAt    int64 // time of the first duplicated fence, -1: none
	dups     int
	// fences are the fences granted, in order; fencesUp says each was
	// above the one before (then none was granted twice: countDupFences).
	fences   []grant
	fencesUp bool
}

// grant is one acquire ok with a fence.
type grant struct {
	fence   int64
	process int
	at      int64
}

// heldKey is a process's reentrant hold count on one key.
type heldKey struct {
	key   int
	count int
	hold  int // index in keyData.holds
}

// heldKeys are a process's holds, one per key. A process holds one key at
// a time, or a few: a slice searched in place of a map, whose inserts,
// deletes and one allocation per hold were a tenth of the pass.
type heldKeys []heldKey

// get is the hold on key k (nil: none), valid until the next add or del.
func (hs heldKeys) get(k int) *heldKey {
	for i := range hs {
		if hs[i].key == k {
			return &hs[i]
		}
	}
	return nil
}

// add starts a hold on key k (replacing any).
func (hs *heldKeys) add(k, hold int) {
	if h := hs.get(k); h != nil {
		*h = heldKey{k, 1, hold}
		return
	}
	*hs = append(*hs, heldKey{k, 1, hold})
}

// del ends the hold on key k.
func (hs *heldKeys) del(k int) {
	for i := range *hs {
		if (*hs)[i].key == k {
			last := len(*hs) - 1
			(*hs)[i] = (*hs)[last]
			*hs = (*hs)[:last]
			return
		}
	}
}

// curOp is a process's operation in flight.
type curOp struct {
	f       string
	key     int
	invoke  int64
	acq     int // index in keyData.acquires (acquire)
	relHold int // index in keyData.holds ended by this release, -1: none
	n       int64
	fence   int64
	at      int32 // position of the invoke in analysis.h
}

// releaseRef is a keyevents.Release as the pass keeps it: the positions of its
// invoke and completion in analysis.h. Only a history with the servers'
// events needs the records, and most have none: 250k records of 100 bytes
// each were a fifth of the pass's allocation on 1M entries.
type releaseRef struct {
	inv, done, client int32
}

// ownerRef is an acquire granted with a value: the position of its ok in
// analysis.h and its client. The owners map is built from them only when
// the false-success check needs it (see ownersOf).
type ownerRef struct{ at, client int32 }

type procState struct {
	id, client int
	lastKey    int     // the key of its last operation (-1: none)
	counts     *[2]int // its client's attempts and acquisitions (stats)
	perClient  map[int]*[2]int
	op         curOp
	busy       bool // op is in flight
	holds      heldKeys
	steps      []string
	crashed    bool
}

// stats is the client's attempts and acquisitions (analysis.perClient),
// looked up once per process.
func (p *procState) stats() *[2]int {
	if p.counts == nil {
		p.counts = p.perClient[p.client]
		if p.counts == nil {
			p.counts = new([2]int)
			p.perClient[p.client] = p.counts
		}
	}
	return p.counts
}

// want is a client's open wish for a key: from its first acquire attempt to
// its grant. A fail or info followed directly by another attempt on the
// same key continues the want (a retry loop is one wait, not many).
//
// A want that ends without a grant counts only up to its last definite
// refusal (lastFail: a fail completion), never up to an unknown outcome:
// starvation is a liveness failure only when the lock really said no. An
// attempt that ended unknown (a timeout, a lost reply, a client process
// that died) may have taken the lock, and says nothing about the lock's
// liveness; a run whose attempts all ended so has no starvation and is
// judged by its evidence instead ("not exercised": most attempts ended in
// errors). So zero acquisitions are a deadlock only when definite refusals
// span more than the bound with no hold open, the same rule for every lock.
type want struct {
	key       int
	start     int64
	lastFail  int64 // the last definite refusal (0: none yet)
	tentative bool  // the last attempt failed; open only if the next one retries
}

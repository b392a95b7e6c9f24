package checker

import (
	"math"

	"github.com/anishathalye/porcupine"
	"github.com/lockstorm/lockstorm/checker/mutex"
	"github.com/lockstorm/lockstorm/history"
)

// opsBuilder builds porcupine operations whose inputs point into one
// backing array allocated up front. A mutex.Input stored in an interface is
// allocated on its own, twice per hold: that, and a map numbering the
// processes of every piece, were what Check's pieces cost beyond
// porcupine's own search.
type opsBuilder struct {
	ops    []porcupine.Operation
	ins    []mutex.Input
	client func(int) int
}

// newOpsBuilder has room for n operations; client numbers processes for
// porcupine's visualization (nil: every operation is client 0, which
// porcupine's checking never reads).
func newOpsBuilder(n int, client func(int) int) *opsBuilder {
	if client == nil {
		client = func(int) int { return 0 }
	}
	return &opsBuilder{ops: make([]porcupine.Operation, 0, n), ins: make([]mutex.Input, 0, n), client: client}
}

// reset empties b for n operations, reusing its arrays when they are big
// enough (the previous operations must no longer be in use).
func (b *opsBuilder) reset(n int) {
	if cap(b.ins) < n {
		b.ops, b.ins = make([]porcupine.Operation, 0, n), make([]mutex.Input, 0, n)
		return
	}
	b.ops, b.ins = b.ops[:0], b.ins[:0]
}

func (b *opsBuilder) add(in mutex.Input, call, ret int64) {
	if len(b.ins) == cap(b.ins) {
		// A fresh array: the operations already built keep pointing into
		// the old one.
		b.ins = make([]mutex.Input, 0, max(8, cap(b.ins)))
	}
	b.ins = append(b.ins, in)
	b.ops = append(b.ops, porcupine.Operation{ClientId: b.client(in.Process), Input: &b.ins[len(b.ins)-1], Call: call, Return: ret})
}

// hold adds the two operations of a hold. acqCall and relReturn are the
// (possibly narrowed) acquire call and release return.
func (b *opsBuilder) hold(hr *holdRec, acqCall, relReturn int64) {
	in := mutex.Input{Kind: mutex.Acquire, Key: hr.Key, Process: hr.Process, Client: hr.Client, Fence: hr.Fence}
	b.add(in, acqCall, hr.From)
	in.Kind = mutex.Release
	b.add(in, hr.To, relReturn)
}

// unknown adds an acquire with an unknown outcome.
func (b *opsBuilder) unknown(u *unknownAcq, key string) {
	b.add(mutex.Input{Kind: mutex.Unknown, Key: key, Process: u.process, Client: u.client}, u.invoke, infinity)
}

// holdOps appends the two operations of a hold. acqCall and relReturn are
// the (possibly narrowed) acquire call and release return.
func holdOps(ops []porcupine.Operation, hr *holdRec, acqCall, relReturn int64, client func(int) int) []porcupine.Operation {
	in := mutex.Input{Kind: mutex.Acquire, Key: hr.Key, Process: hr.Process, Client: hr.Client, Fence: hr.Fence}
	cid := client(hr.Process)
	ops = append(ops, porcupine.Operation{ClientId: cid, Input: in, Call: acqCall, Return: hr.From})
	in.Kind = mutex.Release
	return append(ops, porcupine.Operation{ClientId: cid, Input: in, Call: hr.To, Return: relReturn})
}

func unknownOp(u *unknownAcq, key string, client func(int) int) porcupine.Operation {
	return porcupine.Operation{ClientId: client(u.process),
		Input: mutex.Input{Kind: mutex.Unknown, Key: key, Process: u.process, Client: u.client},
		Call:  u.invoke, Return: infinity}
}

// clientIDs numbers processes from zero, as porcupine's visualization wants.
func clientIDs() func(int) int {
	m := map[int]int{}
	return func(p int) int {
		if id, ok := m[p]; ok {
			return id
		}
		m[p] = len(m)
		return m[p]
	}
}

// MutexOperations returns the whole history as mutex model operations with
// their recorded intervals (acquire: invoke → ok; unknown acquire: invoke →
// infinity; release: end of the critical section → release completion),
// unsplit. Check splits them instead; this is the reference it is tested
// against, and what small histories can be checked with directly.
func MutexOperations(h history.History) []porcupine.Operation {
	return analyze(h).operations()
}

func (a *analysis) operations() []porcupine.Operation {
	var ops []porcupine.Operation
	client := clientIDs()
	for _, kd := range a.keys {
		for i := range kd.holds {
			hr := &kd.holds[i]
			ops = holdOps(ops, hr, hr.invoke, max(hr.relDone, hr.To), client)
		}
		for i := range kd.unknowns {
			ops = append(ops, unknownOp(&kd.unknowns[i], kd.name, client))
		}
	}
	return ops
}

// infinity is the return time of an operation whose outcome is unknown: it
// may take effect at any moment after its invocation, even after the client
// gave up (a SET NX stuck in a delayed link lands later).
const infinity = int64(math.MaxInt64)

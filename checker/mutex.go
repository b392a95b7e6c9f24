package checker

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
	"github.com/lockstorm/lockstorm/history"
)

// The mutex model encodes the belief model: a client holds a key only from
// a definite acquire ok to the end of its critical section.
//
//   - A definite acquire is an operation [invoke, ok]: the SET took effect at
//     some instant in between.
//   - An acquire with an unknown outcome (info, or no completion) gets the
//     return time Infinity, never the time the client gave up: the SET may sit
//     in a delayed link and land long after the client stopped waiting. In the
//     belief model it is a no-op: the client never believed it held the lock
//     and never entered a critical section, so even if the SET landed, no
//     critical section ran under it. Its step leaves the state unchanged.
//     (A lock granted to nobody's belief can still harm liveness, which the
//     liveness checks measure, but not mutual exclusion.)
//   - A failed acquire is omitted: a definite "no" does not change the state.
//   - The release of a hold is called at the end of the critical section (the
//     release invoke, the crash, or the end of the history) — not at the
//     release's completion — because the client stops acting as a holder the
//     moment it starts releasing (or vanishes). Its return is the release's
//     completion (ok or fail) or, when there is none (info, crash, end), the
//     end of the critical section itself: the belief ended there.
//
// Holds are identified by the process that acquired them, also when its
// client finishes the critical section under a later process id (after an
// unknown outcome inside it).
//
// With every acquire returning at its hold's From and every release called
// at its hold's To, the history is linearizable exactly when no two holds of
// a key overlap strictly (A.From < B.To && B.From < A.To): if two do, each
// acquire precedes the other's release in real time, so neither can come
// after the other's release; if none does, ordering the holds by (From, To)
// and linearizing each acquire at From and each release at To is legal. The
// overlap pass computes the same thing directly, and tests assert that both
// agree. The theorem also shows which rewrites of an operation's interval
// keep the verdict: any acquire call in [-inf, From] and any release return
// in [To, +inf] — the split relies on it.

// MutexKind is the kind of a mutex model operation.
type MutexKind uint8

// Mutex model operations.
const (
	MutexAcquire MutexKind = iota // a definite acquire ok
	MutexUnknown                  // an acquire with an unknown outcome: a no-op
	MutexRelease                  // the end of a hold
)

// MutexInput is the input of a mutex model operation (outputs are nil).
type MutexInput struct {
	Kind    MutexKind
	Key     string
	Process int // the holder: the process that acquired
	Client  int
	Fence   int64
}

// free is the state of an unheld key.
const free = math.MinInt

// MutexModel is the porcupine model of one lock per key: the state is the
// holding process or free; partitioned by key.
func MutexModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionByKey,
		Init:      func() interface{} { return free },
		Step: func(state, input, _ interface{}) (bool, interface{}) {
			in := mutexIn(input)
			return mutexStep(state.(int), in.Kind, in.Process)
		},
		Hash: func(state interface{}) uint64 { return uint64(state.(int)) },
		DescribeOperation: func(input, _ interface{}) string {
			in := mutexIn(input)
			switch in.Kind {
			case MutexAcquire:
				if in.Fence > 0 {
					return fmt.Sprintf("acquire %s → ok, fence %d (c%d p%d)", in.Key, in.Fence, in.Client, in.Process)
				}
				return fmt.Sprintf("acquire %s → ok (c%d p%d)", in.Key, in.Client, in.Process)
			case MutexRelease:
				return fmt.Sprintf("end of critical section on %s (c%d p%d)", in.Key, in.Client, in.Process)
			}
			return fmt.Sprintf("acquire %s → unknown (c%d p%d)", in.Key, in.Client, in.Process)
		},
		DescribeState: func(state interface{}) string {
			if s := state.(int); s != free {
				return fmt.Sprintf("held by p%d", s)
			}
			return "free"
		},
	}
}

// mutexStep is the model's step on an unboxed state: an acquire by
// process takes a free key, a release by the holder frees it, an unknown
// acquire leaves the state as it is (possibly took effect, never believed).
// The porcupine model and the sequential replay (split.go) share it.
func mutexStep(s int, kind MutexKind, process int) (bool, int) {
	switch kind {
	case MutexAcquire:
		if s == free {
			return true, process
		}
		return false, s
	case MutexRelease:
		if s == process {
			return true, free
		}
		return false, s
	}
	return true, s
}

func partitionByKey(ops []porcupine.Operation) [][]porcupine.Operation {
	idx := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range ops {
		k := mutexIn(op.Input).Key
		i, ok := idx[k]
		if !ok {
			i = len(parts)
			idx[k] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// mutexIn is a model input: a MutexInput, or a pointer to one (Check's
// pieces: see opsBuilder).
func mutexIn(input interface{}) MutexInput {
	if p, ok := input.(*MutexInput); ok {
		return *p
	}
	return input.(MutexInput)
}

// opsBuilder builds porcupine operations whose inputs point into one
// backing array allocated up front. A MutexInput stored in an interface is
// allocated on its own, twice per hold: that, and a map numbering the
// processes of every piece, were what Check's pieces cost beyond
// porcupine's own search.
type opsBuilder struct {
	ops    []porcupine.Operation
	ins    []MutexInput
	client func(int) int
}

// newOpsBuilder has room for n operations; client numbers processes for
// porcupine's visualization (nil: every operation is client 0, which
// porcupine's checking never reads).
func newOpsBuilder(n int, client func(int) int) *opsBuilder {
	if client == nil {
		client = func(int) int { return 0 }
	}
	return &opsBuilder{ops: make([]porcupine.Operation, 0, n), ins: make([]MutexInput, 0, n), client: client}
}

// reset empties b for n operations, reusing its arrays when they are big
// enough (the previous operations must no longer be in use).
func (b *opsBuilder) reset(n int) {
	if cap(b.ins) < n {
		b.ops, b.ins = make([]porcupine.Operation, 0, n), make([]MutexInput, 0, n)
		return
	}
	b.ops, b.ins = b.ops[:0], b.ins[:0]
}

func (b *opsBuilder) add(in MutexInput, call, ret int64) {
	if len(b.ins) == cap(b.ins) {
		// A fresh array: the operations already built keep pointing into
		// the old one.
		b.ins = make([]MutexInput, 0, max(8, cap(b.ins)))
	}
	b.ins = append(b.ins, in)
	b.ops = append(b.ops, porcupine.Operation{ClientId: b.client(in.Process), Input: &b.ins[len(b.ins)-1], Call: call, Return: ret})
}

// hold adds the two operations of a hold. acqCall and relReturn are the
// (possibly narrowed) acquire call and release return.
func (b *opsBuilder) hold(hr *holdRec, acqCall, relReturn int64) {
	in := MutexInput{Kind: MutexAcquire, Key: hr.Key, Process: hr.Process, Client: hr.Client, Fence: hr.Fence}
	b.add(in, acqCall, hr.From)
	in.Kind = MutexRelease
	b.add(in, hr.To, relReturn)
}

// unknown adds an acquire with an unknown outcome.
func (b *opsBuilder) unknown(u *unknownAcq, key string) {
	b.add(MutexInput{Kind: MutexUnknown, Key: key, Process: u.process, Client: u.client}, u.invoke, Infinity)
}

// holdOps appends the two operations of a hold. acqCall and relReturn are
// the (possibly narrowed) acquire call and release return.
func holdOps(ops []porcupine.Operation, hr *holdRec, acqCall, relReturn int64, client func(int) int) []porcupine.Operation {
	in := MutexInput{Kind: MutexAcquire, Key: hr.Key, Process: hr.Process, Client: hr.Client, Fence: hr.Fence}
	cid := client(hr.Process)
	ops = append(ops, porcupine.Operation{ClientId: cid, Input: in, Call: acqCall, Return: hr.From})
	in.Kind = MutexRelease
	return append(ops, porcupine.Operation{ClientId: cid, Input: in, Call: hr.To, Return: relReturn})
}

func unknownOp(u *unknownAcq, key string, client func(int) int) porcupine.Operation {
	return porcupine.Operation{ClientId: client(u.process),
		Input: MutexInput{Kind: MutexUnknown, Key: key, Process: u.process, Client: u.client},
		Call:  u.invoke, Return: Infinity}
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
// Infinity; release: end of the critical section → release completion),
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

// Infinity is the return time of an operation whose outcome is unknown: it
// may take effect at any moment after its invocation, even after the client
// gave up (a SET NX stuck in a delayed link lands later).
const Infinity = int64(math.MaxInt64)

// Package mutex is porcupine's model of a lock per key, on the belief
// model: a client holds a key from its definite acquire ok to the end of its
// critical section. The checker builds its operations from a history.
package mutex

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
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

// Kind is the kind of a mutex model operation.
type Kind uint8

// Mutex model operations.
const (
	Acquire Kind = iota // a definite acquire ok
	Unknown             // an acquire with an unknown outcome: a no-op
	Release             // the end of a hold
)

// Input is the input of a mutex model operation (outputs are nil).
type Input struct {
	Kind    Kind
	Key     string
	Process int // the holder: the process that acquired
	Client  int
	Fence   int64
}

// Free is the state of an unheld key.
const Free = math.MinInt

// Model is the porcupine model of one lock per key: the state is the
// holding process or Free; partitioned by key.
func Model() porcupine.Model {
	return porcupine.Model{
		Partition: partitionByKey,
		Init:      func() interface{} { return Free },
		Step: func(state, input, _ interface{}) (bool, interface{}) {
			in := inputOf(input)
			return Step(state.(int), in.Kind, in.Process)
		},
		Hash: func(state interface{}) uint64 { return uint64(state.(int)) },
		DescribeOperation: func(input, _ interface{}) string {
			in := inputOf(input)
			switch in.Kind {
			case Acquire:
				if in.Fence > 0 {
					return fmt.Sprintf("acquire %s → ok, fence %d (c%d p%d)", in.Key, in.Fence, in.Client, in.Process)
				}
				return fmt.Sprintf("acquire %s → ok (c%d p%d)", in.Key, in.Client, in.Process)
			case Release:
				return fmt.Sprintf("end of critical section on %s (c%d p%d)", in.Key, in.Client, in.Process)
			}
			return fmt.Sprintf("acquire %s → unknown (c%d p%d)", in.Key, in.Client, in.Process)
		},
		DescribeState: func(state interface{}) string {
			if s := state.(int); s != Free {
				return fmt.Sprintf("held by p%d", s)
			}
			return "free"
		},
	}
}

// Step is the model's step on an unboxed state: an acquire by
// process takes a free key, a release by the holder frees it, an unknown
// acquire leaves the state as it is (possibly took effect, never believed).
// The porcupine model and the checker's sequential replay share it.
func Step(s int, kind Kind, process int) (bool, int) {
	switch kind {
	case Acquire:
		if s == Free {
			return true, process
		}
		return false, s
	case Release:
		if s == process {
			return true, Free
		}
		return false, s
	}
	return true, s
}

func partitionByKey(ops []porcupine.Operation) [][]porcupine.Operation {
	idx := map[string]int{}
	var parts [][]porcupine.Operation
	for _, op := range ops {
		k := inputOf(op.Input).Key
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

// inputOf is a model input: an Input, or a pointer to one (the checker's
// pieces: see opsBuilder).
func inputOf(input interface{}) Input {
	if p, ok := input.(*Input); ok {
		return *p
	}
	return input.(Input)
}

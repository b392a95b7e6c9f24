package history

import (
	"fmt"
	"hash/maphash"
	"io"
	"os"

	"github.com/lockstorm/lockstorm/internal/ids"
)

// Problem is one way a history breaks its rules, named by line: the line of
// the JSONL file it was read from, or position+1 for a history in memory
// (what the runner writes to history.jsonl, line for line).
type Problem struct {
	Line int    `json:"line"`
	Msg  string `json:"msg"`
}

func (p Problem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Msg) }

// Parsed is a history as read from a file: the entries that could be read,
// the line each came from, and the lines that could not be read.
type Parsed struct {
	History History
	// Lines is the line of each entry of History (nil: position+1).
	Lines []int
	// Problems are the lines that are not history entries (bad JSON).
	Problems []Problem
}

// Meta is the history's header, nil when it has none (a history written
// before headers existed, or one whose first line was lost).
func (p Parsed) Meta() *Meta {
	for i := range p.History {
		if op := &p.History[i]; op.F == FMeta && op.Process == FinalProcess && op.Meta != nil {
			return op.Meta
		}
	}
	return nil
}

// ReadChecked reads a JSONL history without stopping at a bad line: a line
// that is not an entry becomes a Problem and reading goes on, so the rest
// of the history can still be judged. Only an I/O error is an error.
func ReadChecked(r io.Reader) (Parsed, error) {
	var p Parsed
	err := eachLine(r, func(line int, op Op, err error) error {
		if err != nil {
			p.Problems = append(p.Problems, Problem{line, fmt.Sprintf("not a history entry: %v", err)})
			return nil
		}
		p.History = append(p.History, op)
		p.Lines = append(p.Lines, line)
		return nil
	})
	return p, err
}

// ReadFileChecked is ReadChecked on the file at path.
func ReadFileChecked(path string) (Parsed, error) {
	f, err := os.Open(path)
	if err != nil {
		return Parsed{}, err
	}
	defer f.Close()
	p, err := ReadChecked(f)
	if err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

func (p Parsed) line(i int) int {
	if p.Lines != nil {
		return p.Lines[i]
	}
	return i + 1
}

// isOperation says f is an operation (an invoke, then one completion);
// every other function is an event, recorded once.
func isOperation(f string) bool {
	switch f {
	case FAcquire, FRelease, FRead, FWrite:
		return true
	}
	return false
}

// dupFinder finds an entry's first earlier equal (by every field but
// the few a runner never sets twice differently: see sameEntry). Equal
// entries have the same process and time, so in a history ordered by time
// (every recorded one) an entry is compared only with the earlier entries
// of its process at its time, found through a chain (prev) from the
// process's last entry. Any other history goes through a hash table. A Go
// map keyed by all those fields was most of Check's time and memory on big
// histories: on 1M entries 1.2 GB and 1.5 s of its 2.8 s, hashing eleven
// fields (four strings) per insert and lookup and rehashing as it grew.
type dupFinder struct {
	h History
	// ordered by time: prev[i] is the entry before i of its process at its
	// time (-1: none); last is each process's latest entry.
	prev []int32
	last ids.Map[int32]
	// otherwise: an open-addressing table of positions+1 (0: empty).
	seed  maphash.Seed
	slots []int32
	mask  uint64
}

// newDupFinder: sorted says h is ordered by time.
func newDupFinder(h History, sorted bool) *dupFinder {
	d := &dupFinder{h: h}
	if !sorted {
		n := 16
		for n < 2*len(h) {
			n *= 2
		}
		d.seed, d.slots, d.mask = maphash.MakeSeed(), make([]int32, n), uint64(n-1)
		return d
	}
	d.prev = make([]int32, len(h))
	return d
}

// sameEntry is whether a and b are the same entry.
func sameEntry(a, b *Op) bool {
	return a.Index == b.Index && a.Time == b.Time && a.Process == b.Process && a.Client == b.Client &&
		a.N == b.N && a.Fence == b.Fence && a.Type == b.Type && a.F == b.F && a.Key == b.Key &&
		a.Value == b.Value && a.Error == b.Error
}

// firstOrAdd returns the position of the first entry equal to h[i] before
// it, or -1. It is called for every i in order.
func (d *dupFinder) firstOrAdd(i int) int {
	op := &d.h[i]
	if d.slots != nil {
		return d.fromTable(i)
	}
	j, ok := d.last.Get(op.Process)
	d.last.Set(op.Process, int32(i))
	if !ok || d.h[j].Time != op.Time {
		j = -1
	}
	d.prev[i] = j
	first := -1
	for ; j >= 0; j = d.prev[j] { // back along the chain: the last match is the first entry
		if sameEntry(&d.h[j], op) {
			first = int(j)
		}
	}
	return first
}

func (d *dupFinder) fromTable(i int) int {
	op := &d.h[i]
	x := maphash.Comparable(d.seed, struct {
		index, process, client int
		n, fence, time         int64
		key, value             string
	}{op.Index, op.Process, op.Client, op.N, op.Fence, op.Time, op.Key, op.Value})
	for s := x & d.mask; ; s = (s + 1) & d.mask {
		j := int(d.slots[s]) - 1
		if j < 0 {
			d.slots[s] = int32(i + 1)
			return -1
		}
		if sameEntry(&d.h[j], op) {
			return j
		}
	}
}

// Validate checks that p's history is one the runner could have written, and
// returns every problem (p.Problems first, then in line order) with the
// well-formed part of the history: without duplicated entries and without
// every entry of a process whose sequence is broken. Checking the
// well-formed part can only find fewer overlaps and less harm than the full
// history (holds and writes are removed, never added), so a violation found
// there is a real one.
//
// The rules: a process runs one operation at a time, so every completion
// (ok, fail, info) closes the invoke the process has in flight, of the same
// function and key, and a process does not invoke again before its
// operation completed (an invoke that never completes is allowed only as
// the process's last operation: its outcome is unknown). No entry appears
// twice. A history written by the runner (one with a header or an end
// record) starts with its header at index 0, numbers its entries 0, 1, 2...
// without a gap, and ends with the end record; without the end record the
// history was cut short.
//
// Validate says as well whether the history it returns is ordered by time
// (so a pass over it need not check it again).
//
// Two facts about the whole history shape the walk: whether it is a
// runner's (some entry is a header or an end record: then indices are
// checked) and whether it is ordered by time (then duplicates are found
// along each process's chain, else through a hash table). A walk of its own
// to learn them was a fifth of validate. The walk assumes what the first
// and last entries suggest (a runner's history starts with its header and
// ends with its end record; recorded histories are ordered) and starts
// again, knowing better, at the first entry that says otherwise.
func Validate(p Parsed) (well History, problems []Problem, sorted bool) {
	h := p.History
	runner := len(h) > 0 && (isRunnerRecord(&h[0]) || isRunnerRecord(&h[len(h)-1]))
	for {
		well, problems, sorted, redo := validateAs(p, runner, true)
		if !redo {
			return well, problems, sorted
		}
		if !sorted {
			well, problems, _, _ = validateAs(p, runner || anyRunnerRecord(h), false)
			return well, problems, false
		}
		runner = true
	}
}

// isRunnerRecord is whether op is a runner's header or end record.
func isRunnerRecord(op *Op) bool {
	return op.Process == FinalProcess && (op.F == FMeta || op.F == FEnd)
}

// anyRunnerRecord is whether h has a runner's header or end record.
func anyRunnerRecord(h History) bool {
	for i := range h {
		if isRunnerRecord(&h[i]) {
			return true
		}
	}
	return false
}

// validateAs walks p's history as a runner's or not, and as ordered by
// time or not (sorted: the history must be, else the walk stops). redo
// says the walk stopped at an entry that contradicts runner (a header or
// end record in a history walked as no runner's) or sorted (then the
// sorted it returns is false); its other results are then meaningless.
func validateAs(p Parsed, runner, sorted bool) (well History, problems []Problem, inOrder, redo bool) {
	h := p.History
	v := &validator{p: p, problems: append([]Problem(nil), p.Problems...), broken: map[int]bool{}, endAt: -1, runner: runner}
	v.skip = make([]bool, len(h))
	v.seen = newDupFinder(h, sorted)
	if v.runner {
		v.seenIndex = ids.NewPositions(len(h))
	}
	if len(h) > 0 && h[0].Index > 0 {
		v.bad(0, "the history starts at index %d: entries 0 to %d (its start) are missing", h[0].Index, h[0].Index-1)
	}
	for i := range h {
		if sorted && i > 0 && h[i].Time < h[i-1].Time {
			return nil, nil, false, true
		}
		if !runner && isRunnerRecord(&h[i]) {
			return nil, nil, sorted, true
		}
		v.entry(i)
	}
	if v.runner && v.endAt < 0 && len(h) > 0 {
		last := len(h) - 1
		v.problems = append(v.problems, Problem{p.line(last), "the history ends here without the end record: it was cut short (truncated)"})
	}
	problems = v.problems
	sortProblems(problems)
	if len(problems) == 0 {
		return h, nil, sorted, false
	}
	well = make(History, 0, len(h))
	for i := range h {
		if !v.skip[i] && !v.broken[h[i].Process] {
			well = append(well, h[i])
		}
	}
	return well, problems, sorted, false
}

// validator is the state of validate's walk: the problems found, the
// entries to skip (duplicates, unknown types) and the processes whose
// operations do not pair up (broken: all their entries are left out).
type validator struct {
	p         Parsed
	problems  []Problem
	runner    bool // a runner's history: it has indices, a header and an end
	skip      []bool
	seen      *dupFinder
	seenIndex ids.Positions
	open      ids.Map[inflight] // by value: one allocation per invoke was the next cost
	broken    map[int]bool
	endAt     int // the end record's position (-1: none yet)
	next      int // the index the next entry should have (runner histories)
}

// inflight is a process's operation invoked and not yet completed.
type inflight struct {
	f, key string
	at     int // position of the invoke
}

func (v *validator) bad(i int, format string, args ...any) {
	v.problems = append(v.problems, Problem{v.p.line(i), fmt.Sprintf(format, args...)})
}

// entry checks the history's i-th entry.
func (v *validator) entry(i int) {
	op := &v.p.History[i]
	if j := v.seen.firstOrAdd(i); j >= 0 {
		v.bad(i, "duplicate of line %d", v.p.line(j))
		v.skip[i] = true
		return
	}
	if v.runner && !v.index(i, op) {
		v.skip[i] = true
		return
	}
	if v.endAt >= 0 {
		v.bad(i, "entry after the end record (line %d)", v.p.line(v.endAt))
	}
	switch op.Type {
	case Invoke, Ok, Fail, Info:
	default:
		v.bad(i, "unknown entry type %q", op.Type)
		v.skip[i] = true
		return
	}
	if op.Process == NemesisProcess {
		if op.F == FStall && (op.N <= 0 || op.Client < -1) {
			// A stall names the whole process (-1) or one client, and
			// lasts: anything else would excuse time nobody measured.
			v.bad(i, "stall of client %d lasting %d ns: a stall is of client -1 (the process) or of one client, and lasts more than 0", op.Client, op.N)
			v.skip[i] = true
		}
		return
	}
	switch op.F {
	case FMeta:
		if i != 0 {
			v.bad(i, "header (meta) entry not on the first line")
		}
		return
	case FEnd:
		if v.endAt < 0 {
			v.endAt = i
		}
		return
	}
	if !isOperation(op.F) {
		return // an event (step, lost, abandon, crash...): no invoke
	}
	v.pair(i, op)
}

// index checks a runner's entry index: unused, in order, none missing. It
// says false for an index already used (the entry is skipped).
func (v *validator) index(i int, op *Op) bool {
	if j, ok := v.seenIndex.Get(op.Index); ok {
		v.bad(i, "index %d already used by line %d", op.Index, v.p.line(j))
		return false
	}
	v.seenIndex.Set(op.Index, i)
	next := v.next
	switch {
	case op.Index > next && i > 0:
		if op.Index == next+1 {
			v.bad(i, "entry %d is missing before this line (index %d follows %d)", next, op.Index, next-1)
		} else {
			v.bad(i, "entries %d to %d are missing before this line (index %d follows %d)", next, op.Index-1, op.Index, next-1)
		}
	case op.Index < next:
		v.bad(i, "index %d is out of order (after index %d)", op.Index, next-1)
	}
	if op.Index >= next {
		v.next = op.Index + 1
	}
	return true
}

// pair matches an operation's completion with its process's invoke.
func (v *validator) pair(i int, op *Op) {
	pid := op.Process
	cur, inFlight := v.open.Get(pid)
	if op.Type == Invoke {
		if inFlight {
			v.bad(i, "process %d invokes %s %s, but its %s %s invoked at line %d never completed",
				pid, op.F, op.Key, cur.f, cur.key, v.p.line(cur.at))
			v.broken[pid] = true
		}
		v.open.Set(pid, inflight{op.F, op.Key, i})
		return
	}
	switch {
	case !inFlight:
		v.bad(i, "%s %s of process %d completes (%s) without its invoke", op.F, op.Key, pid, op.Type)
		v.broken[pid] = true
	case cur.f != op.F || cur.key != op.Key:
		v.bad(i, "%s %s of process %d completes (%s), but the operation in flight is %s %s invoked at line %d",
			op.F, op.Key, pid, op.Type, cur.f, cur.key, v.p.line(cur.at))
		v.broken[pid] = true
		v.open.Del(pid)
	default:
		v.open.Del(pid)
	}
}

// sortProblems orders problems by line, stably (insertion sort: problems
// are few and almost sorted).
func sortProblems(ps []Problem) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].Line < ps[j-1].Line; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

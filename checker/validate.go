package checker

import (
	"fmt"
	"io"
	"os"
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

// operation lists the functions that are operations (an invoke, then one
// completion); every other function is an event, recorded once.
var operation = map[string]bool{FAcquire: true, FRelease: true, FRead: true, FWrite: true}

// dupKey is what makes two entries the same entry.
type dupKey struct {
	index, process, client int
	typ                    Type
	f, key, value, err     string
	n, fence, time         int64
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
func Validate(p Parsed) (History, []Problem) {
	h := p.History
	problems := append([]Problem(nil), p.Problems...)
	bad := func(i int, format string, args ...any) {
		problems = append(problems, Problem{p.line(i), fmt.Sprintf(format, args...)})
	}
	runner := false
	for i := range h {
		if h[i].Process == FinalProcess && (h[i].F == FMeta || h[i].F == FEnd) {
			runner = true
			break
		}
	}

	skip := make([]bool, len(h))
	seen := map[dupKey]int{}
	seenIndex := map[int]int{}
	type inflight struct {
		f, key string
		at     int // position of the invoke
	}
	open := map[int]*inflight{}
	broken := map[int]bool{}
	endAt := -1
	next := 0 // the index the next entry should have (runner histories)
	if len(h) > 0 && h[0].Index > 0 {
		bad(0, "the history starts at index %d: entries 0 to %d (its start) are missing", h[0].Index, h[0].Index-1)
	}
	for i := range h {
		op := &h[i]
		k := dupKey{op.Index, op.Process, op.Client, op.Type, op.F, op.Key, op.Value, op.Error, op.N, op.Fence, op.Time}
		if j, ok := seen[k]; ok {
			bad(i, "duplicate of line %d", p.line(j))
			skip[i] = true
			continue
		}
		seen[k] = i
		if runner {
			if j, ok := seenIndex[op.Index]; ok {
				bad(i, "index %d already used by line %d", op.Index, p.line(j))
				skip[i] = true
				continue
			}
			seenIndex[op.Index] = i
			switch {
			case op.Index > next && i > 0:
				if op.Index == next+1 {
					bad(i, "entry %d is missing before this line (index %d follows %d)", next, op.Index, next-1)
				} else {
					bad(i, "entries %d to %d are missing before this line (index %d follows %d)", next, op.Index-1, op.Index, next-1)
				}
			case op.Index < next:
				bad(i, "index %d is out of order (after index %d)", op.Index, next-1)
			}
			if op.Index >= next {
				next = op.Index + 1
			}
		}
		if endAt >= 0 {
			bad(i, "entry after the end record (line %d)", p.line(endAt))
		}
		switch op.Type {
		case Invoke, Ok, Fail, Info:
		default:
			bad(i, "unknown entry type %q", op.Type)
			skip[i] = true
			continue
		}
		if op.Process == NemesisProcess {
			continue
		}
		switch op.F {
		case FMeta:
			if i != 0 {
				bad(i, "header (meta) entry not on the first line")
			}
			continue
		case FEnd:
			if endAt < 0 {
				endAt = i
			}
			continue
		}
		if !operation[op.F] {
			continue // an event (step, lost, abandon, crash...): no invoke
		}
		pid := op.Process
		cur := open[pid]
		if op.Type == Invoke {
			if cur != nil {
				bad(i, "process %d invokes %s %s, but its %s %s invoked at line %d never completed",
					pid, op.F, op.Key, cur.f, cur.key, p.line(cur.at))
				broken[pid] = true
			}
			open[pid] = &inflight{op.F, op.Key, i}
			continue
		}
		switch {
		case cur == nil:
			bad(i, "%s %s of process %d completes (%s) without its invoke", op.F, op.Key, pid, op.Type)
			broken[pid] = true
		case cur.f != op.F || cur.key != op.Key:
			bad(i, "%s %s of process %d completes (%s), but the operation in flight is %s %s invoked at line %d",
				op.F, op.Key, pid, op.Type, cur.f, cur.key, p.line(cur.at))
			broken[pid] = true
			delete(open, pid)
		default:
			delete(open, pid)
		}
	}
	if runner && endAt < 0 && len(h) > 0 {
		last := len(h) - 1
		problems = append(problems, Problem{p.line(last), "the history ends here without the end record: it was cut short (truncated)"})
	}
	sortProblems(problems)
	if len(problems) == 0 {
		return h, nil
	}
	well := make(History, 0, len(h))
	for i := range h {
		if !skip[i] && !broken[h[i].Process] {
			well = append(well, h[i])
		}
	}
	return well, problems
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

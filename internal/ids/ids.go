// Package ids holds the checker's tables keyed by the small integers a
// runner's history numbers things with (process and client ids, entry
// indices): a slice for the dense ids every recorded history has, a map
// for any other, since a map lookup per entry was a good part of the
// passes' time.
package ids

// Map maps process (or client) ids to values: a slice for the small
// non-negative ids runners use, a map for any other.
type Map[T any] struct {
	dense []T
	has   []bool
	other map[int]T
}

// denseProcesses bounds the ids Map keeps in its slice.
const denseProcesses = 1 << 16

// Get is the value of id and whether it is set.
func (m *Map[T]) Get(id int) (T, bool) {
	if id >= 0 && id < len(m.dense) {
		return m.dense[id], m.has[id]
	}
	v, ok := m.other[id]
	return v, ok
}

// Set sets the value of id.
func (m *Map[T]) Set(id int, v T) {
	if id >= 0 && id < denseProcesses {
		if id >= len(m.dense) {
			n := max(2*len(m.dense), id+1, 16)
			m.dense = append(m.dense, make([]T, n-len(m.dense))...)
			m.has = append(m.has, make([]bool, n-len(m.has))...)
		}
		m.dense[id], m.has[id] = v, true
		return
	}
	if m.other == nil {
		m.other = map[int]T{}
	}
	m.other[id] = v
}

// Del unsets id.
func (m *Map[T]) Del(id int) {
	if id >= 0 && id < len(m.dense) {
		var zero T
		m.dense[id], m.has[id] = zero, false
		return
	}
	delete(m.other, id)
}

// Each calls f for every id set: the slice's in order, then the map's.
func (m *Map[T]) Each(f func(id int, v T)) {
	for id, ok := range m.has {
		if ok {
			f(id, m.dense[id])
		}
	}
	for id, v := range m.other {
		f(id, v)
	}
}

// Positions are where each index was first used (its position in the
// history): a slice for the indices a runner's history has (0 to len-1),
// a map for any other.
type Positions struct {
	dense []int32 // position+1; 0: unused
	other map[int]int
}

// Get is where index was first used, and whether it was.
func (t *Positions) Get(index int) (int, bool) {
	if index >= 0 && index < len(t.dense) {
		return int(t.dense[index]) - 1, t.dense[index] != 0
	}
	i, ok := t.other[index]
	return i, ok
}

// Set says index was first used at position i.
func (t *Positions) Set(index, i int) {
	if index >= 0 && index < len(t.dense) {
		t.dense[index] = int32(i + 1)
		return
	}
	if t.other == nil {
		t.other = map[int]int{}
	}
	t.other[index] = i
}

// NewPositions has room in its slice for the indices 0 to n-1 (a runner's
// history of n entries).
func NewPositions(n int) Positions { return Positions{dense: make([]int32, n)} }

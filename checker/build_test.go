package checker

import "math"

// builder writes histories by hand, times in milliseconds.
type builder struct{ h History }

func msT(t float64) int64 { return int64(math.Round(t * 1e6)) }

func (b *builder) add(t float64, typ Type, p, c int, f, key string, mods ...func(*Op)) *builder {
	op := Op{Index: len(b.h), Type: typ, Process: p, Client: c, F: f, Key: key, Time: msT(t)}
	for _, m := range mods {
		m(&op)
	}
	b.h = append(b.h, op)
	return b
}

func fence(f int64) func(*Op)          { return func(o *Op) { o.Fence = f } }
func n(v int64) func(*Op)              { return func(o *Op) { o.N = v } }
func val(v string) func(*Op)           { return func(o *Op) { o.Value = v } }
func errs(e string) func(*Op)          { return func(o *Op) { o.Error = e } }
func nf(v, f int64) func(*Op)          { return func(o *Op) { o.N, o.Fence = v, f } }
func tokf(t string, f int64) func(*Op) { return func(o *Op) { o.Value, o.Fence = t, f } }

// op appends an invoke at t1 and its completion typ at t2.
func (b *builder) op(t1, t2 float64, typ Type, p, c int, f, key string, mods ...func(*Op)) *builder {
	b.add(t1, Invoke, p, c, f, key, mods...)
	return b.add(t2, typ, p, c, f, key, mods...)
}

// cycle is a whole acquire → read → write → release by one process.
func (b *builder) cycle(p, c int, key string, inv, ok, rel float64, read, f int64) *builder {
	b.op(inv, ok, Ok, p, c, FAcquire, key, fence(f))
	b.op(ok+0.1, ok+0.2, Ok, p, c, FRead, key, n(read))
	b.op(rel-0.2, rel-0.1, Ok, p, c, FWrite, key, nf(read+1, f))
	return b.op(rel, rel+0.1, Ok, p, c, FRelease, key)
}

func (b *builder) final(t float64, key string, v int64) *builder {
	return b.op(t, t+0.1, Ok, FinalProcess, -1, FRead, key, n(v))
}

func (b *builder) step(t float64, p, c int, name string) *builder {
	return b.add(t, Ok, p, c, FStep, "", val(name))
}

// sorted returns the history ordered by time and re-indexed, as a Recorder
// would have written it.
func (b *builder) sorted() History {
	h := sortedByTime(b.h)
	h = append(History(nil), h...)
	for i := range h {
		h[i].Index = i
	}
	return h
}

package checker

import (
	"math"

	"github.com/lockstorm/lockstorm/history"
)

// builder writes histories by hand, times in milliseconds.
type builder struct{ h history.History }

func msT(t float64) int64 { return int64(math.Round(t * 1e6)) }

func (b *builder) add(t float64, typ history.Type, p, c int, f, key string, mods ...func(*history.Op)) *builder {
	op := history.Op{Index: len(b.h), Type: typ, Process: p, Client: c, F: f, Key: key, Time: msT(t)}
	for _, m := range mods {
		m(&op)
	}
	b.h = append(b.h, op)
	return b
}

func fence(f int64) func(*history.Op) { return func(o *history.Op) { o.Fence = f } }
func n(v int64) func(*history.Op)     { return func(o *history.Op) { o.N = v } }
func val(v string) func(*history.Op)  { return func(o *history.Op) { o.Value = v } }
func errs(e string) func(*history.Op) { return func(o *history.Op) { o.Error = e } }
func nf(v, f int64) func(*history.Op) { return func(o *history.Op) { o.N, o.Fence = v, f } }
func tokf(t string, f int64) func(*history.Op) {
	return func(o *history.Op) { o.Value, o.Fence = t, f }
}

// op appends an invoke at t1 and its completion typ at t2.
func (b *builder) op(t1, t2 float64, typ history.Type, p, c int, f, key string, mods ...func(*history.Op)) *builder {
	b.add(t1, history.Invoke, p, c, f, key, mods...)
	return b.add(t2, typ, p, c, f, key, mods...)
}

// cycle is a whole acquire → read → write → release by one process.
func (b *builder) cycle(p, c int, key string, inv, ok, rel float64, read, f int64) *builder {
	b.op(inv, ok, history.Ok, p, c, history.FAcquire, key, fence(f))
	b.op(ok+0.1, ok+0.2, history.Ok, p, c, history.FRead, key, n(read))
	b.op(rel-0.2, rel-0.1, history.Ok, p, c, history.FWrite, key, nf(read+1, f))
	return b.op(rel, rel+0.1, history.Ok, p, c, history.FRelease, key)
}

func (b *builder) final(t float64, key string, v int64) *builder {
	return b.op(t, t+0.1, history.Ok, history.FinalProcess, -1, history.FRead, key, n(v))
}

func (b *builder) step(t float64, p, c int, name string) *builder {
	return b.add(t, history.Ok, p, c, history.FStep, "", val(name))
}

// sorted returns the history ordered by time and re-indexed, as a Recorder
// would have written it.
func (b *builder) sorted() history.History {
	h := sortedByTime(b.h)
	h = append(history.History(nil), h...)
	for i := range h {
		h[i].Index = i
	}
	return h
}

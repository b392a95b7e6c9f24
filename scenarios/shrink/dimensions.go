package shrink

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// change is one candidate: what it changes, applied to a copy of the
// current spec (false: it does not apply to this spec).
type change struct {
	desc  string
	apply func(s *spec.Spec) bool
}

// dimension proposes the candidates of one dimension of the current spec,
// most ambitious first; attempts are the acquire attempts of the current
// spec's last failing run.
type dimension func(cur *spec.Spec, attempts int) []change

// dimensions in the order they are tried. The clients come first, the
// figure a lock's author reads first and the one a short budget must not
// miss; the duration next: a candidate that no longer fails runs its whole
// duration (only a failing run stops early), so a shorter run makes every
// later rejection cheaper.
var dimensions = []dimension{clients, duration, ops, keys, nodes, faults, failpoints, windows, rates}

// granularity is the time step candidates are rounded to.
const granularity = 10 * time.Millisecond

// minDuration is the shortest run a candidate is given: below it a run is
// mostly its set-up.
const minDuration = 100 * time.Millisecond

func duration(cur *spec.Spec, _ int) []change {
	var out []change
	for _, d := range []time.Duration{cur.Duration / 2, cur.Duration * 3 / 4} {
		d = d.Round(granularity)
		if d < minDuration || d >= cur.Duration {
			continue
		}
		out = append(out, change{fmt.Sprintf("duration %v → %v", cur.Duration, d), func(s *spec.Spec) bool {
			s.Duration = d
			return true
		}})
	}
	return out
}

// ops bounds the acquire attempts of the whole run (ops: N): the history
// shrinks with them where a duration cannot (many clients, short critical
// sections). The first bound is the attempts the last failing run made,
// its failure included; then half of the bound.
func ops(cur *spec.Spec, attempts int) []change {
	var out []change
	for _, n := range []int{attempts, cur.Ops / 2, attempts / 2} {
		if n < 2 || cur.Ops > 0 && n >= cur.Ops {
			continue
		}
		out = append(out, change{fmt.Sprintf("ops %s → %d", opsText(cur.Ops), n), func(s *spec.Spec) bool {
			s.Ops = n
			return true
		}})
	}
	return out
}

func opsText(n int) string {
	if n == 0 {
		return "unbounded"
	}
	return fmt.Sprint(n)
}

// chunks are the ways to remove part of n items, delta debugging's: half
// of them (each half), then each quarter, ... down to each single item,
// later items first (the first clients are the ones schedules name most).
// keep is how many must remain.
func chunks(n, keep int) [][]int {
	var out [][]int
	for size := max(n/2, 1); size >= 1 && n > 0; size /= 2 {
		for end := n; end > 0; end -= size {
			start := max(end-size, 0)
			if n-(end-start) < keep {
				continue
			}
			var c []int
			for i := start; i < end; i++ {
				c = append(c, i)
			}
			out = append(out, c)
		}
	}
	return out
}

func rangeText(c []int) string {
	if len(c) == 1 {
		return fmt.Sprint(c[0])
	}
	return fmt.Sprintf("%d..%d", c[0], c[len(c)-1])
}

func clients(cur *spec.Spec, _ int) []change {
	var out []change
	for _, c := range chunks(cur.Clients, 1) {
		out = append(out, change{fmt.Sprintf("clients %d → %d (drop c%s)", cur.Clients, cur.Clients-len(c), rangeText(c)), func(s *spec.Spec) bool {
			dropClients(s, c)
			return true
		}})
	}
	return out
}

// dropClients removes the clients in drop and renumbers the others: what
// named a dropped client (a failpoint of its, or one waiting for it; a
// clock offset; a fault's only targets) goes with it.
func dropClients(s *spec.Spec, drop []int) {
	renum := func(c int) (int, bool) {
		if c < 0 {
			return c, true // -1: every client
		}
		if slices.Contains(drop, c) {
			return 0, false
		}
		n := c
		for _, d := range drop {
			if d < c {
				n--
			}
		}
		return n, true
	}
	s.Clients -= len(drop)
	if s.Hosts > s.Clients {
		s.Hosts = s.Clients
	}
	var fps []spec.FailpointSpec
	for _, fp := range s.Failpoints {
		c, ok := renum(fp.Client)
		w, wok := renum(fp.WaitClient)
		if !ok || fp.WaitFor != "" && !wok {
			continue
		}
		fp.Client, fp.WaitClient = c, w
		if fp.Fault != nil && !retarget(fp.Fault, renum) {
			continue
		}
		fps = append(fps, fp)
	}
	s.Failpoints = fps
	var fs []nemesis.Spec
	for _, f := range s.Faults {
		if retarget(&f, renum) {
			fs = append(fs, f)
		}
	}
	s.Faults = fs
	var offsets map[int]time.Duration
	for c, d := range s.ClockOffsets {
		if n, ok := renum(c); ok {
			if offsets == nil {
				offsets = map[int]time.Duration{}
			}
			offsets[n] = d
		}
	}
	s.ClockOffsets = offsets
}

// retarget renumbers a fault's client targets; false when it targeted
// clients and none is left.
func retarget(f *nemesis.Spec, renum func(int) (int, bool)) bool {
	if len(f.Clients) == 0 {
		return true
	}
	var cs []int
	for _, c := range f.Clients {
		if n, ok := renum(c); ok {
			cs = append(cs, n)
		}
	}
	f.Clients = cs
	return len(cs) > 0
}

// fewer proposes smaller values of a count: 1, then half, then one less.
func fewer(n int) []int {
	var out []int
	for _, k := range []int{1, n / 2, n - 1} {
		if k >= 1 && k < n && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func keys(cur *spec.Spec, _ int) []change {
	return fewerOf("keys", cur.Keys, func(s *spec.Spec, k int) { s.Keys = k })
}

// nodes proposes fewer masters, where the spec sets them (its nodes, or
// the lock's nodes option); whether the lock's topology allows as few is
// for the spec's validation and the run's compilation to say.
func nodes(cur *spec.Spec, _ int) []change {
	return append(fewerOf("nodes", cur.Nodes, func(s *spec.Spec, k int) { s.Nodes = k }),
		fewerOf("lock.nodes", cur.Lock.Nodes, func(s *spec.Spec, k int) { s.Lock.Nodes = k })...)
}

// fewerOf proposes the smaller values fewer gives for a count the spec
// sets (field names it), set writing one into a candidate.
func fewerOf(field string, n int, set func(*spec.Spec, int)) []change {
	var out []change
	for _, k := range fewer(n) {
		out = append(out, change{fmt.Sprintf("%s %d → %d", field, n, k), func(s *spec.Spec) bool {
			set(s, k)
			return true
		}})
	}
	return out
}

func faults(cur *spec.Spec, _ int) []change {
	var out []change
	if cur.Explore != nil {
		out = append(out, change{"explore removed", func(s *spec.Spec) bool {
			s.Explore = nil
			return true
		}})
	}
	for _, c := range chunks(len(cur.Faults), 0) {
		out = append(out, change{fmt.Sprintf("faults %d → %d (drop faults.%s)", len(cur.Faults), len(cur.Faults)-len(c), rangeText(c)), func(s *spec.Spec) bool {
			s.Faults = without(s.Faults, c)
			return true
		}})
	}
	return out
}

func failpoints(cur *spec.Spec, _ int) []change {
	var out []change
	for _, c := range chunks(len(cur.Failpoints), 0) {
		out = append(out, change{fmt.Sprintf("failpoints %d → %d (drop failpoints.%s)", len(cur.Failpoints), len(cur.Failpoints)-len(c), rangeText(c)), func(s *spec.Spec) bool {
			s.Failpoints = without(s.Failpoints, c)
			return true
		}})
	}
	return out
}

func without[T any](xs []T, drop []int) []T {
	var out []T
	for i, x := range xs {
		if !slices.Contains(drop, i) {
			out = append(out, x)
		}
	}
	return out
}

// windows narrows each fault in time: once instead of repeating, a
// narrower random window, a later start, a shorter fault.
func windows(cur *spec.Spec, _ int) []change {
	var out []change
	for i, f := range cur.Faults {
		at := fmt.Sprintf("faults.%d", i)
		edit := func(desc string, ok bool, set func(f *nemesis.Spec)) {
			if ok {
				out = append(out, change{at + ": " + desc, func(s *spec.Spec) bool {
					set(&s.Faults[i])
					return true
				}})
			}
		}
		edit(fmt.Sprintf("once instead of every %v", f.Every), f.Every > 0, func(f *nemesis.Spec) { f.Every = 0 })
		edit(fmt.Sprintf("within %v → 0 (a fixed start)", f.Within), f.Within > 0, func(f *nemesis.Spec) { f.Within = 0 })
		edit(fmt.Sprintf("within %v → %v", f.Within, shorter(f.Within)), shorter(f.Within) > 0, func(f *nemesis.Spec) { f.Within = shorter(f.Within) })
		for _, part := range []time.Duration{2, 4} {
			later := (f.At + (cur.Duration-f.At)/part).Round(granularity)
			edit(fmt.Sprintf("at %v → %v", f.At, later), later > f.At && later < cur.Duration, func(f *nemesis.Spec) { f.At = later })
		}
		edit(fmt.Sprintf("for %v → %v", f.For, shorter(f.For)), f.For > 0, func(f *nemesis.Spec) { f.For = shorter(f.For) })
	}
	for i, fp := range cur.Failpoints {
		if fp.Fault != nil && fp.Fault.For > 0 {
			out = append(out, change{fmt.Sprintf("failpoints.%d.fault: for %v → %v", i, fp.Fault.For, shorter(fp.Fault.For)), func(s *spec.Spec) bool {
				f := *s.Failpoints[i].Fault
				f.For = shorter(f.For)
				s.Failpoints[i].Fault = &f
				return true
			}})
		}
	}
	return out
}

// shorter halves a time, rounded to the granularity (0 below it).
func shorter(d time.Duration) time.Duration {
	h := (d / 2).Round(granularity)
	if h < granularity {
		return 0
	}
	return h
}

// rates removes the steady conditions: the network's latency and jitter,
// and halves the clock skew.
func rates(cur *spec.Spec, _ int) []change {
	var out []change
	if cur.Network != (spec.Network{}) {
		out = append(out, change{fmt.Sprintf("network latency %v jitter %v removed", cur.Network.Latency, cur.Network.Jitter), func(s *spec.Spec) bool {
			s.Network = spec.Network{}
			return true
		}})
	}
	if cur.ClockSkew > 0 {
		out = append(out, change{fmt.Sprintf("clock_skew %v → %v", cur.ClockSkew, shorter(cur.ClockSkew)), func(s *spec.Spec) bool {
			s.ClockSkew = shorter(s.ClockSkew)
			return true
		}})
	}
	return out
}

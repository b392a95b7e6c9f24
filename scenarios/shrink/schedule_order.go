package shrink

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/history"
)

// serverOrder sets, for the kept clients' commands that changed the key,
// when they ran by the server's own account: its key events (set, del,
// expire, ...) come in the order it executed the commands, while the
// clients' replies come back in any order (latency, jitter). Each event is
// given to a kept client's command of a kind that makes it (DEL a del,
// SET or SETNX a set, a script anything), in flight when the event was
// received, sent first; an event no kept client can have made (a client
// left out) is no one's.
func serverOrder(lanes []*lane, h history.History, key string) {
	type flight struct {
		lane, reply int // the reply event's index in its lane
		cmd         string
		sent        int64
		done        bool
	}
	var fl []*flight
	for li, l := range lanes {
		for i, e := range l.events {
			cmd, ok := strings.CutSuffix(e.point, "/after")
			if !ok || !strings.HasPrefix(cmd, "cmd/") {
				continue
			}
			for j := i - 1; j >= 0; j-- {
				if l.events[j].point == cmd+"/before" {
					fl = append(fl, &flight{lane: li, reply: i, cmd: cmd[strings.LastIndex(cmd, "/")+1:], sent: l.events[j].t})
					break
				}
			}
		}
	}
	slices.SortStableFunc(fl, func(a, b *flight) int { return cmp.Compare(a.sent, b.sent) })
	for _, o := range h {
		if o.F != history.FServer || o.Key != key {
			continue
		}
		for _, f := range fl {
			e := &lanes[f.lane].events[f.reply]
			if f.done || f.sent > o.Time || !makes(f.cmd, o.Value) {
				continue
			}
			// The reply may arrive before or after the event is received;
			// a command answered long before the event did not make it.
			if e.t+int64(10*time.Millisecond) < o.Time {
				continue
			}
			f.done = true
			e.ran, e.sig = min(o.Time, e.t), true
			break
		}
	}
}

// makes says whether Redis command cmd (as a command point names it:
// SETNX, DEL, EVALSHA:1a2b3c4d) can produce keyspace event ev.
func makes(cmd, ev string) bool {
	cmd, _, _ = strings.Cut(cmd, ":")
	switch cmd {
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "MULTI", "EXEC":
		return true
	case "DEL", "UNLINK", "GETDEL":
		return ev == "del"
	case "SET", "SETNX", "GETSET", "SETEX", "PSETEX", "MSET", "MSETNX":
		return ev == "set"
	case "EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST":
		return ev == "expire" || ev == "persist" || ev == "del"
	case "HSET", "HSETNX", "HINCRBY", "HDEL", "INCR", "INCRBY", "DECR":
		return true
	}
	return false
}

// orderGates are the waits that force the history's order on the kept
// clients' landmarks. For each event e of a lane d and each other lane c,
// the last event of c before e must stay before it: the landmark of d that
// e follows waits for the landmark of c that event is (or precedes). The
// events are taken latest first, as the order nearest the witness matters
// most; a wait that would close a cycle with those already taken (two
// polling loops interleaved, each waiting for the other) is left out, and
// so is one already implied by them.
func orderGates(lanes []*lane) []gate {
	g := newOrderGraph(lanes)
	var gates []gate
	add := func(d, gl, c, x int) {
		if g.implied(c, x, d, gl) || g.cycles(c, x, d, gl) {
			return
		}
		g.add(c, x, d, gl)
		gates = append(gates, gate{d, gl, c, x})
	}
	// Every other client's window waits for the first to hold.
	for d := 1; d < len(lanes); d++ {
		if len(lanes[d].landmarks) > 0 && len(lanes[0].landmarks) > 0 {
			add(d, 0, 0, 0)
		}
	}
	// What the others did before the first held is not replayed: they
	// start once it holds.
	var t0 int64
	if len(lanes[0].landmarks) > 0 {
		t0 = lanes[0].landmarks[0].t
	}
	type at struct{ lane, i int }
	var all []at
	for li, l := range lanes {
		for i, e := range l.events {
			if e.ran >= t0 {
				all = append(all, at{li, i})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b at) int {
		return -cmp.Compare(lanes[a.lane].events[a.i].ran, lanes[b.lane].events[b.i].ran)
	})
	for _, e2 := range all {
		d := lanes[e2.lane]
		gl := landmarkBefore(d, e2.i)
		if gl < 0 {
			continue
		}
		for c, lc := range lanes {
			if c == e2.lane {
				continue
			}
			e1 := -1
			for i, e := range lc.events {
				if e.ran >= t0 && e.ran < d.events[e2.i].ran {
					e1 = i
				}
			}
			if e1 < 0 {
				continue
			}
			if !d.events[e2.i].sig && !lc.events[e1].sig {
				continue
			}
			// A pass of c's polling loop before its last, or a repeated
			// step of its critical section (an extend's), is named by no
			// stop: the landmark after it may come much later (the hold
			// the polling ended in), and waiting for that would put d's
			// event after steps of c that followed it. Such a pass
			// changed nothing d can see; its order is not kept.
			if !lc.events[e1].sig && lc.events[e1].lm < 0 {
				continue
			}
			if x := landmarkFrom(lc, e1); x >= 0 {
				add(e2.lane, gl, c, x)
			}
		}
	}
	gates = g.reduce(gates)
	slices.SortFunc(gates, func(a, b gate) int {
		return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.g, b.g), cmp.Compare(a.c, b.c))
	})
	return gates
}

// landmarkBefore is the landmark of l that event i follows (strictly: a
// landmark's own hit happens before its gate waits); -1 if none.
func landmarkBefore(l *lane, i int) int {
	for j := i - 1; j >= 0; j-- {
		if l.events[j].lm >= 0 {
			return l.events[j].lm
		}
	}
	return -1
}

// landmarkFrom is event i of l if it is a landmark, else the first
// landmark after it: once the client passed it, event i happened.
func landmarkFrom(l *lane, i int) int {
	for j := i; j < len(l.events); j++ {
		if l.events[j].once {
			return l.events[j].lm
		}
	}
	return -1
}

// orderGraph is the happens-before order of the landmarks a schedule
// forces: each lane's landmarks in program order, then its end; a gate at
// landmark g of d waiting for landmark x of c puts x before g's successor.
type orderGraph struct {
	base  []int // node of each lane's first landmark
	sizes []int
	edges map[int][]int
}

func newOrderGraph(lanes []*lane) *orderGraph {
	g := &orderGraph{edges: map[int][]int{}}
	n := 0
	for _, l := range lanes {
		g.base = append(g.base, n)
		g.sizes = append(g.sizes, len(l.landmarks))
		for i := 0; i < len(l.landmarks); i++ {
			g.edges[n+i] = append(g.edges[n+i], n+i+1)
		}
		n += len(l.landmarks) + 1 // and the lane's end
	}
	return g
}

func (g *orderGraph) node(lane, lm int) int { return g.base[lane] + lm }

func (g *orderGraph) reaches(from, to int) bool {
	seen := map[int]bool{from: true}
	stack := []int{from}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == to {
			return true
		}
		for _, m := range g.edges[n] {
			if !seen[m] {
				seen[m] = true
				stack = append(stack, m)
			}
		}
	}
	return false
}

// implied: x of c already comes before the step after g of d.
func (g *orderGraph) implied(c, x, d, gl int) bool {
	return g.reaches(g.node(c, x), g.node(d, gl)+1)
}

// cycles: the step after g of d already comes before x of c.
func (g *orderGraph) cycles(c, x, d, gl int) bool {
	return g.reaches(g.node(d, gl)+1, g.node(c, x))
}

// reduce drops the gates the others imply (taken latest first, a gate
// at a later step may be implied by one added after it at an earlier).
func (g *orderGraph) reduce(gates []gate) []gate {
	var out []gate
	for _, gt := range gates {
		from, to := g.node(gt.c, gt.x), g.node(gt.d, gt.g)+1
		i := slices.Index(g.edges[from], to)
		g.edges[from] = slices.Delete(g.edges[from], i, i+1)
		if g.reaches(from, to) {
			continue // implied without it: leave it out
		}
		g.edges[from] = append(g.edges[from], to)
		out = append(out, gt)
	}
	return out
}

func (g *orderGraph) add(c, x, d, gl int) {
	from := g.node(c, x)
	g.edges[from] = append(g.edges[from], g.node(d, gl)+1)
}

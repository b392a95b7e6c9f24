package shrink

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// A schedule is built from one failing run's history: the order in which
// the kept clients passed their points up to the overlap, forced with
// wait_for gates, and what stopped them (a crash, a pause) pinned to the
// point they were at. A random failure is a race whose outcome the seed's
// timing decides; its schedule is the same race with every choice made.
//
// Only points a client passed once in its window (its landmarks) can be
// named: a point it passed in a polling loop is hit a different number of
// times when the timing changes, so neither a gate at it nor a wait for it
// would mean the same step. A gate at a landmark orders everything the
// client does after it, up to its next landmark, after the step waited for.
//
// Each kept client replays one window of its history. The client whose
// hold comes first (h0) replays from its critical section: in the replay
// it meets a free key, so how it got the lock in the history (after a
// wait, a takeover) is not replayed. Every other client replays its
// witness cycle, from its cycle/before-acquire, which waits for h0 to hold
// (in the history the key was busy, by h0 or by clients left out).

// event is one entry of a kept client's window: a step (point set) or an
// operation.
type event struct {
	client int // the client's number in the history
	t      int64
	// ran is when what the event reports happened, for the order across
	// clients: a reply's step (an after-point) comes a round trip after
	// its command was sent; the command ran about halfway, and two
	// clients' commands ran in that order, whatever their replies'.
	ran   int64
	point string
	fired []int // the spec's failpoints that fired at this step
	// n is a landmark's hit of its point in the replay, from 1.
	n  int
	lm int // for a stop, its index in the client's stops; else -1
	// once: the stop is a landmark (a gate may wait for it), not a pass
	// of the polling loop (a gate there holds every pass).
	once bool
	// sig: the event changed something others can see (a landmark, a
	// command the server reports, an operation); two passes of polling
	// loops need no order between them.
	sig bool
}

// lane is one kept client's window.
type lane struct {
	client    int // in the history
	replay    int // in the schedule
	events    []event
	landmarks []event
}

// gate is one wait: the client of lane d, at its landmark g, waits until
// the client of lane c passed its landmark x.
type gate struct{ d, g, c, x int }

// Schedule builds a scheduled spec from base (the random spec the history
// was recorded under) and one failing run of it: h its history, w the
// witness the checker named in it. keep are the clients to replay (their
// numbers in the history; the witness's two must be among them). The
// result names the kept clients 0..len(keep)-1, the first being the one
// that held first; it has base's lock, workload, network and clocks, and
// none of its faults, failpoints or exploration: those that touched a kept
// client in its window are pinned to the point it was at.
func Schedule(base *spec.Spec, h checker.History, w *checker.Witness, keep []int) (*spec.Spec, error) {
	if w == nil {
		return nil, errors.New("schedule: the run names no witness (two holders of one key)")
	}
	holds := checker.Holds(h)
	steps := stepsByClient(h)
	// Each kept client replays the cycle it was in at a moment of the
	// race: a witness holder, when the first of the two began its last
	// attempt (raceFrom; the later one may have been in an earlier cycle
	// then, a release of its own held up); the holder before them, when it acquired; one that
	// passed a step between the acquires, at that step.
	anchor := map[int]int64{}
	first := min(w.A.From, w.B.From)
	race := min(raceFrom(steps, w), keyChangedBefore(h, w.Key, first))
	for _, c := range keep {
		switch c {
		case w.A.Client, w.B.Client:
			anchor[c] = race
		default:
			if hd, ok := lastHoldBefore(holds, c, w.Key, first); ok {
				anchor[c] = hd.From
			} else if t, ok := firstLockStep(steps[c], race, max(w.A.From, w.B.From)); ok {
				anchor[c] = t
			} else {
				return nil, fmt.Errorf("schedule: client %d neither held %s before the witness nor passed a step of the lock between its acquires", c, w.Key)
			}
		}
	}
	end := w.ToNs
	// The client that held first in its window replays from its critical
	// section; the others start once it holds.
	cycle, hold := map[int]int{}, map[int]int64{}
	for _, c := range keep {
		cycle[c], hold[c] = cycleOf(steps[c], anchor[c], end)
		if cycle[c] < 0 {
			return nil, fmt.Errorf("schedule: client %d's history has no %s before %v (were its steps recorded?)", c, spec.PointBeforeAcquire, time.Duration(anchor[c]))
		}
	}
	order := slices.Clone(keep)
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(hold[a], hold[b]) })
	if hold[order[0]] == math.MaxInt64 {
		return nil, errors.New("schedule: none of the kept clients held the key before the overlap")
	}
	var lanes []*lane
	for i, c := range order {
		l, err := window(c, i, cycle[c], i == 0, steps[c], h, end)
		if err != nil {
			return nil, err
		}
		lanes = append(lanes, l)
	}
	serverOrder(lanes, h, w.Key)
	gates := orderGates(lanes)
	spec, err := schedSpec(base, w, lanes, gates, h)
	if err != nil {
		return nil, err
	}
	return spec, nil
}

// lastHoldBefore is client c's last hold of key that began before t.
func lastHoldBefore(holds []checker.Hold, c int, key string, t int64) (checker.Hold, bool) {
	var best checker.Hold
	found := false
	for _, hd := range holds {
		if hd.Client == c && hd.Key == key && hd.From < t && (!found || hd.From > best.From) {
			best, found = hd, true
		}
	}
	return best, found
}

type step struct {
	t     int64
	point string
	fired []int
}

// stepsByClient are every client's steps, in the history's order. Steps an
// exploration injected are told by their value and left out: they are
// faults, not points.
func stepsByClient(h checker.History) map[int][]step {
	out := map[int][]step{}
	for _, o := range h {
		if o.F == checker.FStep && o.Process >= 0 && !strings.HasPrefix(o.Value, "explore ") {
			out[o.Client] = append(out[o.Client], step{o.Time, o.Value, o.Fired})
		}
	}
	return out
}

// isReply says whether a point is passed when a command's reply arrived:
// a command point's after, or a lock's after-... step.
func isReply(point string) bool {
	return strings.HasSuffix(point, "/after") || strings.Contains(point, "/after-")
}

// raceFrom is when the witness's two acquires were under way: from the
// earlier holder's last command before its acquire returned (the step
// before its last step).
func raceFrom(steps map[int][]step, w *checker.Witness) int64 {
	earlier := w.A
	if w.B.From < w.A.From {
		earlier = w.B
	}
	es := steps[earlier.Client]
	for i := len(es) - 1; i > 0; i-- {
		if es[i].t < earlier.From {
			return es[i-1].t
		}
	}
	return earlier.From
}

// keyChangedBefore is a little before the server's next-to-last key event
// on key before t (math.MaxInt64: none): the last is the first holder's
// own write; the one before it (a DEL that freed the key, another's
// write) is part of the race, and so is the cycle each client was in
// when it ran. The event is received after it ran: a millisecond earlier
// is taken.
func keyChangedBefore(h checker.History, key string, t int64) int64 {
	var evs []int64
	for _, o := range h {
		if o.F == checker.FServer && o.Key == key && o.Time < t {
			evs = append(evs, o.Time)
		}
	}
	if len(evs) < 2 {
		return math.MaxInt64
	}
	return evs[len(evs)-2] - int64(time.Millisecond)
}

// runnerStep says whether a point is the runner's (the workload's cycle
// and critical section), not the lock's.
func runnerStep(point string) bool {
	return strings.HasPrefix(point, "cycle/") || strings.HasPrefix(point, "cs/")
}

// landmarks marks the steps of one cycle (from its cycle/before-acquire)
// that a gate can name, each by its first hit in the replay.
//
// A client that waited for the lock polled: the same steps over and over
// (SETNX, GET, ...), as many times as the timing made, and then went
// straight to the overlap: its tail, the last steps in which no point
// repeats. The tail's steps that are not the polling loop's (a DEL of an
// expired lock, its critical section) happen once in the replay, whatever
// the client did differently earlier in the history (a takeover it lost),
// and so does the cycle's start. The first client (first) replays from
// its critical section (steps[hold]): its steps from there on that it
// passed once.
func landmarks(steps []step, first bool, hold int) ([]stopKind, []int) {
	out := make([]stopKind, len(steps))
	nth := make([]int, len(steps))
	if first {
		// The replay's acquire passes cycle/before-acquire once and no
		// other runner point: those are counted exactly from there. A
		// point of the lock it passed in its acquire in the history may
		// be passed any number of times in the replay's: not named.
		acquire := map[string]bool{}
		for _, s := range steps[:hold] {
			acquire[s.point] = true
		}
		count := map[string]int{}
		for _, s := range steps[hold:] {
			count[s.point]++
		}
		seen := map[string]int{spec.PointBeforeAcquire: 1}
		for i := hold; i < len(steps); i++ {
			p := steps[i].point
			seen[p]++
			switch {
			case runnerStep(p):
				out[i], nth[i] = landmarkStop, seen[p]
			case count[p] == 1 && !acquire[p]:
				out[i], nth[i] = landmarkStop, 1
			}
		}
		return out, nth
	}
	out[0], nth[0] = landmarkStop, 1 // cycle/before-acquire
	tail := len(steps)
	seen := map[string]bool{}
	for tail > 1 && !seen[steps[tail-1].point] {
		seen[steps[tail-1].point] = true
		tail--
	}
	// The loop is what the client did between the tail's first point's
	// previous pass and the tail.
	loop := map[string]bool{}
	if tail < len(steps) {
		head := steps[tail].point
		loop[head] = true
		for i := tail - 1; i > 0 && steps[i].point != head; i-- {
			loop[steps[i].point] = true
		}
	}
	for i := tail; i < len(steps); i++ {
		switch {
		case steps[i].point == spec.PointBeforeAcquire:
		case loop[steps[i].point]:
			out[i] = loopStop
		default:
			out[i], nth[i] = landmarkStop, 1
		}
	}
	return out, nth
}

// stopKind is what a step of a lane is to a schedule.
type stopKind int

const (
	notStop stopKind = iota
	// loopStop: a pass of the polling loop in the tail; a gate there holds
	// every pass of its point (the earlier ones failed anyway), so it
	// holds the last; nothing can wait for it, as its count is the
	// timing's.
	loopStop
	// landmarkStop: a step passed once; its first hit in the replay.
	landmarkStop
)

// firstLockStep is the time of the first of steps in (from, to] that is
// the lock's own, not the runner's.
func firstLockStep(steps []step, from, to int64) (int64, bool) {
	for _, s := range steps {
		if s.t > from && s.t <= to && !runnerStep(s.point) {
			return s.t, true
		}
	}
	return 0, false
}

// window is kept client c's lane: the cycle that anchor falls in, from its
// start (first: from its critical section) up to end. Its landmarks are
// the points it passed once in the whole cycle, so that in the replay each
// is the point's first hit.
// cycleOf is the index among steps of the start of the cycle the client
// was in at anchor (-1: none), and when it first passed cs/hold from there
// up to end (math.MaxInt64: never).
func cycleOf(steps []step, anchor, end int64) (int, int64) {
	cycle := -1
	for i, s := range steps {
		if s.point == spec.PointBeforeAcquire && s.t <= anchor {
			cycle = i
		}
	}
	if cycle < 0 {
		return -1, math.MaxInt64
	}
	for _, s := range steps[cycle:] {
		if s.t > end {
			break
		}
		if s.point == spec.PointHold {
			return cycle, s.t
		}
	}
	return cycle, math.MaxInt64
}

// window is kept client c's lane: from steps[cycle], the start of the
// cycle it replays (first: from its critical section), up to end. Which
// of its steps a gate can name says landmarks.
func window(c, replay, cycle int, first bool, steps []step, h checker.History, end int64) (*lane, error) {
	hold := -1
	for i := cycle; i < len(steps) && hold < 0; i++ {
		if steps[i].point == spec.PointHold {
			hold = i
		}
	}
	last := cycle // the last step up to end
	for last+1 < len(steps) && steps[last+1].t <= end {
		last++
	}
	if first && (hold < 0 || hold > last) {
		return nil, fmt.Errorf("schedule: client %d reached %s only after the overlap", c, spec.PointHold)
	}
	landmark, nth := landmarks(steps[cycle:last+1], first, hold-cycle)
	from := cycle
	if first {
		from = hold
	}
	start := steps[from].t
	l := &lane{client: c, replay: replay}
	for i, s := range steps[from : last+1] {
		e := event{client: c, t: s.t, point: s.point, fired: s.fired, n: nth[from-cycle+i], lm: -1}
		if k := landmark[from-cycle+i]; k != notStop {
			e.lm, e.once, e.sig = len(l.landmarks), k == landmarkStop, k == landmarkStop
			l.landmarks = append(l.landmarks, e)
		}
		l.events = append(l.events, e)
	}
	// The client's operations (acquire, release, read, write, crash)
	// between its steps: a gate must order them too.
	for _, o := range h {
		if o.Client == c && o.Process >= 0 && o.F != checker.FStep && o.Time > start && o.Time <= end {
			l.events = append(l.events, event{client: c, t: o.Time, lm: -1, sig: true})
		}
	}
	slices.SortStableFunc(l.events, func(a, b event) int { return cmp.Compare(a.t, b.t) })
	for i := range l.events {
		e := &l.events[i]
		e.ran = e.t
		if i > 0 && isReply(e.point) {
			e.ran = (l.events[i-1].t + e.t) / 2
		}
	}
	return l, nil
}

// serverOrder sets, for the kept clients' commands that changed the key,
// when they ran by the server's own account: its key events (set, del,
// expire, ...) come in the order it executed the commands, while the
// clients' replies come back in any order (latency, jitter). Each event is
// given to a kept client's command of a kind that makes it (DEL a del,
// SET or SETNX a set, a script anything), in flight when the event was
// received, sent first; an event no kept client can have made (a client
// left out) is no one's.
func serverOrder(lanes []*lane, h checker.History, key string) {
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
		if o.F != checker.FServer || o.Key != key {
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

// schedSpec writes the schedule as a spec: base's lock and conditions, the
// kept clients, the gates, and the crashes and faults pinned to points.
func schedSpec(base *spec.Spec, w *checker.Witness, lanes []*lane, gates []gate, h checker.History) (*spec.Spec, error) {
	s := *base
	s.Mode = "scheduled"
	s.Clients = len(lanes)
	s.Hosts = 0
	s.Keys = 1
	s.Ops = 0
	s.Faults, s.Explore, s.Failpoints = nil, nil, nil
	var who []string
	renum := map[int]int{}
	for _, l := range lanes {
		renum[l.client] = l.replay
		who = append(who, fmt.Sprintf("c%d as c%d", l.client, l.replay))
	}
	s.Description = fmt.Sprintf("%s as a schedule: the order in which %s passed their points up to the overlap on %s, forced with gates",
		base.Name, strings.Join(who, ", "), w.Key)
	s.ClockOffsets = nil
	for c, d := range base.ClockOffsets {
		if n, ok := renum[c]; ok {
			if s.ClockOffsets == nil {
				s.ClockOffsets = map[int]time.Duration{}
			}
			s.ClockOffsets[n] = d
		}
	}
	for _, gt := range gates {
		d, c := lanes[gt.d], lanes[gt.c]
		at, x := d.landmarks[gt.g], c.landmarks[gt.x]
		a := lockimpl.Action{WaitFor: x.point, WaitClient: c.replay} // a loop's point: every pass
		if at.once {
			a.Skip, a.Times = at.n-1, 1
		}
		if x.n > 1 {
			a.WaitCount = x.n
		}
		s.Failpoints = append(s.Failpoints, spec.FailpointSpec{Client: d.replay, Point: at.point, Action: a})
	}
	for _, l := range lanes {
		s.Failpoints = append(s.Failpoints, pinned(base, l, h, renum, w.ToNs)...)
	}
	return &s, nil
}

// pinned are the crash and the faults that met lane l's client in its
// window (up to end, the overlap's), each at the landmark the client had passed last when it came.
// A crash a failpoint caused is at the step that fired it; any other
// crash and every fault naming the client (a pause, the timeline's crash)
// at the last landmark before it began (the first, for one that began
// before the window).
func pinned(base *spec.Spec, l *lane, h checker.History, renum map[int]int, end int64) []spec.FailpointSpec {
	if len(l.landmarks) == 0 {
		return nil
	}
	start := l.landmarks[0].t
	var out []spec.FailpointSpec
	// A random failpoint's fault (a sleep, a lost reply, a fault placed at
	// a step) that fired at one of the lane's landmarks: there, once.
	for _, e := range l.landmarks {
		for _, i := range e.fired {
			if !e.once || i < 0 || i >= len(base.Failpoints) {
				continue
			}
			fp := base.Failpoints[i]
			a := fp.Action
			if a.Prob == 0 && fp.Client >= 0 || a.Sleep == 0 && !a.LoseReply && fp.Fault == nil {
				continue // a schedule's own step, or a crash (pinned below)
			}
			p := spec.FailpointSpec{Client: l.replay, Point: e.point,
				Action: lockimpl.Action{Skip: e.n - 1, Times: 1, Sleep: a.Sleep, LoseReply: a.LoseReply}}
			if fp.Fault != nil {
				f := *fp.Fault
				f.Clients = []int{l.replay}
				p.Fault = &f
			}
			out = append(out, p)
		}
	}
	at := func(t int64) event {
		p := l.landmarks[0]
		for _, e := range l.landmarks {
			if e.once && e.t <= t {
				p = e
			}
		}
		return p
	}
	stops := map[int64]int64{}
	for _, o := range h {
		if o.F == checker.FStop && o.Process == checker.NemesisProcess {
			stops[o.N] = o.Time
		}
	}
	for _, o := range h {
		switch {
		case o.F == checker.FCrash && o.Client == l.client && o.Process >= 0 && o.Time >= start && o.Time <= end:
			e := at(o.Time)
			out = append(out, spec.FailpointSpec{Client: l.replay, Point: e.point, Action: lockimpl.Action{Skip: e.n - 1, Times: 1, Crash: true}})
		case o.F == checker.FStart && o.Type == checker.Ok && o.Targets != nil && firstKept(o.Targets.Clients, renum) == l.client:
			stop, ok := stops[o.N]
			if !ok {
				stop = end
			}
			if stop < start || o.Time > end {
				continue
			}
			kind, _, _ := strings.Cut(o.Value, " ")
			f := nemesis.Spec{Kind: kind, Clients: []int{l.replay}, For: time.Duration(stop - o.Time).Round(granularity)}
			if kind == "crash" {
				f.For = 0
			}
			for _, c := range o.Targets.Clients {
				if n, ok := renum[c]; ok && c != l.client {
					f.Clients = append(f.Clients, n)
				}
			}
			e := at(o.Time)
			out = append(out, spec.FailpointSpec{Client: l.replay, Point: e.point, Action: lockimpl.Action{Skip: e.n - 1, Times: 1}, Fault: &f})
		}
	}
	return out
}

// firstKept is the first of clients that is kept (-1: none): a fault that
// met several kept clients is pinned once, in that one's window.
func firstKept(clients []int, renum map[int]int) int {
	for _, c := range clients {
		if _, ok := renum[c]; ok {
			return c
		}
	}
	return -1
}

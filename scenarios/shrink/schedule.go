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
	"github.com/lockstorm/lockstorm/history"
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
func Schedule(base *spec.Spec, h history.History, w *checker.Witness, keep []int) (*spec.Spec, error) {
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
func stepsByClient(h history.History) map[int][]step {
	out := map[int][]step{}
	for _, o := range h {
		if o.F == history.FStep && o.Process >= 0 && !strings.HasPrefix(o.Value, "explore ") {
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
func keyChangedBefore(h history.History, key string, t int64) int64 {
	var evs []int64
	for _, o := range h {
		if o.F == history.FServer && o.Key == key && o.Time < t {
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
	// The polling loop is sought in the lane's last acquire: up to the
	// hold it led to (acq), or to the lane's end if it was still under
	// way. From that hold on the client passed the runner's points once
	// each and the lock's own as its critical section made it (an extend
	// every few milliseconds repeats its commands): no loop of the
	// acquire's, so a pause or a crash met there is pinned to the hold,
	// not to the start of the cycle.
	acq := len(steps)
	for i := len(steps) - 1; i > 0 && steps[i].point != spec.PointBeforeAcquire; i-- {
		if steps[i].point == spec.PointHold {
			acq = i
			break
		}
	}
	held(steps, acq, out, nth)
	tail := acq
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
	for i := tail; i < acq; i++ {
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

// held marks the steps from a non-first lane's last hold (steps[from:]):
// the runner's points by their hit in the whole window, the lock's by
// their first if they were passed once from the start of the window on;
// a point passed more than once there is not named.
func held(steps []step, from int, out []stopKind, nth []int) {
	count := map[string]int{}
	for _, s := range steps {
		count[s.point]++
	}
	seen := map[string]int{}
	for i, s := range steps {
		seen[s.point]++
		switch {
		case i < from:
		case runnerStep(s.point):
			out[i], nth[i] = landmarkStop, seen[s.point]
		case count[s.point] == 1:
			out[i], nth[i] = landmarkStop, 1
		}
	}
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
func window(c, replay, cycle int, first bool, steps []step, h history.History, end int64) (*lane, error) {
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
		if o.Client == c && o.Process >= 0 && o.F != history.FStep && o.Time > start && o.Time <= end {
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

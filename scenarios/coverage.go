package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// The client states a point can be hit in: what the client was doing when
// the explorer could fault it. A fault means a different thing in each (a
// pause while waiting is a late grant, while releasing a late release,
// while holding a hold past its lease), so coverage counts them apart.
const (
	StateWaiting   = "waiting"   // inside an acquire
	StateHolding   = "holding"   // between a granted acquire and its release, outside a call (a watchdog's renewal)
	StateExtending = "extending" // inside an extend
	StateReleasing = "releasing" // inside a release
	StatePaused    = "paused"    // a pause stopped the client during its current call or hold: it runs on, late
)

// States lists the client states, in the order reports show them.
var States = []string{StateWaiting, StateHolding, StateExtending, StateReleasing, StatePaused}

// Situation is where and how a point was reached: the point (its node
// folded: cmd/*/SET/after, a fault on one node of a quorum being the same
// case as on another), the client's state and whether another client was
// waiting to acquire at that moment (a fault with nobody waiting rarely
// shows anything: nobody takes the lock it lets go).
type Situation struct {
	Point string `json:"point"`
	// Reply is the kind of reply at a command's after point
	// (lockimpl.ReplyNil...): a grant and a refusal are two situations.
	Reply     string `json:"reply,omitempty"`
	State     string `json:"state"`
	Contender bool   `json:"contender"`
}

// Combo is one combination of coverage: a situation and a fault the
// explorer could inject there. Faults is how many times it did (0: the
// situation was reached but never got this fault).
type Combo struct {
	Situation
	Fault  string `json:"fault"`
	Faults int    `json:"faults"`
}

// Key names the combination of lock impl, stable across runs: the unit
// a battery's coverage and the steering of later runs count.
func (c Combo) Key(impl string) string {
	point := c.Point
	if c.Reply != "" {
		point += "=" + c.Reply
	}
	return fmt.Sprintf("%s|%s|%s|%s|%t", impl, point, c.Fault, c.State, c.Contender)
}

// foldPoint folds a command point's node (cmd/n3/SET/after → cmd/*/SET/after).
func foldPoint(point string) string {
	if !spec.CmdPoint(point) {
		return point
	}
	parts := strings.SplitN(point, "/", 3)
	if len(parts) < 3 {
		return point
	}
	return parts[0] + "/*/" + parts[2]
}

// faultsAt are the explorer's actions that can act in situation s: a
// reply can only be lost once there is one, and a pause only shows
// something while another client runs beside it and wants the lock (it
// takes the lock the pause lets expire), so none is spent without one.
// Seen: explore-late-grant x setnx-expire on sim, seeds 1-20, found on 10
// when pauses went to clients nobody waited beside, 16 when not.
func faultsAt(actions []string, s Situation) []string {
	after := spec.CmdPoint(s.Point) && strings.HasSuffix(s.Point, "/after")
	var out []string
	for _, a := range actions {
		if a == spec.ExploreLoseReply && !after || a == spec.ExplorePause && !s.Contender {
			continue
		}
		out = append(out, a)
	}
	return out
}

// comboTable is a run's combinations as the explorer sees them: the
// situations reached and the faults injected in each.
type comboTable struct {
	reached map[Situation]int
	faulted map[Situation]map[string]int
	// first is when each combination was first faulted (the recorder's
	// clock).
	first map[Situation]map[string]int64
	// near and nearFaulted count the near-misses reached and faulted.
	near, nearFaulted int
}

func newComboTable() *comboTable {
	return &comboTable{reached: map[Situation]int{}, faulted: map[Situation]map[string]int{}, first: map[Situation]map[string]int64{}}
}

// fault counts act injected in situation s at now.
func (t *comboTable) fault(s Situation, act string, now int64) {
	m := t.faulted[s]
	if m == nil {
		m = map[string]int{}
		t.faulted[s] = m
		t.first[s] = map[string]int64{}
	}
	if m[act] == 0 {
		t.first[s][act] = now
	}
	m[act]++
}

// coveredBefore says whether act was injected in situation s before now.
// A fault at now itself does not count: on sim, two clients at one
// virtual instant run in the scheduler's order, and whether the second
// sees the first's fault must not depend on it.
func (t *comboTable) coveredBefore(s Situation, act string, now int64) bool {
	at, ok := t.first[s][act]
	return ok && at < now
}

// combos lists every combination of a reached situation and a fault that
// could act there, sorted.
func (t *comboTable) combos(actions []string) []Combo {
	var out []Combo
	for s := range t.reached {
		for _, a := range faultsAt(actions, s) {
			out = append(out, Combo{Situation: s, Fault: a, Faults: t.faulted[s][a]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key("") < out[j].Key("") })
	return out
}

// CoverageSet is the union of runs' combinations, per lock: what a battery
// or a hunt has covered so far. Safe for concurrent use.
type CoverageSet struct {
	mu sync.Mutex
	// combos maps a combination's key to whether some run faulted it.
	combos map[string]bool
}

// NewCoverageSet returns an empty set.
func NewCoverageSet() *CoverageSet { return &CoverageSet{combos: map[string]bool{}} }

// Add unions one run's combinations of lock impl into the set.
func (s *CoverageSet) Add(impl string, combos []Combo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range combos {
		k := c.Key(impl)
		s.combos[k] = s.combos[k] || c.Faults > 0
	}
}

// Counts says how many combinations were covered (faulted at least once)
// of how many were reached.
func (s *CoverageSet) Counts() (covered, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ok := range s.combos {
		if ok {
			covered++
		}
	}
	return covered, len(s.combos)
}

// Covered lists the keys of the covered combinations, sorted: what the
// next runs' explorers steer away from (Config.Prior).
func (s *CoverageSet) Covered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, ok := range s.combos {
		if ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Line is the summary's coverage sentence, "" when no run explored.
func (s *CoverageSet) Line() string {
	covered, total := s.Counts()
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("coverage: %d of %d combinations", covered, total)
}

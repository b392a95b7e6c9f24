package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrLostReply is returned by a failpoint whose action loses the reply of
// the command that has just been answered: the command took effect on the
// server, and the client gets an error instead of the reply, so it cannot
// know the outcome. Only meaningful at a command's after-reply point.
var ErrLostReply = errors.New("reply lost at failpoint")

// Action is what a failpoint does when a client reaches it. Exactly the
// fields that are set apply, in this order: wait for another client's step,
// wait for a gate, run Do (a fault placed here), sleep, open a gate, crash.
type Action struct {
	// Skip ignores the first Skip hits of the point.
	Skip int `yaml:"skip" json:"skip,omitempty"`
	// Times applies the action to that many hits after Skip (0: every hit).
	Times int `yaml:"times" json:"times,omitempty"`
	// Nth, when > 0, applies the action only to the Nth hit of the point in
	// the client's current cycle (the runner starts a cycle before each
	// acquire): "the 2nd SET of a cycle" is cmd/*/SET/before with nth: 2.
	Nth int `yaml:"nth" json:"nth,omitempty"`
	// Prob applies the action to each eligible hit with this probability
	// (0: always), drawn from the run's seed: faults at random times that a
	// seed replays.
	Prob float64 `yaml:"prob" json:"prob,omitempty"`
	// WaitFor blocks until client WaitClient has reached point WaitFor at least
	// WaitCount times (default 1): the barrier that forces an interleaving.
	WaitFor    string `yaml:"wait_for" json:"wait_for,omitempty"`
	WaitClient int    `yaml:"wait_client" json:"wait_client,omitempty"`
	WaitCount  int    `yaml:"wait_count" json:"wait_count,omitempty"`
	// Sleep delays the client at the point.
	Sleep time.Duration `yaml:"sleep" json:"sleep,omitempty"`
	// Gate blocks until the named gate is opened (Hub.Open).
	Gate string `yaml:"gate" json:"gate,omitempty"`
	// Crash makes the client vanish at the point.
	Crash bool `yaml:"crash" json:"crash,omitempty"`
	// LoseReply makes the hit return ErrLostReply (after the other parts
	// ran): at a command's after-reply point the command landed and the
	// client is told it failed.
	LoseReply bool `yaml:"lose_reply" json:"lose_reply,omitempty"`
	// Open opens the named gate after the other parts ran.
	Open string `yaml:"open" json:"open,omitempty"`
	// Do runs after the waits and before the sleep: the runner's hook for
	// faults placed at a step (a pause while holding, a clock jump at the
	// right moment), which then take effect while the client sleeps there.
	Do func(ctx context.Context) error `yaml:"-" json:"-"`
	// ID names the action in Hub.OnHit's report of the actions that
	// applied (the runner uses the failpoint's index in the spec).
	ID int `yaml:"-" json:"-"`
	// pattern is the pattern the action was attached at, if any: its
	// Skip, Times and Nth count the hits of every point it matches (the
	// second SET of a cycle on any node, one lost reply among all of a
	// cycle's commands), not of each point apart.
	pattern string
}

// Hub coordinates the failpoints of every client of a run: it counts hits so
// barriers can wait on them, and holds the gates.
type Hub struct {
	armed atomic.Bool
	held  atomic.Bool // Hold: armed, but hits pass untouched until Start
	mu    sync.Mutex
	cond  *sync.Cond
	hits  map[hitKey]int
	gates map[string]bool
	// Seed drives the Prob draws of every client's failpoints.
	Seed uint64
	// OnHit, when set, is told every hit of an armed hub (to record steps in
	// the history so a witness can name them), with the IDs of the actions
	// that apply to this hit (after Skip, Times and Prob), before they run:
	// so a history shows which actions fired and how often. It must be
	// cheap and safe for concurrent use.
	OnHit func(client int, point string, fired []int)
	// Explore, when set, is called on every hit of an armed hub after the
	// point's attached actions ran: the runner's exploration, which may
	// inject a fault at points nobody named. Its error is the hit's error.
	// It must be safe for concurrent use.
	Explore func(ctx context.Context, client int, point string) error

	faulted map[string]int // point → faults injected there (guarded by mu)
}

// IsFault says whether the action disturbs the client (as opposed to only
// ordering it against others with a barrier or gate): it counts towards
// point coverage's "faulted".
func (a *Action) IsFault() bool {
	return a.Crash || a.Sleep > 0 || a.Do != nil || a.LoseReply
}

// MarkFaulted counts a fault injected at point (by an attached action or
// by an explorer).
func (h *Hub) MarkFaulted(point string) {
	h.mu.Lock()
	h.faulted[point]++
	h.mu.Unlock()
}

// PointStat is one point's coverage in a run.
type PointStat struct {
	Point  string `json:"point"`
	Hits   int    `json:"hits"`
	Faults int    `json:"faults,omitempty"`
}

// Coverage lists every point hit while the hub was armed, with how many
// times it was hit (all clients) and how many faults were injected there,
// sorted by point.
func (h *Hub) Coverage() []PointStat {
	h.mu.Lock()
	defer h.mu.Unlock()
	by := map[string]*PointStat{}
	for k, n := range h.hits {
		ps := by[k.point]
		if ps == nil {
			ps = &PointStat{Point: k.point}
			by[k.point] = ps
		}
		ps.Hits += n
	}
	for p, n := range h.faulted {
		ps := by[p]
		if ps == nil {
			ps = &PointStat{Point: p}
			by[p] = ps
		}
		ps.Faults += n
	}
	out := make([]PointStat, 0, len(by))
	for _, ps := range by {
		out = append(out, *ps)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Point < out[j].Point })
	return out
}

type hitKey struct {
	client int
	point  string
}

// NewHub returns an empty hub.
func NewHub() *Hub {
	h := &Hub{hits: map[hitKey]int{}, gates: map[string]bool{}, faulted: map[string]int{}}
	h.cond = sync.NewCond(&h.mu)
	return h
}

// Open opens a gate and wakes everyone waiting on it or on a barrier.
func (h *Hub) Open(gate string) {
	h.mu.Lock()
	h.gates[gate] = true
	h.mu.Unlock()
	h.cond.Broadcast()
}

// Hits reports how many times client reached point (only counted while armed).
func (h *Hub) Hits(client int, point string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[hitKey{client, point}]
}

// Failpoints are one client's named points. With nothing attached anywhere in
// the hub, Hit is one atomic load.
type Failpoints struct {
	client  int
	hub     *Hub
	actions map[string][]*Action
	// patterns are attached points with a '*' (path.Match syntax, one
	// segment each: cmd/*/SET/after); resolved caches what they match.
	patterns map[string][]*Action
	resolved map[string][]*Action
	counts   map[string]int // per point (and per pattern) hits seen by this client (own goroutines serialised by mu)
	cycle    map[string]int // per point (and per pattern) hits since the client's cycle began
	rng      *rand.Rand     // Prob draws; guarded by mu
	mu       sync.Mutex
}

// NewFailpoints returns client's failpoints on hub.
func NewFailpoints(hub *Hub, client int) *Failpoints {
	return &Failpoints{client: client, hub: hub, actions: map[string][]*Action{}, patterns: map[string][]*Action{},
		resolved: map[string][]*Action{}, counts: map[string]int{}, cycle: map[string]int{}}
}

// Attach adds an action at point. A point with a '*' is a pattern
// (path.Match syntax): the action applies to every point it matches.
// Attaching arms the whole hub, so every client starts counting hits
// (barriers need them).
func (f *Failpoints) Attach(point string, a Action) {
	f.mu.Lock()
	if strings.Contains(point, "*") {
		a.pattern = point
		f.patterns[point] = append(f.patterns[point], &a)
	} else {
		f.actions[point] = append(f.actions[point], &a)
	}
	clear(f.resolved)
	f.mu.Unlock()
	f.hub.armed.Store(true)
}

// lookup returns the actions at point, patterns included; f.mu held.
func (f *Failpoints) lookup(point string) []*Action {
	if len(f.patterns) == 0 {
		return f.actions[point]
	}
	if acts, ok := f.resolved[point]; ok {
		return acts
	}
	acts := append([]*Action(nil), f.actions[point]...)
	pats := make([]string, 0, len(f.patterns))
	for p := range f.patterns {
		pats = append(pats, p)
	}
	sort.Strings(pats) // a fixed order, so a seed replays the same draws
	for _, p := range pats {
		if ok, _ := path.Match(p, point); ok {
			acts = append(acts, f.patterns[p]...)
		}
	}
	f.resolved[point] = acts
	return acts
}

// patternKey keeps a pattern's counts apart from a point's of the same name.
const patternKey = "pattern:"

// count counts one hit of key: the hits before it, and its place in the
// cycle. f.mu is held.
func (f *Failpoints) count(key string) [2]int {
	n := f.counts[key]
	f.counts[key] = n + 1
	f.cycle[key]++
	return [2]int{n, f.cycle[key]}
}

// NewCycle starts a new cycle of the client: Nth counts from here.
func (f *Failpoints) NewCycle() {
	if f == nil || !f.hub.armed.Load() {
		return
	}
	f.mu.Lock()
	clear(f.cycle)
	f.mu.Unlock()
}

// Armed says whether hits are counted (some action, explorer or Arm), once
// a Hold is over.
func (f *Failpoints) Armed() bool { return f != nil && f.hub.armed.Load() }

// Arm makes the hub count and report hits without any action attached.
func (h *Hub) Arm() { h.armed.Store(true) }

// Hold lets every hit pass untouched until Start: not counted, not reported,
// no action and no exploration, while Armed still says yes. A runner holds
// its hub from the moment its clients are armed (a client process is told
// at its hello whether to announce its points) until its clock starts:
// what a client does before (a library's own connection set-up, sent
// through a relay) is no step of the run, and a crash there would kill a
// client that never ran, recorded nowhere, or abort the run.
func (h *Hub) Hold() { h.held.Store(true) }

// Start ends Hold: hits count and act from now on.
func (h *Hub) Start() { h.held.Store(false) }

// Hit is called by an implementation at each algorithmic step.
func (f *Failpoints) Hit(ctx context.Context, point string) error {
	if f == nil || !f.hub.armed.Load() || f.hub.held.Load() {
		return nil
	}
	f.mu.Lock()
	acts := f.lookup(point)
	own := f.count(point)
	var pats map[string][2]int
	for _, a := range acts {
		if _, ok := pats[a.pattern]; a.pattern != "" && !ok {
			if pats == nil {
				pats = map[string][2]int{}
			}
			pats[a.pattern] = f.count(patternKey + a.pattern)
		}
	}
	f.mu.Unlock()

	h := f.hub
	h.mu.Lock()
	h.hits[hitKey{f.client, point}]++
	h.mu.Unlock()
	h.cond.Broadcast()
	// Which actions apply is decided before any runs, so the hit can be
	// reported with them; the Prob draws happen in the same order as the
	// actions, so a seed replays the same choices.
	var apply []*Action
	var fired []int
	for _, a := range acts {
		c := own
		if a.pattern != "" {
			c = pats[a.pattern]
		}
		n, nth := c[0], c[1]
		if n < a.Skip || (a.Times > 0 && n >= a.Skip+a.Times) || (a.Nth > 0 && nth != a.Nth) {
			continue
		}
		if a.Prob > 0 {
			f.mu.Lock()
			if f.rng == nil {
				f.rng = rand.New(rand.NewPCG(h.Seed, uint64(f.client)+0xf417))
			}
			skip := f.rng.Float64() >= a.Prob
			f.mu.Unlock()
			if skip {
				continue
			}
		}
		apply = append(apply, a)
		fired = append(fired, a.ID)
	}
	if h.OnHit != nil {
		h.OnHit(f.client, point, fired)
	}
	for _, a := range apply {
		if a.IsFault() {
			h.MarkFaulted(point)
		}
		if err := f.do(ctx, point, a); err != nil {
			return err
		}
	}
	if h.Explore != nil {
		return h.Explore(ctx, f.client, point)
	}
	return nil
}

func (f *Failpoints) do(ctx context.Context, point string, a *Action) error {
	h := f.hub
	if a.WaitFor != "" {
		want := a.WaitCount
		if want == 0 {
			want = 1
		}
		if err := h.waitUntil(ctx, func() bool { return h.hits[hitKey{a.WaitClient, a.WaitFor}] >= want }); err != nil {
			return fmt.Errorf("failpoint %s: waiting for client %d at %s: %w", point, a.WaitClient, a.WaitFor, err)
		}
	}
	if a.Gate != "" {
		if err := h.waitUntil(ctx, func() bool { return h.gates[a.Gate] }); err != nil {
			return fmt.Errorf("failpoint %s: gate %s: %w", point, a.Gate, err)
		}
	}
	if a.Do != nil {
		if err := a.Do(ctx); err != nil {
			return fmt.Errorf("failpoint %s: %w", point, err)
		}
	}
	if a.Sleep > 0 {
		if err := SleepCtx(ctx, a.Sleep); err != nil {
			return err
		}
	}
	if a.Open != "" {
		h.Open(a.Open)
	}
	if a.Crash {
		return fmt.Errorf("%w %s", ErrCrashed, point)
	}
	if a.LoseReply {
		return fmt.Errorf("%w %s", ErrLostReply, point)
	}
	return nil
}

// waitUntil blocks until cond (evaluated under h.mu) holds or ctx ends.
func (h *Hub) waitUntil(ctx context.Context, cond func() bool) error {
	stop := context.AfterFunc(ctx, func() {
		h.mu.Lock()
		h.mu.Unlock()
		h.cond.Broadcast()
	})
	defer stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	for !cond() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		h.cond.Wait()
	}
	return nil
}

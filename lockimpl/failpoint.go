package lockimpl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Action is what a failpoint does when a client reaches it. Exactly the
// fields that are set apply, in this order: wait for another client's step,
// wait for a gate, run Do (a fault placed here), sleep, open a gate, crash.
type Action struct {
	// Skip ignores the first Skip hits of the point.
	Skip int `yaml:"skip" json:"skip,omitempty"`
	// Times applies the action to that many hits after Skip (0: every hit).
	Times int `yaml:"times" json:"times,omitempty"`
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
	// Open opens the named gate after the other parts ran.
	Open string `yaml:"open" json:"open,omitempty"`
	// Do runs after the waits and before the sleep: the runner's hook for
	// faults placed at a step (a pause while holding, a clock jump at the
	// right moment), which then take effect while the client sleeps there.
	Do func(ctx context.Context) error `yaml:"-" json:"-"`
}

// Hub coordinates the failpoints of every client of a run: it counts hits so
// barriers can wait on them, and holds the gates.
type Hub struct {
	armed atomic.Bool
	mu    sync.Mutex
	cond  *sync.Cond
	hits  map[hitKey]int
	gates map[string]bool
	// Seed drives the Prob draws of every client's failpoints.
	Seed uint64
	// OnHit, when set, is told every hit of an armed hub (to record steps in
	// the history so a witness can name them). It must be cheap and safe for
	// concurrent use.
	OnHit func(client int, point string)
}

type hitKey struct {
	client int
	point  string
}

// NewHub returns an empty hub.
func NewHub() *Hub {
	h := &Hub{hits: map[hitKey]int{}, gates: map[string]bool{}}
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
	counts  map[string]int // per point hits seen by this client (own goroutines serialised by mu)
	rng     *rand.Rand     // Prob draws; guarded by mu
	mu      sync.Mutex
}

// NewFailpoints returns client's failpoints on hub.
func NewFailpoints(hub *Hub, client int) *Failpoints {
	return &Failpoints{client: client, hub: hub, actions: map[string][]*Action{}, counts: map[string]int{}}
}

// Attach adds an action at point. Attaching arms the whole hub, so every
// client starts counting hits (barriers need them).
func (f *Failpoints) Attach(point string, a Action) {
	f.mu.Lock()
	f.actions[point] = append(f.actions[point], &a)
	f.mu.Unlock()
	f.hub.armed.Store(true)
}

// Arm makes the hub count and report hits without any action attached.
func (h *Hub) Arm() { h.armed.Store(true) }

// Hit is called by an implementation at each algorithmic step.
func (f *Failpoints) Hit(ctx context.Context, point string) error {
	if f == nil || !f.hub.armed.Load() {
		return nil
	}
	f.mu.Lock()
	n := f.counts[point]
	f.counts[point] = n + 1
	acts := f.actions[point]
	f.mu.Unlock()

	h := f.hub
	h.mu.Lock()
	h.hits[hitKey{f.client, point}]++
	h.mu.Unlock()
	h.cond.Broadcast()
	if h.OnHit != nil {
		h.OnHit(f.client, point)
	}
	for _, a := range acts {
		if n < a.Skip || (a.Times > 0 && n >= a.Skip+a.Times) {
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
		if err := f.do(ctx, point, a); err != nil {
			return err
		}
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

// Armed reports whether the hub counts hits (some action is attached, or a
// recorder listens): a client process is told whether to announce its points
// at all, since each announcement costs a round trip.
func (f *Failpoints) Armed() bool { return f != nil && f.hub.armed.Load() }

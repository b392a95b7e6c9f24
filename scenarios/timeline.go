package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// timeline runs the nemesis schedule: each fault starts at its time, heals
// after its duration, repeats with its period, and every start and end is a
// history entry of the nemesis process. Whatever is still active heals when
// the run ends, before the final checks.
type timeline struct {
	r        *run
	env      *nemesis.Env
	wg       sync.WaitGroup
	injectMu sync.Mutex
	mu       sync.Mutex
	active   map[int]activeFault
	seq      int
	// stopped is set (under mu) when stopAndHeal begins: from then on no
	// heal goroutine is added to wg, whose Wait may be running.
	stopped bool
	cancel  context.CancelFunc
	ctx     context.Context // the schedule's; done when it stops
}

type activeFault struct {
	desc string
	heal nemesis.Heal
	// clients are the clients the fault named (a pause stopped them, a
	// network fault cut or slowed their links): a late heal held them under
	// it longer than the spec asked, and that is their lag.
	clients []int
}

func newTimeline(r *run, env *nemesis.Env) *timeline {
	return &timeline{r: r, env: env, active: map[int]activeFault{}}
}

func describe(s nemesis.Spec, detail string) string {
	var b strings.Builder
	b.WriteString(s.Kind)
	add := func(k string, v any) { fmt.Fprintf(&b, " %s=%v", k, v) }
	if len(s.Hosts) > 0 {
		add("hosts", s.Hosts)
	}
	if len(s.Clients) > 0 {
		add("clients", s.Clients)
	}
	if len(s.Nodes) > 0 {
		add("nodes", s.Nodes)
	}
	if s.Pick != "" {
		add("pick", s.Pick)
	}
	b.WriteString(s.ParamText())
	if detail != "" {
		add("on", detail)
	}
	return b.String()
}

func (t *timeline) start(ctx context.Context, faults []PlanFault) {
	ctx, t.cancel = context.WithCancel(ctx)
	t.ctx = ctx
	for _, pf := range faults {
		s, i := pf.Spec, pf.Index
		f, err := nemesis.Build(s) // validated at load; cannot fail here
		if err != nil {
			t.r.log.Error("fault", "err", err)
			continue
		}
		// Each fault draws its times and targets from its own source, so a
		// seed replays the same schedule whatever the goroutines' order.
		env := *t.env
		env.Rand = rand.New(rand.NewPCG(t.r.seed(), 0x66617531+uint64(i)))
		at := s.At + jitter(env.Rand, s.Within)
		first := 0
		if at == 0 {
			// Faults from time zero are in place before any client starts,
			// so the first operation already runs under them.
			first = t.inject(ctx, &env, s, f)
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			for {
				id := first
				if first == 0 {
					if !sleepCtx(ctx, at-t.r.elapsed()) {
						return
					}
					id = t.inject(ctx, &env, s, f)
				}
				first = 0
				if s.For > 0 && !t.healAfter(ctx, id, s.For) {
					return
				}
				if s.Every <= 0 {
					return
				}
				at += s.Every + jitter(env.Rand, s.Within)
			}
		}()
	}
}

// jitter draws a start offset in [0, within).
func jitter(r *rand.Rand, within time.Duration) time.Duration {
	if within <= 0 {
		return 0
	}
	return time.Duration(r.Int64N(int64(within)))
}

func (r *run) elapsed() time.Duration { return time.Duration(r.rec.Now()) }

// inject starts one fault and records it; faults are injected one at a
// time, as a single nemesis process would. Its start entry follows the
// contract of history.FStart: Ok with the targets when it applied to at
// least one, Fail ("applied to nothing", or the injection's error)
// otherwise, and then it is not active and has no stop entry. It returns
// the fault's id, or -1 when nothing was applied.
func (t *timeline) inject(ctx context.Context, env *nemesis.Env, s nemesis.Spec, f nemesis.Fault) int {
	t.injectMu.Lock()
	heal, tg, err := f.Inject(ctx, env)
	t.injectMu.Unlock()
	ft := history.FaultTargets(tg)
	op := history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FStart,
		Value: describe(s, tg.String()), Targets: &ft}
	switch {
	case err != nil:
		op.Type, op.Error = history.Fail, err.Error()
	case tg.Count() == 0:
		op.Type, op.Error = history.Fail, "applied to nothing"
	}
	if op.Type == history.Fail {
		t.r.log.Warn("fault applied to nothing", "fault", op.Value, "err", op.Error)
		t.r.rec.Add(op)
		return -1
	}
	// Recorded under mu so a concurrent heal (the run ending) cannot write
	// the stop entry before the start entry.
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	id := t.seq
	a := activeFault{desc: op.Value, heal: heal, clients: tg.Clients}
	t.active[id] = a
	op.N = int64(id)
	t.r.rec.Add(op)
	return id
}

// injectNow injects a fault from a failpoint: at once, or its At after the
// hit, healing after its For in the background (the client that triggered
// it may be the one it pauses, so this must not wait).
//
// At counts from the client's step, not from the run's start: a schedule
// timed against a holder's steps (its extends every so often from its
// grant) keeps its shape when a loaded machine grants the lock late, where
// a fault timed from the run's start would meet an earlier step than the
// one it was written for.
func (t *timeline) injectNow(ctx context.Context, s nemesis.Spec) error {
	f, err := nemesis.Build(s)
	if err != nil {
		return err
	}
	env := *t.env
	env.Rand = rand.New(rand.NewPCG(t.r.seed(), 0x66706f696e74))
	if s.At <= 0 {
		t.injectHealing(ctx, &env, s, f)
		return nil
	}
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return nil
	}
	t.wg.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.wg.Done()
		if sleepCtx(t.ctx, s.At) {
			t.injectHealing(t.ctx, &env, s, f)
		}
	}()
	return nil
}

// injectHealing injects one failpoint fault and heals it after its For.
func (t *timeline) injectHealing(ctx context.Context, env *nemesis.Env, s nemesis.Spec, f nemesis.Fault) {
	id := t.inject(ctx, env, s, f)
	if id < 0 || s.For <= 0 {
		return
	}
	t.mu.Lock()
	if t.stopped {
		// A client hit its failpoint as the schedule stopped: the fault
		// heals now, as one cut short by the stop does.
		t.mu.Unlock()
		t.heal(id)
		return
	}
	t.wg.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.wg.Done()
		if !t.healAfter(t.ctx, id, s.For) {
			t.heal(id) // cut short when the schedule stops: it heals now
		}
	}()
	return
}

// healAfter heals fault id d from now, and says false if ctx ended first
// (nothing healed). A pause healed late stopped its clients longer than the
// spec asked, for the harness's own lateness: that is recorded as a lag of
// each client it paused (see stalls.go), ending at the heal, so the checker
// counts it (a lag inside a pause counts only when it reaches the heal).
func (t *timeline) healAfter(ctx context.Context, id int, d time.Duration) bool {
	due := t.r.rec.Now() + int64(d)
	if !sleepCtx(ctx, d) {
		return false
	}
	t.mu.Lock()
	named := t.active[id].clients
	t.mu.Unlock()
	t.r.lateSince(due, named...)
	t.heal(id)
	return true
}

func (t *timeline) heal(id int) {
	t.mu.Lock()
	a, ok := t.active[id]
	delete(t.active, id)
	t.mu.Unlock()
	if !ok {
		return
	}
	op := history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FStop, Value: a.desc, N: int64(id)}
	if err := a.heal(); err != nil {
		op.Type, op.Error = history.Fail, err.Error()
	}
	t.r.rec.Add(op)
}

// stopAndHeal ends the schedule and heals every active fault.
func (t *timeline) stopAndHeal() {
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
	if t.cancel != nil {
		t.cancel()
	}
	t.wg.Wait()
	t.mu.Lock()
	ids := make([]int, 0, len(t.active))
	for id := range t.active {
		ids = append(ids, id)
	}
	t.mu.Unlock()
	for _, id := range ids {
		t.heal(id)
	}
}

// sleepCtx reports whether d passed before ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	return lockimpl.SleepCtx(ctx, d) == nil
}

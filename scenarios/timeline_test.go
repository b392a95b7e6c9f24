package scenarios

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// Fault kinds whose outcome the test chooses: they stand for a heal that
// fails (a toxic that cannot be removed, a server that does not restart)
// and an injection that errs, which real faults produce only by accident.
func init() {
	nemesis.Register("test-heal-fails", "test only: applies to n1, its heal fails", nemesis.Uses{}, func(nemesis.Spec, *nemesis.NoParams) (nemesis.Fault, error) {
		return testFault{targets: nemesis.Targets{Nodes: []string{"n1"}}, healErr: errors.New("restart n1: port taken")}, nil
	})
	nemesis.Register("test-links", "test only: cuts client 2's links", nemesis.Uses{}, func(nemesis.Spec, *nemesis.NoParams) (nemesis.Fault, error) {
		return testFault{targets: nemesis.Targets{Clients: []int{2}, Links: []string{"h1>n1"}}}, nil
	})
	nemesis.Register("test-inject-fails", "test only: its injection errs", nemesis.Uses{}, func(nemesis.Spec, *nemesis.NoParams) (nemesis.Fault, error) {
		return testFault{injectErr: errors.New("toxiproxy said no")}, nil
	})
}

type testFault struct {
	targets            nemesis.Targets
	healErr, injectErr error
}

func (f testFault) Inject(context.Context, *nemesis.Env) (nemesis.Heal, nemesis.Targets, error) {
	if f.injectErr != nil {
		return nil, nemesis.Targets{}, f.injectErr
	}
	return func() error { return f.healErr }, f.targets, nil
}

type nopControl struct{}

func (nopControl) Holders() []int                   { return nil }
func (nopControl) Pause(int)                        {}
func (nopControl) Resume(int)                       {}
func (nopControl) Crash(int)                        {}
func (nopControl) ClockJump(int, time.Duration)     {}
func (nopControl) ClockDrift(client int, _ float64) {}

// TestTimelineRecordsTargetsAndHeals: the history follows history.FStart's
// contract. A fault that applied to something starts Ok with its targets
// and stops Ok; one that applied to nothing (a client the run does not
// have: never wrapped onto another) or whose injection erred starts Fail
// and never stops; a heal that failed stops Fail with its error.
func TestTimelineRecordsTargetsAndHeals(t *testing.T) {
	r := &run{plan: &Plan{Seed: 1}, rec: history.NewRecorder(), log: slog.New(slog.DiscardHandler)}
	env := &nemesis.Env{Clients: 4, ClientHost: func(c int) string { return fmt.Sprintf("h%d", c%2+1) },
		Control: nopControl{}, Rand: rand.New(rand.NewPCG(1, 1))}
	tl := newTimeline(r, env)
	faults := []nemesis.Spec{
		{Kind: "pause", Clients: []int{3}, For: 10 * time.Millisecond},
		{Kind: "pause", Clients: []int{99}, For: 10 * time.Millisecond},
		{Kind: "pause", Pick: "client", For: 10 * time.Millisecond},
		{Kind: "test-heal-fails", For: 10 * time.Millisecond},
		{Kind: "test-inject-fails", For: 10 * time.Millisecond},
	}
	planned := make([]PlanFault, len(faults))
	for i, f := range faults {
		planned[i] = PlanFault{Spec: f, Index: i}
	}
	tl.start(context.Background(), planned)
	time.Sleep(100 * time.Millisecond)
	tl.stopAndHeal()

	type entry struct {
		typ history.Type
		f   string
		err string
		n   int
	}
	byKind := map[string][]entry{}
	starts := map[int64]string{}
	for _, op := range r.rec.History() {
		if op.Process != history.NemesisProcess {
			t.Fatalf("non-nemesis entry %+v", op)
		}
		if op.F == history.FStall {
			continue // a heal late on a busy machine: the paused client's lag
		}
		desc := op.Value
		if op.F == history.FStart {
			starts[op.N] = desc
			if op.Type == history.Ok && op.Targets.Count() == 0 {
				t.Errorf("start Ok with no targets: %+v", op)
			}
		} else if starts[op.N] != desc {
			t.Errorf("stop %+v does not match its start %q", op, starts[op.N])
		}
		k := strings.Fields(desc)[0]
		if strings.Contains(desc, "99") {
			k += "99"
		} else if strings.Contains(desc, "pick=client") {
			k += "-pick"
		}
		byKind[k] = append(byKind[k], entry{op.Type, op.F, op.Error, op.Targets.Count()})
	}
	want := map[string][]entry{
		"pause":             {{history.Ok, history.FStart, "", 1}, {history.Ok, history.FStop, "", 0}},
		"pause99":           {{history.Fail, history.FStart, "applied to nothing", 0}},
		"pause-pick":        {{history.Ok, history.FStart, "", 1}, {history.Ok, history.FStop, "", 0}},
		"test-heal-fails":   {{history.Ok, history.FStart, "", 1}, {history.Fail, history.FStop, "restart n1: port taken", 0}},
		"test-inject-fails": {{history.Fail, history.FStart, "toxiproxy said no", 0}},
	}
	for k, w := range want {
		if got := byKind[k]; !slices.Equal(got, w) {
			t.Errorf("%s: entries %+v, want %+v", k, got, w)
		}
	}
	for _, op := range r.rec.History() {
		if op.F == history.FStart && strings.Contains(op.Value, "clients=[3]") {
			if !strings.Contains(op.Value, "on=clients [3]") || !slices.Equal(op.Targets.Clients, []int{3}) {
				t.Errorf("pause of client 3 recorded as %q, targets %+v", op.Value, op.Targets)
			}
		}
		if op.F == history.FStart && strings.Contains(op.Value, "99") {
			if !slices.Equal(op.Targets.Missing, []string{"client 99"}) || len(op.Targets.Clients) > 0 {
				t.Errorf("pause of client 99 recorded targets %+v; want none, client 99 missing", op.Targets)
			}
		}
	}
}

// TestLateHealIsClientLag: a fault on a client's links healed later than
// its For held that client under it longer than the spec asked (a renewal
// due after the blip met it): the lateness is that client's lag, as a late
// pause's is. Holding the timeline's lock past the heal's due time makes
// the heal late here as a stalled harness does.
func TestLateHealIsClientLag(t *testing.T) {
	r := &run{plan: &Plan{Seed: 1}, rec: history.NewRecorder(), log: slog.New(slog.DiscardHandler)}
	env := &nemesis.Env{Clients: 3, ClientHost: func(c int) string { return fmt.Sprintf("h%d", c+1) },
		Control: nopControl{}, Rand: rand.New(rand.NewPCG(1, 1))}
	tl := newTimeline(r, env)
	tl.start(context.Background(), []PlanFault{{Spec: nemesis.Spec{Kind: "test-links", At: 5 * time.Millisecond, For: 10 * time.Millisecond}}})
	time.Sleep(10 * time.Millisecond)
	tl.mu.Lock()
	time.Sleep(60 * time.Millisecond)
	tl.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	tl.stopAndHeal()
	var lags []history.Op
	for _, op := range r.rec.History() {
		if op.F == history.FStall {
			lags = append(lags, op)
		}
	}
	if len(lags) != 1 || lags[0].Client != 2 || lags[0].N < int64(40*time.Millisecond) {
		t.Fatalf("lags %+v, want one of client 2 of at least 40 ms", lags)
	}
}

// TestLateSinceRecordsClientLag: a client running more than stallMin after
// it was due is recorded as a stall of that client alone, ending when it
// is recorded and no longer than its lateness; on time, nothing is.
func TestLateSinceRecordsClientLag(t *testing.T) {
	r := &run{rec: history.NewRecorder()}
	time.Sleep(60 * time.Millisecond)
	now := r.rec.Now()
	r.lateSince(now-int64(50*time.Millisecond), 3, 5)
	r.lateSince(r.rec.Now()-int64(stallMin)/2, 4)
	h := r.rec.History()
	if len(h) != 2 {
		t.Fatalf("%d entries, want 2 (clients 3 and 5): %+v", len(h), h)
	}
	for i, c := range []int{3, 5} {
		op := h[i]
		if op.F != history.FStall || op.Process != history.NemesisProcess || op.Client != c || op.Type != history.Ok {
			t.Errorf("entry %+v, want an ok stall of client %d", op, c)
		}
		// The span [Time-N, Time] lies inside the lateness [due, Time].
		if op.N < int64(50*time.Millisecond) || op.Time-op.N < now-int64(50*time.Millisecond) {
			t.Errorf("client %d: lag %d ns ending at %d, due at %d", c, op.N, op.Time, now-int64(50*time.Millisecond))
		}
	}
}

// TestEarlyStopSettles: an overlap settles the run only when it holds
// without the holders' own lag (c1's lag covering its whole hold explains
// c2's grant inside it); after one that settled nothing the watch re-arms
// and the next overlap is found.
func TestEarlyStopSettles(t *testing.T) {
	for _, lag := range []bool{false, true} {
		r := &run{rec: history.NewRecorder(), plan: &Plan{}}
		add := func(c int, typ history.Type, f string) {
			r.rec.Add(history.Op{Type: typ, Process: c, Client: c, F: f, Key: "lock:0", Value: fmt.Sprintf("t%d", c)})
		}
		add(1, history.Invoke, history.FAcquire)
		add(1, history.Ok, history.FAcquire)
		add(2, history.Invoke, history.FAcquire)
		add(2, history.Ok, history.FAcquire)
		add(1, history.Invoke, history.FRelease)
		add(1, history.Ok, history.FRelease)
		add(2, history.Invoke, history.FRelease)
		add(2, history.Ok, history.FRelease)
		if lag {
			r.rec.Add(history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: 1, F: history.FStall, N: int64(time.Second)})
		}
		if got := r.settled(); got == lag {
			t.Errorf("c1 lagged %v: settled %v", lag, got)
		}
	}
	w := newOverlapWatch()
	w.observe(1, history.Ok, history.FAcquire, "lock:0")
	w.observe(2, history.Ok, history.FAcquire, "lock:0")
	select {
	case <-w.found:
	default:
		t.Fatal("no overlap found")
	}
	next := w.rearm()
	select {
	case <-next:
		t.Fatal("re-armed watch found an overlap before the next grant")
	default:
	}
	w.observe(3, history.Ok, history.FAcquire, "lock:0")
	select {
	case <-next:
	default:
		t.Error("the overlap after re-arming not found")
	}
}

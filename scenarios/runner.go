package scenarios

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/client"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// Config is how to run a scenario, beyond the spec itself.
type Config struct {
	// Impl is the implementation on trial: a registered name or one of the
	// spec's variants. With Info set it only names the lock in reports
	// (default Info.Name).
	Impl string
	// Info, when set, is the implementation on trial instead of the one
	// registered as Impl (which then only names it in the outcome): a lock
	// that is not in lockimpl's registry, a user's or a test's. It runs
	// with the spec's lock options, and its expectation comes from its
	// claims through the spec's rules, unless the spec was loaded knowing
	// it (LoadFor): then Impl may be one of the spec's variants of it (its
	// options reach Info.New) and the spec's expected entry for Impl
	// applies, as for a registered lock.
	Info *lockimpl.Info
	// Baseline, when set, supplies the expected verdict of every
	// (scenario, impl) pair it recorded, ahead of the spec and the claims.
	Baseline *spec.Baseline
	// Seed overrides the spec's seed when non-zero.
	Seed uint64
	// Prior, for an exploring run, are the coverage combinations earlier
	// runs covered (CoverageSet.Covered): its explorer favours the others.
	// A hunt carries them from seed to seed; on sim a seed with the same
	// prior replays the same history.
	Prior []string
	// Backend is auto, redis-server or embedded.
	Backend string
	// Log receives progress; nil discards.
	Log *slog.Logger
	// Progress, when set, is called about once a second with the run's state.
	Progress func(p Progress)
	// FullDuration keeps the whole duration of a run whose verdict is
	// already settled (by default an unsafe run stops a grace after its
	// first overlap).
	FullDuration bool
	// RecordSteps arms every client's points without any action, so the
	// history records each step a client passed (history.FStep), its
	// command points included (an armed run records only the lock's):
	// what a shrink builds a schedule from.
	RecordSteps bool
	// ObserverDelay, when its latency is set, puts each server observer's
	// connection behind a proxy of its own with that latency and jitter:
	// the servers' key events then reach the harness late, as on a loaded
	// machine. It exists to test the oracles that read them (a release must
	// never be flagged because its events were late), not to test locks.
	ObserverDelay Delay
	// Rejudge is how many more times a run is run when the harness could
	// not judge it because of its own stalls (checker.Result.ByHarness):
	// 0 means 2, negative never. Such an inconclusive is no information
	// about the lock either way, and on a loaded machine the next run of
	// the same seed usually is judged; the outcome says how many runs it
	// took (Outcome.Rejudged).
	Rejudge int
}

// Delay is a latency with jitter.
type Delay struct {
	Latency, Jitter time.Duration
}

// Progress is a snapshot of a running scenario.
type Progress struct {
	Scenario, Impl string
	Elapsed, Total time.Duration
	Acquired       int64
}

// Outcome is one scenario × implementation run.
type Outcome struct {
	// Identity is the run's identity (Plan.Identity), the same as its
	// history's header's (Spec is the spec as written).
	history.Identity
	// Observer says whether the servers' key events were recorded (the
	// ground truth of the false-success check) and, if not, why.
	Observer string `json:"observer"`
	// Claims are what the lock declared, under the run's options.
	Claims  lockimpl.Claims `json:"claims"`
	Result  checker.Result  `json:"result"`
	Elapsed time.Duration   `json:"elapsed_ns"`
	// CheckOptions are the checker settings the verdict was reached with.
	CheckOptions history.Options `json:"checker_options"`
	// StoppedAfter, when set, says the run stopped this long after its
	// first overlap instead of running its whole duration (the verdict was
	// settled; Config.FullDuration).
	StoppedAfter time.Duration `json:"stopped_after_ns,omitempty"`
	// Points is the point coverage (distinct lock points hit, and how many
	// had a fault injected) when the run armed its points (failpoints or
	// exploration in the spec); nil otherwise, as unarmed points are not
	// counted (that keeps them at one atomic load).
	Points *Coverage `json:"points,omitempty"`
	// Prior are the combinations earlier runs covered that steered this
	// run's explorer (Config.Prior): a replay of its seed needs them too.
	Prior []string `json:"prior,omitempty"`
	// Failover is when the Sentinels detected, agreed on and carried out
	// the first failover (Sentinel topology only).
	Failover *FailoverTimes `json:"failover,omitempty"`
	// Rejudged are the reasons of the earlier runs of this job that the
	// harness's own stalls left inconclusive (Config.Rejudge), oldest first.
	Rejudged []string `json:"rejudged,omitempty"`
	// History is the recorded run (not in JSON summaries: it has its own file).
	History history.History `json:"-"`
	Spec    *spec.Spec      `json:"-"`
	// Processes counts the client processes of a lock that runs in them
	// (lockimpl/exec) and the requests they left unknown by dying, breaking
	// the protocol or not answering; nil for in-process locks.
	Processes *lockimpl.ProcessStats `json:"processes,omitempty"`
	// Phases is where the run's wall time went (set-up, traffic, check,
	// teardown...).
	Phases *Phases `json:"phases,omitempty"`
}

// AsExpected says whether the run's result meets its expectation
// (checker.Result.AsExpected: the verdict, and no finding it does not
// permit; with no expectation, any result).
func (o *Outcome) AsExpected() bool { return o.Result.AsExpected(o.Expected) }

// keyName is the lock key clients contend on.
func keyName(i int) string { return fmt.Sprintf("lock:%d", i) }

type runClient struct {
	id      int
	host    string
	pause   client.Pauser
	clock   *lockimpl.SkewClock
	fp      *lockimpl.Failpoints
	rdb     []redis.UniversalClient
	locker  lockimpl.Locker
	rec     *recordingLocker
	process atomic.Int64
	ctx     context.Context
	cancel  context.CancelFunc
	crashed atomic.Bool
	// extends numbers the client's extends and renewals (history.FExtend's N).
	extends atomic.Int64
	// holding is true from an acquire's success to its release's invoke:
	// what a fault's pick: holder reads (nemesis.ClientControl.Holders).
	holding atomic.Bool
	// call is the Locker call in flight (lockimpl.CallAcquire, ...), for
	// the relays' points; relays are the client's wire points (client.Relay).
	call   atomic.Value
	relays []*client.Relay
	// tries are the sends of the acquire or extend in flight.
	tries client.Tries
	// resends watches its releases for a command sent again after a
	// definite answer (history.FResend).
	resends *client.Resends
	// due is when the sleep the harness owns that the client is in ends
	// (the recorder's clock), 0 outside one (sleepTimed).
	due atomic.Int64
	// The explorer's view of the client (the recorder's clock), for the
	// coverage of client states and near-misses: since is when its
	// current call or hold began, heldAt when its lease was last granted,
	// pausedAt and resumedAt when a pause last stopped it and let it go
	// on, acqFrom and acqTo when its
	// latest acquire began and ended (acqTo < acqFrom: one is in flight).
	since, heldAt, pausedAt, resumedAt, acqFrom, acqTo atomic.Int64
}

// callNow is the client's Locker call in flight, or "".
func (c *runClient) callNow() string {
	s, _ := c.call.Load().(string)
	return s
}

type run struct {
	cfg     Config
	sim     bool // the run is in a bubble of virtual time (simrun.go)
	info    lockimpl.Info
	rec     *history.Recorder
	res     *resource
	clients []*runClient
	nextPID atomic.Int64
	log     *slog.Logger
	rng     *rand.Rand
	hub     *lockimpl.Hub
	plan    *Plan
	// explorer is the run's exploration (Plan.Explore), nil without one.
	explorer *explorer
	// overlaps, unless the run keeps its whole duration, ends the traffic
	// a grace after the first overlap; stoppedAfter is that grace when it did.
	overlaps     *overlapWatch
	stoppedAfter time.Duration
	// trafficEnd is when the duration ended (or the early stop came), for
	// the phases' Traffic and Drain.
	trafficEnd time.Time
	// holdsEnd ends when the traffic's time is up, not at an early stop:
	// the holds then under way end at once (their write and release
	// follow), and a client that acquires in the drain holds for no time.
	// Holds of seconds begun just before the end once kept a run going for
	// a whole further hold, and a waiter granted at the end for another
	// (sentinel-kill-random: 15.9 s of drain after 12 s of traffic), time
	// in which nothing the spec asks for happens: its faults are healed and
	// its clients only finish. An early stop keeps the holds whole, so the
	// overlap's aftermath (a release after the expiry) is still recorded.
	holdsEnd context.Context
}

// Run executes spec against cfg.Impl and checks the history. A returned
// error means the run could not be carried out (setup); a lock-safety
// violation is a verdict in the Outcome, not an error.
//
// Every run is bounded in time: if it has not finished within its duration
// plus the grace period plus two minutes for set-up and checking, Run gives
// up with an error instead of hanging (the stuck goroutines are abandoned;
// the servers die with the process).
func Run(ctx context.Context, spec *spec.Spec, cfg Config) (*Outcome, error) {
	if cfg.Info == nil {
		// A spec is data: the program it names starts only with the
		// user's consent (Limits.AllowExec), whoever calls Run.
		if err := spec.NeedsConsent(cfg.Impl); err != nil {
			return nil, err
		}
	}
	again := cfg.Rejudge
	if again == 0 {
		again = 2
	}
	var earlier []string
	for {
		o, err := runAttempt(ctx, spec, cfg)
		if err != nil || !o.Result.ByHarness || len(earlier) >= again || ctx.Err() != nil {
			if o != nil {
				o.Rejudged = earlier
			}
			return o, err
		}
		earlier = append(earlier, o.Result.Reason)
		if cfg.Log != nil {
			cfg.Log.Info("run again: the harness's own stalls left the verdict inconclusive", "scenario", spec.Name,
				"impl", cfg.Impl, "reason", o.Result.Reason)
		}
	}
}

// runAttempt is one run of a job (a test replaces it to count attempts).
var runAttempt = runBounded

// runBounded compiles spec and runs it once, within a bound past its
// duration: a run that does not finish by then is the harness's bug.
func runBounded(ctx context.Context, spec *spec.Spec, cfg Config) (*Outcome, error) {
	plan, err := Compile(spec, cfg)
	if err != nil {
		return nil, err
	}
	type result struct {
		o   *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := runIn(ctx, plan, cfg)
		if o != nil {
			// The outcome names the spec as written: a replay compiles it
			// again to the same plan, and the run folder keeps a copy.
			o.Spec = spec
		}
		done <- result{o, err}
	}()
	t := time.NewTimer(plan.Stop.Bound)
	defer t.Stop()
	select {
	case r := <-done:
		return r.o, r.err
	case <-t.C:
		return nil, fmt.Errorf("%s × %s did not finish within %v: the harness is stuck (a bug: please report it with the seed)", plan.Scenario, cfg.Impl, plan.Stop.Bound)
	}
}

// runOnce is the run's phases in order, the way etcd's robustness runner
// composes a scenario: from the compiled plan (every time already scaled to
// the lock's timescale), start the topology, start the clients, arm the
// faults, start watching (history, stalls, observers), play the traffic,
// finish the history, check it.
func runOnce(ctx context.Context, plan *Plan, cfg Config) (o *Outcome, err error) {
	r := newRun(cfg, plan)
	clock := newPhaseClock()
	var ph Phases
	// Registered first, so it runs last: the teardown is the deferred
	// closes below.
	defer func() {
		if o != nil {
			clock.lap(&ph.Teardown)
			o.Phases = &ph
			r.log.Info("run phases", "scenario", plan.Scenario, "impl", o.Impl, "phases", ph.String())
		}
	}()
	topo, err := startTopology(ctx, plan, r.cfg)
	if err != nil {
		return nil, err
	}
	defer topo.Close()
	clock.lap(&ph.Setup)
	if err := r.startClients(ctx, plan, topo); err != nil {
		return nil, err
	}
	defer r.closeClients()
	tl, healSteady, err := r.arm(ctx, topo)
	if err != nil {
		return nil, err
	}
	if err := r.ready(ctx); err != nil {
		return nil, err
	}
	w := r.watch(ctx, plan, topo)
	defer w.close()
	// The clock has started: from here the clients' hits count and act, and
	// what they do goes into this run's history. Before it, a crash at a
	// library's own set-up command would kill a client that never ran,
	// recorded in no history, or fail ready (lockimpl.Hub.Hold).
	r.hub.Start()
	clock.lap(&ph.Clients)
	start := time.Now()
	r.playTraffic(ctx, tl, start)
	for _, h := range healSteady {
		_ = h()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run interrupted: %w", err)
	}
	ph.Traffic = r.trafficEnd.Sub(start)
	clock.lap(&ph.Drain)
	ph.Drain -= ph.Traffic
	h := r.finish(w)
	if r.sim {
		h = canonical(h)
	}
	o = r.outcome(plan, topo, w, h, time.Since(start))
	clock.lap(&ph.Check)
	return o, nil
}

// ready waits, before the run's clock starts, for lockers that start
// something of their own (a client process loading its runtime) to be able
// to serve; they start together, so their start-ups overlap.
func (r *run) ready(ctx context.Context) error {
	errs := make([]error, len(r.clients))
	var wg sync.WaitGroup
	for i, c := range r.clients {
		rd, ok := c.locker.(lockimpl.Readier)
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = rd.Ready(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("%s: client %d: %w", r.cfg.Impl, i, err)
		}
	}
	return nil
}

// processStats sums the counts of clients whose lock runs in a process.
func (r *run) processStats() *lockimpl.ProcessStats {
	var sum *lockimpl.ProcessStats
	for _, c := range r.clients {
		if ps, ok := c.locker.(lockimpl.ProcessReporter); ok {
			if sum == nil {
				sum = &lockimpl.ProcessStats{}
			}
			*sum = sum.Add(ps.ProcessStats())
		}
	}
	return sum
}

// meta is the history's header: what this run was asked to exercise,
// under the run's identity, from which `lockstorm check` judges the run as
// the run itself was judged.
func (r *run) meta(backend string) *history.Meta {
	p := r.plan
	m := &history.Meta{Identity: p.Identity(backend), Options: p.Check}
	for k := 0; k < p.Keys; k++ {
		m.Keys = append(m.Keys, keyName(k))
	}
	for i, fp := range p.Failpoints {
		m.Failpoints = append(m.Failpoints, history.Armed{Index: i, Client: fp.Client, Point: fp.Point,
			Skip: fp.Skip, Times: fp.Times, Prob: fp.Prob, Inert: fp.Inert})
	}
	return m
}

// ownPoint says whether a spec's failpoint (a point or a pattern) is one
// info's implementation can reach: the runner's own steps, the command
// points (a lock that never sends the command leaves a scheduled action
// unfired, and the run is inconclusive: the spec should not list that
// lock), and the implementation's own steps. A step of another
// implementation is inert by design: one spec forces the interleavings of
// several algorithms side by side.
func ownPoint(info lockimpl.Info, point string) bool {
	if runnerPoint(point) || spec.CmdPoint(point) {
		return true
	}
	prefix, _, _ := strings.Cut(point, "/")
	if ok, _ := path.Match(prefix, info.Name); ok {
		return true
	}
	for _, p := range info.Points {
		if ok, _ := path.Match(point, p); ok {
			return true
		}
	}
	return false
}

// closeLocker stops an implementation's helpers (watchdogs): a crashed
// client's watchdog must not keep its lock alive.
func closeLocker(c *runClient) {
	if cl, ok := c.locker.(io.Closer); ok {
		cl.Close()
	}
}

func (r *run) closeClients() {
	for _, c := range r.clients {
		c.cancel()
		c.pause.Resume()
		closeLocker(c)
		for _, rdb := range c.rdb {
			rdb.Close()
		}
		for _, rl := range c.relays {
			rl.Close()
		}
	}
}

func (r *run) add(c *runClient, t history.Type, f, key string, mod func(*history.Op)) {
	op := history.Op{Type: t, Process: int(c.process.Load()), Client: c.id, F: f, Key: key}
	if mod != nil {
		mod(&op)
	}
	r.rec.Add(op)
	if r.overlaps != nil {
		r.overlaps.observe(c.id, t, f, key)
	}
}

// newProcess gives c a fresh process id after an unknown outcome: the old
// process may still have an operation landing somewhere, so its history
// must not continue.
func (r *run) newProcess(c *runClient) {
	c.process.Store(r.nextPID.Add(1) - 1)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

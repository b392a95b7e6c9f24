package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/cluster"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// Config is how to run a scenario, beyond the spec itself.
type Config struct {
	// Impl is the implementation on trial.
	Impl string
	// Seed overrides the spec's seed when non-zero.
	Seed uint64
	// Backend is auto, redis-server or embedded.
	Backend string
	// Log receives progress; nil discards.
	Log *slog.Logger
	// Progress, when set, is called about once a second with the run's state.
	Progress func(p Progress)
}

// Progress is a snapshot of a running scenario.
type Progress struct {
	Scenario, Impl string
	Elapsed, Total time.Duration
	Acquired       int64
}

// Outcome is one scenario × implementation run.
type Outcome struct {
	Scenario string         `json:"scenario"`
	Impl     string         `json:"impl"`
	Seed     uint64         `json:"seed"`
	Backend  string         `json:"backend"`
	Mode     string         `json:"mode"`
	Gated    bool           `json:"gated"`
	Expected string         `json:"expected"`
	Result   checker.Result `json:"result"`
	Elapsed  time.Duration  `json:"elapsed_ns"`
	// CheckOptions are the checker settings the verdict was reached with.
	CheckOptions checker.Options `json:"checker_options"`
	// History is the recorded run (not in JSON summaries: it has its own file).
	History checker.History `json:"-"`
	Spec    *Spec           `json:"-"`
}

// AsExpected says whether the verdict matches the spec's expectation (no
// expectation counts as matching only a safe verdict).
func (o *Outcome) AsExpected() bool {
	want := o.Expected
	if want == "" {
		want = checker.Safe
	}
	return o.Result.Verdict == want
}

// keyName is the lock key clients contend on.
func keyName(i int) string { return fmt.Sprintf("lock:%d", i) }

type runClient struct {
	id      int
	host    string
	pause   pauser
	clock   *lockimpl.SkewClock
	fp      *lockimpl.Failpoints
	rdb     []*redis.Client
	locker  lockimpl.Locker
	process atomic.Int64
	ctx     context.Context
	cancel  context.CancelFunc
	crashed atomic.Bool
}

type run struct {
	spec    *Spec
	cfg     Config
	info    lockimpl.Info
	rec     *checker.Recorder
	res     *resource
	clients []*runClient
	nextPID atomic.Int64
	log     *slog.Logger
	rng     *rand.Rand
}

// Run executes spec against cfg.Impl and checks the history. A returned
// error means the run could not be carried out (setup); a lock-safety
// violation is a verdict in the Outcome, not an error.
//
// Every run is bounded in time: if it has not finished within its duration
// plus the grace period plus two minutes for set-up and checking, Run gives
// up with an error instead of hanging (the stuck goroutines are abandoned;
// the servers die with the process).
func Run(ctx context.Context, spec *Spec, cfg Config) (*Outcome, error) {
	type result struct {
		o   *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := runOnce(ctx, spec, cfg)
		done <- result{o, err}
	}()
	bound := spec.Duration + (&run{spec: spec}).grace() + 2*time.Minute
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case r := <-done:
		return r.o, r.err
	case <-t.C:
		return nil, fmt.Errorf("%s × %s did not finish within %v: the harness is stuck (a bug: please report it with the seed)", spec.Name, cfg.Impl, bound)
	}
}

func runOnce(ctx context.Context, spec *Spec, cfg Config) (*Outcome, error) {
	info, opts, err := spec.Resolve(cfg.Impl)
	if err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	debugLog.Store(cfg.Log)
	seed := spec.Seed
	if cfg.Seed != 0 {
		seed = cfg.Seed
	}
	r := &run{spec: spec, cfg: cfg, info: info, rec: checker.NewRecorder(), log: cfg.Log,
		rng: rand.New(rand.NewPCG(seed, 0x6c6f636b73746f72))}
	fenced := spec.Workload.Resource == "fenced" || (spec.Workload.Resource == "" && info.Fenced)
	r.res = newResource(fenced)

	nodes := spec.Nodes
	if nodes == 0 {
		nodes = info.Nodes(opts)
	}
	cl, err := cluster.Start(ctx, cfg.Backend, cluster.Options{Nodes: nodes, Log: cfg.Log,
		ServerClock: nemesis.UsesServerClock(spec.AllFaults())})
	if err != nil {
		return nil, fmt.Errorf("start %s backend: %w", cfg.Backend, err)
	}
	defer cl.Close()
	cfg.Log.Info("backend up", "kind", cl.Kind(), "nodes", nodes)

	net := nemesis.NewNetwork()
	defer net.Close()
	hosts := spec.Hosts
	if hosts == 0 {
		hosts = min(spec.Clients, 64)
	}
	hostOf := func(c int) string { return fmt.Sprintf("h%d", c%hosts+1) }
	for h := 0; h < hosts; h++ {
		for _, n := range cl.Nodes() {
			if _, err := net.AddLink(fmt.Sprintf("h%d", h+1), n.Name, n.Addr); err != nil {
				return nil, err
			}
		}
	}

	replicas := map[string]*cluster.Process{}
	if spec.Replicas > 0 {
		servers, ok := cl.(*cluster.Servers)
		if !ok {
			return nil, fmt.Errorf("scenario %s needs replicas, which only the redis-server backend has", spec.Name)
		}
		for i, n := range cl.Nodes() {
			// Replication flows through its own link, so a fault can delay or cut it.
			link, err := net.AddLink(fmt.Sprintf("r%d", i+1), n.Name, n.Addr)
			if err != nil {
				return nil, err
			}
			rep, err := servers.AddReplica(ctx, link.Addr)
			if err != nil {
				return nil, fmt.Errorf("replica of %s: %w", n.Name, err)
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = rep.WaitLinkUp(wctx)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("replica of %s: %w", n.Name, err)
			}
			replicas[n.Name] = rep
		}
	}

	hub := lockimpl.NewHub()
	hub.Seed = seed
	if len(spec.Failpoints) > 0 {
		hub.OnHit = func(client int, point string) {
			c := r.clients[client]
			r.rec.Add(checker.Op{Type: checker.Ok, Process: int(c.process.Load()), Client: client, F: checker.FStep, Value: point})
		}
	}
	r.nextPID.Store(int64(spec.Clients))
	skewRng := rand.New(rand.NewPCG(seed, 0x736b6577))
	for i := 0; i < spec.Clients; i++ {
		offset, ok := spec.ClockOffsets[i]
		if !ok && spec.ClockSkew > 0 && i%2 == 1 {
			offset = -time.Duration(skewRng.Int64N(int64(spec.ClockSkew)))
		}
		c := &runClient{id: i, host: hostOf(i), clock: lockimpl.NewSkewClock(offset), fp: lockimpl.NewFailpoints(hub, i)}
		c.process.Store(int64(i))
		c.ctx, c.cancel = context.WithCancel(ctx)
		env := lockimpl.Env{Client: i, Clock: c.clock, FP: c.fp, Log: cfg.Log,
			Rand: rand.New(rand.NewPCG(seed, uint64(i)+1)), Sleep: c.pause.sleep}
		for _, n := range cl.Nodes() {
			link := net.Link(c.host, n.Name)
			rdb := redis.NewClient(&redis.Options{
				Addr: link.Addr, MaxRetries: -1, DialTimeout: spec.ClientTimeout,
				ReadTimeout: spec.ClientTimeout, WriteTimeout: spec.ClientTimeout,
				PoolSize: 4, ContextTimeoutEnabled: true, Protocol: 2,
				// One dial attempt: a dead node is a refused connection (a
				// definite no for Redlock), not five attempts that end as a timeout.
				DialerRetries:   1,
				DisableIdentity: true,
			})
			rdb.AddHook(pauseHook{&c.pause})
			c.rdb = append(c.rdb, rdb)
			env.Nodes = append(env.Nodes, rdb)
		}
		c.locker, err = info.New(env, opts)
		if err != nil {
			r.closeClients()
			return nil, fmt.Errorf("%s: %w", cfg.Impl, err)
		}
		r.clients = append(r.clients, c)
	}
	defer r.closeClients()
	nenv := &nemesis.Env{Net: net, Cluster: cl, ClientHost: hostOf, Clients: spec.Clients, Control: r,
		Rand: rand.New(rand.NewPCG(seed, 0x6e656d6573697300)), Replicas: replicas}
	tl := newTimeline(r, nenv)
	for _, fp := range spec.Failpoints {
		a := fp.Action
		if fp.Fault != nil {
			fs := *fp.Fault
			a.Do = func(ctx context.Context) error { return tl.injectNow(ctx, fs) }
		}
		if fp.Client == -1 {
			for _, c := range r.clients {
				c.fp.Attach(fp.Point, a)
			}
			continue
		}
		r.clients[fp.Client].fp.Attach(fp.Point, a)
	}
	// The steady network condition is a latency fault from time zero to the end.
	var steady []nemesis.Spec
	if spec.Network.Latency > 0 {
		steady = append(steady, nemesis.Spec{Kind: "latency", Latency: spec.Network.Latency, Jitter: spec.Network.Jitter})
	}
	var healSteady []nemesis.Heal
	for _, s := range steady {
		f, err := nemesis.Build(s)
		if err != nil {
			return nil, err
		}
		heal, _, err := f.Inject(ctx, nenv)
		if err != nil {
			return nil, err
		}
		healSteady = append(healSteady, heal)
	}

	start := time.Now()
	runCtx, stop := context.WithTimeout(ctx, spec.Duration)
	defer stop()
	tl.start(runCtx, spec.Faults)

	var attempts atomic.Int64
	var acquired atomic.Int64
	var wg sync.WaitGroup
	for _, c := range r.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.clientLoop(runCtx, c, &attempts, &acquired)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	waitClients := func() bool {
		for {
			select {
			case <-done:
				return true
			case <-tick.C:
				if cfg.Progress != nil {
					cfg.Progress(Progress{Scenario: spec.Name, Impl: cfg.Impl, Elapsed: time.Since(start), Total: spec.Duration, Acquired: acquired.Load()})
				}
			case <-runCtx.Done():
				return false
			}
		}
	}
	if !waitClients() {
		// The run's time is up: faults heal first (a paused client must be
		// able to finish), then clients finish the cycle they are in (a
		// critical section ends with its release), within a grace period
		// that covers one more wait and hold; then they are cancelled.
		tl.stopAndHeal()
		grace := time.NewTimer(r.grace())
		select {
		case <-done:
		case <-grace.C:
			for _, c := range r.clients {
				c.cancel()
			}
			<-done
		case <-ctx.Done():
			for _, c := range r.clients {
				c.cancel()
			}
			<-done
		}
		grace.Stop()
	}
	tl.stopAndHeal()
	for _, h := range healSteady {
		_ = h()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run interrupted: %w", err)
	}
	for k := 0; k < spec.Keys; k++ {
		key := keyName(k)
		r.rec.Add(checker.Op{Type: checker.Invoke, Process: -2, Client: -1, F: checker.FRead, Key: key})
		r.rec.Add(checker.Op{Type: checker.Ok, Process: -2, Client: -1, F: checker.FRead, Key: key, N: r.res.read(key, 0)})
	}
	h := r.rec.History()
	copts := checker.Options{Fenced: fenced, DeadlockBound: spec.DeadlockBound}
	res := checker.Check(h, copts)
	return &Outcome{CheckOptions: copts, Scenario: spec.Name, Impl: cfg.Impl, Seed: seed, Backend: cl.Kind(), Mode: spec.Mode,
		Gated: spec.IsGated(), Expected: spec.Expect(cfg.Impl), Result: res, Elapsed: time.Since(start),
		History: h, Spec: spec}, nil
}

// grace bounds how long a client may take to finish its cycle once the run
// is over: one full wait for the lock plus one critical section and slack.
func (r *run) grace() time.Duration {
	g := r.spec.Lock.WaitTimeout + r.spec.Workload.CSMax + 2*r.spec.ClientTimeout + time.Second
	return min(g, 30*time.Second)
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
		c.pause.resume()
		closeLocker(c)
		for _, rdb := range c.rdb {
			rdb.Close()
		}
	}
}

func (r *run) add(c *runClient, t checker.Type, f, key string, mod func(*checker.Op)) {
	op := checker.Op{Type: t, Process: int(c.process.Load()), Client: c.id, F: f, Key: key}
	if mod != nil {
		mod(&op)
	}
	r.rec.Add(op)
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

// clientLoop runs acquire → critical section → release until the run ends.
func (r *run) clientLoop(runCtx context.Context, c *runClient, attempts, acquired *atomic.Int64) {
	spec := r.spec
	rng := rand.New(rand.NewPCG(r.seed(), uint64(c.id)+0x10000))
	ctx := c.ctx
	barrierCtx := runCtxOf(runCtx, ctx)
	cycles := 0
	for runCtx.Err() == nil && ctx.Err() == nil {
		if spec.Ops > 0 && attempts.Add(1) > int64(spec.Ops) {
			return
		}
		if spec.Workload.Cycles > 0 && cycles >= spec.Workload.Cycles {
			return
		}
		if err := c.pause.wait(ctx); err != nil {
			return
		}
		key := keyName(rng.IntN(spec.Keys))
		// A client waiting at a barrier for a step that never comes (the
		// step of another algorithm) is released when the run ends.
		if err := c.fp.Hit(barrierCtx, "cycle/before-acquire"); err != nil {
			r.crashedBy(c, err)
			return
		}
		r.add(c, checker.Invoke, checker.FAcquire, key, nil)
		lease, err := c.locker.Acquire(ctx, key)
		switch {
		case err == nil:
			acquired.Add(1)
			cycles++
			r.add(c, checker.Ok, checker.FAcquire, key, func(o *checker.Op) { o.Value = lease.Token; o.Fence = lease.Fence })
		case errors.Is(err, lockimpl.ErrNotAcquired):
			r.add(c, checker.Fail, checker.FAcquire, key, func(o *checker.Op) { o.Error = err.Error() })
			if r.sleepThink(ctx, c) != nil {
				return
			}
			continue
		default:
			r.add(c, checker.Info, checker.FAcquire, key, func(o *checker.Op) { o.Error = err.Error() })
			if r.crashedBy(c, err) {
				return
			}
			r.newProcess(c)
			if r.backoff(ctx, c) != nil {
				return
			}
			continue
		}
		if !r.criticalSection(ctx, c, key, lease, rng) {
			return
		}
		r.add(c, checker.Invoke, checker.FRelease, key, func(o *checker.Op) { o.Value = lease.Token })
		if err := c.fp.Hit(ctx, "cycle/before-release"); err != nil {
			r.add(c, checker.Info, checker.FRelease, key, func(o *checker.Op) { o.Error = err.Error() })
			r.crashedBy(c, err)
			return
		}
		err = c.locker.Release(ctx, lease)
		switch {
		case err == nil:
			r.add(c, checker.Ok, checker.FRelease, key, nil)
		case errors.Is(err, lockimpl.ErrNotHeld):
			r.add(c, checker.Fail, checker.FRelease, key, func(o *checker.Op) { o.Error = err.Error() })
		default:
			r.add(c, checker.Info, checker.FRelease, key, func(o *checker.Op) { o.Error = err.Error() })
			if r.crashedBy(c, err) {
				return
			}
			r.newProcess(c)
		}
		if r.sleepThink(ctx, c) != nil {
			return
		}
	}
}

// criticalSection reads the counter, holds, writes N+1. It returns false
// when the client crashed or was cancelled inside.
func (r *run) criticalSection(ctx context.Context, c *runClient, key string, lease *lockimpl.Lease, rng *rand.Rand) bool {
	r.add(c, checker.Invoke, checker.FRead, key, func(o *checker.Op) { o.Fence = lease.Fence })
	n := r.res.read(key, lease.Fence)
	r.add(c, checker.Ok, checker.FRead, key, func(o *checker.Op) { o.N = n; o.Fence = lease.Fence })
	hold := r.spec.Workload.CSMin
	if span := r.spec.Workload.CSMax - r.spec.Workload.CSMin; span > 0 {
		hold += time.Duration(rng.Int64N(int64(span) + 1))
	}
	if err := c.fp.Hit(ctx, "cs/hold"); err != nil {
		return !r.crashedBy(c, err)
	}
	if err := c.pause.sleep(ctx, hold); err != nil {
		r.crashedBy(c, err)
		return false
	}
	if lease.Lost != nil {
		select {
		case <-lease.Lost:
			// The implementation told us the lock is gone: a careful
			// client abandons its write rather than corrupt the resource.
			r.add(c, checker.Ok, checker.FLost, key, nil)
			return true
		default:
		}
	}
	r.add(c, checker.Invoke, checker.FWrite, key, func(o *checker.Op) { o.N = n + 1; o.Fence = lease.Fence })
	if r.res.write(key, n+1, lease.Fence) {
		r.add(c, checker.Ok, checker.FWrite, key, func(o *checker.Op) { o.N = n + 1; o.Fence = lease.Fence })
	} else {
		r.add(c, checker.Fail, checker.FWrite, key, func(o *checker.Op) {
			o.N = n + 1
			o.Fence = lease.Fence
			o.Error = "stale fencing token"
		})
	}
	return true
}

// crashedBy records a crash when err says the client died (a failpoint
// crash or a crash fault cancelling it) and reports whether it did.
func (r *run) crashedBy(c *runClient, err error) bool {
	if errors.Is(err, lockimpl.ErrCrashed) || c.crashed.Load() {
		if c.crashed.CompareAndSwap(false, true) || errors.Is(err, lockimpl.ErrCrashed) {
			r.add(c, checker.Ok, checker.FCrash, "", func(o *checker.Op) { o.Error = errText(err) })
		}
		c.cancel()
		closeLocker(c)
		for _, rdb := range c.rdb {
			rdb.Close()
		}
		return true
	}
	return c.ctx.Err() != nil
}

// runCtxOf is ctx, also cancelled when the run's time is up.
func runCtxOf(runCtx, ctx context.Context) context.Context {
	merged, cancel := context.WithCancel(ctx)
	context.AfterFunc(runCtx, cancel)
	return merged
}

// backoff waits after an unknown outcome before the client tries again, as a
// real client backs off after a connection error; without it a client facing
// a dead link would spin and flood the history.
func (r *run) backoff(ctx context.Context, c *runClient) error {
	d := max(r.spec.Think, r.spec.Lock.RetryDelay, 10*time.Millisecond)
	return c.pause.sleep(ctx, d)
}

func (r *run) sleepThink(ctx context.Context, c *runClient) error {
	if r.spec.Think > 0 {
		return c.pause.sleep(ctx, r.spec.Think)
	}
	return ctx.Err()
}

func (r *run) seed() uint64 {
	if r.cfg.Seed != 0 {
		return r.cfg.Seed
	}
	return r.spec.Seed
}

// Pause implements nemesis.ClientControl.
func (r *run) Pause(client int) { r.clients[client].pause.pause() }

// Resume implements nemesis.ClientControl.
func (r *run) Resume(client int) { r.clients[client].pause.resume() }

// Crash implements nemesis.ClientControl: the client vanishes with whatever
// it holds; its connections close and its release is never sent.
func (r *run) Crash(client int) {
	c := r.clients[client]
	if c.crashed.CompareAndSwap(false, true) {
		r.add(c, checker.Ok, checker.FCrash, "", func(o *checker.Op) { o.Error = "crash fault" })
	}
	c.cancel()
	closeLocker(c)
	c.pause.resume()
	for _, rdb := range c.rdb {
		rdb.Close()
	}
}

// ClockJump implements nemesis.ClientControl.
func (r *run) ClockJump(client int, d time.Duration) { r.clients[client].clock.Jump(d) }

// ClockDrift implements nemesis.ClientControl.
func (r *run) ClockDrift(client int, rate float64) { r.clients[client].clock.SetDrift(rate) }

package scenarios

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/client"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
	"github.com/lockstorm/lockstorm/scenarios/topology"
)

// The phases of one run (runOnce), each a function of its own.

// newRun is a run of plan, before anything starts.
func newRun(cfg Config, plan *Plan) *run {
	cfg.Impl = plan.Impl
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	debugLog.Store(cfg.Log)
	r := &run{cfg: cfg, info: plan.info, rec: history.NewRecorder(), log: cfg.Log, sim: cfg.Backend == cluster.Sim,
		rng: rand.New(rand.NewPCG(plan.Seed, 0x6c6f636b73746f72)), plan: plan}
	r.res = newResource(plan.Check.Fenced)
	if plan.Stop.EarlyStop > 0 {
		r.overlaps = newOverlapWatch()
	}
	r.hub = lockimpl.NewHub()
	r.hub.Seed = plan.Seed
	// Held until the clock starts (runOnce starts it): no fault reaches a
	// client before its run begins.
	r.hub.Hold()
	return r
}

// setupFault, in tests, makes a start-up stage of the topology fail
// (topology.Options.Fault).
var setupFault func(stage string) error

// startTopology starts what the plan's run stands on: its servers, links
// and, for Sentinel and Cluster, routers (package topology).
func startTopology(ctx context.Context, plan *Plan, cfg Config) (*topology.Topology, error) {
	o := topology.Options{Scenario: plan.Scenario, Backend: cfg.Backend, Seed: plan.Seed, Log: cfg.Log, Nodes: plan.Nodes,
		Replicas: plan.Replicas, Hosts: plan.Hosts, HostOf: plan.HostOf, ServerClock: plan.ServerClock, Fault: setupFault}
	if sn := plan.Sentinel; sn != nil {
		o.Sentinel = &topology.Sentinel{Sentinels: sn.Sentinels, Quorum: sn.Quorum, DownAfter: sn.DownAfter,
			FailoverTimeout: sn.FailoverTimeout}
	}
	if m := plan.MinReplicas; m != nil {
		o.MinReplicas = &topology.MinReplicas{ToWrite: m.ToWrite, MaxLag: m.MaxLag}
	}
	if c := plan.Cluster; c != nil {
		o.Cluster = &topology.RedisCluster{Masters: c.Masters, Replicas: c.Replicas, NodeTimeout: c.NodeTimeout}
	}
	return topology.Start(ctx, o)
}

// clientHooks are the hooks of a client's connections: its pause, the
// refusal of dials through a rejected link, and its command points.
func clientHooks(p *client.Pauser, points func(node string) redis.Hook) topology.Hooks {
	return topology.Hooks{Pause: client.PauseHook{Pauser: p}, Points: points,
		Refuse: func(l *nemesis.Link) redis.Hook { return client.RefuseHook{Link: l} }}
}

// sentBy notes c's commands as its call's tries, on the recorder's clock.
func (r *run) sentBy(c *runClient) func(call, point string) {
	return func(call, point string) { c.tries.Sent(call, point, r.rec.Now()) }
}

// startClients makes each client: its clock, failpoints, connections
// through its host's links, and the lock on trial. On error the clients
// made so far are closed.
func (r *run) startClients(ctx context.Context, plan *Plan, topo *topology.Topology) error {
	if len(plan.Failpoints) > 0 || plan.Points.Recorded {
		r.hub.OnHit = func(client int, point string, fired []int) {
			if spec.CmdPoint(point) && len(fired) == 0 && !plan.Points.Recorded {
				return // every command would flood the history; the witness names the lock's steps
			}
			c := r.clients[client]
			r.rec.Add(history.Op{Type: history.Ok, Process: int(c.process.Load()), Client: client, F: history.FStep, Value: point, Fired: fired})
		}
	}
	r.nextPID.Store(int64(plan.Clients))
	for i := 0; i < plan.Clients; i++ {
		c := &runClient{id: i, host: topo.HostOf(i), clock: lockimpl.NewSkewClock(plan.ClockOffsets[i]), fp: lockimpl.NewFailpoints(r.hub, i)}
		c.process.Store(int64(i))
		c.pause.Ordered = r.sim
		c.pause.Salt = plan.Seed<<8 ^ uint64(i)
		c.ctx, c.cancel = context.WithCancel(ctx)
		c.resends = r.resendsOf(c)
		env := lockimpl.Env{Client: i, Clock: client.StoppedClock{Clock: c.clock, Pauser: &c.pause}, FP: c.fp, Log: r.cfg.Log,
			Rand: rand.New(rand.NewPCG(plan.Seed, uint64(i)+1)), Sleep: c.pause.Sleep,
			Renewal: func(key, token string) func(error) {
				done := c.rec.renewal(key, token)
				return func(err error) { done(err) }
			},
			RoundTrip: plan.Network.RoundTrip, CommandTimeout: plan.ClientTimeout}
		c.rdb = topo.Connect(i, c.host, plan.ClientTimeout, clientHooks(&c.pause, func(node string) redis.Hook {
			return &client.CmdHook{Node: node, FP: c.fp, Crash: func(err error) { r.markCrashed(c, err) }, Dead: c.crashed.Load, Sent: r.sentBy(c), Resends: c.resends}
		}))
		for _, rdb := range c.rdb {
			env.Nodes = append(env.Nodes, rdb)
		}
		if err := r.wirePoints(c, topo, &env); err != nil {
			r.closeClients()
			return err
		}
		var err error
		c.locker, err = r.info.New(env, plan.Options)
		if err != nil {
			r.closeClients()
			return fmt.Errorf("%s: %w", r.cfg.Impl, err)
		}
		c.rec = &recordingLocker{r: r, c: c, locker: c.locker}
		r.clients = append(r.clients, c)
	}
	return nil
}

// resendsOf is c's watch on its releases: each command sent to a node again
// after a definite answer within one release is recorded (history.FResend)
// for the checker, which judges it against the faults.
func (r *run) resendsOf(c *runClient) *client.Resends {
	return &client.Resends{Now: func() int64 { return r.rec.Now() }, Report: func(key, node, label string, sent, answered int64) {
		r.add(c, history.Ok, history.FResend, key, func(o *history.Op) { o.Node, o.Value, o.Fence, o.N = node, label, sent, answered })
	}}
}

// wirePoints puts relays (client.Relay) between a lock that makes its own
// connections and c's links, when the plan says so (Points.Relayed: the
// spec explores or names command points): env's nodes then name the
// relays' addresses. The relays' clients
// in env are never used to send (the lock only reads their addresses); they
// are closed with the relays.
func (r *run) wirePoints(c *runClient, topo *topology.Topology, env *lockimpl.Env) error {
	if !r.plan.Points.Relayed {
		return nil
	}
	hook := &client.CmdHook{FP: c.fp, Crash: func(err error) { r.markCrashed(c, err) }, Dead: c.crashed.Load, Sent: r.sentBy(c)}
	for j, u := range c.rdb {
		rdb, ok := u.(*redis.Client)
		if !ok {
			return fmt.Errorf("command points of a lock with its own connections need plain node clients, not %T", u)
		}
		node := topo.Cluster.Nodes()[j].Name
		h := &client.CmdHook{Node: node, FP: hook.FP, Crash: hook.Crash, Dead: hook.Dead, Sent: hook.Sent, Resends: c.resends}
		rl, err := client.NewRelay(rdb.Options().Addr, node, h, c.callNow, func() { r.Crash(c.id) })
		if err != nil {
			for _, rl := range c.relays {
				rl.Close()
			}
			return err
		}
		c.relays = append(c.relays, rl)
		o := *rdb.Options()
		o.Addr = rl.Addr()
		env.Nodes[j] = redis.NewClient(&o)
		c.rdb = append(c.rdb, env.Nodes[j])
	}
	return nil
}

// arm attaches the plan's failpoints and the explorer to the clients and
// puts the steady network condition on the links; the timeline it returns
// plays the scheduled faults. healSteady lifts the steady condition.
func (r *run) arm(ctx context.Context, topo *topology.Topology) (tl *timeline, healSteady []nemesis.Heal, err error) {
	plan := r.plan
	nenv := &nemesis.Env{Net: topo.Net, Cluster: topo.Cluster, ClientHost: topo.HostOf, Clients: plan.Clients, Control: r,
		Rand: rand.New(rand.NewPCG(r.plan.Seed, 0x6e656d6573697300)), Replicas: topo.Replicas}
	for k := 0; k < plan.Keys; k++ {
		nenv.Keys = append(nenv.Keys, keyName(k))
	}
	if rc := topo.RedisCluster(); rc != nil {
		nenv.RedisCluster = rc
	}
	tl = newTimeline(r, nenv)
	if plan.Explore != nil {
		r.explorer = newExplorer(r, tl, *plan.Explore)
		r.hub.Explore = r.explorer.hit
		r.hub.Arm()
	}
	if plan.Points.Recorded {
		r.hub.Arm()
	}
	for i, fp := range plan.Failpoints {
		a := fp.Action
		a.ID = i
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
	if plan.Network.Latency > 0 {
		f, err := nemesis.New(nemesis.Spec{Kind: "latency"}, &nemesis.LatencyParams{Latency: plan.Network.Latency, Jitter: plan.Network.Jitter})
		if err != nil {
			return nil, nil, err
		}
		heal, _, err := f.Inject(ctx, nenv)
		if err != nil {
			return nil, nil, err
		}
		healSteady = append(healSteady, heal)
	}
	return tl, healSteady, nil
}

// playTraffic runs the clients and the fault timeline for the plan's
// duration, then lets the clients finish the cycle they are in.
func (r *run) playTraffic(ctx context.Context, tl *timeline, start time.Time) {
	plan, cfg := r.plan, r.cfg
	runCtx, stop := context.WithTimeout(ctx, plan.Duration)
	defer stop()
	holdsEnd, endHolds := context.WithCancel(ctx)
	defer endHolds()
	r.holdsEnd = holdsEnd
	tl.start(runCtx, plan.Faults)
	var attempts, acquired atomic.Int64
	var wg sync.WaitGroup
	for _, c := range r.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.sim {
				// No two clients start at one virtual instant: which one
				// goes first is the seed's choice, not the scheduler's,
				// as on a real machine it is the scheduler's, never a tie.
				time.Sleep(r.simStart(c.id))
			}
			r.clientLoop(runCtx, c, &attempts, &acquired)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var found <-chan struct{}
	var settle <-chan time.Time
	var overlapAt time.Time
	if r.overlaps != nil {
		found = r.overlaps.found
	}
	for {
		select {
		case <-done:
			r.trafficEnd = time.Now()
			tl.stopAndHeal()
			return
		case <-found:
			// The verdict may be settled: checked soon (a final outcome
			// ends the traffic then), and a grace from now, once the
			// overlap's aftermath is recorded, the traffic ends if unsafe.
			found = nil
			overlapAt = time.Now()
			settle = time.After(r.recheck(0))
		case <-settle:
			settle = nil
			since := time.Since(overlapAt)
			switch st := r.settle(); {
			case st == settledFinal:
				r.stoppedAfter = since
				stop()
			case since < plan.Stop.EarlyStop:
				settle = time.After(r.recheck(since))
			case st == settledUnsafe:
				r.stoppedAfter = plan.Stop.EarlyStop
				stop()
			default:
				found = r.overlaps.rearm()
			}
		case <-tick.C:
			if cfg.Progress != nil {
				cfg.Progress(Progress{Scenario: plan.Scenario, Impl: cfg.Impl, Elapsed: time.Since(start), Total: plan.Duration, Acquired: acquired.Load()})
			}
		case <-runCtx.Done():
			r.trafficEnd = time.Now()
			holds := func() {}
			if errors.Is(runCtx.Err(), context.DeadlineExceeded) {
				holds = endHolds
			}
			r.stopTraffic(ctx, tl, done, holds)
			return
		}
	}
}

// recheck is when, since an overlap was seen, the early stop checks the
// history again: soon after the overlap (a final outcome stops the run at
// once), then at most four times more until the grace (EarlyStop) is up,
// when an unsafe run stops as before.
func (r *run) recheck(since time.Duration) time.Duration {
	first, grace := r.plan.Scaled(300*time.Millisecond), r.plan.Stop.EarlyStop
	if since == 0 {
		return min(first, grace)
	}
	return min(max(first, grace/4), grace-since)
}

// stopTraffic ends a run whose time is up: faults heal first (a paused
// client must be able to finish, a release must not meet a partition the
// spec has already lifted), then endHolds (run.holdsEnd), then clients
// finish the cycle they are in (a critical section ends with its release),
// within a grace period that covers one more wait and hold; then they are
// cancelled.
func (r *run) stopTraffic(ctx context.Context, tl *timeline, done <-chan struct{}, endHolds func()) {
	tl.stopAndHeal()
	if r.sim {
		// In virtual time the heal's effects (a cut connection's EOF
		// reaching a watchdog) and the holders' last steps fall on one
		// instant, in the scheduler's order; a microsecond later every
		// goroutine the heal woke has run, so the seed alone orders them.
		time.Sleep(time.Microsecond)
	}
	endHolds()
	grace := time.NewTimer(r.plan.Stop.Grace)
	defer grace.Stop()
	select {
	case <-done:
		return
	case <-grace.C:
	case <-ctx.Done():
	}
	for _, c := range r.clients {
		c.cancel()
	}
	<-done
}

// finish completes the history once every client stopped: the observers'
// last events, the counters' final values and the end record (a history
// file without it was cut short).
func (r *run) finish(w *watching) history.History {
	w.close()
	for k := 0; k < r.plan.Keys; k++ {
		key := keyName(k)
		r.rec.Add(history.Op{Type: history.Invoke, Process: history.FinalProcess, Client: -1, F: history.FRead, Key: key})
		r.rec.Add(history.Op{Type: history.Ok, Process: history.FinalProcess, Client: -1, F: history.FRead, Key: key, N: r.res.read(key, 0)})
	}
	return r.rec.End(history.Op{Type: history.Ok, Process: history.FinalProcess, Client: -1, F: history.FEnd})
}

// outcome checks the history and says what the run found.
func (r *run) outcome(plan *Plan, topo *topology.Topology, w *watching, h history.History, elapsed time.Duration) *Outcome {
	res := checker.Check(h, plan.Check)
	var fo *FailoverTimes
	if topo.FailsOver() {
		nameMasters(&res, h)
		fo = failoverTimes(h)
		r.log.Info("sentinel failover", "scenario", plan.Scenario, "impl", r.cfg.Impl, "times", fo.String())
	}
	var cov *Coverage
	if plan.Points.Counted {
		cov = coverage(r.hub, r.explorer)
	}
	return &Outcome{Identity: plan.Identity(topo.Cluster.Kind()), Points: cov, Prior: plan.Prior,
		Observer: r.observedNote(w.observed, w.observing, h), CheckOptions: plan.Check,
		Claims: plan.Claims, Result: res, Elapsed: elapsed, History: h, Processes: r.processStats(), Failover: fo,
		StoppedAfter: r.stoppedAfter}
}

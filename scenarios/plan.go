package scenarios

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// Plan is a spec compiled against one lock and config, before anything
// starts: every default applied, the variant resolved to its lock and
// options, the node count, the seed, each client's host and clock offset,
// the workload, the network, the topology, the faults and failpoints, the
// checker's options and the expectation with its reason, every time
// stretched by the plan's time scale. The runner executes what its plan
// says and nothing else: it never sees the spec (plan_isolation_test.go
// fails if it does). `lockstorm run --dry-run` prints it, so a user sees
// what will happen before it happens.
type Plan struct {
	Scenario string `json:"scenario"`
	File     string `json:"file,omitempty"`
	Mode     string `json:"mode"`
	// Impl is the name the lock runs under (a registered name, a variant,
	// or the given lock's); Lock the registered implementation it is.
	Impl    string           `json:"impl"`
	Lock    string           `json:"lock"`
	Options lockimpl.Options `json:"options"`
	Claims  lockimpl.Claims  `json:"claims"`
	Seed    uint64           `json:"seed"`
	// Nodes are the lock's masters (the spec's, else what the lock needs
	// under its options); Replicas and Sentinels the spec's.
	Nodes     int `json:"nodes"`
	Replicas  int `json:"replicas,omitempty"`
	Sentinels int `json:"sentinels,omitempty"`
	Clients   int `json:"clients"`
	Keys      int `json:"keys"`
	// Hosts is how many client hosts share the links; client i is on host
	// h(i mod Hosts + 1).
	Hosts    int           `json:"hosts"`
	Duration time.Duration `json:"duration_ns"`
	// ClockOffsets are the clients' clock offsets that are not zero
	// (the spec's, and the seeded skew of every second client).
	ClockOffsets map[int]time.Duration `json:"clock_offsets,omitempty"`
	Faults       []PlanFault           `json:"faults,omitempty"`
	// LeftOut are the spec's faults this run leaves out (nemesis.Applies:
	// a quorum-only kind on one master), with the reason.
	LeftOut    []string        `json:"left_out,omitempty"`
	Failpoints []PlanFailpoint `json:"failpoints,omitempty"`
	// Explore is the spec's exploration with its defaults filled in.
	Explore *spec.Explore `json:"explore,omitempty"`
	// Prior are the coverage combinations (Combo.Key) that earlier runs
	// covered (Config.Prior): the explorer steers its faults to the others.
	Prior       []string         `json:"prior,omitempty"`
	Check       history.Options  `json:"checker_options"`
	Expectation spec.Expectation `json:"expectation"`
	// TimeScale, when set, says every time of the plan was stretched to
	// fit a lock whose clock counts in coarse units
	// (lockimpl.Claims.Granularity): see FitTimeScale.
	TimeScale *history.TimeScale `json:"time_scale,omitempty"`

	// Program is the client program the lock is, started once per client
	// (nil: a lock in Go).
	Program *PlanProgram `json:"program,omitempty"`

	// Gated says a DIFF of this run fails the gate (gatedRun); SpecGated
	// is the spec's own gating, which only the dry run's text tells apart.
	Gated     bool `json:"gated"`
	SpecGated bool `json:"spec_gated"`
	// Workload is what every client does.
	Workload PlanWorkload `json:"workload"`
	// ClientTimeout is every Redis command's dial, read and write timeout.
	ClientTimeout time.Duration `json:"client_timeout_ns"`
	// Network is the steady condition on every link.
	Network PlanNetwork `json:"network"`
	// Sentinel is the Sentinel set (nil: clients talk to the masters);
	// MinReplicas the data servers' min-replicas settings (nil: none).
	Sentinel    *spec.SentinelSpec `json:"sentinel,omitempty"`
	MinReplicas *spec.MinReplicas  `json:"min_replicas,omitempty"`
	// Cluster is the Redis Cluster (nil: no cluster); the lock then sees
	// one node, the cluster, through one cluster client per client.
	Cluster *PlanCluster `json:"cluster,omitempty"`
	// ServerClock starts the servers under the clock shim (a fault moves
	// their clock).
	ServerClock bool `json:"server_clock,omitempty"`
	// Observe records the servers' key events (the spec's observe).
	Observe bool `json:"observe"`
	// Points is how the run's points are armed.
	Points PlanPoints `json:"points"`
	// Stop is how the run ends.
	Stop PlanStop `json:"stop"`

	info lockimpl.Info
}

// PlanCluster is a Redis Cluster: Masters masters n1.., Replicas (0 or 1)
// replicas each, r_i of n_i, with cluster-node-timeout NodeTimeout.
type PlanCluster struct {
	Masters     int           `json:"masters"`
	Replicas    int           `json:"replicas"`
	NodeTimeout time.Duration `json:"node_timeout_ns"`
}

// PlanWorkload is each client's loop: acquire, hold, release, think.
type PlanWorkload struct {
	// CSMin and CSMax bound the critical section's hold (uniform).
	CSMin time.Duration `json:"cs_min_ns"`
	CSMax time.Duration `json:"cs_max_ns"`
	// Client is careful or careless (Workload.Client).
	Client string `json:"client"`
	// Resource is counter or fenced (the spec's, else fenced for a lock
	// that claims fencing tokens).
	Resource string `json:"resource"`
	// Ops bounds the run's acquire attempts, Cycles each client's
	// acquisitions (0: unbounded).
	Ops    int `json:"ops,omitempty"`
	Cycles int `json:"cycles,omitempty"`
	// Think is the pause after a cycle and after a failed acquire.
	Think time.Duration `json:"think_ns,omitempty"`
	// Backoff is the wait after an unknown outcome or a refused command:
	// the longest of Think, the spec's retry delay and 10 ms (scaled).
	Backoff time.Duration `json:"backoff_ns"`
	// ExtendEvery, when set, cuts a hold into slices after each of which
	// the holder extends its lease to ExtendTTL (the spec's lock.ttl).
	ExtendEvery time.Duration `json:"extend_every_ns,omitempty"`
	ExtendTTL   time.Duration `json:"extend_ttl_ns,omitempty"`
	// ReleaseAgain: a release with an unknown outcome is asked once more
	// (Workload.ReleaseAgain).
	ReleaseAgain bool `json:"release_again,omitempty"`
}

// PlanNetwork is the steady condition on every link.
type PlanNetwork struct {
	Latency time.Duration `json:"latency_ns,omitempty"`
	Jitter  time.Duration `json:"jitter_ns,omitempty"`
	// RoundTrip is what a lock is told a round trip takes
	// (lockimpl.Env.RoundTrip): twice latency plus jitter.
	RoundTrip time.Duration `json:"round_trip_ns,omitempty"`
}

// PlanFault is a fault of the timeline and, when Compile can say it before
// anything starts (no pick), what it will apply to (nemesis.Preview).
type PlanFault struct {
	nemesis.Spec `yaml:",inline"`
	Targets      *nemesis.Targets `json:"targets,omitempty"`
	// Index is the fault's place in the spec's list, left-out faults
	// counted: its random times and targets are drawn from a source seeded
	// by it, so leaving a fault out (a quorum-only kind on one master)
	// does not move the faults after it.
	Index int `json:"index"`
}

// PlanFailpoint is a spec's failpoint as armed on this lock.
type PlanFailpoint struct {
	spec.FailpointSpec `yaml:",inline"`
	// Inert: the point is a step of another lock, which this one never
	// reaches (ownPoint).
	Inert bool `json:"inert,omitempty"`
	// FaultTargets is what its fault will apply to, when Compile can say.
	FaultTargets *nemesis.Targets `json:"fault_targets,omitempty"`
}

// PlanPoints says how the run's points are armed.
type PlanPoints struct {
	// Counted: failpoints or exploration arm the points, and the outcome
	// reports their coverage.
	Counted bool `json:"counted,omitempty"`
	// Recorded: the run records every step (Config.RecordSteps) although
	// nothing is attached to the points.
	Recorded bool `json:"recorded,omitempty"`
	// Relayed: the lock makes its own connections (on a topology whose
	// nodes a client process can be told), so each connection goes through
	// a relay that passes the command points on the wire (client.Relay)
	// and watches its releases for resends (client.Resends): the points
	// are hit only when armed, but a resend is judged in every run.
	Relayed bool `json:"relayed,omitempty"`
}

// PlanStop is how a run ends once its duration is up or its verdict is
// settled.
type PlanStop struct {
	// Grace is how long clients may take to finish their cycle after the
	// duration (one wait for the lock, one critical section, two command
	// timeouts and a second, at most 30 s; scaled).
	Grace time.Duration `json:"grace_ns"`
	// EarlyStop, when set, ends the traffic that long after the first
	// overlap (two TTLs, at least 300 ms scaled): unless the run keeps its
	// whole duration (Config.FullDuration) or its resource is fenced (its
	// overlaps may be safe).
	EarlyStop time.Duration `json:"early_stop_ns,omitempty"`
	// Bound is when Run gives up on a stuck harness: the duration, the
	// grace and two minutes for set-up and checking.
	Bound time.Duration `json:"bound_ns"`
}

// PlanProgram is a client program a run starts, once per client.
type PlanProgram struct {
	Argv []string `json:"argv"`
	// Unasked says it was not started to ask its hello (a spec's program
	// without the user's consent, or a dry run): its claims, and so a
	// derived expectation, are unknown.
	Unasked bool `json:"unasked,omitempty"`
}

// Compile turns spec, the lock cfg names and cfg into a plan, or says why
// it cannot run (an unknown implementation, a lock that refuses the
// spec's options). Nothing is started.
func Compile(sp *spec.Spec, cfg Config) (*Plan, error) {
	name, info, opts, err := cfg.resolve(sp)
	if err != nil {
		return nil, err
	}
	seed := sp.Seed
	if cfg.Seed != 0 {
		seed = cfg.Seed
	}
	claims := info.ClaimsUnder(opts)
	// A lock that counts time more coarsely than the scenario's TTL runs
	// the whole scenario stretched by one factor (its order unchanged);
	// from here on every time comes from the scaled spec.
	ts := spec.FitTimeScale(claims.Granularity(), opts.TTL)
	orig := sp
	if sp, err = sp.Scaled(ts); err != nil {
		return nil, err
	}
	opts = spec.ScaledOptions(opts, ts)
	p := &Plan{Scenario: sp.Name, File: sp.File, Mode: sp.Mode, Impl: name, Lock: info.Name, Options: opts,
		Claims: claims, Seed: seed, Nodes: sp.Nodes, Replicas: sp.Replicas, Clients: sp.Clients, Keys: sp.Keys,
		Hosts: sp.Hosts, Duration: sp.Duration,
		TimeScale: ts, info: info, ClientTimeout: sp.ClientTimeout, SpecGated: sp.IsGated()}
	if p.Nodes == 0 {
		p.Nodes = info.NodesUnder(opts)
	}
	if info.Program != nil {
		p.Program = &PlanProgram{Argv: info.Program, Unasked: info.Unasked()}
	}
	if p.Hosts == 0 {
		p.Hosts = min(sp.Clients, 64)
	}
	p.compileTopology(sp)
	p.compileWorkload(sp)
	stamps := claims.Expiry == lockimpl.ClientClockExpiry || claims.Expiry == lockimpl.NoExpiry || claims.WholeSeconds
	p.Check = history.Options{Fenced: p.Workload.Resource == "fenced", DeadlockBound: sp.DeadlockBound, StampTokens: stamps}
	if stamps {
		p.Check.StampLease = opts.TTL
	}
	p.Check.WaitBound, p.Check.LockstepWithin, p.Check.LockstepRounds = sp.WaitBound, sp.LockstepWithin, sp.LockstepRounds
	if sp.Mode == "scheduled" {
		p.Check.ScheduleLease = sp.Lock.TTL
	}
	p.Expectation = cfg.expectation(orig, name, claims)
	if p.Expectation.Verdict != "" {
		p.Expectation.Permissions = orig.PermissionsFor(p.Expectation, claims)
		p.Check.Permissions = p.Expectation.Permissions
	}
	p.Check.Quorum = claims.Topology == lockimpl.Quorum
	p.Check.BackoffGrowth, p.Check.BackoffCap = claims.BackoffGrowth, time.Duration(claims.BackoffCap*float64(opts.TTL))
	if claims.ExtendRetries {
		p.Check.ExtendRetryLease = opts.TTL
	}
	if claims.WaitsOut {
		p.Check.WaitOut = opts.WaitTimeout
	}
	p.Check.OrphanBound = orphanBound(claims, opts.TTL)
	p.Gated = gatedRun(sp, p.Expectation)
	p.ClockOffsets = clockOffsets(sp, seed)
	p.compilePoints(sp)
	p.Points.Recorded = cfg.RecordSteps
	if p.Explore != nil {
		p.Prior = cfg.Prior
	}
	p.compileFaults(sp)
	p.compileStop(sp, cfg.FullDuration)
	return p, nil
}

// Identity is the run's identity, on the backend it runs on: made here
// once from the plan, and taken whole by the outcome and the history's
// header. Its Gated is the run's gating (Plan.Gated).
func (p *Plan) Identity(backend string) history.Identity {
	exp := p.Expectation
	id := history.Identity{Scenario: p.Scenario, Impl: p.Impl, Seed: p.Seed, Backend: backend, Mode: p.Mode,
		Client: p.Workload.Client, Gated: p.Gated, Expected: exp.Verdict, ExpectedReason: exp.Reason,
		ExpectedSource: exp.Source, TimeScale: p.TimeScale}
	if p.File != "" && !strings.HasPrefix(p.File, "specs/") {
		id.File = p.File
	}
	return id
}

// compileTopology copies what the servers are started with: the Sentinel
// set (its defaults applied by the spec's validation), min-replicas, the
// server clock shim, the observers.
func (p *Plan) compileTopology(sp *spec.Spec) {
	if sp.Sentinel != nil {
		sn := *sp.Sentinel
		sn.Sentinels = cmp.Or(sn.Sentinels, 3)
		p.Sentinel, p.Sentinels = &sn, sn.Sentinels
	}
	if sp.MinReplicas != nil {
		m := *sp.MinReplicas
		p.MinReplicas = &m
	}
	if c := sp.Cluster; c != nil {
		p.Cluster = &PlanCluster{Masters: cmp.Or(c.Masters, 3), Replicas: c.ReplicasPer(), NodeTimeout: cmp.Or(c.NodeTimeout, time.Second)}
	}
	p.ServerClock = nemesis.UsesServerClock(sp.AllFaults())
	p.Observe = sp.Observe == nil || *sp.Observe
	p.Network = PlanNetwork{Latency: sp.Network.Latency, Jitter: sp.Network.Jitter,
		RoundTrip: 2 * (sp.Network.Latency + sp.Network.Jitter)}
}

// compileWorkload is the clients' loop. The runner's own times that stand
// in for the scenario's (the backoff's floor) are times of the scenario:
// stretched with it. The extend TTL and the backoff read the spec's lock
// block, not a variant's overlay of it.
func (p *Plan) compileWorkload(sp *spec.Spec) {
	w := sp.Workload
	resource := cmp.Or(w.Resource, "counter")
	if w.Resource == "" && p.Claims.Fencing {
		resource = "fenced"
	}
	p.Workload = PlanWorkload{CSMin: w.CSMin, CSMax: w.CSMax, Client: w.Client, Resource: resource,
		Ops: sp.Ops, Cycles: w.Cycles, Think: sp.Think, ExtendEvery: w.ExtendEvery, ReleaseAgain: w.ReleaseAgain,
		Backoff: max(sp.Think, sp.Lock.RetryDelay, p.Scaled(10*time.Millisecond))}
	if w.ExtendEvery > 0 {
		p.Workload.ExtendTTL = sp.Lock.TTL
	}
}

// compilePoints arms the failpoints (saying which are steps of another
// lock) and fills in the exploration's defaults, times of the scenario:
// stretched with it.
func (p *Plan) compilePoints(sp *spec.Spec) {
	for _, fp := range sp.Failpoints {
		p.Failpoints = append(p.Failpoints, PlanFailpoint{FailpointSpec: fp, Inert: !ownPoint(p.info, fp.Point)})
	}
	if sp.Explore != nil {
		e := *sp.Explore
		e.PerPoint = cmp.Or(e.PerPoint, 1)
		e.Delay = cmp.Or(e.Delay, p.Scaled(50*time.Millisecond))
		if e.Pause == 0 {
			e.Pause = p.Scaled(time.Second)
			if ttl := sp.Lock.TTL; ttl > 0 {
				e.Pause = 2 * ttl
			}
		}
		p.Explore = &e
	}
	p.Points.Counted = len(sp.Failpoints) > 0 || sp.Explore != nil
	p.Points.Relayed = p.info.OwnConnections && sp.Sentinel == nil && sp.Cluster == nil
}

// gatedRun says whether a run's verdict is gated. A random mode is gated on
// the find rate measured for the locks its spec lists. For a lock whose
// expectation comes from its claims that rate is unknown (a quorum lock
// loses the race only when its votes fell a certain way), so its run is
// exploratory: a miss is reported, not counted as a regression; an
// unexpected violation still is. So is a run whose rule says its verdict
// is a search's (Rule.Search): the spec's schedule does not force it for
// this lock.
func gatedRun(sp *spec.Spec, exp spec.Expectation) bool {
	return sp.IsGated() && !((sp.Mode == "random" || exp.Search) && exp.Source == spec.FromClaims)
}

// compileFaults resolves the timeline's faults and those placed at
// failpoints to what they will apply to, where that does not depend on the
// run (nemesis.Preview: not for a pick).
func (p *Plan) compileFaults(sp *spec.Spec) {
	l := p.layout()
	for i, f := range sp.Faults {
		if !nemesis.Applies(f, p.Nodes) {
			p.LeftOut = append(p.LeftOut, fmt.Sprintf("%s (%d master: nothing to act on)", flow(f), p.Nodes))
			continue
		}
		pf := PlanFault{Spec: f, Index: i}
		if t, ok := nemesis.Preview(f, l); ok {
			pf.Targets = &t
		}
		p.Faults = append(p.Faults, pf)
	}
	for i, fp := range p.Failpoints {
		if fp.Fault == nil {
			continue
		}
		if t, ok := nemesis.Preview(*fp.Fault, l); ok {
			p.Failpoints[i].FaultTargets = &t
		}
	}
}

// compileStop is how the run ends: its grace after the duration, the early
// stop after a first overlap, and the bound past which Run gives up.
func (p *Plan) compileStop(sp *spec.Spec, fullDuration bool) {
	g := sp.Lock.WaitTimeout + sp.Workload.CSMax + 2*sp.ClientTimeout + p.Scaled(time.Second)
	p.Stop.Grace = min(g, p.Scaled(30*time.Second))
	if !fullDuration && !p.Check.Fenced {
		p.Stop.EarlyStop = max(2*sp.Lock.TTL, p.Scaled(300*time.Millisecond))
	}
	p.Stop.Bound = p.Duration + p.Stop.Grace + 2*time.Minute
}

// Scaled is d stretched by the plan's time scale (d itself when the run
// is not scaled): for the runner's own times that stand in for the
// scenario's (defaults, floors).
func (p *Plan) Scaled(d time.Duration) time.Duration {
	if p == nil {
		return d
	}
	return p.TimeScale.Of(d)
}

// clockOffsets are the clients' clock offsets: the spec's, else a seeded
// skew of up to ClockSkew behind for every second client.
func clockOffsets(sp *spec.Spec, seed uint64) map[int]time.Duration {
	out := map[int]time.Duration{}
	skewRng := rand.New(rand.NewPCG(seed, 0x736b6577))
	for i := 0; i < sp.Clients; i++ {
		offset, ok := sp.ClockOffsets[i]
		if !ok && sp.ClockSkew > 0 && i%2 == 1 {
			offset = -time.Duration(skewRng.Int64N(int64(sp.ClockSkew)))
		}
		if offset != 0 {
			out[i] = offset
		}
	}
	return out
}

// resolve picks the lock on trial, its options and the name it is reported
// under.
func (cfg Config) resolve(sp *spec.Spec) (string, lockimpl.Info, lockimpl.Options, error) {
	if cfg.Info == nil {
		info, o, err := sp.Resolve(cfg.Impl)
		return cfg.Impl, info, o, err
	}
	if err := cfg.Info.Check(); err != nil {
		return "", lockimpl.Info{}, lockimpl.Options{}, err
	}
	name := cfg.Impl
	if name == "" {
		name = cfg.Info.Name
	}
	if v, ok := sp.Variants[name]; ok && sp.Knows(cfg.Info.Name) && v.Impl == cfg.Info.Name {
		return name, *cfg.Info, spec.Overlay(sp.Lock, v.Options), nil
	}
	return name, *cfg.Info, sp.Lock, nil
}

// expectation is what the run is expected to give: the baseline's verdict,
// else the spec's, else the one derived from the claims.
func (cfg Config) expectation(sp *spec.Spec, name string, c lockimpl.Claims) spec.Expectation {
	if e, ok := cfg.Baseline.Expect(sp.Name, name); ok {
		return e
	}
	if cfg.Info != nil && !sp.Knows(cfg.Info.Name) {
		// A lock given in code is the one a spec's expected names only
		// when the spec was loaded for it (LoadFor): an embedded spec's
		// entry for a registered lock of the same name is not about it.
		return sp.Derived(c)
	}
	return sp.ExpectFor(name, c)
}

// orphanBound is how long a key may outlive its last holder before it is
// an orphan: the longest the lock's own expiry takes (its TTL, rounded up
// to the lock's unit, plus one unit more for a whole-second stamp), and a
// second for the server to reclaim it (Redis's active expiry runs ten
// times a second and, with the handful of keys of a run, finds an expired
// key at its first or second cycle). A lock with no TTL has no bound.
func orphanBound(c lockimpl.Claims, ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return 0
	}
	g := c.Granularity()
	life := (ttl + g - 1) / g * g
	if c.WholeSeconds {
		life += g
	}
	return life + time.Second
}

// HostOf is client c's host name.
func (p *Plan) HostOf(c int) string { return fmt.Sprintf("h%d", c%p.Hosts+1) }

package spec

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// The runner's own failpoints, passed by every client whatever the lock.
const (
	// PointBeforeAcquire is passed before each acquire.
	PointBeforeAcquire = "cycle/before-acquire"
	// PointHold is inside the critical section, after the read.
	PointHold = "cs/hold"
	// PointBeforeRelease is passed once the critical section is over, before the release.
	PointBeforeRelease = "cycle/before-release"
)

// RunnerPoints are the runner's own failpoints.
var RunnerPoints = []string{PointBeforeAcquire, PointHold, PointBeforeRelease}

// Limits bound what a spec may ask of the machine. A spec beyond them is
// refused at load, before anything starts, with the limit's name; the
// CLI's run flags raise each one where a user could mean it.
type Limits struct {
	// MaxNodes bounds the Redis masters of one run (each is a process).
	MaxNodes int
	// MaxHosts bounds the client hosts (each host has a proxy per node).
	MaxHosts int
	// MaxDuration bounds a run's duration.
	MaxDuration time.Duration
	// MinEvery is the shortest period of a repeated fault.
	MinEvery time.Duration
	// MaxHistory bounds the estimated history entries of a run.
	MaxHistory int64
	// OpenFiles is how many files the process may open (0: its
	// RLIMIT_NOFILE), checked against the descriptors a run needs.
	OpenFiles int
	// AllowExec lets the client programs that exec variants name start:
	// each is asked its hello at load and runs a process per client.
	// Without it a spec is data: a program is looked up but not started,
	// known by its command line only, and a run refuses it (NeedsConsent).
	AllowExec bool
}

// DefaultLimits are the limits of `lockstorm run` without flags (docs/spec.md).
func DefaultLimits() Limits {
	return Limits{MaxNodes: 16, MaxHosts: 256, MaxDuration: 10 * time.Minute, MinEvery: 10 * time.Millisecond, MaxHistory: 20_000_000}
}

// openFiles is the process's limit on open descriptors (Go raises the soft
// limit to the hard one at start-up).
func (l Limits) openFiles() int {
	if l.OpenFiles > 0 {
		return l.OpenFiles
	}
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 1 << 30
	}
	return int(r.Cur)
}

// Sizing of a run, for the limits: every client opens up to connsPerNode
// connections to each node (a command connection, plus the watchdog's or a
// subscriber's), and each costs three descriptors in this process (the
// client's socket, the proxy's accepted socket and its upstream socket).
const (
	connsPerNode    = 2
	fdsPerConn      = 3
	fdsReserve      = 64
	redisMaxClients = 10000 // redis-server's default maxclients
	// entriesPerCycle is a cycle's history entries (acquire, read, write,
	// release: invoke and completion each), stepsPerCycle the step entries
	// added when failpoints are recorded.
	entriesPerCycle = 8
	stepsPerCycle   = 16
	// minRTT and maxEntryRate bound how fast a run can produce history: a
	// loopback round trip through a proxy takes at least minRTT, and the
	// whole process does not record more than maxEntryRate entries a second.
	minRTT       = 100 * time.Microsecond
	maxEntryRate = 100_000
)

// fdsNeeded estimates the descriptors a run opens.
func (s *Spec) fdsNeeded(nodes int) int {
	hosts := s.hostCount()
	return fdsReserve + hosts*nodes + s.Replicas*nodes*(1+fdsPerConn) + s.Clients*nodes*connsPerNode*fdsPerConn + nodes*4
}

// hostCount is the number of client hosts (h1..hN).
func (s *Spec) hostCount() int {
	if s.Hosts > 0 {
		return s.Hosts
	}
	return min(s.Clients, 64)
}

// historyEstimate bounds the entries a run records: cycles at the fastest a
// client can go (its think time and shortest critical section, or four
// round trips), capped by ops, cycles and the process's recording rate,
// plus two entries per fault injection.
func (s *Spec) historyEstimate() int64 {
	per := int64(entriesPerCycle)
	if len(s.Failpoints) > 0 || s.Explore != nil {
		per += stepsPerCycle
	}
	rtt := max(2*s.Network.Latency, minRTT)
	cycle := max(s.Think+s.Workload.CSMin, 4*rtt)
	secs := s.Duration.Seconds()
	cycles := float64(s.Clients) * secs / cycle.Seconds()
	if s.Workload.Cycles > 0 {
		cycles = min(cycles, float64(s.Clients*s.Workload.Cycles))
	}
	if s.Ops > 0 {
		cycles = min(cycles, float64(s.Ops))
	}
	entries := min(cycles*float64(per), maxEntryRate*secs)
	for _, f := range s.AllFaults() {
		n := 1.0
		if f.Every > 0 {
			n += float64(s.Duration-f.At) / float64(f.Every)
		}
		entries += 2 * n
	}
	return int64(entries)
}

// validate checks every value against its field's meaning, the topology
// and the limits, and fills defaults. Fields are checked in file order of
// their kind so the first mistake reported is stable.
func (s *Spec) validate(doc *yamlDoc, lim Limits) error {
	s.doc = doc
	s.limits = lim
	bad := func(field, msg string, args ...any) error {
		return &SpecError{File: s.File, Line: doc.lineOf(field), Field: field, Msg: fmt.Sprintf(msg, args...)}
	}
	// The order of the stages is the order of the errors a user meets: the
	// shape of the fields first, then what they mean together.
	stages := []func() error{
		func() error { return s.checkShape(doc, bad) },
		func() error { return s.checkTopology(bad) },
		func() error { return s.checkBounds(lim, bad) },
		func() error { return s.checkWorkload(bad) },
		func() error { return s.checkVariants(doc, bad) },
		func() error { return s.checkNames(bad) },
		func() error { return s.checkFaults(bad) },
	}
	for _, stage := range stages {
		if err := stage(); err != nil {
			return err
		}
	}
	if n := s.historyEstimate(); n > lim.MaxHistory {
		return bad("duration", "this run could record about %d history entries (%d clients for %v), above the limit of %d: shorten it, bound it with ops or workload.cycles, or raise --max-history", n, s.Clients, s.Duration, lim.MaxHistory)
	}
	for _, name := range s.matrix() {
		if err := s.CheckImpl(name); err != nil {
			return err
		}
	}
	return nil
}

// checkShape refuses a missing name, an unknown mode, negative durations and
// counts, and zeros written out where zero would silently mean the default.
func (s *Spec) checkShape(doc *yamlDoc, bad func(string, string, ...any) error) error {
	if s.Name == "" {
		return bad("name", "missing")
	}
	switch s.Mode {
	case "":
		s.Mode = "random"
	case "random", "scheduled":
	default:
		return bad("mode", "%s", enumMsg(s.Mode, "scheduled", "random"))
	}
	durs := []struct {
		f string
		d time.Duration
	}{{"duration", s.Duration}, {"client_timeout", s.ClientTimeout}, {"think", s.Think},
		{"workload.cs_min", s.Workload.CSMin}, {"workload.cs_max", s.Workload.CSMax}, {"workload.extend_every", s.Workload.ExtendEvery},
		{"network.latency", s.Network.Latency}, {"clock_skew", s.ClockSkew}, {"network.jitter", s.Network.Jitter}, {"deadlock_bound", s.DeadlockBound}}
	for _, d := range durs {
		if d.d < 0 {
			return bad(d.f, "must not be negative, got %v", d.d)
		}
	}
	ints := []struct {
		f string
		n int
	}{{"nodes", s.Nodes}, {"replicas", s.Replicas}, {"clients", s.Clients}, {"hosts", s.Hosts}, {"keys", s.Keys}, {"ops", s.Ops},
		{"workload.cycles", s.Workload.Cycles}}
	for _, i := range ints {
		if i.n < 0 {
			return bad(i.f, "must not be negative, got %d", i.n)
		}
	}
	// A zero written out where zero stands for a default would silently
	// run with the default: clients: 0 is not one client.
	for _, f := range []string{"nodes", "clients", "hosts", "keys", "duration", "client_timeout", "deadlock_bound"} {
		if doc.has(f) && reflect.ValueOf(s.fieldValue(f)).IsZero() {
			if f == "duration" {
				return bad(f, "must be > 0: every run needs a time bound")
			}
			return bad(f, "must be > 0 (omit the field for its default)")
		}
	}
	if err := checkLockZeros(doc, "lock", s.Lock, bad); err != nil {
		return err
	}
	if err := optionNegatives("lock", s.Lock, bad); err != nil {
		return err
	}
	return nil
}

// checkTopology checks replicas, Sentinel and min_replicas, and fills in
// Sentinel's defaults.
func (s *Spec) checkTopology(bad func(string, string, ...any) error) error {
	if s.Replicas > 1 {
		return bad("replicas", "at most 1 replica per master")
	}
	if s.Duration == 0 {
		return bad("duration", "missing: every run needs a time bound")
	}
	if err := s.checkCluster(bad); err != nil {
		return err
	}
	if sn := s.Sentinel; sn != nil {
		if s.Replicas != 1 {
			return bad("sentinel", "needs replicas: 1 (Sentinel promotes a replica)")
		}
		if sn.Sentinels < 0 || sn.Quorum < 0 || sn.DownAfter < 0 || sn.FailoverTimeout < 0 {
			return bad("sentinel", "must not be negative")
		}
		if sn.Sentinels == 0 {
			sn.Sentinels = 3
		}
		if sn.Quorum == 0 {
			sn.Quorum = sn.Sentinels/2 + 1
		}
		if sn.Quorum > sn.Sentinels {
			return bad("sentinel.quorum", "%d is more than the %d sentinels", sn.Quorum, sn.Sentinels)
		}
		if sn.DownAfter == 0 {
			sn.DownAfter = 500 * time.Millisecond
		}
		if sn.FailoverTimeout == 0 {
			sn.FailoverTimeout = 2 * time.Second
		}
	}
	if m := s.MinReplicas; m != nil {
		if s.Replicas != 1 {
			return bad("min_replicas", "needs replicas: 1")
		}
		if m.ToWrite < 1 || m.ToWrite > s.Replicas {
			return bad("min_replicas.to_write", "want 1..%d (the replicas per master), got %d", s.Replicas, m.ToWrite)
		}
		if m.MaxLag < time.Second || m.MaxLag%time.Second != 0 {
			return bad("min_replicas.max_lag", "Redis counts it in whole seconds: want 1s, 2s, ..., got %v", m.MaxLag)
		}
	}
	return nil
}

// checkCluster checks the cluster block and fills in its defaults.
func (s *Spec) checkCluster(bad func(string, string, ...any) error) error {
	c := s.Cluster
	if c == nil {
		return nil
	}
	for _, f := range []string{"replicas", "sentinel", "min_replicas", "nodes"} {
		if s.doc.has(f) {
			return bad(f, "not with cluster: the cluster block sets the topology (cluster.replicas), and a lock on a cluster sees one node")
		}
	}
	if c.Masters == 0 {
		c.Masters = 3
	}
	if c.Masters < 3 || c.Masters > 16 {
		return bad("cluster.masters", "want 3..16 (a failover needs the votes of a majority of the masters), got %d", c.Masters)
	}
	if r := c.ReplicasPer(); r < 0 || r > 1 {
		return bad("cluster.replicas", "want 0 or 1 replica per master, got %d", r)
	}
	if c.NodeTimeout == 0 {
		c.NodeTimeout = time.Second
	}
	if c.NodeTimeout < 100*time.Millisecond || c.NodeTimeout%time.Millisecond != 0 {
		return bad("cluster.node_timeout", "want whole milliseconds, at least 100ms, got %v", c.NodeTimeout)
	}
	return nil
}

// clusterTargetMsg checks, in the cluster topology, a fault target that
// names a cluster node: masters n1..nM, replicas r1..rM (as servers, and
// as hosts: their links to the other nodes). "" when t is fine, ok false
// when t is not a cluster node's name at all.
func (s *Spec) clusterTargetMsg(t string) (msg string, ok bool) {
	c := s.Cluster
	if c == nil || len(t) < 2 || (t[0] != 'n' && t[0] != 'r') {
		return "", false
	}
	k, err := strconv.Atoi(t[1:])
	switch {
	case err != nil || k < 1:
		return fmt.Sprintf("%q: want a cluster node n1..n%d or r1..r%d", t, c.Masters, c.Masters), true
	case t[0] == 'r' && c.ReplicasPer() == 0:
		return fmt.Sprintf("no replica %s: cluster.replicas is 0", t), true
	case k > c.Masters:
		return fmt.Sprintf("no cluster node %s (cluster.masters: %d)", t, c.Masters), true
	}
	return "", true
}

// checkBounds applies the defaults of clients, keys and client_timeout and
// refuses a run past the machine's limits.
func (s *Spec) checkBounds(lim Limits, bad func(string, string, ...any) error) error {
	if s.Duration > lim.MaxDuration {
		return bad("duration", "%v is above the limit of %v (raise it with --max-duration)", s.Duration, lim.MaxDuration)
	}
	if s.Clients == 0 {
		s.Clients = 1
	}
	if s.Keys == 0 {
		s.Keys = 1
	}
	if s.ClientTimeout == 0 {
		s.ClientTimeout = time.Second
	}
	if s.Hosts > s.Clients {
		return bad("hosts", "%d hosts for %d clients: hosts h%d.. would have no client", s.Hosts, s.Clients, s.Clients+1)
	}
	if s.hostCount() > lim.MaxHosts {
		return bad("hosts", "%d hosts is above the limit of %d (raise it with --max-hosts)", s.hostCount(), lim.MaxHosts)
	}
	if s.Nodes > lim.MaxNodes {
		return bad("nodes", "%d nodes is above the limit of %d redis-server processes (raise it with --max-nodes)", s.Nodes, lim.MaxNodes)
	}
	return nil
}

// checkWorkload checks the client loop: extends, critical sections, the
// client's kind and the resource.
func (s *Spec) checkWorkload(bad func(string, string, ...any) error) error {
	if s.Workload.ExtendEvery > 0 && s.Lock.TTL <= 0 {
		return bad("workload.extend_every", "extends renew to lock.ttl: set lock.ttl")
	}
	if s.Workload.CSMax < s.Workload.CSMin {
		return bad("workload.cs_max", "%v is below cs_min (%v)", s.Workload.CSMax, s.Workload.CSMin)
	}
	switch s.Workload.Client {
	case "":
		s.Workload.Client = Careless
	case Careless, Careful:
	default:
		return bad("workload.client", "%s", enumMsg(s.Workload.Client, Careful, Careless))
	}
	switch s.Workload.Resource {
	case "", "counter", "fenced":
	default:
		return bad("workload.resource", "%s", enumMsg(s.Workload.Resource, "counter", "fenced"))
	}
	return nil
}

// checkVariants checks that each variant runs exactly one of impl or exec,
// does not shadow an implementation, and sets no option to an invalid value.
func (s *Spec) checkVariants(doc *yamlDoc, bad func(string, string, ...any) error) error {
	for _, name := range sortedKeys(s.Variants) {
		v := s.Variants[name]
		hasExec := doc.has("variants." + name + ".exec")
		switch {
		case hasExec && v.Impl != "":
			return bad("variants."+name+".exec", "a variant runs either impl (%s) or exec (a client program), not both", v.Impl)
		case hasExec:
			if err := s.checkProgram(name, v.Exec, bad); err != nil {
				return err
			}
		case v.Impl == "":
			return bad("variants."+name+".impl", "missing: which implementation the variant runs (or exec: [PROGRAM, ARGS...] for a client program)")
		default:
			if _, err := s.lookup(v.Impl); err != nil {
				return bad("variants."+name+".impl", "%s", implMsg(v.Impl))
			}
		}
		if _, dup := s.lookup(name); dup == nil {
			return bad("variants."+name, "shadows the implementation of the same name")
		}
		if err := checkLockZeros(doc, "variants."+name, v.Options, bad); err != nil {
			return err
		}
		if err := optionNegatives("variants."+name, v.Options, bad); err != nil {
			return err
		}
	}
	return nil
}

// checkNames checks every name the spec refers to: impls, clock offsets' clients,
// expected verdicts and derive rules.
func (s *Spec) checkNames(bad func(string, string, ...any) error) error {
	for i, name := range s.Impls {
		_, o, err := s.Resolve(name)
		if err != nil {
			return bad(fmt.Sprintf("impls.%d", i), "%s", implMsg(name))
		}
		if o.WaitReplicas > 0 && o.ReplicaTimeout >= s.ClientTimeout {
			return bad(fmt.Sprintf("impls.%d", i), "%s: replica_timeout %v must be below client_timeout %v (WAIT blocks the connection that long)", name, o.ReplicaTimeout, s.ClientTimeout)
		}
	}
	for _, c := range sortedKeys(s.ClockOffsets) {
		if c < 0 || c >= s.Clients {
			return bad("clock_offsets."+strconv.Itoa(c), "no client %d (clients: %d, numbered from 0)", c, s.Clients)
		}
	}
	for _, name := range sortedKeys(s.Expected) {
		v := s.Expected[name]
		if _, _, err := s.Resolve(name); err != nil {
			return bad("expected."+name, "%s", implMsg(name))
		}
		if !validVerdict(v) {
			return bad("expected."+name, "verdict %s", enumMsg(v, checker.Safe, checker.Unsafe, checker.Deadlock, checker.Inconclusive))
		}
	}
	if err := s.validateRules(bad); err != nil {
		return err
	}
	return nil
}

// checkFaults checks the network, every fault, failpoint and exploration.
func (s *Spec) checkFaults(bad func(string, string, ...any) error) error {
	if s.Network.Latency > 0 || s.Network.Jitter > 0 {
		if _, err := nemesis.Build(nemesis.Spec{Kind: "latency", Latency: s.Network.Latency, Jitter: s.Network.Jitter}); err != nil {
			var fe *nemesis.FieldError
			if errors.As(err, &fe) {
				return bad("network."+fe.Field, "%s", fe.Msg)
			}
			return bad("network", "%v", err)
		}
	}
	for i, f := range s.Faults {
		if err := s.checkFault(fmt.Sprintf("faults.%d", i), f, true, bad); err != nil {
			return err
		}
	}
	gates := map[string]bool{}
	for _, fp := range s.Failpoints {
		if fp.Open != "" {
			gates[fp.Open] = true
		}
	}
	for i, fp := range s.Failpoints {
		if err := s.checkFailpoint(fmt.Sprintf("failpoints.%d", i), fp, gates, bad); err != nil {
			return err
		}
	}
	if s.Explore != nil {
		if err := s.Explore.validate(func(f string) string { return "explore." + f }, bad); err != nil {
			return err
		}
		for i, p := range s.Explore.Points {
			if msg := s.pointMsg(p, true); msg != "" {
				return bad(fmt.Sprintf("explore.points.%d", i), "%s", msg)
			}
		}
	}
	return nil
}

// fieldValue reads a top-level field by its YAML key.
func (s *Spec) fieldValue(key string) any {
	v := reflect.ValueOf(s).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name == key {
			return v.Field(i).Interface()
		}
	}
	return nil
}

// lockZeroFields are the lock options whose zero value means "the
// algorithm's default": written as zero, they are refused.
var lockZeroFields = []string{"ttl", "retry_count", "retry_delay", "wait_timeout", "nodes", "node_timeout"}

func checkLockZeros(doc *yamlDoc, prefix string, o lockimpl.Options, bad func(string, string, ...any) error) error {
	v := reflect.ValueOf(o)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		for _, z := range lockZeroFields {
			if key == z && doc.has(prefix+"."+key) && v.Field(i).IsZero() {
				return bad(prefix+"."+key, "must be > 0 (omit the field for the algorithm's default)")
			}
		}
	}
	return nil
}

// optionNegatives refuses negative lock options where they are written.
func optionNegatives(prefix string, o lockimpl.Options, bad func(string, string, ...any) error) error {
	var base lockimpl.Info
	if err := base.CheckOptions(lockimpl.Options{TTL: o.TTL, RetryCount: o.RetryCount, RetryDelay: o.RetryDelay, WaitTimeout: o.WaitTimeout, Nodes: o.Nodes, NodeTimeout: o.NodeTimeout}, 0); err != nil {
		var oe *lockimpl.OptionError
		if errors.As(err, &oe) {
			return bad(prefix+"."+oe.Option, "%s", oe.Msg)
		}
		return bad(prefix, "%v", err)
	}
	return nil
}

// checkFault validates one fault: its kind, the fields the kind reads (no
// others), its values, its timing against the run and the limits, and its
// client and host targets against the spec's clients. Node targets depend
// on each implementation's topology: CheckImpl checks them.
func (s *Spec) checkFault(at string, f nemesis.Spec, timeline bool, bad func(string, string, ...any) error) error {
	if f.Kind == "" {
		return bad(at+".kind", "missing (known: %s)", strings.Join(nemesis.Kinds(), ", "))
	}
	uses, ok := nemesis.KindUses(f.Kind)
	if !ok {
		return bad(at+".kind", "%s", enumMsg(f.Kind, nemesis.Kinds()...))
	}
	allowed := append(append([]string(nil), nemesis.TimingFields...), uses.Fields...)
	for _, key := range yamlKeys(reflect.TypeOf(f)) {
		if s.doc.has(at+"."+key) && !contains(allowed, key) {
			return bad(at+"."+key, "%s does not use %s (it reads %s)", f.Kind, key, strings.Join(uses.Fields, ", "))
		}
	}
	if _, err := nemesis.Build(f); err != nil {
		var fe *nemesis.FieldError
		if errors.As(err, &fe) {
			return bad(at+"."+fe.Field, "%s", fe.Msg)
		}
		return bad(at, "%v", err)
	}
	if timeline {
		if f.At >= s.Duration {
			return bad(at+".at", "%v is not before the end of the run (duration: %v): the fault would never start", f.At, s.Duration)
		}
		if f.Every > 0 && f.Every < s.limits.MinEvery {
			return bad(at+".every", "%v is below the limit of %v (raise it with --min-every)", f.Every, s.limits.MinEvery)
		}
	}
	for i, c := range f.Clients {
		if c < 0 || c >= s.Clients {
			return bad(fmt.Sprintf("%s.clients.%d", at, i), "no client %d (clients: %d, numbered from 0)", c, s.Clients)
		}
	}
	for i, h := range f.Hosts {
		if msg := s.hostMsg(h, -1); msg != "" {
			return bad(fmt.Sprintf("%s.hosts.%d", at, i), "%s", msg)
		}
	}
	for i, n := range f.Nodes {
		if msg, ok := s.clusterTargetMsg(n); ok || s.Cluster != nil {
			if msg == "" && !ok {
				msg = fmt.Sprintf("%q: want a cluster node n1..n%d or r1..r%d", n, s.Cluster.Masters, s.Cluster.Masters)
			}
			if msg != "" {
				return bad(fmt.Sprintf("%s.nodes.%d", at, i), "%s", msg)
			}
			continue
		}
		if msg := s.sentinelTargetMsg(n, 'r', 's'); msg != "" {
			return bad(fmt.Sprintf("%s.nodes.%d", at, i), "%s", msg)
		} else if (n[0] == 'r' || n[0] == 's') && s.Sentinel != nil {
			continue
		}
		if _, err := nodeNumber(n); err != nil {
			return bad(fmt.Sprintf("%s.nodes.%d", at, i), "%v", err)
		}
	}
	if f.Kind == "failover" && s.Cluster != nil {
		return bad(at+".kind", "failover is the harness playing Sentinel; in a cluster use kill (the cluster fails over by itself) or cluster-failover")
	}
	if strings.HasPrefix(f.Kind, "cluster-") && s.Cluster == nil {
		return bad(at+".kind", "%s acts on a Redis Cluster: set cluster: {masters: 3}", f.Kind)
	}
	if f.Kind == "cluster-failover" && s.Cluster.ReplicasPer() == 0 {
		return bad(at+".kind", "cluster-failover promotes a replica: cluster.replicas is 0")
	}
	if f.Kind == "kill-synced" && s.Cluster != nil && s.Cluster.ReplicasPer() == 1 {
		return nil
	}
	if f.Kind == "failover" && s.Replicas == 0 {
		return bad(at+".kind", "failover promotes a replica: set replicas: 1")
	}
	if f.Kind == "kill-synced" && s.Replicas == 0 {
		return bad(at+".kind", "kill-synced waits for the node's replica: set replicas: 1")
	}
	return nil
}

// hostMsg checks a host name: h1..hN for client hosts, r1..rM for the
// replication links when the spec has replicas (nodes -1: not known yet).
func (s *Spec) hostMsg(h string, nodes int) string {
	if msg, ok := s.clusterTargetMsg(h); ok {
		return msg
	}
	if msg := s.sentinelTargetMsg(h, 's', 'n'); msg != "" || (s.Sentinel != nil && len(h) > 1 && (h[0] == 's' || h[0] == 'n')) {
		return msg
	}
	if len(h) < 2 || (h[0] != 'h' && h[0] != 'r') {
		return fmt.Sprintf("%q: want a client host h1..h%d%s", h, s.hostCount(), s.replicaHint())
	}
	k, err := strconv.Atoi(h[1:])
	if err != nil || k < 1 {
		return fmt.Sprintf("%q: want a client host h1..h%d%s", h, s.hostCount(), s.replicaHint())
	}
	if h[0] == 'h' && k > s.hostCount() {
		return fmt.Sprintf("no host %s (hosts: %d)", h, s.hostCount())
	}
	if h[0] == 'r' {
		if s.Replicas == 0 {
			return fmt.Sprintf("no replication link %s: the scenario has no replicas", h)
		}
		if nodes >= 0 && k > nodes {
			return fmt.Sprintf("no replication link %s (%d nodes)", h, nodes)
		}
	}
	return ""
}

// sentinelTargetMsg checks, in the Sentinel topology, a target that names
// one of its extra processes: Sentinels s1..sK (as hosts and as servers),
// replicas r1.. as servers, masters n1.. as hosts (a demoted master
// replicates). "" when t is fine or not of those kinds.
func (s *Spec) sentinelTargetMsg(t string, kinds ...byte) string {
	if s.Sentinel == nil || len(t) < 2 {
		return ""
	}
	for _, k := range kinds {
		if t[0] != k {
			continue
		}
		n, err := strconv.Atoi(t[1:])
		if err != nil || n < 1 {
			return fmt.Sprintf("%q: want %c1, %c2, ...", t, k, k)
		}
		if k == 's' && n > s.Sentinel.Sentinels {
			return fmt.Sprintf("no Sentinel %s (sentinels: %d)", t, s.Sentinel.Sentinels)
		}
	}
	return ""
}

func (s *Spec) replicaHint() string {
	if s.Replicas > 0 {
		return " or a replication link r1.."
	}
	return ""
}

// nodeNumber parses n1, n2, ...
func nodeNumber(n string) (int, error) {
	if len(n) < 2 || n[0] != 'n' {
		return 0, fmt.Errorf("%q: want a node n1, n2, ...", n)
	}
	k, err := strconv.Atoi(n[1:])
	if err != nil || k < 1 {
		return 0, fmt.Errorf("%q: want a node n1, n2, ...", n)
	}
	return k, nil
}

// checkFailpoint validates one failpoint: its point is one that exists,
// its clients exist, its action's values make sense.
func (s *Spec) checkFailpoint(at string, fp FailpointSpec, gates map[string]bool, bad func(string, string, ...any) error) error {
	if fp.Point == "" {
		return bad(at+".point", "missing: which step (impl/step, %s, or cmd/NODE/COMMAND/before|after)", strings.Join(RunnerPoints, ", "))
	}
	if msg := s.pointMsg(fp.Point, true); msg != "" {
		return bad(at+".point", "%s", msg)
	}
	if fp.Client < -1 || fp.Client >= s.Clients {
		return bad(at+".client", "no client %d (clients: %d, numbered from 0; -1 for every client)", fp.Client, s.Clients)
	}
	for _, n := range []struct {
		f string
		v int
	}{{"skip", fp.Skip}, {"times", fp.Times}, {"nth", fp.Nth}, {"wait_count", fp.WaitCount}} {
		if n.v < 0 {
			return bad(at+"."+n.f, "must not be negative, got %d", n.v)
		}
	}
	if fp.Prob < 0 || fp.Prob > 1 {
		return bad(at+".prob", "want a probability in [0, 1], got %v", fp.Prob)
	}
	if fp.Sleep < 0 {
		return bad(at+".sleep", "must not be negative, got %v", fp.Sleep)
	}
	if fp.WaitFor != "" {
		if msg := s.pointMsg(fp.WaitFor, false); msg != "" {
			return bad(at+".wait_for", "%s", msg)
		}
		if fp.WaitClient < 0 || fp.WaitClient >= s.Clients {
			return bad(at+".wait_client", "no client %d (clients: %d, numbered from 0)", fp.WaitClient, s.Clients)
		}
	} else {
		for _, f := range []string{"wait_client", "wait_count"} {
			if s.doc.has(at + "." + f) {
				return bad(at+"."+f, "without wait_for: nothing to wait for")
			}
		}
	}
	if fp.Gate != "" && !gates[fp.Gate] {
		return bad(at+".gate", "no failpoint opens gate %q (open: %s): the client would wait until the run ends", fp.Gate, fp.Gate)
	}
	if fp.LoseReply && !(CmdPoint(fp.Point) && strings.HasSuffix(fp.Point, "/after")) {
		return bad(at+".lose_reply", "a reply can be lost only at a command's after point (cmd/NODE/COMMAND/after), not at %q", fp.Point)
	}
	if fp.Fault != nil {
		if err := s.checkFault(at+".fault", *fp.Fault, false, bad); err != nil {
			return err
		}
	}
	return nil
}

// knownPoints are every declared failpoint of every implementation (those
// registered and those given in code: LoadFor) and the runner's own. A
// point of an implementation other than the one running is allowed (and
// inert): specs force several algorithms side by side.
func (s *Spec) knownPoints() []string {
	out := append([]string(nil), RunnerPoints...)
	for _, info := range lockimpl.All() {
		out = append(out, info.Points...)
	}
	for _, name := range sortedKeys(s.given) {
		out = append(out, s.given[name].Points...)
	}
	return out
}

// pointMsg says what is wrong with a failpoint name ("" when nothing).
// Patterns ('*' for a segment) are allowed where patterns apply and must
// match some point; command points must have their four segments.
func (s *Spec) pointMsg(p string, patterns bool) string {
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Sprintf("bad pattern %q: %v", p, err)
	}
	isPattern := strings.ContainsAny(p, "*?[")
	if isPattern && !patterns {
		return fmt.Sprintf("%q: a pattern cannot be waited for; name one point", p)
	}
	if CmdPoint(p) {
		parts := strings.Split(p, "/")
		if len(parts) != 4 {
			return fmt.Sprintf("%q: want cmd/NODE/COMMAND/before or cmd/NODE/COMMAND/after", p)
		}
		if parts[1] != "*" {
			if _, err := nodeNumber(parts[1]); err != nil && !isPattern {
				return fmt.Sprintf("%q: node %v", p, err)
			}
		}
		switch parts[3] {
		case "before", "after", "*":
		default:
			if !isPattern {
				return fmt.Sprintf("%q: %s", p, enumMsg(parts[3], "before", "after"))
			}
		}
		if parts[2] != strings.ToUpper(parts[2]) && !strings.Contains(parts[2], ":") {
			return fmt.Sprintf("%q: commands are named in upper case (%s)", p, strings.ToUpper(parts[2]))
		}
		return ""
	}
	known := s.knownPoints()
	if isPattern {
		for _, k := range known {
			if ok, _ := path.Match(p, k); ok {
				return ""
			}
		}
		return fmt.Sprintf("pattern %q matches no known failpoint", p)
	}
	if contains(known, p) {
		return ""
	}
	msg := fmt.Sprintf("unknown failpoint %q", p)
	if n := nearest(p, known); n != "" {
		return msg + fmt.Sprintf(" (did you mean %s?)", n)
	}
	if impl, _, ok := strings.Cut(p, "/"); ok {
		if info, err := s.lookup(impl); err == nil {
			return msg + fmt.Sprintf(" (%s has %s)", impl, strings.Join(info.Points, ", "))
		}
	}
	return msg + " (lockstorm list shows every implementation's points)"
}

// matrix is every implementation or variant the spec may run: its impls,
// the names it expects verdicts for, its variants.
func (s *Spec) matrix() []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range s.Impls {
		add(n)
	}
	for _, n := range sortedKeys(s.Expected) {
		add(n)
	}
	for _, n := range sortedKeys(s.Variants) {
		add(n)
	}
	return out
}

// Nodes is how many masters the spec runs name on: the spec's nodes, or
// what the implementation needs with its options.
func (s *Spec) NodesFor(name string) (int, error) {
	info, opts, err := s.Resolve(name)
	if err != nil {
		return 0, err
	}
	if s.Nodes > 0 {
		return s.Nodes, nil
	}
	return info.NodesUnder(opts), nil
}

// CheckImpl validates what depends on the implementation that runs: its
// options (the implementation's own checks) against the topology it gets,
// the node targets of faults and command points, and the machine's limits
// for that topology. Load checks every implementation the spec names; the
// CLI calls it for one given with --impl.
func (s *Spec) CheckImpl(name string) error {
	doc := s.doc
	if doc == nil {
		doc = &yamlDoc{file: s.File}
	}
	bad := func(field, msg string, args ...any) error {
		return &SpecError{File: s.File, Line: doc.lineOf(field), Field: field, Msg: fmt.Sprintf(msg, args...)}
	}
	info, opts, err := s.Resolve(name)
	if err != nil {
		return err
	}
	nodes, _ := s.NodesFor(name)
	where := func(opt string) string {
		if v, ok := s.Variants[name]; ok && doc.has("variants."+name+"."+opt) {
			_ = v
			return "variants." + name + "." + opt
		}
		if doc.has("lock." + opt) {
			return "lock." + opt
		}
		if opt == "nodes" && doc.has("nodes") {
			return "nodes"
		}
		return "impls"
	}
	if err := info.CheckOptions(opts, nodes); err != nil {
		var oe *lockimpl.OptionError
		if errors.As(err, &oe) {
			return bad(where(oe.Option), "%s: %s", name, oe.Msg)
		}
		return bad("lock", "%s: %v", name, err)
	}
	if s.Cluster != nil {
		if nodes != 1 {
			return bad(where("nodes"), "%s: needs %d masters of its own; on a cluster a lock gets one cluster client (single-instance locks only)", name, nodes)
		}
		// Its targets are the cluster's nodes, and each client may
		// connect to every master and replica.
		nodes = s.Cluster.Masters * (1 + s.Cluster.ReplicasPer())
	}
	lim := s.limits
	if lim.MaxNodes == 0 {
		lim = DefaultLimits()
	}
	if nodes > lim.MaxNodes {
		return bad(where("nodes"), "%s would run on %d nodes, above the limit of %d redis-server processes (raise it with --max-nodes)", name, nodes, lim.MaxNodes)
	}
	if need, have := s.fdsNeeded(nodes), lim.openFiles(); need > have {
		return bad("clients", "%d clients on %d hosts × %d nodes need about %d open files; this process may open %d (RLIMIT_NOFILE; raise it with ulimit -n, or lower clients)", s.Clients, s.hostCount(), nodes, need, have)
	}
	if conns := s.Clients * connsPerNode; conns > redisMaxClients {
		return bad("clients", "%d clients open up to %d connections to each node; redis-server accepts %d (maxclients)", s.Clients, conns, redisMaxClients)
	}
	return s.checkTargetsOn(name, nodes, bad)
}

// checkTargetsOn refuses a fault, failpoint or command point that names a
// node or host the implementation does not have when it runs on nodes nodes.
func (s *Spec) checkTargetsOn(name string, nodes int, bad func(string, string, ...any) error) error {
	noNode := func(field, n string) error {
		return bad(field, "no node %s: %s runs on %d node%s (set nodes: to give every implementation the same topology)", n, name, nodes, plural(nodes))
	}
	checkFault := func(at string, f nemesis.Spec) error {
		for i, n := range f.Nodes {
			if k, err := nodeNumber(n); err == nil && k > nodes {
				return noNode(fmt.Sprintf("%s.nodes.%d", at, i), n)
			}
		}
		for i, h := range f.Hosts {
			if msg := s.hostMsg(h, nodes); msg != "" {
				return bad(fmt.Sprintf("%s.hosts.%d", at, i), "%s", msg)
			}
		}
		return nil
	}
	for i, f := range s.Faults {
		if err := checkFault(fmt.Sprintf("faults.%d", i), f); err != nil {
			return err
		}
	}
	for i, fp := range s.Failpoints {
		at := fmt.Sprintf("failpoints.%d", i)
		if fp.Fault != nil {
			if err := checkFault(at+".fault", *fp.Fault); err != nil {
				return err
			}
		}
		for _, pf := range []struct{ f, p string }{{"point", fp.Point}, {"wait_for", fp.WaitFor}} {
			if !CmdPoint(pf.p) {
				continue
			}
			if parts := strings.Split(pf.p, "/"); len(parts) == 4 {
				if k, err := nodeNumber(parts[1]); err == nil && k > nodes {
					return noNode(at+"."+pf.f, parts[1])
				}
			}
		}
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// enumMsg is the message for a value outside its set, with the nearest one.
func enumMsg(got string, want ...string) string {
	msg := fmt.Sprintf("%q: want %s", got, orList(want))
	if n := nearest(got, want); n != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", n)
	}
	return msg
}

func implMsg(name string) string {
	msg := fmt.Sprintf("unknown implementation %q (known: %s)", name, strings.Join(lockimpl.Names(), ", "))
	if n := nearest(name, lockimpl.Names()); n != "" {
		msg = fmt.Sprintf("unknown implementation %q (did you mean %s?)", name, n)
	}
	return msg
}

func orList(w []string) string {
	switch len(w) {
	case 0:
		return "nothing"
	case 1:
		return w[0]
	}
	return strings.Join(w[:len(w)-1], ", ") + " or " + w[len(w)-1]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// yamlKeys lists a struct type's YAML keys.
func yamlKeys(t reflect.Type) []string {
	var out []string
	for _, f := range yamlFields(t) {
		out = append(out, f.name)
	}
	return out
}

func sortedKeys[K interface{ ~int | ~string }, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// checkProgram checks an exec variant's command and, when the limits allow
// programs to start, asks the program hello (bounded by lockimpl/exec's
// start-up timeout): a client program that is missing or does not speak
// the protocol is bad input, found before anything starts. What it
// declares is kept for Resolve; a program not allowed to start is known by
// its command line only.
func (s *Spec) checkProgram(name string, argv []string, bad func(string, string, ...any) error) error {
	field := "variants." + name + ".exec"
	if len(argv) == 0 || argv[0] == "" {
		return bad(field, "empty: give the program and its arguments, e.g. [python3, my_lock.py]")
	}
	prog := argv[0]
	if _, err := osexec.LookPath(prog); err != nil {
		if !strings.Contains(prog, "/") {
			return bad(field, "program %q not found on PATH", prog)
		}
		st, serr := os.Stat(prog)
		switch {
		case serr != nil:
			return bad(field, "program %q does not exist (a relative path is relative to the directory lockstorm runs in)", prog)
		case st.IsDir():
			return bad(field, "program %q is a directory", prog)
		default:
			return bad(field, "program %q is not executable (chmod +x it, or name its interpreter first: [python3, %s])", prog, prog)
		}
	}
	if s.programs == nil {
		s.programs = map[string]lockimpl.Info{}
	}
	if !s.limits.AllowExec {
		s.programs[name] = lockimpl.Unasked(name, argv)
		return nil
	}
	info, err := lockimpl.Program(context.Background(), argv)
	if err != nil {
		return bad(field, "%v", err)
	}
	s.programs[name] = info
	return nil
}

// NeedsConsent is nil when running name starts no program the user has not
// allowed; else, for an exec variant of a spec loaded without
// Limits.AllowExec, the error at its exec line that names the program and
// the flag that allows it.
func (s *Spec) NeedsConsent(name string) error {
	v, ok := s.Variants[name]
	if !ok || len(v.Exec) == 0 || s.doc == nil || s.limits.AllowExec {
		return nil
	}
	field := "variants." + name + ".exec"
	return &SpecError{File: s.File, Line: s.doc.lineOf(field), Field: field,
		Msg: fmt.Sprintf("runs the program %q, started only with your consent: add --allow-exec if you trust this spec (a spec is data; --dry-run shows what a run starts)", strings.Join(v.Exec, " "))}
}

// Package spec is the scenario spec language: the Spec types and their YAML
// keys, loading (embedded specs in specs/*.yaml, or a file) and validation
// with file:line: field errors, suggestions, derive rules on claims,
// expectations, baselines and the default permissions of findings. It runs
// nothing: package scenarios compiles a spec into a plan and runs it.
package spec

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

//go:embed specs/*.yaml
var specFS embed.FS

// Spec is a scenario: data, not code. Its fields are the YAML keys.
type Spec struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Mode is scheduled (failpoints and fault timing force the documented
	// interleaving) or random (contention and faults at seeded random times).
	Mode string `yaml:"mode"`
	// Gated verdicts fail `make gate` when they change; default true for
	// scheduled mode, false for random.
	Gated *bool `yaml:"gated"`
	// Seed drives every random choice; the CLI's --seed overrides it.
	Seed uint64 `yaml:"seed"`

	// Nodes is how many independent masters (0: what the implementation needs).
	Nodes int `yaml:"nodes"`
	// Replicas gives each master that many replicas (0 or 1), replicating
	// through their own links (hosts r1, r2, ...) so faults can cut them
	// (redis-server backend only).
	Replicas int `yaml:"replicas"`
	// Sentinel, when set, runs real Sentinel processes beside the masters
	// and their replicas; clients find the master through them (needs
	// replicas: 1 and the redis-server backend).
	Sentinel *SentinelSpec `yaml:"sentinel"`
	// MinReplicas sets min-replicas-to-write / min-replicas-max-lag on every
	// data server (a promoted replica keeps it), as the Sentinel and
	// replication documents advise against split-brain writes.
	MinReplicas *MinReplicas `yaml:"min_replicas"`
	// Cluster, when set, runs a Redis Cluster (masters n1.., replicas
	// r1..) and gives each client one cluster client (redis-server
	// backend; single-instance locks: the lock sees one node).
	Cluster *ClusterSpec `yaml:"cluster"`
	// Clients is how many lock clients run.
	Clients int `yaml:"clients"`
	// Hosts groups clients into hosts (0: one per client up to 64, then shared).
	Hosts int `yaml:"hosts"`
	// Keys is how many lock keys the clients contend on.
	Keys int `yaml:"keys"`
	// Duration bounds the run.
	Duration time.Duration `yaml:"duration"`
	// Ops, when > 0, stops the run after that many acquire attempts.
	Ops int `yaml:"ops"`
	// ClientTimeout is each Redis command's read/write timeout.
	ClientTimeout time.Duration `yaml:"client_timeout"`
	// Think is the pause between a client's cycles.
	Think time.Duration `yaml:"think"`

	Lock     lockimpl.Options `yaml:"lock"`
	Workload Workload         `yaml:"workload"`
	// Network is a steady condition on every link for the whole run.
	Network Network `yaml:"network"`
	// Faults is the nemesis timeline.
	Faults []nemesis.Spec `yaml:"faults"`
	// Failpoints attach actions to implementation steps for given clients.
	Failpoints []FailpointSpec `yaml:"failpoints"`
	// Explore injects faults at points nobody named: seeded random hits of
	// the points each lock reaches (its declared failpoints and its
	// commands' points).
	Explore *Explore `yaml:"explore"`
	// Observe records the servers' key events (set, del, expired, ...) as
	// ground truth for the false-success check (default true; the embedded
	// backend cannot and runs without).
	Observe *bool `yaml:"observe"`

	// ClockOffsets sets client clocks apart from the start (client → offset).
	ClockOffsets map[int]time.Duration `yaml:"clock_offsets"`
	// ClockSkew sets every other client's clock behind by a random amount
	// in [0, ClockSkew), drawn from the seed (clients whose ClockOffsets
	// are given keep those).
	ClockSkew time.Duration `yaml:"clock_skew"`
	// Variants name implementations with their own lock options.
	Variants map[string]Variant `yaml:"variants"`
	// Impls are the implementations (or variants) the scenario runs by default.
	Impls []string `yaml:"impls"`
	// Expected is the verdict per implementation, derived from the algorithm
	// (the reason sits beside it as a YAML comment).
	Expected map[string]string `yaml:"expected"`
	// Derive are the rules that give any other lock an expectation from its
	// claims (lockimpl.Claims), each with the reason its fault leads there.
	Derive []Rule `yaml:"derive"`
	// DeadlockBound overrides the checker's liveness bound.
	DeadlockBound time.Duration `yaml:"deadlock_bound"`
	// WaitBound, when set, judges needless waiting: an acquire pending
	// for longer than this while its key stood free (absent on the nodes
	// a grant needs, by the servers' key events, and held by nobody) is a
	// needless-wait finding. It is the scenario's promise of how soon a
	// waiter takes a freed lock: a retry delay and a round trip, or a
	// wake-up.
	WaitBound time.Duration `yaml:"wait_bound"`
	// LockstepWithin and LockstepRounds, when both set, judge lockstep
	// retries on a quorum lock: LockstepRounds rounds in a row of tries by
	// two or more contenders starting within LockstepWithin of each other,
	// splitting the nodes with no majority, while nobody holds the key,
	// are a lockstep-retries finding (the Redlock page's random retry
	// delay exists to break them).
	LockstepWithin time.Duration `yaml:"lockstep_within"`
	LockstepRounds int           `yaml:"lockstep_rounds"`

	// File is where the spec came from (embedded specs: specs/NAME.yaml).
	File string `yaml:"-"`

	doc         *yamlDoc                 // the parsed file, for the line of any field
	programs    map[string]lockimpl.Info // exec variants, as their programs declared at load
	given       map[string]lockimpl.Info // locks given in code (LoadFor), by name, ahead of the registry
	limits      Limits                   // what it was validated against
	expectedWhy map[string]string        // the comment above each expected entry
}

// Workload is what each client does inside the lock.
type Workload struct {
	// CSMin and CSMax bound the critical section's hold time (uniform).
	CSMin time.Duration `yaml:"cs_min"`
	CSMax time.Duration `yaml:"cs_max"`
	// Resource is counter (seed 001's read N, write N+1) or fenced (a
	// counter that refuses writes whose fencing token is not above the last
	// accepted one). Default: fenced for implementations that issue tokens.
	Resource string `yaml:"resource"`
	// Cycles, when > 0, stops each client after that many acquisitions.
	Cycles int `yaml:"cycles"`
	// Client is careless (default: the critical section runs to its end
	// whatever the lease says, as the documents' clients do) or careful:
	// before the read and before the write it checks its lease (validity
	// elapsed on its own clock, or the lock reported lost) and abandons the
	// critical section when the lease is over, as a client honouring
	// redsync's Until() or Redlock's validity would.
	Client string `yaml:"client"`
	// ExtendEvery, when > 0, makes a holder extend its lease to lock.ttl
	// after every ExtendEvery of its critical section (on a lock that can:
	// lockimpl.Extender); each extend is recorded and judged.
	ExtendEvery time.Duration `yaml:"extend_every"`
	// ReleaseAgain makes a client whose release ended with an unknown
	// outcome (an error: its reply lost, its command maybe never sent)
	// release the same lease once more after its back-off, as a careful
	// user resolves an unknown outcome rather than forget it (Jepsen's
	// indeterminate operations). Each release is recorded and judged.
	ReleaseAgain bool `yaml:"release_again"`
}

// SentinelSpec is the Sentinel set of a scenario: real redis-server
// --sentinel processes (s1, s2, ...) monitoring every master, each reaching
// the servers through links of its own (hosts s1, s2, ... in fault specs).
type SentinelSpec struct {
	// Sentinels is how many run (default 3).
	Sentinels int `yaml:"sentinels"`
	// Quorum is how many must agree a master is down (default a majority).
	Quorum int `yaml:"quorum"`
	// DownAfter is down-after-milliseconds (default 500ms).
	DownAfter time.Duration `yaml:"down_after"`
	// FailoverTimeout is failover-timeout (default 2s).
	FailoverTimeout time.Duration `yaml:"failover_timeout"`
}

// ClusterSpec is a Redis Cluster: real redis-server processes in cluster
// mode, the slots split evenly over the masters n1..nM, replica r_i of
// n_i, every node reaching every other through links of its own (data and
// cluster bus: a fault naming hosts [n2] and nodes [n1] cuts n2 from n1 on
// both) and every client host reaching every node through its own links.
type ClusterSpec struct {
	// Masters is how many masters serve the slots (default 3; at least 3,
	// since a failover needs the votes of a majority of masters).
	Masters int `yaml:"masters"`
	// Replicas per master: 0 or 1 (default 1).
	Replicas *int `yaml:"replicas"`
	// NodeTimeout is cluster-node-timeout (default 1s): how long a node may
	// be unreachable before it is flagged failing, and how long a master on
	// the minority side goes on accepting writes.
	NodeTimeout time.Duration `yaml:"node_timeout"`
}

// ReplicasPer is the replicas per master, its default applied.
func (c *ClusterSpec) ReplicasPer() int {
	if c.Replicas == nil {
		return 1
	}
	return *c.Replicas
}

// MinReplicas are Redis's min-replicas-to-write and min-replicas-max-lag: a
// master refuses writes (NOREPLICAS) unless ToWrite replicas acknowledged the
// replication stream within MaxLag (whole seconds: Redis counts in seconds).
type MinReplicas struct {
	ToWrite int           `yaml:"to_write"`
	MaxLag  time.Duration `yaml:"max_lag"`
}

// Workload clients.
const (
	Careless = "careless"
	Careful  = "careful"
)

// Network is a steady link condition.
type Network struct {
	Latency time.Duration `yaml:"latency"`
	Jitter  time.Duration `yaml:"jitter"`
}

// FailpointSpec attaches an action to a step of one client (client -1:
// every client). Points are an
// implementation's steps (impl/step) or the runner's own: cycle/before-acquire,
// cs/hold (inside the critical section, after the read) and
// cycle/before-release (the critical section is over; the release is next),
// or a command point (cmd/NODE/COMMAND/before or after: see cmdHook), for
// any lock. A '*' matches one segment (cmd/*/SET/after).
// A point of another implementation is inert, so one spec can force the
// documented interleaving of several algorithms side by side.
type FailpointSpec struct {
	Client          int    `yaml:"client"`
	Point           string `yaml:"point"`
	lockimpl.Action `yaml:",inline"`
	// Fault, when set, is injected when the client reaches the point (after
	// the action's other parts): a fault placed exactly in the interleaving,
	// e.g. a stop-the-world pause while the client holds the lock.
	Fault *nemesis.Spec `yaml:"fault"`
}

// Variant is an implementation run with its own lock options on top of the
// scenario's, so one matrix can set e.g. getset's two release variants or
// set-nx-px with and without its watchdog side by side.
//
// Exec, instead of Impl, puts a lock client program on trial (any language,
// speaking lockimpl/exec's line protocol; the same as run --exec): the
// program and its arguments, e.g. [python3, examples/clients/seed003_getset.py].
// The program is looked up on PATH unless it contains a slash; relative
// paths, in the program and its arguments alike, are relative to the
// directory lockstorm runs in (as on a shell command line), not to the spec
// file's. A spec is data: the program starts only when the spec is loaded
// with Limits.AllowExec (run --allow-exec). It is then asked hello when
// the spec loads, and its claims set the variant's derived expectations;
// without it the program is known by its command line only (NeedsConsent).
// Starting it needs package lockimpl/exec linked in (cmd/lockstorm does).
type Variant struct {
	Impl             string   `yaml:"impl"`
	Exec             []string `yaml:"exec"`
	lockimpl.Options `yaml:",inline"`
}

// IsGated says whether the scenario's verdicts are gated.
func (s *Spec) IsGated() bool {
	if s.Gated != nil {
		return *s.Gated
	}
	return s.Mode == "scheduled"
}

// SpecError is a bad spec: it names the file, line and field.
type SpecError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *SpecError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Names lists the embedded scenarios.
func Names() []string {
	ents, _ := fs.ReadDir(specFS, "specs")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// Load reads a scenario by embedded name or by file path, and validates it
// against the default limits.
func Load(nameOrPath string) (*Spec, error) { return LoadWith(nameOrPath, DefaultLimits()) }

// LoadWith is Load against the given limits.
func LoadWith(nameOrPath string, lim Limits) (*Spec, error) { return LoadFor(nameOrPath, lim) }

// LoadFor is LoadWith for a spec that may name locks given in code rather
// than registered (a user's lock on trial through locktest): under impls,
// expected and a variant's impl, each by its Info.Name, which takes
// precedence over a registered implementation of the same name. The spec's
// expectations for such a name apply to that lock (Config.Info), and its
// variants' options reach the lock's New.
func LoadFor(nameOrPath string, lim Limits, locks ...lockimpl.Info) (*Spec, error) {
	if strings.ContainsAny(nameOrPath, "/\\") || strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml") {
		b, err := os.ReadFile(nameOrPath)
		if err != nil {
			return nil, fmt.Errorf("scenario file: %w", err)
		}
		return ParseFor(nameOrPath, b, lim, locks...)
	}
	file := path.Join("specs", nameOrPath+".yaml")
	b, err := specFS.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("unknown scenario %q (known: %s; or give a path to a .yaml file)", nameOrPath, strings.Join(Names(), ", "))
	}
	return ParseFor(file, b, lim, locks...)
}

// Parse decodes and validates a spec against the default limits. Unknown
// fields, syntax errors and bad values come back as *SpecError with file,
// line and field.
func Parse(file string, b []byte) (*Spec, error) { return ParseWith(file, b, DefaultLimits()) }

// ParseWith is Parse against the given limits.
func ParseWith(file string, b []byte, lim Limits) (*Spec, error) { return ParseFor(file, b, lim) }

// ParseFor is ParseWith for a spec that may name the given locks (LoadFor).
func ParseFor(file string, b []byte, lim Limits, locks ...lockimpl.Info) (*Spec, error) {
	var s Spec
	doc, err := decodeSpec(file, b, &s)
	if err != nil {
		return nil, err
	}
	s.File = file
	for _, l := range locks {
		if err := l.Check(); err != nil {
			return nil, err
		}
		if s.given == nil {
			s.given = map[string]lockimpl.Info{}
		}
		s.given[l.Name] = l
	}
	s.expectedWhy = expectedComments(b)
	if err := s.validate(doc, lim); err != nil {
		return nil, err
	}
	return &s, nil
}

// Resolve maps an implementation or variant name to the registered
// implementation and the lock options to run it with.
func (s *Spec) Resolve(name string) (lockimpl.Info, lockimpl.Options, error) {
	if v, ok := s.Variants[name]; ok {
		if len(v.Exec) > 0 {
			info, err := s.program(name, v.Exec)
			return info, Overlay(s.Lock, v.Options), err
		}
		info, err := s.lookup(v.Impl)
		return info, Overlay(s.Lock, v.Options), err
	}
	info, err := s.lookup(name)
	return info, s.Lock, err
}

// lookup is the lock given in code under name (LoadFor), else the
// registered one.
func (s *Spec) lookup(name string) (lockimpl.Info, error) {
	if info, ok := s.given[name]; ok {
		return info, nil
	}
	return lockimpl.Lookup(name)
}

// Knows says whether the spec was loaded with the lock named name given in
// code (LoadFor), so that its impls, expected and variants may name it.
func (s *Spec) Knows(name string) bool {
	_, ok := s.given[name]
	return ok
}

// VariantsOf are the spec's variants that run the implementation impl, in
// name order.
func (s *Spec) VariantsOf(impl string) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(s.Variants)) {
		if s.Variants[n].Impl == impl {
			out = append(out, n)
		}
	}
	return out
}

// program is the exec variant name running argv: as its program declared
// it when the spec was loaded, or asked now for a spec built in code.
func (s *Spec) program(name string, argv []string) (lockimpl.Info, error) {
	if info, ok := s.programs[name]; ok {
		return info, nil
	}
	info, err := lockimpl.Program(context.Background(), argv)
	if err != nil {
		return lockimpl.Info{}, fmt.Errorf("variant %s: %w", name, err)
	}
	return info, nil
}

// Overlay returns base with every non-zero field of top on it.
func Overlay(base, top lockimpl.Options) lockimpl.Options {
	o := base
	if top.TTL != 0 {
		o.TTL = top.TTL
	}
	if top.RetryCount != 0 {
		o.RetryCount = top.RetryCount
	}
	if top.RetryDelay != 0 {
		o.RetryDelay = top.RetryDelay
	}
	if top.RandomDelay {
		o.RandomDelay = true
	}
	if top.WaitTimeout != 0 {
		o.WaitTimeout = top.WaitTimeout
	}
	if top.Watchdog {
		o.Watchdog = true
	}
	if top.Reentrant {
		o.Reentrant = true
	}
	if top.Nodes != 0 {
		o.Nodes = top.Nodes
	}
	if top.ReleaseVariant != "" {
		o.ReleaseVariant = top.ReleaseVariant
	}
	if top.NodeTimeout != 0 {
		o.NodeTimeout = top.NodeTimeout
	}
	if top.WaitReplicas != 0 {
		o.WaitReplicas = top.WaitReplicas
	}
	if top.ReplicaTimeout != 0 {
		o.ReplicaTimeout = top.ReplicaTimeout
	}
	if len(top.Extra) > 0 {
		o.Extra = make(map[string]string, len(base.Extra)+len(top.Extra))
		for k, v := range base.Extra {
			o.Extra[k] = v
		}
		for k, v := range top.Extra {
			o.Extra[k] = v
		}
	}
	return o
}

// Unsupported says why the spec cannot run on backend kind ("" when it can):
// replicas exist only on spawned redis-server processes.
func (s *Spec) Unsupported(kind string) string {
	if s.Cluster != nil && kind != "redis-server" {
		return "needs a Redis Cluster, which only the redis-server backend has"
	}
	if s.Sentinel != nil && kind != "redis-server" {
		return "needs Sentinel processes, which only the redis-server backend has"
	}
	if s.Replicas > 0 && kind != "redis-server" {
		return "needs replicas, which only the redis-server backend has"
	}
	// A run in virtual time (the sim backend, docs/sim.md) never
	// approximates what lives in real time or on a real server.
	if kind == "sim" && nemesis.UsesServerClock(s.AllFaults()) {
		return "a server clock fault: miniredis keeps TTLs as remaining durations, so the jump back at the heal does not lengthen them as a real server's absolute deadlines"
	}
	return ""
}

// UnsupportedLock says why backend kind cannot run this spec against
// impl (external: a client process given with --exec), or "": on sim, a
// client process runs in real time, outside the bubble of virtual time,
// and a lock that dials the nodes' addresses with a client of its own
// cannot reach a node that exists only in-process.
func (s *Spec) UnsupportedLock(kind, impl string, external bool) string {
	if kind != "sim" {
		return ""
	}
	if external {
		return "a client process runs in real time, outside the bubble of virtual time"
	}
	info, _, err := s.Resolve(impl)
	if err != nil {
		return ""
	}
	return SimUnsupportedLock(info)
}

// SimUnsupportedLock says why the sim backend cannot run lock, or "".
func SimUnsupportedLock(lock lockimpl.Info) string {
	if len(lock.Program) > 0 || lock.OwnConnections {
		return "the lock makes its own connections to the nodes' addresses; a sim node is reached only in-process"
	}
	return ""
}

// AllFaults is the timeline's faults plus those placed at failpoints.
func (s *Spec) AllFaults() []nemesis.Spec {
	out := append([]nemesis.Spec(nil), s.Faults...)
	for _, fp := range s.Failpoints {
		if fp.Fault != nil {
			out = append(out, *fp.Fault)
		}
	}
	return out
}

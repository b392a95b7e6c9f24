package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// Spec is one fault on a scenario's timeline, as written in the YAML.
// Kind-specific parameters sit beside the timing and targets; each kind
// validates the ones it uses.
type Spec struct {
	// At is when the fault starts, from the start of the run.
	At time.Duration `yaml:"at" json:"at"`
	// Within, when set, moves each start to a random instant in
	// [At, At+Within) drawn from the run's seed: faults at random times that
	// a seed replays.
	Within time.Duration `yaml:"within" json:"within,omitempty"`
	// For is how long it lasts; 0 means until the end of the run.
	For time.Duration `yaml:"for" json:"for,omitempty"`
	// Every repeats the fault with this period (0: once).
	Every time.Duration `yaml:"every" json:"every,omitempty"`
	// Kind names a registered fault.
	Kind string `yaml:"kind" json:"kind"`

	// Targets.
	Hosts   []string `yaml:"hosts" json:"hosts,omitempty"`     // client hosts (h1..)
	Clients []int    `yaml:"clients" json:"clients,omitempty"` // client numbers (0-based)
	Nodes   []string `yaml:"nodes" json:"nodes,omitempty"`     // n1..
	// Pick chooses random targets from the run's seed: minority or majority
	// of the nodes, one random client, or one random client among those
	// that hold a lease at the injection (holder; any client when none
	// does): a fault meant for holders, such as a pause past the TTL, then
	// meets one whenever there is one, not one time in as many clients.
	Pick string `yaml:"pick" json:"pick,omitempty"`

	// Parameters: the YAML's record of them, read by nothing but paramsAs,
	// which copies the keys a kind's parameter struct names into that
	// struct (Register panics on a parameter key missing here). A kind,
	// and every caller, reads its parameters through the struct alone
	// (Build, New, ParamText); a key the kind's struct does not name is
	// refused at load.
	Latency   time.Duration `yaml:"latency" json:"latency,omitempty"`
	Jitter    time.Duration `yaml:"jitter" json:"jitter,omitempty"`
	Stream    string        `yaml:"stream" json:"stream,omitempty"` // upstream, downstream or both (default)
	Rate      int64         `yaml:"rate" json:"rate,omitempty"`     // bandwidth KB/s
	Offset    time.Duration `yaml:"offset" json:"offset,omitempty"` // clock offset or jump
	Drift     float64       `yaml:"drift" json:"drift,omitempty"`   // clock rate error
	Direction string        `yaml:"direction" json:"direction,omitempty"`
	// Mode is cluster-failover's CLUSTER FAILOVER option: default, force
	// or takeover.
	Mode string `yaml:"mode" json:"mode,omitempty"`
	// Key is the lock key (its number: 0 is the first) whose slot a
	// cluster fault acts on.
	Key int `yaml:"key" json:"key,omitempty"`
}

// Env is what faults act on. The runner fills it.
type Env struct {
	Net     *Network
	Cluster cluster.Cluster
	// ClientHost maps a client to its host name.
	ClientHost func(client int) string
	// Clients is how many clients the run has.
	Clients int
	// Control reaches the clients for client-level faults (pause, crash, clock).
	Control ClientControl
	// Rand is seeded by the run so a seed replays the same choices.
	Rand *rand.Rand
	// Replicas maps a master node's name to its replica, when the scenario
	// has replicas (redis-server backend).
	Replicas map[string]*cluster.Process
	// RedisCluster is the Redis Cluster, in the cluster topology.
	RedisCluster *cluster.RedisCluster
	// Keys are the run's lock keys, in order.
	Keys []string
}

// ClientControl is the runner's handle on its clients.
type ClientControl interface {
	// Holders are the clients holding a lease now (for pick: holder).
	Holders() []int
	Pause(client int)
	Resume(client int)
	Crash(client int)
	ClockJump(client int, d time.Duration)
	ClockDrift(client int, rate float64)
}

// Heal undoes a fault. It returns an error when the fault could not be
// undone (a toxic not removed, a server not restarted): the run then went on
// under a fault it believes healed, and the history says so.
type Heal func() error

// Fault is one fault kind, built from a Spec.
type Fault interface {
	// Inject starts the fault on env and returns how to heal it and what it
	// concretely applied to. Target selection that depends on randomness
	// happens here, from env.Rand, through the one resolution every kind
	// shares (Spec.resolve). A target the run does not have selects nothing
	// (never another target): if nothing is left, Inject returns zero
	// Targets and no error, and the caller records that the fault applied to
	// nothing. On error, whatever was applied is undone first.
	Inject(ctx context.Context, env *Env) (Heal, Targets, error)
}

// Uses is what a fault kind reads from its Spec beside the timing (at,
// within, for, every, kind): its target fields and parameter keys, by YAML
// key, and the pick values it understands. A spec that writes another
// field for the kind is refused at load: a direction on latency or an
// offset on a partition would otherwise be silently ignored. Register
// takes the targets; KindUses adds the keys of the kind's parameter struct.
type Uses struct {
	Fields []string
	Picks  []string
	// Quorum: the kind acts among several masters (the votes of a quorum
	// lock) and has nothing to act on in a run on one master, which leaves
	// it out (Applies) instead of recording a fault that applied to nothing.
	Quorum bool
}

// Targets shared by kind families.
var (
	// linkTargets select links: from hosts (or the hosts of clients) to nodes.
	linkTargets = Uses{Fields: []string{"hosts", "clients", "nodes", "pick"}, Picks: []string{"client", "holder", "minority", "majority"}}
	// clientTargets select clients.
	clientTargets = Uses{Fields: []string{"hosts", "clients", "pick"}, Picks: []string{"client", "holder"}}
	// nodeTargets select server nodes.
	nodeTargets = Uses{Fields: []string{"nodes", "pick"}, Picks: []string{"minority", "majority"}}
	// nodesOnly name their nodes, without picks.
	nodesOnly = Uses{Fields: []string{"nodes"}}
)

// Applies says whether fault s belongs in a run on nodes masters: every
// kind does, except a quorum-only kind (Uses.Quorum) on one master. The
// plan and the timeline ask the same question, so what the plan shows is
// what runs.
func Applies(s Spec, nodes int) bool {
	u, ok := KindUses(s.Kind)
	return !ok || !u.Quorum || nodes > 1
}

// kindInfo is a registered kind: its parameter struct's type, the targets
// it reads, and how it builds a fault from both.
type kindInfo struct {
	summary string
	targets Uses
	params  reflect.Type
	build   func(s Spec, p any) (Fault, error)
}

var (
	regMu sync.RWMutex
	kinds = map[string]kindInfo{}
)

// Register adds a fault kind, as toxiproxy registers its toxics: its
// parameter struct P (whose fields' yaml tags name the Spec keys it reads;
// struct{} or NoParams for none), the targets it reads, and build, which
// gets the parameters once they are valid (P's Validate, when it has one).
// A parameter key that is not a Spec field of the same type panics: the
// kind could never be written.
func Register[P any](kind, summary string, targets Uses, build func(s Spec, p *P) (Fault, error)) {
	t := reflect.TypeFor[P]()
	for i := range t.NumField() {
		key := yamlKey(t.Field(i))
		sf, ok := specField(key)
		if !ok || sf.Type != t.Field(i).Type {
			panic(fmt.Sprintf("nemesis: %s's parameter %s is not a Spec field of type %v", kind, key, t.Field(i).Type))
		}
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := kinds[kind]; dup {
		panic("nemesis: duplicate fault kind " + kind)
	}
	kinds[kind] = kindInfo{summary, targets, t, func(s Spec, p any) (Fault, error) { return build(s, p.(*P)) }}
}

// NoParams is the parameter struct of a kind that reads only its timing
// and targets.
type NoParams struct{}

// Servers is what the servers of a run offer a fault kind: a kind whose
// parameter struct has a Needs method says there what it lacks.
type Servers struct {
	// Cluster: the run starts a Redis Cluster.
	Cluster bool
	// Replicas is the replicas per master (cluster.replicas in a cluster).
	Replicas int
}

// needer is a parameter struct whose kind needs something of the servers.
type needer interface {
	Needs(Servers) string
}

// validator is a parameter struct that checks its values (*FieldError).
type validator interface {
	Validate() error
}

// Fits is "" when kind can act on servers, else what it lacks (which the
// spec reports at the fault's kind).
func Fits(kind string, servers Servers) string {
	regMu.RLock()
	k, ok := kinds[kind]
	regMu.RUnlock()
	if !ok {
		return ""
	}
	if n, ok := reflect.New(k.params).Interface().(needer); ok {
		return n.Needs(servers)
	}
	return ""
}

// KindUses returns what kind reads from its Spec: its targets, then its
// parameter struct's keys in field order (false for an unknown kind).
func KindUses(kind string) (Uses, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	k, ok := kinds[kind]
	if !ok {
		return Uses{}, false
	}
	u := Uses{Fields: append([]string(nil), k.targets.Fields...), Picks: k.targets.Picks, Quorum: k.targets.Quorum}
	for i := range k.params.NumField() {
		u.Fields = append(u.Fields, yamlKey(k.params.Field(i)))
	}
	return u, true
}

// TimingFields are the Spec fields every kind accepts.
var TimingFields = []string{"at", "within", "for", "every", "kind"}

// FieldError is a fault spec refused because of one field (its YAML key).
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Build validates s (its timing, its pick, then its kind's parameters, as
// s's record gives them) and returns its fault.
func Build(s Spec) (Fault, error) {
	k, err := kindOf(s.Kind)
	if err != nil {
		return nil, err
	}
	return k.fault(s, s.paramsAs(k.params))
}

// New is Build with the parameters given as the kind's own struct (a
// *LatencyParams for latency...) instead of read from s, whose parameter
// fields it ignores: a fault the harness makes itself, not one a spec
// wrote.
func New(s Spec, params any) (Fault, error) {
	k, err := kindOf(s.Kind)
	if err != nil {
		return nil, err
	}
	if t := reflect.TypeOf(params); t != reflect.PointerTo(k.params) {
		return nil, fmt.Errorf("nemesis: %s's parameters are a *%v, not a %v", s.Kind, k.params, t)
	}
	return k.fault(s, params)
}

// ParamText is s's parameters as its kind reads them, " key=value" for
// each that is set, in the order of the kind's parameter struct ("" for an
// unknown kind or none set).
func (s Spec) ParamText() string {
	k, err := kindOf(s.Kind)
	if err != nil {
		return ""
	}
	var b strings.Builder
	p := reflect.ValueOf(s.paramsAs(k.params)).Elem()
	for i := range p.NumField() {
		if f := p.Field(i); !f.IsZero() {
			fmt.Fprintf(&b, " %s=%v", yamlKey(p.Type().Field(i)), f.Interface())
		}
	}
	return b.String()
}

// kindOf is the registered kind named kind.
func kindOf(kind string) (kindInfo, error) {
	regMu.RLock()
	k, ok := kinds[kind]
	regMu.RUnlock()
	if !ok {
		return kindInfo{}, fmt.Errorf("unknown fault kind %q (known: %s)", kind, strings.Join(Kinds(), ", "))
	}
	return k, nil
}

// fault checks s's timing and pick and the parameters p (a pointer to k's
// parameter struct), then builds the fault.
func (k kindInfo) fault(s Spec, p any) (Fault, error) {
	for _, d := range []struct {
		f string
		v time.Duration
	}{{"at", s.At}, {"for", s.For}, {"every", s.Every}, {"within", s.Within}} {
		if d.v < 0 {
			return nil, &FieldError{d.f, fmt.Sprintf("must not be negative, got %v", d.v)}
		}
	}
	if s.Pick != "" && !slices.Contains(k.targets.Picks, s.Pick) {
		if len(k.targets.Picks) == 0 {
			return nil, &FieldError{"pick", fmt.Sprintf("%s picks no targets", s.Kind)}
		}
		return nil, &FieldError{"pick", fmt.Sprintf("%q: %s picks %s", s.Pick, s.Kind, strings.Join(k.targets.Picks, ", "))}
	}
	if v, ok := p.(validator); ok {
		if err := v.Validate(); err != nil {
			return nil, err
		}
	}
	return k.build(s, p)
}

// paramsAs is a new parameter struct of type t holding s's values of the
// keys t names.
func (s Spec) paramsAs(t reflect.Type) any {
	p := reflect.New(t)
	sv := reflect.ValueOf(s)
	for i := range t.NumField() {
		sf, _ := specField(yamlKey(t.Field(i)))
		p.Elem().Field(i).Set(sv.FieldByIndex(sf.Index))
	}
	return p.Interface()
}

// specField is the Spec field written under key.
func specField(key string) (reflect.StructField, bool) {
	t := reflect.TypeFor[Spec]()
	for i := range t.NumField() {
		if yamlKey(t.Field(i)) == key {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// yamlKey is a field's YAML key.
func yamlKey(f reflect.StructField) string {
	key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return key
}

// Kinds lists the registered kinds.
func Kinds() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Summary is the one-line description of kind.
func Summary(kind string) string {
	regMu.RLock()
	defer regMu.RUnlock()
	return kinds[kind].summary
}

// streams is the toxiproxy streams a network fault applies to.
func streams(stream string) []string {
	switch stream {
	case "upstream", "downstream":
		return []string{stream}
	}
	return []string{"upstream", "downstream"}
}

// checkStream refuses a stream other than upstream, downstream or both.
func checkStream(stream string) error {
	switch stream {
	case "", "upstream", "downstream", "both":
		return nil
	}
	return &FieldError{"stream", fmt.Sprintf("%q: want upstream, downstream or both", stream)}
}

// toxicFault installs one toxic per selected link and stream; it is the
// shared mechanism of every toxiproxy-backed kind.
type toxicFault struct {
	spec    Spec
	toxic   func() Toxic
	streams []string
}

func (f *toxicFault) Inject(_ context.Context, env *Env) (Heal, Targets, error) {
	type installed struct {
		l    *Link
		name string
	}
	var done []installed
	heal := func() error {
		var errs []error
		for _, i := range done {
			errs = append(errs, i.l.RemoveToxic(i.name))
		}
		return errors.Join(errs...)
	}
	sel := f.spec.resolve(env)
	links := sel.links(env)
	for _, l := range links {
		for _, st := range f.streams {
			t := f.toxic()
			t.Stream = st
			name, err := l.AddToxic(t)
			if err != nil {
				if herr := heal(); herr != nil {
					err = errors.Join(err, herr)
				}
				return nil, Targets{}, err
			}
			done = append(done, installed{l, name})
		}
	}
	return heal, sel.networkTargets(env, links), nil
}

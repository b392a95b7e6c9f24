package scenarios

import (
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// Plan is a spec compiled against one lock and config, before anything
// starts: every default applied, the variant resolved to its lock and
// options, the node count, the seed, each client's host and clock offset,
// the checker's options and the expectation with its reason. A run
// executes what its plan says; `lockstorm run --dry-run` prints it, so a
// user sees what will happen before it happens.
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
	Faults       []nemesis.Spec        `json:"faults,omitempty"`
	// LeftOut are the spec's faults this run leaves out (nemesis.Applies:
	// a quorum-only kind on one master), with the reason.
	LeftOut     []string        `json:"left_out,omitempty"`
	Failpoints  []FailpointSpec `json:"failpoints,omitempty"`
	Explore     *Explore        `json:"explore,omitempty"`
	Check       checker.Options `json:"checker_options"`
	Expectation Expectation     `json:"expectation"`
	// TimeScale, when set, says every time above (and in the spec the run
	// executes) was stretched to fit a lock whose clock counts in coarse
	// units (lockimpl.Claims.Granularity): see FitTimeScale.
	TimeScale *checker.TimeScale `json:"time_scale,omitempty"`

	info lockimpl.Info
	// spec is what the run executes: the spec, scaled by TimeScale.
	spec *Spec
}

// Compile turns spec, the lock cfg names and cfg into a plan, or says why
// it cannot run (an unknown implementation, a lock that refuses the
// spec's options). Nothing is started.
func Compile(spec *Spec, cfg Config) (*Plan, error) {
	name, info, opts, err := cfg.resolve(spec)
	if err != nil {
		return nil, err
	}
	seed := spec.Seed
	if cfg.Seed != 0 {
		seed = cfg.Seed
	}
	claims := info.ClaimsUnder(opts)
	// A lock that counts time more coarsely than the scenario's TTL runs
	// the whole scenario stretched by one factor (its order unchanged);
	// from here on every time comes from the scaled spec.
	ts := FitTimeScale(claims.Granularity(), opts.TTL)
	orig := spec
	if spec, err = spec.Scaled(ts); err != nil {
		return nil, err
	}
	opts = ScaledOptions(opts, ts)
	p := &Plan{Scenario: spec.Name, File: spec.File, Mode: spec.Mode, Impl: name, Lock: info.Name, Options: opts,
		Claims: claims, Seed: seed, Nodes: spec.Nodes, Replicas: spec.Replicas, Clients: spec.Clients, Keys: spec.Keys,
		Hosts: spec.Hosts, Duration: spec.Duration, Failpoints: spec.Failpoints, Explore: spec.Explore,
		TimeScale: ts, info: info, spec: spec}
	if p.Nodes == 0 {
		p.Nodes = info.NodesUnder(opts)
	}
	for _, f := range spec.Faults {
		if nemesis.Applies(f, p.Nodes) {
			p.Faults = append(p.Faults, f)
		} else {
			p.LeftOut = append(p.LeftOut, fmt.Sprintf("%s (%d master: nothing to act on)", flow(f), p.Nodes))
		}
	}
	if spec.Sentinel != nil {
		p.Sentinels = cmp.Or(spec.Sentinel.Sentinels, 3)
	}
	if p.Hosts == 0 {
		p.Hosts = min(spec.Clients, 64)
	}
	fenced := spec.Workload.Resource == "fenced" || (spec.Workload.Resource == "" && claims.Fencing)
	stamps := claims.Expiry == lockimpl.ClientClockExpiry || claims.Expiry == lockimpl.NoExpiry || claims.WholeSeconds
	p.Check = checker.Options{Fenced: fenced, DeadlockBound: spec.DeadlockBound, StampTokens: stamps}
	p.Expectation = cfg.expectation(orig, name, claims)
	p.ClockOffsets = clockOffsets(spec, seed)
	return p, nil
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
func clockOffsets(spec *Spec, seed uint64) map[int]time.Duration {
	out := map[int]time.Duration{}
	skewRng := rand.New(rand.NewPCG(seed, 0x736b6577))
	for i := 0; i < spec.Clients; i++ {
		offset, ok := spec.ClockOffsets[i]
		if !ok && spec.ClockSkew > 0 && i%2 == 1 {
			offset = -time.Duration(skewRng.Int64N(int64(spec.ClockSkew)))
		}
		if offset != 0 {
			out[i] = offset
		}
	}
	return out
}

// HostOf is client c's host name.
func (p *Plan) HostOf(c int) string { return fmt.Sprintf("h%d", c%p.Hosts+1) }

// WriteText prints the plan for a person, one fact a line.
func (p *Plan) WriteText(w io.Writer) error {
	var b strings.Builder
	src := p.Scenario
	if p.File != "" {
		src += " (" + p.File + ")"
	}
	fmt.Fprintf(&b, "plan: %s × %s, seed %d, %s\n", src, p.Impl, p.Seed, p.Mode)
	if p.TimeScale.Scaled() {
		fmt.Fprintf(&b, "  timescale    %s\n", p.TimeScale)
	}
	lock := p.Lock
	if p.Impl != p.Lock {
		lock = p.Impl + " = " + p.Lock
	}
	fmt.Fprintf(&b, "  lock         %s; ttl %v, retry %v, wait %v\n", lock, p.Options.TTL, p.Options.RetryDelay, p.Options.WaitTimeout)
	fmt.Fprintf(&b, "  claims       %s\n", claimsText(p.Claims))
	topo := fmt.Sprintf("%d node(s)", p.Nodes)
	if p.Replicas > 0 {
		topo += fmt.Sprintf(", %d replica(s) each", p.Replicas)
	}
	if p.Sentinels > 0 {
		topo += fmt.Sprintf(", %d Sentinel(s)", p.Sentinels)
	}
	fmt.Fprintf(&b, "  topology     %s\n", topo)
	fmt.Fprintf(&b, "  traffic      %d client(s) on %d host(s), %d key(s), %v\n", p.Clients, p.Hosts, p.Keys, p.Duration)
	if len(p.ClockOffsets) > 0 {
		var cs []int
		for c := range p.ClockOffsets {
			cs = append(cs, c)
		}
		sort.Ints(cs)
		var parts []string
		for _, c := range cs {
			parts = append(parts, fmt.Sprintf("c%d %+v", c, p.ClockOffsets[c]))
		}
		fmt.Fprintf(&b, "  clocks       %s\n", strings.Join(parts, ", "))
	}
	for _, f := range p.Faults {
		fmt.Fprintf(&b, "  fault        %s\n", flow(f))
	}
	for _, f := range p.LeftOut {
		fmt.Fprintf(&b, "  left out     %s\n", f)
	}
	for i, fp := range p.Failpoints {
		who := fmt.Sprintf("c%d", fp.Client)
		if fp.Client == -1 {
			who = "every client"
		}
		line := fmt.Sprintf("%s at %s: %s", who, fp.Point, flow(fp.Action))
		if fp.Fault != nil {
			line += ", fault " + flow(fp.Fault)
		}
		fmt.Fprintf(&b, "  failpoint #%d %s\n", i, line)
	}
	if p.Explore != nil {
		fmt.Fprintf(&b, "  explore      %s\n", flow(p.Explore))
	}
	bound := p.Check.DeadlockBound.String()
	if p.Check.DeadlockBound <= 0 {
		bound = checker.DefaultDeadlockBound.String() + " (default)"
	}
	fmt.Fprintf(&b, "  checker      fenced resource %v, deadlock bound %s\n", p.Check.Fenced, bound)
	exp := "none (reported, never a DIFF)"
	if p.Expectation.Verdict != "" {
		exp = fmt.Sprintf("%s (%s): %s", p.Expectation.Verdict, p.Expectation.Source, p.Expectation.Reason)
	}
	fmt.Fprintf(&b, "  expected     %s\n", exp)
	_, err := io.WriteString(w, b.String())
	return err
}

func claimsText(c lockimpl.Claims) string { return flow(c) }

// flow is v as one line of flow-style YAML, without its empty fields: as
// a spec would write it.
func flow(v any) string {
	out, err := yaml.MarshalWithOptions(v, yaml.Flow(true), yaml.OmitEmpty())
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return strings.TrimSpace(string(out))
}

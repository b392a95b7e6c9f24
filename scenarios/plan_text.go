package scenarios

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// WriteText prints the plan for a person, one fact a line: the lock, the
// servers, the clients and what they do, the network, the faults and
// points, how the run is judged and how it ends.
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
	if p.Program != nil {
		fmt.Fprintf(&b, "  program      %s, started once per client\n", shellLine(p.Program.Argv))
		if p.Program.Unasked {
			b.WriteString("               not asked its hello (name, claims): a spec's program starts only with\n" +
				"               --allow-exec, and a dry run starts nothing\n")
		}
	}
	fmt.Fprintf(&b, "  claims       %s\n", claimsText(p.Claims))
	p.writeTopology(&b)
	fmt.Fprintf(&b, "  traffic      %d client(s) on %d host(s), %d key(s), %v\n", p.Clients, p.Hosts, p.Keys, p.Duration)
	fmt.Fprintf(&b, "  workload     %s\n", p.Workload.text())
	fmt.Fprintf(&b, "  network      %s\n", p.networkText())
	p.writeClocks(&b)
	p.writePoints(&b)
	bound := p.Check.DeadlockBound.String()
	if p.Check.DeadlockBound <= 0 {
		bound = checker.DefaultDeadlockBound.String() + " (default)"
	}
	fmt.Fprintf(&b, "  checker      fenced resource %v, deadlock bound %s", p.Check.Fenced, bound)
	if p.Check.WaitBound > 0 {
		fmt.Fprintf(&b, ", wait bound %s", p.Check.WaitBound)
	}
	if p.Check.LockstepRounds > 0 {
		fmt.Fprintf(&b, ", lockstep %d rounds within %s", p.Check.LockstepRounds, p.Check.LockstepWithin)
	}
	if p.Check.BackoffGrowth > 0 {
		fmt.Fprintf(&b, ", retry cadence ×%g a try up to %s", p.Check.BackoffGrowth, p.Check.BackoffCap)
	}
	if p.Check.ExtendRetryLease > 0 {
		fmt.Fprintf(&b, ", extends retry (lease %s)", p.Check.ExtendRetryLease)
	}
	if p.Check.ScheduleLease > 0 {
		fmt.Fprintf(&b, "; safe only if the harness never stalls %s at once (the schedule's lease)", p.Check.ScheduleLease)
	}
	b.WriteString("\n")
	exp := "none (reported, never a DIFF)"
	if p.Expectation.Verdict != "" {
		exp = fmt.Sprintf("%s (%s): %s", p.Expectation.Verdict, p.Expectation.Source, p.Expectation.Reason)
	}
	fmt.Fprintf(&b, "  expected     %s\n", exp)
	if ps := p.Expectation.Permissions; len(ps) > 0 {
		var yes, no []string
		for _, k := range ps {
			if k.Permitted {
				yes = append(yes, string(k.Kind))
			} else {
				no = append(no, string(k.Kind))
			}
		}
		list := func(ks []string) string {
			if len(ks) == 0 {
				return "none"
			}
			return strings.Join(ks, ", ")
		}
		fmt.Fprintf(&b, "  findings     permitted: %s; forbidden (fail the run wherever they appear): %s\n", list(yes), list(no))
	}
	fmt.Fprintf(&b, "  gated        %s\n", p.gatedText())
	fmt.Fprintf(&b, "  stop         %s\n", p.Stop.text(p.Duration))
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTopology is the servers: masters, replicas, Sentinels and how they
// are set up, and whether their key events are recorded.
func (p *Plan) writeTopology(b *strings.Builder) {
	topo := fmt.Sprintf("%d node(s)", p.Nodes)
	if c := p.Cluster; c != nil {
		topo = fmt.Sprintf("Redis Cluster: %d masters, %d replica(s) each, cluster-node-timeout %v; each client one cluster client", c.Masters, c.Replicas, c.NodeTimeout)
	}
	if p.Replicas > 0 {
		topo += fmt.Sprintf(", %d replica(s) each", p.Replicas)
	}
	if p.Sentinels > 0 {
		topo += fmt.Sprintf(", %d Sentinel(s)", p.Sentinels)
	}
	fmt.Fprintf(b, "  topology     %s\n", topo)
	if sn := p.Sentinel; sn != nil {
		fmt.Fprintf(b, "  sentinel     quorum %d, down after %v, failover timeout %v; clients find the master through them\n",
			sn.Quorum, sn.DownAfter, sn.FailoverTimeout)
	}
	if m := p.MinReplicas; m != nil {
		fmt.Fprintf(b, "  min replicas every data server refuses writes unless %d replica(s) acknowledged within %v\n", m.ToWrite, m.MaxLag)
	}
	if p.ServerClock {
		fmt.Fprintf(b, "  servers      under the clock shim (a fault moves their clocks)\n")
	}
	observe := "the servers' key events and syncs, on connections outside the links"
	if !p.Observe {
		observe = "off (observe: false)"
	}
	fmt.Fprintf(b, "  observe      %s\n", observe)
}

// text is the clients' loop in one line.
func (w PlanWorkload) text() string {
	s := fmt.Sprintf("%s client(s), %s resource; hold %v..%v, think %v, backoff %v after an unknown outcome",
		w.Client, w.Resource, w.CSMin, w.CSMax, w.Think, w.Backoff)
	if w.ExtendEvery > 0 {
		s += fmt.Sprintf(", extend to %v every %v of a hold", w.ExtendTTL, w.ExtendEvery)
	}
	if w.ReleaseAgain {
		s += ", a release with an unknown outcome asked again once after the backoff"
	}
	if w.Ops > 0 {
		s += fmt.Sprintf(", at most %d acquire attempt(s)", w.Ops)
	}
	if w.Cycles > 0 {
		s += fmt.Sprintf(", at most %d acquisition(s) per client", w.Cycles)
	}
	return s
}

// networkText is the steady condition on the links and the clients'
// command timeout.
func (p *Plan) networkText() string {
	s := "no steady condition on the links"
	if n := p.Network; n.Latency > 0 {
		s = fmt.Sprintf("latency %v, jitter %v on every link (the lock is told a round trip takes %v)", n.Latency, n.Jitter, n.RoundTrip)
	}
	return s + fmt.Sprintf("; every command times out after %v", p.ClientTimeout)
}

// writeClocks is the clients' clock offsets that are not zero.
func (p *Plan) writeClocks(b *strings.Builder) {
	if len(p.ClockOffsets) == 0 {
		return
	}
	var cs []int
	for c := range p.ClockOffsets {
		cs = append(cs, c)
	}
	sort.Ints(cs)
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("c%d %+v", c, p.ClockOffsets[c]))
	}
	fmt.Fprintf(b, "  clocks       %s\n", strings.Join(parts, ", "))
}

// writePoints is the faults, the failpoints and the exploration.
func (p *Plan) writePoints(b *strings.Builder) {
	for _, f := range p.Faults {
		fmt.Fprintf(b, "  fault        %s\n", flow(f.Spec))
		writeTargets(b, f.Spec, f.Targets)
	}
	for _, f := range p.LeftOut {
		fmt.Fprintf(b, "  left out     %s\n", f)
	}
	var inert []string
	for i, fp := range p.Failpoints {
		who := fmt.Sprintf("c%d", fp.Client)
		if fp.Client == -1 {
			who = "every client"
		}
		line := fmt.Sprintf("%s at %s: %s", who, fp.Point, flow(fp.Action))
		if fp.Fault != nil {
			line += ", fault " + flow(fp.Fault)
		}
		fmt.Fprintf(b, "  failpoint #%d %s\n", i, line)
		if fp.Fault != nil {
			writeTargets(b, *fp.Fault, fp.FaultTargets)
		}
		if fp.Inert {
			inert = append(inert, fmt.Sprintf("#%d", i))
		}
	}
	if len(inert) > 0 {
		fmt.Fprintf(b, "  inert        failpoint %s: a step of another lock, which %s never reaches\n", strings.Join(inert, ", "), p.Lock)
	}
	if p.Explore != nil {
		fmt.Fprintf(b, "  explore      %s\n", flow(p.Explore))
	}
	if p.Points.Counted {
		how := "armed; the outcome counts the points hit"
		if p.Points.Relayed {
			how += "; the lock's own connections pass through relays that put the command points on the wire"
		}
		fmt.Fprintf(b, "  points       %s\n", how)
	}
}

// writeTargets says what a fault will apply to, or that its pick is drawn
// as the run goes.
func writeTargets(b *strings.Builder, f nemesis.Spec, t *nemesis.Targets) {
	switch {
	case t != nil:
		fmt.Fprintf(b, "  targets      %s\n", t)
	case f.Pick != "":
		fmt.Fprintf(b, "  targets      pick: %s, drawn from the seed at each injection\n", f.Pick)
	}
}

// gatedText says whether a DIFF of this run fails the gate, and why not.
func (p *Plan) gatedText() string {
	switch {
	case p.Gated:
		return "yes: a verdict other than the expected one fails the gate"
	case p.SpecGated:
		return "no: an expectation derived from the claims on a random mode or a search is exploratory (a miss is reported, not a regression)"
	}
	return "no (the spec is not gated)"
}

// text says how the run ends.
func (s PlanStop) text(duration time.Duration) string {
	out := fmt.Sprintf("after %v; the clients then have %v to finish their cycle", duration, s.Grace)
	if s.EarlyStop > 0 {
		out += fmt.Sprintf("; a first overlap ends the traffic %v later", s.EarlyStop)
	}
	return out + fmt.Sprintf("; Run gives up on a harness stuck past %v", s.Bound)
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

// shellLine is argv as it would be typed: a word with a space, a quote or
// a shell character in it is single-quoted.
func shellLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`;&|<>()*?[]{}~#!") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

package spec

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// checkFaults checks the network, every fault, failpoint and exploration.
func (v *validation) checkFaults() error {
	s := v.s
	if s.Network.Latency > 0 || s.Network.Jitter > 0 {
		if err := (&nemesis.LatencyParams{Latency: s.Network.Latency, Jitter: s.Network.Jitter}).Validate(); err != nil {
			var fe *nemesis.FieldError
			if errors.As(err, &fe) {
				return v.bad("network."+fe.Field, "%s", fe.Msg)
			}
			return v.bad("network", "%v", err)
		}
	}
	for i, f := range s.Faults {
		if err := v.checkFault(fmt.Sprintf("faults.%d", i), f, true); err != nil {
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
		if err := v.checkFailpoint(fmt.Sprintf("failpoints.%d", i), fp, gates); err != nil {
			return err
		}
	}
	if s.Explore != nil {
		if err := v.checkExplore(s.Explore); err != nil {
			return err
		}
		for i, p := range s.Explore.Points {
			if msg := s.pointMsg(p, true); msg != "" {
				return v.bad(fmt.Sprintf("explore.points.%d", i), "%s", msg)
			}
		}
	}
	return nil
}

// checkFault validates one fault: its kind, the fields the kind reads (no
// others), its values, its timing against the run and the limits, and its
// client and host targets against the spec's clients. Node targets depend
// on each implementation's topology: CheckImpl checks them.
func (v *validation) checkFault(at string, f nemesis.Spec, timeline bool) error {
	s := v.s
	if f.Kind == "" {
		return v.bad(at+".kind", "missing (known: %s)", strings.Join(nemesis.Kinds(), ", "))
	}
	uses, ok := nemesis.KindUses(f.Kind)
	if !ok {
		return v.bad(at+".kind", "%s", enumMsg(f.Kind, nemesis.Kinds()...))
	}
	allowed := append(append([]string(nil), nemesis.TimingFields...), uses.Fields...)
	for _, key := range yamlKeys(reflect.TypeOf(f)) {
		if s.doc.has(at+"."+key) && !slices.Contains(allowed, key) {
			return v.bad(at+"."+key, "%s does not use %s (it reads %s)", f.Kind, key, strings.Join(uses.Fields, ", "))
		}
	}
	if _, err := nemesis.Build(f); err != nil {
		var fe *nemesis.FieldError
		if errors.As(err, &fe) {
			return v.bad(at+"."+fe.Field, "%s", fe.Msg)
		}
		return v.bad(at, "%v", err)
	}
	if f.At >= s.Duration {
		return v.bad(at+".at", "%v is not before the end of the run (duration: %v): the fault would never start", f.At, s.Duration)
	}
	if timeline && f.Every > 0 && f.Every < s.limits.MinEvery {
		return v.bad(at+".every", "%v is below the limit of %v (raise it with --min-every)", f.Every, s.limits.MinEvery)
	}
	if !timeline {
		// A failpoint's fault starts once, at (after) its client's step.
		for _, key := range []string{"every", "within"} {
			if s.doc.has(at + "." + key) {
				return v.bad(at+"."+key, "a failpoint's fault starts once, when its client reaches the point (at: a delay from there); %s is for the timeline's faults (faults:)", key)
			}
		}
	}
	for i, c := range f.Clients {
		if c < 0 || c >= s.Clients {
			return v.bad(fmt.Sprintf("%s.clients.%d", at, i), "no client %d (clients: %d, numbered from 0)", c, s.Clients)
		}
	}
	for i, h := range f.Hosts {
		if msg := s.hostMsg(h, -1); msg != "" {
			return v.bad(fmt.Sprintf("%s.hosts.%d", at, i), "%s", msg)
		}
	}
	for i, n := range f.Nodes {
		if msg, ok := s.clusterTargetMsg(n); ok || s.Cluster != nil {
			if msg == "" && !ok {
				msg = fmt.Sprintf("%q: want a cluster node n1..n%d or r1..r%d", n, s.Cluster.Masters, s.Cluster.Masters)
			}
			if msg != "" {
				return v.bad(fmt.Sprintf("%s.nodes.%d", at, i), "%s", msg)
			}
			continue
		}
		if msg := s.sentinelTargetMsg(n, 'r', 's'); msg != "" {
			return v.bad(fmt.Sprintf("%s.nodes.%d", at, i), "%s", msg)
		} else if (n[0] == 'r' || n[0] == 's') && s.Sentinel != nil {
			continue
		}
		if _, err := nodeNumber(n); err != nil {
			return v.bad(fmt.Sprintf("%s.nodes.%d", at, i), "%v", err)
		}
	}
	if msg := nemesis.Fits(f.Kind, s.servers()); msg != "" {
		return v.bad(at+".kind", "%s", msg)
	}
	return nil
}

// servers is what the spec's servers offer a fault kind.
func (s *Spec) servers() nemesis.Servers {
	if s.Cluster != nil {
		return nemesis.Servers{Cluster: true, Replicas: s.Cluster.ReplicasPer()}
	}
	return nemesis.Servers{Replicas: s.Replicas}
}

// checkFailpoint validates one failpoint: its point is one that exists,
// its clients exist, its action's values make sense.
func (v *validation) checkFailpoint(at string, fp FailpointSpec, gates map[string]bool) error {
	s := v.s
	if fp.Point == "" {
		return v.bad(at+".point", "missing: which step (impl/step, %s, or cmd/NODE/COMMAND/before|after)", strings.Join(RunnerPoints, ", "))
	}
	if msg := s.pointMsg(fp.Point, true); msg != "" {
		return v.bad(at+".point", "%s", msg)
	}
	if fp.Client < -1 || fp.Client >= s.Clients {
		return v.bad(at+".client", "no client %d (clients: %d, numbered from 0; -1 for every client)", fp.Client, s.Clients)
	}
	for _, n := range []struct {
		f string
		v int
	}{{"skip", fp.Skip}, {"times", fp.Times}, {"nth", fp.Nth}, {"wait_count", fp.WaitCount}} {
		if n.v < 0 {
			return v.bad(at+"."+n.f, "must not be negative, got %d", n.v)
		}
	}
	if fp.Prob < 0 || fp.Prob > 1 {
		return v.bad(at+".prob", "want a probability in [0, 1], got %v", fp.Prob)
	}
	if fp.Sleep < 0 {
		return v.bad(at+".sleep", "must not be negative, got %v", fp.Sleep)
	}
	if fp.WaitFor != "" {
		if msg := s.pointMsg(fp.WaitFor, false); msg != "" {
			return v.bad(at+".wait_for", "%s", msg)
		}
		if fp.WaitClient < 0 || fp.WaitClient >= s.Clients {
			return v.bad(at+".wait_client", "no client %d (clients: %d, numbered from 0)", fp.WaitClient, s.Clients)
		}
	} else {
		for _, f := range []string{"wait_client", "wait_count"} {
			if s.doc.has(at + "." + f) {
				return v.bad(at+"."+f, "without wait_for: nothing to wait for")
			}
		}
	}
	if fp.Gate != "" && !gates[fp.Gate] {
		return v.bad(at+".gate", "no failpoint opens gate %q (open: %s): the client would wait until the run ends", fp.Gate, fp.Gate)
	}
	if fp.LoseReply && !(CmdPoint(fp.Point) && strings.HasSuffix(fp.Point, "/after")) {
		return v.bad(at+".lose_reply", "a reply can be lost only at a command's after point (cmd/NODE/COMMAND/after), not at %q", fp.Point)
	}
	if fp.Fault != nil {
		if err := v.checkFault(at+".fault", *fp.Fault, false); err != nil {
			return err
		}
	}
	return nil
}

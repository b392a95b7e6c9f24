package spec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

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
	for _, n := range slices.Sorted(maps.Keys(s.Expected)) {
		add(n)
	}
	for _, n := range slices.Sorted(maps.Keys(s.Variants)) {
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
	v := s.validation()
	doc := v.doc
	info, opts, err := s.Resolve(name)
	if err != nil {
		return err
	}
	nodes, _ := s.NodesFor(name)
	where := func(opt string) string {
		if _, ok := s.Variants[name]; ok && doc.has("variants."+name+"."+opt) {
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
			return v.bad(where(oe.Option), "%s: %s", name, oe.Msg)
		}
		return v.bad("lock", "%s: %v", name, err)
	}
	if s.Cluster != nil {
		if nodes != 1 {
			return v.bad(where("nodes"), "%s: needs %d masters of its own; on a cluster a lock gets one cluster client (single-instance locks only)", name, nodes)
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
		return v.bad(where("nodes"), "%s would run on %d nodes, above the limit of %d redis-server processes (raise it with --max-nodes)", name, nodes, lim.MaxNodes)
	}
	if need, have := s.fdsNeeded(nodes), lim.openFiles(); need > have {
		return v.bad("clients", "%d clients on %d hosts × %d nodes need about %d open files; this process may open %d (RLIMIT_NOFILE; raise it with ulimit -n, or lower clients)", s.Clients, s.hostCount(), nodes, need, have)
	}
	if conns := s.Clients * connsPerNode; conns > redisMaxClients {
		return v.bad("clients", "%d clients open up to %d connections to each node; redis-server accepts %d (maxclients)", s.Clients, conns, redisMaxClients)
	}
	return v.checkTargetsOn(name, nodes)
}

// checkTargetsOn refuses a fault, failpoint or command point that names a
// node or host the implementation does not have when it runs on nodes nodes.
func (v *validation) checkTargetsOn(name string, nodes int) error {
	s := v.s
	noNode := func(field, n string) error {
		return v.bad(field, "no node %s: %s runs on %d node%s (set nodes: to give every implementation the same topology)", n, name, nodes, plural(nodes))
	}
	checkFault := func(at string, f nemesis.Spec) error {
		for i, n := range f.Nodes {
			if k, err := nodeNumber(n); err == nil && k > nodes {
				return noNode(fmt.Sprintf("%s.nodes.%d", at, i), n)
			}
		}
		for i, h := range f.Hosts {
			if msg := s.hostMsg(h, nodes); msg != "" {
				return v.bad(fmt.Sprintf("%s.hosts.%d", at, i), "%s", msg)
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

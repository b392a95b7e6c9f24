package nemesis

import (
	"strings"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// Layout is a run's clients, servers and links by name, known before
// anything starts: what a plan says the topology will build.
type Layout struct {
	Clients    int
	ClientHost func(client int) string
	// Nodes are the masters the clients lock on (n1, ...).
	Nodes []string
	// Links are every link the topology builds, as host>server, in the
	// order it builds them.
	Links []string
	// Replicas maps a master to its replica's name.
	Replicas map[string]string
}

// previewer is a fault that can say what it will apply to without acting.
type previewer interface {
	targets(env *Env) Targets
}

// Preview says what s will apply to in a run laid out as l, through the
// selection its injection uses, when that does not depend on the run: a
// pick is drawn from the seed as the run goes (or among the holders of the
// moment), so a fault with a pick, or of a kind that cannot say, has no
// preview (false).
func Preview(s Spec, l Layout) (Targets, bool) {
	if s.Pick != "" {
		return Targets{}, false
	}
	f, err := Build(s)
	if err != nil {
		return Targets{}, false
	}
	p, ok := f.(previewer)
	if !ok {
		return Targets{}, false
	}
	return p.targets(l.env()), true
}

// env is the layout as an Env whose network and cluster are names only:
// nothing listens, nothing runs.
func (l Layout) env() *Env {
	net := &Network{links: map[string]*Link{}}
	for _, name := range l.Links {
		host, node, _ := strings.Cut(name, ">")
		node, bus := strings.CutSuffix(node, BusSuffix)
		lk := &Link{Host: host, Node: node, Bus: bus}
		net.links[name] = lk
		net.order = append(net.order, lk)
	}
	var nodes paperCluster
	for _, n := range l.Nodes {
		nodes = append(nodes, cluster.Node{Name: n})
	}
	reps := map[string]*cluster.Process{}
	for m, r := range l.Replicas {
		reps[m] = &cluster.Process{Node: cluster.Node{Name: r}}
	}
	return &Env{Net: net, Cluster: nodes, ClientHost: l.ClientHost, Clients: l.Clients, Replicas: reps}
}

// paperCluster is a cluster of names, for a preview.
type paperCluster []cluster.Node

func (c paperCluster) Kind() string          { return "layout" }
func (c paperCluster) Nodes() []cluster.Node { return c }
func (c paperCluster) Close() error          { return nil }

func (f *toxicFault) targets(env *Env) Targets {
	sel := f.spec.resolve(env)
	return sel.networkTargets(env, sel.links(env))
}

func (f *clientFault) targets(env *Env) Targets { return f.spec.resolve(env).clientTargets(env) }

func (f *serverFault) targets(env *Env) Targets { return f.spec.resolve(env).nodeTargets() }

func (f *failover) targets(env *Env) Targets {
	sel := f.spec.resolve(env)
	t := Targets{Missing: sel.missing}
	for _, n := range sel.nodes {
		rep := env.Replicas[n]
		if rep == nil {
			continue // the injection refuses it: no replica to promote
		}
		for _, l := range redirected(env, n) {
			t.Links = append(t.Links, l.Name())
		}
		t.Nodes = append(t.Nodes, n)
		t.Replicas = append(t.Replicas, rep.Name)
	}
	return t
}

package scenarios

import (
	"fmt"

	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/topology"
)

// faultSpecs are the timeline's faults as the nemesis plays them.

// layout is the topology the run builds, by name: the links package
// topology makes, in their order (TestLayoutIsTheTopology and
// TestSentinelTopology hold them to it).
func (p *Plan) layout() nemesis.Layout {
	l := nemesis.Layout{Clients: p.Clients, ClientHost: p.HostOf, Replicas: map[string]string{}}
	if p.Cluster != nil {
		return p.clusterLayout(l)
	}
	var data []string // the data servers, masters and replicas
	for i := 1; i <= p.Nodes; i++ {
		n := fmt.Sprintf("n%d", i)
		l.Nodes, data = append(l.Nodes, n), append(data, n)
		if p.Replicas > 0 {
			l.Replicas[n] = fmt.Sprintf("r%d", i)
			data = append(data, l.Replicas[n])
		}
	}
	link := func(from, to string) { l.Links = append(l.Links, from+">"+to) }
	if p.Sentinel == nil {
		for h := 1; h <= p.Hosts; h++ {
			for _, n := range l.Nodes {
				link(fmt.Sprintf("h%d", h), n)
			}
		}
		for _, n := range l.Nodes {
			if r, ok := l.Replicas[n]; ok {
				link(r, n) // replication
			}
		}
		return l
	}
	for _, n := range l.Nodes {
		link(l.Replicas[n], n) // replication, and back once Sentinel demotes n
		link(n, l.Replicas[n])
	}
	var sentinels []string
	for k := 1; k <= p.Sentinel.Sentinels; k++ {
		sentinels = append(sentinels, fmt.Sprintf("s%d", k))
		for _, srv := range data {
			link(sentinels[k-1], srv)
		}
	}
	for _, a := range sentinels {
		for _, b := range sentinels {
			if a != b {
				link(a, b)
			}
		}
	}
	for h := 1; h <= p.Hosts; h++ {
		for _, srv := range append(data, sentinels...) {
			link(fmt.Sprintf("h%d", h), srv)
		}
	}
	return l
}

// clusterLayout is the Redis Cluster's (topology/rediscluster.go): every node to
// every other node, its data port and its bus, then every client host to
// every node.
func (p *Plan) clusterLayout(l nemesis.Layout) nemesis.Layout {
	names := topology.ClusterNames(p.Cluster.Masters, p.Cluster.Replicas)
	l.Nodes = names[:p.Cluster.Masters]
	for i, m := range l.Nodes {
		if p.Cluster.Replicas > 0 {
			l.Replicas[m] = names[p.Cluster.Masters+i]
		}
	}
	for _, a := range names {
		for _, b := range names {
			if a != b {
				l.Links = append(l.Links, a+">"+b, a+">"+b+nemesis.BusSuffix)
			}
		}
	}
	for h := 1; h <= p.Hosts; h++ {
		for _, n := range names {
			l.Links = append(l.Links, fmt.Sprintf("h%d>%s", h, n))
		}
	}
	return l
}

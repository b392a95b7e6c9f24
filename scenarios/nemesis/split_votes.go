package nemesis

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// split-votes makes the state a quorum lock's safety rests on certain
// instead of left to the race of its clients. The client hosts are split
// in two sides (hosts: one side, every other client host the other) and
// the masters other than the targeted ones (nodes:) in two halves, in node
// order; each side is partitioned from the other side's half. A client can
// then win only the targeted masters plus its own side's half: with one
// targeted master of an odd number N, that is (N+1)/2, a bare majority
// (n1 plus n2, n3 for one side, n1 plus n4, n5 for the other, of five).
// So every lock a quorum lock grants holds a bare majority that includes
// the targeted master, and two clients of opposite sides share that master
// alone: their exclusion rests on its one vote. A fault that later grants
// that vote twice (a failover that loses the master's keys, a split brain)
// is then certain to let a client of the other side win while the first
// holds, and one that does not is certain to leave them excluded.
//
// The cut rejects connections (Link.Refuse, a firewall's REJECT): a side
// learns at once, and for certain, that its commands to the other side's
// masters were never sent, so a quorum lock counts those masters as a
// definite no. A blackhole would split the votes the same way but leave
// every command to them an unknown outcome and add the lock's per-node
// timeout to every attempt: two of five masters always unknown leave a
// lock no room for a third (a failed master, a late reply) before it
// cannot tell a failed attempt from a held majority, and the schedule's
// holds and retries would mean something else for every timeout policy.
// How a lock copes with silent masters is the subject of the partition
// scenarios (quorum-split, quorum-slow-replies).
//
// On one master there are no other masters and no votes to split: the
// kind applies to quorum topologies only (Uses.Quorum), and a run on one
// master leaves it out, so a single-instance lock's schedule is the spec's
// other faults, unchanged.
func init() {
	Register("split-votes", "cut the client hosts (hosts: one side, the others the other) crosswise from the masters other than the targeted ones, so each side can win the targeted masters plus its half of the rest: a bare majority (quorum topologies only)",
		Uses{Fields: []string{"hosts", "nodes"}, Quorum: true},
		func(s Spec, _ *NoParams) (Fault, error) {
			if len(s.Nodes) == 0 {
				return nil, &FieldError{"nodes", "split-votes needs the masters both sides share (e.g. [n1])"}
			}
			if len(s.Hosts) == 0 {
				return nil, &FieldError{"hosts", "split-votes needs the client hosts of one side (every other client host is the other)"}
			}
			for _, h := range s.Hosts {
				if !strings.HasPrefix(h, "h") {
					return nil, &FieldError{"hosts", fmt.Sprintf("%q: a side is made of client hosts (h1, h2, ...)", h)}
				}
			}
			for _, n := range s.Nodes {
				if !strings.HasPrefix(n, "n") {
					return nil, &FieldError{"nodes", fmt.Sprintf("%q: the shared masters are masters (n1, n2, ...)", n)}
				}
			}
			return splitVotes{s}, nil
		})
}

type splitVotes struct{ spec Spec }

func (f splitVotes) Inject(_ context.Context, env *Env) (Heal, Targets, error) {
	links, t := splitLinks(f.spec, env)
	for _, l := range links {
		l.Refuse(true)
	}
	return func() error {
		for _, l := range links {
			l.Refuse(false)
		}
		return nil
	}, t, nil
}

// splitLinks are the links split-votes cuts: from the named side's hosts to
// the upper half of the unshared masters, and from every other client
// host to the lower half. It selects nothing when a side or a half is
// empty (one client host in all, or no unshared master): the fault then
// applied to nothing and the run says so.
func splitLinks(s Spec, env *Env) ([]*Link, Targets) {
	sel := s.resolve(env)
	var others []string
	if env.Cluster != nil {
		for _, n := range env.Cluster.Nodes() {
			if !slices.Contains(sel.nodes, n.Name) {
				others = append(others, n.Name)
			}
		}
	}
	lower, upper := others[:len(others)/2], others[len(others)/2:]
	var sideA, sideB []string
	for c := 0; c < env.Clients; c++ {
		h := env.ClientHost(c)
		switch {
		case slices.Contains(sel.hosts, h):
			sideA = appendNew(sideA, h)
		default:
			sideB = appendNew(sideB, h)
		}
	}
	if len(sideA) == 0 || len(sideB) == 0 || len(lower) == 0 {
		return nil, Targets{Missing: sel.missing}
	}
	links := env.Net.Links(func(l *Link) bool {
		return slices.Contains(sideA, l.Host) && slices.Contains(upper, l.Node) ||
			slices.Contains(sideB, l.Host) && slices.Contains(lower, l.Node)
	})
	return links, sel.networkTargets(env, links)
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// targets implements previewer: the links the cut will refuse, for the plan.
func (f splitVotes) targets(env *Env) Targets {
	_, t := splitLinks(f.spec, env)
	return t
}
